/*
 * world: a simulated backend with an append-only effect ledger (seed 004, docs/world.md).
 *
 * A world is built from the normal form of an experiment's `world:` (experiment_world_load /
 * experiment->world): tools with an input JSON Schema (util/jschema.h) and an effect model
 * (collection, business_key, dedupe_key, op, balance), read tools, an initial state, an
 * objective, approval (fixed), a call budget. world_call applies one call and answers it; every
 * call is recorded (tool, arguments, outcome, the fault that touched it) and every effect is an
 * entry of the ledger (tool, collection, business and dedupe key values, arguments, result,
 * time, fault, deduplicated or not). Nothing here does I/O but world_ledger_save, knows MCP
 * or decides faults: the server (serve.h) asks the plan and tells world_call what it decided.
 *
 * Effect model, per call of a tool with an effect:
 *   a tool.* fault answers instead    -> WORLD_WITHHELD (WORLD_FAULT_WITHHELD), nothing
 *                                        recorded but the call, reads too
 *   args break input_schema           -> WORLD_INVALID_ARGS, nothing recorded but the call
 *   world closed (the report tool)    -> WORLD_CLOSED
 *   budget spent (max_calls, or more than deadline_s since the first call)
 *                                     -> WORLD_BUDGET
 *   dedupe key seen, same arguments   -> a deduplicated entry (no state change), the first
 *                                        entry's result
 *   dedupe key seen, other arguments  -> WORLD_CONFLICT (IDEMPOTENCY_CONFLICT), nothing recorded
 *   else                              -> op: append a record / update / delete the record with
 *                                        the same business key (none: WORLD_NOT_FOUND); an
 *                                        entry; the result
 *
 * Memory: linear in calls and effects: a call keeps its arguments (a reference to the request's
 * tree, not a copy), its entries share them, a record is a shallow copy (its own object, the
 * arguments' values), an entry keeps its result (a deduplicated one shares the first's); at most
 * WORLD_CALLS_MAX calls and WORLD_EFFECTS_MAX entries, past which calls fail (WORLD_FULL).
 * Not thread-safe.
 */
#ifndef FAULTLINE_WORLD_WORLD_H
#define FAULTLINE_WORLD_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/err.h"

#define WORLD_CALLS_MAX 1000000
#define WORLD_EFFECTS_MAX 100000

struct world;

enum world_status {
    WORLD_OK = 0,
    WORLD_INVALID_ARGS, /* the arguments break the tool's input_schema */
    WORLD_CONFLICT,     /* IDEMPOTENCY_CONFLICT: a dedupe key reused with other arguments */
    WORLD_CLOSED,       /* the report tool closed the world to further effects */
    WORLD_BUDGET,       /* max_calls spent */
    WORLD_FULL,         /* WORLD_CALLS_MAX / WORLD_EFFECTS_MAX reached */
    WORLD_NO_TOOL,      /* no such tool */
    WORLD_TIMEOUT,      /* an effect.timeout_* fault: the call timed out (before or after) */
    WORLD_NOT_FOUND,    /* update / delete: no record with that business key */
    WORLD_WITHHELD      /* a tool.* fault answers instead of the world (tool.error, ...) */
};

/* How the plan's fault changes the call (the server fills it from its decision). */
enum world_fault_mode {
    WORLD_FAULT_NONE = 0,
    WORLD_FAULT_TIMEOUT_BEFORE, /* effect.timeout_before_effect: nothing applied, timed out */
    WORLD_FAULT_TIMEOUT_AFTER,  /* effect.timeout_after_effect: applied, then timed out */
    WORLD_FAULT_DUPLICATE,      /* effect.duplicate_delivery: applied `copies` times */
    WORLD_FAULT_OTHER,          /* a fault that changes the answer (tool.silent_wrong_data,
                                   inject.tool_result): applied as usual, recorded on the call */
    WORLD_FAULT_WITHHELD        /* a fault that answers instead (tool.error, tool.timeout,
                                   tool.stale_data): the call never reaches the world's state,
                                   recorded (outcome withheld), no effect, reads too */
};

struct world_call {
    const char *tool;
    json_t *args;      /* borrowed; NULL is {} */
    const char *fault; /* the fault's catalog id, or NULL */
    enum world_fault_mode mode;
    int copies;   /* WORLD_FAULT_DUPLICATE: 2..10 */
    int64_t t_ms; /* the call's time (wall clock, ms), recorded */
};

struct world_reply {
    enum world_status status;
    json_t *result;     /* WORLD_OK: the structured result (new reference); else NULL */
    char message[512];  /* not WORLD_OK: the error, CODE first ("IDEMPOTENCY_CONFLICT: ...") */
    size_t first_entry; /* the entries this call appended: [first_entry, world_nentries) */
    const char *text;   /* WORLD_OK: result as compact JSON with sorted keys (what the answer
                           hash is of), borrowed until the next world_call; else NULL */
    size_t text_len;
};

/* One ledger entry. Strings are owned by the world; valid until world_free. */
struct world_entry {
    uint64_t call;                   /* 1-based index of the call that made it */
    char id[32];                     /* "COLLECTION-N", N counting the collection's entries */
    const char *tool, *collection;   /* borrowed from the world's tools */
    const char *op;                  /* "append", "update", "delete" */
    char *business_key, *dedupe_key; /* the arguments' values as text, or NULL */
    json_t *args, *result;
    int64_t t_ms;
    const char *fault; /* catalog id (static storage of the catalog or the world), or NULL */
    int deduplicated;  /* a no-op: the dedupe key's first entry answered */
    int approved;
};

/* Builds a world from spec (borrowed: the normal form docs/world.md describes). NULL with e set
 * (ERR_INVALID) when a schema is refused or the shape is wrong: a spec that came through
 * experiment_world_load never is. Caller frees with world_free. */
struct world *world_new(const json_t *spec, struct err *e);
void world_free(struct world *w);

const char *world_name(const struct world *w);
int world_approved(const struct world *w);
int world_closed(const struct world *w);
/* The tools/list array (new reference): each tool with name, description and inputSchema,
 * then NAME_context and NAME_report. */
json_t *world_tools_json(const struct world *w);
/* NAME_context's answer (new reference): objective, approval and the tool contract (effects
 * and their keys), never a fault. */
json_t *world_context_json(const struct world *w);
/* 1 when name is a tool of the world (its own tools only, not context and report). */
int world_has_tool(const struct world *w, const char *name);
/* The first successful answer of tool name (borrowed; tool.stale_data returns it again), or
 * NULL when it has answered none yet. */
const json_t *world_first_result(const struct world *w, const char *name);

/* Applies one call (see the table above). Always fills *out; out->result is the caller's. */
void world_call(struct world *w, const struct world_call *c, struct world_reply *out);
/* NAME_report: records the agent's report (borrowed) and closes the world (a later report
 * replaces the recorded one; the world closed at the first). */
void world_report(struct world *w, const json_t *report);

size_t world_ncalls(const struct world *w);
size_t world_nentries(const struct world *w);
/* Entry i (< world_nentries), borrowed. */
const struct world_entry *world_entry(const struct world *w, size_t i);

/* The state now (new reference): {"collections": {NAME: [records]}, "balances": {NAME: sum}}. */
json_t *world_snapshot_json(const struct world *w);
/* The ledger (new reference): {"world", "approved", "closed", "closed_after" (the calls made
 * before the first report), "report", "calls": [...] (each with "answer": the hash64, 16 hex
 * digits, of its result's compact JSON with sorted keys, or of its error message),
 * "effects": [...], "snapshot"}; docs/world.md
 * gives every field. Its calls' and entries' values are copies (the world shares a call's
 * arguments between the call and its entries), so a caller may edit one alone. */
json_t *world_ledger_json(const struct world *w);
/* Writes world_ledger_json to path atomically (temporary file and rename). 0 or ERR_IO. */
int world_ledger_save(const struct world *w, const char *path, struct err *e);

#endif
