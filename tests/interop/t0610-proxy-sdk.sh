#!/usr/bin/env bash
# t0610-proxy-sdk: the official SDKs (@anthropic-ai/sdk, openai) call `faultline mock-model`
# through `faultline proxy`, streaming and not: answers are identical to calling the mock
# directly, and each llm.* fault reaches the SDK as its own typed error (RateLimitError with
# retry-after, InternalServerError, a cut connection mid-stream), with the canary. The events
# file then holds every call with its usage and cost, and no key.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
INTEROP="$FAULTLINE_ROOT/tests/interop"

cat >"$TMP/mock.yaml" <<'YAML'
name: proxy-interop
rules:
  - when: {tool_offered: shell, first_turn: true}
    reply: {text: "Running it.", tool_calls: [{name: shell, input: {command: "echo hi"}}]}
fallback: {text: "Hello from the mock: turn {{turn}}, {{tool_result_count}} tool results."}
YAML
f() { printf '{"kind":"%s","safety":"%s","injectors":["controller-model"],"match":{"model":"%s"},"options":%s}' "$@"; }
cat >"$TMP/plan.json" <<JSON
{"version":1,"run":"interop-run","canary":"E-FAULTLINE-feedbeef","faults":[
 $(f llm.rate_limit fail-safe '*-rl' '{"retry_after_s":7}'),
 $(f llm.rate_limit fail-safe '*-rl1' '{"retry_after_s":1}'),
 $(f llm.upstream_5xx fail-safe '*-500' '{"status":500}'),
 $(f llm.upstream_5xx fail-safe '*-529' '{"status":529}'),
 $(f llm.upstream_5xx fail-safe '*-cut' '{"status":529,"stream_cut_after_chunks":2}'),
 $(f llm.model_degrade mutating '*-deg' '{"to_model":"claude-haiku-4-5"}'),
 $(f llm.context_trim mutating '*-trim' '{"drop_oldest":2,"drop_system":false}')
],"abort":{"cost_usd_above":100}}
JSON

start_bg "$FAULTLINE" mock-model --script "$TMP/mock.yaml" --ready-file "$TMP/mock.ready" \
    >/dev/null 2>"$TMP/mock.log"
wait_file 10 "$TMP/mock.ready" || echo "mock-model did not start"
MOCK=$(cat "$TMP/mock.ready")
start_bg "$FAULTLINE" proxy --plan "$TMP/plan.json" --events "$TMP/events.jsonl" --i-have-a-sandbox \
    --upstream-anthropic "http://$MOCK" --upstream-openai "http://$MOCK/v1" \
    --ready-file "$TMP/px.ready" --log-level info 2>"$TMP/proxy.log"
PROXY_PID=$LAST_PID
wait_file 10 "$TMP/px.ready" || echo "proxy did not start"
export MOCK PX=$(cat "$TMP/px.ready") EVENTS="$TMP/events.jsonl"

for s in anthropicCreate anthropicStream anthropicRateLimit anthropicServerError anthropicCut \
    anthropicDegradeTrim openaiChat openaiResponses openaiErrors openaiCut sdkRetriesMeetTheFault \
    keyInQuery; do
    test_expect "sdk through the proxy: $s" "timeout 60 node '$INTEROP/proxy-sdk.mjs' $s"
done

test_expect "every fault was recorded once per injection, with the canary" '
    jq -se "[.[] | select(.kind == \"fault_injected\")] | length >= 12 and all(.[]; .canary == \"E-FAULTLINE-feedbeef\")" "$EVENTS"
    jq -se "[.[] | select(.kind == \"fault_injected\" and .fault == \"llm.upstream_5xx\" and .detail.events_forwarded == 2)] | length == 4" "$EVENTS"
'
test_expect "served calls carry usage and cost; the running total is the sum" '
    jq -se "[.[] | select(.kind == \"model_response\" and .status == 200 and .faulted == false)] | length >= 7 and all(.[]; .usage.input_tokens > 0 and .usage.output_tokens > 0 and .cost_usd > 0)" "$EVENTS"
    jq -se "[.[] | select(.kind == \"model_response\")] as \$r | ((\$r | map(.cost_usd) | add) - \$r[-1].cost_total_usd | fabs) < 1e-9" "$EVENTS"
'
test_expect "the SDKs' keys are in no event and no log line" '
    grep -q "key=\[REDACTED\]" "$EVENTS"
    refute grep -q "interop-secret" "$EVENTS" "$TMP/proxy.log"
'
test_expect "the proxy is still serving" 'kill -0 '"$PROXY_PID"
test_done
