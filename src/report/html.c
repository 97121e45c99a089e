/*
 * html: rpt_render_html (rpt.h), one self-contained page for people.
 *
 * No request of any kind leaves the page: a Content-Security-Policy meta forbids them all
 * (default-src 'none'; style-src 'unsafe-inline'; img-src data:), the CSS is inline, the
 * charts are inline SVG, there is no script, font or link. Everything from the run (agent
 * output, tool names, arguments, model names, reasons, file names) is hostile input and goes
 * through esc_xml: entities for & < > " ', U+FFFD for control bytes and invalid UTF-8.
 *
 * Sections, top to bottom:
 *   verdict        the verdict, its reason, the resilience score, the run's status and error
 *   probes         pass rate, 95% Wilson interval (drawn), pass^k per probe; outcome counts
 *   cost           baseline vs faulted cost: the means, then one bar per repetition
 *   repetitions    per repetition its outcome class, cost, duration, abort or error
 *   warnings       the scorer's warnings
 *   per repetition (the first SECTIONS_MAX): the rules it failed, the earliest violating
 *                  effect, its timeline, the agent's final output with the canary marked, the
 *                  world's ledger
 *
 * The timeline reads the repetition's events.jsonl (at most RPT_EVENTS_MAX events) into
 * lanes: model calls, tool calls, gate decisions, egress requests, effects, injected faults,
 * the abort, the runner's own. Up to RPT_TIMELINE_EVENTS events are drawn one by one, each
 * with its details as an SVG <title> (shown on hover) and listed under a <details>; past that
 * the lanes are drawn as BINS time bins whose height is the count, and the page says so.
 * Faults and aborts are always drawn one by one (at most MARKS_MAX), with their canary.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events/events.h"
#include "events/view.h"
#include "report/esc.h"
#include "report/rpt.h"
#include "util/fs.h"
#include "util/utf8.h"
#include "util/banned.h"

#define SECTIONS_MAX 50
#define BARS_MAX 200
#define BINS 160
#define MARKS_MAX 200
#define LEDGER_MAX ((size_t)4 << 20)
#define LEDGER_ROWS 500
#define LABEL_MAX 200

enum lane { L_MODEL, L_TOOL, L_GATE, L_EGRESS, L_EFFECT, L_FAULT, L_ABORT, L_RUNNER, L_N };

static const struct {
    const char *name, *colour;
} lanes[L_N] = {
    [L_MODEL] = {"model", "#3b6fd4"},    [L_TOOL] = {"tools", "#2a9d8f"},
    [L_GATE] = {"gate", "#8e44ad"},      [L_EGRESS] = {"egress", "#b8860b"},
    [L_EFFECT] = {"effects", "#6d4c41"}, [L_FAULT] = {"faults", "#d62828"},
    [L_ABORT] = {"abort", "#111111"},    [L_RUNNER] = {"runner", "#888888"},
};

static const char css[] =
    ":root{--fg:#1d1d1f;--mute:#666;--line:#ddd;--bg:#fff}"
    "*{box-sizing:border-box}"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);"
    "background:var(--bg);margin:0 auto;padding:16px;max-width:1120px}"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid "
    "var(--line);padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}"
    ".top{display:flex;gap:16px;align-items:center;flex-wrap:wrap;border:1px solid var(--line);"
    "border-radius:8px;padding:12px 16px}"
    ".verdict{color:#fff;font-weight:700;border-radius:6px;padding:6px 12px;font-size:18px;"
    "text-transform:uppercase}"
    ".score{font-size:34px;font-weight:700}.mute{color:var(--mute)}"
    ".wrap{overflow-x:auto}table{border-collapse:collapse;width:100%;margin:6px 0}"
    "th,td{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top}"
    "th{background:#f6f6f8}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".out{white-space:pre-wrap;word-break:break-word;background:#f6f6f8;border:1px solid "
    "var(--line);border-radius:6px;padding:8px;max-height:420px;overflow:auto;font:12px/1.4 "
    "ui-monospace,Menlo,Consolas,monospace}"
    "mark{background:#ffd166;color:#000;font-weight:700}"
    "tr.violation td{background:#fde2e1}.bad{color:#b00020;font-weight:600}"
    ".warn{border-left:4px solid #dfb317;background:#fffbe6;padding:6px 10px;margin:6px 0}"
    "svg{max-width:100%;height:auto}section.rep{border-top:2px solid var(--line);margin-top:22px}"
    "code{font:12px ui-monospace,Menlo,Consolas,monospace}"
    "@media print{body{max-width:none;padding:0;font-size:10pt}.out{max-height:none;overflow:"
    "visible}section.rep,table,svg{break-inside:avoid}details>*{display:block}}";

/* ---- small writers ---- */

static void text(struct buf *b, const char *s)
{
    esc_xmls(b, s);
}

static void cell(struct buf *b, const char *s)
{
    buf_adds(b, "<td>");
    esc_xmls(b, s);
    buf_adds(b, "</td>");
}

static void opt_int(struct buf *b, const json_t *o, const char *key)
{
    if (esc_has_num(o, key))
        buf_addf(b, "%lld", esc_int(o, key, 0));
    else
        buf_adds(b, "–");
}

/* ---- the verdict and the probes ---- */

static void top(struct buf *b, const json_t *report)
{
    const char *verdict = esc_str(report, "verdict", "invalid");
    int has = esc_has_num(report, "resilience_score");
    double score = esc_num(report, "resilience_score", 0);
    const json_t *x = json_object_get(report, "experiment");

    buf_adds(b, "<header class=\"top\"><span class=\"verdict\" style=\"background:");
    buf_adds(b, esc_verdict_colour(verdict, has, score));
    buf_adds(b, "\">");
    text(b, verdict);
    buf_adds(b, "</span><span class=\"score\">");
    if (has)
        buf_addf(b, "%.2f", score);
    else
        buf_adds(b, "–");
    buf_adds(b, "</span><span class=\"mute\">resilience score</span>");
    {
        struct buf why = BUF_INIT;
        if (rpt_flaky(report, &why)) {
            buf_adds(b, "<span class=\"verdict flaky\" style=\"background:#7b2cbf\" title=\"");
            text(b, why.data);
            buf_adds(b, "\">flaky</span>");
        }
        buf_release(&why);
    }
    buf_adds(b, "<div><h1>");
    text(b, esc_str(x, "name", "?"));
    buf_adds(b, "</h1><div>");
    text(b, esc_str(report, "verdict_reason", ""));
    buf_adds(b, "</div><div class=\"mute\">run ");
    text(b, esc_str(report, "status", "?"));
    if (esc_str(report, "error", NULL)) {
        buf_adds(b, ": <span class=\"bad\">");
        text(b, esc_str(report, "error", ""));
        buf_adds(b, "</span>");
    }
    buf_adds(b, " · sandbox ");
    text(b, esc_str(report, "sandbox", "?"));
    buf_adds(b, " · repeat ");
    opt_int(b, x, "repeat");
    buf_adds(b, " · experiment <code>");
    text(b, esc_str(x, "hash", "?"));
    buf_adds(b, "</code></div></div></header>\n");
}

/* A 120x12 drawing of a pass rate and its Wilson interval. */
static void wilson_svg(struct buf *b, double rate, double lo, double hi)
{
    buf_addf(b,
             "<svg width=\"120\" height=\"12\" viewBox=\"0 0 120 12\" role=\"img\">"
             "<rect x=\"0\" y=\"5\" width=\"120\" height=\"2\" fill=\"#ddd\"/>"
             "<rect x=\"%.1f\" y=\"2\" width=\"%.1f\" height=\"8\" fill=\"#9db4e8\"/>"
             "<rect x=\"%.1f\" y=\"0\" width=\"2\" height=\"12\" fill=\"#1d3f8f\"/></svg>",
             lo * 120, (hi - lo) * 120, rate * 118);
}

static void probes(struct buf *b, const json_t *result)
{
    const json_t *p, *v;
    const char *k;
    size_t i;

    buf_adds(b, "<h2>Probes</h2><div class=\"wrap\"><table><tr><th>probe</th><th>weight</th>"
                "<th>passed</th><th>pass rate</th><th>95% Wilson interval</th><th></th>"
                "<th>pass^k</th></tr>\n");
    json_array_foreach(json_object_get(result, "probes"), i, p)
    {
        const json_t *w = json_object_get(p, "wilson");
        buf_adds(b, "<tr>");
        cell(b, esc_str(p, "id", "?"));
        buf_addf(b, "<td class=\"n\">%g</td><td class=\"n\">%lld / %lld</td>",
                 esc_num(p, "weight", 0), esc_int(p, "passed", 0), esc_int(p, "evaluated", 0));
        if (esc_int(p, "evaluated", 0) > 0 && json_array_size(w) == 2) {
            double lo = json_number_value(json_array_get(w, 0));
            double hi = json_number_value(json_array_get(w, 1));
            double rate = esc_num(p, "pass_rate", 0);
            buf_addf(b, "<td class=\"n\">%.0f%%</td><td class=\"n\">%.1f%% – %.1f%%</td><td>",
                     rate * 100, lo * 100, hi * 100);
            wilson_svg(b, rate, lo, hi);
            buf_addf(b, "</td><td>%s</td>",
                     json_is_true(json_object_get(p, "pass_k")) ? "yes" : "no");
        } else {
            buf_adds(b, "<td colspan=\"4\" class=\"mute\">not evaluated</td>");
        }
        buf_adds(b, "</tr>\n");
    }
    buf_adds(b, "</table></div>\n<h3>Outcome classes</h3><div class=\"wrap\"><table><tr>");
    json_object_foreach((json_t *)json_object_get(result, "outcomes"), k, v)
    {
        buf_adds(b, "<th>");
        text(b, k);
        buf_adds(b, "</th>");
    }
    buf_adds(b, "</tr><tr>");
    json_object_foreach((json_t *)json_object_get(result, "outcomes"), k, v) buf_addf(
        b, "<td class=\"n\">%lld</td>", json_is_integer(v) ? (long long)json_integer_value(v) : 0);
    buf_adds(b, "</tr></table></div>\n");
}

/* ---- cost ---- */

static void cost(struct buf *b, const json_t *report)
{
    const json_t *r, *reps = json_object_get(report, "repetitions");
    double sum[2] = {0, 0}, max = 0;
    long n[2] = {0, 0}, shown = 0;
    size_t i;
    int y;

    json_array_foreach(reps, i, r)
    {
        int f = json_is_true(json_object_get(r, "faulted"));
        double c = esc_num(r, "cost_usd", 0);
        if (!esc_has_num(r, "cost_usd"))
            continue;
        sum[f] += c;
        n[f]++;
        if (c > max)
            max = c;
    }
    buf_adds(b, "<h2>Cost: baseline vs faulted</h2>\n");
    if (n[0] + n[1] == 0) {
        buf_adds(b, "<p class=\"mute\">no repetition reported a cost</p>\n");
        return;
    }
    if (max <= 0)
        max = 1;
    buf_addf(b, "<svg viewBox=\"0 0 760 %ld\" width=\"760\" role=\"img\" aria-label=\"cost\">\n",
             (long)(2 * 22 + 12 +
                    16 * (json_array_size(reps) < BARS_MAX ? json_array_size(reps) : BARS_MAX)) +
                 8);
    for (int f = 0; f < 2; f++) {
        double mean = n[f] ? sum[f] / (double)n[f] : 0;
        y = f * 22;
        buf_addf(b,
                 "<text x=\"0\" y=\"%d\" font-size=\"12\">%s mean</text><rect x=\"120\" y=\"%d\" "
                 "width=\"%.1f\" height=\"16\" fill=\"%s\"><title>%s mean: %.6f USD over %ld "
                 "repetitions</title></rect><text x=\"%.1f\" y=\"%d\" font-size=\"11\">%.4f "
                 "USD</text>\n",
                 y + 13, f ? "faulted" : "baseline", y, mean / max * 520, f ? "#e76f51" : "#3b6fd4",
                 f ? "faulted" : "baseline", mean, n[f], 124 + mean / max * 520, y + 13, mean);
    }
    y = 2 * 22 + 12;
    json_array_foreach(reps, i, r)
    {
        int f = json_is_true(json_object_get(r, "faulted"));
        double c = esc_num(r, "cost_usd", 0);
        if (!esc_has_num(r, "cost_usd"))
            continue;
        if (shown++ >= BARS_MAX)
            break;
        buf_addf(b,
                 "<text x=\"0\" y=\"%d\" font-size=\"10\" fill=\"#666\">rep %lld</text><rect "
                 "x=\"120\" y=\"%d\" width=\"%.1f\" height=\"11\" fill=\"%s\"><title>rep %lld "
                 "(%s): %.6f USD</title></rect>\n",
                 y + 9, esc_int(r, "rep", 0), y, c / max * 520, f ? "#f4a261" : "#8fb0ea",
                 esc_int(r, "rep", 0), f ? "faulted" : "baseline", c);
        y += 16;
    }
    buf_adds(b, "</svg>\n");
    if (shown > BARS_MAX)
        buf_addf(b, "<p class=\"mute\">one bar each for the first %d repetitions</p>\n", BARS_MAX);
}

/* ---- the repetitions table ---- */

static void abort_text(struct buf *b, const json_t *f)
{
    const json_t *ab = json_object_get(f, "abort");
    if (json_is_object(ab)) {
        buf_adds(b, "<span class=\"bad\">");
        text(b, esc_str(ab, "reason", "abort"));
        buf_adds(b, "</span> ");
        text(b, esc_str(ab, "detail", ""));
    } else if (esc_str(f, "error", NULL)) {
        buf_adds(b, "<span class=\"bad\">");
        text(b, esc_str(f, "error", ""));
        buf_adds(b, "</span>");
    }
}

static void rep_table(struct buf *b, const json_t *report, const json_t *result)
{
    const json_t *r;
    size_t i;

    buf_adds(b, "<h2>Repetitions</h2><div class=\"wrap\"><table><tr><th>rep</th><th>kind</th>"
                "<th>status</th><th>outcome class</th><th>cost (USD)</th><th>duration (s)</th>"
                "<th>abort or error</th><th>canary</th></tr>\n");
    json_array_foreach(json_object_get(result, "repetitions"), i, r)
    {
        const json_t *f = esc_runner_rep(report, esc_int(r, "rep", -1));
        buf_addf(b, "<tr><td class=\"n\">%lld</td><td>%s</td>", esc_int(r, "rep", 0),
                 json_is_true(json_object_get(r, "faulted")) ? "faulted" : "baseline");
        buf_adds(b, "<td>");
        text(b, esc_str(r, "status", "?"));
        if (esc_str(r, "status_reason", NULL)) {
            buf_adds(b, "<div class=\"mute\">");
            text(b, esc_str(r, "status_reason", ""));
            buf_adds(b, "</div>");
        }
        buf_adds(b, "</td><td>");
        text(b, esc_str(r, "outcome", "–"));
        buf_adds(b, "</td>");
        if (esc_has_num(f, "cost_usd"))
            buf_addf(b, "<td class=\"n\">%.4f</td>", esc_num(f, "cost_usd", 0));
        else
            buf_adds(b, "<td class=\"n\">–</td>");
        if (esc_has_num(f, "duration_ms"))
            buf_addf(b, "<td class=\"n\">%.2f</td>", esc_num(f, "duration_ms", 0) / 1000.0);
        else
            buf_adds(b, "<td class=\"n\">–</td>");
        buf_adds(b, "<td>");
        abort_text(b, f);
        buf_adds(b, "</td>");
        cell(b, esc_str(r, "canary", ""));
        buf_adds(b, "</tr>\n");
    }
    buf_adds(b, "</table></div>\n");
}

/* ---- the timeline ---- */

struct tev {
    int64_t t;
    unsigned lane : 4, faulted : 1;
    uint32_t label; /* 1 + offset into the labels buffer, 0: none kept */
};

struct timeline {
    struct tev *ev;
    size_t n, alloc, skipped, kept_labels, marks;
    struct buf labels;
    int64_t t0, t1;
    long long viol_line;   /* the events line of the earliest violating effect, or 0 */
    char viol_effect[128]; /* its effect_id, found while reading */
};

static enum lane lane_of(const struct events_view *v)
{
    static const struct {
        const char *kind;
        enum lane lane;
    } map[] = {
        {"model_request", L_MODEL}, {"model_response", L_MODEL}, {"tool_call", L_TOOL},
        {"tool_result", L_TOOL},    {"gate_decision", L_GATE},   {"egress_request", L_EGRESS},
        {"effect", L_EFFECT},       {"fault_injected", L_FAULT}, {"abort", L_ABORT},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (v->kind_len == strlen(map[i].kind) && memcmp(v->kind, map[i].kind, v->kind_len) == 0)
            return map[i].lane;
    return L_RUNNER;
}

/* The label of an event: its kind, then the fields a reader wants to see, as text. */
static void label_of(const struct events_view *v, struct buf *out)
{
    static const char *const keys[] = {"fault",     "canary", "tool",    "model",     "decision",
                                       "host",      "status", "reason",  "detail",    "collection",
                                       "effect_id", "code",   "message", "exit_code", "id"};
    char s[LABEL_MAX + 1];
    size_t start = out->len;

    buf_add(out, v->kind, v->kind_len);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *raw;
        size_t len;
        int rc = events_view_string(v, keys[i], s, sizeof(s), NULL);
        if (rc == 0 || rc == ERR_LIMIT) {
            buf_addf(out, " %s=%s", keys[i], s);
        } else if ((raw = events_view_raw(v, keys[i], &len)) != NULL && len < 32 && raw[0] != '{' &&
                   raw[0] != '[' && raw[0] != 'n') {
            buf_addf(out, " %s=%.*s", keys[i], (int)len, raw);
        }
        if (out->len - start > 2 * LABEL_MAX)
            break;
    }
    if (out->len - start > 2 * LABEL_MAX)
        buf_truncate(out,
                     start + utf8_boundary(out->data + start, out->len - start, 2 * LABEL_MAX));
    buf_addc(out, '\0');
}

static void timeline_read(struct timeline *tl, const char *run_dir, const char *dir)
{
    char rel[64];
    struct err e = {0};
    struct events_reader *r;
    struct events_view *v = xmalloc(sizeof(*v));
    const char *line;
    size_t len;
    long long lineno = 0;
    int fd;

    snprintf(rel, sizeof(rel), "%.40s/events.jsonl", dir);
    fd = fs_open_beneath(run_dir, rel, &e);
    if (fd < 0)
        goto done;
    r = events_reader_fdopen(fd);
    while (events_next_line(r, &line, &len) == 1) {
        struct tev t;
        int64_t us;
        int f = 0;
        lineno++;
        if (events_view_parse(v, line, len) != 0)
            continue;
        if (lineno == tl->viol_line)
            events_view_string(v, "effect_id", tl->viol_effect, sizeof(tl->viol_effect), NULL);
        if (tl->n >= RPT_EVENTS_MAX) {
            tl->skipped++;
            continue;
        }
        us = events_view_time_us(v);
        if (us == EVENTS_NO_TIME)
            continue;
        t.t = us;
        t.lane = lane_of(v);
        events_view_bool(v, "faulted", &f);
        t.faulted = f != 0 || t.lane == L_FAULT;
        t.label = 0;
        if (tl->kept_labels < RPT_TIMELINE_EVENTS ||
            ((t.lane == L_FAULT || t.lane == L_ABORT) && tl->marks < MARKS_MAX)) {
            t.label = (uint32_t)tl->labels.len + 1;
            label_of(v, &tl->labels);
            tl->kept_labels++;
            if (t.lane == L_FAULT || t.lane == L_ABORT)
                tl->marks++;
        }
        if (tl->n == tl->alloc) {
            tl->alloc = tl->alloc ? 2 * tl->alloc : 256;
            tl->ev = xrealloc(tl->ev, tl->alloc * sizeof(*tl->ev));
        }
        if (tl->n == 0 || us < tl->t0)
            tl->t0 = us;
        if (tl->n == 0 || us > tl->t1)
            tl->t1 = us;
        tl->ev[tl->n++] = t;
    }
    events_reader_free(r);
done:
    free(v);
}

#define TL_X0 70.0
#define TL_W 870.0
#define TL_LANE 22

static double tl_x(const struct timeline *tl, int64_t t)
{
    double span = (double)(tl->t1 - tl->t0);
    return TL_X0 + (span > 0 ? (double)(t - tl->t0) / span * TL_W : TL_W / 2);
}

static void mark(struct buf *b, const struct timeline *tl, const struct tev *t)
{
    double x = tl_x(tl, t->t), y = t->lane * TL_LANE + 11;
    const char *label = t->label ? tl->labels.data + t->label - 1 : "";

    if (t->lane == L_FAULT || t->lane == L_ABORT) {
        buf_addf(b,
                 "<line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" "
                 "stroke-dasharray=\"4 3\"/>",
                 x, x, L_N * TL_LANE, lanes[t->lane].colour);
        buf_addf(b, "<path d=\"M%.1f %.1fl6 6l-6 6l-6 -6z\" fill=\"%s\"><title>+%.3f s ", x, y - 6,
                 lanes[t->lane].colour, (double)(t->t - tl->t0) / 1e6);
    } else {
        buf_addf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"%s><title>+%.3f s ", x, y,
                 lanes[t->lane].colour, t->faulted ? " stroke=\"#d62828\" stroke-width=\"2\"" : "",
                 (double)(t->t - tl->t0) / 1e6);
    }
    text(b, label);
    buf_adds(b, t->lane == L_FAULT || t->lane == L_ABORT ? "</title></path>\n"
                                                         : "</title></circle>\n");
}

static void timeline_svg(struct buf *b, struct timeline *tl)
{
    int aggregate = tl->n > RPT_TIMELINE_EVENTS;

    if (tl->n == 0) {
        buf_adds(b, "<p class=\"mute\">no events to draw</p>\n");
        return;
    }
    if (aggregate)
        buf_addf(b,
                 "<p class=\"mute\">%zu events%s: too many to draw one by one, so each lane "
                 "is aggregated into %d time bins (the height is the count; hover for it); "
                 "injected faults and the abort are drawn one by one.</p>\n",
                 tl->n, tl->skipped ? " read (the rest not)" : "", BINS);
    buf_addf(b,
             "<svg viewBox=\"0 0 950 %d\" width=\"950\" role=\"img\" aria-label=\"timeline\" "
             "class=\"timeline\">\n",
             L_N * TL_LANE + 18);
    for (int l = 0; l < L_N; l++)
        buf_addf(b,
                 "<text x=\"0\" y=\"%d\" font-size=\"11\" fill=\"%s\">%s</text><line x1=\"%.0f\" "
                 "y1=\"%d\" x2=\"%.0f\" y2=\"%d\" stroke=\"#eee\"/>\n",
                 l * TL_LANE + 15, lanes[l].colour, lanes[l].name, TL_X0, l * TL_LANE + 11,
                 TL_X0 + TL_W, l * TL_LANE + 11);
    if (aggregate) {
        static long counts[L_N][BINS];
        long max[L_N] = {0};
        double span = (double)(tl->t1 - tl->t0), w = TL_W / BINS;
        memset(counts, 0, sizeof(counts));
        for (size_t i = 0; i < tl->n; i++) {
            int bin = span > 0 ? (int)((double)(tl->ev[i].t - tl->t0) / span * (BINS - 1)) : 0;
            if (tl->ev[i].lane == L_FAULT || tl->ev[i].lane == L_ABORT)
                continue;
            if (++counts[tl->ev[i].lane][bin] > max[tl->ev[i].lane])
                max[tl->ev[i].lane] = counts[tl->ev[i].lane][bin];
        }
        for (int l = 0; l < L_N; l++)
            for (int k = 0; k < BINS; k++) {
                double h;
                if (counts[l][k] == 0)
                    continue;
                h = 2 + 16.0 * (double)counts[l][k] / (double)max[l];
                buf_addf(b,
                         "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                         "fill=\"%s\"><title>%ld %s events, +%.3f s to +%.3f s</title></rect>\n",
                         TL_X0 + k * w, l * TL_LANE + 19 - h, w, h, lanes[l].colour, counts[l][k],
                         lanes[l].name, span * k / BINS / 1e6, span * (k + 1) / BINS / 1e6);
            }
    }
    for (size_t i = 0; i < tl->n; i++) {
        const struct tev *t = &tl->ev[i];
        if (!aggregate || ((t->lane == L_FAULT || t->lane == L_ABORT) && t->label))
            mark(b, tl, t);
    }
    buf_addf(b,
             "<text x=\"%.0f\" y=\"%d\" font-size=\"10\" fill=\"#666\">+0 s</text><text "
             "x=\"%.0f\" y=\"%d\" font-size=\"10\" fill=\"#666\" text-anchor=\"end\">+%.3f "
             "s</text>\n</svg>\n",
             TL_X0, L_N * TL_LANE + 14, TL_X0 + TL_W, L_N * TL_LANE + 14,
             (double)(tl->t1 - tl->t0) / 1e6);
    if (!aggregate) {
        buf_addf(b, "<details><summary>the %zu events</summary><ol class=\"events\">\n", tl->n);
        for (size_t i = 0; i < tl->n; i++) {
            buf_addf(b, "<li%s><code>+%.3f s</code> ",
                     tl->ev[i].lane == L_FAULT ? " class=\"bad\"" : "",
                     (double)(tl->ev[i].t - tl->t0) / 1e6);
            if (tl->ev[i].label)
                text(b, tl->labels.data + tl->ev[i].label - 1);
            buf_adds(b, "</li>\n");
        }
        buf_adds(b, "</ol></details>\n");
    }
}

/* ---- failed rules, the earliest violating effect ---- */

/* The failing invariant of r whose evidence comes first (ledger index or events line): its
 * evidence, or NULL. */
static const json_t *earliest_violation(const json_t *r)
{
    const json_t *o, *best = NULL;
    size_t i;

    json_array_foreach(json_object_get(r, "invariants"), i, o)
    {
        const json_t *ev = json_object_get(o, "evidence");
        const char *file = esc_str(ev, "file", "");
        int effect = strcmp(esc_str(ev, "kind", ""), "effect") == 0 ||
                     (strlen(file) > 11 && strcmp(file + strlen(file) - 11, "ledger.json") == 0);
        if (strcmp(esc_str(o, "result", ""), "fail") != 0 || !effect)
            continue;
        if (best == NULL || esc_int(ev, "line", esc_int(ev, "index", 0)) <
                                esc_int(best, "line", esc_int(best, "index", 0)))
            best = ev;
    }
    return best;
}

static void violation(struct buf *b, const json_t *viol, const char *viol_effect)
{
    if (viol) {
        buf_adds(b, "<p class=\"bad\">earliest violating effect: ");
        text(b, esc_str(viol, "file", ""));
        if (esc_has_num(viol, "line"))
            buf_addf(b, " line %lld", esc_int(viol, "line", 0));
        if (esc_has_num(viol, "index"))
            buf_addf(b, " entry %lld", esc_int(viol, "index", 0));
        if (viol_effect[0]) {
            buf_adds(b, " (effect ");
            text(b, viol_effect);
            buf_adds(b, ")");
        }
        buf_adds(b, "</p>\n");
    }
}

static void failed_rules(struct buf *b, const json_t *r)
{
    static const char *const members[] = {"probes", "invariants"};
    const json_t *o;
    size_t i;
    int any = 0;

    for (int m = 0; m < 2; m++)
        json_array_foreach(json_object_get(r, members[m]), i, o)
        {
            const json_t *ev = json_object_get(o, "evidence");
            if (strcmp(esc_str(o, "result", ""), "fail") != 0)
                continue;
            if (!any++)
                buf_adds(b, "<h3>Failed</h3><ul>\n");
            buf_addf(b, "<li><span class=\"bad\">%s ", m ? "invariant" : "probe");
            text(b, esc_str(o, "id", "?"));
            buf_adds(b, "</span>: ");
            text(b, esc_str(o, "reason", ""));
            if (json_is_object(ev)) {
                buf_adds(b, " <span class=\"mute\">(");
                text(b, esc_str(ev, "file", ""));
                if (esc_has_num(ev, "line"))
                    buf_addf(b, " line %lld", esc_int(ev, "line", 0));
                if (esc_has_num(ev, "index"))
                    buf_addf(b, " entry %lld", esc_int(ev, "index", 0));
                buf_adds(b, ")</span>");
            }
            buf_adds(b, "</li>\n");
        }
    if (any)
        buf_adds(b, "</ul>\n");
}

/* ---- the agent's final output ---- */

/* Appends n bytes of fd from offset from (fewer when the file is shorter). 0 or ERR_IO. */
static int read_tail(int fd, off_t from, size_t n, struct buf *out)
{
    char chunk[65536];

    while (n > 0) {
        ssize_t got = pread(fd, chunk, n < sizeof(chunk) ? n : sizeof(chunk), from);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return ERR_IO;
        if (got == 0)
            break;
        if (buf_add(out, chunk, (size_t)got) < 0)
            return ERR_IO;
        from += got;
        n -= (size_t)got;
    }
    return 0;
}

static void output(struct buf *b, const char *run_dir, const char *dir, const char *canary)
{
    char rel[64];
    struct err e = {0};
    struct stat st;
    struct buf raw = BUF_INIT;
    off_t from;
    int fd;

    buf_adds(b, "<h3>The agent's final output</h3>\n");
    snprintf(rel, sizeof(rel), "%.40s/agent.out", dir);
    fd = fs_open_beneath(run_dir, rel, &e);
    if (fd < 0 || fstat(fd, &st) < 0) {
        buf_adds(b, "<p class=\"mute\">no agent.out</p>\n");
        goto done;
    }
    from = st.st_size > RPT_OUTPUT_MAX ? st.st_size - RPT_OUTPUT_MAX : 0;
    if (read_tail(fd, from, (size_t)(st.st_size - from), &raw) < 0) {
        buf_adds(b, "<p class=\"mute\">agent.out cannot be read</p>\n");
        goto done;
    }
    if (from > 0)
        buf_addf(b, "<p class=\"mute\">its last %zu bytes of %lld</p>\n", raw.len,
                 (long long)st.st_size);
    if (canary && canary[0] && strstr(raw.data, canary))
        buf_adds(b, "<p>the canary appears in it (marked)</p>\n");
    buf_adds(b, "<div class=\"out\">");
    {
        size_t at = 0, cl = canary ? strlen(canary) : 0;
        while (at < raw.len) {
            const char *hit = cl ? memmem(raw.data + at, raw.len - at, canary, cl) : NULL;
            size_t upto = hit ? (size_t)(hit - raw.data) : raw.len;
            esc_xml(b, raw.data + at, upto - at);
            if (!hit)
                break;
            buf_adds(b, "<mark>");
            esc_xml(b, hit, cl);
            buf_adds(b, "</mark>");
            at = upto + cl;
        }
    }
    buf_adds(b, "</div>\n");
done:
    if (fd >= 0)
        close(fd);
    buf_release(&raw);
}

/* ---- the world's ledger ---- */

static void ledger(struct buf *b, const char *run_dir, const char *dir, const json_t *viol,
                   const char *viol_effect)
{
    char rel[64];
    struct err e = {0};
    struct buf raw = BUF_INIT;
    json_t *j = NULL, *x;
    size_t i;
    long long vidx = -1;
    static const char *const cols[] = {"effect_id", "tool", "collection", "business_key",
                                       "dedupe_key"};

    snprintf(rel, sizeof(rel), "%.40s/ledger.json", dir);
    if (!fs_exists_beneath(run_dir, rel))
        goto done;
    buf_adds(b, "<h3>The world's ledger</h3>\n");
    if (fs_read_file_beneath(run_dir, rel, LEDGER_MAX, &raw, &e) < 0 ||
        (j = json_loadb(raw.data, raw.len, 0, NULL)) == NULL) {
        buf_adds(b, "<p class=\"mute\">ledger.json cannot be read</p>\n");
        goto done;
    }
    if (viol && strstr(esc_str(viol, "file", ""), "ledger.json"))
        vidx = esc_int(viol, "index", -1);
    buf_adds(b, "<div class=\"wrap\"><table><tr><th>#</th><th>effect</th><th>tool</th>"
                "<th>collection</th><th>business key</th><th>dedupe key</th><th>approved</th>"
                "<th>faulted</th></tr>\n");
    json_array_foreach(json_object_get(j, "effects"), i, x)
    {
        int v = (long long)i == vidx ||
                (viol_effect[0] && strcmp(esc_str(x, "effect_id", ""), viol_effect) == 0);
        if (i >= LEDGER_ROWS) {
            buf_addf(b, "<tr><td colspan=\"8\" class=\"mute\">%zu more entries</td></tr>\n",
                     json_array_size(json_object_get(j, "effects")) - LEDGER_ROWS);
            break;
        }
        buf_addf(b, "<tr%s><td class=\"n\">%zu%s</td>", v ? " class=\"violation\"" : "", i,
                 v ? " ⚠" : "");
        for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
            cell(b, esc_str(x, cols[c], ""));
        buf_addf(b, "<td>%s</td><td>%s</td></tr>\n",
                 json_is_true(json_object_get(x, "approved")) ? "yes" : "no",
                 json_is_true(json_object_get(x, "faulted")) ? "yes" : "no");
    }
    buf_adds(b, "</table></div>\n");
done:
    json_decref(j);
    buf_release(&raw);
}

/* ---- per repetition ---- */

static void rep_section(struct buf *b, const json_t *report, const json_t *r, const char *run_dir)
{
    const char *dir = esc_str(r, "dir", "");
    const json_t *f = esc_runner_rep(report, esc_int(r, "rep", -1));
    const json_t *viol = earliest_violation(r);
    struct timeline tl = {.labels = BUF_INIT};

    buf_addf(b, "<section class=\"rep\"><h2>Repetition %lld (%s)", esc_int(r, "rep", 0),
             json_is_true(json_object_get(r, "faulted")) ? "faulted" : "baseline");
    if (esc_str(r, "outcome", NULL)) {
        buf_adds(b, ": ");
        text(b, esc_str(r, "outcome", ""));
    }
    buf_adds(b, "</h2>\n<p>");
    text(b, dir);
    buf_adds(b, " · ");
    text(b, esc_str(r, "status", "?"));
    buf_adds(b, " · canary <code>");
    text(b, esc_str(r, "canary", "–"));
    buf_adds(b, "</code> ");
    abort_text(b, f);
    buf_adds(b, "</p>\n");
    if (json_array_size(json_object_get(r, "outcome_reasons"))) {
        const json_t *why;
        size_t i;
        buf_adds(b, "<ul>");
        json_array_foreach(json_object_get(r, "outcome_reasons"), i, why)
        {
            buf_adds(b, "<li>");
            text(b, json_string_value(why));
            buf_adds(b, "</li>");
        }
        buf_adds(b, "</ul>\n");
    }
    failed_rules(b, r);
    if (run_dir == NULL || dir[0] == '\0' || strchr(dir, '/') || strstr(dir, "..")) {
        violation(b, viol, "");
        buf_adds(b, "<p class=\"mute\">the run folder is not there: no timeline, output or "
                    "ledger</p></section>\n");
        return;
    }
    if (viol)
        tl.viol_line = esc_int(viol, "line", 0);
    timeline_read(&tl, run_dir, dir); /* first: it finds the violating effect's id */
    violation(b, viol, tl.viol_effect);
    buf_adds(b, "<h3>Timeline</h3>\n");
    timeline_svg(b, &tl);
    output(b, run_dir, dir, esc_str(r, "canary", NULL));
    ledger(b, run_dir, dir, viol, tl.viol_effect);
    buf_adds(b, "</section>\n");
    free(tl.ev);
    buf_release(&tl.labels);
}

static void warnings(struct buf *b, const json_t *result)
{
    const json_t *w, *ws = json_object_get(result, "warnings");
    size_t i;

    buf_adds(b, "<h2>Warnings</h2>\n");
    if (json_array_size(ws) == 0)
        buf_adds(b, "<p class=\"mute\">none</p>\n");
    json_array_foreach(ws, i, w)
    {
        buf_adds(b, "<div class=\"warn\"><strong>");
        text(b, esc_str(w, "code", "warning"));
        buf_adds(b, "</strong>: ");
        text(b, esc_str(w, "message", ""));
        buf_adds(b, "</div>\n");
    }
}

int rpt_html_head(struct buf *out, const char *title)
{
    buf_adds(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\n"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                  "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action "
                  "'none'\"/>\n<meta name=\"viewport\" content=\"width=device-width, "
                  "initial-scale=1\"/>\n<meta name=\"referrer\" content=\"no-referrer\"/>\n"
                  "<title>faultline: ");
    text(out, title);
    buf_adds(out, "</title>\n<style>");
    buf_adds(out, css);
    return buf_adds(out, "</style></head><body>\n");
}

int rpt_html_foot(struct buf *out, const char *what)
{
    buf_adds(out, "<footer class=\"mute\"><p>");
    text(out, what);
    return buf_adds(out, "</p></footer>\n</body></html>\n");
}

int rpt_render_html(const json_t *report, const char *run_dir, struct buf *out)
{
    const json_t *result = json_object_get(report, "result"), *r;
    size_t i, n = json_array_size(json_object_get(result, "repetitions"));

    rpt_html_head(out, esc_str(json_object_get(report, "experiment"), "name", "?"));
    top(out, report);
    probes(out, result);
    cost(out, report);
    rep_table(out, report, result);
    warnings(out, result);
    json_array_foreach(json_object_get(result, "repetitions"), i, r)
    {
        if (i >= SECTIONS_MAX) {
            buf_addf(out,
                     "<p class=\"mute\">%zu more repetitions: their timelines are left out "
                     "(see the JSON report)</p>\n",
                     n - SECTIONS_MAX);
            break;
        }
        rep_section(out, report, r, run_dir);
    }
    return rpt_html_foot(out, "faultline report");
}
