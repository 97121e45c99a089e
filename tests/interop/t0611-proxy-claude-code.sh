#!/usr/bin/env bash
# t0611-proxy-claude-code: the real Claude Code (`claude -p`) completes a task against
# `faultline mock-model` (examples/models/resilient.yaml) through `faultline proxy`: its
# streamed /v1/messages?beta=true calls, HEAD / and any other request pass through, and the
# events file records every model call with token usage and cost, and never the key. Then the
# same task with an injected overloaded error on the first call: Claude Code retries past it
# and still completes, and the fault is recorded.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
CLAUDE="$FAULTLINE_ROOT/tests/interop/node_modules/.bin/claude"
KEY=sk-ant-api03-claudecodeinterop-0123456789abcdef
export CLAUDE KEY

start_bg "$FAULTLINE" mock-model --script "$EXAMPLES/models/resilient.yaml" \
    --ready-file "$TMP/mock.ready" --record "$TMP/mock.jsonl" >/dev/null 2>"$TMP/mock.log"
wait_file 10 "$TMP/mock.ready" || echo "mock-model did not start"
MOCK=$(cat "$TMP/mock.ready")

cat >"$TMP/plan0.json" <<'JSON'
{"version":1,"run":"cc-baseline","canary":"E-FAULTLINE-c0dec0de","faults":[],"abort":{"cost_usd_above":5}}
JSON
cat >"$TMP/plan1.json" <<'JSON'
{"version":1,"run":"cc-faulted","canary":"E-FAULTLINE-c0dec0de","faulted":true,"faults":[
 {"kind":"llm.upstream_5xx","safety":"fail-safe","injectors":["controller-model"],"times":1,"options":{"status":529}}
],"abort":{"cost_usd_above":5}}
JSON
for p in 0 1; do
    start_bg "$FAULTLINE" proxy --plan "$TMP/plan$p.json" --events "$TMP/events$p.jsonl" \
        --upstream-anthropic "http://$MOCK" --ready-file "$TMP/px$p.ready" --log-level info \
        2>"$TMP/proxy$p.log"
    wait_file 10 "$TMP/px$p.ready" || echo "proxy $p did not start"
done

# run_claude PROXY_READY DIR PROMPT: claude -p in DIR through the proxy; result JSON in DIR.json.
run_claude() {
    local ready=$1 dir=$2 prompt=$3
    mkdir -p "$dir" "$dir.home"
    (cd "$dir" && ANTHROPIC_BASE_URL="http://$(cat "$ready")" ANTHROPIC_API_KEY="$KEY" \
        DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
        CLAUDE_CODE_MAX_RETRIES=3 HOME="$dir.home" \
        timeout 180 "$CLAUDE" -p "$prompt" --allowedTools Bash --output-format json \
        </dev/null >"$dir.json" 2>"$dir.err")
}
result() { jq -r ".$2" "$1"; }
export -f run_claude result

test_expect "claude code completes the task through the proxy" '
    run_claude "$TMP/px0.ready" "$TMP/ok" "Please run \`echo hello > out.txt\` and tell me how it went"
    test "$(cat "$TMP/ok/out.txt")" = hello
    test "$(result "$TMP/ok.json" is_error)" = false
    result "$TMP/ok.json" result | grep -q "^Done: the command succeeded"
'
test_expect "its model calls are recorded with usage and cost; the mock saw them unchanged" '
    E="$TMP/events0.jsonl"
    jq -se "[.[] | select(.kind == \"model_request\")] | length == 2 and all(.[]; .api == \"anthropic-messages\" and .stream == true and (.path | startswith(\"/v1/messages\")) and .tools >= 10)" "$E"
    jq -se "[.[] | select(.kind == \"model_response\")] | length == 2 and all(.[]; .status == 200 and .usage.input_tokens > 1000 and .usage.output_tokens > 0 and .cost_usd > 0)" "$E"
    jq -se "[.[] | select(.kind == \"model_response\")] | .[0].stop_reason == \"tool_use\" and .[1].stop_reason == \"end_turn\"" "$E"
    jq -se "[.[] | select(.kind == \"model_response\")] as \$r | ((\$r | map(.cost_usd) | add) - \$r[-1].cost_total_usd | fabs) < 1e-12" "$E"
    jq -se "[.[] | select(.api == \"anthropic.messages\")] | length == 2 and all(.[]; .status == 200)" "$TMP/mock.jsonl"
    jq -se "any(.[]; .method == \"HEAD\" and .path == \"/\")" "$TMP/mock.jsonl"
    # the cost the proxy recorded is the cost of the usage the mock reported
    jq -se "[.[] | select(.kind == \"model_response\") | .usage.input_tokens] == [\"$(jq -rs "[.[] | select(.api == \"anthropic.messages\") | .usage.input_tokens] | join(\",\")" "$TMP/mock.jsonl")\" | split(\",\") | .[] | tonumber]" "$E"
'
test_expect "the key reached the upstream path but no event or log line" '
    refute grep -q "$KEY" "$TMP/events0.jsonl" "$TMP/proxy0.log"
'
test_expect "an injected 529 on the first call: claude code retries past it and completes" '
    run_claude "$TMP/px1.ready" "$TMP/f" "Please run \`echo again > out.txt\` and tell me how it went"
    test "$(cat "$TMP/f/out.txt")" = again
    E="$TMP/events1.jsonl"
    jq -se "[.[] | select(.kind == \"fault_injected\")] | length == 1 and .[0].fault == \"llm.upstream_5xx\" and .[0].canary == \"E-FAULTLINE-c0dec0de\"" "$E"
    jq -se "[.[] | select(.kind == \"model_response\")] | .[0].status == 529 and .[0].faulted == true and ([.[1:][] | .status] | all(. == 200))" "$E"
'
test_done
