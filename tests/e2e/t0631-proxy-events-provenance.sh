#!/usr/bin/env bash
# What a process inside the sandbox may post to POST /_faultline/events (docs/control-api.md,
# "Threat model"): every accepted event is marked "via": "control_api"; src controller or
# runner, a negative, non-integer or far-future t are refused with a 400 naming the reason,
# and the batch holding one is not appended at all.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

start_upstream
write_plan "$TMP/plan.json" '[]' 100
start_proxy "$TMP/plan.json"
C="http://$A/_faultline"
export C

# post BODY: prints the status, the reply in o.json.
post() { curl -sS -o o.json -w "%{http_code}" -X POST "$C/events" -d "$1"; }
export -f post

test_expect "accepted events carry via control_api; the controller's own events do not" '
    now=$(date +%s000)
    test "$(post "[{\"kind\":\"tool_call\",\"src\":\"mcp\",\"t\":$now},{\"kind\":\"note\",\"via\":\"controller\",\"t\":null}]")" = 200
    jq -e ".appended == 2" o.json
    ev tool_call | jq -se "length == 1 and .[0].via == \"control_api\" and .[0].t == $now and .[0].src == \"mcp\""
    ev note | jq -se "length == 1 and .[0].via == \"control_api\" and .[0].src == \"agent\" and (.[0].t | type) == \"number\""
    ev plan_loaded | jq -se "length == 1 and (.[0] | has(\"via\") | not)"
'

test_expect "src controller and runner are refused with 400 naming the reason; the batch appends nothing" '
    n=$(wc -l <"$EVENTS")
    for src in controller runner Controller RUNNER; do
        code=$(post "[{\"kind\":\"note\",\"src\":\"mcp\"},{\"kind\":\"model_response\",\"src\":\"$src\"}]")
        echo "$src -> $code $(cat o.json)"
        test "$code" = 400
        jq -e ".error.type == \"invalid_request_error\" and (.error.message | test(\"event 1: src .* is reserved\"))" o.json
    done
    test "$(post "{\"kind\":\"note\",\"src\":5}")" = 400
    jq -e ".error.message | contains(\"src must be\")" o.json
    test "$(wc -l <"$EVENTS")" -eq "$n"
'

test_expect "a negative, fractional, textual or far-future t is refused; nothing is appended" '
    n=$(wc -l <"$EVENTS")
    future=$(( $(date +%s) * 1000 + 2 * 3600 * 1000 ))
    for t in -1 1.5 "\"1700000000000\"" $future 9223372036854775807; do
        code=$(post "{\"kind\":\"note\",\"t\":$t}")
        echo "$t -> $code $(cat o.json)"
        test "$code" = 400
        jq -e ".error.message | test(\"event 0: t \")" o.json
    done
    test "$(wc -l <"$EVENTS")" -eq "$n"
    # the past and the near future are fine
    test "$(post "[{\"kind\":\"note\",\"t\":0},{\"kind\":\"note\",\"t\":$(( $(date +%s) * 1000 + 60000 ))}]")" = 200
'

test_expect "refusals are logged; the controller keeps serving" '
    grep -q "refused posted events" "$TMP/proxy.log"
    curl -sS -m 5 "$C/health" | jq -e .ok
'

test_done
