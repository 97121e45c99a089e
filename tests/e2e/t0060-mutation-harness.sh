#!/usr/bin/env bash
# tests/mutation, the mutation run of the secret-leak tests (docs/testing.md): its list names
# tests that exist and check for a secret; against the regular build (redaction on) a listed
# test passes and is reported SURVIVED (exit 1); against a build where it fails it is reported
# killed (exit 0); a build dir without faultline is refused (exit 2).
. "$(dirname "$0")/lib.sh"

M="$FAULTLINE_ROOT/tests/mutation"
export M

test_expect "every listed test exists and checks that a secret stays out" '
    sed -n "/^LEAK_TESTS=(/,/^)/p" "$M" | sed -n "s/^ *\(t[0-9][0-9]*-[a-z0-9-]*\).*/\1/p" >list
    test "$(wc -l <list)" -ge 6
    while read -r t; do
        f=$(ls "$FAULTLINE_ROOT"/tests/e2e/"$t".sh "$FAULTLINE_ROOT"/tests/interop/"$t".sh 2>/dev/null | head -n 1)
        if [ -z "$f" ]; then echo "no test $t"; exit 1; fi
        grep -qE "REDACTED|refute grep|leaked" "$f" # it looks for a secret in what was written
    done <list
'
test_expect "a build dir without faultline is refused" '
    mkdir empty
    rc=0; "$M" empty >out 2>err || rc=$?
    test "$rc" -eq 2
    grep -q "no faultline in" err
'
test_expect "against the regular build a leak test passes: SURVIVED, exit 1" '
    rc=0; MUTATION_ONLY=t0605 timeout 60 "$M" "$FAULTLINE_BUILD" >out 2>&1 || rc=$?
    test "$rc" -eq 1
    grep -q "^t0605-proxy-control-api *SURVIVED" out
    tail -n 1 out | grep -q "^0 killed, 1 survived$"
'
test_expect "against a build where it fails: killed, exit 0" '
    mkdir broken
    printf "#!/bin/sh\nexit 1\n" >broken/faultline
    chmod +x broken/faultline
    rc=0; MUTATION_ONLY=t0605 timeout 60 "$M" broken >out 2>&1 || rc=$?
    test "$rc" -eq 0
    grep -q "^t0605-proxy-control-api *killed" out
    tail -n 1 out | grep -q "^1 killed, 0 survived$"
'
test_done
