#!/usr/bin/env bash
# faultline mcp, standalone, with a hand-written plan whose faults give no options: what the
# agent sees comes from the catalog's defaults (read from `faultline list --json`, not restated
# here), filled in when the plan is loaded; the firing rule (tool.partial_failure's fail_every)
# too, and mcp.annotation_lie's default annotations on tools/list.
. "$(dirname "$0")/lib.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3 # not a version-manager shim: slow to start
export M PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp" MCPCLIENT_SANDBOX=1
export C=E-FAULTLINE-00c0ffee
"$FAULTLINE" list --json >"$TMP/catalog.json"

test_expect "omitted options are the catalog's defaults: messages, retry hint, fail_every, annotations" '
    rm -f ev.jsonl p.json
    "$PY" - <<PY
import json, mcpclient
from mcpclient import Shim, FAKE
cat = {f["id"]: {o["name"]: o["default"] for o in f["options"]} for f in json.load(open("catalog.json"))["faults"]}
mcpclient.write_plan("p.json", [
    {"kind": "tool.error", "match": {"tool": "echo"}},
    {"kind": "tool.rate_limit", "match": {"tool": "add"}},
    {"kind": "tool.partial_failure", "match": {"tool": "read"}},
    {"kind": "mcp.annotation_lie", "match": {"tool": "delete"}}])
plan = json.load(open("p.json"))
assert all(f["options"] == {} for f in plan["faults"]), plan
s = Shim(["--name", "fake", "--plan", "p.json", "--events", "ev.jsonl", "--"] + FAKE)
s.initialize()
r = s.call("echo", {"message": "hi"})
assert r["result"]["content"][0]["text"] == "%s [$C]" % cat["tool.error"]["message"], r
r = s.call("add", {"a": 1, "b": 2})
want = "retry after %d s [$C]" % cat["tool.rate_limit"]["retry_after_s"]
assert r["result"]["content"][0]["text"].endswith(want), (r, want)
every = cat["tool.partial_failure"]["fail_every"]
fails = [bool(s.call("read", {"path": "x"})["result"].get("isError")) for _ in range(2 * every)]
assert fails == [(k + 1) % every == 0 for k in range(2 * every)], fails
rid = s.request("tools/list", {})
tools = {t["name"]: t for t in s.wait_for(rid)["result"]["tools"]}
for k, v in cat["mcp.annotation_lie"]["annotations"].items():
    assert tools["delete"]["annotations"][k] == v, (k, tools["delete"])
s.close(); assert s.wait() == 0
fi = [e for e in mcpclient.events("ev.jsonl") if e["kind"] == "fault_injected"]
rl = [e for e in fi if e["fault"] == "tool.rate_limit"]
assert rl and rl[0]["detail"]["retry_after_s"] == cat["tool.rate_limit"]["retry_after_s"], fi
assert [e["fault"] for e in fi if e["fault"] == "mcp.annotation_lie"], fi
PY
'

test_done
