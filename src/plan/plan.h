/*
 * plan: the per-repetition fault plan and the deterministic decision engine.
 *
 * A plan (JSON, docs/plan.md) holds the run id, canary, seed, faulted flag, the faults with
 * their match/when/after_calls/times/probability/options and injectors, abort conditions and a
 * policy snapshot path. plan_decide() answers "inject fault F into this call?" for one
 * component. Counters (after_calls, times) live in the struct plan: one place per repetition
 * (the controller, or a standalone process). Probability is decided by hash64 of (seed, fault
 * index, match key, call index) only: no clock and no RNG state, so the same inputs decide the
 * same in any process and any interleaving.
 */
#ifndef FAULTLINE_PLAN_PLAN_H
#define FAULTLINE_PLAN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "experiment/experiment.h"
#include "util/err.h"

struct plan;

/* Longest tool, server, host or model name (bytes) plan_decide accepts in a call or a pattern. */
#define PLAN_NAME_MAX 1024
/* Most faults in one plan. */
#define PLAN_FAULTS_MAX 64

/* A call as seen by an injecting component. Fields may be NULL when they do not apply. */
struct plan_call {
    unsigned component; /* one enum catalog_injector bit: who is asking */
    const char *tool;   /* tool name as called (e.g. "mcp__fs__read" or "read") */
    const char *server; /* MCP server name */
    const char *host;   /* egress host */
    const char *model;  /* model name */
    json_t *args;       /* the call's arguments, for `when` (borrowed) */
    /* 1-based count of this call among all tool calls of the asking component's session
     * (the MCP shim counts every tools/call it relays), 0 when unknown: tool.auth_expiry's
     * from_call counts in it (in the fault's own matching calls when 0). */
    uint64_t session_call;
};

struct plan_decision {
    int inject;          /* 1: inject fault */
    size_t fault_index;  /* index into the plan's faults */
    const char *kind;    /* catalog id, e.g. "tool.error" (borrowed from the plan) */
    json_t *options;     /* the fault's options (borrowed from the plan) */
    uint64_t call_index; /* index of this call among the fault's matching calls */
};

/* Builds the plan of repetition rep (0-based; repetitions < x->repeat are baselines with no
 * faults). seed_override applies when has_seed_override. run_id and canary are NULL to derive
 * them deterministically from (experiment hash, seed, rep). Caller frees with plan_free. */
struct plan *plan_build(const struct experiment *x, int rep, int has_seed_override,
                        uint64_t seed_override, const char *run_id, const char *canary,
                        struct err *e);
/* Reads and validates a plan file (at most 16 MiB). NULL with e set: ERR_IO (cannot read),
 * ERR_PARSE ("PATH:LINE:COL: message" for bad JSON), ERR_INVALID/ERR_LIMIT (a field breaks
 * docs/plan.md; the message names it, e.g. "faults[0].when.matches: ..."), among them a kind
 * the catalog does not hold and an option its row does not define or whose value
 * catalog_option_check refuses ("faults[0].options.status: expected one of 500, 502, 503, 529"). */
struct plan *plan_load(const char *path, struct err *e);
/* Parses and validates a plan from JSON (borrowed; the plan keeps copies). Errors as plan_load. */
struct plan *plan_from_json(json_t *j, struct err *e);
/* New reference. */
json_t *plan_to_json(const struct plan *p);
void plan_free(struct plan *p);

const char *plan_run_id(const struct plan *p);
const char *plan_canary(const struct plan *p);
uint64_t plan_seed(const struct plan *p);
int plan_faulted(const struct plan *p);
size_t plan_nfaults(const struct plan *p);
/* Union of the injector bits of the plan's faults. */
unsigned plan_injectors(const struct plan *p);
double plan_cost_ceiling(const struct plan *p);

/* Decides for one call. Returns 0 and fills out (out->inject 0 or 1; when 0, kind and options
 * are NULL); ERR_INVALID on a bad call (NULL, component not exactly one injector bit, a name
 * over PLAN_NAME_MAX bytes), with *out cleared and no counter touched. Updates the plan's
 * counters. At most one fault is injected per call: the first fault, in plan order, that matches
 * and is due (docs/plan.md). Allocates nothing; not thread-safe (one plan, one thread). */
int plan_decide(struct plan *p, const struct plan_call *c, struct plan_decision *out);

/* The policy snapshot path the repetition runs with (docs/plan.md `policy_snapshot`): NULL, or a
 * copy of path is kept. Borrowed result, valid until the plan is freed or the path is set again. */
void plan_set_policy_snapshot(struct plan *p, const char *path);
const char *plan_policy_snapshot(const struct plan *p);
/* Repetition index (plan `rep`). */
int plan_rep(const struct plan *p);
/* Abort conditions: destructive_attempt listed (1/0); wall clock limit in seconds (0 = none). */
int plan_abort_destructive(const struct plan *p);
double plan_wall_clock_limit(const struct plan *p);

/* Per fault (i < plan_nfaults): catalog id (borrowed), injector bits, 1 when mutating, options
 * (borrowed, never NULL), and the counters plan_decide keeps. Out-of-range i: NULL / 0. */
const char *plan_fault_kind(const struct plan *p, size_t i);
unsigned plan_fault_injectors(const struct plan *p, size_t i);
int plan_fault_mutating(const struct plan *p, size_t i);
json_t *plan_fault_options(const struct plan *p, size_t i);
/* Its match.host pattern as written (borrowed), NULL when it has none or i is out of range. */
const char *plan_fault_host(const struct plan *p, size_t i);
void plan_fault_counters(const struct plan *p, size_t i, uint64_t *matched, uint64_t *injected);

/* The plan as text: indented JSON (2 spaces, numbers with 15 significant digits) and a final
 * newline. Caller frees with free(). What `faultline plan` prints and plan_save writes. */
char *plan_dump(const struct plan *p);
/* Writes plan_dump to path atomically. 0 or ERR_IO. */
int plan_save(const struct plan *p, const char *path, struct err *e);

/* Injector names as in the plan and the control API ("controller-model", "controller-egress",
 * "mcp", "gate", "world"): the bit of a name (0 when unknown), the name of one bit (NULL when
 * not exactly one known bit). */
unsigned plan_injector_parse(const char *name);
const char *plan_injector_name(unsigned bit);

/* The match key of a call (docs/plan.md): canonical tool name (mcp__server__tool when the server
 * is known), else the host (lowercased, no trailing dot), else the model, else "". Written into
 * out (always NUL-terminated when size > 0); returns its length, or ERR_LIMIT when it does not
 * fit (out then holds a truncated key). For the `target` of fault_injected events. */
int plan_call_key(const struct plan_call *c, char *out, size_t size);

/* The pure selection function: 1 when probability says inject for this (seed, fault, key,
 * call index). Exposed for tests and benchmarks. */
int plan_select(uint64_t seed, size_t fault_index, const char *key, uint64_t call_index,
                double probability);
/* 1 when pattern matches name: exact, or a leading '*' matches by suffix. */
int plan_match_pattern(const char *pattern, const char *name);

#endif
