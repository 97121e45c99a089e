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

/* 1 when the probe id is one this scorer knows. */
int rules_probe_known(const char *id);
/* Evaluates probe p on repetition rep (a faulted one). */
void rules_probe(const struct rundir *r, const struct rundir_rep *rep, const struct repsum *s,
                 const struct rundir_probe *p, const struct rules_ctx *c, struct rule_out *out);

/* The invariants every repetition gets, in output order (NULL-terminated); the world-declared
 * ones (unique, approval, count) come after them, one per declaration (rules_world_invariant)
 * or, when the world declares none of a kind, one not evaluated (rules_world_missing). */
extern const char *const rules_invariant_ids[];
void rules_invariant(const struct rundir *r, const struct rundir_rep *rep, const struct repsum *s,
                     const char *id, struct rule_out *out);
/* The world's declaration number i (r->invs[i]). */
void rules_world_invariant(const struct rundir *r, const struct rundir_rep *rep,
                           const struct repsum *s, size_t i, struct rule_out *out);
/* "unique", "approval" or "count" when the world declares none of that kind. */
void rules_world_missing(const struct rundir *r, const char *id, struct rule_out *out);
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

/* The outcome class of a repetition, from the results computed above: the invariants in
 * rules_invariant_ids order (inv), the world declarations in r->invs order (winv), and the
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
