#!/usr/bin/env bash
# One flag parser for every command (src/util/opt.c): help CMD = CMD --help, each help ends
# with an example and an existing docs page, one wording for unknown options with a did-you-
# mean and exit 64, --opt=value = --opt value, - for stdin, exit 1 when stdout is full.
. "$(dirname "$0")/lib.sh"

CMDS="list validate schema plan proxy mock-model agent mcp score run compare"
export CMDS

test_expect "faultline help CMD prints the same text as faultline CMD --help" '
    for c in $CMDS; do
        "$FAULTLINE" help $c >a.txt
        "$FAULTLINE" $c --help >b.txt
        "$FAULTLINE" $c -h >c.txt
        cmp a.txt b.txt || { echo "help $c differs"; exit 1; }
        cmp a.txt c.txt || { echo "-h $c differs"; exit 1; }
        grep -q "^usage: faultline $c" a.txt || { echo "no usage line for $c"; exit 1; }
    done
'

test_expect "each --help ends with an example and a docs page that exists" '
    for c in $CMDS; do
        "$FAULTLINE" $c --help >h.txt
        page=$(tail -n 1 h.txt | sed -n "s/^see \(docs\/[a-z-]*\.md\)\$/\1/p")
        test -n "$page" || { echo "$c: no docs page line"; tail -n 3 h.txt; exit 1; }
        test -f "$FAULTLINE_ROOT/$page" || { echo "$c: $page does not exist"; exit 1; }
        tail -n 4 h.txt | head -n 2 | grep -q "^  faultline $c" || { echo "$c: no example"; exit 1; }
    done
'

test_expect "--help wins over any other flag, before --" '
    "$FAULTLINE" plan --bogus --rep x --help >h.txt
    grep -q "^usage: faultline plan" h.txt
'

test_expect "help shows the defaults and the ranges from the tables" '
    "$FAULTLINE" agent --help | grep -q -- "--max-turns N .*(1..10000, default 20)"
    "$FAULTLINE" agent --help | grep -q -- "--read-timeout S .*(0.001..86400 s, default 300)"
    "$FAULTLINE" proxy --help | grep -q -- "--retries N .*(0..20, default 2)"
    "$FAULTLINE" mcp --help | grep -q -- "--grace-ms MS .*(1..600000, default 2000)"
    "$FAULTLINE" mock-model --help | grep -q -- "--max-body BYTES .*(1..33554432, default 33554432)"
'

test_expect "every command: an unknown option is one wording, a did-you-mean, exit 64" '
    for c in $CMDS; do
        rc=0; "$FAULTLINE" $c --hepl x </dev/null >out.txt 2>err.txt || rc=$?
        test "$rc" = 64 || { echo "$c: exit $rc"; cat err.txt; exit 1; }
        grep -qx "faultline $c: unknown option .--hepl. (did you mean .--help.?)" err.txt ||
            { echo "$c:"; cat err.txt; exit 1; }
        grep -q "^usage: faultline $c" err.txt
        test ! -s out.txt
    done
    rc=0; "$FAULTLINE" validate --jsno x.yaml 2>err.txt || rc=$?
    test $rc = 64
    grep -q "did you mean .--json.?" err.txt
    rc=0; "$FAULTLINE" lsit 2>err.txt || rc=$?
    test $rc = 64
    grep -q "unknown command .lsit. (did you mean .list.?)" err.txt
'

test_expect "bad numbers are usage errors naming the range (exit 64)" '
    for v in 0 x 10001 " 5" +5 5x ""; do
        rc=0; "$FAULTLINE" agent --prompt p --max-turns "$v" 2>err.txt || rc=$?
        test $rc = 64 || { echo "max-turns [$v]: exit $rc"; exit 1; }
        grep -q -- "--max-turns: expected an integer in 1..10000" err.txt
    done
    rc=0; "$FAULTLINE" mcp --max-line=10 -- true 2>err.txt || rc=$?
    test $rc = 64
    rc=0; "$FAULTLINE" plan x.yaml --rep 2>err.txt || rc=$?
    test $rc = 64
    grep -q -- "--rep needs a value" err.txt
    rc=0; "$FAULTLINE" list --json=yes 2>err.txt || rc=$?
    test $rc = 64
    grep -q -- "--json takes no value" err.txt
'

test_expect "--opt=value and --opt value are the same" '
    "$FAULTLINE" plan "$EXAMPLES/registry-down.yaml" --rep 3 --seed 0x5eed >a.json
    "$FAULTLINE" plan "$EXAMPLES/registry-down.yaml" --rep=3 --seed=0x5eed >b.json
    "$FAULTLINE" plan --seed=0x5eed "$EXAMPLES/registry-down.yaml" --rep=3 >c.json
    cmp a.json b.json
    cmp a.json c.json
    "$FAULTLINE" validate --quiet "$EXAMPLES/registry-down.yaml" --json >v1.json
    "$FAULTLINE" validate --json -q "$EXAMPLES/registry-down.yaml" >v2.json
    cmp v1.json v2.json
'

test_expect "- reads the experiment from stdin (validate, validate --as-json, plan)" '
    ex="$EXAMPLES/registry-down.yaml"
    "$FAULTLINE" validate - <"$ex" >out.txt
    h=$("$FAULTLINE" validate "$ex" | sed "s/.*(sha256 \(.*\))/\1/")
    grep -qx "<stdin>: ok (sha256 $h)" out.txt
    "$FAULTLINE" validate --as-json - <"$ex" | jq -e .name >/dev/null
    "$FAULTLINE" plan - --rep 3 <"$ex" >a.json
    "$FAULTLINE" plan "$ex" --rep 3 >b.json
    test "$(jq -r .experiment.path a.json)" = "<stdin>"
    cmp <(jq -S "del(.experiment.path)" a.json) <(jq -S "del(.experiment.path)" b.json)
    rc=0; printf "name: x\n" | "$FAULTLINE" validate - 2>err.txt || rc=$?
    test $rc = 2
    grep -q "^<stdin>:1:1: error:" err.txt
    rc=0; head -c 1100000 /dev/zero | tr "\0" "a" | "$FAULTLINE" validate - 2>err.txt || rc=$?
    test $rc = 2
    grep -q "over the limit" err.txt
'

test_expect "list, schema and validate exit 1 when stdout cannot be written (>/dev/full)" '
    for args in "list" "list --json" "list --markdown" "schema" \
                "validate $EXAMPLES/registry-down.yaml" "validate --json $EXAMPLES/registry-down.yaml" \
                "validate --as-json $EXAMPLES/registry-down.yaml" "plan $EXAMPLES/registry-down.yaml --rep 0" \
                "help --exit-codes" "list --help"; do
        rc=0; "$FAULTLINE" $args >/dev/full 2>err.txt || rc=$?
        test $rc = 1 || { echo "$args: exit $rc"; exit 1; }
        grep -q "cannot write to stdout" err.txt || { echo "$args:"; cat err.txt; exit 1; }
    done
'

test_expect "mcp: flags after -- belong to the server, arguments before -- are refused" '
    rc=0; "$FAULTLINE" mcp --grace-ms=100 -- sh -c "exit 7" --help </dev/null >/dev/null 2>&1 || rc=$?
    test $rc = 7
    rc=0; "$FAULTLINE" mcp sh -- true </dev/null 2>err.txt || rc=$?
    test $rc = 64
    grep -q "unexpected argument .sh. (arguments go after --)" err.txt
'

test_expect "no command, and help with two commands, are usage errors (64)" '
    rc=0; "$FAULTLINE" 2>/dev/null || rc=$?
    test $rc = 64
    rc=0; "$FAULTLINE" help list plan 2>/dev/null || rc=$?
    test $rc = 64
    "$FAULTLINE" help >h.txt
    grep -q "help COMMAND" h.txt
'
test_done
