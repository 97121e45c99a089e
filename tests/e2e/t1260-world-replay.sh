#!/usr/bin/env bash
# faultline replay on real run folders of examples/worlds/payments.yaml (faultline run in the
# sandbox, the careful and the naive mock-model scripts): each repetition's world is rebuilt
# from the calls its ledger recorded and the faults of its plan, and reproduces the recorded
# ledger and verdicts, the naive agent's HARMFUL_ACTION repetition included (exit 0). Then the
# run folder is tampered with, one change per copy: each is detected and named (exit 3), and
# bad input is refused with one line (exit 2).
. "$(dirname "$0")/lib.sh"
chmod 711 "$TMP" # the sandbox runs as nobody when this runs as root: it must reach its home
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

p=$TMP/p
mkdir -p "$p"
cp "$EXAMPLES"/worlds/payments.yaml "$EXAMPLES"/worlds/payments-naive.yaml \
    "$EXAMPLES"/worlds/payments-careful.yaml "$p/"
sed 's/^model: {mock: payments-careful.yaml}$/model: {mock: payments-naive.yaml}/' \
    "$p/payments.yaml" >"$p/payments-naive-exp.yaml"
git -C "$p" init -q
git -C "$p" add -A
git -C "$p" -c user.name=t -c user.email=t@example.invalid commit -qm t
cd "$TMP"
for f in careful naive; do
    exp=payments.yaml
    if [ $f = naive ]; then exp=payments-naive-exp.yaml; fi
    rc=0
    timeout 120 "$FAULTLINE" run "p/$exp" --out "$TMP/$f.json" >"$f.out" 2>"$f.err" || rc=$?
    echo "$rc" >"$f.rc"
done

# tamper NAME JQ-FILTER FILE: a copy of the naive run folder as t-NAME with FILE of rep-001
# rewritten by the filter
tamper() {
    rm -rf "t-$1"
    cp -r naive "t-$1"
    jq "$2" "t-$1/rep-001/$3" >"t-$1/x"
    mv "t-$1/x" "t-$1/rep-001/$3"
}
export -f tamper

test_expect "the runs record the world's hash next to each ledger" '
    test "$(cat naive.rc)" = 0 || { cat naive.err; exit 1; }
    test "$(jq -r ".result.repetitions[1].outcome" naive.json)" = HARMFUL_ACTION
    for r in careful/rep-000 careful/rep-001 naive/rep-000 naive/rep-001; do
        jq -e ".format == 1 and (.world, .plan, .calls, .ledger | test(\"^[0-9a-f]{64}\$\"))" $r/world-hash.json
    done
    test "$(jq .closed_after naive/rep-001/ledger.json)" = 2
'

test_expect "replay reproduces every repetition, the HARMFUL_ACTION one too (exit 0)" '
    "$FAULTLINE" replay naive >out 2>err || { cat out err; exit 1; }
    cat out
    grep -Eq "^rep-000 +reproduced: 1 call, 1 effect, invariants all hold\$" out
    grep -Eq "^rep-001 +reproduced: 2 calls, 2 effects, invariants failing: no_duplicate_side_effect, .*unique" out
    test "$(wc -l <out)" = 2
    "$FAULTLINE" replay careful --rep 1 >out 2>err || { cat out err; exit 1; }
    grep -Eq "^rep-001 +reproduced: 2 calls, 2 effects, invariants all hold\$" out
    test "$(wc -l <out)" = 1
'

test_expect "a rewritten but equal ledger (jq: 3998.0 becomes 3998) still reproduces" '
    tamper same . ledger.json
    grep -q "\"refunds\": 3998\$" t-same/rep-001/ledger.json
    "$FAULTLINE" replay t-same --rep 1 >out 2>&1 || { cat out; exit 1; }
    grep -q "reproduced" out
'

test_expect "an argument of a recorded call changed: differs at that call, calls named (exit 3)" '
    tamper arg ".calls[1].args.amount = 999" ledger.json
    rc=0; "$FAULTLINE" replay t-arg >out 2>&1 || rc=$?
    cat out
    test $rc = 3
    grep -Eq "^rep-000 +reproduced" out
    grep -Fq "rep-001  differs at call 2 (create_refund): effects[1].args.amount: recorded 1999, replayed 999; changed since the run: calls (world-hash.json)" out
'

test_expect "a recorded call removed: differs at call 1, calls named (exit 3)" '
    tamper rm "del(.calls[0])" ledger.json
    rc=0; "$FAULTLINE" replay t-rm --rep 1 >out 2>&1 || rc=$?
    cat out
    test $rc = 3
    grep -Fq "rep-001  differs at call 1 (create_refund): calls[0].call: recorded 2, replayed 1; changed since the run: calls (world-hash.json)" out
'

test_expect "the plan fault edited: the lost response is now a timeout before the effect, plan named (exit 3)" '
    tamper plan ".faults[0].kind = \"effect.timeout_before_effect\"" plan.json
    rc=0; "$FAULTLINE" replay t-plan --rep 1 >out 2>&1 || rc=$?
    cat out
    test $rc = 3
    grep -Fq "rep-001  differs at call 1 (create_refund): calls[0].fault: recorded \"effect.timeout_after_effect\", replayed \"effect.timeout_before_effect\"; changed since the run: plan (world-hash.json)" out
'

test_expect "the snapshot edited: differs, not at a call, ledger named (exit 3)" '
    tamper snap ".snapshot.balances.refunds = 1999" ledger.json
    rc=0; "$FAULTLINE" replay t-snap --rep 1 >out 2>&1 || rc=$?
    cat out
    test $rc = 3
    grep -Fq "rep-001  differs: snapshot.balances.refunds: recorded 1999, replayed 3998; changed since the run: ledger (world-hash.json)" out
'

test_expect "a change the replay cannot see (a fault option) is still named by the hash (exit 3)" '
    tamper opt ".faults[0].options.delay_ms = 1" plan.json
    rc=0; "$FAULTLINE" replay t-opt --rep 1 >out 2>&1 || rc=$?
    cat out
    test $rc = 3
    grep -Fq "rep-001  differs: changed since the run: plan (world-hash.json)" out
'

test_expect "without world-hash.json the replay still runs and says the files were not checked" '
    rm -rf t-nohash; cp -r naive t-nohash; rm t-nohash/rep-001/world-hash.json
    "$FAULTLINE" replay t-nohash --rep 1 >out 2>&1 || { cat out; exit 1; }
    grep -Fq "(no world-hash.json: files not checked)" out
'

test_expect "bad input: no ledger, an unreadable plan, no world, not a run folder (exit 2, one line); no temporary folder (exit 1)" '
    rm -rf t-nol; cp -r naive t-nol; rm t-nol/rep-001/ledger.json
    rc=0; "$FAULTLINE" replay t-nol --rep 1 >out 2>err || rc=$?
    test $rc = 2
    grep -Fq "rep-001  no ledger.json: nothing to replay" out
    rc=0; "$FAULTLINE" replay t-nol --rep 7 >out 2>err || rc=$?
    test $rc = 2
    grep -Fq "no repetition 7" err
    rm -rf t-badplan; cp -r naive t-badplan; printf "{\"faults\": [" >t-badplan/rep-001/plan.json
    rc=0; "$FAULTLINE" replay t-badplan --rep 1 >out 2>err || rc=$?
    cat out err
    test $rc = 2
    grep -Eq "^rep-001 +error: rep-001/plan.json:1:[0-9]+: " out
    rm -rf t-noplan; cp -r naive t-noplan; rm t-noplan/rep-001/plan.json
    rc=0; "$FAULTLINE" replay t-noplan --rep 1 >out 2>err || rc=$?
    test $rc = 2
    grep -Fq "rep-001/plan.json is missing" out
    rm -rf t-badl; cp -r naive t-badl; echo "{\"calls\": [{\"args\": {}}]}" >t-badl/rep-001/ledger.json
    rc=0; "$FAULTLINE" replay t-badl --rep 1 >out 2>err || rc=$?
    test $rc = 2
    grep -Fq "rep-001/ledger.json: calls[0].tool: expected a string" out
    rm -rf t-now; cp -r naive t-now; jq ".experiment.world = null" naive/run.json >t-now/run.json
    rc=0; "$FAULTLINE" replay t-now >out 2>err || rc=$?
    test $rc = 2
    grep -Fq "the experiment has no world: nothing to replay" err
    rc=0; TMPDIR=$TMP/nonexistent "$FAULTLINE" replay naive --rep 1 >out 2>err || rc=$?
    test $rc = 1
    grep -Fq "cannot make a temporary folder in" out
    mkdir -p empty
    rc=0; "$FAULTLINE" replay empty >out 2>err || rc=$?
    test $rc = 2
    grep -Fq "no run.json: not a run folder" err
    test "$(wc -l <err)" = 1
'

test_done
