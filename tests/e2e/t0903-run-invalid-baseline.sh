#!/usr/bin/env bash
# A baseline that fails verify makes the run invalid (exit 2): the task fails without faults,
# so the run says nothing about resilience; the faulted repetitions are skipped (rep.json
# "skipped"), never started. And a complete run in which no fault fired is invalid too.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

test_expect "a failed baseline: invalid, the faulted repetition skipped" '
    make_project p
    write_exp p/exp.yaml failing "echo ran >>/tmp/count; echo agent-ran" "false"
    commit p
    rc=0; "$FAULTLINE" run p/exp.yaml --out out/r.json >run.out 2>run.err || rc=$?
    test "$rc" = 2
    test "$(jq -r .verdict out/r.json)" = invalid
    jq -r .verdict_reason out/r.json | grep -q "baseline rep-000 failed verify"
    test "$(jq -r .exit_code out/r/rep-000/verify.json)" = 1
    test "$(jq -r .status out/r/rep-001/rep.json)" = skipped
    test ! -e out/r/rep-001/agent.out
    test "$(grep -c agent-ran run.out)" = 1
    grep -q "the faulted repetitions are skipped" run.err
    no_leftovers p "$TMP/out/r"
'

test_expect "no fault fired: invalid" '
    make_project p
    write_exp p/exp.yaml nofire "echo no model call" "true"
    commit p
    rc=0; "$FAULTLINE" run p/exp.yaml --out out/n.json >run.out 2>run.err || rc=$?
    test "$rc" = 2
    jq -r .verdict_reason out/n.json | grep -q "no fault fired"
'
test_done
