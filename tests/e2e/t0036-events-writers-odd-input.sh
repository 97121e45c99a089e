#!/usr/bin/env bash
# t0036-events-writers-odd-input: the writers build their events with the kinds table's
# constructors (src/events/ev.h), which abort on a field or type the table does not allow.
# Odd input must never reach that check as a wrong type: a tools/call whose arguments are an
# array or a string, whose name is a number or missing, a plan whose
# informational experiment hash is not a string. The shim keeps relaying, and every event it
# wrote is one the page documents (t0031's checker).
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"
export PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"

test_expect "odd tools/call requests: relayed, recorded within the table, no abort" '
    timeout 30 "$PY" - <<PY
import json
import mcpclient
from mcpclient import Shim, FAKE
plan = mcpclient.plan([{"kind": "tool.error", "match": {"tool": "mcp__fake__echo"},
                        "options": {"message": "no"}}])
plan["experiment"] = {"hash": 12345, "name": ["not", "a", "string"]}
json.dump(plan, open("p.json", "w"))
s = Shim(["--name", "fake", "--plan", "p.json", "--events", "ev.jsonl", "--"] + FAKE)
s.initialize()
# (the first hits the tool.error of the plan; the others go to the server as unknown tools: the
# test server itself would choke on arguments that are not an object)
odd = [{"name": "echo", "arguments": ["a", "b"]},
       {"name": "nosuch", "arguments": "text"},
       {"name": "nosuch", "arguments": None},
       {"name": "nosuch", "arguments": [1, {"x": 2}]},
       {"name": 7, "arguments": {}},
       {"arguments": {"message": "no name"}}]
for i, params in enumerate(odd):
    rid = s.request("tools/call", params, rid="odd-%d" % i)
    r = s.wait_for(rid)
    assert "result" in r or "error" in r, r
r = s.call("add", {"a": 1, "b": 2})
assert r["result"]["content"][0]["text"] == "The sum of 1 and 2 is 3.", r
s.close(); assert s.wait() == 0, "the shim did not exit cleanly"
PY
    n=$(grep -c "\"kind\":\"tool_call\"" ev.jsonl)
    test "$n" -ge 7
    # the checker of t0031 (docs/events.md tables) over what was written
    sed -n "/^cat >\"\$TMP\/check.py\" <<.PY.$/,/^PY$/p" "$FAULTLINE_ROOT/tests/e2e/t0031-events-writers-match-doc.sh" | sed "1d;\$d" >check.py
    "$PY" check.py "$FAULTLINE_ROOT/docs/events.md" ev.jsonl
    jq -se "[.[] | select(.kind == \"plan_loaded\")][0] | has(\"experiment\") | not" ev.jsonl
    jq -se "[.[] | select(.kind == \"tool_call\" and .args != null) | .args | type] | all(. == \"object\")" ev.jsonl
'

test_done
