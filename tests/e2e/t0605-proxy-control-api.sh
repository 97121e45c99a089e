#!/usr/bin/env bash
# The control API (docs/control-api.md): decide holds the repetition's counters, events are
# appended with seq assigned and secrets redacted, state reports cost/counters/abort; errors
# are JSON with 4xx statuses.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

start_upstream
write_plan "$TMP/plan.json" '[
 {"kind":"tool.error","safety":"fail-safe","injectors":["mcp","gate"],"match":{"tool":"read_file"},"after_calls":1,"times":2,"options":{"message":"boom"}},
 {"kind":"egress.dns_fail","safety":"fail-safe","injectors":["controller-egress"],"match":{"host":"*.npmjs.org"}},
 {"kind":"tool.auth_expiry","safety":"fail-safe","injectors":["mcp"],"match":{"tool":"get_token"},"times":1,"options":{"from_call":5}}
]' 3
start_proxy "$TMP/plan.json"
C="http://$A/_faultline"
export C

decide() { curl -sS -X POST "$C/decide" -d "$1"; }
export -f decide

test_expect "decide: after_calls and times are counted in one place" '
    for i in 1 2 3 4; do decide "{\"component\":\"mcp\",\"tool\":\"read_file\",\"server\":\"fs\",\"args\":{\"path\":\"x\"}}" | jq -c .; done >d.txt
    cat d.txt
    sed -n 1p d.txt | jq -e ".inject == false and .canary == \"E-FAULTLINE-0123abcd\""
    sed -n 2p d.txt | jq -e ".inject == true and .fault_index == 0 and .kind == \"tool.error\" and .options.message == \"boom\" and .call_index == 1"
    sed -n 3p d.txt | jq -e ".inject == true and .call_index == 2"
    sed -n 4p d.txt | jq -e ".inject == false"
    decide "{\"component\":\"gate\",\"tool\":\"read_file\"}" | jq -e ".inject == false"
    decide "{\"component\":\"controller-egress\",\"host\":\"registry.npmjs.org\",\"tool\":null}" | jq -e ".inject == true and .kind == \"egress.dns_fail\""
    decide "{\"component\":\"mcp\",\"tool\":\"other\"}" | jq -e ".inject == false"
'

test_expect "state: run, cost, ceiling, abort flag, model calls and counters" '
    curl -sS "$C/state" >s.json
    jq -e ".run == \"t-run\" and .cost_usd == 0 and .cost_ceiling_usd == 3 and .aborted == false and .abort_reason == null and .model_calls == 0" s.json
    # 4 mcp calls and 1 gate call matched fault 0
    jq -e ".counters[0] == {\"fault_index\":0,\"kind\":\"tool.error\",\"matched\":5,\"injected\":2}" s.json
    jq -e ".counters[1].injected == 1" s.json
'

test_expect "decide: tool.auth_expiry counts the session_call the shim sends, and spends times only when due" '
    for sc in 2 4 5 6; do decide "{\"component\":\"mcp\",\"tool\":\"get_token\",\"session_call\":$sc}" | jq -c "[.inject, .kind]"; done >a.txt
    cat a.txt
    test "$(cat a.txt | tr -d "\n")" = "[false,null][false,null][true,\"tool.auth_expiry\"][false,null]"
'

test_expect "decide refuses bad requests with 400 JSON" '
    for b in "{\"component\":\"nobody\"}" "{\"tool\":\"x\"}" "[1]" "{bad json" "{\"component\":\"mcp\",\"tool\":5}" \
        "{\"component\":\"mcp\",\"tool\":\"x\",\"session_call\":-1}" "{\"component\":\"mcp\",\"tool\":\"x\",\"session_call\":\"2\"}"; do
        code=$(curl -sS -o o.json -w "%{http_code}" -X POST "$C/decide" -d "$b")
        echo "$b -> $code"
        test "$code" = 400
        jq -e ".error.type == \"invalid_request_error\" and (.error.message | length > 0)" o.json
    done
'

test_expect "events: one or many are appended with seq assigned, run set, src kept or agent, secrets redacted" '
    curl -sS -X POST "$C/events" -d "{\"kind\":\"tool_call\",\"src\":\"mcp\",\"tool\":\"read_file\",\"seq\":999,\"run\":\"other\",\"args\":{\"api_key\":\"sk-ant-api03-zzzzzzzzzzzzzzzzzzzzzz\"}}" | jq -e ".appended == 1"
    curl -sS -X POST "$C/events" -d "[{\"kind\":\"tool_result\",\"ok\":true},{\"kind\":\"warning\",\"code\":\"x\",\"message\":\"m\"}]" | jq -e ".appended == 2"
    tail -n 3 "$EVENTS" >t.json
    jq -se ".[0].src == \"mcp\" and .[0].run == \"t-run\" and .[0].seq != 999 and .[0].args.api_key == \"[REDACTED]\"" t.json
    jq -se ".[1].src == \"agent\" and .[2].kind == \"warning\"" t.json
    jq -se "[.[].seq] | . == (sort) and (unique | length) == length" "$EVENTS"
    refute grep -q zzzzzzzzzzzzzzzzzzzzzz "$EVENTS"
'

test_expect "events: a bad element rejects the whole request; nothing is appended" '
    n=$(wc -l <"$EVENTS")
    for b in "[{\"kind\":\"a\"},{\"nokind\":1}]" "{\"kind\":5}" "\"str\"" "{bad"; do
        code=$(curl -sS -o o.json -w "%{http_code}" -X POST "$C/events" -d "$b")
        test "$code" = 400
    done
    test "$(wc -l <"$EVENTS")" -eq "$n"
'

test_expect "events: more than 1000 in one request, or a body over 1 MiB, gets 413" '
    "$PY" -c "import json; print(json.dumps([{\"kind\":\"x\"}] * 1001))" >many.json
    test "$(curl -sS -o /dev/null -w "%{http_code}" -X POST "$C/events" --data-binary @many.json)" = 413
    "$PY" -c "import json; print(json.dumps({\"kind\":\"x\",\"pad\":\"a\" * 1100000}))" >huge.json
    test "$(curl -sS -o /dev/null -w "%{http_code}" -X POST "$C/events" --data-binary @huge.json)" = 413
'

test_expect "unknown endpoints get 404 and wrong methods 405, as JSON" '
    test "$(curl -sS -o o.json -w "%{http_code}" "$C/nothing")" = 404
    jq -e ".error.type == \"not_found_error\"" o.json
    test "$(curl -sS -o o.json -w "%{http_code}" -X POST "$C/health")" = 405
    test "$(curl -sS -o o.json -w "%{http_code}" "$C/decide")" = 405
    jq -e ".error.message | contains(\"POST\")" o.json
'

test_expect "model calls show up in state" '
    curl -sS "http://$A/v1/messages" -d "{\"model\":\"claude-sonnet-4-5\",\"messages\":[]}" >/dev/null
    curl -sS "$C/state" | jq -e ".model_calls == 1 and (.cost_usd - 0.0105 | fabs) < 1e-9"
'

test_done
