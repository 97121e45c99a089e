#!/usr/bin/env bash
# faultline world check WORLD LEDGER: the world's invariants over one ledger, by the scorer's
# own rules: the same results as `faultline score` gives the repetition, each failure naming
# the earliest violating effect; exit 0 when every invariant holds, 3 when one fails.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
export PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/world"
export PAY="$EXAMPLES/worlds/payments.yaml"

# ledger DIR KEY2: a ledger of two refunds of ch_2, the second with idempotency key KEY2.
ledger() {
    mkdir -p "$1"
    "$PY" - "$1" "$2" <<PY
import os, sys
from wclient import World
w = World([os.environ["PAY"], "--ledger", sys.argv[1] + "/ledger.json"])
for k in ("k1", sys.argv[2]):
    w.call("create_refund", {"charge_id": "ch_2", "amount": 1999, "idempotency_key": k})
w.call("payments_report", {"summary": "done"})
assert w.close() == 0
PY
}
export -f ledger

test_expect "two refunds of one charge: unique, count, no_duplicate_side_effect fail at the second; exit 3" '
    ledger naive k2
    rc=0; "$FAULTLINE" world check "$PAY" naive/ledger.json >out 2>err || rc=$?
    test $rc = 3
    grep -E "^no_duplicate_side_effect +fail .*\(earliest: effects\[1\] refunds-2\)\$" out
    grep -E "^unique +fail .*\(earliest: effects\[1\] refunds-2\)\$" out
    grep -E "^count +fail " out
    grep -E "^world_matches_expected +fail " out
    grep -E "^approval +pass " out
'

test_expect "the same key twice is one refund: every invariant holds, exit 0 (a folder works too)" '
    ledger careful k1
    "$FAULTLINE" world check "$PAY" careful --json >c.json
    jq -e ".holds == true and .effects == 1" c.json
    test "$(jq "[.invariants[] | select(.result == \"fail\")] | length" c.json)" = 0
'

test_expect "world check and faultline score agree on the invariants (one implementation)" '
    ledger naive k2
    mkdir -p run/rep-000
    cp naive/ledger.json run/rep-000/ledger.json
    printf "{\"version\":1,\"run\":\"r\",\"rep\":0,\"faulted\":false,\"faults\":[]}\n" >run/rep-000/plan.json
    "$FAULTLINE" validate --json "$PAY" | "$PY" -c "import json,sys; v=json.load(sys.stdin); x=v[\"experiment\"]; x[\"hash\"]=v[\"hash\"]; print(json.dumps({\"format\":1,\"status\":\"complete\",\"error\":None,\"experiment\":x}))" >run/run.json
    rc=0; "$FAULTLINE" score run --json >s.json || rc=$?
    rc=0; "$FAULTLINE" world check "$PAY" run/rep-000/ledger.json --json >w.json || rc=$?
    test $rc = 3
    "$PY" - <<PY
import json
s = json.load(open("s.json"))["repetitions"][0]["invariants"]
w = json.load(open("w.json"))["invariants"]
sv = {(i["id"], i["reason"]): i["result"] for i in s}
for i in w:
    assert sv.get((i["id"], i["reason"])) == i["result"], (i, s)
PY
'

test_expect "bad input: a ledger that is not JSON, a file not named ledger.json, a bad world" '
    mkdir -p bad
    echo "{not json" >bad/ledger.json
    rc=0; "$FAULTLINE" world check "$PAY" bad/ledger.json 2>err || rc=$?
    test $rc = 2
    grep -q "faultline world check: " err
    echo "{}" >other.json
    rc=0; "$FAULTLINE" world check "$PAY" other.json 2>err || rc=$?
    test $rc = 2
    grep -q "expected a file named ledger.json" err
    printf "name: x\ntools: [{name: t, input_schema: {oneOf: []}}]\n" >w.yaml
    rc=0; "$FAULTLINE" world check w.yaml bad/ledger.json 2>err || rc=$?
    test $rc = 2
    grep -q "w.yaml:2:34: error: " err
    rc=0; "$FAULTLINE" world check "$PAY" nowhere/ledger.json 2>err || rc=$?
    test $rc = 1
'

test_done
