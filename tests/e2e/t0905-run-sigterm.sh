#!/usr/bin/env bash
# SIGTERM (and SIGINT) of `faultline run` mid-repetition: every child is ended (controller,
# mock model, the sandbox with the agent), the workspaces and temporary directories are
# removed, and the report is still written, with status aborted and the reason (exit 1).
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

make_project "$TMP/p"
write_exp "$TMP/p/exp.yaml" interrupted "echo agent-started; sleep 120" "true"
commit "$TMP/p"
cd "$TMP"

for sig in TERM INT; do
test_expect "SIG$sig mid-repetition: report aborted, nothing left behind" '
    sig='"$sig"'
    out=$TMP/out-$sig
    "$FAULTLINE" run p/exp.yaml --out $out/r.json >run-$sig.out 2>run-$sig.err &
    pid=$!
    wait_for 30 grep -q agent-started $out/r/rep-000/agent.out || { cat run-$sig.err; exit 1; }
    kill -$sig $pid
    rc=0
    for i in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    wait $pid || rc=$?
    test "$rc" = 1
    test "$(jq -r .status $out/r.json)" = aborted
    test "$(jq -r .verdict $out/r.json)" = aborted
    jq -r .error $out/r.json | grep -q interrupted
    test "$(jq -r .abort.reason $out/r/rep-000/rep.json)" = interrupted
    test "$(jq -r "select(.kind == \"abort\") | .reason" $out/r/rep-000/events.jsonl)" = interrupted
    test "$(jq -r .status $out/r/rep-001/rep.json)" = skipped
    test "$(jq -r .status $out/r/run.json)" = aborted
    if pgrep -f "sleep 120" -P $pid >/dev/null; then echo "agent left"; exit 1; fi
    no_leftovers p "$out/r"
'
done
test_done
