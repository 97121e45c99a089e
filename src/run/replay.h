/*
 * replay: `faultline replay RUN_DIR` over a run folder (docs/world.md, "Replay"). For one
 * repetition with a ledger.json: the world of run.json (experiment.world), the repetition's
 * plan.json (through a standalone seam: the plan engine in-process, with the sandbox the run
 * had) and the ledger's calls rebuild the world (world_replay_rebuild); the replayed ledger is
 * compared with the recorded one (world_replay_compare), then the invariant verdicts of both
 * (worldcheck_run, the scorer's functions), then the digest the runner recorded in
 * world-hash.json with the files' digest now (world_replay_digest: the parts that changed are
 * named).
 *
 * replay_record is the runner's side: it writes world-hash.json once the ledger is in the
 * repetition's folder.
 */
#ifndef FAULTLINE_RUN_REPLAY_H
#define FAULTLINE_RUN_REPLAY_H

#include <jansson.h>

#include "util/err.h"
#include "world/replay.h"

#define REPLAY_HASH_FILE "world-hash.json"

enum replay_status {
    REPLAY_REPRODUCED = 0, /* the same ledger, verdicts and digest */
    REPLAY_DIFFERS,        /* diff, verdict or changed says what */
    REPLAY_NO_LEDGER       /* the repetition has no ledger.json: nothing to replay */
};

struct replay_rep {
    enum replay_status status;
    int differs;                   /* the ledgers or verdicts differ: diff says where */
    struct world_replay_diff diff; /* the first difference (diff.call 0: not a call's) */
    int hash_known;                /* world-hash.json was there */
    char changed[64];              /* the parts whose digest changed ("plan, calls"), or "" */
    size_t ncalls, neffects;
    char failing[300]; /* the invariants that fail (recorded and replayed alike), or "" */
};

/* Replays repetition folder rep (its name, e.g. "rep-001") of run_dir against world (borrowed:
 * run.json's experiment.world). 0 with *out filled, or ERR_INVALID / ERR_LIMIT / ERR_IO /
 * ERR_PARSE with e naming the file (a ledger or plan that is malformed, missing or unreadable,
 * a world-hash.json that is not one), or ERR_SYS when the temporary folder the replayed
 * ledger is checked in cannot be made. */
int replay_rep(const char *run_dir, const char *rep, const json_t *world, struct replay_rep *out,
               struct err *e);

/* Writes repdir/world-hash.json (atomically) from repdir/ledger.json, repdir/plan.json and the
 * world of repdir/../run.json. 0, or ERR_IO / ERR_INVALID with e set. */
int replay_record(const char *repdir, struct err *e);

#endif
