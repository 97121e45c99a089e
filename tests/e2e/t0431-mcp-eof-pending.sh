#!/usr/bin/env bash
# faultline mcp: the client closes its input with requests pending. What the events say the
# agent saw is what it was sent: a client that still reads gets every answer (the server's, or
# a JSON-RPC error once --eof-wait-ms has passed), one tool_result per answer with the same
# outcome; a client whose output is gone too gets nothing, and the events say
# "delivered": false.
. "$(dirname "$0")/lib.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
export M PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"

# check.py: the answers the client received against the events, one by one.
cat >"$TMP/check.py" <<'PY'
import json
import mcpclient

def check(s, ev_path, n):
    got = {}
    for line in s.lines:
        m = json.loads(line)
        if isinstance(m, dict) and "id" in m and "method" not in m and m["id"] != 0:
            got[m["id"]] = m
    ev = [e for e in mcpclient.events(ev_path) if e["kind"] == "tool_result"]
    assert len(got) == n, (len(got), n)
    assert len(ev) == n, (len(ev), n)
    for e in ev:
        m = got[int(e["id"])]
        assert "delivered" not in e, e
        if "result" in m and not m["result"].get("isError"):
            assert e["ok"] is True and e["result"] == m["result"], (e, m)
        else:
            assert e["ok"] is False, (e, m)
            if "error" in m:
                assert e["error"] == m["error"]["message"], (e, m)
    return got
PY

test_expect "50 calls then EOF, the client still reading: 50 answers, 50 matching events" '
    "$PY" - <<PY
import sys
sys.path.insert(0, ".")
from check import check
from mcpclient import Shim, FAKE
s = Shim(["--events", "ev.jsonl", "--"] + FAKE)
s.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}, rid=0)
s.recv()
s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
for i in range(1, 51):
    if i % 2:
        s.request("tools/call", {"name": "slow", "arguments": {"ms": 300}}, rid=i)
    else:
        s.request("tools/call", {"name": "echo", "arguments": {"message": str(i)}}, rid=i)
s.close()
rest = s.rest(15)
s.lines += [l for l in rest.split(b"\n") if l]
assert s.wait(10) == 0
got = check(s, "ev.jsonl", 50)
ok = sum(1 for m in got.values() if "result" in m)
assert ok == 50, ok
print("answered %d of 50, all by the server" % len(got))
PY
'

test_expect "calls the server never answers: JSON-RPC errors after --eof-wait-ms, events agree" '
    "$PY" - <<PY
import sys, time
sys.path.insert(0, ".")
from check import check
from mcpclient import Shim, FAKE
s = Shim(["--events", "ev2.jsonl", "--eof-wait-ms", "500", "--"] + FAKE)
s.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}, rid=0)
s.recv()
for i in range(1, 6):
    ms = 60000 if i <= 3 else 10
    s.request("tools/call", {"name": "slow", "arguments": {"ms": ms}}, rid=i)
t0 = time.time()
s.close()
rest = s.rest(15)
s.lines += [l for l in rest.split(b"\n") if l]
dt = time.time() - t0
assert 0.4 <= dt < 5, dt
s.wait(10)
got = check(s, "ev2.jsonl", 5)
errs = [i for i, m in got.items() if "error" in m]
assert sorted(errs) == [1, 2, 3], got
PY
'

test_expect "the client closes both ends: no answer is sent, the events say delivered false" '
    "$PY" - <<PY
import mcpclient
from mcpclient import Shim, FAKE
s = Shim(["--events", "ev3.jsonl", "--"] + FAKE)
s.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}, rid=0)
s.recv()
for i in range(1, 6):
    s.request("tools/call", {"name": "slow", "arguments": {"ms": 300}}, rid=i)
s.p.stdout.close()
s.close()
s.wait(10)
ev = [e for e in mcpclient.events("ev3.jsonl") if e["kind"] == "tool_result"]
assert len(ev) == 5, ev
assert all(e.get("delivered") is False for e in ev), ev
PY
'
test_expect "the client stops reading first: every result after that says delivered false" '
    "$PY" - <<PY
import mcpclient
from mcpclient import Shim, FAKE
s = Shim(["--events", "ev4.jsonl", "--"] + FAKE)
s.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}, rid=0)
s.recv()
s.p.stdout.close()
for i in range(1, 6):
    s.request("tools/call", {"name": "echo", "arguments": {"message": str(i)}}, rid=i)
s.close()
s.wait(10)
ev = [e for e in mcpclient.events("ev4.jsonl") if e["kind"] == "tool_result"]
assert len(ev) == 5, ev
assert all(e.get("delivered") is False for e in ev), ev
PY
'
test_done
