#!/usr/bin/env bash
# `faultline run` hands the controller the gate policy: the project's .faultline/policy.yaml (as
# carried into the workspace) and a snapshot of the user's ~/.config/faultline/policy.yaml in the
# repetition's folder. The reference agent's shell calls are then decided by them, in order.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR" "$TMP/home/.config/faultline"

make_project "$TMP/p"
cp "$EXAMPLES/models/resilient.yaml" "$TMP/p/resilient.yaml"
mkdir -p "$TMP/p/.faultline"
cat >"$TMP/p/.faultline/policy.yaml" <<'Y'
rules:
  - {id: project-no-touch, command: {program: touch}, effect: block, reason: "no touching"}
Y
cat >"$TMP/home/.config/faultline/policy.yaml" <<'Y'
rules:
  - {id: user-no-touch, command: {program: touch}, effect: hold}
  - {id: user-no-mkdir, command: {program: mkdir}, effect: block}
Y
cat >"$TMP/p/exp.yaml" <<'Y'
name: run-gate-policy
agent: 'faultline agent --shell --prompt "Please run \`touch a.txt; mkdir d; echo ok > b.txt\`"'
verify: 'true'
repeat: 1
model: {mock: resilient.yaml}
faults:
  - id: tool.error
    match: {tool: nothing-matches-this}
probes:
  - {id: no_policy_hits, weight: 1}
abort:
  - cost_usd_above: 1
Y
commit "$TMP/p"
cd "$TMP"
rc=0
HOME=$TMP/home timeout 120 "$FAULTLINE" run p/exp.yaml --out "$TMP/out/report.json" >run.out 2>run.err || rc=$?
echo "$rc" >run.rc

test_expect "the run completes" '
    cat run.err
    test -f out/report.json
    test "$(jq -r .status out/report/run.json)" = complete
'

test_expect "the controller got the project's file first, then the user's snapshot: the project's rule decides" '
    for r in rep-000 rep-001; do
        jq -se "[.[] | select(.kind == \"gate_decision\")] | length == 1 and .[0].rule == \"project-no-touch\" and .[0].decision == \"deny\" and .[0].harness == \"agent\"" out/report/$r/events.jsonl
        grep -q "no touching" out/report/$r/agent.out
    done
'

test_expect "the user's file is snapshot into each repetition's folder" '
    cmp "$TMP/home/.config/faultline/policy.yaml" out/report/rep-000/policy-user.yaml
    cmp "$TMP/home/.config/faultline/policy.yaml" out/report/rep-001/policy-user.yaml
'

test_expect "with the controller's policy, the faulted repetition has a gate and no_policy_hits fails" '
    jq -se "[.[] | select(.kind == \"plan_loaded\") | .component] | index(\"gate\") != null" out/report/rep-001/events.jsonl
    jq -e ".result.repetitions[1].plan_loaded | index(\"gate\") != null" out/report.json
    jq -e ".result.repetitions[1].probes[] | select(.id == \"no_policy_hits\") | .result == \"fail\" and .evidence.kind == \"gate_decision\"" out/report.json
'

test_done
