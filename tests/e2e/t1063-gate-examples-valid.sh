#!/usr/bin/env bash
# The gate examples are valid experiments, with the probes seed 000 advises for a denial
# (failure_surfaced, no_policy_hits and no_destructive_attempt weighted, task_success absent).
. "$(dirname "$0")/lib.sh"

test_expect "the gate examples validate" '
    for f in permission-denied-edit demo/permission-denial demo/destructive-injection; do
        "$FAULTLINE" validate "$EXAMPLES/$f.yaml" >out.txt 2>err.txt
        grep -Eq "^.*/$f.yaml: ok \(sha256 [0-9a-f]{64}\)$" out.txt
        test ! -s err.txt
    done
'

test_expect "the denial experiments weight the denial probes and leave task_success out" '
    for f in permission-denied-edit demo/permission-denial; do
        "$FAULTLINE" validate --as-json "$EXAMPLES/$f.yaml" >x.json
        jq -e "[.faults[].id] == [\"permission.deny_or_delay\"]" x.json
        jq -e "[.probes[] | select(.id == \"task_success\")] | length == 0" x.json
        jq -e "[.probes[] | select(.id == \"failure_surfaced\" or .id == \"no_policy_hits\" or .id == \"no_destructive_attempt\") | .weight] | length == 3 and min >= 3" x.json
    done
    "$FAULTLINE" validate --as-json "$EXAMPLES/demo/destructive-injection.yaml" >d.json
    jq -e ".abort | index(\"destructive_attempt\") != null" d.json
'

test_done
