/*
 * md: rpt_render_md (rpt.h), Markdown for a pull-request comment: the verdict and score, the
 * probe table, the outcome counts, the repetitions and the warnings.
 *
 * Under RPT_MD_MAX bytes (so characters) whatever the run's size: every cell from the run is
 * cut (esc_md), and a row or warning that would go past the budget (the cap less a reserve for
 * the closing lines) is counted instead of written, with a line saying how many were left out.
 */
#include <stdio.h>
#include <string.h>

#include "report/esc.h"
#include "report/rpt.h"
#include "util/banned.h"

#define CELL_MAX 200
#define RESERVE 1024

struct md {
    struct buf *out;
    struct buf row;
    long omitted;
    int rc;
};

/* Appends the row being built when it fits the budget, else counts it. */
static void md_flush(struct md *m)
{
    if (m->rc == 0) {
        if (m->out->len + m->row.len + RESERVE <= RPT_MD_MAX)
            m->rc = buf_add(m->out, m->row.data, m->row.len);
        else
            m->omitted++;
    }
    buf_reset(&m->row);
}

static void md_omitted(struct md *m, const char *what)
{
    if (m->omitted && m->rc == 0)
        m->rc = buf_addf(m->out,
                         "\n_%ld more %s left out to keep this under %d characters: "
                         "see the HTML or JSON report._\n",
                         m->omitted, what, RPT_MD_MAX);
    m->omitted = 0;
}

static void probes(struct md *m, const json_t *result)
{
    const json_t *p;
    size_t i;

    buf_adds(m->out, "\n### Probes\n\n| probe | weight | passed | pass rate | 95% Wilson | "
                     "pass^k |\n| --- | ---: | ---: | ---: | --- | --- |\n");
    json_array_foreach(json_object_get(result, "probes"), i, p)
    {
        const json_t *w = json_object_get(p, "wilson");
        buf_adds(&m->row, "| ");
        esc_md(&m->row, esc_str(p, "id", "?"), CELL_MAX);
        buf_addf(&m->row, " | %g | %lld/%lld | ", esc_num(p, "weight", 0), esc_int(p, "passed", 0),
                 esc_int(p, "evaluated", 0));
        if (esc_int(p, "evaluated", 0) > 0 && json_array_size(w) == 2)
            buf_addf(&m->row, "%.0f%% | %.0f%%–%.0f%% | %s |\n", esc_num(p, "pass_rate", 0) * 100,
                     json_number_value(json_array_get(w, 0)) * 100,
                     json_number_value(json_array_get(w, 1)) * 100,
                     json_is_true(json_object_get(p, "pass_k")) ? "yes" : "no");
        else
            buf_adds(&m->row, "not evaluated | – | – |\n");
        md_flush(m);
    }
    md_omitted(m, "probes");
}

static void outcomes(struct md *m, const json_t *result)
{
    const char *k;
    const json_t *v;

    buf_adds(m->out, "\n### Outcomes\n\n| class | repetitions |\n| --- | ---: |\n");
    json_object_foreach((json_t *)json_object_get(result, "outcomes"), k, v)
    {
        buf_adds(&m->row, "| ");
        esc_md(&m->row, k, CELL_MAX);
        buf_addf(&m->row, " | %lld |\n", json_is_integer(v) ? (long long)json_integer_value(v) : 0);
        md_flush(m);
    }
    md_omitted(m, "outcome classes");
}

static void reps(struct md *m, const json_t *report, const json_t *result)
{
    const json_t *r;
    size_t i;

    buf_adds(m->out, "\n### Repetitions\n\n| rep | kind | status | outcome | cost (USD) | "
                     "duration (s) | abort or error |\n| ---: | --- | --- | --- | ---: | ---: | "
                     "--- |\n");
    json_array_foreach(json_object_get(result, "repetitions"), i, r)
    {
        long long n = esc_int(r, "rep", (long long)i);
        const json_t *f = esc_runner_rep(report, n), *ab = json_object_get(f, "abort");
        const char *why = esc_str(f, "error", NULL);

        buf_addf(&m->row, "| %lld | %s | ", n,
                 json_is_true(json_object_get(r, "faulted")) ? "faulted" : "baseline");
        esc_md(&m->row, esc_str(r, "status", "?"), CELL_MAX);
        buf_adds(&m->row, " | ");
        esc_md(&m->row, esc_str(r, "outcome", "–"), CELL_MAX);
        if (esc_has_num(f, "cost_usd"))
            buf_addf(&m->row, " | %.4f", esc_num(f, "cost_usd", 0));
        else
            buf_adds(&m->row, " | –");
        if (esc_has_num(f, "duration_ms"))
            buf_addf(&m->row, " | %.1f | ", esc_num(f, "duration_ms", 0) / 1000.0);
        else
            buf_adds(&m->row, " | – | ");
        if (json_is_object(ab)) {
            esc_md(&m->row, esc_str(ab, "reason", "abort"), CELL_MAX);
            buf_adds(&m->row, ": ");
            esc_md(&m->row, esc_str(ab, "detail", ""), CELL_MAX);
        } else if (why) {
            esc_md(&m->row, why, CELL_MAX);
        }
        buf_adds(&m->row, " |\n");
        md_flush(m);
    }
    md_omitted(m, "repetitions");
}

static void warnings(struct md *m, const json_t *result)
{
    const json_t *w, *ws = json_object_get(result, "warnings");
    size_t i;

    if (json_array_size(ws) == 0)
        return;
    buf_adds(m->out, "\n### Warnings\n\n");
    json_array_foreach(ws, i, w)
    {
        buf_adds(&m->row, "- **");
        esc_md(&m->row, esc_str(w, "code", "warning"), CELL_MAX);
        buf_adds(&m->row, "**: ");
        esc_md(&m->row, esc_str(w, "message", ""), 600);
        buf_addc(&m->row, '\n');
        md_flush(m);
    }
    md_omitted(m, "warnings");
}

int rpt_render_md(const json_t *report, struct buf *out)
{
    const json_t *result = json_object_get(report, "result");
    const json_t *x = json_object_get(report, "experiment");
    struct md m = {.out = out, .row = BUF_INIT};
    size_t start = out->len;

    buf_adds(out, "## faultline: ");
    esc_md(out, esc_str(x, "name", "?"), CELL_MAX);
    buf_adds(out, "\n\n**Verdict:** ");
    esc_md(out, esc_str(report, "verdict", "?"), CELL_MAX);
    buf_adds(out, " (");
    esc_md(out, esc_str(report, "verdict_reason", ""), 600);
    buf_adds(out, ") · **Resilience score:** ");
    if (esc_has_num(report, "resilience_score"))
        buf_addf(out, "%.2f", esc_num(report, "resilience_score", 0));
    else
        buf_adds(out, "none");
    buf_adds(out, " · **Run:** ");
    esc_md(out, esc_str(report, "status", "?"), CELL_MAX);
    if (esc_str(report, "error", NULL)) {
        buf_adds(out, " (");
        esc_md(out, esc_str(report, "error", ""), 600);
        buf_adds(out, ")");
    }
    buf_addc(out, '\n');
    {
        struct buf why = BUF_INIT;
        if (rpt_flaky(report, &why)) {
            buf_adds(out, "\n**FLAKY:** the repetitions' outcome classes differ (");
            esc_md(out, why.data, 400);
            buf_adds(out, ")\n");
        }
        buf_release(&why);
    }
    probes(&m, result);
    outcomes(&m, result);
    reps(&m, report, result);
    warnings(&m, result);
    if (m.rc == 0)
        m.rc = buf_adds(out, "\n<sub>faultline report · experiment hash ");
    esc_md(out, esc_str(x, "hash", "?"), 80);
    buf_adds(out, "</sub>\n");
    buf_release(&m.row);
    if (m.rc == 0 && out->len - start > RPT_MD_MAX)
        m.rc = ERR_LIMIT; /* cannot happen: every part is bounded */
    return m.rc;
}
