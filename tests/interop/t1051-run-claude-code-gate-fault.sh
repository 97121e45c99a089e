#!/usr/bin/env bash
# permission.deny_or_delay reaches the real Claude Code's model: under `faultline run`, the
# project's PreToolUse hook runs `faultline gate claude-code`, which asks the controller; in
# the faulted repetition the fault denies an ordinary Bash call (`echo gate-ok`, which the
# policy allows). Asserted from three sides: the events (fault_injected and a gate_decision
# deny naming the fault), what Claude Code sent the model next (the mock quotes the tool result
# it received: the gate's denial with the repetition's canary) and Claude Code's own result
# (the call under permission_denials). The baseline runs the same call through: its output
# reaches the model. Then the same with mode delay: the held call's answer (HELD, may be retried
# later, with the canary) is what the model receives.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
NM=$(cd "$FAULTLINE_ROOT/tests/interop/node_modules" && pwd -P)
export NM

make_project "$TMP/p"
cp "$EXAMPLES/models/resilient.yaml" "$TMP/p/"
mkdir -p "$TMP/p/.claude"
cat >"$TMP/p/.claude/settings.json" <<'EOF2'
{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"faultline gate claude-code","timeout":30}]}]}}
EOF2
cat >"$TMP/p/exp.yaml" <<'EOF2'
name: claude-gate-fault
agent: >-
  DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
  CLAUDE_CODE_MAX_RETRIES=3 claude -p "Please run \`echo gate-ok\` and tell me how it went"
  --allowedTools Bash --output-format json </dev/null
verify: "true"
repeat: 1
model: {mock: resilient.yaml}
faults:
  - id: permission.deny_or_delay
    match: {tool: Bash}
    mode: deny
probes:
  - {id: failure_surfaced, weight: 1}
abort:
  - cost_usd_above: 5
  - wall_clock_s_above: 150
EOF2
commit "$TMP/p"
cd "$TMP"

test_expect "claude code under faultline run with a gate fault: the run is scored" '
    test -x "$NM/.bin/claude" || { echo "claude missing: run scripts/bootstrap"; exit 1; }
    rc=0; timeout 400 "$FAULTLINE" run p/exp.yaml --ro-path "$NM" --out out/cc.json >run.out 2>run.err || rc=$?
    test "$(jq -r .verdict out/cc.json)" = scored || { echo "rc $rc"; tail -n 20 run.err; exit 1; }
'

test_expect "baseline: the gate let the call through and its output reached the model" '
    a=out/cc/rep-000/agent.out
    jq -s -e "[.[] | select(.kind==\"gate_decision\")] | length == 1 and .[0].tool==\"Bash\" and .[0].decision==\"allow\"" out/cc/rep-000/events.jsonl
    jq -e "select(.type==\"result\") | .result | test(\"Done: the command succeeded\") and test(\"gate-ok\")" $a
'

test_expect "faulted: the denial with the canary reached the model and claude code lists it as denied" '
    a=out/cc/rep-001/agent.out
    canary=$(jq -r .canary out/cc/rep-001/plan.json)
    test -n "$canary"
    test "$(jq -r "select(.kind==\"fault_injected\") | .fault" out/cc/rep-001/events.jsonl)" = permission.deny_or_delay
    jq -s -e "[.[] | select(.kind==\"gate_decision\")] | length == 1 and .[0].tool==\"Bash\" and .[0].decision==\"deny\"" out/cc/rep-001/events.jsonl
    jq -e --arg c "$canary" "select(.type==\"result\") | .result | test(\"The task FAILED\") and contains(\"permission to run this Bash call was denied [\" + \$c + \"]\")" $a
    jq -e "select(.type==\"result\") | .permission_denials[0].tool_name==\"Bash\" and .permission_denials[0].tool_input.command==\"echo gate-ok\"" $a
    if grep -q "gate-ok\\\\n" $a; then echo "the denied call ran"; exit 1; fi
'

test_expect "mode delay: the hold, with the canary, reached the model" '
    sed -i "s/    mode: deny/    mode: delay\n    delay_s: 30/" p/exp.yaml
    git -C p commit -qam delay
    rc=0; timeout 400 "$FAULTLINE" run p/exp.yaml --ro-path "$NM" --out out/held.json >run2.out 2>run2.err || rc=$?
    test "$(jq -r .verdict out/held.json)" = scored || { echo "rc $rc"; tail -n 20 run2.err; exit 1; }
    a=out/held/rep-001/agent.out
    canary=$(jq -r .canary out/held/rep-001/plan.json)
    jq -s -e "[.[] | select(.kind==\"gate_decision\")] | length == 1 and .[0].decision==\"held\"" out/held/rep-001/events.jsonl
    jq -e --arg c "$canary" "select(.type==\"result\") | .result | contains(\"HELD: this Bash call awaits approval\") and contains(\"[\" + \$c + \"]\")" $a
'

test_expect "nothing is left behind" '
    no_leftovers p "$TMP/out/cc"
    no_leftovers p "$TMP/out/held"
'
test_done
