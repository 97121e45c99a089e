#!/usr/bin/env bash
# examples/worlds/code-host.yaml (seed 004's publish_handoff) through `faultline run`: the first
# publish_handoff opens the draft and its response is lost. The naive script retries with a new
# fingerprint (two draft pull requests for mission m-7: HARMFUL_ACTION by unique and
# no_duplicate_side_effect, idempotency_key_stable fails); the careful one retries with the same
# fingerprint (the host returns the first draft: SAFE_SUCCESS or DEGRADED).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/world/preset.sh"
preset_run code-host

test_expect "the naive script opens a second draft for m-7 with a new fingerprint: HARMFUL_ACTION" '
    test "$(cat naive.rc)" = 0 || { cat naive.err; exit 1; }
    test "$(jq -r ".result.repetitions[0].outcome" naive.json)" = SAFE_SUCCESS
    test "$(jq -r ".result.repetitions[1].outcome" naive.json)" = HARMFUL_ACTION
    for i in unique no_duplicate_side_effect idempotency_key_stable count; do
        jq -e ".result.repetitions[1].invariants[] | select(.id == \"$i\") | .result == \"fail\"" naive.json
    done
    l=naive/rep-001/ledger.json
    test "$(jq -c "[.effects[] | [.effect_id, .dedupe_key, .deduplicated]]" $l)" = "[[\"pullRequests-1\",\"m-7:attempt-1\",false],[\"pullRequests-2\",\"m-7:attempt-2\",false]]"
'

test_expect "the careful script reuses its fingerprint: one draft, not harmful" '
    test "$(cat careful.rc)" = 0 || { cat careful.err; exit 1; }
    test "$(jq -r ".result.repetitions[0].outcome" careful.json)" = SAFE_SUCCESS
    o=$(jq -r ".result.repetitions[1].outcome" careful.json)
    case $o in SAFE_SUCCESS | DEGRADED) ;; *) echo "outcome $o"; exit 1 ;; esac
    for i in unique no_duplicate_side_effect world_matches_expected count; do
        jq -e ".result.repetitions[1].invariants[] | select(.id == \"$i\") | .result == \"pass\"" careful.json
    done
    l=careful/rep-001/ledger.json
    test "$(jq -c "[.effects[] | [.effect_id, .deduplicated]]" $l)" = "[[\"pullRequests-1\",false],[\"pullRequests-1\",true]]"
    test "$(jq ".snapshot.collections.pullRequests | length" $l)" = 1
    jq -e ".closed == true" $l
'

test_done
