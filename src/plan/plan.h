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

/* A call as seen by an injecting component. Fields may be NULL when they do not apply. */
struct plan_call {
    unsigned component; /* one enum catalog_injector bit: who is asking */
    const char *tool;   /* tool name as called (e.g. "mcp__fs__read" or "read") */
    const char *server; /* MCP server name */
    const char *host;   /* egress host */
    const char *model;  /* model name */
    json_t *args;       /* the call's arguments, for `when` (borrowed) */
};

struct plan_decision {
    int inject;                 /* 1: inject fault */
    size_t fault_index;         /* index into the plan's faults */
    const char *kind;           /* catalog id, e.g. "tool.error" (borrowed from the plan) */
    json_t *options;            /* the fault's options (borrowed from the plan) */
    uint64_t call_index;        /* index of this call among the fault's matching calls */
};

/* Builds the plan of repetition rep (0-based; repetitions < x->repeat are baselines with no
 * faults). seed_override applies when has_seed_override. run_id and canary are NULL to derive
 * them deterministically from (experiment hash, seed, rep). Caller frees with plan_free. */
struct plan *plan_build(const struct experiment *x, int rep, int has_seed_override,
                        uint64_t seed_override, const char *run_id, const char *canary,
                        struct err *e);
struct plan *plan_load(const char *path, struct err *e);
/* Parses a plan from JSON (borrowed). */
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

/* Decides for one call. Returns 0 and fills out (out->inject 0 or 1); ERR_INVALID on a bad
 * call. Updates the plan's counters. At most one fault is injected per call: the first fault,
 * in plan order, that matches and is due. */
int plan_decide(struct plan *p, const struct plan_call *c, struct plan_decision *out);

/* The pure selection function: 1 when probability says inject for this (seed, fault, key,
 * call index). Exposed for tests and benchmarks. */
int plan_select(uint64_t seed, size_t fault_index, const char *key, uint64_t call_index,
                double probability);
/* 1 when pattern matches name: exact, or a leading '*' matches by suffix. */
int plan_match_pattern(const char *pattern, const char *name);

#endif
