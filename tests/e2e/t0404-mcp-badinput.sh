#!/usr/bin/env bash
# faultline mcp and bad input: garbage both ways, lines over --max-line (request and reply),
# a partial line at EOF, multi-megabyte lines under the limit. Clear errors, the relay goes on,
# no crash, no hang.
. "$(dirname "$0")/lib.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3 # not a version-manager shim: slow to start
export M PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"

test_expect "garbage from the client reaches the server, which answers; the relay goes on" '
    "$PY" - <<PY
from mcpclient import Shim, FAKE
s = Shim(["--"] + FAKE)
s.initialize()
s.send_raw(b"this is not json\n{\"no\": \"method\"}\n[]\n\n")
r = s.recv()
assert r["error"]["code"] == -32700, r
assert s.call("echo", {"message": "still here"})["result"]["content"][0]["text"] == "Echo: still here"
s.close(); assert s.wait() == 0
PY
'

test_expect "garbage from the server never reaches the client; it is reported" '
    "$PY" - <<PY
import subprocess, json, mcpclient
from mcpclient import Shim, FAKE
s = Shim(["--events", "ev.jsonl", "--"] + FAKE + ["--garbage"], stderr=subprocess.PIPE)
s.initialize()
assert s.call("echo", {"message": "a"})["result"]["content"][0]["text"] == "Echo: a"
s.close(); s.wait()
for line in s.lines:
    json.loads(line)
err = s.p.stderr.read().decode()
assert "jsonrpc_not_json" in err and "Starting fake server" in err, err
codes = [e.get("code") for e in mcpclient.events("ev.jsonl") if e["kind"] == "warning"]
assert codes.count("jsonrpc_not_json") == 2, codes
PY
'

test_expect "a request over --max-line gets an error; one under it passes intact" '
    "$PY" - <<PY
import json
from mcpclient import Shim, FAKE
s = Shim(["--max-line", "1048576", "--"] + FAKE + ["--log-in", "in.log"])
s.initialize()
big = "y" * (2 * 1024 * 1024)
rid = s.request("tools/call", {"name": "echo", "arguments": {"message": big}})
r = s.wait_for(rid, 20)
assert r["error"]["code"] == -32600 and "line limit" in r["error"]["message"], r
ok = "z" * (900 * 1024)
r = s.call("echo", {"message": ok}, 20)
assert r["result"]["content"][0]["text"] == "Echo: " + ok
s.close(); s.wait(20)
ins = open("in.log", "rb").read()
assert b"y" * 1000 not in ins and ok.encode() in ins
PY
'

test_expect "a reply over --max-line becomes an error for its request; the next reply is fine" '
    "$PY" - <<PY
from mcpclient import Shim, FAKE
s = Shim(["--max-line", "1048576", "--"] + FAKE)
s.initialize()
r = s.call("huge", {"n": 3 * 1024 * 1024}, 20)
assert r["error"]["code"] == -32603 and "line limit" in r["error"]["message"], r
r = s.call("huge", {"n": 1000})
assert len(r["result"]["content"][0]["text"]) == 1000, r
s.close(); s.wait(20)
PY
'

test_expect "multi-megabyte lines under the default limit pass byte for byte" '
    "$PY" - <<PY
from mcpclient import Shim, FAKE
s = Shim(["--"] + FAKE)
s.initialize()
n = 8 * 1024 * 1024
r = s.call("huge", {"n": n}, 30)
assert r["result"]["content"][0]["text"] == "x" * n
s.close(); s.wait(20)
PY
'

test_expect "a partial line at EOF is dropped with a warning; complete lines before it pass" '
    printf "%s\n%s" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}" "{\"jsonrpc\":\"2.0\",\"id\":2,\"meth" |
        timeout 20 "$FAULTLINE" mcp --events ev2.jsonl -- "$PY" "$M/fake_server.py" --log-in in2.log \
        >out.txt 2>err.txt
    test "$(cat out.txt)" = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"
    grep -q "jsonrpc_partial_line" err.txt
    grep -q "\"code\":\"jsonrpc_partial_line\"" ev2.jsonl
    test "$(wc -l <in2.log)" = 1
'

test_expect "the client vanishing (stdout closed) does not hang the shim" '
    "$PY" - <<PY
from mcpclient import Shim, FAKE
s = Shim(["--grace-ms", "300", "--"] + FAKE + ["--stay-after-eof"])
s.initialize()
s.p.stdout.close()
s.request("tools/call", {"name": "huge", "arguments": {"n": 1000000}})
s.close()
code = s.wait(10)
assert code in (143, 0), code
PY
'

test_expect "a credential inside a bad line is redacted in the log and the events" '
    printf "%s\n" "debug token sk-ant-abcdefghijklmnopqrstuvwxyz0123 here" |
        timeout 20 "$FAULTLINE" mcp --events ev3.jsonl -- cat >out3.txt 2>err3.txt
    grep -q "jsonrpc_not_json" err3.txt
    refute grep -q "abcdefghijklmnop" err3.txt ev3.jsonl
    grep -q "REDACTED" err3.txt
    grep -q "REDACTED" ev3.jsonl
'

test_done
