#!/usr/bin/env bash
# A model call whose body is larger than the upstream socket's send buffer (the proxy's
# direct write takes part, the bufferevent writes the rest), then calls that reuse that
# pooled upstream connection: both get their answers and the proxy stays up (the pooled
# connection was once dispatched without a reference held, and a direct write after the
# bufferevent's own write path had run failed with errno unset: heap-use-after-free).
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

start_upstream
write_plan "$TMP/plan.json" '[]' 100
start_proxy "$TMP/plan.json"

test_expect "a 12 MiB call then normal calls on the reused upstream connection all succeed" '
    "$PY" - "$A" <<PY
import json, socket, sys
host, port = sys.argv[1].split(":")
def call(body, keep=None):
    s = keep or socket.create_connection((host, int(port)))
    s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    data = b""
    while b"\r\n\r\n" not in data:
        c = s.recv(65536); assert c, "closed before the head"; data += c
    head, rest = data.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(rest) < n:
        c = s.recv(65536); assert c, "closed in the body"; rest += c
    status = int(head.split(b" ")[1])
    return s, status, json.loads(rest)
big = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5,
                  "messages": [{"role": "user", "content": "x" * (12 << 20)}]}).encode()
small = b"{\"model\":\"claude-sonnet-4-5\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
s, st, j = call(big)
assert st == 200, (st, j)
assert j["content"][0]["text"] == "Hello from upstream", j
for i in range(5):
    s2, st, j = call(small)
    assert st == 200, (i, st, j)
    assert j["content"][0]["text"] == "Hello from upstream", j
    s2.close()
s, st, j = call(big, s)
assert st == 200, (st, j)
s2, st, j = call(small)
assert st == 200, (st, j)
print("ok")
PY
    kill -0 "$PROXY_PID"
'

stop_proxy
test_expect "every call has its model_response with status 200" '
    test "$(ev model_response "select(.status == 200)" | wc -l)" -eq 8
'

test_expect "the proxy log has no sanitizer report" '
    if grep -q "AddressSanitizer\|runtime error" proxy.log; then cat proxy.log; exit 1; fi
'

test_done
