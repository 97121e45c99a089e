/*
 * fuzz_world_replay: a ledger.json as `faultline replay` reads it. The input (JSON) is the
 * recorded ledger of a small payments world: world_replay_rebuild re-applies its calls
 * (refused or rebuilt), world_replay_compare names the first difference with the recorded
 * one, and world_replay_digest hashes it, so a malformed, deep or odd ledger is an error or
 * a difference, never a crash.
 */
#include <stddef.h>
#include <stdint.h>

#include "world/replay.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char spec_text[] =
    "{\"name\":\"payments\",\"approved\":true,\"max_calls\":50,"
    "\"initial\":{\"charges\":[{\"charge_id\":\"ch_2\",\"amount\":1999}]},"
    "\"tools\":[{\"name\":\"list_refunds\",\"description\":\"\",\"reads\":\"refunds\"},"
    "{\"name\":\"create_refund\",\"description\":\"\",\"input_schema\":{\"type\":\"object\","
    "\"required\":[\"charge_id\",\"idempotency_key\"]},\"effect\":{\"collection\":\"refunds\","
    "\"business_key\":\"charge_id\",\"dedupe_key\":\"idempotency_key\",\"balance\":\"amount\"},"
    "\"result\":{\"status\":\"refunded\"}},"
    "{\"name\":\"cancel_refund\",\"description\":\"\",\"effect\":{\"collection\":\"refunds\","
    "\"business_key\":\"charge_id\",\"op\":\"delete\"}}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err e = {0};
    struct world_replay_diff d;
    struct world_digest a, b;
    char what[64];
    json_t *spec = json_loads(spec_text, 0, NULL);
    json_t *ledger = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    json_t *replayed = ledger ? world_replay_rebuild(spec, ledger, NULL, &e) : NULL;

    if (replayed) {
        world_replay_compare(ledger, replayed, &d);
        world_replay_compare(replayed, ledger, &d);
        world_replay_digest(spec, NULL, ledger, &a);
        world_replay_digest(spec, NULL, replayed, &b);
        world_replay_digest_diff(&a, &b, what, sizeof(what));
    } else if (ledger) {
        world_replay_compare(ledger, spec, &d);
    }
    json_decref(replayed);
    json_decref(ledger);
    json_decref(spec);
    return 0;
}
