#!/usr/bin/env bash
# The safety rule for the MCP shim (docs/mcp-shim.md): standalone, mutating faults apply only
# with --i-have-a-sandbox (FAULTLINE_SANDBOX grants nothing); under a controller, the
# controller decides: one that knows no sandbox refuses the mutating decisions it is asked
# for, and the shim refuses the mutating faults it decides itself (tool-list faults).
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"
export PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"

cat >"$TMP/faults.py" <<'PY'
import mcpclient
FAULTS = [
    {"kind": "inject.tool_result", "match": {"tool": "echo"}, "options": {"payload": "PAYLOAD"}},
    {"kind": "tool.stale_data", "match": {"tool": "add"}, "after_calls": 1},
    {"kind": "mcp.annotation_lie", "match": {"tool": "delete"}},
    {"kind": "tool.error", "match": {"tool": "read"}}]
mcpclient.write_plan("p.json", FAULTS)

def session(args, env=None, sandbox=None):
    """Runs the calls; returns what the client saw."""
    from mcpclient import Shim, FAKE
    s = Shim(args + ["--"] + FAKE, env=env, sandbox=sandbox)
    s.initialize()
    tools = {t["name"]: t for t in s.wait_for(s.request("tools/list"))["result"]["tools"]}
    echo = [c["text"] for c in s.call("echo", {"message": "hi"})["result"]["content"]]
    s.call("add", {"a": 1, "b": 1})
    add2 = s.call("add", {"a": 2, "b": 2})["result"]["content"][0]["text"]
    read = s.call("read", {"path": "/a"})["result"].get("isError")
    s.close(); s.wait()
    return {"lie": tools["delete"].get("annotations", {}).get("readOnlyHint") is True,
            "echo": echo, "add2": add2, "read_error": read}
PY
cp "$TMP/faults.py" "$TMP/safety.py"
(cd "$TMP" && "$PY" faults.py) || echo "cannot write the plan"
cp "$TMP/p.json" "$TMP/plan.json"

test_expect "standalone without --i-have-a-sandbox (FAULTLINE_SANDBOX set or not): mutating faults refused, fail-safe applied" '
    for env in "{}" "{\"FAULTLINE_SANDBOX\": \"1\"}"; do
        rm -f ev.jsonl
        "$PY" - "$env" <<PY
import json, sys, mcpclient
sys.path.insert(0, ".")
from safety import session
seen = session(["--plan", "p.json", "--events", "ev.jsonl"], env=json.loads(sys.argv[1]), sandbox=False)
assert seen == {"lie": False, "echo": ["Echo: hi"], "add2": "The sum of 2 and 2 is 4.", "read_error": True}, seen
ev = mcpclient.events("ev.jsonl")
assert [e["fault"] for e in ev if e["kind"] == "fault_injected"] == ["tool.error"], ev
refused = [e["message"] for e in ev if e["kind"] == "warning" and e["code"] == "fault_refused"]
assert len(refused) == 3 and all("--i-have-a-sandbox" in m for m in refused), refused
PY
    done
'

test_expect "standalone with --i-have-a-sandbox: every fault applies" '
    rm -f ev.jsonl
    "$PY" - <<PY
import sys, mcpclient
sys.path.insert(0, ".")
from safety import session
seen = session(["--plan", "p.json", "--events", "ev.jsonl"], sandbox=True)
assert seen == {"lie": True, "echo": ["Echo: hi", "PAYLOAD"], "add2": "The sum of 1 and 1 is 2.", "read_error": True}, seen
ev = mcpclient.events("ev.jsonl")
assert not [e for e in ev if e["kind"] == "warning" and e["code"] == "fault_refused"], ev
PY
'

# the same plan, as the controller holds it
start_upstream
start_proxy "$TMP/plan.json"
HAND=$A HAND_EV=$EVENTS
export HAND HAND_EV
EVENTS=$TMP/flag.jsonl
rm -f "$TMP/ready"
start_bg "$FAULTLINE" proxy --plan "$TMP/plan.json" --events "$EVENTS" --upstream-anthropic "$UP" \
    --ready-file "$TMP/ready" --i-have-a-sandbox 2>>"$TMP/proxy.log"
wait_file 10 "$TMP/ready" || echo "the controller with the flag did not start"
FLAG=$(cat "$TMP/ready") FLAG_EV=$EVENTS
export FLAG FLAG_EV

test_expect "under a controller that knows no sandbox: mutating faults refused (--i-have-a-sandbox on the shim changes nothing)" '
    FAULTLINE_CONTROL_URL=http://$HAND "$PY" - <<PY
import sys
sys.path.insert(0, ".")
from safety import session
seen = session(["--name", "fake", "--plan", "plan.json"], sandbox=True)
assert seen == {"lie": False, "echo": ["Echo: hi"], "add2": "The sum of 2 and 2 is 4.", "read_error": True}, seen
PY
    for i in $(seq 50); do jq -se "[.[] | select(.code == \"fault_refused\")] | length >= 3" "$HAND_EV" >/dev/null && break; sleep 0.1; done
    jq -c "select(.kind == \"warning\" or .kind == \"fault_injected\")" "$HAND_EV"
    jq -se "[.[] | select(.code == \"fault_refused\" and .src == \"controller\") | .fault] == [\"inject.tool_result\", \"tool.stale_data\"]" "$HAND_EV"
    jq -se "[.[] | select(.code == \"fault_refused\" and .src == \"mcp\")] | length == 1" "$HAND_EV"
    jq -se "[.[] | select(.kind == \"fault_injected\") | .fault] == [\"tool.error\"]" "$HAND_EV"
'

test_expect "under a controller started with --i-have-a-sandbox: every fault applies" '
    FAULTLINE_CONTROL_URL=http://$FLAG "$PY" - <<PY
import sys
sys.path.insert(0, ".")
from safety import session
seen = session(["--name", "fake", "--plan", "plan.json"], sandbox=False)
assert seen == {"lie": True, "echo": ["Echo: hi", "PAYLOAD"], "add2": "The sum of 1 and 1 is 2.", "read_error": True}, seen
PY
    for i in $(seq 50); do jq -se "[.[] | select(.kind == \"fault_injected\")] | length >= 4" "$FLAG_EV" >/dev/null && break; sleep 0.1; done
    jq -se "[.[] | select(.code == \"fault_refused\")] | length == 0" "$FLAG_EV"
    jq -se "[.[] | select(.kind == \"fault_injected\") | .fault] | sort == [\"inject.tool_result\", \"mcp.annotation_lie\", \"tool.error\", \"tool.stale_data\"]" "$FLAG_EV"
'

# a controller whose health answer did not carry its word on mutating faults: its decisions do
M="$FAULTLINE_ROOT/tests/e2e/mcp"
mkdir -p "$TMP/silent"
echo '[{"tool": "echo", "kind": "inject.tool_result", "options": {"payload": "PAYLOAD"}}]' \
    >"$TMP/silent/decisions.json"
start_bg "$PY" "$M/control_server.py" "$TMP/silent/port" "$TMP/silent/decisions.json" \
    "$TMP/silent/events.jsonl" --health-silent
wait_file 10 "$TMP/silent/port" || echo "the control stand-in did not start"
SILENT="http://127.0.0.1:$(cat "$TMP/silent/port")"
export SILENT

test_expect "under a controller: its word in each decision counts, not only its health answer" '
    FAULTLINE_CONTROL_URL=$SILENT "$PY" - <<PY
import mcpclient
from mcpclient import Shim, FAKE
s = Shim(["--name", "fake", "--"] + FAKE, sandbox=False)
s.initialize()
r = s.call("echo", {"message": "hi"})
assert [c["text"] for c in r["result"]["content"]] == ["Echo: hi", "PAYLOAD"], r
s.close(); s.wait()
ev = mcpclient.events("silent/events.jsonl")
assert not [e for e in ev if e.get("code") == "fault_refused"], ev
PY
'

test_done
