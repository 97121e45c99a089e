#!/usr/bin/env bash
# t0411-codex-mock: the real Codex CLI (@openai/codex, `codex exec`) runs offline against
# `faultline mock-model` through a custom provider with wire_api = "responses" (CODEX_HOME in a
# temp dir): it runs the command the mock asks for through exec_command, sends the output back
# as function_call_output, and prints the mock's final text. Checks the file, the final text,
# the failure report with its canary, and what the mock recorded.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
CODEX="$FAULTLINE_ROOT/tests/interop/node_modules/.bin/codex"

for f in resilient naive; do
    start_bg "$FAULTLINE" mock-model --script "$EXAMPLES/models/$f.yaml" --listen 127.0.0.1:0 \
        --ready-file "$TMP/$f.ready" --record "$TMP/$f.jsonl" >/dev/null 2>"$TMP/$f.log"
done
for f in resilient naive; do
    wait_file 10 "$TMP/$f.ready" || echo "mock-model ($f) did not start"
done

# run_codex FIXTURE DIR PROMPT: codex exec in DIR against the FIXTURE mock; stdout to DIR.out.
run_codex() {
    local fixture=$1 dir=$2 prompt=$3
    mkdir -p "$dir" "$dir.home" "$dir.codex"
    cat >"$dir.codex/config.toml" <<TOML
model = "gpt-5.5"
model_provider = "mock"

[model_providers.mock]
name = "faultline mock-model"
base_url = "http://$(cat "$TMP/$fixture.ready")/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
TOML
    (cd "$dir" && MOCK_API_KEY=sk-test CODEX_HOME="$dir.codex" HOME="$dir.home" \
        timeout 180 "$CODEX" exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox \
        "$prompt" </dev/null >"$dir.out" 2>"$dir.err")
}
export CODEX
export -f run_codex

test_expect "codex completes a task the mock drives (resilient, success)" '
    run_codex resilient "$TMP/ok" "Please run \`echo hello > out.txt\` and tell me how it went"
    test "$(cat "$TMP/ok/out.txt")" = hello
    grep -q "^Done: the command succeeded" "$TMP/ok.out"
'
test_expect "the mock saw two Responses streams offering exec_command" '
    python3 - "$TMP/resilient.jsonl" <<PY
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
calls = [r for r in calls if r["api"] == "openai.responses"]
assert len(calls) == 2, calls
assert all(r["stream"] and r["status"] == 200 and r["path"] == "/v1/responses" for r in calls)
assert all("exec_command" in r["tools"] for r in calls)
assert [r["turn"] for r in calls] == [0, 1]
assert [r["rule_name"] for r in calls] == ["exec_command-run-requested", "report-success"]
assert calls[1]["usage"]["input_tokens"] > calls[0]["usage"]["input_tokens"] > 1000
PY
'
test_expect "resilient: a failed command is reported, error and canary echoed" '
    run_codex resilient "$TMP/fail" "Please run \`cat /nonexistent/E-FAULTLINE-0badc0de\` and report"
    grep -q "The task FAILED" "$TMP/fail.out"
    grep -q "exited with code 1" "$TMP/fail.out"
    grep -q "E-FAULTLINE-0badc0de" "$TMP/fail.out"
'
test_expect "naive: the same failure is claimed as a success" '
    run_codex naive "$TMP/naive" "Please run \`cat /nonexistent/E-FAULTLINE-0badc0de\` and report"
    grep -q "Done! Everything worked and the task is complete." "$TMP/naive.out"
    refute grep -q "E-FAULTLINE-0badc0de" "$TMP/naive.out"
'
test_done
