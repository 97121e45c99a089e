#!/usr/bin/env bash
# A client that half-closes (shutdown(SHUT_WR)) after a complete request is answered, then the
# connection closes (docs/control-api.md, "Clients that half-close"); one that half-closes in
# the middle of a request is closed without an answer, at once.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

start_upstream
write_plan "$TMP/plan.json" '[]' 100
start_proxy "$TMP/plan.json"
HC="$PROXY_HELPERS/half_close.py"
export HC

test_expect "control API: answered, then closed" '
    "$PY" "$HC" "$A" /_faultline/health >o.json
    cat o.json
    jq -e ".status == 200 and .closed and .ms < 2000 and (.body | fromjson | .ok)" o.json
'

test_expect "a model call served from the upstream (answered later): answered, then closed" '
    "$PY" "$HC" "$A" /v1/messages "{\"model\":\"hc\",\"messages\":[]}" >o.json
    cat o.json
    jq -e ".status == 200 and .closed and .ms < 3000 and (.body | fromjson | .usage.input_tokens == 1000)" o.json
    ev model_response "select(.model == \"hc\")" | jq -e ".status == 200 and .error == null"
'

test_expect "a streamed model call: the whole stream, then closed" '
    "$PY" "$HC" "$A" /v1/messages "{\"model\":\"hcs\",\"stream\":true,\"messages\":[]}" "x-test-mode: slow:100" >o.json
    jq -e ".status == 200 and .closed and (.body | contains(\"message_stop\"))" o.json
    wait_for 5 sh -c "jq -e \"select(.kind == \\\"model_response\\\" and .model == \\\"hcs\\\")\" \"$EVENTS\""
    ev model_response "select(.model == \"hcs\")" | jq -e ".status == 200 and .error == null"
'

test_expect "two pipelined requests, then a half-close: both answered in order, then closed" '
    "$PY" - "$A" <<PY >p.txt
import socket, sys
host, port = sys.argv[1].split(":")
b = b"{\"model\":\"p1\",\"messages\":[]}"
r1 = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(b), b)
r2 = b"GET /_faultline/health HTTP/1.1\r\nHost: x\r\n\r\n"
s = socket.create_connection((host, int(port)))
s.sendall(r1 + r2)
s.shutdown(socket.SHUT_WR)
s.settimeout(10)
out = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    out += d
print(out.count(b"HTTP/1.1 200"), out.index(b"msg_up1") < out.index(b"plan_loaded"))
PY
    cat p.txt
    test "$(cat p.txt)" = "2 True"
'

test_expect "half-closed in the middle of a head or a body: closed at once, no answer" '
    "$PY" - "$A" <<PY >m.txt
import socket, sys, time
host, port = sys.argv[1].split(":")
for part in (b"GET /_faultline/health HTTP/1.1\r\nHost:", b"POST /_faultline/events HTTP/1.1\r\nContent-Length: 10\r\n\r\n{\"ki"):
    s = socket.create_connection((host, int(port)))
    t0 = time.monotonic()
    s.sendall(part)
    s.shutdown(socket.SHUT_WR)
    s.settimeout(10)
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
    print(len(out), time.monotonic() - t0 < 1.0)
PY
    cat m.txt
    test "$(cat m.txt | tr "\n" " ")" = "0 True 0 True "
    curl -sS -m 5 "http://$A/_faultline/health" | jq -e .ok
'

test_done
