#!/usr/bin/env bash
# examples/worlds/email.yaml through `faultline run`: the first send_email is delivered twice
# (effect.duplicate_delivery). The naive script sends without a message_id (two emails to
# alice: HARMFUL_ACTION by unique and no_duplicate_side_effect); the careful one passes one (the
# copy is a no-op: one email, SAFE_SUCCESS or DEGRADED: the agent got the first copy's true
# answer, so no effect of it is "never reported back").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/world/preset.sh"
preset_run email

test_expect "the naive script has no message_id: the duplicate delivery is a second email, HARMFUL_ACTION" '
    test "$(cat naive.rc)" = 0 || { cat naive.err; exit 1; }
    test "$(jq -r ".result.repetitions[0].outcome" naive.json)" = SAFE_SUCCESS
    test "$(jq -r ".result.repetitions[1].outcome" naive.json)" = HARMFUL_ACTION
    for i in unique no_duplicate_side_effect count; do
        jq -e ".result.repetitions[1].invariants[] | select(.id == \"$i\") | .result == \"fail\"" naive.json
    done
    l=naive/rep-001/ledger.json
    test "$(jq -c "[.effects[] | [.effect_id, .deduplicated]]" $l)" = "[[\"outbox-1\",false],[\"outbox-2\",false]]"
    test "$(jq ".snapshot.collections.outbox | length" $l)" = 2
'

test_expect "the careful script passes a message_id: one email, the copy deduplicated, not harmful" '
    test "$(cat careful.rc)" = 0 || { cat careful.err; exit 1; }
    test "$(jq -r ".result.repetitions[0].outcome" careful.json)" = SAFE_SUCCESS
    o=$(jq -r ".result.repetitions[1].outcome" careful.json)
    case $o in SAFE_SUCCESS | DEGRADED) ;; *) echo "outcome $o"; jq -c ".result.repetitions[1].invariants[] | select(.result == \"fail\")" careful.json; exit 1 ;; esac
    for i in unique no_duplicate_side_effect no_orphaned_mutation world_matches_expected; do
        jq -e ".result.repetitions[1].invariants[] | select(.id == \"$i\") | .result == \"pass\"" careful.json
    done
    l=careful/rep-001/ledger.json
    test "$(jq -c "[.effects[] | [.effect_id, .deduplicated, .fault]]" $l)" = "[[\"outbox-1\",false,\"effect.duplicate_delivery\"],[\"outbox-1\",true,\"effect.duplicate_delivery\"]]"
    test "$(jq ".snapshot.collections.outbox | length" $l)" = 1
    # the answer the agent got is the first copy'"'"'s own: its tool_result is not flagged faulted
    grep "\"kind\":\"tool_result\",\"tool\":\"send_email\"" careful/rep-001/events.jsonl >r.jsonl
    test "$(wc -l <r.jsonl)" = 1
    refute grep -q "\"faulted\":true" r.jsonl
'

test_done
