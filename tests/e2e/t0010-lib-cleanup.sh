#!/usr/bin/env bash
# lib.sh's cleanup: a daemon that ignores SIGTERM is SIGKILLed after ~5 s instead of hanging the
# test script at exit; a daemon that exits on SIGTERM is reaped at once.
. "$(dirname "$0")/lib.sh"

test_expect "a PID that ignores SIGTERM is killed within ~5 s at exit" '
    cat >inner.sh <<SH
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
start_bg bash -c "trap \"\" TERM; echo \\\$\\\$ >\"$TMP/stubborn.pid\"; while :; do sleep 0.1; done"
start_bg sleep 300
wait_file 10 "$TMP/stubborn.pid"
echo started
SH
    start=$SECONDS
    rc=0; timeout 20 bash inner.sh >inner.out 2>&1 || rc=$?
    pid=$(cat stubborn.pid)
    for i in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    alive=0; kill -0 "$pid" 2>/dev/null && alive=1
    kill -KILL "$pid" 2>/dev/null || true # this test started it: never leave it behind
    test "$alive" = 0
    test "$rc" = 0
    grep -q started inner.out
    test $((SECONDS - start)) -le 12
'
test_done
