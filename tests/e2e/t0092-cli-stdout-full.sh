#!/usr/bin/env bash
# Every command that prints exits 1, with "cannot write to stdout" on stderr, when stdout cannot
# be written (>/dev/full: docs/cli.md's exit codes), never 0 as if it had printed: the program's
# own help and version (src/cli/main.c), every command's --help, and score's report (1 over its
# verdict: the report was not delivered).
. "$(dirname "$0")/lib.sh"

export SCORE_RUN="$FAULTLINE_ROOT/tests/data/score/all-pass/run"

full_is_1() {
    local rc=0
    "$FAULTLINE" "$@" >/dev/full 2>err.txt || rc=$?
    test $rc = 1 || { echo "faultline $*: exit $rc"; return 1; }
    grep -q "cannot write to stdout" err.txt || { echo "faultline $*:"; cat err.txt; return 1; }
}
export -f full_is_1

test_expect "faultline help, --help, -h, --version and version exit 1 on a full stdout" '
    for a in help --help -h --version version; do
        full_is_1 $a
    done
'

test_expect "each command's --help and help CMD exit 1 on a full stdout" '
    for c in list validate schema plan proxy mock-model agent mcp score init sandbox; do
        full_is_1 $c --help
        full_is_1 help $c
    done
'

test_expect "score exits 1 on a full stdout, text or --json, where it would exit 0" '
    rc=0; "$FAULTLINE" score "$SCORE_RUN" >/dev/null || rc=$?
    test $rc = 0
    full_is_1 score "$SCORE_RUN"
    full_is_1 score --json "$SCORE_RUN"
'

test_expect "the same commands exit 0 when stdout can be written" '
    for a in help --help --version version; do
        "$FAULTLINE" $a >out.txt
        test -s out.txt
    done
'
test_done
