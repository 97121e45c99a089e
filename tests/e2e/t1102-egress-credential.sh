#!/usr/bin/env bash
# egress.credential_401 through the egress proxy: a plain HTTP request to a matched host gets
# the 401 the interception side builds (WWW-Authenticate, the canary), and a CONNECT to a
# matched host is handed to the interception (the run's CA, --upstream-ca for the origin), so
# after_calls counts the HTTP requests inside the tunnel, not connections.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

command -v curl >/dev/null || { echo "curl missing"; exit 1; }
tls_servers # PORT: HTTPS on 127.0.0.1 with cert.pem (localhost, 127.0.0.1)

mkdir -p "$TMP/www" "$TMP/ca"
echo '{"login":"octocat"}' >"$TMP/www/user"
HP=$(free_port)
start_bg "$PY" -m http.server --bind 127.0.0.1 --directory "$TMP/www" "$HP" 2>"$TMP/www.log"
wait_for 10 curl -sS -o /dev/null "http://127.0.0.1:$HP/" || echo "the stand-in did not start"
export HP

start_upstream
write_plan "$TMP/plan.json" '[
 {"kind":"egress.credential_401","safety":"fail-safe","injectors":["controller-egress"],"match":{"host":"api.github.test"}},
 {"kind":"egress.credential_401","safety":"fail-safe","injectors":["controller-egress"],"match":{"host":"localhost"},"after_calls":1}
]'
start_proxy "$TMP/plan.json" --egress-listen 127.0.0.1:0 --egress-ready-file "$TMP/egress" \
    --ca-dir "$TMP/ca" --upstream-ca "$TMP/cert.pem" \
    --resolve "api.github.test:$HP:127.0.0.1" --resolve "localhost:$PORT:127.0.0.1"
wait_file 10 "$TMP/egress" || echo "no egress address"
EG=$(cat "$TMP/egress")
export EG

test_expect "plain HTTP to a matched host: 401 with WWW-Authenticate and the canary, never forwarded" '
    code=$(curl -sS --max-time 10 -o body.txt -D head.txt -w "%{http_code}" -x "http://$EG" "http://api.github.test:$HP/user")
    test "$code" = 401
    cat head.txt body.txt
    grep -qi "^WWW-Authenticate: " head.txt
    grep -q "Bad credentials" body.txt
    grep -q "E-FAULTLINE-0123abcd" body.txt
    refute grep -q "GET /user" "$TMP/www.log"
    wait_for 5 jq -se "any(.[]; .kind == \"egress_request\" and .host == \"api.github.test\" and .status == 401 and .faulted == true)" "$EVENTS"
    jq -se "map(select(.kind == \"fault_injected\")) | length == 1 and .[0].target == \"api.github.test\" and .[0].component == \"controller-egress\"" "$EVENTS"
'

test_expect "CONNECT to a matched host is intercepted: the first request forwarded, the second 401 (after_calls 1)" '
    test -s "$TMP/ca/ca.pem"
    curl -sS --max-time 10 --cacert "$TMP/ca/ca.pem" -x "http://$EG" "https://localhost:$PORT/v1/messages" -d "{}" >one.json
    jq -e ".content[0].text == \"hello over TLS to localhost:$PORT\"" one.json
    code=$(curl -sS --max-time 10 --cacert "$TMP/ca/ca.pem" -x "http://$EG" -o two.txt -w "%{http_code}" "https://localhost:$PORT/v1/messages" -d "{}")
    test "$code" = 401
    grep -q "E-FAULTLINE-0123abcd" two.txt
    wait_for 5 jq -se "map(select(.kind == \"fault_injected\")) | length == 2" "$EVENTS"
    jq -se "map(select(.kind == \"fault_injected\")) | .[1].target == \"localhost\"" "$EVENTS"
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"localhost\" and .intercepted == true and .status == 401)" "$EVENTS"
    jq -se "any(.[]; .kind == \"egress_request\" and .method == \"CONNECT\" and .host == \"localhost\" and .intercepted == false) | not" "$EVENTS"
'

test_done
