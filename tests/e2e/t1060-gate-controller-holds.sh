#!/usr/bin/env bash
# POST /_faultline/gate through a real controller (docs/control-api.md): permission.deny_or_delay
# holds kept across separate requests (seed 000's "How a permission delay works"), tool.error on
# built-in tools, the policy's block from a hook gate's "decided" and from the controller's own
# policy, the events it writes, the exhaustive effect x fault x mode check that a fault never
# turns a block, a hold or a redaction into an allow, and malformed bodies.
. "$(dirname "$0")/lib.sh"
PY=$(python3 -c 'import sys; print(sys.executable)')
export PY

# start_ctl NAME FAULTS_JSON [ARGS...]: a controller in $TMP/NAME; exports NAME's address as
# A_NAME and its events file as $TMP/NAME/events.jsonl.
start_ctl() {
    local name=$1 faults=$2; shift 2
    mkdir -p "$TMP/$name"
    printf '{"version":1,"run":"t-run","canary":"E-FAULTLINE-0123abcd","faults":%s}\n' "$faults" \
        >"$TMP/$name/plan.json"
    start_bg "$FAULTLINE" proxy --plan "$TMP/$name/plan.json" --events "$TMP/$name/events.jsonl" \
        --ready-file "$TMP/$name/ready" --log-level info "$@" 2>>"$TMP/$name/proxy.log"
    wait_file 10 "$TMP/$name/ready" || { echo "controller $name did not start"; cat "$TMP/$name/proxy.log"; exit 1; }
    export "A_$name=$(cat "$TMP/$name/ready")"
}

start_ctl holds '[
 {"kind":"permission.deny_or_delay","safety":"fail-safe","injectors":["gate"],"match":{"tool":"Bash"},
  "times":1,"options":{"mode":"delay","delay_s":2}},
 {"kind":"permission.deny_or_delay","safety":"fail-safe","injectors":["gate"],"match":{"tool":"Edit"},
  "options":{"mode":"hold_then_deny","delay_s":0}},
 {"kind":"tool.error","safety":"fail-safe","injectors":["gate","mcp"],"match":{"tool":"Write"},
  "options":{"message":"disk quota exceeded"}},
 {"kind":"permission.deny_or_delay","safety":"fail-safe","injectors":["gate"],"match":{"tool":"Read"},
  "options":{"mode":"deny"}}]'
cat >"$TMP/project.yaml" <<'Y'
rules:
  - {id: no-etc, tool: Write, paths: ['/etc/*'], effect: block, reason: "not under /etc"}
  - {id: hold-publish, command: npm publish, effect: hold}
  - {id: watch-make, command: make, effect: block, mode: monitor}
Y
cat >"$TMP/user.yaml" <<'Y'
rules:
  - {id: user-no-curl, command: {program: curl}, effect: block}
Y
start_ctl plain '[]' --policy "$TMP/absent.yaml"
start_ctl pol '[{"kind":"tool.error","safety":"fail-safe","injectors":["gate"],"match":{"tool":"Bash"}}]' \
    --policy "$TMP/project.yaml" --policy "$TMP/user.yaml"
start_ctl exh '[]'

cat >"$TMP/gate.py" <<'PY'
import json, sys, urllib.request, urllib.error
def gate(addr, body, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request("http://%s/_faultline/gate" % addr, data=data,
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")
def call(addr, tool, inp, harness="sdk", decided=None):
    b = {"harness": harness, "tool": tool, "input": inp, "mcp_server": None}
    if decided is not None:
        b["decided"] = decided
    st, r = gate(addr, b)
    assert st == 200, (st, r)
    return r
def events(path):
    return [json.loads(l) for l in open(path)]
PY
export PYTHONPATH=$TMP

test_expect "a delay hold: the identical retry is held until delay_s, a different call is neither retry nor release, then it is let through" '
    "$PY" - <<PY
import time
from gate import call
A = "$A_holds"
t0 = time.monotonic()
r = call(A, "Bash", {"command": "make deploy"})
assert r["decision"] == "held" and r["code"] == "HELD", r
assert r["reason"].startswith("[faultline] HELD:") and "E-FAULTLINE-0123abcd" in r["reason"], r
assert r["fault"] == {"id": "permission.deny_or_delay", "canary": "E-FAULTLINE-0123abcd"}, r
r = call(A, "Bash", {"command": "make deploy"}, harness="claude-code")
assert r["decision"] == "held" and "E-FAULTLINE-0123abcd" in r["reason"], r
r = call(A, "Bash", {"command": "make test"})
assert r["decision"] == "allow" and r["code"] is None and r["fault"] is None, r
while time.monotonic() - t0 < 2.05:
    time.sleep(0.05)
r = call(A, "Bash", {"command": "make deploy"})
assert r["decision"] == "allow" and r["fault"] is None, r
r = call(A, "Bash", {"command": "make deploy"})
assert r["decision"] == "allow", r
PY
'

test_expect "hold_then_deny with delay_s 0: held once, the immediate retry is denied with the canary, then the hold is over" '
    "$PY" - <<PY
from gate import call
A = "$A_holds"
inp = {"file_path": "/work/a.c", "old_string": "x", "new_string": "y"}
r = call(A, "Edit", inp, harness="codex")
assert r["decision"] == "held" and r["code"] == "HELD", r
r = call(A, "Edit", dict(reversed(list(inp.items()))), harness="codex")
assert r["decision"] == "deny" and r["code"] == "CHAOS_FAULT" and "E-FAULTLINE-0123abcd" in r["reason"], r
r = call(A, "Edit", inp)
assert r["decision"] == "held", r
PY
'

test_expect "tool.error and permission deny on built-in tools refuse with the message and the canary; MCP tools are the shim s" '
    "$PY" - <<PY
from gate import call, gate
A = "$A_holds"
r = call(A, "Write", {"file_path": "/work/x", "content": "x"})
assert r["decision"] == "deny" and r["code"] == "CHAOS_FAULT", r
assert "disk quota exceeded" in r["reason"] and "E-FAULTLINE-0123abcd" in r["reason"], r
assert r["fault"]["id"] == "tool.error", r
r = call(A, "Read", {"file_path": "/work/x"})
assert r["decision"] == "deny" and r["code"] == "CHAOS_FAULT" and "E-FAULTLINE-0123abcd" in r["reason"], r
st, r = gate(A, {"harness": "claude-code", "tool": "mcp__fs__write", "input": {}})
assert st == 200 and r["decision"] == "allow", r
PY
'

test_expect "a block from the hook gate is answered without asking the plan" '
    "$PY" - <<PY
import json, urllib.request
from gate import call
A = "$A_holds"
r = call(A, "Write", {"file_path": "/etc/passwd"}, harness="cursor",
         decided={"effect": "block", "mode": "enforce", "tier": "rule", "rule": "no-etc", "reason": "not under /etc"})
assert r["decision"] == "deny" and r["code"] == "POLICY_BLOCK" and r["fault"] is None, r
assert r["rule"] == "no-etc" and r["tier"] == "rule" and r["reason"].startswith("[faultline]"), r
r = call(A, "Write", {"file_path": "/work/y"}, harness="claude-code",
         decided={"effect": "block", "mode": "enforce", "tier": "destructive", "rule": None, "reason": "destructive"})
assert r["decision"] == "deny" and r["code"] == "POLICY_BLOCK" and r["tier"] == "destructive", r
st = json.load(urllib.request.urlopen("http://%s/_faultline/state" % A, timeout=10))
c = st["counters"]
assert c[2]["matched"] == 1 and c[2]["injected"] == 1, c
PY
'

test_expect "the controller writes one gate_decision per call and one fault_injected per hold, however often retried" '
    "$PY" - <<PY
from gate import events
ev = events("$TMP/holds/events.jsonl")
gd = [e for e in ev if e["kind"] == "gate_decision"]
fi = [e for e in ev if e["kind"] == "fault_injected"]
assert len(gd) == 13, [ (e["tool"], e["decision"]) for e in gd]
assert all(e["src"] == "controller" for e in gd), gd
assert [e["harness"] for e in gd[:2]] == ["sdk", "claude-code"], gd
assert [e["fault"] for e in fi] == ["permission.deny_or_delay"] * 3 + ["tool.error", "permission.deny_or_delay"], fi
assert all(e["component"] == "gate" and e["canary"] == "E-FAULTLINE-0123abcd" for e in fi), fi
assert [e["target"] for e in fi] == ["Bash", "Edit", "Edit", "Write", "Read"], fi
held = [e for e in gd if e["decision"] == "held"]
assert all(e["faulted"] for e in held), held
blk = [e for e in gd if e.get("rule") == "no-etc"][0]
assert blk["decision"] == "deny" and blk["mode"] == "enforce" and blk["faulted"] is False, blk
d = [e for e in gd if e["tier"] == "destructive"]
assert len(d) == 1 and d[0]["decision"] == "deny", d
# the input is not written, its digest is: the same for the same call in any key order
import hashlib, json as J
edits = [e for e in gd if e["tool"] == "Edit"]
want = hashlib.sha256(J.dumps({"file_path": "/work/a.c", "old_string": "x", "new_string": "y"},
                      sort_keys=True, separators=(",", ":")).encode()).hexdigest()
assert [e["input_digest"] for e in edits] == [want] * 3, edits
assert all("input" not in e and "command" not in e for e in gd), gd
assert [e.get("fault") for e in held][:2] == ["permission.deny_or_delay"] * 2, held
pl = [e["component"] for e in ev if e["kind"] == "plan_loaded"]
assert pl == ["controller-model", "gate"], pl
PY
'

test_expect "a controller with --policy is the run s gate (plan_loaded gate); one without policy or gate faults is not" '
    jq -se "[.[] | select(.kind == \"plan_loaded\") | .component] == [\"controller-model\", \"gate\"]" "$TMP/plain/events.jsonl"
    jq -se "[.[] | select(.kind == \"plan_loaded\") | .component] == [\"controller-model\"]" "$TMP/exh/events.jsonl"
'

test_expect "exhaustive: every rule effect x every fault x every mode through the controller: a fault never turns a block, a hold or a redaction into an allow" '
    "$PY" - <<PY
import json, os, subprocess, time
from gate import call
faults = [
  {"kind": "tool.error"},
  {"kind": "permission.deny_or_delay", "options": {"mode": "deny"}},
  {"kind": "permission.deny_or_delay", "options": {"mode": "delay", "delay_s": 0}},
  {"kind": "permission.deny_or_delay", "options": {"mode": "hold_then_deny", "delay_s": 0}},
]
plan = {"version": 1, "run": "t-run", "canary": "E-FAULTLINE-0123abcd", "faults": []}
# one fault per tool name, so one controller covers all of them
tools = ["T%d" % i for i in range(len(faults))] + ["Tnone"]
for i, f in enumerate(faults):
    f = dict(f, safety="fail-safe", injectors=["gate"], match={"tool": tools[i]})
    plan["faults"].append(f)
d = "$TMP/exh2"; os.makedirs(d, exist_ok=True)
json.dump(plan, open(d + "/plan.json", "w"))
p = subprocess.Popen(["$FAULTLINE", "proxy", "--plan", d + "/plan.json", "--events", d + "/events.jsonl",
                      "--ready-file", d + "/ready"], stderr=open(d + "/log", "w"))
try:
    end = time.time() + 10
    while not (os.path.exists(d + "/ready") and os.path.getsize(d + "/ready")):
        assert time.time() < end, "controller did not start"
        time.sleep(0.05)
    A = open(d + "/ready").read().strip()
    n = 0
    for eff in ["allow", "block", "hold", "redact"]:
        for mode in ["enforce", "monitor"]:
            for tier in ["default", "rule", "destructive"]:
                for t in tools:
                    dec = {"effect": eff, "mode": mode, "tier": tier,
                           "rule": None if tier == "default" else "r", "reason": "because"}
                    for attempt in range(3):  # the call and two identical retries
                        r = call(A, t, {"command": "x %s %s %s" % (eff, mode, tier)}, harness="claude-code", decided=dec)
                        n += 1
                        if eff == "block":
                            assert r["decision"] == "deny" and r["code"] == "POLICY_BLOCK" and r["fault"] is None, (eff, t, r)
                        elif eff == "hold":
                            assert r["decision"] == "held" and r["code"] == "HELD" and r["fault"] is None, (eff, t, r)
                        elif eff == "redact" and r["decision"] == "allow":
                            assert "input" in r, (eff, t, r)
                        if r["decision"] != "allow":
                            assert r["code"] in ("POLICY_BLOCK", "HELD", "CHAOS_FAULT"), r
    assert n == 4 * 2 * 3 * len(tools) * 3, n
    st = json.load(__import__("urllib.request").request.urlopen("http://%s/_faultline/state" % A, timeout=10))
    # block and hold never asked the plan: only allow and redact calls were matched
    # (2 effects x 2 modes x 3 tiers x 3 attempts = 36 of them per tool; fewer when a retry
    # was answered from the hold table)
    for c in st["counters"]:
        assert 0 < c["matched"] <= 36, c
finally:
    p.terminate(); p.wait(timeout=10)
ev = [json.loads(l) for l in open(d + "/events.jsonl")]
gd = [e for e in ev if e["kind"] == "gate_decision"]
assert len(gd) == n, (len(gd), n)
# no gate_decision allows a call the policy blocked or held
assert not [e for e in gd if e["decision"] == "allow" and e.get("reason", "").startswith("[faultline] BLOCKED")], gd
PY
'

test_expect "without decided the controller runs its policy files (project first, then the user's, then the default), faults only on what they allow" '
    "$PY" - <<PY
from gate import call
A = "$A_pol"
r = call(A, "Write", {"file_path": "/etc/passwd", "content": "x"})
assert r["decision"] == "deny" and r["code"] == "POLICY_BLOCK" and r["rule"] == "no-etc", r
r = call(A, "Bash", {"command": "npm publish"})
assert r["decision"] == "held" and r["code"] == "HELD" and r["rule"] == "hold-publish" and r["fault"] is None, r
r = call(A, "Bash", {"command": "curl -s https://example.com"})
assert r["decision"] == "deny" and r["code"] == "POLICY_BLOCK" and r["rule"] == "user-no-curl", r
r = call(A, "Bash", {"command": "rm -rf /"})
assert r["decision"] == "deny" and r["code"] == "POLICY_BLOCK" and r["tier"] == "destructive" and r["fault"] is None, r
assert "rm-recursive-root" in r["reason"], r
r = call(A, "Bash", {"command": "make test"})  # a monitor rule decides nothing: the fault fires
assert r["decision"] == "deny" and r["code"] == "CHAOS_FAULT" and r["fault"]["id"] == "tool.error", r
PY
    jq -se "[.[] | select(.kind == \"gate_decision\")] | map([.decision, .tier, .rule, (.mode // null), .faulted]) == [[\"deny\",\"rule\",\"no-etc\",\"enforce\",false],[\"held\",\"rule\",\"hold-publish\",\"enforce\",false],[\"deny\",\"rule\",\"user-no-curl\",\"enforce\",false],[\"deny\",\"destructive\",null,null,false],[\"deny\",\"default\",\"watch-make\",\"monitor\",true]]" "$TMP/pol/events.jsonl"
'

test_expect "a bad policy file stops the controller at start-up with FILE:LINE:COL" '
    printf "{\"version\":1,\"run\":\"r\",\"canary\":\"E-FAULTLINE-0123abcd\",\"faults\":[]}\n" >p.json
    printf "rules:\n  - {id: a, effect: maybe}\n" >bad.yaml
    rc=0; timeout 10 "$FAULTLINE" proxy --plan p.json --events e.jsonl --policy bad.yaml --ready-file r 2>err.txt || rc=$?
    cat err.txt
    test "$rc" -ne 0
    test ! -s r
    grep -q "bad.yaml:2:" err.txt
'

test_expect "malformed bodies get 400 (413 over 1 MiB) and the controller keeps serving" '
    "$PY" - <<PY
from gate import gate, call
A = "$A_plain"
for raw in [b"not json", b"[1]", b"{}",
            b"{\"harness\":\"vim\",\"tool\":\"Bash\"}",
            b"{\"harness\":\"sdk\",\"tool\":\"\"}",
            b"{\"harness\":\"sdk\",\"tool\":7}",
            b"{\"harness\":\"sdk\",\"tool\":\"Bash\",\"input\":[1]}",
            b"{\"harness\":\"sdk\",\"tool\":\"Bash\",\"decided\":{\"effect\":\"maybe\"}}",
            b"{\"harness\":\"sdk\",\"tool\":\"Bash\",\"decided\":\"allow\"}",
            b"{\"harness\":\"sdk\",\"tool\":\"Bash\",\"decided\":{\"effect\":\"allow\",\"mode\":\"loud\"}}",
            b"{\"harness\":\"sdk\",\"tool\":\"" + b"x" * 2000 + b"\"}"]:
    st, r = gate(A, None, raw=raw)
    assert st == 400 and r["error"]["message"], (raw[:60], st, r)
st, r = gate(A, None, raw=b"{\"harness\":\"sdk\",\"tool\":\"Bash\",\"input\":{\"a\":\"" + b"x" * (1 << 20) + b"\"}}")
assert st == 413, st
r = call(A, "Bash", {"command": "ls"})
assert r["decision"] == "allow" and r["tier"] == "default", r
PY
'

test_done
