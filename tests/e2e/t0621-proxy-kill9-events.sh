#!/usr/bin/env bash
# kill -9 of a busy proxy loses no event of a response the agent received: every complete
# response a client got has its model_response line in events.jsonl, and every faulted one
# its fault_injected line (queued events are written before the server writes the
# responses they describe). Several kills at random moments under load from 16 clients.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

KILLS=${KILLS:-6}
start_upstream
write_plan "$TMP/plan.json" '[{"kind":"llm.rate_limit","safety":"fail-safe","injectors":["controller-model"],"match":{"model":"*"},"options":{},"probability":0.6}]' 1000000

cat >"$TMP/load.py" <<'PY'
import json, os, random, signal, socket, sys, time
addr, pid, events, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
host, port = addr.split(":")
NCLIENTS = 16

def client(t):
    """One process, one keep-alive connection, calls until the proxy dies; writes the model
    and status of every complete response it received to out.T."""
    got = []
    i = 0
    try:
        s = socket.create_connection((host, int(port)))
        while True:
            model = "claude-k%d-%d" % (t, i)
            i += 1
            body = ('{"model":"%s","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' % model).encode()
            s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            data = b""
            while b"\r\n\r\n" not in data:
                c = s.recv(65536)
                if not c:
                    raise OSError("closed")
                data += c
            head, rest = data.split(b"\r\n\r\n", 1)
            n = 0
            for l in head.split(b"\r\n"):
                if l.lower().startswith(b"content-length:"):
                    n = int(l.split(b":")[1])
            while len(rest) < n:
                c = s.recv(65536)
                if not c:
                    raise OSError("closed")
                rest += c
            got.append("%s %s" % (model, head.split(b" ")[1].decode()))
    except OSError:
        pass
    with open("%s.%d" % (out, t), "w") as f:
        f.write("\n".join(got) + "\n")
    os._exit(0)

kids = []
for t in range(NCLIENTS):
    p = os.fork()
    if p == 0:
        client(t)
    kids.append(p)
time.sleep(random.uniform(0.4, 1.2))
os.kill(pid, signal.SIGKILL)
deadline = time.time() + 10
for p in kids:
    while time.time() < deadline and os.waitpid(p, os.WNOHANG) == (0, 0):
        time.sleep(0.02)
got = []
for t in range(NCLIENTS):
    try:
        with open("%s.%d" % (out, t)) as f:
            got += [l.split() for l in f if l.strip()]
    except OSError:
        pass
resp, faults = set(), set()
with open(events) as f:
    for line in f:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("kind") == "model_response":
            resp.add(e.get("model"))
        elif e.get("kind") == "fault_injected":
            faults.add(e.get("target"))
lost_r = [m for m, st in got if m not in resp]
lost_f = [m for m, st in got if st == "429" and m not in faults]
print("calls received %d (faulted %d); lost model_response %d, fault_injected %d"
      % (len(got), sum(1 for m, st in got if st == "429"), len(lost_r), len(lost_f)))
PY

for k in $(seq "$KILLS"); do
    rm -f "$TMP/events.jsonl"
    start_proxy "$TMP/plan.json"
    "$PY" "$TMP/load.py" "$A" "$PROXY_PID" "$EVENTS" "$TMP/got$k" >"$TMP/kill$k.txt" 2>&1
    echo "# kill $k: $(cat "$TMP/kill$k.txt")"
    wait "$PROXY_PID" 2>/dev/null
    K=$k test_expect "kill -9 number $k: no received response lacks its events" '
        grep -q "lost model_response 0, fault_injected 0" "kill$K.txt"
        test "$(sed -n "s/^calls received \([0-9]*\).*/\1/p" "kill$K.txt")" -ge 20
    '
done

test_done
