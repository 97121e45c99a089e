/*
 * worldcheck: `faultline world check WORLD LEDGER`, the world's invariants over one ledger,
 * with the scorer's own functions (one implementation): the world is read by
 * rundir_parse_world, the ledger by repscan (as a repetition whose only file is ledger.json),
 * and each invariant decided by rules_invariant / rules_world_invariant, so `faultline score`
 * and `world check` cannot disagree. Checked: no_duplicate_side_effect,
 * no_unintended_side_effect, world_matches_expected, idempotency_key_stable (from the ledger's
 * calls[], fed to the scorer's business operations) and every declared unique, approval and
 * count; each failure names the earliest violating effect, or call for idempotency_key_stable.
 */
#ifndef FAULTLINE_SCORE_WORLDCHECK_H
#define FAULTLINE_SCORE_WORLDCHECK_H

#include <jansson.h>

#include "score/rules.h"
#include "util/err.h"

#define WORLDCHECK_MAX (RUNDIR_MAX_WORLD_INV + 8)

struct worldcheck_item {
    char id[40];
    enum rule_result result;
    char reason[400];
    long effect_index; /* the earliest violating effect's index in the ledger, -1 when none */
    char effect_id[64];
    long call_index; /* the earliest violating call's index in the ledger's calls[], -1: none */
    long call;       /* its number (the call's "call"), 0 when the ledger gives none */
    char call_tool[64];
};

struct worldcheck {
    struct worldcheck_item items[WORLDCHECK_MAX];
    size_t n;
    int failed; /* some item failed */
    long effects;
};

/* Checks ledger (a ledger.json file, or a folder holding one) against world (borrowed: a
 * world's normal form). 0 with *out filled, or ERR_IO / ERR_INVALID / ERR_LIMIT with e set (the
 * ledger cannot be read, the world or the ledger is malformed). */
int worldcheck_run(const json_t *world, const char *ledger, struct worldcheck *out, struct err *e);

#endif
