/*
 * rpt: the formats people and CI systems read, rendered from the report of one `faultline run`
 * (docs/report.md): a self-contained HTML page, Markdown for a pull-request comment, JUnit XML,
 * an SVG badge, and the JSON report itself.
 *
 * Every renderer reads the report JSON (run/report.h's layout: the runner's facts around the
 * canonical score `result`) and nothing else, except the HTML page, which also reads the run
 * folder's files for what the report only summarises (each repetition's events for its
 * timeline, agent.out for the final output, ledger.json), each under a size limit; a run folder
 * that is gone leaves those sections saying so.
 *
 * rpt_load makes the report from either input of `faultline report`: a report file (its result
 * re-scored from its run folder when that folder is still there, so an old run renders with
 * today's scorer) or a run folder (scored, the runner's facts read from its rep.json files).
 *
 * Strings from the run are hostile: every renderer escapes them for its format (HTML and XML
 * entities, Markdown table cells), and bytes that are not UTF-8 become U+FFFD.
 */
#ifndef FAULTLINE_REPORT_RPT_H
#define FAULTLINE_REPORT_RPT_H

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

/* RPT_OTLP is rendered on demand only: rpt_write_all writes HTML to the badge. */
enum rpt_format { RPT_JSON, RPT_HTML, RPT_MD, RPT_JUNIT, RPT_BADGE, RPT_OTLP, RPT_NFORMATS };

/* Markdown's hard cap (GitHub refuses comments over 65,536 characters). */
#define RPT_MD_MAX 65000
/* A report file read by rpt_load. */
#define RPT_REPORT_MAX ((size_t)64 << 20)
/* Events drawn one by one in a repetition's timeline; past it the timeline aggregates. */
#define RPT_TIMELINE_EVENTS 400
/* Events read per repetition for the timeline (the rest counted, not read). */
#define RPT_EVENTS_MAX 2000000
/* Bytes of the agent's final output shown (its end). */
#define RPT_OUTPUT_MAX (64 * 1024)

/* The format of name ("html", "md", "junit", "badge", "otlp", "json"): 0 with *f set, or
 * ERR_INVALID. */
int rpt_format_parse(const char *name, enum rpt_format *f);
const char *rpt_format_name(enum rpt_format f);
/* The file name suffix rpt_write_all gives the format: ".html", ".md", ".junit.xml",
 * ".badge.svg", ".json". */
const char *rpt_format_suffix(enum rpt_format f);

/*
 * The report of path, a report file or a run folder (see above); new reference, caller decrefs.
 * *run_dir (may be NULL) gets the run folder to read files from (caller frees), or NULL when
 * there is none. NULL with e set: unreadable, not JSON, not a report, not a run folder.
 */
json_t *rpt_load(const char *path, char **run_dir, struct err *e);

/* Appends the report rendered as f to out. run_dir (may be NULL) is the run folder the HTML
 * page reads. 0, or ERR_NOMEM / ERR_LIMIT (out's). */
int rpt_render(const json_t *report, const char *run_dir, enum rpt_format f, struct buf *out,
               struct err *e);

/* The file of format f next to the report file report_path: its name without ".json" plus
 * the format's suffix, into out. 0 or ERR_LIMIT. */
int rpt_path(const char *report_path, enum rpt_format f, char *out, size_t size);

/* Writes every format but JSON and OTLP next to the report file report_path (its name without
 * ".json" plus each suffix), atomically. 0 or the first error (the others are still tried). */
int rpt_write_all(const json_t *report, const char *report_path, const char *run_dir,
                  struct err *e);

/*
 * CI gates over a report (`faultline run --min-score N --min-pass-rate PROBE=R --fail-on
 * CLASS,...`, docs/report.md "CI gates"). A gate fails when the resilience score is under
 * min_score (or there is none), when a named probe's pass rate is under its rate (or it was
 * never evaluated), or when a repetition's outcome class is one of fail_on: HARMFUL_ACTION
 * always is (seed 002's critical override: whatever the pass rates), FLAKY is a class here too.
 * A run is FLAKY when the outcome classes of its faulted repetitions differ, or those of its
 * baselines do (rpt_flaky).
 */
#define RPT_GATE_RATES_MAX 32
#define RPT_GATE_FLAKY 31 /* the bit of fail_on for FLAKY (outcome classes are bits 0..) */

struct rpt_gate {
    int has_min_score;
    double min_score;
    struct {
        char probe[64];
        double rate;
    } rates[RPT_GATE_RATES_MAX];
    size_t nrates;
    unsigned fail_on; /* 1u << enum rules_outcome, and 1u << RPT_GATE_FLAKY */
    int asked;        /* a gate flag was given: without one the run keeps its verdict's code */
};

/* An empty gate but for HARMFUL_ACTION in fail_on. */
void rpt_gate_init(struct rpt_gate *g);
/* Adds PROBE=R (a catalog probe, R in [0, 1]). 0, or ERR_INVALID / ERR_LIMIT with e set. */
int rpt_gate_add_rate(struct rpt_gate *g, const char *arg, struct err *e);
/* Adds the comma-separated outcome classes of list (or FLAKY) to fail_on. 0 or ERR_INVALID. */
int rpt_gate_add_fail_on(struct rpt_gate *g, const char *list, struct err *e);
/* Checks report against g: the number of failed conditions (0: the gate passes), one line
 * per failure appended to why ("score 66.67 is under --min-score 80"). */
int rpt_gate_check(const struct rpt_gate *g, const json_t *report, struct buf *why);
/* 1 when the report is FLAKY (above), with the classes seen appended to why (may be NULL). */
int rpt_flaky(const json_t *report, struct buf *why);

/* One renderer each (rpt_render dispatches). */
int rpt_render_html(const json_t *report, const char *run_dir, struct buf *out);
int rpt_render_md(const json_t *report, struct buf *out);
int rpt_render_junit(const json_t *report, struct buf *out);
int rpt_render_badge(const json_t *report, struct buf *out);
/* OpenTelemetry traces of the run (src/report/otlp.c), read from run_dir's events. */
int rpt_render_otlp(const json_t *report, const char *run_dir, struct buf *out);

/* The HTML page frame every page of src/report shares (html.c): the head (the CSP that
 * forbids every request, the inline CSS, title escaped) and the foot (what, escaped). Both
 * append to out: 0 or out's error. */
int rpt_html_head(struct buf *out, const char *title);
int rpt_html_foot(struct buf *out, const char *what);

#endif
