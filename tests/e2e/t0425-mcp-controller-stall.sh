#!/usr/bin/env bash
# faultline mcp in controller mode in front of a real controller (faultline proxy) that stops
# answering (SIGSTOP): tools/call and ping round trips stay under a second (the decision
# deadline, then the circuit breaker: later calls do not wait at all), a controller_slow
# warning says so; after SIGCONT decisions resume, and the events sent while it was stopped
# arrive (or are counted in an events_dropped warning).
. "$(dirname "$0")/lib.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
export M PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"

"$PY" - <<PY
import mcpclient
mcpclient.write_plan("$TMP/plan.json", [
    {"kind": "tool.error", "match": {"tool": "echo"}, "options": {"message": "controller says no"}}])
PY
start_bg "$FAULTLINE" proxy --plan "$TMP/plan.json" --events "$TMP/events.jsonl" \
    --ready-file "$TMP/ready" --log "$TMP/proxy.log"
CTL_PID=$LAST_PID
export CTL_PID
wait_file 10 "$TMP/ready" || { echo "FAIL - the controller did not start"; exit 1; }
export FAULTLINE_CONTROL_URL="http://$(cat "$TMP/ready")"

test_expect "a stopped controller: calls and pings stay fast, unfaulted; decisions resume" '
    "$PY" - <<PY
import os, signal, subprocess, time
from mcpclient import Shim, FAKE
pid = int(os.environ["CTL_PID"])
s = Shim(["--name", "fake", "--"] + FAKE, stderr=open("shim.err", "wb"))
stopped = False
try:
    s.initialize()
    r = s.call("echo", {"message": "before"})
    assert r["result"]["isError"], r  # the controller decides
    os.kill(pid, signal.SIGSTOP); stopped = True
    # The first call waits for the deadline at most; a ping sent behind it is not held longer.
    t0 = time.time()
    cid = s.request("tools/call", {"name": "echo", "arguments": {"message": "stopped0"}})
    pid_ping = s.request("ping", {})
    r = s.wait_for(cid, 5); t_call = time.time() - t0
    p = s.wait_for(pid_ping, 5); t_ping = time.time() - t0
    assert r["result"]["content"][0]["text"] == "Echo: stopped0", r
    assert "result" in p, p
    assert t_call < 1.0 and t_ping < 1.0, (t_call, t_ping)
    # The breaker is open: later calls do not wait for the controller at all.
    worst = 0
    for i in range(1, 6):
        t0 = time.time()
        r = s.call("echo", {"message": "stopped%d" % i}, timeout=5)
        worst = max(worst, time.time() - t0)
        assert r["result"]["content"][0]["text"] == "Echo: stopped%d" % i, r
        t0 = time.time()
        rid = s.request("ping", {})
        assert "result" in s.wait_for(rid, 5)
        worst = max(worst, time.time() - t0)
    assert worst < 0.2, worst
    print("stopped: first call %.0f ms, ping behind it %.0f ms, worst later %.0f ms"
          % (t_call * 1000, t_ping * 1000, worst * 1000))
    os.kill(pid, signal.SIGCONT); stopped = False
    # A background probe finds it answering again: decisions resume within a few seconds.
    end = time.time() + 10
    while True:
        r = s.call("echo", {"message": "after"}, timeout=5)
        if r["result"].get("isError"):
            break
        assert time.time() < end, "decisions did not resume"
        time.sleep(0.1)
    s.close(); assert s.wait() == 0
finally:
    if stopped:
        os.kill(pid, signal.SIGCONT)
PY
    cat shim.err
    "$PY" - "$TMP/events.jsonl" <<PY
import json, sys, time
end = time.time() + 5
while True:  # the controller writes what the shim posted at exit
    ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    calls = [e["args"]["message"] for e in ev if e["kind"] == "tool_call"]
    if "after" in calls or time.time() > end:
        break
    time.sleep(0.1)
slow = [e["message"] for e in ev if e["kind"] == "warning" and e.get("code") == "controller_slow"]
assert any(m.startswith("no decision from the controller within 400 ms") for m in slow), slow
assert any(m.startswith("the controller answers again") for m in slow), slow
dropped = sum(int(e["message"].split()[0]) for e in ev
              if e["kind"] == "warning" and e.get("code") == "events_dropped")
stopped = ["stopped%d" % i for i in range(6)]
missing = [m for m in stopped if m not in calls]
assert len(missing) * 2 <= dropped, (missing, dropped)  # a call and its result each
assert "before" in calls and "after" in calls, calls
print("events: %d tool_call while stopped arrived, %d events counted dropped"
      % (len(stopped) - len(missing), dropped))
PY
'

test_expect "a controller stopped before the shim starts: no hang at start, calls or exit" '
    kill -STOP $CTL_PID
    rc=0
    "$PY" - <<PY || rc=$?
import os, signal, subprocess, time
from mcpclient import Shim, FAKE
t0 = time.time()
s = Shim(["--name", "fake", "--"] + FAKE, stderr=open("shim2.err", "wb"))
s.initialize()
for i in range(3):
    t1 = time.time()
    r = s.call("echo", {"message": "late%d" % i}, timeout=5)
    assert r["result"]["content"][0]["text"] == "Echo: late%d" % i, r
    assert time.time() - t1 < 1.0, time.time() - t1
t1 = time.time()
s.close(); assert s.wait() == 0
# the exit flush has a deadline (2 s) even though the controller takes nothing
assert time.time() - t1 < 4.0, time.time() - t1
print("start to exit %.1f s, exit %.1f s" % (time.time() - t0, time.time() - t1))
PY
    kill -CONT $CTL_PID
    cat shim2.err
    test $rc = 0
    grep -q "events could not be sent to the controller before exit" shim2.err
'

test_done
