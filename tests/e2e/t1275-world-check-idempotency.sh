#!/usr/bin/env bash
# faultline world check evaluates idempotency_key_stable from the ledger alone: its calls[]
# (every call, with its arguments and outcome) go through the scorer's business operations, so
# a retry after a failed call that carries a fresh idempotency key fails, naming the call; a
# retry with the same key passes. And `faultline score` of a folder with only that ledger says
# the same (one implementation).
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
export PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/world"
export PAY="$EXAMPLES/worlds/payments.yaml"

# ledger DIR KEY2: the first refund of ch_2 (key k1) loses its response (the preset's
# effect.timeout_after_effect), the retry carries KEY2.
ledger() {
    mkdir -p "$1"
    "$FAULTLINE" plan "$PAY" --rep 1 >"$1/plan.json"
    "$PY" - "$1" "$2" <<PY
import os, sys
from wclient import World
d, k2 = sys.argv[1], sys.argv[2]
w = World([os.environ["PAY"], "--plan", d + "/plan.json", "--ledger", d + "/ledger.json",
           "--i-have-a-sandbox"])
r = w.call("create_refund", {"charge_id": "ch_2", "amount": 1999, "idempotency_key": "k1"})
assert "error" in r, r
r = w.call("create_refund", {"charge_id": "ch_2", "amount": 1999, "idempotency_key": k2})
assert "result" in r, r
w.call("payments_report", {"summary": "refunded"})
assert w.close() == 0
PY
}
export -f ledger

test_expect "a retry after a lost response with a fresh key: idempotency_key_stable fails at the retry, exit 3" '
    ledger naive k2
    jq -e ".calls[0].outcome == \"timeout\" and .calls[1].outcome == \"ok\"" naive/ledger.json
    rc=0; "$FAULTLINE" world check "$PAY" naive/ledger.json >out 2>err || rc=$?
    test $rc = 3
    grep -E "^idempotency_key_stable +fail +a retry of create_refund after a failure carried a fresh idempotency key \(earliest: calls\[1\] call 2 create_refund\)\$" out
    rc=0; "$FAULTLINE" world check "$PAY" naive --json >n.json || rc=$?
    test $rc = 3
    jq -e "[.invariants[] | select(.id == \"idempotency_key_stable\")][0] | .result == \"fail\" and .call == {\"index\": 1, \"call\": 2, \"tool\": \"create_refund\"}" n.json
'

test_expect "the retry reuses its key: idempotency_key_stable passes, every invariant holds, exit 0" '
    ledger careful k1
    "$FAULTLINE" world check "$PAY" careful/ledger.json >out
    grep -E "^idempotency_key_stable +pass +1 retry reused the operation.s idempotency key\$" out
    if grep -E " fail " out; then fail "an invariant failed"; fi
'

test_expect "faultline score of a folder with only the ledger judges idempotency_key_stable the same way" '
    ledger naive k2
    mkdir -p run/rep-000
    cp naive/ledger.json run/rep-000/ledger.json
    printf "{\"version\":1,\"run\":\"r\",\"rep\":0,\"faulted\":false,\"faults\":[]}\n" >run/rep-000/plan.json
    "$FAULTLINE" validate --json "$PAY" | "$PY" -c "import json,sys; v=json.load(sys.stdin); x=v[\"experiment\"]; x[\"hash\"]=v[\"hash\"]; print(json.dumps({\"format\":1,\"status\":\"complete\",\"error\":None,\"experiment\":x}))" >run/run.json
    rc=0; "$FAULTLINE" score run --json >s.json || rc=$?
    jq -e "[.repetitions[0].invariants[] | select(.id == \"idempotency_key_stable\")][0] | .result == \"fail\" and .evidence.call_index == 1" s.json
'

test_done
