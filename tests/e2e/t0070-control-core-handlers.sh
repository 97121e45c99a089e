#!/usr/bin/env bash
# The controller's core routes each request to the handler registered for its target (the
# control API under /_faultline/, the model proxy for the rest), and what the control API
# reports about the proxy (calls in flight, model calls, cost) comes through the core, not the
# proxy's fields: a held call is counted while it waits and not after.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

start_upstream
write_plan "$TMP/plan.json" '[
 {"kind":"llm.latency","safety":"fail-safe","injectors":["controller-model"],"match":{"model":"*-lat"},"options":{"delay_ms":1500}}
]' 100
start_proxy "$TMP/plan.json"
C="http://$A/_faultline"
export C

test_expect "routing: /_faultline/ goes to the control API, its unknown paths are its own 404" '
    curl -sS "$C/health" | jq -e ".ok == true and .run == \"t-run\""
    code=$(curl -sS -o o.json -w "%{http_code}" "$C/nothing")
    test "$code" = 404
    jq -e ".error.type == \"not_found_error\" and .error.message == \"no such control API endpoint\"" o.json
'

test_expect "routing: any other path goes to the model proxy (forwarded upstream)" '
    code=$(curl -sS -o o.json -w "%{http_code}" -H "x-test-mode: echo" "http://$A/_faultlinex/models")
    test "$code" = 200
    jq -e ".path == \"/_faultlinex/models\"" o.json
'

test_expect "state counts a call the proxy holds, through the core, and not after it ends" '
    curl -sS "$C/state" | jq -e ".calls_in_flight == 0 and .model_calls == 0"
    curl -sS -o held.json "http://$A/v1/messages" -d "{\"model\":\"a-lat\",\"messages\":[]}" &
    cpid=$!
    n=0
    for i in $(seq 50); do
        n=$(curl -sS "$C/state" | jq .calls_in_flight)
        [ "$n" = 1 ] && break
        sleep 0.02
    done
    echo "in flight while held: $n"
    test "$n" = 1
    curl -sS "$C/state" | jq -e ".model_calls == 1"
    wait_pid_timeout() { local end=$((SECONDS + 10)); while kill -0 "$1" 2>/dev/null; do [ "$SECONDS" -lt "$end" ] || return 1; sleep 0.05; done; }
    wait_pid_timeout "$cpid"
    wait "$cpid"
    curl -sS "$C/state" >s.json
    cat s.json
    jq -e ".calls_in_flight == 0 and .model_calls == 1 and .cost_usd > 0" s.json
    ev model_response | jq -e "select(.model == \"a-lat\") | .cost_total_usd > 0"
'

# Shutdown with a call held (stop_proxy runs here, where the proxy's PID is known).
curl -sS -o /dev/null "http://$A/v1/messages" -d '{"model":"b-lat","messages":[]}' &
CPID=$!
for i in $(seq 50); do
    [ "$(curl -sS "$C/state" | jq .calls_in_flight)" = 1 ] && break
    sleep 0.02
done
STOPPED=0
stop_proxy && STOPPED=1
wait "$CPID" || true
export STOPPED

test_expect "shutdown stops every handler: a held call is ended and recorded" '
    test "$STOPPED" = 1
    ev model_response "select(.model == \"b-lat\")" | jq -e ".error == \"controller stopped\""
'

test_done
