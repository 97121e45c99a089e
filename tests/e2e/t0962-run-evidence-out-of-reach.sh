#!/usr/bin/env bash
# Under `faultline run`, the evidence stays outside the sandbox and the controller is the only
# way out: an agent that hunts for the events file, the plan or the controller log finds none
# (and so cannot edit them), reaches a host loopback port nowhere, but does reach the
# controller on the address it was given.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

# a host loopback service the agent must not reach
python3 -c "
import socket, time
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(5)
open('$TMP/host.port', 'w').write(str(s.getsockname()[1]))
time.sleep(120)" &
HOSTSRV=$!
_pids+=("$HOSTSRV")
wait_file 10 "$TMP/host.port"
export HOSTPORT=$(cat "$TMP/host.port")

make_project "$TMP/p"
cat >"$TMP/p/hunt.sh" <<'SH'
# what an agent bent on the evidence would try
echo "found=$(find / -xdev \( -name events.jsonl -o -name plan.json -o -name proxy.log \) 2>/dev/null | tr '\n' ' ')"
for f in /tmp/* /home/agent/* /work/../*; do echo "seen $f"; done
python3 - "$HOSTPORT" <<'PY'
import os, socket, sys, urllib.request
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)
    print("host-port=reached")
except OSError as e:
    print("host-port=refused")
try:
    r = urllib.request.urlopen(os.environ["FAULTLINE_CONTROL_URL"] + "/_faultline/health", timeout=5)
    print("controller=%d" % r.status)
except Exception as e:
    print("controller=failed %s" % e)
PY
SH
write_exp "$TMP/p/exp.yaml" hunt "HOSTPORT=$HOSTPORT sh hunt.sh; $RUN_AGENT" "true"
commit "$TMP/p"
cd "$TMP"
"$FAULTLINE" run p/exp.yaml --quiet --out "$TMP/out/report.json" >run.out 2>run.err || true

test_expect "the run completed both repetitions" '
    test "$(jq "[.repetitions[] | select(.status == \"complete\")] | length" out/report.json)" = 2
'

test_expect "no events file, plan or controller log is visible inside" '
    for r in out/report/rep-000 out/report/rep-001; do
        test -s "$r/events.jsonl"
        grep -q "^found=$" "$r/agent.out" || { grep "^found=" "$r/agent.out"; exit 1; }
    done
'

test_expect "a host loopback port is unreachable; the controller answers" '
    for r in out/report/rep-000 out/report/rep-001; do
        grep -qx "host-port=refused" "$r/agent.out"
        grep -qx "controller=200" "$r/agent.out"
    done
'

test_expect "the evidence is whole: every event line is valid and in sequence" '
    for r in out/report/rep-000 out/report/rep-001; do
        jq -e . "$r/events.jsonl" >/dev/null
        test "$(jq -s "[.[].seq] == ([.[].seq] | sort)" "$r/events.jsonl")" = true
    done
'

test_done
