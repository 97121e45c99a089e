#!/usr/bin/env bash
# `faultline list`: the catalog in text and JSON, and where the examples are.
. "$(dirname "$0")/lib.sh"

test_expect "list prints every fault, probe, invariant and abort condition" '
    "$FAULTLINE" list >out.txt
    "$FAULTLINE" list --json >cat.json
    test "$(jq ".faults | length" cat.json)" -ge 32
    for id in $(jq -r ".faults[].id, .probes[].id, .invariants[].id, .abort[].id" cat.json); do
        grep -q -- "$id" out.txt || { echo "missing $id"; exit 1; }
    done
    grep -q "^FAULTS (" out.txt
    grep -q "^PROBES (6)" out.txt
    grep -q "^ABORT CONDITIONS (3)" out.txt
'

test_expect "list --json carries the contract: injectors, safety, options, requirements" '
    "$FAULTLINE" list --json >cat.json
    test "$(jq -c "[.faults[] | select(.id==\"tool.error\") | .injectors][0]" cat.json)" = "[\"mcp\",\"gate\",\"world\"]"
    test "$(jq -r ".faults[] | select(.id==\"egress.dns_fail\") | .requires[0]" cat.json)" = match.host
    test "$(jq -r ".faults[] | select(.id==\"llm.context_trim\") | .safety" cat.json)" = mutating
    test "$(jq -r ".faults[] | select(.id==\"permission.deny_or_delay\") | .options[1].range.max" cat.json)" = 600
    test "$(jq -r ".faults[] | select(.id==\"llm.rate_limit\") | .options[0].default" cat.json)" = 5
    test "$(jq -r ".probes[] | select(.id==\"cost_multiplier_below\") | .not_evaluated_when" cat.json)" = "the baseline cost is 0"
    test "$(jq -r ".abort[] | select(.id==\"cost_usd_above\") | .required" cat.json)" = true
    test "$(jq -r ".seed_kinds[] | select(.name==\"stale_cache\") | .id" cat.json)" = tool.stale_data
    test "$(jq "[.seed_kinds[] | select(.seed==\"002\")] | length" cat.json)" = 16
'

test_expect "list prints where the examples are, and they are there" '
    "$FAULTLINE" list >out.txt
    dir=$(sed -n "s/^EXAMPLES in //p" out.txt)
    test -n "$dir"
    for f in registry-down credential-revoked poisoned-readme; do
        test -f "$dir/$f.yaml"
        grep -q "  $f.yaml" out.txt
    done
    test "$(jq -r .examples_dir <("$FAULTLINE" list --json))" = "$dir"
'

test_expect "list finds the examples of an installed layout (PREFIX/share/faultline/examples)" '
    mkdir -p prefix/bin prefix/share/faultline
    cp "$FAULTLINE" prefix/bin/faultline
    cp -R "$FAULTLINE_ROOT/examples" prefix/share/faultline/
    prefix/bin/faultline list | grep -qx "EXAMPLES in $(cd prefix/share/faultline/examples && pwd -P)"
'

test_expect "list says so when no examples are next to the binary" '
    mkdir -p lonely/bin
    cp "$FAULTLINE" lonely/bin/faultline
    lonely/bin/faultline list >out.txt
    grep -q "^EXAMPLES: not found" out.txt
    test "$(jq -r .examples_dir <(lonely/bin/faultline list --json))" = null
'

test_expect "list rejects unknown options with exit 64 (usage)" '
    rc=0; "$FAULTLINE" list --bogus 2>err.txt || rc=$?
    test "$rc" = 64
    grep -q "unknown option" err.txt
'
test_done
