/*
 * replay: rebuilds a world from its recorded calls and compares the outcome with the recorded
 * one (`faultline replay`, docs/world.md, "Replay").
 *
 * world_replay_rebuild makes a fresh world from the spec, then re-applies the ledger's calls[]
 * in order (tool, arguments, time), each decided first by world_decide (decide.h: the code the
 * server runs, asking the plan through the seam with the same call numbering), and closes the
 * world where the recorded one was closed (the ledger's closed_after: the report tool is not a
 * call of the ledger). The result is the replayed ledger. world_replay_compare walks a
 * recorded and a replayed ledger in call order and names the first difference:
 *
 *   per call N         the call's fields but its time (tool, args, outcome, fault, effects),
 *                      then the entries call N made (every field but the time)
 *   after the calls    entries no call accounts for, then world, approved, closed,
 *                      closed_after, report and the snapshot
 *
 * A difference is named by its path and both values, e.g. `calls[0].outcome: recorded
 * "timeout", replayed "ok"`, with the call's number and tool; values are cut at 120 bytes,
 * credentials redacted (util/redact.h) and control characters escaped, so the text is safe to
 * print.
 *
 * The digest: SHA-256 of the normal form (compact JSON, sorted keys) of four parts, the world
 * spec, the plan, the ledger's calls[] (the call list), and the rest of the ledger. The runner
 * records it beside the ledger (world-hash.json, docs/run-folder.md); a replay recomputes it
 * and names the parts that changed.
 */
#ifndef FAULTLINE_WORLD_REPLAY_H
#define FAULTLINE_WORLD_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "seam/seam.h"
#include "util/err.h"

struct world_digest {
    char world[65], plan[65], calls[65], ledger[65]; /* hex SHA-256 */
};

/* Fills *out from spec, plan and ledger (borrowed; any may be NULL: it hashes as null). */
void world_replay_digest(const json_t *spec, const json_t *plan, const json_t *ledger,
                         struct world_digest *out);
/* world-hash.json's content (new reference): {"format": 1, "world", "plan", "calls", "ledger"}. */
json_t *world_replay_digest_json(const struct world_digest *d);
/* Reads world-hash.json's content (borrowed). 0, or ERR_INVALID with e naming the field. */
int world_replay_digest_parse(const json_t *j, struct world_digest *out, struct err *e);
/* The parts of now that differ from recorded, as words joined by ", " ("plan, calls") into out
 * (n bytes); returns how many differ (0: out is ""). The parts are named world, plan, calls
 * and ledger. */
int world_replay_digest_diff(const struct world_digest *recorded, const struct world_digest *now,
                             char *out, size_t n);

/* Rebuilds the world of spec (borrowed: a world's normal form) from the calls of ledger
 * (borrowed: a ledger.json's content), deciding each with s (the repetition's plan; NULL: no
 * fault). The replayed ledger (new reference), or NULL with e set: ERR_INVALID when the spec is
 * refused or the ledger is not shaped as a world writes it (the message names the field, e.g.
 * "calls[2].tool: expected a string"), ERR_LIMIT past WORLD_CALLS_MAX calls. */
json_t *world_replay_rebuild(const json_t *spec, const json_t *ledger, struct seam *s,
                             struct err *e);

struct world_replay_diff {
    uint64_t call;  /* the first differing call (1-based), 0 when the difference is not a call's */
    char tool[96];  /* its tool, "" when call is 0 */
    char what[600]; /* the path and both values */
};

/* Compares recorded and replayed (borrowed ledgers). 0 when they agree, 1 with *out filled
 * with the first difference. */
int world_replay_compare(const json_t *recorded, const json_t *replayed,
                         struct world_replay_diff *out);

#endif
