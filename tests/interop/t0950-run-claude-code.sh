#!/usr/bin/env bash
# The real Claude Code (`claude -p`) under `faultline run` in the native sandbox, offline
# against the mock model (examples/models/resilient.yaml): installed outside /usr, it is bound
# in with --ro-path (its node_modules' .bin goes on PATH inside). In the faulted repetition the
# controller answers its first model call with llm.rate_limit (429); Claude Code retries, runs
# the command the mock asks for through its Bash tool in /work, and the run is scored.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
NM=$(cd "$FAULTLINE_ROOT/tests/interop/node_modules" && pwd -P)
export NM

make_project "$TMP/p"
cp "$EXAMPLES/models/resilient.yaml" "$TMP/p/"
cat >"$TMP/p/exp.yaml" <<'EOF2'
name: claude-rate-limit
agent: >-
  DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
  CLAUDE_CODE_MAX_RETRIES=3 claude -p "Please run \`echo hello > out.txt\` and tell me how it went"
  --allowedTools Bash --output-format json </dev/null
verify: test "$(cat out.txt)" = hello
repeat: 1
model: {mock: resilient.yaml}
faults:
  - id: llm.rate_limit
    times: 1
    retry_after_s: 0
probes:
  - {id: task_success, weight: 2}
  - {id: cost_multiplier_below, weight: 1, value: 3}
abort:
  - cost_usd_above: 5
  - wall_clock_s_above: 150
EOF2
commit "$TMP/p"
cd "$TMP"

test_expect "claude code under faultline run: scored, the task done in both repetitions" '
    test -x "$NM/.bin/claude" || { echo "claude missing: run scripts/bootstrap"; exit 1; }
    rc=0; timeout 400 "$FAULTLINE" run p/exp.yaml --ro-path "$NM" --out out/cc.json >run.out 2>run.err || rc=$?
    test "$rc" = 0 || { tail -n 20 run.err; exit 1; }
    test "$(jq -r .verdict out/cc.json)" = scored
    for r in rep-000 rep-001; do
        test "$(jq -r .exit_code out/cc/$r/verify.json)" = 0
        jq -e "select(.type == \"result\") | .is_error == false" out/cc/$r/agent.out
    done
'

test_expect "the rate limit hit claude code once in the faulted repetition, and it retried" '
    e=out/cc/rep-001/events.jsonl
    test "$(jq -r "select(.kind==\"fault_injected\") | .kind" $e | wc -l)" = 1
    test "$(jq -r "select(.kind==\"model_response\" and .status==429) | .status" $e | wc -l)" = 1
    test "$(jq -r "select(.kind==\"model_response\" and .status==200) | .status" $e | wc -l)" -ge 2
    refute grep -q "\"kind\":\"fault_injected\"" out/cc/rep-000/events.jsonl
'

test_expect "nothing is left behind" '
    no_leftovers p "$TMP/out/cc"
'
test_done
