/*
 * score: scores a run folder (docs/run-folder.md) into the result the runner embeds in its
 * report (docs/scoring.md): per repetition the probes, invariants, recovery metrics and outcome
 * class; for the run the probe pass rates with Wilson intervals, the resilience score, the
 * verdict and the silence warnings.
 *
 * score_compute runs four stages over one struct score_result, each filling its own part:
 *
 *   stage      fills                                  from
 *   scan       reps[i].sum, status, evaluated         the folder (rundir_load, repscan_run)
 *   rules      reps[i].probes, invs, outcome          the facts (rules.h)
 *   aggregate  probes, invs, score, outcomes,         the repetitions' results
 *              warnings
 *   verdict    verdict, verdict_reason                the run status and the aggregates
 *
 * Renderers read the struct and nothing else: score_render_json (the canonical JSON) and
 * score_render_text (a summary for people); HTML, Markdown or JUnit renderers are new
 * functions over the same struct.
 *
 * Reads only files: any folder can be re-scored later. The result is canonical: the same folder
 * gives the same JSON (no clock, no absolute paths, rounded numbers, sorted keys when dumped
 * with score_dump). Strings of the result that came from input are valid UTF-8 (bytes of
 * an invalid string become '?'), so every renderer prints the same text.
 */
#ifndef FAULTLINE_SCORE_SCORE_H
#define FAULTLINE_SCORE_SCORE_H

#include <jansson.h>

#include "score/repscan.h"
#include "score/rules.h"
#include "score/rundir.h"
#include "util/buf.h"
#include "util/err.h"

enum score_verdict { SCORE_SCORED = 0, SCORE_ABORTED = 1, SCORE_INVALID = 2 };

/* One probe or invariant result of a repetition, as reported. */
struct score_rule {
    const char *id; /* borrowed: the rules' name table or the result's run */
    struct rule_out out;
    const struct rundir_probe *probe;    /* a probe: its row (value), else NULL */
    const struct rundir_world_inv *decl; /* a world declaration (params), else NULL */
};

struct score_rep {
    const struct rundir_rep *rep; /* borrowed from the result's run */
    /* scan */
    int evaluated; /* its streams were read (plan read, not skipped) */
    struct repsum sum;
    enum rules_rep_status status;
    char status_reason[400];
    /* rules (evaluated repetitions only) */
    struct rule_out task, destructive; /* evaluated whether or not the experiment lists them */
    struct score_rule *probes;         /* run.nprobes of them when faulted, else none */
    size_t nprobes;
    struct score_rule *invs; /* every invariant in report order */
    size_t ninvs;
    enum rules_outcome outcome;
    char reasons[RULES_MAX_REASONS][200];
    size_t nreasons;
};

/* A rule over the repetitions that evaluated it. */
struct score_agg {
    long evaluated, passed, failed;
};

struct score_probe_agg {
    const struct rundir_probe *probe; /* borrowed from the result's run */
    struct score_agg agg;
    double rate, lo, hi; /* rounded; meaningful when agg.evaluated > 0 */
};

struct score_inv_agg {
    const char *id;
    const struct rundir_world_inv *decl; /* a world declaration, else NULL */
    struct score_agg agg;
};

/* What a warning lists per repetition (reps[] of the result, by position). */
enum score_wreps { SCORE_WREPS_NONE, SCORE_WREPS_DIRS, SCORE_WREPS_COUNTS };

struct score_warning {
    const char *code; /* static */
    char message[600];
    int has_fault; /* fault_index and fault are set */
    int fault_index;
    char fault[64];
    unsigned injectors; /* enum evkind_src bits, listed when nonzero */
    int has_count;
    long count;
    enum score_wreps reps_kind;
    long *per_rep; /* DIRS: nonzero marks; COUNTS: the count (0: not listed); else NULL */
};

struct score_result {
    struct rundir run;
    struct score_rep *reps; /* run.nreps */
    /* rules */
    struct rules_ctx ctx; /* the baseline cost the probes compare with */
    /* aggregate */
    struct score_probe_agg *probes; /* run.nprobes */
    struct score_inv_agg *invs;     /* the invariants every repetition gets, then the world's */
    size_t ninvs;
    double weight_sum, weighted_rate; /* over the probes evaluated at least once */
    double weight_total;              /* every probe's weight: the share covered is sum/total */
    int has_score;                    /* set by the verdict: none when it is invalid */
    double score;                     /* rounded to 2 decimals */
    long outcomes[OUTCOME_N];
    long malformed;
    struct score_warning *warnings; /* sorted: code, fault index, message */
    size_t nwarnings;
    /* verdict */
    enum score_verdict verdict;
    char verdict_reason[600];
};

/*
 * Scores the run folder dir: the four stages above. Returns the result (caller frees with
 * score_result_free), or NULL with e set when the folder cannot be read (no run.json,
 * malformed run.json, unknown format).
 */
struct score_result *score_compute(const char *dir, struct err *e);
void score_result_free(struct score_result *res);

/* x rounded to decimals (never -0): the one rounding of the result's numbers. */
double score_round(double x, int decimals);

/* The exit code of the verdict: 0 scored, 1 aborted, 2 invalid. */
int score_exit_code(const struct score_result *res);
/* "scored", "aborted", "invalid". */
const char *score_verdict_name(enum score_verdict v);

/* The canonical JSON of res (docs/scoring.md); new reference, caller decrefs. */
json_t *score_render_json(const struct score_result *res);
/* Appends a summary of res for people to out. */
void score_render_text(const struct score_result *res, struct buf *out);

/* score_compute then score_render_json: the result as JSON (new reference; caller decrefs),
 * *exit_code set to the verdict's. NULL with e set (and exit code 1) as score_compute. */
json_t *score_run(const char *dir, int *exit_code, struct err *e);

/* Appends the canonical text of result (sorted keys, 2-space indent, newline) to out. 0, or
 * ERR_NOMEM, or out's error. */
int score_dump(const json_t *result, struct buf *out);

#endif
