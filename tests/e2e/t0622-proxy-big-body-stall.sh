#!/usr/bin/env bash
# One client sending 30 MiB model calls does not stall the others: while it sends bodies the
# request scan does not accept (a number with an exponent: once a jansson parse of the whole
# body, seconds of the loop), a small-call client's p99 stays under 200 ms and its slowest
# call under 1.5 s; the big calls are forwarded unread and answered. Big and small calls go
# to two mock models (Anthropic and OpenAI paths), so only the proxy's loop is shared.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

printf 'name: b\nrules: []\nfallback: {text: "hi"}\n' >"$TMP/mock.yaml"
start_bg "$FAULTLINE" mock-model --script "$TMP/mock.yaml" --ready-file "$TMP/m1.ready" \
    --max-body 33554432 --log "$TMP/m1.log" >/dev/null
start_bg "$FAULTLINE" mock-model --script "$TMP/mock.yaml" --ready-file "$TMP/m2.ready" \
    --log "$TMP/m2.log" >/dev/null
wait_file 10 "$TMP/m1.ready" || echo "mock 1 did not start"
wait_file 10 "$TMP/m2.ready" || echo "mock 2 did not start"
write_plan "$TMP/plan.json" '[]' 1000000
rm -f "$TMP/ready"
EVENTS="$TMP/events.jsonl"
start_bg "$FAULTLINE" proxy --plan "$TMP/plan.json" --events "$EVENTS" \
    --upstream-anthropic "http://$(cat "$TMP/m1.ready")" \
    --upstream-openai "http://$(cat "$TMP/m2.ready")" --ready-file "$TMP/ready" 2>>"$TMP/proxy.log"
wait_file 10 "$TMP/ready" || cat "$TMP/proxy.log"
A=$(cat "$TMP/ready")
export A EVENTS

test_expect "small calls stay fast while 30 MiB calls go through" '
    "$PY" - "$A" <<PY
import json, socket, sys, threading, time
host, port = sys.argv[1].split(":")
def call(s, body, path):
    s.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    data = b""
    while b"\r\n\r\n" not in data:
        c = s.recv(1 << 20); assert c, "closed"; data += c
    head, rest = data.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(rest) < n:
        c = s.recv(1 << 20); assert c, "closed"; rest += c
    return int(head.split(b" ")[1])
big = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "temperature": 1e-7,
                  "messages": [{"role": "user", "content": "x" * (30 << 20)}]}).encode()
small = b"{\"model\":\"gpt-5.4\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
done = []
stop = False
def bigc():
    s = socket.create_connection((host, int(port)))
    while not stop:
        done.append(call(s, big, b"/v1/messages"))
th = threading.Thread(target=bigc, daemon=True); th.start()
s = socket.create_connection((host, int(port)))
lat = []
t0 = time.time()
while time.time() - t0 < 40 and (len(done) < 2 or time.time() - t0 < 3):
    a = time.perf_counter()
    assert call(s, small, b"/v1/chat/completions") == 200
    lat.append(time.perf_counter() - a)
stop = True
lat.sort()
p99 = lat[int(0.99 * len(lat))] * 1000
print("big calls %d %s, small calls %d: p50 %.1f ms, p99 %.1f ms, max %.1f ms"
      % (len(done), done, len(lat), lat[len(lat) // 2] * 1000, p99, lat[-1] * 1000))
assert len(done) >= 1 and all(st == 200 for st in done), done
assert p99 < 200 and lat[-1] < 1.5, "stalled"
PY
'

test_expect "the big calls are recorded as unread, with a warning" '
    jq -se "[.[] | select(.kind == \"model_request\" and .api == \"anthropic-messages\")] | length >= 1 and all(.unread == true and .model == \"\")" "$EVENTS"
    jq -se "[.[] | select(.kind == \"warning\" and .code == \"request_not_read\")] | length >= 1" "$EVENTS"
'

test_done
