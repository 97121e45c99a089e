#!/usr/bin/env bash
# faultline mcp --events: the events are written off the relaying loop (the seam's writer
# thread), so a slow events file never holds a call up. The events file here is a FIFO that
# nobody reads while 40 calls with an 8000-byte message go through (80 events, far more than the
# pipe holds): every call is answered at once; once the FIFO is drained, every event is there,
# in order, and the shim exits 0.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
export PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"

test_expect "a FIFO nobody reads as the events file: 40 calls of 8 KB answered, then all 82 events" '
    mkfifo ev.fifo &&
    "$PY" - <<PY
import os, threading, time, json
from mcpclient import Shim, FAKE, write_plan
write_plan("p.json", [{"kind": "tool.error", "match": {"tool": "never"}}])
# the reading end, opened without blocking and not read until the calls are done
rd = os.open("ev.fifo", os.O_RDONLY | os.O_NONBLOCK)
s = Shim(["--plan", "p.json", "--events", "ev.fifo", "--"] + FAKE)
s.initialize()
msg = "x" * 8000
t0 = time.time()
for i in range(40):
    r = s.call("echo", {"message": msg}, timeout=10)
    assert r["result"]["content"][0]["text"] == "Echo: " + msg, str(r)[:200]
took = time.time() - t0
assert took < 10, took
# only now is the FIFO read: the events written while the calls went through
got = b""
def drain():
    global got
    os.set_blocking(rd, True)
    while True:
        b = os.read(rd, 1 << 16)
        if not b:
            break
        got += b
t = threading.Thread(target=drain)
t.start()
s.close()
assert s.wait(20) == 0
t.join(20)
assert not t.is_alive()
ev = [json.loads(l) for l in got.split(b"\n") if l]
kinds = [e["kind"] for e in ev]
assert kinds.count("tool_call") == 40 and kinds.count("tool_result") == 40, kinds
assert kinds[0] == "plan_loaded" and kinds[-1] == "component_end", kinds
seqs = [e["seq"] for e in ev]
assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
res = [e for e in ev if e["kind"] == "tool_result"]
assert all(e["result"]["content"][0]["text"] == "Echo: " + msg for e in res)
print("ok", len(ev), "events, calls took %.2fs" % took)
PY
'

test_done
