/*
 * index: the campaign index of `faultline report --index DIR...` and `--index-history`
 * (docs/report.md "The campaign index"): one row per run, newest first, with its verdict,
 * resilience score, outcome mix (the count of each outcome class), cost and a link to its
 * report, rendered as one self-contained HTML page (html.c's frame and CSP), Markdown or JSON.
 *
 * Entries: rpt_index_add_path takes a report file, a run folder, or a folder holding reports
 * and run folders one level down (each *.json a report; each sub-folder with a run.json a run
 * folder, unless its report FOLDER.json sits next to it: that report stands for it). An entry
 * that cannot be read or is not a report is an error of its own (rpt_index's errors) and the
 * others are still indexed. rpt_index_add_history takes the runs of the history database.
 *
 * Links: to the entry's report in the index's format (REPORT.html for HTML, REPORT.md for
 * Markdown) when that file exists, else to the JSON report, else to the run folder; relative
 * to the folder of the index file (or the working directory) when both paths resolve, and
 * percent-encoded, so a hostile file name can be neither markup nor a URL scheme.
 */
#ifndef FAULTLINE_REPORT_INDEX_H
#define FAULTLINE_REPORT_INDEX_H

#include <jansson.h>

#include "report/rpt.h"
#include "util/buf.h"
#include "util/err.h"

/* Entries read per --index DIR (one level down) and rows rendered at most. */
#define RPT_INDEX_ENTRIES_MAX 10000

struct rpt_index {
    json_t *rows;   /* the rows (rpt_index_row), in the order added */
    json_t *errors; /* {"entry", "error"} per entry that could not be indexed */
    enum rpt_format format;
    char base[4096]; /* the folder links are relative to, resolved ("" when it does not) */
};

/* An empty index rendered as f (RPT_HTML, RPT_MD or RPT_JSON) into a file at out_path (NULL:
 * stdout, links relative to the working directory). Release with rpt_index_release. */
void rpt_index_init(struct rpt_index *ix, enum rpt_format f, const char *out_path);
void rpt_index_release(struct rpt_index *ix);

/*
 * The row of report (borrowed): {"experiment", "status", "verdict", "resilience_score" (or
 * null), "flaky", "repetitions", "outcomes" {CLASS: n, the classes seen}, "cost_usd" (the sum
 * of the repetitions'), "when" (seconds since the epoch), "source", "link" (or null),
 * "history_id" (or null)}. New reference; caller decrefs.
 */
json_t *rpt_index_row(const json_t *report, const char *source, const char *link, long long when,
                      long long history_id);

/* Adds the entries of path (above). The number of rows added; errors are recorded in ix. */
int rpt_index_add_path(struct rpt_index *ix, const char *path);
/* Adds the runs of the history database at db (newest first, at most limit, of experiment
 * name or all). The number of rows added, or ERR_IO / ERR_NOTFOUND with e set when the
 * database cannot be read; a run whose stored report does not parse is an error entry. */
int rpt_index_add_history(struct rpt_index *ix, const char *db, const char *experiment, int limit,
                          struct err *e);

/* Sorts the rows newest first (then by source) and appends the index in ix's format to out.
 * 0, or out's error. */
int rpt_index_render(struct rpt_index *ix, struct buf *out);

/* Appends the percent-encoding of path as a URL path (bytes but A-Z a-z 0-9 - . _ ~ / as %XX).
 * 0 or out's error. */
int rpt_index_url(struct buf *out, const char *path);

#endif
