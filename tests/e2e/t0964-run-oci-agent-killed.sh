#!/usr/bin/env bash
# The oci variant of t0911: in a podman container the agent's first process is `faultline
# sandbox supervise` too (its status pipe passed in with --preserve-fds), so a kill -9 of the
# agent's process in the container makes the repetition an error naming signal 9, while an
# agent that exits 137 by itself completes with that exit code. Nothing is left behind.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
cd "$TMP"

test_expect "oci: the agent killed from outside: a repetition error naming signal 9" '
    command -v podman >/dev/null || { echo "podman missing: run scripts/bootstrap"; exit 1; }
    make_project p
    write_exp p/exp.yaml ocikill "echo agent-started; exec sleep 121" "true"
    commit p
    out=$TMP/out
    "$FAULTLINE" run p/exp.yaml --sandbox oci --out $out/r.json >run.out 2>run.err &
    pid=$!
    wait_for 60 grep -q agent-started $out/r/rep-000/agent.out || { cat run.err; exit 1; }
    # the agent: the container'"'"'s sleep, a process of the host seen from outside
    agent=$(pgrep -f -x "sleep 121" | head -n 1)
    test -n "$agent"
    kill -KILL $agent
    rc=0
    for i in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    wait $pid || rc=$?
    test "$rc" = 1 || { echo "rc=$rc"; tail run.err; exit 1; }
    test "$(jq -r .status $out/r/rep-000/rep.json)" = error
    jq -r .error $out/r/rep-000/rep.json | grep -q "the agent was killed by signal 9"
    test "$(jq -r .agent.signal $out/r/rep-000/rep.json)" = 9
    test "$(jq -r .verdict $out/r.json)" = aborted
    test "$(jq -r .status $out/r/rep-001/rep.json)" = skipped
    case "$(jq -r .sandbox $out/r.json)" in oci*) ;; *) jq .sandbox $out/r.json; exit 1 ;; esac
    no_leftovers p "$out/r"
    test -z "$(podman ps -a --filter name=^faultline- --format {{.Names}})"
'

test_expect "oci: an agent that exits 137 itself: its exit code, no error" '
    make_project q
    write_exp q/exp.yaml ociexit137 "echo bye; exit 137" "true"
    commit q
    rc=0; "$FAULTLINE" run q/exp.yaml --sandbox oci --out $TMP/o2/r.json >run2.out 2>run2.err || rc=$?
    test "$(jq -r .status $TMP/o2/r/rep-000/rep.json)" = complete || { tail run2.err; exit 1; }
    test "$(jq -r .agent.exit_code $TMP/o2/r/rep-000/rep.json)" = 137
    test "$(jq -r .agent.signal $TMP/o2/r/rep-000/rep.json)" = null
    grep -qx bye $TMP/o2/r/rep-000/agent.out
'
test_done
