#!/usr/bin/env bash
# faultline mcp and JSON that jansson refuses but JSON.parse (Node) accepts: a lone surrogate
# escape, a byte that is not UTF-8, 1e400, nesting 3000 deep. A real server process emits such
# replies (and gets such requests); each request gets its reply byte for byte, and a fault that
# must change such a reply answers with an error carrying the canary (issue 9: they were
# dropped and the call hung).
. "$(dirname "$0")/lib.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3 # not a version-manager shim: slow to start
export M PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp:$TMP"
export C=E-FAULTLINE-00c0ffee

# The server: answers initialize and tools/list normally; a tools/call to tool NAME answers
# with PAYLOADS[NAME] inside its result. It never parses what it gets (Python's json cannot
# take 3000 levels either): the id is found with a regex, every line is logged raw.
cat >"$TMP/oddserver.py" <<'PY'
import re, sys
PAYLOADS = {
    "surrogate": b'"cut emoji \\ud83d"',
    "rawbyte": b'"caf\xe9 \xff"',
    "bignum": b"1e400",
    "deep": b"[" * 3000 + b"]" * 3000,
}
def reply(rid, name):
    return (b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"content":[{"type":"text","text":'
            b'"ok"}],"structuredContent":{"v":' + PAYLOADS[name] + b'}}}')
if __name__ == "__main__":
    log = open("in.log", "ab")
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        log.write(line); log.flush()
        rid = re.search(rb'"id":(\d+)', line)
        if rid is None:
            continue
        rid = rid.group(1)
        if b'"initialize"' in line:
            out.write(b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"protocolVersion":'
                      b'"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"odd",'
                      b'"version":"1"}}}\n')
        elif b'"tools/call"' in line:
            name = re.search(rb'"name":"([a-z]+)', line).group(1).decode()
            if name == "echo":
                out.write(b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"content":[]}}\n')
            else:
                out.write(reply(rid, name.replace("fault", "")) + b"\n")
        out.flush()
PY

test_expect "replies with a lone surrogate, a raw 0xff, 1e400, 3000-deep nesting reach the client byte for byte" '
    rm -f ev.jsonl in.log
    "$PY" - <<PY
import sys, mcpclient
from mcpclient import Shim
from oddserver import PAYLOADS, reply
s = Shim(["--events", "ev.jsonl", "--", sys.executable, "oddserver.py"])
s.initialize()
for i, name in enumerate(PAYLOADS):
    rid = s.request("tools/call", {"name": name, "arguments": {}})
    got = s.read_line(10)
    assert got == reply(str(rid).encode(), name), (name, got[:120])
s.close(); assert s.wait() == 0
res = [e for e in mcpclient.events("ev.jsonl") if e["kind"] == "tool_result"]
assert len(res) == 4 and all(e["ok"] and e["result"]["unparsed"] for e in res), res
PY
'

test_expect "requests carrying them reach the server byte for byte and get their replies" '
    rm -f ev.jsonl in.log
    "$PY" - <<PY
import sys, json, mcpclient
from mcpclient import Shim
from oddserver import PAYLOADS
s = Shim(["--events", "ev.jsonl", "--", sys.executable, "oddserver.py"])
s.initialize()
sent = []
for name, v in PAYLOADS.items():
    rid = s.next_id; s.next_id += 1
    line = (b"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
            b"\"echo\",\"arguments\":{\"v\":" % rid) + v + b"}}}\n"
    s.send_raw(line); sent.append(line)
    r = s.wait_for(rid, 10)
    assert r["result"] == {"content": []}, r
s.close(); assert s.wait() == 0
ins = open("in.log", "rb").read()
for line in sent:
    assert line in ins, line[:80]
calls = [e for e in mcpclient.events("ev.jsonl") if e["kind"] == "tool_call"]
assert len(calls) == 4 and all(e["tool"] == "echo" and e["args"]["unparsed"] for e in calls), calls
PY
'

test_expect "a fault that must change such a reply answers with an error and the canary; the rest relay" '
    rm -f ev.jsonl in.log p.json
    "$PY" - <<PY
import sys, mcpclient
from mcpclient import Shim
from oddserver import PAYLOADS, reply
mcpclient.write_plan("p.json", [{"kind": "tool.omission", "match": {"tool": "*fault"}}])
s = Shim(["--plan", "p.json", "--events", "ev.jsonl", "--", sys.executable, "oddserver.py"],
         sandbox=True)
s.initialize()
for name in PAYLOADS:
    r = s.call(name + "fault", {}, 10)
    assert r["error"]["code"] == -32603 and "$C" in r["error"]["message"], r
    rid = s.request("tools/call", {"name": name, "arguments": {}})
    assert s.read_line(10) == reply(str(rid).encode(), name)
s.close(); assert s.wait() == 0
ev = mcpclient.events("ev.jsonl")
assert len([e for e in ev if e["kind"] == "fault_injected"]) == 4
assert len([e for e in ev if e.get("code") == "fault_unparsed"]) == 4
PY
'

test_done
