#!/usr/bin/env bash
# Limits and bad input: oversized bodies, malformed requests and JSON, garbage SSE from the
# upstream, clients that vanish or stall, streams cut by the upstream, backpressure. Each gets
# a clear error or an event; the controller never crashes and keeps serving.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

start_upstream
write_plan "$TMP/plan.json" '[]' 100
start_proxy "$TMP/plan.json" --max-body 4096 --client-timeout-ms 700 --retries 0

# raw REQUEST_BYTES_PY_EXPR [WAIT_S]: sends raw bytes, prints what comes back until close/timeout.
raw() {
    "$PY" - "$A" "$1" "${2:-3}" <<'PY'
import socket, sys, time
host, port = sys.argv[1].split(":")
data = eval(sys.argv[2])
s = socket.create_connection((host, int(port)))
s.settimeout(float(sys.argv[3]))
for part in (data if isinstance(data, list) else [data]):
    if isinstance(part, (int, float)):
        time.sleep(part)
    else:
        s.sendall(part)
out = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
except socket.timeout:
    out += b"\n[timeout]"
sys.stdout.write(out.decode("latin-1"))
PY
}
healthy() { curl -sS -m 5 "http://$A/_faultline/health" | jq -e .ok >/dev/null; }
export -f raw healthy

test_expect "a body over the limit gets 413 with the provider's JSON error, and an event" '
    head -c 10000 /dev/zero | tr "\0" a >big
    code=$(curl -sS -o o.json -w "%{http_code}" "http://$A/v1/messages" --data-binary @big)
    test "$code" = 413
    jq -e ".type == \"error\" and .error.type == \"request_too_large\"" o.json
    code=$(curl -sS -o o.json -w "%{http_code}" "http://$A/v1/chat/completions" --data-binary @big)
    test "$code" = 413
    jq -e ".error.message | contains(\"limit\")" o.json
    code=$(curl -sS -o o.json -w "%{http_code}" "http://$A/other" --data-binary @big)
    test "$code" = 413
    jq -e ".error.type == \"request_too_large\"" o.json
    ev warning "select(.code == \"request_rejected\" and .status == 413)" | wc -l | grep -qx 3
'

test_expect "a chunked body within the limit is accepted; one over it gets 413" '
    curl -sS -H "Transfer-Encoding: chunked" -H "x-test-mode: echo" "http://$A/v1/messages" \
        -d "{\"model\":\"c\",\"messages\":[]}" | jq -e ".body == \"{\\\"model\\\":\\\"c\\\",\\\"messages\\\":[]}\""
    code=$(curl -sS -o o.json -w "%{http_code}" -H "Transfer-Encoding: chunked" "http://$A/v1/messages" --data-binary @big)
    test "$code" = 413
'

test_expect "Expect: 100-continue is answered" '
    curl -sS -H "Expect: 100-continue" -H "x-test-mode: echo" "http://$A/v1/messages" -d "{\"model\":\"c\",\"messages\":[]}" | jq -e ".method == \"POST\""
'

test_expect "malformed JSON is forwarded as is, the upstream answer returned, and recorded" '
    code=$(curl -sS -o o.json -w "%{http_code}" "http://$A/v1/messages" -d "{\"model\": nope")
    test "$code" = 400
    jq -e ".error.message == \"upstream says 400\"" o.json
    ev model_request "select(.malformed == true)" | grep -q .
    ev warning "select(.code == \"malformed_request\")" | grep -q "invalid JSON"
'

test_expect "malformed request heads get 400, 431, 501 as JSON; the connection closes" '
    raw "b\"GARBAGE\\r\\n\\r\\n\"" >o1.txt
    head -n 1 o1.txt | grep -q "^HTTP/1.1 400"
    grep -q "\"invalid_request_error\"" o1.txt
    raw "b\"GET / HTTP/1.1\\r\\nX: \" + b\"a\" * 70000 + b\"\\r\\n\\r\\n\"" >o2.txt
    head -n 1 o2.txt | grep -q "^HTTP/1.1 431"
    raw "b\"POST /v1/messages HTTP/1.1\\r\\nTransfer-Encoding: gzip\\r\\n\\r\\n\"" >o3.txt
    head -n 1 o3.txt | grep -q "^HTTP/1.1 501"
    raw "b\"POST /v1/messages HTTP/1.1\\r\\nContent-Length: 5\\r\\nContent-Length: 6\\r\\n\\r\\nhello\"" >o4.txt
    head -n 1 o4.txt | grep -q "^HTTP/1.1 400"
    raw "b\"GET / HTTP/1.1\\r\\nBad Name: x\\r\\n\\r\\n\"" >o5.txt
    head -n 1 o5.txt | grep -q "^HTTP/1.1 400"
    raw "b\"POST / HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\nzz\\r\\n\"" >o6.txt
    head -n 1 o6.txt | grep -q "^HTTP/1.1 400"
    healthy
'

test_expect "a client that sends its head too slowly gets 408; an idle keep-alive connection is closed" '
    raw "[b\"POST /v1/messages HTTP/1.1\\r\\n\", 1.2, b\"Host: x\\r\\n\"]" 3 >o.txt
    head -n 1 o.txt | grep -q "^HTTP/1.1 408"
    raw "[b\"GET /_faultline/health HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n\"]" 3 >o2.txt
    grep -q "plan_loaded" o2.txt
    refute grep -q "\[timeout\]" o2.txt    # closed by the server after the idle timeout
'

test_expect "pipelined requests are answered in order; HTTP/1.0 gets Connection: close" '
    raw "b\"GET /_faultline/health HTTP/1.1\\r\\nHost: x\\r\\n\\r\\nGET /_faultline/state HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n\"" >o.txt
    test "$(grep -o "HTTP/1.1 200" o.txt | wc -l)" -eq 2
    grep -o "plan_loaded\|cost_usd" o.txt | head -n 1 | grep -q plan_loaded
    raw "b\"GET /_faultline/health HTTP/1.0\\r\\n\\r\\n\"" >o2.txt
    grep -qi "^connection: close" o2.txt
'

test_expect "garbage SSE from the upstream reaches the client as is; a warning; still serving" '
    curl -sS "http://$A/v1/messages" -H "x-test-mode: garbage" -d "{\"model\":\"g\",\"stream\":true,\"messages\":[]}" >g.bin
    grep -q "not sse at all" g.bin
    ev warning "select(.code == \"malformed_stream\")" | grep -q .
    ev model_response "select(.model == \"g\")" | jq -e ".status == 200"
    healthy
'

test_expect "a stream the upstream cuts is cut for the client too, and recorded" '
    set +e
    curl -sSN "http://$A/v1/messages" -H "x-test-mode: drop:4" -d "{\"model\":\"d\",\"stream\":true,\"messages\":[]}" >d.txt 2>/dev/null
    rc=$?
    set -e
    test "$rc" -eq 18
    ev model_response "select(.model == \"d\")" | jq -e ".error | contains(\"middle of the body\")"
    healthy
'

test_expect "a client that disconnects mid-stream: upstream abandoned, recorded, still serving" '
    "$PY" - "$A" <<PY
import socket, sys
host, port = sys.argv[1].split(":")
s = socket.create_connection((host, int(port)))
body = b"{\"model\":\"gone\",\"stream\":true,\"messages\":[]}"
s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-test-mode: slow:500\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
data = b""
while b"message_start" not in data:
    data += s.recv(65536)
s.close()
PY
    wait_for 5 sh -c "jq -e \"select(.kind == \\\"model_response\\\" and .model == \\\"gone\\\")\" \"$EVENTS\""
    ev model_response "select(.model == \"gone\")" | jq -e ".error == \"client disconnected\" and .usage.input_tokens == 1000"
    curl -sS "http://$A/_faultline/state" | jq -e ".calls_in_flight == 0"
    healthy
'

# Under ASan freed memory sits in quarantine, so RSS says nothing there: the growth bound is
# checked on plain builds only.
if grep -q __asan_init "$FAULTLINE" 2>/dev/null; then RSS_BOUND_KB=0; else RSS_BOUND_KB=8192; fi
export RSS_BOUND_KB
test_expect "a client that reads slowly gets the whole stream; the proxy holds little of it (backpressure)" '
    "$PY" - "$A" "$PROXY_PID" "$RSS_BOUND_KB" <<PY
import socket, sys, time
host, port = sys.argv[1].split(":")
pid = sys.argv[2]
def rss():
    for l in open("/proc/%s/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect((host, int(port)))
body = b"{\"model\":\"big\",\"stream\":true,\"messages\":[]}"
s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-test-mode: big:20000\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
r0 = rss(); got = 0; peak = r0
time.sleep(0.4)     # under the 700 ms client timeout: a slow reader, not a stalled one
peak = max(peak, rss())
while True:
    d = s.recv(65536)
    if not d: break
    got += len(d)
    peak = max(peak, rss())
    time.sleep(0.002)   # about 30 MB/s at most: slower than the upstream sends
print("received %d bytes; proxy RSS %d kB before, %d kB peak" % (got, r0, peak))
assert got > 20000 * 1000, got
bound = int(sys.argv[3])
assert bound == 0 or peak - r0 < bound, "proxy grew by %d kB" % (peak - r0)
PY
'

test_done
