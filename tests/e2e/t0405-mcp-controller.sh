#!/usr/bin/env bash
# faultline mcp in controller mode (FAULTLINE_CONTROL_URL): decisions come from the control
# API, events go to it in batches with t and src set; an unreachable controller never blocks
# the relay and never injects. The controller here is tests/e2e/mcp/control_server.py.
. "$(dirname "$0")/lib.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3 # not a version-manager shim: slow to start
export M PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"

for mode in plain chunked close; do
    dir=$TMP/$mode
    mkdir -p "$dir"
    cat >"$dir/decisions.json" <<'EOF'
[{"tool": "echo", "kind": "tool.error", "options": {"message": "controller says no"}},
 {"tool": "add", "kind": "inject.tool_result", "options": {"payload": "PAYLOAD"}}]
EOF
    flag=""; [ "$mode" = plain ] || flag="--$mode"
    # Started here, not in a subshell, so that cleanup knows the PID.
    start_bg "$PY" "$M/control_server.py" "$dir/port" "$dir/decisions.json" "$dir/events.jsonl" $flag
    wait_file 10 "$dir/port" || { echo "FAIL - the control stand-in did not start"; exit 1; }
    export URL_$mode="http://127.0.0.1:$(cat "$dir/port")"
done

for mode in plain chunked close; do
test_expect "decisions and events go through the control API ($mode replies)" '
    dir=$TMP/'$mode'
    url=$URL_'$mode'
    FAULTLINE_CONTROL_URL=$url "$PY" - <<PY
import json, time
from mcpclient import Shim, FAKE
s = Shim(["--name", "fake", "--"] + FAKE + ["--log-in", "in.log"])
s.initialize()
r = s.call("echo", {"message": "hi"})
assert r["result"]["isError"] and r["result"]["content"][0]["text"] == "controller says no [E-FAULTLINE-5eed5eed]", r
r = s.call("add", {"a": 1, "b": 2})
assert [c["text"] for c in r["result"]["content"]] == ["The sum of 1 and 2 is 3.", "PAYLOAD"], r
r = s.call("echo", {"message": "again"})
assert r["result"]["content"][0]["text"] == "Echo: again", r
s.close(); assert s.wait() == 0
PY
    "$PY" - "$dir" <<PY
import json, sys
d = sys.argv[1]
ev = [json.loads(l) for l in open(d + "/events.jsonl")]
kinds = [e["kind"] for e in ev]
assert kinds[0] == "plan_loaded" and ev[0]["component"] == "mcp", ev[0]
assert kinds.count("tool_call") == 3 and kinds.count("tool_result") == 3, kinds
fi = [e for e in ev if e["kind"] == "fault_injected"]
assert [f["fault"] for f in fi] == ["tool.error", "inject.tool_result"], fi
assert fi[0]["canary"] == "E-FAULTLINE-5eed5eed" and fi[0]["target"] == "mcp__fake__echo", fi
assert all(e["src"] == "mcp" and isinstance(e["t"], int) for e in ev), ev
dec = [json.loads(l) for l in open(d + "/events.jsonl.decide")]
assert [x["tool"] for x in dec] == ["echo", "add", "echo"], dec
assert [x["session_call"] for x in dec] == [1, 2, 3], dec
assert dec[0] == {"component": "mcp", "tool": "echo", "server": "fake", "host": None, "model": None,
                  "args": {"message": "hi"}, "session_call": 1}, dec[0]
PY
    rm -f "$dir/events.jsonl" "$dir/events.jsonl.decide"
'
done

mkdir -p "$TMP/lose"
echo "[]" >"$TMP/lose/decisions.json"
start_bg "$PY" "$M/control_server.py" "$TMP/lose/port" "$TMP/lose/decisions.json" \
    "$TMP/lose/events.jsonl" --lose-first-events
wait_file 10 "$TMP/lose/port" || { echo "FAIL - the control stand-in did not start"; exit 1; }
test_expect "a batch the controller may have recorded is not sent twice; its loss is reported" '
    dir=$TMP/lose
    FAULTLINE_CONTROL_URL=http://127.0.0.1:$(cat "$dir/port") "$PY" - <<PY
from mcpclient import Shim, FAKE
s = Shim(["--name", "fake", "--"] + FAKE)
s.initialize()
for i in range(4):
    r = s.call("echo", {"message": "m%d" % i})
    assert r["result"]["content"][0]["text"] == "Echo: m%d" % i, r
s.close(); assert s.wait() == 0
PY
    "$PY" - "$dir" <<PY
import json, sys
d = sys.argv[1]
lost = [json.loads(l) for l in open(d + "/events.jsonl.lost")]
ev = [json.loads(l) for l in open(d + "/events.jsonl")]
assert lost, "nothing was lost: the stand-in did not cut the first batch"
key = lambda e: json.dumps(e, sort_keys=True)
assert not set(map(key, lost)) & set(map(key, ev)), "a lost event was sent again"
w = [e for e in ev if e["kind"] == "warning" and e.get("code") == "events_dropped"]
assert len(w) == 1 and w[0]["message"].startswith("%d events were dropped" % len(lost)), w
calls = [e["args"]["message"] for e in lost + ev if e["kind"] == "tool_call"]
assert sorted(calls) == ["m0", "m1", "m2", "m3"], calls
PY
'

test_expect "an unreachable controller: calls go through unfaulted, warnings, no hang" '
    port=$(free_port)
    FAULTLINE_CONTROL_URL=http://127.0.0.1:$port "$PY" - <<PY
import subprocess, time
from mcpclient import Shim, FAKE
s = Shim(["--"] + FAKE, stderr=subprocess.PIPE)
s.initialize()
t0 = time.time()
r = s.call("echo", {"message": "hi"})
assert r["result"]["content"][0]["text"] == "Echo: hi", r
assert time.time() - t0 < 3, time.time() - t0
s.close(); assert s.wait() == 0
err = s.p.stderr.read().decode()
assert "cannot connect to the controller" in err and "decide_failed" in err, err
PY
'

test_expect "a bad control URL is refused at start" '
    set +e
    FAULTLINE_CONTROL_URL=https://example.invalid "$FAULTLINE" mcp -- true </dev/null 2>err.txt; rc=$?
    set -e
    test $rc = 2
    grep -q "not an http:// URL" err.txt
    set +e
    FAULTLINE_CONTROL_URL=https://agent:hunter2pw@example.invalid "$FAULTLINE" mcp -- true </dev/null 2>err2.txt; rc=$?
    set -e
    test $rc = 2
    grep -q "https://\*\*\*@example.invalid" err2.txt
    refute grep -q hunter2pw err2.txt
'

test_done
