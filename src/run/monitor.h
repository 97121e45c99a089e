/*
 * monitor: the abort monitor of a repetition (seed 000, "Abort conditions"; docs/run.md). It
 * follows the controller's live events file and keeps what the conditions need:
 *
 *   destructive_attempt  a gate_decision event with tier "destructive" (blocked or not)
 *   cost_usd_above       the summed cost_usd of model_response events passes the ceiling, or
 *                        the controller wrote its own abort event for it (it refuses further
 *                        model calls then, and the runner stops the sandbox)
 *   wall_clock_s_above   the agent has run longer than the limit (the caller's clock)
 *
 * The runner calls monitor_poll at least once a second while the agent runs, then
 * monitor_check; it also reads the highest seq written so that its own events (agent_exit,
 * verify, abort, run_end), appended after the controller stopped, continue the file's order.
 * The file is read through events_next_view in follow mode: bounded memory, a half-written
 * last line is held back, malformed lines are counted and skipped.
 */
#ifndef FAULTLINE_RUN_MONITOR_H
#define FAULTLINE_RUN_MONITOR_H

#include <stdint.h>

#include "experiment/experiment.h"
#include "util/err.h"

struct events_reader;

/* MCP shims followed from their plan_loaded to their component_end (the rest are counted). */
#define MONITOR_SHIMS_MAX 64

struct monitor_shim {
    long long pid; /* in the sandbox's PID namespace */
    int ended;
};

struct monitor {
    char path[4096];
    struct events_reader *r; /* NULL until the file exists */
    double cost_usd;         /* summed model_response cost_usd */
    /* summed model_response usage: input (with the cache's creation and reads), output */
    long long input_tokens, output_tokens;
    int destructive;      /* a destructive-tier gate decision was seen */
    int controller_abort; /* the controller wrote an abort event */
    char controller_reason[32];
    long long max_seq; /* highest seq read, -1 before any */
    long long events;  /* well-formed events read */
    struct monitor_shim shims[MONITOR_SHIMS_MAX];
    int nshims;
};

/* What monitor_check found. */
struct monitor_abort {
    const char *reason; /* "destructive_attempt", "cost_usd_above", "wall_clock_s_above"; NULL:
                         * no condition is met */
    double value, limit;
    int by_controller; /* the controller already wrote the abort event */
    char detail[200];
};

/* Follows path (it need not exist yet). 0 or ERR_LIMIT (path too long). */
int monitor_init(struct monitor *m, const char *path, struct err *e);
void monitor_release(struct monitor *m);
/* Reads what was appended since the last call. 0, or ERR_IO with e set. */
int monitor_poll(struct monitor *m, struct err *e);
/* Checks the conditions of a against what was read and elapsed_s, the agent's run time so
 * far. Returns 1 with *out filled when one is met (the first of destructive_attempt,
 * cost_usd_above, wall_clock_s_above), 0 otherwise. */
int monitor_check(const struct monitor *m, const struct experiment_abort *a, double elapsed_s,
                  struct monitor_abort *out);

/* How many MCP shims wrote their plan_loaded and not yet their component_end; *first (may be
 * NULL) gets the first of them. */
int monitor_shims_open(const struct monitor *m, const struct monitor_shim **first);

#endif
