#!/usr/bin/env bash
# On a terminal `faultline run` keeps one live status line (repetition i of N, baseline or
# faulted, phase, cost so far, elapsed) below the agent's output, erasing it before each
# line printed; not on a terminal, or with TERM=dumb, it prints plain lines only.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

make_project "$TMP/p"
write_exp "$TMP/p/exp.yaml" tty "echo line-one; sleep 1; $RUN_AGENT" "true"
commit "$TMP/p"
cd "$TMP"
ESC=$(printf '\033')
export ESC

test_expect "on a terminal: the status line, erased before the agent's lines" '
    command -v script >/dev/null || { echo "script (util-linux) missing"; exit 1; }
    rc=0; TERM=xterm timeout 120 script -qec "$FAULTLINE run p/exp.yaml --out out/a.json" /dev/null >tty.txt || rc=$?
    test "$rc" = 0
    grep -aqF "${ESC}[K[rep 1 of 2, baseline] agent  " tty.txt
    grep -aqF "${ESC}[K[rep 2 of 2, faulted] verify  " tty.txt
    grep -aqE "\] agent  [$]0[.][0-9]{4}  [0-9]+[.][0-9] s" tty.txt
    grep -aqF "${ESC}[Kline-one" tty.txt
    tail -n 4 tty.txt | grep -aq "^faultline run: verdict scored"
    refute grep -aqF "[rep" <(tail -n 4 tty.txt)
    test "$(jq -r .verdict out/a.json)" = scored
'

test_expect "TERM=dumb on a terminal, and no terminal: plain lines" '
    rc=0; TERM=dumb timeout 120 script -qec "$FAULTLINE run p/exp.yaml --out out/b.json" /dev/null >dumb.txt || rc=$?
    test "$rc" = 0
    refute grep -aq "$ESC" dumb.txt
    grep -aq "faultline run: verdict scored" dumb.txt
    rc=0; "$FAULTLINE" run p/exp.yaml --out out/c.json >plain.out 2>plain.err || rc=$?
    test "$rc" = 0
    refute grep -aq "$ESC" plain.out plain.err
'
test_done
