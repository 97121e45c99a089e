#!/usr/bin/env bash
# The real Codex CLI (`codex exec`, a custom provider with wire_api = "responses" on the
# controller's $OPENAI_BASE_URL, written into the scratch HOME by the agent command) under
# `faultline run` in the native sandbox, offline against the mock model: llm.upstream_5xx
# fails its first Responses call; Codex retries and finishes the task; the run is scored.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
. "$FAULTLINE_ROOT/tests/interop/lib-codex.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
NM=$(cd "$FAULTLINE_ROOT/tests/interop/node_modules" && pwd -P)
export NM

make_project "$TMP/p"
cp "$EXAMPLES/models/resilient.yaml" "$TMP/p/"
codex_agent_script "$TMP/p/codex.sh"
cat >"$TMP/p/exp.yaml" <<'EOF2'
name: codex-upstream-5xx
agent: sh codex.sh "Please run \`echo hello > out.txt\` and tell me how it went"
verify: test "$(cat out.txt)" = hello
repeat: 1
model: {mock: resilient.yaml}
faults:
  - id: llm.upstream_5xx
    times: 1
probes:
  - {id: task_success, weight: 2}
  - {id: cost_multiplier_below, weight: 1, value: 3}
abort:
  - cost_usd_above: 5
  - wall_clock_s_above: 150
EOF2
commit "$TMP/p"
cd "$TMP"

test_expect "codex under faultline run: scored, the task done in both repetitions" '
    test -x "$NM/.bin/codex" || { echo "codex missing: run scripts/bootstrap"; exit 1; }
    rc=0; timeout 400 "$FAULTLINE" run p/exp.yaml --ro-path "$NM" --out out/cx.json >run.out 2>run.err || rc=$?
    test "$rc" = 0 || { tail -n 20 run.err; exit 1; }
    test "$(jq -r .verdict out/cx.json)" = scored
    for r in rep-000 rep-001; do
        test "$(jq -r .exit_code out/cx/$r/verify.json)" = 0
        grep -q "^Done: the command succeeded" out/cx/$r/agent.out
    done
'

test_expect "the faulted repetition: one injected 5xx on the Responses API, then success" '
    e=out/cx/rep-001/events.jsonl
    test "$(jq -r "select(.kind==\"fault_injected\") | .fault" $e | wc -l)" = 1
    jq -se "[.[] | select(.kind == \"model_request\")] | all(.[]; .api == \"openai-responses\")" $e
    test "$(jq -r "select(.kind==\"model_response\" and .status >= 500) | .status" $e | wc -l)" = 1
    test "$(jq -r "select(.kind==\"model_response\" and .status == 200) | .status" $e | wc -l)" -ge 2
'

test_expect "nothing is left behind" '
    no_leftovers p "$TMP/out/cx"
'
test_done
