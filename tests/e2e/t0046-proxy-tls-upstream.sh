#!/usr/bin/env bash
# t0046-proxy-tls-upstream: the controller's upstream client over https, with the one TLS
# client set-up (src/codec/tls.c): an origin whose certificate is trusted through
# --upstream-ca answers (by IP literal and by name); an untrusted certificate, or one that
# names another host (an IP literal checked against the certificate's IP entries), is refused
# with a 502 and the proxy keeps serving.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

tls_servers
cd "$TMP"
write_plan "$TMP/plan.json" '[]' 100

# proxy NAME UPSTREAM CA: a controller for UPSTREAM trusting CA; its address in NAME.addr.
proxy() {
    rm -f "$TMP/$1.ready"
    start_bg "$FAULTLINE" proxy --plan "$TMP/plan.json" --events "$TMP/$1.jsonl" \
        --upstream-anthropic "$2" --upstream-ca "$3" --retries 0 \
        --ready-file "$TMP/$1.ready" 2>>"$TMP/$1.log"
    wait_file 10 "$TMP/$1.ready" || { echo "proxy $1 did not start"; cat "$TMP/$1.log"; }
    cp "$TMP/$1.ready" "$TMP/$1.addr"
}
proxy ip "https://127.0.0.1:$PORT" cert.pem
proxy name "https://localhost:$PORT" cert.pem
proxy untrusted "https://localhost:$PORT" other.pem
proxy ipmismatch "https://127.0.0.1:$NPORT" name.pem
proxy dnsok "https://localhost:$NPORT" name.pem
export PORT NPORT

# call NAME: one Anthropic call through proxy NAME; the status on stdout, the body in NAME.out.
call() {
    curl -sS -m 20 -o "$1.out" -w '%{http_code}' "http://$(cat "$1.addr")/v1/messages" \
        -H "x-api-key: sk-ant-test" -d '{"model":"claude-sonnet-4-5","messages":[]}'
}
export -f call

test_expect "a trusted origin answers through the proxy, by IP literal and by name, twice each" '
    for i in 1 2; do
        test "$(call ip)" = 200
        jq -e --arg h "127.0.0.1:$PORT" ".content[0].text == (\"hello over TLS to \" + \$h)" ip.out
        test "$(call name)" = 200
        jq -e --arg h "localhost:$PORT" ".content[0].text == (\"hello over TLS to \" + \$h)" name.out
    done
    test "$(call dnsok)" = 200
'

test_expect "an untrusted certificate is refused with a 502 naming the certificate" '
    test "$(call untrusted)" = 502
    cat untrusted.out
    grep -qi "certificate" untrusted.out
'

test_expect "an IP literal is checked against the certificate IP entries" '
    test "$(call ipmismatch)" = 502
    cat ipmismatch.out
    grep -qi "certificate\|TLS" ipmismatch.out
'

test_expect "each proxy keeps serving after a refused handshake" '
    test "$(call untrusted)" = 502
    test "$(call ip)" = 200
    curl -sS -m 5 "http://$(cat untrusted.addr)/_faultline/health" | jq -e ".ok == true"
'

test_done
