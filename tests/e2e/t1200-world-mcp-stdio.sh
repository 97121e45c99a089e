#!/usr/bin/env bash
# faultline world, standalone: the MCP server side (initialize, tools/list with the context and
# report tools, both protocol eras, batches), the effect model as a client sees it (schema
# errors, deduplication, IDEMPOTENCY_CONFLICT, the report closing the world), the ledger written
# atomically on the report, at EOF and on SIGTERM, and bad world files refused FILE:LINE:COL.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
export PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/world"
export PAY="$EXAMPLES/worlds/payments.yaml"

test_expect "tools/list, context, schema errors, dedupe, conflict, report closes the world, ledger and events" '
    "$PY" - <<PY
import json, os
from wclient import World, text, events
w = World([os.environ["PAY"], "--ledger", "ledger.json", "--events", "ev.jsonl"])
r = w.initialize()
assert r["result"]["protocolVersion"] == "2025-06-18", r
assert r["result"]["capabilities"]["tools"] == {"listChanged": False}, r
names = [t["name"] for t in w.request("tools/list")["result"]["tools"]]
assert names == ["list_charges", "list_refunds", "create_refund", "payments_context", "payments_report"], names
ctx = w.call("payments_context", {})["result"]["structuredContent"]
assert "ch_2" in ctx["objective"], ctx
ref = [t for t in ctx["tools"] if t["name"] == "create_refund"][0]
assert ref["effect"] == {"collection": "refunds", "op": "append", "business_key": "charge_id", "dedupe_key": "idempotency_key"}, ref
assert "fault" not in json.dumps(ctx), ctx
bad = w.call("create_refund", {"charge_id": "ch_2", "amount": "1999", "idempotency_key": "k1"})
assert bad["result"]["isError"] is True and text(bad) == "INVALID_ARGUMENTS: \$.amount: expected integer, found a string", bad
ok = w.call("create_refund", {"charge_id": "ch_2", "amount": 1999, "idempotency_key": "k1"})
assert ok["result"]["isError"] is False and ok["result"]["structuredContent"] == {"status": "refunded", "effect_id": "refunds-1"}, ok
again = w.call("create_refund", {"charge_id": "ch_2", "amount": 1999, "idempotency_key": "k1"})
assert again["result"]["structuredContent"] == ok["result"]["structuredContent"], again
conflict = w.call("create_refund", {"charge_id": "ch_1", "amount": 1999, "idempotency_key": "k1"})
assert conflict["result"]["isError"] and text(conflict).startswith("IDEMPOTENCY_CONFLICT: "), conflict
unknown = w.request("tools/call", {"name": "nope", "arguments": {}})
assert unknown["error"]["code"] == -32602, unknown
lst = w.call("list_refunds", {})["result"]["structuredContent"]
assert len(lst["records"]) == 1 and lst["balance"] == 1999, lst
rep = w.call("payments_report", {"summary": "refunded ch_2 once"})
assert rep["result"]["structuredContent"]["status"] == "closed", rep
# written on the report, before the world exits
l = json.load(open("ledger.json"))
assert l["closed"] is True and l["report"] == {"summary": "refunded ch_2 once"}, l
late = w.call("create_refund", {"charge_id": "ch_1", "amount": 1, "idempotency_key": "k9"})
assert late["result"]["isError"] and text(late).startswith("WORLD_CLOSED: "), late
assert w.close() == 0, w.stderr
l = json.load(open("ledger.json"))
eff = l["effects"]
assert [(e["effect_id"], e["business_key"], e["dedupe_key"], e["deduplicated"]) for e in eff] == \
    [("refunds-1", "ch_2", "k1", False), ("refunds-1", "ch_2", "k1", True)], eff
assert [c["outcome"] for c in l["calls"]] == ["invalid_arguments", "ok", "ok", "idempotency_conflict", "no_tool", "ok", "closed"], l["calls"]
assert l["snapshot"]["balances"] == {"refunds": 1999.0}, l["snapshot"]
assert [r["charge_id"] for r in l["snapshot"]["collections"]["charges"]] == ["ch_1", "ch_2"], l["snapshot"]
ev = events("ev.jsonl")
fx = [e for e in ev if e["kind"] == "effect"]
assert [(e["effect_id"], e["deduplicated"], e["src"]) for e in fx] == [("refunds-1", False, "world"), ("refunds-1", True, "world")], fx
assert len([e for e in ev if e["kind"] == "tool_call"]) == 9, ev
PY
'

test_expect "the stateless era gets resultType complete; a batch gets a batch; bad lines get errors and the world goes on" '
    "$PY" - <<PY
import json, os
from wclient import World
w = World([os.environ["PAY"], "--max-line", "2048"])
meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
r = w.request("server/discover", meta)
assert r["result"]["resultType"] == "complete", r
r = w.request("tools/call", dict(meta, name="list_charges", arguments={}))
assert r["result"]["resultType"] == "complete", r
w.send_raw(json.dumps([{"jsonrpc": "2.0", "id": "a", "method": "ping"},
                       {"jsonrpc": "2.0", "method": "notifications/x"},
                       {"jsonrpc": "2.0", "id": "b", "method": "nope"}]) + "\n")
b = w.read()
assert [x["id"] for x in b] == ["a", "b"] and b[1]["error"]["code"] == -32601, b
w.send_raw("not json\n")
assert w.read()["error"]["code"] == -32700
w.send_raw(json.dumps({"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {"name": "create_refund", "arguments": {"x": "y" * 5000}}}) + "\n")
big = w.read()
assert big["id"] == 77 and big["error"]["code"] == -32600, big
assert w.request("ping")["result"] == {}
assert w.close() == 0
PY
'

test_expect "SIGTERM writes the ledger; EOF without a report writes it too" '
    "$PY" - <<PY
import json, os, signal, time
from wclient import World
w = World([os.environ["PAY"], "--ledger", "l1.json"])
w.call("create_refund", {"charge_id": "ch_2", "amount": 5, "idempotency_key": "a"})
w.p.send_signal(signal.SIGTERM)
assert w.p.wait(10) == 0
l = json.load(open("l1.json"))
assert len(l["effects"]) == 1 and l["closed"] is False, l
w = World([os.environ["PAY"], "--ledger", "l2.json"])
w.call("create_refund", {"charge_id": "ch_2", "amount": 5, "idempotency_key": "a"})
assert w.close() == 0
assert len(json.load(open("l2.json"))["effects"]) == 1
assert not [f for f in os.listdir(".") if f.startswith("l2.json.")], os.listdir(".")
PY
'

test_expect "bad world files: FILE:LINE:COL and exit 2; a missing file exit 1" '
    cat >w.yaml <<Y
name: pay
tools:
  - name: refund
    input_schema:
      type: object
      properties:
        id: { type: string, pattern: "(a{1,50}){1,50}" }
        n: { anyOf: [] }
Y
    rc=0; "$FAULTLINE" world w.yaml </dev/null >out 2>err || rc=$?
    test $rc = 2
    grep -F "w.yaml:7:29: error: world.tools[0].input_schema: '"'"'pattern'"'"': regular expression refused" err
    test ! -s out
    printf "name: pay\ntools: []\n" >e.yaml
    rc=0; "$FAULTLINE" world e.yaml </dev/null 2>err || rc=$?
    test $rc = 2
    grep -F "e.yaml:2:8: error:" err
    rc=0; "$FAULTLINE" world nope.yaml </dev/null 2>err || rc=$?
    test $rc = 1
'

test_done
