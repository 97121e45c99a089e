#!/usr/bin/env bash
# One repetition at a time, the next one is begun while the current agent runs (docs/run.md,
# "A repetition"): its workspace, controller and sandboxes are made then, and it runs at its
# own go, after the current one ended. When the run ends first (an abort, SIGTERM), the
# repetition begun ahead is discarded: its folder is a skipped repetition's (plan.json and
# rep.json only), and nothing of it is left behind.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
cd "$TMP"

# first_t FILE KIND: the t of the first event of KIND in FILE
first_t() { jq -s -r --arg k "$2" '[.[] | select(.kind == $k)][0].t' "$1"; }
export -f first_t

# cgroups (pids, memory) of this machine's faultline parent, when there is one: sandboxes take
# turns with a few (sandbox.c, the spares), and none is left after the run
cgroups() { ls -d /sys/fs/cgroup/pids/faultline/sb-* /sys/fs/cgroup/memory/faultline/sb-* /sys/fs/cgroup/faultline/sb-* 2>/dev/null | sort; }
export -f cgroups

test_expect "the next repetition's controller is up before the current agent ends; it runs after" '
    cgroups >cg.before
    make_project p
    write_exp p/exp.yaml ahead "sleep 1; echo agent-done" "true" "repeat: 2"
    sed -i "s/^repeat: 1$//" p/exp.yaml
    commit p
    rc=0; "$FAULTLINE" run p/exp.yaml --out out/a.json >run.out 2>run.err || rc=$?
    test "$rc" = 2 || { echo "exit $rc"; cat run.err; exit 1; }  # no model call: no fault fired
    loaded=$(first_t out/a/rep-001/events.jsonl plan_loaded)
    ended=$(first_t out/a/rep-000/events.jsonl agent_exit)
    test "$loaded" != null
    test "$ended" != null
    test "$loaded" -lt "$ended" || { echo "rep 1 loaded its plan at $loaded, rep 0 ended at $ended"; exit 1; }
    # rep 1 ran after rep 0 ended, and its duration counts from its own start
    test "$(first_t out/a/rep-001/events.jsonl agent_exit)" -gt "$ended"
    jq -e ".duration_ms >= 1000 and .duration_ms < 1900" out/a/rep-001/rep.json
    for r in 0 1 2 3; do grep -q agent-done out/a/rep-00$r/agent.out; done
    # its lines come after the previous outcome line
    grep -n "" run.err | grep -E "rep 0: complete|rep 2 of 4" | head -2 | tail -1 | grep -q "rep 2 of 4"
    no_leftovers p "$TMP/out/a"
    cgroups >cg.after
    diff cg.before cg.after
'

test_expect "an abort ends the run: the repetition begun ahead is discarded and skipped" '
    make_project p2
    write_exp p2/exp.yaml aborted "echo started; sleep 60" "true" "repeat: 2
abort:
  - cost_usd_above: 1
  - wall_clock_s_above: 2"
    sed -i "s/^repeat: 1$//" p2/exp.yaml
    commit p2
    rc=0; "$FAULTLINE" run p2/exp.yaml --out out/b.json >run2.out 2>run2.err || rc=$?
    test "$rc" = 1 || { echo "exit $rc"; cat run2.err; exit 1; }
    test "$(jq -r .abort.reason out/b/rep-000/rep.json)" = wall_clock_s_above
    test "$(jq -r .status out/b/rep-001/rep.json)" = skipped
    test "$(ls out/b/rep-001 | tr "\n" " ")" = "plan.json rep.json "
    if grep -q "rep 2 of 4" run2.err; then echo "the discarded repetition was announced"; exit 1; fi
    no_leftovers p2 "$TMP/out/b"
'

test_expect "SIGTERM while the next repetition is begun: it is discarded, nothing left" '
    make_project p3
    write_exp p3/exp.yaml term "echo agent-started; sleep 120" "true" "repeat: 2"
    sed -i "s/^repeat: 1$//" p3/exp.yaml
    commit p3
    "$FAULTLINE" run p3/exp.yaml --out out/c.json >run3.out 2>run3.err &
    pid=$!
    wait_for 30 test -s out/c/rep-001/events.jsonl || { cat run3.err; exit 1; }
    kill -TERM $pid
    rc=0
    for i in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    wait $pid || rc=$?
    test "$rc" = 1
    test "$(jq -r .abort.reason out/c/rep-000/rep.json)" = interrupted
    test "$(jq -r .status out/c/rep-001/rep.json)" = skipped
    test "$(ls out/c/rep-001 | tr "\n" " ")" = "plan.json rep.json "
    no_leftovers p3 "$TMP/out/c"
'
test_done
