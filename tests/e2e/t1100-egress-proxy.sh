#!/usr/bin/env bash
# The egress forward proxy (docs/egress.md) driven by curl: plain HTTP forwarded to a local
# registry stand-in named by --resolve, a blind CONNECT tunnel to a local HTTPS server,
# egress.dns_fail answering 502 with the canary for plain requests and CONNECT alike, and
# loopback destinations refused unless a --resolve entry names them. One egress_request event
# per connection, a fault_injected per injection.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

command -v curl >/dev/null || { echo "curl missing"; exit 1; }
tls_servers # PORT: HTTPS on 127.0.0.1 with cert.pem (localhost, 127.0.0.1)

# the registry stand-in: a static HTTP server on loopback
mkdir -p "$TMP/www"
echo '{"name":"left-pad","version":"1.3.0"}' >"$TMP/www/left-pad.json"
HP=$(free_port)
start_bg "$PY" -m http.server --bind 127.0.0.1 --directory "$TMP/www" "$HP" 2>"$TMP/www.log"
wait_for 10 curl -sS -o /dev/null "http://127.0.0.1:$HP/left-pad.json" || echo "the registry stand-in did not start"
export HP

start_upstream
write_plan "$TMP/plan.json" '[
 {"kind":"egress.dns_fail","safety":"fail-safe","injectors":["controller-egress"],"match":{"host":"*.blocked.test"}}
]'
start_proxy "$TMP/plan.json" --client-timeout-ms 2000 --egress-listen 127.0.0.1:0 --egress-ready-file "$TMP/egress" \
    --resolve "registry.test:$HP:127.0.0.1" --resolve "localhost:$PORT:127.0.0.1"
wait_file 10 "$TMP/egress" || echo "no egress address"
EG=$(cat "$TMP/egress")
export EG

# wait_ev N FILTER: waits (5 s) until N events match the jq FILTER
wait_ev() {
    wait_for 5 jq -se "map(select($2)) | length >= $1" "$EVENTS"
}
export -f wait_ev

test_expect "the egress side records its own plan_loaded" '
    jq -se "any(.[]; .kind == \"plan_loaded\" and .component == \"controller-egress\")" "$EVENTS"
'

test_expect "plain HTTP to a --resolve name is forwarded, with its egress_request event" '
    curl -sS --max-time 10 -x "http://$EG" "http://registry.test:$HP/left-pad.json" >out.json
    jq -e ".name == \"left-pad\"" out.json
    wait_ev 1 ".kind == \"egress_request\" and .host == \"registry.test\""
    ev egress_request "select(.host == \"registry.test\")" >e.json
    cat e.json
    jq -e ".method == \"GET\" and .port == $HP and .path == \"/left-pad.json\" and .status == 200 and .bytes_in > 30 and (.faulted // false) == false" e.json
    grep -q "GET /left-pad.json" "$TMP/www.log"
'

test_expect "https through a blind CONNECT tunnel: the origin's own certificate, bytes both ways" '
    curl -sS --max-time 10 --cacert "$TMP/cert.pem" -x "http://$EG" "https://localhost:$PORT/v1/messages" -d "{}" >out.json
    jq -e ".content[0].text == \"hello over TLS to localhost:$PORT\"" out.json
    wait_ev 1 ".kind == \"egress_request\" and .method == \"CONNECT\" and .host == \"localhost\""
    ev egress_request "select(.method == \"CONNECT\" and .host == \"localhost\")" >e.json
    cat e.json
    jq -e ".port == $PORT and .status == 200 and .bytes_in > 100 and .bytes_out > 100 and .intercepted == false" e.json
'

test_expect "egress.dns_fail: a plain request gets 502 with the canary in the reason phrase and the body" '
    code=$(curl -sS --max-time 10 -o body.txt -D head.txt -w "%{http_code}" -x "http://$EG" "http://pkg.blocked.test/left-pad")
    test "$code" = 502
    head -n1 head.txt | grep -q "502 .*E-FAULTLINE-0123abcd"
    grep -q "E-FAULTLINE-0123abcd" body.txt
    grep -q "cannot resolve host .pkg.blocked.test." body.txt
'

test_expect "egress.dns_fail: CONNECT is refused the same way; curl reports the failed tunnel" '
    if curl -sS --max-time 10 -x "http://$EG" "https://api.blocked.test/user" 2>err.txt; then exit 1; fi
    cat err.txt
    grep -q "CONNECT tunnel failed, response 502" err.txt
'

test_expect "each injection is a fault_injected from controller-egress, each request faulted" '
    wait_ev 2 ".kind == \"fault_injected\""
    ev fault_injected >f.json
    cat f.json
    jq -se "map(.target) == [\"pkg.blocked.test\", \"api.blocked.test\"] and all(.component == \"controller-egress\" and .canary == \"E-FAULTLINE-0123abcd\" and .fault == \"egress.dns_fail\")" f.json
    jq -se "map(.call_index) == [0, 1]" f.json
    wait_ev 2 ".kind == \"egress_request\" and .faulted == true"
    ev egress_request "select(.faulted == true)" >r.json
    jq -se "map([.method, .host, .status, .error]) == [[\"GET\", \"pkg.blocked.test\", 502, \"dns failure\"], [\"CONNECT\", \"api.blocked.test\", 502, \"dns failure\"]]" r.json
'

test_expect "loopback is refused unless --resolve names it: literal addresses, localhost on another port" '
    before=$(grep -c "GET" "$TMP/www.log")
    test "$(curl -sS --max-time 10 -o b1.txt -w "%{http_code}" -x "http://$EG" "http://127.0.0.1:$HP/left-pad.json")" = 403
    grep -q "loopback or private" b1.txt
    test "$(curl -sS --max-time 10 -o /dev/null -w "%{http_code}" -x "http://$EG" "http://localhost:$HP/left-pad.json")" = 403
    test "$(curl -sS --max-time 10 -o /dev/null -w "%{http_code}" -x "http://$EG" "http://[::1]:$HP/left-pad.json")" = 403
    test "$(curl -sS --max-time 10 -o /dev/null -w "%{http_code}" -x "http://$EG" "http://10.1.2.3:$HP/")" = 403
    if curl -sS --max-time 10 -x "http://$EG" "https://127.0.0.1:$PORT/" 2>err.txt; then exit 1; fi
    grep -q "response 403" err.txt
    test "$(grep -c "GET" "$TMP/www.log")" = "$before"
    wait_ev 5 ".kind == \"egress_request\" and .status == 403"
'

# raw PROXY_REQUEST: what the proxy answers a hand-made request head (status line)
raw() {
    printf "$1" | timeout 10 "$PY" -c '
import socket, sys
h, p = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((h, int(p)), timeout=8)
s.sendall(sys.stdin.buffer.read())
data = b""
while True:
    c = s.recv(65536)
    if not c: break
    data += c
print(data.split(b"\r\n")[0].decode())
' "$EG"
}
export -f raw

test_expect "bad requests get an answer the client understands, and an event" '
    raw "GARBAGE\r\n\r\n" | grep -q "^HTTP/1.1 400"
    raw "GET /origin-form HTTP/1.1\r\nHost: registry.test\r\n\r\n" | grep -q "^HTTP/1.1 400"
    raw "CONNECT registry.test HTTP/1.1\r\n\r\n" | grep -q "^HTTP/1.1 400"
    raw "CONNECT registry.test:99999 HTTP/1.1\r\n\r\n" | grep -q "^HTTP/1.1 400"
    raw "GET https://registry.test/ HTTP/1.1\r\n\r\n" | grep -q "^HTTP/1.1 400"
    raw "GET http://user@registry.test/ HTTP/1.1\r\n\r\n" | grep -q "^HTTP/1.1 400"
    big=$(head -c 20000 /dev/zero | tr "\0" a)
    raw "GET http://registry.test/ HTTP/1.1\r\nX: $big\r\n\r\n" | grep -q "^HTTP/1.1 431"
    wait_ev 7 ".kind == \"egress_request\" and .status >= 400 and .status < 500 and .status != 403"
'

test_expect "a client that never sends a head is cut after the client timeout" '
    "$PY" -c "
import socket, sys, time
h, p = sys.argv[1].rsplit(\":\", 1)
s = socket.create_connection((h, int(p)), timeout=8)
t = time.time(); d = s.recv(100)
assert d.startswith(b\"HTTP/1.1 408\"), d
assert time.time() - t < 7
" "$EG"
'

test_expect "the controller stops cleanly on SIGTERM with a tunnel open, recording its end" '
    "$PY" -c "
import socket, sys, time
h, p = sys.argv[1].rsplit(\":\", 1)
s = socket.create_connection((h, int(p)), timeout=8)
s.sendall(b\"CONNECT registry.test:$HP HTTP/1.1\r\n\r\n\")
assert s.recv(100).startswith(b\"HTTP/1.1 200\")
open(\"open\", \"w\").close()
time.sleep(5)
" "$EG" &
    wait_for 5 test -e open
    kill -TERM "$PROXY_PID"
    wait_for 5 refute kill -0 "$PROXY_PID"
    wait
    jq -se "any(.[]; .kind == \"egress_request\" and .method == \"CONNECT\" and .host == \"registry.test\" and .error == \"controller stopped\")" "$EVENTS"
    refute grep -E "Sanitizer|runtime error" "$TMP/proxy.log"
'

test_done
