#!/usr/bin/env bash
# Connection slots under attack (docs/control-api.md, "Connection limits"): more slowloris
# sockets than --max-conns, each trickling a head one byte a second, do not lock out a client
# that sends its request promptly; a request written as head and body in two writes is not
# held back by Nagle and a delayed ACK.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

start_upstream
write_plan "$TMP/plan.json" '[]' 100
start_proxy "$TMP/plan.json" --max-conns 64

test_expect "150 slowloris sockets over a 64-connection limit: every well-behaved call is answered within 3 s, a keep-alive one is not evicted" '
    "$PY" "$PROXY_HELPERS/slowloris.py" "$A" 150 12 >sl.json
    cat sl.json
    jq -e ".made >= 20 and .answered == .made and .max_ms < 3000" sl.json
    # the keep-alive client is idle 300 ms between calls: trickling sockets go before it
    jq -e ".ka_made >= 20 and .ka_answered == .ka_made and .ka_closed == 0" sl.json
    grep -q "at the connection limit: dropped [0-9]* slow heads" "$TMP/proxy.log"
'

test_expect "after the attack the controller serves and holds no more than the limit" '
    curl -sS -m 5 "http://$A/_faultline/health" | jq -e .ok
    n=$(ls /proc/$PROXY_PID/fd | wc -l)
    echo "fds: $n"
    test "$n" -lt 100
'

test_expect "head and body in two writes on a keep-alive connection: no 40 ms delayed-ACK stall" '
    worst=$("$PY" "$PROXY_HELPERS/two_writes.py" "$A")
    echo "worst: $worst ms"
    test "$worst" -lt 30
'

test_done
