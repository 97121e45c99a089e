#!/usr/bin/env bash
# `faultline validate`: the shipped examples, exit codes, --json, --as-json, hash stability.
. "$(dirname "$0")/lib.sh"

test_expect "the three seed examples are valid" '
    for f in registry-down credential-revoked poisoned-readme; do
        "$FAULTLINE" validate "$EXAMPLES/$f.yaml" >out.txt 2>err.txt
        grep -Eq "^.*/$f.yaml: ok \(sha256 [0-9a-f]{64}\)$" out.txt
        test ! -s err.txt
    done
'

test_expect "exit 2 when any file is invalid, with every file still checked" '
    printf "name: Bad\n" >bad.yaml
    rc=0; "$FAULTLINE" validate "$EXAMPLES/registry-down.yaml" bad.yaml "$EXAMPLES/poisoned-readme.yaml" >out.txt 2>err.txt || rc=$?
    test "$rc" = 2
    test "$(grep -c ": ok (sha256" out.txt)" = 2
    grep -q "^bad.yaml:1:7: error: name:" err.txt
'

test_expect "exit 1 when a file cannot be read (over 2 for an invalid one)" '
    rc=0; "$FAULTLINE" validate missing.yaml 2>err.txt || rc=$?
    test "$rc" = 1
    grep -q "cannot open .missing.yaml." err.txt
    printf "name: Bad\n" >bad.yaml
    rc=0; "$FAULTLINE" validate bad.yaml missing.yaml 2>/dev/null || rc=$?
    test "$rc" = 1
    rc=0; "$FAULTLINE" validate . 2>err.txt || rc=$?
    test "$rc" = 1
    grep -q "is not a regular file" err.txt
'

test_expect "usage errors exit 64" '
    rc=0; "$FAULTLINE" validate 2>/dev/null || rc=$?; test "$rc" = 64
    rc=0; "$FAULTLINE" validate --nope x.yaml 2>/dev/null || rc=$?; test "$rc" = 64
'

test_expect "warnings do not fail: exit 0" '
    cp "$FAULTLINE_ROOT/tests/data/validate/permission-weights-warning.yaml" w.yaml
    "$FAULTLINE" validate w.yaml >out.txt 2>err.txt
    grep -q "^w.yaml:11:5: warning: task_success has the highest weight" err.txt
    grep -q "^w.yaml: ok" out.txt
'

test_expect "--json prints the normal form with the same hash" '
    "$FAULTLINE" validate "$EXAMPLES/registry-down.yaml" >out.txt
    h=$(sed -E "s/.*sha256 ([0-9a-f]+)\)/\1/" out.txt)
    "$FAULTLINE" validate --json "$EXAMPLES/registry-down.yaml" >n.json
    test "$(jq -r .hash n.json)" = "$h"
    test "$(jq -r .experiment.faults[0].id n.json)" = egress.dns_fail
    test "$(jq -r .experiment.faults[0].match.host n.json)" = "*.npmjs.org"
    test "$(jq -r .experiment.faults[0].times n.json)" = null
    test "$(jq -r .experiment.abort.cost_usd_above n.json)" = 2
    test "$(jq -r .experiment.repeat n.json)" = 3
'

test_expect "the hash ignores formatting and comments, not values" '
    grep -v "^ *#" "$EXAMPLES/registry-down.yaml" | sed "s/ *#.*//" >plain.yaml
    printf "\n# trailing comment\n" >>plain.yaml
    a=$("$FAULTLINE" validate --json "$EXAMPLES/registry-down.yaml" | jq -r .hash)
    b=$("$FAULTLINE" validate --json plain.yaml | jq -r .hash)
    test "$a" = "$b"
    sed "s/^repeat: 3/repeat: 4/" plain.yaml >changed.yaml
    c=$("$FAULTLINE" validate --json changed.yaml | jq -r .hash)
    test "$a" != "$c"
'

test_expect "--as-json prints the YAML as written" '
    "$FAULTLINE" validate --as-json "$EXAMPLES/poisoned-readme.yaml" >raw.json
    test "$(jq -r ".faults[0].when.path" raw.json)" = "\$.path"
    test "$(jq -r ".mcp_servers.fs.command" raw.json)" = mcp-server-filesystem
    printf "a: [1\n" >broken.yaml
    rc=0; "$FAULTLINE" validate --as-json broken.yaml 2>err.txt || rc=$?
    test "$rc" = 2
    grep -q "^broken.yaml:2:1: error: yaml:" err.txt
'
test_done
