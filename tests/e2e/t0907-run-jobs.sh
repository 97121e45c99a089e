#!/usr/bin/env bash
# --jobs N: up to N repetitions at once, each with its own sandbox, controller and workspace;
# the baselines finish before the faulted ones start; the agent's lines are prefixed with their
# repetition; the report is the same (order, plans, figures) as a --jobs 1 run of the same seed.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

make_project "$TMP/p"
write_exp "$TMP/p/exp.yaml" jobs "$RUN_AGENT; sleep 2" "true"
sed -i 's/^repeat: 1$/repeat: 2/' "$TMP/p/exp.yaml"
commit "$TMP/p"
cd "$TMP"

test_expect "--jobs 1 and --jobs 2 of the same seed: the same report" '
    s=$(date +%s%N)
    rc=0; "$FAULTLINE" run p/exp.yaml --seed 7 --jobs 1 --out one.json >one.out 2>one.err || rc=$?
    test "$rc" = 0 || { tail one.err; exit 1; }
    echo $(( ($(date +%s%N) - s) / 1000000 )) >one.ms
    s=$(date +%s%N)
    rc=0; "$FAULTLINE" run p/exp.yaml --seed 7 --jobs 2 --out two.json >two.out 2>two.err || rc=$?
    test "$rc" = 0 || { tail two.err; exit 1; }
    echo $(( ($(date +%s%N) - s) / 1000000 )) >two.ms
    # measured times (durations, and the gaps the backoff reasons quote) aside
    norm() { jq -S "del(.run_dir) | .repetitions |= map(del(.duration_ms, .agent.duration_ms, .verify.duration_ms)) | walk(if type == \"string\" then gsub(\"[0-9]+ ms\"; \"N ms\") else . end)" "$1"; }
    diff <(norm one.json) <(norm two.json)
    test "$(jq -r .verdict two.json)" = scored
    for r in rep-000 rep-001 rep-002 rep-003; do cmp one/$r/plan.json two/$r/plan.json; done
'

test_expect "--jobs 2 ran the baselines together, then the faulted ones, after them" '
    t() { jq -r "select(.kind==\"$2\") | .t" "two/$1/events.jsonl"; }
    # the two baselines overlap
    test "$(t rep-000 run_start)" -lt "$(t rep-001 agent_exit)"
    test "$(t rep-001 run_start)" -lt "$(t rep-000 agent_exit)"
    # every faulted one starts after both baselines ended
    for f in rep-002 rep-003; do for b in rep-000 rep-001; do
        test "$(t $f run_start)" -gt "$(t $b run_end)"
    done; done
'

test_expect "--jobs 2 prefixes the agent lines with their repetition" '
    grep -qx "\[rep 0\] hello from the mock model" two.out
    grep -qx "\[rep 3\] hello from the mock model" two.out
    refute grep -q "^\[rep" one.out
'

test_expect "--jobs 2 takes less time than --jobs 1 and leaves nothing behind" '
    echo "jobs 1: $(cat one.ms) ms, jobs 2: $(cat two.ms) ms"
    test "$(cat two.ms)" -lt "$(cat one.ms)"
    no_leftovers p "$TMP/two"
'

test_expect "SIGTERM with --jobs 2: both running repetitions interrupted, report written" '
    make_project q
    write_exp q/exp.yaml jobsterm "echo agent-started; sleep 120" "true"
    sed -i "s/^repeat: 1\$/repeat: 2/" q/exp.yaml
    commit q
    "$FAULTLINE" run q/exp.yaml --jobs 2 --out $TMP/t/r.json >t.out 2>t.err &
    pid=$!
    wait_for 30 grep -q agent-started $TMP/t/r/rep-001/agent.out || { cat t.err; exit 1; }
    wait_for 30 grep -q agent-started $TMP/t/r/rep-000/agent.out
    kill -TERM $pid
    rc=0
    for i in $(seq 400); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    wait $pid || rc=$?
    test "$rc" = 1
    test "$(jq -r .status t/r.json)" = aborted
    test "$(jq -r .abort.reason t/r/rep-000/rep.json)" = interrupted
    test "$(jq -r .abort.reason t/r/rep-001/rep.json)" = interrupted
    test "$(jq -r .status t/r/rep-002/rep.json)" = skipped
    no_leftovers q "$TMP/t/r"
'
test_done
