#!/usr/bin/env bash
# lib.sh's cleanup: a daemon that ignores SIGTERM is SIGKILLed after ~5 s instead of hanging the
# test script at exit; a daemon that exits on SIGTERM is reaped at once. refute, and the lint
# that keeps checks from being written so that bash -e ignores them.
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
test_expect "refute fails a body when its command succeeds, even on a line before the last" '
    cat >inner.sh <<SH
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
test_expect "a refuted success" "refute true; true"
test_expect "a refuted failure" "refute false; true"
test_expect "refute of a missing string" "echo abc >f; refute grep -q xyz f; true"
test_done
SH
    rc=0; timeout 20 bash inner.sh >inner.out 2>&1 || rc=$?
    test "$rc" = 1
    grep -q "^FAIL - a refuted success" inner.out
    grep -q "^ok - a refuted failure" inner.out
    grep -q "^ok - refute of a missing string" inner.out
    grep -q "^2 passed, 1 failed" inner.out
'
test_expect "tests/lint-assertions refuses a ! line and a chain of checks, and passes the tree" '
    "$FAULTLINE_ROOT/tests/lint-assertions" >tree.out
    grep -q "^1 passed, 0 failed" tree.out
    mkdir -p fake/tests/e2e fake/tests/interop
    cp "$FAULTLINE_ROOT/tests/lint-assertions" fake/tests/
    printf "x() {\n    ! grep -q a b\n}\n" >fake/tests/e2e/t1.sh
    rc=0; fake/tests/lint-assertions >bang.out || rc=$?
    test "$rc" = 1
    grep -q "t1.sh:2:" bang.out
    printf "    test 1 = 2 && grep -q a b\n" >fake/tests/e2e/t1.sh
    rc=0; fake/tests/lint-assertions >chain.out || rc=$?
    test "$rc" = 1
    grep -q "t1.sh:1:" chain.out
'
test_done
