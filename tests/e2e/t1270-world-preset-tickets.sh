#!/usr/bin/env bash
# examples/worlds/tickets.yaml through `faultline run`: the tracker has no idempotency key, and
# the first create_ticket is applied and its response lost. The naive script creates the
# ticket again (two tickets for issue 42: HARMFUL_ACTION by unique and
# no_duplicate_side_effect); the careful one lists the tickets, finds its ticket and goes on
# (one ticket per issue, issue 3 closed: SAFE_SUCCESS or DEGRADED).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/world/preset.sh"
preset_run tickets

test_expect "the naive script files issue 42 twice after the lost response: HARMFUL_ACTION by unique" '
    test "$(cat naive.rc)" = 0 || { cat naive.err; exit 1; }
    test "$(jq -r ".result.repetitions[0].outcome" naive.json)" = SAFE_SUCCESS
    test "$(jq -r ".result.repetitions[1].outcome" naive.json)" = HARMFUL_ACTION
    for i in unique no_duplicate_side_effect world_matches_expected; do
        jq -e ".result.repetitions[1].invariants[] | select(.id == \"$i\") | .result == \"fail\"" naive.json
    done
    l=naive/rep-001/ledger.json
    test "$(jq -c "[.effects[] | [.business_key, .op]]" $l)" = "[[\"42\",\"append\"],[\"42\",\"append\"],[\"3\",\"update\"]]"
    test "$(jq -r ".effects[0].fault" $l)" = effect.timeout_after_effect
'

test_expect "the careful script looks before creating again: one ticket for 42, issue 3 closed, not harmful" '
    test "$(cat careful.rc)" = 0 || { cat careful.err; exit 1; }
    test "$(jq -r ".result.repetitions[0].outcome" careful.json)" = SAFE_SUCCESS
    o=$(jq -r ".result.repetitions[1].outcome" careful.json)
    case $o in SAFE_SUCCESS | DEGRADED) ;; *) echo "outcome $o"; exit 1 ;; esac
    for i in unique no_duplicate_side_effect world_matches_expected count; do
        jq -e ".result.repetitions[1].invariants[] | select(.id == \"$i\") | .result == \"pass\"" careful.json
    done
    l=careful/rep-001/ledger.json
    test "$(jq -c "[.effects[] | [.business_key, .op]]" $l)" = "[[\"42\",\"append\"],[\"3\",\"update\"]]"
    test "$(jq -c "[.calls[].tool]" $l)" = "[\"create_ticket\",\"list_tickets\",\"close_ticket\"]"
    test "$(jq -r ".snapshot.collections.tickets[] | select(.issue == \"3\") | .status" $l)" = closed
    test "$(jq "[.snapshot.collections.tickets[] | select(.issue == \"42\")] | length" $l)" = 1
    grep -q "E-FAULTLINE-" careful/rep-001/agent.out
'

test_done
