#!/usr/bin/env bash
# faultline mcp: byte-for-byte relay of a recorded session (server-everything, recorded with
# tests/e2e/mcp/record.py), with and without a plan whose faults do not apply; stderr passes
# through; events for tool calls.
. "$(dirname "$0")/lib.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3 # not a version-manager shim: slow to start
export M PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"

"$PY" - "$M/everything-session.json" "$TMP" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
with open(sys.argv[2] + "/client.jsonl", "wb") as f:
    for e in s:
        if e["dir"] == "c2s":
            f.write(e["line"].encode() + b"\n")
with open(sys.argv[2] + "/expected.jsonl", "wb") as f:
    for e in s:
        if e["dir"] == "s2c":
            f.write(e["line"].encode() + b"\n")
PY

test_expect "the recorded session passes byte for byte, both ways" '
    timeout 30 "$FAULTLINE" mcp --name everything -- "$PY" "$M/replay_server.py" \
        "$M/everything-session.json" in.log <client.jsonl >out.jsonl
    cmp in.log client.jsonl
    cmp out.jsonl expected.jsonl
'

test_expect "the same without the shim (the replay itself is deterministic)" '
    timeout 30 "$PY" "$M/replay_server.py" "$M/everything-session.json" direct-in.log \
        <client.jsonl >direct.jsonl
    cmp direct.jsonl expected.jsonl
'

test_expect "a plan whose faults never match leaves the session byte for byte" '
    "$PY" - <<PY
import mcpclient
mcpclient.write_plan("plan.json", [
    {"kind": "tool.error", "match": {"tool": "no-such"}},
    {"kind": "inject.tool_result", "match": {"server": "other"}, "options": {"payload": "x"}},
    {"kind": "mcp.annotation_lie", "match": {"tool": "nothing"}}])
PY
    rm -f in2.log
    timeout 30 "$FAULTLINE" mcp --i-have-a-sandbox --name everything --plan plan.json \
        --events ev.jsonl -- "$PY" "$M/replay_server.py" "$M/everything-session.json" in2.log \
        <client.jsonl >out2.jsonl 2>err.txt
    cmp in2.log client.jsonl
    cmp out2.jsonl expected.jsonl
    "$PY" - <<PY
import mcpclient
ev = mcpclient.events("ev.jsonl")
kinds = [e["kind"] for e in ev]
assert kinds[0] == "plan_loaded", kinds
assert kinds.count("tool_call") == 7 and kinds.count("tool_result") == 7, kinds
assert "fault_injected" not in kinds, kinds
calls = [e for e in ev if e["kind"] == "tool_call"]
assert calls[0]["tool"] == "echo" and calls[0]["server"] == "everything", calls[0]
assert calls[0]["args"]["message"].startswith("h\u00e9llo"), calls[0]
res = [e for e in ev if e["kind"] == "tool_result"]
assert [r["ok"] for r in res] == [True] * 6 + [False], res
assert all(e["run"] == "e2e-mcp-1" and e["src"] == "mcp" for e in ev), ev
pl = ev[0]
assert pl["component"] == "mcp" and pl["faults"] == 3, pl
assert pl["canary"] == "E-FAULTLINE-00c0ffee", pl
PY
'

test_expect "stderr of the server passes through; stdout carries only protocol" '
    printf "%s\n" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}" |
        timeout 20 "$FAULTLINE" mcp --log-level info -- "$PY" "$M/fake_server.py" --stderr "hello from the server" \
        >out.txt 2>err.txt
    grep -q "hello from the server" err.txt
    test "$(cat out.txt)" = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"
'

test_expect "usage errors exit 64; a command that does not exist exits 1 with a message" '
    set +e
    "$FAULTLINE" mcp >/dev/null 2>err1.txt; r1=$?
    "$FAULTLINE" mcp --bogus -- true >/dev/null 2>err2.txt; r2=$?
    "$FAULTLINE" mcp -- /nonexistent/server </dev/null >out3.txt 2>err3.txt; r3=$?
    "$FAULTLINE" mcp --plan /nonexistent/plan.json -- true </dev/null >/dev/null 2>err4.txt; r4=$?
    set -e
    test $r1 = 64
    grep -q "no command (give it after --)" err1.txt
    test $r2 = 64
    grep -q "unknown option" err2.txt
    test $r3 = 1
    grep -q "/nonexistent/server" err3.txt
    test ! -s out3.txt
    test $r4 = 1
    grep -q "plan.json" err4.txt
'

test_done
