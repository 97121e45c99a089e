#!/usr/bin/env bash
# t0612-proxy-codex: the real Codex CLI (`codex exec`, a custom provider with wire_api =
# "responses") completes a task against `faultline mock-model` (examples/models/resilient.yaml)
# through `faultline proxy` on its /v1 base URL: the streamed /v1/responses calls pass, and the
# events file records each with token usage and cost, and never the key. Then with an injected
# rate limit on the first call, which Codex waits out and retries.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
CODEX="$FAULTLINE_ROOT/tests/interop/node_modules/.bin/codex"
KEY=sk-proj-codexinterop-0123456789abcdefghij
export CODEX KEY

start_bg "$FAULTLINE" mock-model --script "$EXAMPLES/models/resilient.yaml" \
    --ready-file "$TMP/mock.ready" --record "$TMP/mock.jsonl" >/dev/null 2>"$TMP/mock.log"
wait_file 10 "$TMP/mock.ready" || echo "mock-model did not start"
MOCK=$(cat "$TMP/mock.ready")

cat >"$TMP/plan0.json" <<'JSON'
{"version":1,"run":"codex-baseline","canary":"E-FAULTLINE-c0de0c0d","faults":[],"abort":{"cost_usd_above":5}}
JSON
cat >"$TMP/plan1.json" <<'JSON'
{"version":1,"run":"codex-faulted","canary":"E-FAULTLINE-c0dec0de","faulted":true,"faults":[
 {"kind":"llm.rate_limit","safety":"fail-safe","injectors":["controller-model"],"match":{"model":"gpt-5.5"},"times":1,"options":{"retry_after_s":1}}
],"abort":{"cost_usd_above":5}}
JSON
for p in 0 1; do
    start_bg "$FAULTLINE" proxy --plan "$TMP/plan$p.json" --events "$TMP/events$p.jsonl" \
        --upstream-openai "http://$MOCK/v1" --ready-file "$TMP/px$p.ready" --log-level info \
        2>"$TMP/proxy$p.log"
    wait_file 10 "$TMP/px$p.ready" || echo "proxy $p did not start"
done

# run_codex PROXY_READY DIR PROMPT: codex exec in DIR through the proxy; stdout in DIR.out.
run_codex() {
    local ready=$1 dir=$2 prompt=$3
    mkdir -p "$dir" "$dir.home" "$dir.codex"
    cat >"$dir.codex/config.toml" <<TOML
model = "gpt-5.5"
model_provider = "proxied"

[model_providers.proxied]
name = "mock-model through faultline proxy"
base_url = "http://$(cat "$ready")/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
TOML
    (cd "$dir" && MOCK_API_KEY="$KEY" CODEX_HOME="$dir.codex" HOME="$dir.home" \
        timeout 180 "$CODEX" exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox \
        "$prompt" </dev/null >"$dir.out" 2>"$dir.err")
}
export -f run_codex

test_expect "codex completes the task through the proxy" '
    run_codex "$TMP/px0.ready" "$TMP/ok" "Please run \`echo hello > out.txt\` and tell me how it went"
    test "$(cat "$TMP/ok/out.txt")" = hello
    grep -q "^Done: the command succeeded" "$TMP/ok.out"
'
test_expect "its Responses calls are recorded with usage and cost" '
    E="$TMP/events0.jsonl"
    jq -se "[.[] | select(.kind == \"model_request\")] | length == 2 and all(.[]; .api == \"openai-responses\" and .model == \"gpt-5.5\" and .stream == true and .path == \"/v1/responses\")" "$E"
    jq -se "[.[] | select(.kind == \"model_response\")] | length == 2 and all(.[]; .status == 200 and .usage.input_tokens > 1000 and .usage.output_tokens > 0 and .cost_usd > 0 and .stop_reason == \"completed\")" "$E"
    # gpt-5.5: 5 USD/M input, 30 USD/M output
    jq -se "all(.[] | select(.kind == \"model_response\"); (.cost_usd - (.usage.input_tokens * 5 + .usage.output_tokens * 30) / 1e6 | fabs) < 1e-12)" "$E"
    jq -se "[.[] | select(.api == \"openai.responses\")] | length == 2" "$TMP/mock.jsonl"
'
test_expect "the key is in no event and no log line" '
    refute grep -q "$KEY" "$TMP/events0.jsonl" "$TMP/proxy0.log"
'
test_expect "an injected rate limit on the first call: codex waits, retries and completes" '
    run_codex "$TMP/px1.ready" "$TMP/f" "Please run \`echo again > out.txt\` and tell me how it went"
    test "$(cat "$TMP/f/out.txt")" = again
    E="$TMP/events1.jsonl"
    jq -se "[.[] | select(.kind == \"fault_injected\")] | length == 1 and .[0].fault == \"llm.rate_limit\"" "$E"
    jq -se "[.[] | select(.kind == \"model_response\")] | .[0].status == 429 and ([.[1:][] | .status] | all(. == 200))" "$E"
'
test_done
