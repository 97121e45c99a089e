/*
 * compare: two runs side by side (`faultline compare A B`, docs/compare.md), and a stored
 * report against the regrade of its run folder (`faultline score RUN_DIR --against R`).
 *
 * compare_load makes one side from either kind of argument:
 *
 *   digits (`12`)    the run of that id in the history database (its stored report_json)
 *   a file           a report as `faultline run` wrote it (format 1), taken as it is: not
 *                    re-scored, so the comparison is of what each run reported
 *   a folder         a run folder, scored (rpt_load: its rep.json files are the runner's facts)
 *
 * and reads the side's token counts from its run folder's events (the `usage` of each
 * model_response, COMPARE_EVENTS_MAX lines a repetition at most) when the folder is there.
 *
 * compare_build puts the two reports' figures in one JSON object (the `--json` output, its
 * layout in docs/compare.md): per figure {"a", "b", "change"}, null where a side has none.
 * Figures: the resilience score, each probe's pass rate (the union of both sides' probes), the
 * outcome counts, the cost (the repetitions' summed cost_usd), the cost multiplier (faulted
 * mean over baseline mean) and the tokens. Runs of different experiments (another name, or the
 * same name with another hash) are compared too, with a warning in the object.
 *
 * compare_check judges the regression gate (--max-score-drop, --max-cost-increase) over it.
 *
 * compare_drift walks a stored report and a regraded one and names each figure (a leaf of the
 * JSON) that differs: path, stored value, regraded value.
 */
#ifndef FAULTLINE_REPORT_COMPARE_H
#define FAULTLINE_REPORT_COMPARE_H

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

/* Event lines read per repetition for its tokens (past it the count says so). */
#define COMPARE_EVENTS_MAX 2000000
/* The report format this faultline reads. */
#define COMPARE_REPORT_FORMAT 1

struct compare_side {
    json_t *report;  /* owned */
    char *run_dir;   /* owned: the run folder the tokens were read from, or NULL */
    char label[320]; /* "run 12", "out/a.json", "out/a/" as given */
    int has_tokens;  /* the run folder was there and its events read */
    int tokens_cut;  /* some repetition had more than COMPARE_EVENTS_MAX lines */
    long long input_tokens, output_tokens;
};

/* Fills s from arg (see above). history is the database a run id is looked up in (NULL: a run
 * id is an error); it is opened only then, and never created. 0, or ERR_NOTFOUND (no such
 * file, folder or run id), ERR_PARSE (not JSON: FILE:LINE:COL), ERR_INVALID (not a report,
 * a report of another format), ERR_IO (the history cannot be read) with e set. On an error s
 * holds nothing to release. */
int compare_load(const char *arg, const char *history, struct compare_side *s, struct err *e);
void compare_side_release(struct compare_side *s);

/* A report file read and checked as compare_load reads one (not re-scored). New reference;
 * NULL with e set (the errors of compare_load). */
json_t *compare_read_report(const char *path, struct err *e);

/* The comparison of a and b (borrowed) as JSON (new reference, caller decrefs). */
json_t *compare_build(const struct compare_side *a, const struct compare_side *b);

struct compare_gate {
    int has_score_drop;
    double max_score_drop; /* points of resilience score */
    int has_cost_increase;
    double max_cost_increase; /* percent of A's cost */
};

/* The failed conditions of g over cmp (compare_build's), one line each appended to why
 * ("resilience score dropped 50.00 points (100.00 to 50.00), over --max-score-drop 10"):
 * their number, 0 when the gate holds (or none was asked). */
int compare_check(const json_t *cmp, const struct compare_gate *g, struct buf *why);

/* cmp as a table for people, or as Markdown (every run string escaped). 0 (a few KiB: out's
 * limit is never near). */
int compare_render_text(const json_t *cmp, struct buf *out);
int compare_render_md(const json_t *cmp, struct buf *out);

/*
 * The figures of stored (a report) that differ from regraded (the same report with its result
 * and the result's top-level copies replaced by a regrade): the result, verdict,
 * verdict_reason, resilience_score and warnings are walked; arrays of objects with distinct
 * "id"s are matched by id (`result.probes[task_success].pass_rate`), other arrays by index,
 * numbers by value. Each difference is appended to diffs (a JSON array, borrowed) as
 * {"path", "stored", "regraded"} (a side that has no such figure is null there and "absent"
 * in the text). Returns the number of differences; *figures (may be NULL) gets the number of
 * figures compared.
 */
size_t compare_drift(const json_t *stored, const json_t *regraded, json_t *diffs, size_t *figures);
/* One line per difference of diffs: `PATH: stored VALUE, regraded VALUE` (values as JSON,
 * cut at 200 bytes). 0. */
int compare_drift_text(const json_t *diffs, struct buf *out);

#endif
