#!/usr/bin/env bash
# Transparent mode (docs/egress.md): connections to the controller's transparent listeners,
# from a client that ignores the proxy variables, are routed by their Host field (plain HTTP)
# or their ClientHello's SNI (TLS) to the real host through the egress proxy's own paths: a
# forward for HTTP (egress.dns_fail answering 502 with the canary), a blind tunnel for TLS, the
# interception for a host egress.credential_401 matches; events with `mode: transparent`. A
# :443 connection without SNI, or not TLS, is closed with an event. The test runs in a user
# and network namespace of its own (unshare -rn) so that its stand-ins can listen on the
# ports the transparent mode dials, 80 and 443, of their loopback.
if [ -z "${T1182_IN_NS:-}" ]; then
    exec unshare -rn env T1182_IN_NS=1 bash "$0" "$@"
fi
ip link set lo up
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

(cd "$TMP" && openssl req -x509 -newkey rsa:2048 -nodes -keyout skey.pem -out scert.pem -days 2 \
    -subj /CN=secure.test -addext "subjectAltName=DNS:secure.test,DNS:api.github.test" 2>/dev/null) ||
    echo "openssl failed"
mkdir -p "$TMP/www"
echo '{"name":"left-pad","version":"1.3.0"}' >"$TMP/www/left-pad.json"
cat >"$TMP/https.py" <<'PY'
import http.server, ssl, sys, functools
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[3])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 443), h)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(sys.argv[1], sys.argv[2])
s.socket = c.wrap_socket(s.socket, server_side=True)
s.serve_forever()
PY
start_bg "$PY" -m http.server --bind 127.0.0.1 --directory "$TMP/www" 80 2>"$TMP/www.log"
start_bg "$PY" "$TMP/https.py" "$TMP/scert.pem" "$TMP/skey.pem" "$TMP/www" 2>"$TMP/https.log"
wait_for 10 curl -sS -o /dev/null "http://127.0.0.1/left-pad.json" || echo "the HTTP stand-in did not start"
wait_for 10 curl -sSk -o /dev/null "https://127.0.0.1/left-pad.json" || echo "the HTTPS stand-in did not start"

start_upstream
write_plan "$TMP/plan.json" '[
 {"kind":"egress.dns_fail","safety":"fail-safe","injectors":["controller-egress"],"match":{"host":"*.blocked.test"}},
 {"kind":"egress.credential_401","safety":"fail-safe","injectors":["controller-egress"],"match":{"host":"api.github.test"}}
]'
TH=$(free_port)
TT=$(free_port)
mkdir -p "$TMP/ca"
start_proxy "$TMP/plan.json" --client-timeout-ms 2000 --egress-listen 127.0.0.1:0 \
    --transparent-http "127.0.0.1:$TH" --transparent-tls "127.0.0.1:$TT" \
    --ca-dir "$TMP/ca" --upstream-ca "$TMP/scert.pem" \
    --resolve "registry.test:80:127.0.0.1" --resolve "secure.test:443:127.0.0.1" \
    --resolve "api.github.test:443:127.0.0.1"
export TH TT

wait_ev() {
    wait_for 5 jq -se "map(select($2)) | length >= $1" "$EVENTS"
}
export -f wait_ev

test_expect "plain HTTP by Host: forwarded to the --resolve host, mode transparent" '
    curl -sS --max-time 10 --noproxy "*" --connect-to "registry.test:80:127.0.0.1:$TH" http://registry.test/left-pad.json >out.json
    jq -e ".name == \"left-pad\"" out.json
    wait_ev 1 ".kind == \"egress_request\" and .host == \"registry.test\""
    ev egress_request "select(.host == \"registry.test\")" >e.json
    cat e.json
    jq -e ".mode == \"transparent\" and .method == \"GET\" and .port == 80 and .path == \"/left-pad.json\" and .status == 200" e.json
'

test_expect "plain HTTP under egress.dns_fail: 502 with the canary" '
    code=$(curl -sS --max-time 10 --noproxy "*" --connect-to "pkg.blocked.test:80:127.0.0.1:$TH" -o body -w "%{http_code}" http://pkg.blocked.test/x)
    test "$code" = 502
    grep -q "E-FAULTLINE-0123abcd" body
    wait_ev 1 ".kind == \"egress_request\" and .host == \"pkg.blocked.test\""
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"pkg.blocked.test\" and .mode == \"transparent\" and .faulted == true and .status == 502)" "$EVENTS"
'

test_expect "plain HTTP to a loopback Host is refused (403), as the proxy refuses it" '
    code=$(curl -sS --max-time 10 --noproxy "*" -o /dev/null -w "%{http_code}" -H "Host: 127.0.0.1" "http://127.0.0.1:$TH/")
    test "$code" = 403
'

test_expect "TLS by SNI: a blind tunnel to the real host, its certificate the origin one" '
    curl -sS --max-time 10 --noproxy "*" --cacert scert.pem --connect-to "secure.test:443:127.0.0.1:$TT" https://secure.test/left-pad.json >out.json
    jq -e ".name == \"left-pad\"" out.json
    wait_ev 1 ".kind == \"egress_request\" and .host == \"secure.test\""
    ev egress_request "select(.host == \"secure.test\")" >e.json
    cat e.json
    jq -e ".mode == \"transparent\" and .method == \"TLS\" and .port == 443 and .status == 200 and .bytes_in > 100 and .bytes_out > 100 and .intercepted == false" e.json
'

test_expect "TLS to a host egress.credential_401 matches: intercepted with the run CA, 401" '
    code=$(curl -sS --max-time 10 --noproxy "*" --cacert ca/ca.pem --connect-to "api.github.test:443:127.0.0.1:$TT" -o body -w "%{http_code}" https://api.github.test/user)
    test "$code" = 401
    grep -q "Bad credentials" body
    wait_ev 1 ".kind == \"egress_request\" and .host == \"api.github.test\""
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"api.github.test\" and .intercepted == true and .status == 401)" "$EVENTS"
'

test_expect "TLS without SNI, and not TLS at all: closed, an event each" '
    refute curl -sS --max-time 10 --noproxy "*" -k "https://127.0.0.1:$TT/" -o /dev/null
    printf "GET / HTTP/1.1\r\nHost: x\r\n\r\n" | timeout 5 curl -sS --max-time 5 telnet://127.0.0.1:$TT -o /dev/null || true
    wait_ev 2 ".kind == \"egress_request\" and .host == \"?\""
    jq -se "any(.[]; .kind == \"egress_request\" and .mode == \"transparent\" and .error == \"the ClientHello names no host (no SNI)\")" "$EVENTS"
    jq -se "any(.[]; .kind == \"egress_request\" and .mode == \"transparent\" and ((.error // \"\") | startswith(\"not TLS\")))" "$EVENTS"
    kill -0 "$PROXY_PID"
'

test_done
