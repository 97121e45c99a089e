#!/usr/bin/env bash
# kill -9 of the controller mid-run: the repetition ends with an error naming it, the sandbox
# is stopped, the run still writes its report (verdict aborted: a runner error), and nothing
# is left behind.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

make_project "$TMP/p"
write_exp "$TMP/p/exp.yaml" ctlkill "echo agent-started; sleep 120" "true"
commit "$TMP/p"
cd "$TMP"

test_expect "the controller killed: a repetition error, a report, no leftovers" '
    out=$TMP/out
    "$FAULTLINE" run p/exp.yaml --out $out/r.json >run.out 2>run.err &
    pid=$!
    wait_for 30 grep -q agent-started $out/r/rep-000/agent.out || { cat run.err; exit 1; }
    # the controller is the runner child serving this repetition plan
    ctl=$(pgrep -P $pid -f -- "proxy --plan $out/r/rep-000/plan.json")
    test -n "$ctl"
    kill -KILL $ctl
    rc=0
    for i in $(seq 400); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    wait $pid || rc=$?
    test "$rc" = 1
    test "$(jq -r .status $out/r/rep-000/rep.json)" = error
    jq -r .error $out/r/rep-000/rep.json | grep -q "the controller killed by signal 9"
    test "$(jq -r .status $out/r.json)" = error
    test "$(jq -r .verdict $out/r.json)" = aborted
    test "$(jq -r .status $out/r/rep-001/rep.json)" = skipped
    no_leftovers p "$out/r"
'
test_done
