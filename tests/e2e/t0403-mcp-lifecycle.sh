#!/usr/bin/env bash
# faultline mcp lifecycle: the server's exit status becomes the shim's, pending requests get
# errors; client EOF -> EOF, SIGTERM, SIGKILL; signals to the shim end the server; no zombies
# and no orphaned descendants.
. "$(dirname "$0")/lib.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3 # not a version-manager shim: slow to start
export M PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"

test_expect "the server exits: pending requests get JSON-RPC errors, the shim exits with its status" '
    "$PY" - <<PY
from mcpclient import Shim, FAKE
s = Shim(["--"] + FAKE + ["--exit-after", "3"])
s.initialize()
slow = s.request("tools/call", {"name": "slow", "arguments": {"ms": 5000}})
s.request("ping")                       # the third request: the server exits after it
r = s.wait_for(slow, 10)
assert r["error"]["code"] == -32000 and "exited with status 5" in r["error"]["message"], r
assert s.wait(10) == 5
PY
'

test_expect "the server dies mid-message: the half line is dropped, the request gets an error" '
    "$PY" - <<PY
import subprocess
from mcpclient import Shim, FAKE
s = Shim(["--events", "ev.jsonl", "--"] + FAKE + ["--die-after", "2"], stderr=subprocess.PIPE)
s.initialize()
r = s.call("echo", {"message": "x"})
assert r["error"]["code"] == -32000 and "status 3" in r["error"]["message"], r
rest = s.rest()
assert rest == b"", rest
assert s.wait(10) == 3
err = s.p.stderr.read().decode()
assert "jsonrpc_partial_line" in err, err
import mcpclient
ev = mcpclient.events("ev.jsonl")
assert any(e["kind"] == "warning" and e["code"] == "jsonrpc_partial_line" for e in ev), ev
tr = [e for e in ev if e["kind"] == "tool_result"]
assert tr and tr[0]["ok"] is False, tr
PY
'

test_expect "client EOF: a server that stays gets SIGTERM, one that ignores it SIGKILL" '
    "$PY" - <<PY
import time
from mcpclient import Shim, FAKE
s = Shim(["--grace-ms", "300", "--"] + FAKE + ["--stay-after-eof"])
s.initialize()
t0 = time.time(); s.close()
assert s.wait(10) == 128 + 15
dt = time.time() - t0
assert 0.25 <= dt < 5, dt
s = Shim(["--grace-ms", "300", "--"] + FAKE + ["--stay-after-eof", "--ignore-term"])
s.initialize()
t0 = time.time(); s.close()
assert s.wait(10) == 128 + 9
dt = time.time() - t0
assert 0.55 <= dt < 5, dt
PY
'

test_expect "a server that exits on EOF ends the shim at once with status 0" '
    "$PY" - <<PY
import time
from mcpclient import Shim, FAKE
s = Shim(["--"] + FAKE)
s.initialize()
t0 = time.time(); s.close()
assert s.wait(10) == 0
assert time.time() - t0 < 1.5, time.time() - t0
PY
'

test_expect "no orphans: the server and its descendants are gone when the shim exits" '
    "$PY" - <<PY
import os, time, signal
from mcpclient import Shim, FAKE
for how in ("eof", "sigterm", "sighup"):
    if os.path.exists("gc.pid"):
        os.unlink("gc.pid")
    s = Shim(["--grace-ms", "300", "--"] + FAKE + ["--stay-after-eof", "--grandchild", "gc.pid"])
    s.initialize()
    gc = int(open("gc.pid").read())
    os.kill(gc, 0)
    if how == "eof":
        s.close(); code = s.wait(10)
    else:
        s.p.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGHUP)
        code = s.wait(10)
        assert code == 128 + (15 if how == "sigterm" else 1), (how, code)
    for _ in range(100):
        try:
            os.kill(gc, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise SystemExit("grandchild %d survived (%s)" % (gc, how))
PY
'

test_expect "the shim leaves no zombie: every child is reaped before it exits" '
    "$PY" - <<PY
import os, subprocess
from mcpclient import Shim, FAKE
s = Shim(["--"] + FAKE + ["--grandchild", "gc.pid"])
s.initialize()
pid = s.p.pid
kids = subprocess.run(["ps", "-o", "pid=,stat=", "--ppid", str(pid)], capture_output=True,
                      text=True).stdout.split("\n")
assert any(k.strip() for k in kids), kids
s.close(); s.wait(10)
PY
    # After the shim exited nothing it started is left, zombie or not.
    left=$(ps -eo pid=,stat=,args= | grep -v grep | grep -c "sleep 299.7$" || true)
    test "$left" -eq 0
'

test_done
