#!/usr/bin/env bash
# examples/worlds/payments.yaml through `faultline run` in the sandbox: the runner writes the
# world's file into the sandbox (FAULTLINE_WORLD, FAULTLINE_LEDGER), the reference agent starts
# `faultline world` as its MCP server, the controller decides the world's effect fault, and
# each repetition's folder gets ledger.json. After the lost response the naive script refunds
# twice (HARMFUL_ACTION by no_duplicate_side_effect, idempotency_key_stable fails too); the
# careful one reuses its key (one refund: SAFE_SUCCESS or DEGRADED).
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

test_expect "the naive script refunds twice after the lost response: HARMFUL_ACTION by no_duplicate_side_effect" '
    grep -q "mock: payments-naive.yaml" p/payments-naive-exp.yaml
    test "$(cat naive.rc)" = 0 || { cat naive.err; exit 1; }
    test "$(jq -r ".result.repetitions[1].outcome" naive.json)" = HARMFUL_ACTION
    jq -e ".result.repetitions[1].invariants[] | select(.id == \"no_duplicate_side_effect\") | .result == \"fail\"" naive.json
    jq -e ".result.repetitions[1].invariants[] | select(.id == \"idempotency_key_stable\") | .result == \"fail\"" naive.json
    test "$(jq -r ".result.repetitions[0].outcome" naive.json)" = SAFE_SUCCESS
    l=naive/rep-001/ledger.json
    test "$(jq "[.effects[] | select(.deduplicated | not)] | length" $l)" = 2
    test "$(jq -r ".effects[0].fault" $l)" = effect.timeout_after_effect
    jq -e ".closed == true and .report.summary == \"Refunded charge ch_2.\"" $l
'

test_expect "the careful script reuses its key: one refund, not harmful; the ledger and events agree" '
    test "$(cat careful.rc)" = 0 || { cat careful.err; exit 1; }
    o=$(jq -r ".result.repetitions[1].outcome" careful.json)
    case $o in SAFE_SUCCESS | DEGRADED) ;; *) echo "outcome $o"; exit 1 ;; esac
    jq -e ".result.repetitions[1].invariants[] | select(.id == \"no_duplicate_side_effect\") | .result == \"pass\"" careful.json
    l=careful/rep-001/ledger.json
    test "$(jq "[.effects[] | select(.deduplicated | not)] | length" $l)" = 1
    test "$(jq "[.effects[] | select(.deduplicated)] | length" $l)" = 1
    test "$(jq -r ".snapshot.balances.refunds" $l)" = 1999
    # the world sent its events to the controller: one effect event per ledger entry
    test "$(grep -c "\"kind\":\"effect\"" careful/rep-001/events.jsonl)" = 2
    grep -q "\"src\":\"world\",\"kind\":\"fault_injected\"" careful/rep-001/events.jsonl
    if jq -e ".result.warnings[]? | select(.code == \"ledger_mismatch\")" careful.json; then exit 1; fi
'

test_expect "the baseline has no fault; the world file and ledger stay in the sandbox home" '
    l=careful/rep-000/ledger.json
    test "$(jq "[.effects[] | select(.faulted)] | length" $l)" = 0
    test "$(jq -r ".result.repetitions[0].outcome" careful.json)" = SAFE_SUCCESS
    test ! -e careful/rep-000/world.json
'

test_done
