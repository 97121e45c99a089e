#!/usr/bin/env bash
# The llm.* faults: each honours match.model, after_calls and times, reaches the agent in the
# provider's own format with the canary, is recorded as fault_injected; the cost ceiling.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

start_upstream
fault() { # KIND MODEL_PATTERN OPTIONS [EXTRA_FIELDS]
    printf '{"kind":"%s","safety":"fail-safe","injectors":["controller-model"],"match":{"model":"%s"},"options":%s%s}' \
        "$1" "$2" "$3" "${4:-}"
}
write_plan "$TMP/plan.json" "[
 $(fault llm.rate_limit '*-rl' '{"retry_after_s":7}' ',"after_calls":1,"times":1'),
 $(fault llm.upstream_5xx '*-5xx' '{"status":503}'),
 $(fault llm.upstream_5xx '*-oai5xx' '{"status":500}'),
 $(fault llm.upstream_5xx '*-cut' '{"status":529,"stream_cut_after_chunks":3}'),
 $(fault llm.upstream_5xx '*-cut0' '{"status":529,"stream_cut_after_chunks":0}'),
 $(fault llm.upstream_5xx '*-cutlong' '{"status":529,"stream_cut_after_chunks":50}'),
 $(fault llm.context_trim '*-trim' '{"drop_oldest":1,"drop_system":true}' ',"safety":"mutating"'),
 $(fault llm.model_degrade '*-deg' '{"to_model":"claude-haiku-4-5"}' ',"safety":"mutating"'),
 $(fault llm.latency '*-lat' '{"delay_ms":800}'),
 $(fault llm.rate_limit '*-half' '{}' ',"probability":0.5')
]" 100
CANARY=E-FAULTLINE-0123abcd
export CANARY

# the safety rule (a hand-started controller refuses mutating faults without the flag) is t0640
start_proxy "$TMP/plan.json" --i-have-a-sandbox

post() { # PATH BODY [CURL ARGS...]
    local p=$1 b=$2; shift 2
    curl -sS -D h.txt -o out.json -w "%{http_code}" "http://$A$p" -H "x-api-key: k" -d "$b" "$@"
}
export -f post

test_expect "llm.rate_limit: after_calls 1, times 1; 429 with retry-after and the canary; upstream not called" '
    n0=$(upstream_log | jq length)
    test "$(post /v1/messages "{\"model\":\"a-rl\",\"messages\":[]}")" = 200
    test "$(post /v1/messages "{\"model\":\"a-rl\",\"messages\":[]}")" = 429
    grep -qi "^retry-after: 7" h.txt
    jq -e ".type == \"error\" and .error.type == \"rate_limit_error\" and (.error.message | contains(\"$CANARY\"))" out.json
    test "$(post /v1/messages "{\"model\":\"a-rl\",\"messages\":[]}")" = 200
    test "$(upstream_log | jq length)" -eq $((n0 + 2))
    ev fault_injected "select(.fault == \"llm.rate_limit\")" >f.json
    test "$(wc -l <f.json)" -eq 1
    jq -e ".fault_index == 0 and .call_index == 1 and .target == \"a-rl\" and .canary == \"$CANARY\" and .detail.retry_after_s == 7" f.json
'

test_expect "llm.upstream_5xx: the status in the provider format (Anthropic and OpenAI), never retried" '
    n0=$(upstream_log | jq length)
    test "$(post /v1/messages "{\"model\":\"a-5xx\",\"messages\":[]}")" = 503
    jq -e ".type == \"error\" and (.error.message | contains(\"$CANARY\"))" out.json
    test "$(post /v1/chat/completions "{\"model\":\"a-oai5xx\",\"messages\":[]}" -H "authorization: Bearer x")" = 500
    jq -e "(.error.message | contains(\"$CANARY\")) and .error.type == \"server_error\"" out.json
    test "$(upstream_log | jq length)" -eq "$n0"
    ev model_response "select(.model == \"a-5xx\")" | jq -e ".status == 503 and .faulted == true and .retries == 0"
'

test_expect "llm.upstream_5xx stream cut: N events, a comment with the canary, then the connection closes mid-body" '
    set +e
    curl -sSN "http://$A/v1/messages" -d "{\"model\":\"a-cut\",\"stream\":true,\"messages\":[]}" >s.txt 2>err.txt
    rc=$?
    set -e
    test "$rc" -eq 18   # curl: transfer closed with outstanding read data
    test "$(grep -c "^data: " s.txt)" -eq 3
    grep -q "^: faultline injected llm.upstream_5xx.*$CANARY" s.txt
    refute grep -q message_stop s.txt
    ev fault_injected "select(.target == \"a-cut\")" | jq -e ".detail.events_forwarded == 3"
    ev model_response "select(.model == \"a-cut\")" | jq -e ".faulted == true and (.error | contains(\"cut\"))"
'

test_expect "stream cut after 0 events, and a stream shorter than the cut point still loses its end" '
    set +e
    curl -sSN "http://$A/v1/messages" -d "{\"model\":\"a-cut0\",\"stream\":true,\"messages\":[]}" >s0.txt 2>/dev/null
    rc0=$?
    curl -sSN "http://$A/v1/messages" -d "{\"model\":\"a-cutlong\",\"stream\":true,\"messages\":[]}" >sl.txt 2>/dev/null
    rcl=$?
    set -e
    test "$rc0" -eq 18
    test "$rcl" -eq 18
    test "$(grep -c "^data: " s0.txt)" -eq 0
    test "$(grep -c "^data: " sl.txt)" -eq 8
    refute grep -q message_stop sl.txt
'

test_expect "stream cut on a call that does not stream fails it with the status instead" '
    test "$(post /v1/messages "{\"model\":\"b-cut\",\"messages\":[]}")" = 529
    jq -e ".error.type == \"overloaded_error\" and (.error.message | contains(\"$CANARY\"))" out.json
'

test_expect "llm.context_trim drops the oldest messages and the system prompt before forwarding" '
    body="{\"model\":\"a-trim\",\"system\":\"SYS\",\"messages\":[{\"role\":\"user\",\"content\":\"one\"},{\"role\":\"assistant\",\"content\":\"two\"},{\"role\":\"user\",\"content\":\"three\"}]}"
    test "$(post /v1/messages "$body" -H "x-test-mode: echo")" = 200
    jq -r .body out.json >sent.json
    jq -e "has(\"system\") | not" sent.json
    jq -e "[.messages[].content] == [\"three\"]" sent.json
    ev fault_injected "select(.fault == \"llm.context_trim\")" | jq -e ".detail.dropped_system == true and .detail.dropped == 2"
'

test_expect "llm.model_degrade rewrites the model; the response is accounted under the new one" '
    test "$(post /v1/messages "{\"model\":\"claude-opus-4-6-deg\",\"messages\":[]}" -H "x-test-mode: echo")" = 200
    jq -r .body out.json | jq -e ".model == \"claude-haiku-4-5\""
    test "$(post /v1/messages "{\"model\":\"x-deg\",\"messages\":[]}")" = 200
    jq -e ".model == \"claude-haiku-4-5\"" out.json
    ev model_response "select(.id == \"$(ev model_request "select(.model == \"x-deg\") | .id" | tr -d \")\")" | jq -e ".model == \"claude-haiku-4-5\" and (.cost_usd - 0.0035 | fabs) < 1e-9"
'

test_expect "llm.latency delays the call by delay_ms" '
    s=$(date +%s%N)
    test "$(post /v1/messages "{\"model\":\"a-lat\",\"messages\":[]}")" = 200
    ms=$(( ($(date +%s%N) - s) / 1000000 ))
    echo "took $ms ms"
    test "$ms" -ge 800
    test "$ms" -lt 3000
    ev fault_injected "select(.fault == \"llm.latency\")" | jq -e ".detail.delay_ms == 800"
'

test_expect "probability 0.5 is decided deterministically: some calls, not all" '
    for i in $(seq 20); do post /v1/messages "{\"model\":\"x-half\",\"messages\":[]}"; echo; done >codes.txt
    n=$(grep -c 429 codes.txt)
    echo "$n of 20 injected"
    test "$n" -gt 0
    test "$n" -lt 20
'

test_expect "the control API state shows the counters" '
    curl -sS "http://$A/_faultline/state" | jq -e ".counters[0].matched == 3 and .counters[0].injected == 1 and .counters[1].injected == 1"
'

stop_proxy

# The cost ceiling: once passed, an abort event and refusals that carry faultline's own marker,
# never the canary (a refusal is not an injected fault: echoing it surfaces no fault).
rm -f "$TMP/events.jsonl"
write_plan "$TMP/plan2.json" '[]' 0.02
start_proxy "$TMP/plan2.json"

test_expect "cost ceiling: the call that passes it is served, then an abort event and refusals" '
    test "$(post /v1/messages "{\"model\":\"claude-sonnet-4-5\",\"messages\":[]}")" = 200
    test "$(ev abort | wc -l)" -eq 0
    test "$(post /v1/messages "{\"model\":\"claude-sonnet-4-5\",\"messages\":[]}")" = 200
    ev abort | jq -e ".reason == \"cost_usd_above\" and .limit == 0.02 and .value > 0.02"
    test "$(post /v1/messages "{\"model\":\"claude-sonnet-4-5\",\"messages\":[]}")" = 400
    jq -e ".error.type == \"invalid_request_error\" and (.error.message | contains(\"FAULTLINE-REFUSED cost_usd_above\"))" out.json
    refute grep -q "$CANARY" out.json
    test "$(post /v1/responses "{\"model\":\"gpt-5.4\",\"input\":\"x\"}" -H "authorization: Bearer x")" = 429
    grep -qi "^x-should-retry: false" h.txt
    jq -e ".error.code == \"insufficient_quota\" and (.error.message | contains(\"FAULTLINE-REFUSED cost_usd_above\"))" out.json
    refute grep -q "$CANARY" out.json
    test "$(ev abort | wc -l)" -eq 1
    curl -sS "http://$A/_faultline/state" | jq -e ".aborted == true and .abort_reason == \"cost_usd_above\" and .cost_ceiling_usd == 0.02"
'

test_done
