#!/usr/bin/env bash
# The abort monitor (docs/run.md, seed 000 "Abort conditions"): wall_clock_s_above,
# cost_usd_above and destructive_attempt each stop the sandbox within seconds, record the abort
# (rep.json, an abort event), skip verify and the repetitions after it, and make the verdict
# aborted (exit 1); the report is written and nothing is left behind.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

test_expect "wall_clock_s_above: the agent is stopped after the limit; verify and the rest skipped" '
    make_project p
    write_exp p/exp.yaml slow "echo started; sleep 60" "true" "abort:
  - cost_usd_above: 1
  - wall_clock_s_above: 2"
    commit p
    start=$SECONDS
    rc=0; "$FAULTLINE" run p/exp.yaml --out out/r.json >run.out 2>run.err || rc=$?
    test "$rc" = 1
    test $((SECONDS - start)) -lt 20
    test "$(jq -r .verdict out/r.json)" = aborted
    test "$(jq -r .status out/r.json)" = aborted
    test "$(jq -r .abort.reason out/r/rep-000/rep.json)" = wall_clock_s_above
    test "$(jq -r .abort.limit out/r/rep-000/rep.json)" = 2
    test "$(jq -r .verify.ran out/r/rep-000/rep.json)" = false
    test "$(jq -r .skipped out/r/rep-000/verify.json)" = true
    jq -e ".agent.exit_code == 143 or .agent.signal == 15" out/r/rep-000/rep.json
    test "$(jq -r "select(.kind==\"abort\") | .reason" out/r/rep-000/events.jsonl)" = wall_clock_s_above
    test "$(jq -r .status out/r/rep-001/rep.json)" = skipped
    grep -q started out/r/rep-000/agent.out
    no_leftovers p "$TMP/out/r"
'

test_expect "an agent printing without pause: still stopped on time, agent.out capped at 64 MiB" '
    make_project p
    write_exp p/exp.yaml chatty "yes faultline" "true" "abort:
  - cost_usd_above: 1
  - wall_clock_s_above: 2"
    commit p
    start=$SECONDS
    rc=0; "$FAULTLINE" run p/exp.yaml --quiet --out out/y.json || rc=$?
    test "$rc" = 1
    test $((SECONDS - start)) -lt 30
    test "$(jq -r .abort.reason out/y/rep-000/rep.json)" = wall_clock_s_above
    size=$(stat -c %s out/y/rep-000/agent.out)
    test "$size" -le $((64 << 20))
    test "$size" -gt $((60 << 20))
    jq -e ".agent_out_dropped > 0" out/y/rep-000/rep.json
    rm -f out/y/rep-000/agent.out
    no_leftovers p "$TMP/out/y"
'

test_expect "cost_usd_above: the summed model cost passes the ceiling and the run stops" '
    make_project p
    write_exp p/exp.yaml pricey "$RUN_AGENT; sleep 60" "true" "model: {mock: pricey.yaml}
abort:
  - cost_usd_above: 0.01"
    commit p
    start=$SECONDS
    rc=0; "$FAULTLINE" run p/exp.yaml --out out/c.json >run.out 2>run.err || rc=$?
    test "$rc" = 1
    test $((SECONDS - start)) -lt 20
    test "$(jq -r .verdict out/c.json)" = aborted
    test "$(jq -r .abort.reason out/c/rep-000/rep.json)" = cost_usd_above
    jq -e ".abort.value > 0.01" out/c/rep-000/rep.json
    test "$(jq -r .status out/c/rep-001/rep.json)" = skipped
    jq -e "[.repetitions[0].cost_usd] | .[0] > 0.01" out/c.json
    no_leftovers p "$TMP/out/c"
'

test_expect "destructive_attempt: a gate decision on the destructive tier stops the run" '
    command -v curl >/dev/null || { echo "curl missing"; exit 1; }
    make_project p
    write_exp p/exp.yaml destructive "curl -s -X POST -d \"{\\\"kind\\\":\\\"gate_decision\\\",\\\"src\\\":\\\"gate\\\",\\\"decision\\\":\\\"deny\\\",\\\"tier\\\":\\\"destructive\\\",\\\"tool\\\":\\\"Bash\\\"}\" \$FAULTLINE_CONTROL_URL/_faultline/events; sleep 60" "true" "abort:
  - destructive_attempt
  - cost_usd_above: 1"
    commit p
    start=$SECONDS
    rc=0; "$FAULTLINE" run p/exp.yaml --out out/d.json >run.out 2>run.err || rc=$?
    test "$rc" = 1
    test $((SECONDS - start)) -lt 20
    test "$(jq -r .abort.reason out/d/rep-000/rep.json)" = destructive_attempt
    test "$(jq -r .verdict out/d.json)" = aborted
    no_leftovers p "$TMP/out/d"
'
test_done
