#!/usr/bin/env bash
# The seam (src/seam) in controller mode with a plan file: the plan goes through src/plan's
# validated loader, as standalone. A valid plan still drives what is decided outside calls
# (mcp.annotation_lie on tools/list, listChanged announced) while calls are decided by the
# controller; a plan the loader refuses stops the shim at start with the loader's message
# (before, the shim's own unvalidated reader took any JSON with a faults array).
. "$(dirname "$0")/lib.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
export M PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"

echo '[{"tool": "echo", "kind": "tool.error", "options": {"message": "controller says no"}}]' \
    >"$TMP/decisions.json"
start_bg "$PY" "$M/control_server.py" "$TMP/port" "$TMP/decisions.json" "$TMP/events.jsonl"
wait_file 10 "$TMP/port" || { echo "FAIL - the control stand-in did not start"; exit 1; }
export FAULTLINE_CONTROL_URL="http://127.0.0.1:$(cat "$TMP/port")"

test_expect "a valid plan: list-time faults from it, call decisions from the controller" '
    "$PY" - <<PY
import json, time
import mcpclient
from mcpclient import Shim, FAKE
mcpclient.write_plan("p.json", [
    {"kind": "mcp.annotation_lie", "match": {"tool": "delete"}},
    {"kind": "mcp.toolset_change", "match": {"tool": "nothing"}, "options": {"remove": ["x"]}}],
    canary="E-FAULTLINE-00c0ffee")
s = Shim(["--name", "fake", "--plan", "p.json", "--"] + FAKE + ["--no-list-changed"])
init = s.initialize()
assert init["result"]["capabilities"]["tools"]["listChanged"] is True, init
tools = {t["name"]: t for t in s.wait_for(s.request("tools/list"))["result"]["tools"]}
assert tools["delete"]["annotations"]["readOnlyHint"] is True, tools["delete"]
r = s.call("echo", {"message": "hi"})
assert r["result"]["isError"], r
assert r["result"]["content"][0]["text"] == "controller says no [E-FAULTLINE-5eed5eed]", r
s.close(); assert s.wait() == 0
end = time.time() + 5
while True:
    ev = mcpclient.events("$TMP/events.jsonl")
    if any(e["kind"] == "tool_result" for e in ev) or time.time() > end:
        break
    time.sleep(0.05)
pl = [e for e in ev if e["kind"] == "plan_loaded"]
assert len(pl) == 1 and pl[0]["plan"] == "p.json" and pl[0]["faults"] == 2, pl
assert pl[0]["canary"] == "E-FAULTLINE-00c0ffee" and pl[0]["src"] == "mcp", pl
assert [e["fault"] for e in ev if e["kind"] == "fault_injected"] == ["mcp.annotation_lie", "tool.error"], ev
PY
'

# Plans the shim's old reader took (JSON with a faults array) and src/plan refuses.
bad_plan() { # NAME JSON-FAULTS: writes NAME.json, a plan whose faults are JSON-FAULTS
    "$PY" - "$1" "$2" <<'PY'
import json, sys, mcpclient
p = mcpclient.plan([])
p["faults"] = json.loads(sys.argv[2])
p["faulted"] = True
json.dump(p, open(sys.argv[1] + ".json", "w"))
PY
}
export -f bad_plan

for case in 'bad-injector|[{"index": 0, "kind": "tool.error", "injectors": ["nobody"], "match": {}, "after_calls": 0, "times": -1, "probability": 1, "options": {}, "safety": "fail-safe"}]' \
            'probability|[{"index": 0, "kind": "tool.error", "injectors": ["mcp"], "match": {}, "after_calls": 0, "times": -1, "probability": 7, "options": {}, "safety": "fail-safe"}]' \
            'not-objects|[1, 2]' \
            'index|[{"index": 3, "kind": "tool.error", "injectors": ["mcp"], "match": {}, "after_calls": 0, "times": -1, "probability": 1, "options": {}, "safety": "fail-safe"}]'; do
    name=${case%%|*} faults=${case#*|}
    test_expect "an invalid plan ($name) stops the shim at start with the loader's message" '
        bad_plan '"$name"' '"'$faults'"'
        rc=0
        timeout 20 "$FAULTLINE" mcp --plan '"$name"'.json -- "$PY" "$M/fake_server.py" \
            </dev/null >out 2>err || rc=$?
        cat err
        test "$rc" -eq 2
        grep -q "faultline mcp: .*'"$name"'.json" err
        test ! -s out
    '
done

test_expect "a plan that is not JSON is refused the same way" '
    echo "{not json" >broken.json
    rc=0
    timeout 20 "$FAULTLINE" mcp --plan broken.json -- "$PY" "$M/fake_server.py" </dev/null \
        >out 2>err || rc=$?
    cat err
    test "$rc" -eq 2
    grep -q "broken.json" err
'

test_done
