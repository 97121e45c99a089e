#!/usr/bin/env bash
# kill -9 of the agent mid-run: the repetition ends with an error naming the signal (the
# sandbox's supervisor saw it: `faultline sandbox supervise`), the run still writes its report,
# nothing is left behind. An agent that exits 137 on its own is not mistaken for one killed.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
cd "$TMP"

test_expect "the agent killed from outside: a repetition error naming signal 9, a report" '
    make_project p
    write_exp p/exp.yaml agentkill "echo agent-started; exec sleep 120" "true"
    commit p
    out=$TMP/out
    "$FAULTLINE" run p/exp.yaml --out $out/r.json >run.out 2>run.err &
    pid=$!
    wait_for 30 grep -q agent-started $out/r/rep-000/agent.out || { cat run.err; exit 1; }
    # the agent: the sleep the experiment runs, a process of the host seen from outside
    agent=$(pgrep -f -x "sleep 120" | head -n 1)
    test -n "$agent"
    kill -KILL $agent
    rc=0
    for i in $(seq 400); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    wait $pid || rc=$?
    test "$rc" = 1
    test "$(jq -r .status $out/r/rep-000/rep.json)" = error
    jq -r .error $out/r/rep-000/rep.json | grep -q "the agent was killed by signal 9"
    test "$(jq -r .agent.signal $out/r/rep-000/rep.json)" = 9
    test "$(jq -r .status $out/r.json)" = error
    test "$(jq -r .verdict $out/r.json)" = aborted
    test "$(jq -r .status $out/r/rep-001/rep.json)" = skipped
    no_leftovers p "$out/r"
'

test_expect "an agent that exits 137 itself: its exit code, no error" '
    make_project q
    write_exp q/exp.yaml exit137 "echo bye; exit 137" "true"
    commit q
    rc=0; "$FAULTLINE" run q/exp.yaml --out $TMP/o2/r.json >run2.out 2>run2.err || rc=$?
    test "$(jq -r .status $TMP/o2/r/rep-000/rep.json)" = complete
    test "$(jq -r .agent.exit_code $TMP/o2/r/rep-000/rep.json)" = 137
    test "$(jq -r .agent.signal $TMP/o2/r/rep-000/rep.json)" = null
'
test_done
