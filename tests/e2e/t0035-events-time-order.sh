#!/usr/bin/env bash
# t0035-events-time-order: the events file's time order (t_us, ties by seq) is the real order of
# happenings, while its arrival order (seq) is not (issue 11; docs/events.md, "Order"). Under
# load, CHAINS clients each alternate a tool call through their own MCP shim (controller mode:
# the shim posts its events to the controller in batches, after the reply was relayed) and a
# model call through the controller, each waiting for the answer before the next: within a
# chain the real order is known. The controller writes its model_request at once, so the shim's
# tool_result of the call just before is often filed after it.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"
export PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"

start_upstream
write_plan "$TMP/plan.json" '[]' 100
start_proxy "$TMP/plan.json"

test_expect "under load, time order is the real order of each chain; arrival order is not" '
    FAULTLINE_CONTROL_URL=http://$A timeout 50 "$PY" - <<PY
import http.client, json, os, threading
from mcpclient import Shim, FAKE
CHAINS, ROUNDS = 4, 60
A = os.environ["A"]
errors = []

def chain(k):
    try:
        s = Shim(["--name", "fake", "--"] + FAKE)
        s.initialize()
        h = http.client.HTTPConnection(A, timeout=10)
        for i in range(ROUNDS):
            r = s.call("echo", {"message": "c%d-%d" % (k, i)})
            assert r["result"]["content"][0]["text"] == "Echo: c%d-%d" % (k, i), r
            body = json.dumps({"model": "mock-c%d-%d" % (k, i), "max_tokens": 5,
                               "messages": [{"role": "user", "content": "hi"}]})
            h.request("POST", "/v1/messages", body, {"content-type": "application/json",
                                                      "x-api-key": "k"})
            resp = h.getresponse()
            resp.read()
            assert resp.status == 200, resp.status
        s.close()
        assert s.wait() == 0
    except Exception as e:  # reported by the main thread
        errors.append("chain %d: %r" % (k, e))

ts = [threading.Thread(target=chain, args=(k,)) for k in range(CHAINS)]
for t in ts: t.start()
for t in ts: t.join(60)
assert not errors, errors
PY
    # the controller writes queued events when its loop idles; the shims posted theirs at exit
    for i in $(seq 200); do
        if [ "$(grep -c "\"kind\":\"model_response\"" "$EVENTS")" -ge 240 ] &&
           [ "$(grep -c "\"kind\":\"tool_result\"" "$EVENTS")" -ge 240 ]; then break; fi
        sleep 0.05
    done
    "$PY" - "$EVENTS" <<PY
import json, re, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["seq"] for e in ev] == list(range(len(ev))), "seq is the file order"
for e in ev:
    assert isinstance(e.get("t_us"), int), e
    assert e["t"] == e["t_us"] // 1000, e
# the real order of each chain: tool_call, tool_result, model_request, model_response per round
def step(e):
    if e["kind"] in ("tool_call", "tool_result"):
        m = e["args"]["message"] if e["kind"] == "tool_call" else \
            e["result"]["content"][0]["text"][len("Echo: "):]
        return m, {"tool_call": 0, "tool_result": 1}[e["kind"]]
    if e["kind"] == "model_request":
        return e["model"][len("mock-"):], 2
    return None
ids = {}
for e in ev:  # model_response carries the id of its request
    if e["kind"] == "model_request":
        ids[e["id"]] = e["model"][len("mock-"):]
def key(e):
    if e["kind"] == "model_response":
        return ids[e["id"]], 3
    return step(e)
real, timed, arrival = {}, {}, {}
for k in range(4):
    real[k] = [("c%d-%d" % (k, i), s) for i in range(60) for s in range(4)]
for order, name in ((sorted(ev, key=lambda e: (e["t_us"], e["seq"])), timed), (ev, arrival)):
    for e in order:
        if e["kind"] not in ("tool_call", "tool_result", "model_request", "model_response"):
            continue
        c, s = key(e)
        name.setdefault(int(c[1:c.index("-")]), []).append((c, s))
bad = [k for k in real if timed.get(k) != real[k]]
assert not bad, "time order is not the real order in chains %s" % bad
inverted = sum(1 for k in real for a, b in zip(arrival[k], real[k]) if a != b)
print("events:", len(ev), "steps out of place in arrival order:", inverted)
assert inverted > 0, "arrival order matched the real order everywhere: the test proves nothing"
PY
'

test_expect "the controller keeps a posted t_us, sets t from it, refuses a bad one" '
    now_us=$(( $(date +%s) * 1000000 + 123456 ))
    code=$(curl -sS -o o.json -w "%{http_code}" -X POST "http://$A/_faultline/events" \
        -d "[{\"kind\":\"warning\",\"code\":\"x\",\"message\":\"m\",\"src\":\"mcp\",\"t\":5,\"t_us\":$now_us}]")
    test "$code" = 200
    ev warning "select(.code == \"x\")" | jq -se "length == 1 and .[0].t_us == $now_us and .[0].t == ($now_us / 1000 | floor)"
    n=$(wc -l <"$EVENTS")
    future=$(( ($(date +%s) + 7200) * 1000000 ))
    for t in -1 1.5 "\"1\"" $future; do
        code=$(curl -sS -o o.json -w "%{http_code}" -X POST "http://$A/_faultline/events" \
            -d "{\"kind\":\"note\",\"t_us\":$t}")
        echo "$t -> $code $(cat o.json)"
        test "$code" = 400
        jq -e ".error.message | test(\"event 0: t_us \")" o.json
    done
    test "$(wc -l <"$EVENTS")" -eq "$n"
'

test_done
