#!/usr/bin/env bash
# The events the real writers produce (the controller's model proxy, the MCP shim) are what
# docs/events.md says, field by field: every line's kind has a section, its required fields are
# there, every documented field has the documented type. docs/events.md is generated from the
# kinds table (t0030), so this holds the table to the writers.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"
export PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp" MCPCLIENT_SANDBOX=1

# check_events FILE...: each event against the page's tables; prints the kinds seen.
cat >"$TMP/check.py" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read().split("\n")
tables, cur = {}, None
for line in page:
    m = re.match(r"^### ([a-z_]+): ", line)
    if m:
        cur = m.group(1)
    elif line == "<!-- generated: common -->":
        cur = "*common*"
    elif line.startswith("| `") and cur:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        tables.setdefault(cur, {})[cells[0].strip("`")] = (cells[1], cells[2] == "yes")
PYT = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
       "object": (dict,), "array": (list,), "null": (type(None),)}
def ok_type(v, t):
    if t == "any":
        return True
    if t.startswith("array of "):
        return isinstance(v, list) and all(ok_type(x, t[9:-1]) for x in v)
    for name in t.split(" or "):
        want = PYT[name]
        if isinstance(v, bool) and bool not in want:
            continue
        if isinstance(v, want):
            return True
    return False
bad, kinds = 0, {}
for path in sys.argv[2:]:
    for n, line in enumerate(open(path), 1):
        ev = json.loads(line)
        k = ev.get("kind")
        kinds[k] = kinds.get(k, 0) + 1
        if k not in tables:
            print(f"{path}:{n}: kind {k!r} has no section"); bad += 1; continue
        for name, (t, req) in list(tables["*common*"].items()) + list(tables[k].items()):
            v = ev.get(name)
            if v is None and "null" not in t.split(" or "):
                if req:
                    print(f"{path}:{n}: {k}: required field {name!r} missing"); bad += 1
                continue
            if name in ev and not ok_type(v, t):
                print(f"{path}:{n}: {k}: field {name!r} is {v!r}, not {t}"); bad += 1
print(" ".join(f"{k}={c}" for k, c in sorted(kinds.items())))
sys.exit(1 if bad else 0)
PY

test_expect "the page's tables parse: every kind and the common fields" '
    "$PY" - "$FAULTLINE_ROOT/docs/events.md" <<PYX
import re, sys
t = open(sys.argv[1]).read()
for k in ["plan_loaded", "model_request", "model_response", "tool_call", "tool_result",
          "fault_injected", "abort", "warning"]:
    assert re.search(r"^### %s: " % k, t, re.M), k
assert "| \`seq\` | integer | yes |" in t
PYX
'

start_upstream
write_plan "$TMP/plan.json" '[{"kind":"llm.upstream_5xx","safety":"fail-safe","injectors":["controller-model"],"match":{"model":"*-5xx"},"options":{"status":503}}]' 0.02
start_proxy "$TMP/plan.json"

test_expect "the controller's events match the page" '
    m() { curl -sS -o /dev/null "http://$A$1" -H "x-api-key: k" -H "authorization: Bearer k" -d "$2"; }
    m /v1/messages "{\"model\":\"claude-sonnet-4-5\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
    m /v1/messages "{\"model\":\"a-5xx\",\"messages\":[]}"
    m /v1/chat/completions "{\"model\":\"gpt-5.4\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"messages\":[]}"
    m /v1/messages "{\"model\":\"claude-sonnet-4-5\",\"stream\":true,\"messages\":[]}"
    m /v1/messages "{not json"
    m /v1/messages "{\"model\":\"claude-sonnet-4-5\",\"messages\":[]}"
    # the controller writes queued events when its loop idles: wait (10 s at most) for the 6th
    for i in $(seq 200); do
        if [ "$(grep -c "\"kind\":\"model_response\"" "$EVENTS")" -ge 6 ]; then break; fi
        sleep 0.05
    done
    "$PY" "$TMP/check.py" "$FAULTLINE_ROOT/docs/events.md" "$EVENTS" >kinds.txt || { cat kinds.txt; exit 1; }
    cat kinds.txt
    for k in plan_loaded model_request model_response fault_injected abort warning; do
        grep -q "\b$k=" kinds.txt || { echo "no $k event"; exit 1; }
    done
'

test_expect "the MCP shim's events match the page" '
    "$PY" - <<PYX
import mcpclient
from mcpclient import Shim, FAKE
mcpclient.write_plan("p.json", [{"kind": "tool.error", "match": {"tool": "mcp__fake__echo"},
                                 "options": {"message": "disk full"}}])
s = Shim(["--name", "fake", "--plan", "p.json", "--events", "ev.jsonl", "--"] + FAKE)
s.initialize()
s.call("echo", {"message": "hi"})
s.call("add", {"a": 1, "b": 2})
s.send_raw(b"this is not json\n")
s.close(); assert s.wait() == 0
PYX
    "$PY" "$TMP/check.py" "$FAULTLINE_ROOT/docs/events.md" ev.jsonl >kinds.txt || { cat kinds.txt; exit 1; }
    cat kinds.txt
    for k in plan_loaded tool_call tool_result fault_injected warning; do
        grep -q "\b$k=" kinds.txt || { echo "no $k event"; exit 1; }
    done
'

test_expect "the check itself catches a missing required field and a wrong type" '
    printf "%s\n" "{\"t\":1,\"seq\":0,\"run\":\"r\",\"src\":\"mcp\",\"kind\":\"tool_result\",\"tool\":\"x\",\"duration_ms\":1}" >a.jsonl
    if "$PY" "$TMP/check.py" "$FAULTLINE_ROOT/docs/events.md" a.jsonl >out.txt; then exit 1; fi
    grep -q "required field .ok. missing" out.txt
    printf "%s\n" "{\"t\":1,\"seq\":\"0\",\"run\":\"r\",\"src\":\"mcp\",\"kind\":\"warning\",\"code\":\"c\",\"message\":\"m\"}" >b.jsonl
    if "$PY" "$TMP/check.py" "$FAULTLINE_ROOT/docs/events.md" b.jsonl >out.txt; then exit 1; fi
    grep -q "field .seq. is" out.txt
'
test_done
