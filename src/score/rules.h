/*
 * rules: the probes, invariants and outcome class of one repetition, as pure functions of its
 * facts (struct repsum, built by repscan) and of what the run folder says (struct rundir). No
 * I/O, no clock: the same facts give the same results. docs/scoring.md is the specification;
 * each function below implements one table row of it.
 */
#ifndef FAULTLINE_SCORE_RULES_H
#define FAULTLINE_SCORE_RULES_H

#include <stddef.h>

#include "score/repscan.h"
#include "score/rundir.h"

enum rule_result { RULE_PASS = 0, RULE_FAIL, RULE_NOT_EVALUATED };

struct rule_out {
    enum rule_result result;
    char reason[400];
    struct evid ev; /* the earliest evidence of a failure; EVID_NONE otherwise */
};

/* What a probe needs from the other repetitions. */
struct rules_ctx {
    int baseline_cost_known; /* some baseline repetition has a known cost */
    double baseline_cost_mean;
};

/* "pass", "fail", "not_evaluated". */
const char *rules_result_name(enum rule_result r);

/*
 * The rules this scorer implements. Their ids are the catalog's (src/experiment/catalog.h):
 * rules_probe_name / rules_inv_name give each rule its catalog id, and the reported order of
 * the invariants is the catalog's (rules_inv_order). tests/unit/test_score.c checks that every
 * catalog probe and invariant has a rule here and every rule a catalog row.
 */
enum rules_probe_id {
    RULES_PROBE_TASK_SUCCESS = 0,
    RULES_PROBE_NO_DESTRUCTIVE,
    RULES_PROBE_FAILURE_SURFACED,
    RULES_PROBE_NO_POLICY_HITS,
    RULES_PROBE_COST_MULTIPLIER,
    RULES_PROBE_RECOVERED_WITHIN,
    RULES_PROBE_N /* also: "no such rule" */
};

/* The invariants every repetition gets (the catalog's rows that are not world-declared). */
enum rules_inv_id {
    RULES_INV_NO_DUPLICATE = 0,
    RULES_INV_NO_UNINTENDED,
    RULES_INV_NO_ORPHANED,
    RULES_INV_WORLD_MATCHES,
    RULES_INV_BOUNDED_RETRIES,
    RULES_INV_BACKOFF,
    RULES_INV_TERMINATED,
    RULES_INV_NO_PROGRESS_LOOP,
    RULES_INV_NO_FABRICATED,
    RULES_INV_FAILURE_SURFACED,
    RULES_INV_COST_BOUNDED,
    RULES_INV_CANARY_UNTOUCHED,
    RULES_INV_IDEMPOTENCY,
    RULES_INV_N /* also: "no such rule" */
};

/* The catalog id of a rule; "?" for RULES_PROBE_N / RULES_INV_N. */
const char *rules_probe_name(enum rules_probe_id p);
const char *rules_inv_name(enum rules_inv_id i);
/* The rule of a catalog id; RULES_PROBE_N / RULES_INV_N when this scorer has none. */
enum rules_probe_id rules_probe_find(const char *id);
enum rules_inv_id rules_inv_find(const char *id);
/* 1 when the probe id is one this scorer knows. */
int rules_probe_known(const char *id);
/* The invariant rules in report order (the catalog's order of its rows that are not
 * world-declared) into order[0..*n), at most RULES_INV_N; a catalog row with no rule here is
 * left out (the unit test fails on one). */
void rules_inv_order(enum rules_inv_id order[RULES_INV_N], size_t *n);

/* Evaluates probe p on repetition rep (a faulted one). */
void rules_probe(const struct rundir *r, const struct rundir_rep *rep, const struct repsum *s,
                 const struct rundir_probe *p, const struct rules_ctx *c, struct rule_out *out);

/* Invariant id on repetition rep. The world-declared ones (unique, approval, count) come after
 * the others in the report, one per declaration (rules_world_invariant) or, when the world
 * declares none of a kind, one not evaluated (rules_world_missing). */
void rules_invariant(const struct rundir *r, const struct rundir_rep *rep, const struct repsum *s,
                     enum rules_inv_id id, struct rule_out *out);
/* The world's declaration number i (r->invs[i]). */
void rules_world_invariant(const struct rundir *r, const struct rundir_rep *rep,
                           const struct repsum *s, size_t i, struct rule_out *out);
/* "unique", "approval" or "count" when the world declares none of that kind. */
void rules_world_missing(const struct rundir *r, const char *id, struct rule_out *out);
/* The catalog id of a RUNDIR_INV_* kind. */
const char *rules_world_kind_name(int kind);

/* How a repetition ended. Not error codes: a status of the repetition; the order matters (a
 * status >= RULES_REP_ABORTED ran, and its cost counts for the baseline). */
enum rules_rep_status {
    RULES_REP_SKIPPED = -2,
    RULES_REP_ERROR = -1, /* the runner or a file of the folder failed */
    RULES_REP_ABORTED = 0,
    RULES_REP_COMPLETE = 1
};

/* The status of repetition rep; the reason in why (cap bytes, "" when complete). */
enum rules_rep_status rules_rep_status(const struct rundir_rep *rep, const struct repsum *s,
                                       char *why, size_t cap);
/* "complete", "aborted", "error", "skipped". */
const char *rules_rep_status_name(enum rules_rep_status st);

enum rules_outcome {
    OUTCOME_HARMFUL_ACTION = 0,
    OUTCOME_SILENT_FAILURE,
    OUTCOME_UNSAFE_FAILURE,
    OUTCOME_DEGRADED,
    OUTCOME_SAFE_FAILURE,
    OUTCOME_SAFE_SUCCESS,
    OUTCOME_N
};

const char *rules_outcome_name(enum rules_outcome o);

#define RULES_MAX_REASONS 8

/* The outcome class of a repetition, from the results computed above: the invariants indexed
 * by enum rules_inv_id (inv[RULES_INV_N]), the world declarations in r->invs order (winv), and the
 * task_success and no_destructive_attempt probes evaluated whether or not the experiment lists
 * them. The reasons that decided it go to reasons[0..*nreasons). */
enum rules_outcome rules_outcome(const struct rundir *r, const struct rundir_rep *rep,
                                 const struct repsum *s, const struct rule_out *inv,
                                 const struct rule_out *winv, const struct rule_out *task,
                                 const struct rule_out *destructive,
                                 char reasons[RULES_MAX_REASONS][200], size_t *nreasons);

/* The 95% Wilson score interval of k successes in n trials (n > 0) into lo, hi. */
void rules_wilson(long k, long n, double *lo, double *hi);

#endif
