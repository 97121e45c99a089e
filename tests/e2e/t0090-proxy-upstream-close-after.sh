#!/usr/bin/env bash
# t0090-proxy-upstream-close-after: an origin that sends a complete keep-alive response and
# then closes the connection (over TLS with and without close_notify, and over plain TCP).
# The connection must not go back to the upstream pool: the next call through the proxy is
# answered on a new connection at its first try, with no stale-connection resend (the
# upstream's "sending again" debug line), no proxy retry and no error event. Through the proxy
# the origin's end is read before the next call arrives (libevent reports it after the data,
# on the pooled connection, which is then closed), so this passes with or without the peek
# before reuse in src/control/upstream.c (uconn_alive); tests/unit/test_upstream.c sends the
# next request before the end is read, where the request went onto the ended connection.
# tls-onewrite puts the response and close_notify in one segment; the second call follows at
# once, the third after 0.2 s.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

(cd "$TMP" && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 \
    -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2>/dev/null) ||
    { echo "openssl failed"; exit 1; }
cd "$TMP"
write_plan "$TMP/plan.json" '[]' 100

# origin MODE: starts close_after.py in MODE and a proxy in front of it (retries off, debug
# log); the proxy's address in MODE.addr, its log MODE.log, the origin's MODE.origin.
origin() {
    local scheme=https
    if [ "$1" = plain ]; then scheme=http; fi
    start_bg "$PY" "$PROXY_HELPERS/close_after.py" "$1" "$TMP/$1.port" "$TMP/$1.origin" \
        "$TMP/cert.pem" "$TMP/key.pem"
    wait_file 10 "$TMP/$1.port" || echo "origin $1 did not start"
    start_bg "$FAULTLINE" proxy --plan "$TMP/plan.json" --events "$TMP/$1.jsonl" \
        --upstream-anthropic "$scheme://127.0.0.1:$(cat "$TMP/$1.port")" \
        --upstream-ca "$TMP/cert.pem" --retries 0 --log-level debug \
        --ready-file "$TMP/$1.ready" 2>>"$TMP/$1.log"
    wait_file 10 "$TMP/$1.ready" || { echo "proxy $1 did not start"; cat "$TMP/$1.log"; }
    cp "$TMP/$1.ready" "$TMP/$1.addr"
}
for m in tls tls-dirty tls-onewrite plain; do origin $m; done

# calls MODE: three calls through MODE's proxy, each 200 with the next connection's answer
# ("connection 1", 2, 3): the second at once, the third after the origin has surely closed.
calls() {
    for i in 1 2 3; do
        st=$(curl -sS -m 20 -o "$1.out" -w '%{http_code}' "http://$(cat "$1.addr")/v1/messages" \
            -H "x-api-key: sk-ant-test" -d '{"model":"claude-sonnet-4-5","messages":[]}')
        cat "$1.out"; echo
        test "$st" = 200
        jq -e --arg t "connection $i" '.content[0].text == $t' "$1.out"
        if [ "$i" = 2 ]; then sleep 0.2; fi
    done
}
export -f calls

# clean MODE: the proxy never used a stale pooled connection: nothing sent again, no retry.
clean() {
    if grep -n 'stale pooled connection\|sending again\|retry' "$1.log"; then return 1; fi
    if grep -q 'AddressSanitizer\|runtime error' "$1.log"; then cat "$1.log"; return 1; fi
}
# events_ok MODE: three model_response events with status 200, no warning, nothing with an error.
events_ok() {
    jq -c "select(.kind == \"warning\")" "$1.jsonl"
    test "$(jq -c 'select(.kind == "model_response" and .status == 200)' "$1.jsonl" | wc -l)" -eq 3
    test "$(jq -c 'select(.kind == "warning" or has("error"))' "$1.jsonl" | wc -l)" -eq 0
}
export -f clean events_ok

for m in tls tls-dirty tls-onewrite plain; do
    test_expect "$m: three calls after the origin closes each get their answer on a new connection" "
        calls $m
        printf '1 POST /v1/messages\n2 POST /v1/messages\n3 POST /v1/messages\n' >want.$m
        diff want.$m $m.origin
    "
    test_expect "$m: no stale pooled connection was used, nothing was sent again" "clean $m"
    test_expect "$m: three model_response events with status 200, no warning or error" "events_ok $m"
done

test_done
