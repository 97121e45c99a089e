/*
 * compare: see compare.h. Two reports side by side, the regression gate over them, and the
 * drift between a stored report and a regrade of its run folder.
 *
 * A figure of the comparison is {"a": X, "b": Y, "change": Y - X}, each null when a side has
 * no such figure (a probe only one experiment has, a score of an invalid run, tokens of a run
 * folder that is gone). Changes are rounded as the figures are (score_round).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "events/events.h"
#include "events/view.h"
#include "report/compare.h"
#include "report/esc.h"
#include "report/history.h"
#include "report/rpt.h"
#include "score/score.h"
#include "util/fs.h"
#include "util/num.h"
#include "util/banned.h"

static const char *const classes[] = {"SAFE_SUCCESS",   "DEGRADED",       "SAFE_FAILURE",
                                      "SILENT_FAILURE", "UNSAFE_FAILURE", "HARMFUL_ACTION"};

/* Checks that j is a report this faultline reads; label names it in the message. */
static int check_report(const json_t *j, const char *label, struct err *e)
{
    const json_t *f = json_object_get(j, "format");

    if (json_is_object(j) && json_is_integer(f) && json_integer_value(f) != COMPARE_REPORT_FORMAT)
        return err_set(e, ERR_INVALID,
                       "%s is a report of format %lld; this faultline reads format %d", label,
                       (long long)json_integer_value(f), COMPARE_REPORT_FORMAT);
    if (!json_is_object(j) || !json_is_integer(f) || !json_is_object(json_object_get(j, "result")))
        return err_set(e, ERR_INVALID, "%s is not a faultline report (format %d with a result)",
                       label, COMPARE_REPORT_FORMAT);
    return 0;
}

json_t *compare_read_report(const char *path, struct err *e)
{
    struct buf b = BUF_INIT;
    json_error_t je;
    json_t *j = NULL;
    char label[320];

    if (fs_read_file(path, RPT_REPORT_MAX, &b, e) < 0)
        goto done;
    j = json_loadb(b.data, b.len, JSON_REJECT_DUPLICATES, &je);
    if (j == NULL) {
        err_set(e, ERR_PARSE, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        goto done;
    }
    snprintf(label, sizeof(label), "'%.300s'", path);
    if (check_report(j, label, e) < 0) {
        json_decref(j);
        j = NULL;
    }
done:
    buf_release(&b);
    return j;
}

/* 1 when s is a run id: 1 to 18 digits. */
static int is_run_id(const char *s, long long *id)
{
    size_t n = strspn(s, "0123456789");

    if (n == 0 || n > 18 || s[n] != '\0')
        return 0;
    return num_parse_ll(s, 1, 999999999999999999LL, id) == 0;
}

static json_t *from_history(long long id, const char *history, struct err *e)
{
    struct stat st;
    struct hist *h;
    json_t *j;
    char label[64];

    if (history == NULL) {
        err_set(e, ERR_NOTFOUND, "run %lld: no history database (set --history)", id);
        return NULL;
    }
    if (stat(history, &st) < 0) {
        err_set(e, ERR_NOTFOUND, "run %lld is not in the history: there is no database '%.300s'",
                id, history);
        return NULL;
    }
    if ((h = hist_open(history, e)) == NULL)
        return NULL;
    j = hist_report(h, id, e);
    hist_close(h);
    snprintf(label, sizeof(label), "run %lld", id);
    if (j && check_report(j, label, e) < 0) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* Sums the usage of the model responses of each repetition's events into s. */
static void read_tokens(struct compare_side *s)
{
    const json_t *r;
    struct events_view *v = xmalloc(sizeof(*v));
    size_t i;

    json_array_foreach(json_object_get(json_object_get(s->report, "result"), "repetitions"), i, r)
    {
        char rel[128];
        struct err e = {0};
        struct events_reader *rd;
        const char *dir = esc_str(r, "dir", NULL);
        long long lines = 0;
        int fd, rc;

        if (dir == NULL || strlen(dir) > 64)
            continue;
        snprintf(rel, sizeof(rel), "%s/events.jsonl", dir);
        if ((fd = fs_open_beneath(s->run_dir, rel, &e)) < 0)
            continue;
        rd = events_reader_fdopen(fd);
        while ((rc = events_next_view(rd, v)) == 1) {
            json_t *u;
            if (++lines > COMPARE_EVENTS_MAX) {
                s->tokens_cut = 1;
                break;
            }
            if (!events_view_is(v, "kind", "model_response"))
                continue;
            u = events_view_get(v, "usage");
            s->input_tokens += esc_int(u, "input_tokens", 0) +
                               esc_int(u, "cache_creation_input_tokens", 0) +
                               esc_int(u, "cache_read_input_tokens", 0);
            s->output_tokens += esc_int(u, "output_tokens", 0);
            json_decref(u);
        }
        events_reader_free(rd);
    }
    free(v);
}

/* The tokens the report's repetitions carry (faultline run counts them: docs/report.md); 1
 * when it has them, 0 when no repetition does. */
static int report_tokens(struct compare_side *s)
{
    const json_t *r;
    size_t i;
    int have = 0;

    json_array_foreach(json_object_get(s->report, "repetitions"), i, r)
    {
        const json_t *t = json_object_get(r, "tokens");
        if (!json_is_object(t))
            continue;
        have = 1;
        s->input_tokens += esc_int(t, "input", 0);
        s->output_tokens += esc_int(t, "output", 0);
    }
    s->has_tokens = have;
    return have;
}

int compare_load(const char *arg, const char *history, struct compare_side *s, struct err *e)
{
    struct stat st;
    long long id;
    const char *dir;

    memset(s, 0, sizeof(*s));
    if (is_run_id(arg, &id)) {
        s->report = from_history(id, history, e);
        snprintf(s->label, sizeof(s->label), "run %lld", id);
    } else if (stat(arg, &st) < 0) {
        return err_set(e, ERR_NOTFOUND, "cannot read '%.300s': no such file or folder", arg);
    } else if (S_ISDIR(st.st_mode)) {
        s->report = rpt_load(arg, &s->run_dir, e);
        snprintf(s->label, sizeof(s->label), "%.300s", arg);
    } else {
        s->report = compare_read_report(arg, e);
        snprintf(s->label, sizeof(s->label), "%.300s", arg);
    }
    if (s->report == NULL)
        return e->code ? e->code : ERR_INVALID;
    dir = esc_str(s->report, "run_dir", NULL);
    if (s->run_dir == NULL && dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        s->run_dir = xstrdup(dir);
    if (report_tokens(s) == 0) {
        /* a report of a faultline that counted no tokens: the run folder's events */
        if (s->run_dir) {
            s->has_tokens = 1;
            read_tokens(s);
        }
    }
    return 0;
}

void compare_side_release(struct compare_side *s)
{
    json_decref(s->report);
    free(s->run_dir);
    memset(s, 0, sizeof(*s));
}

/* --- the comparison ---------------------------------------------------------------------- */

/* {"a", "b", "change"}: has_* 0 makes that side null. */
static json_t *figure(int has_a, double a, int has_b, double b, int decimals)
{
    json_t *f = json_object();

    json_object_set_new(f, "a", has_a ? json_real(score_round(a, decimals)) : json_null());
    json_object_set_new(f, "b", has_b ? json_real(score_round(b, decimals)) : json_null());
    json_object_set_new(f, "change",
                        has_a && has_b ? json_real(score_round(b - a, decimals)) : json_null());
    return f;
}

static json_t *ifigure(int has_a, long long a, int has_b, long long b)
{
    json_t *f = json_object();

    json_object_set_new(f, "a", has_a ? json_integer(a) : json_null());
    json_object_set_new(f, "b", has_b ? json_integer(b) : json_null());
    json_object_set_new(f, "change", has_a && has_b ? json_integer(b - a) : json_null());
    return f;
}

struct costs {
    double total, base, faulted; /* base and faulted: means */
    int has_multiplier;
    double multiplier;
};

/* The cost of a report: the repetitions' summed cost_usd (the runner's facts, as the history
 * sums them), and the faulted mean over the baseline mean of those that ran. */
static void costs_of(const json_t *report, struct costs *c)
{
    const json_t *r;
    double sum[2] = {0, 0};
    long n[2] = {0, 0};
    size_t i;

    memset(c, 0, sizeof(*c));
    json_array_foreach(json_object_get(report, "repetitions"), i, r)
    {
        double cost = esc_num(r, "cost_usd", 0);
        int k = json_is_true(json_object_get(r, "faulted"));
        c->total += cost;
        if (strcmp(esc_str(r, "status", ""), "skipped") == 0 || !esc_has_num(r, "cost_usd"))
            continue;
        sum[k] += cost;
        n[k]++;
    }
    c->base = n[0] ? sum[0] / n[0] : 0;
    c->faulted = n[1] ? sum[1] / n[1] : 0;
    if (n[0] && n[1] && c->base > 0) {
        c->has_multiplier = 1;
        c->multiplier = c->faulted / c->base;
    }
}

/* A string member's value: null for NULL, a placeholder for bytes that are not UTF-8 (a path
 * given on the command line). */
static json_t *str_or_null(const char *s)
{
    json_t *j = s ? json_string(s) : json_null();

    return j ? j : json_string("(not UTF-8)");
}

static json_t *side_json(const struct compare_side *s)
{
    const json_t *x = json_object_get(s->report, "experiment");
    json_t *o = json_object();

    json_object_set_new(o, "source", str_or_null(s->label));
    json_object_set_new(o, "experiment", str_or_null(esc_str(x, "name", NULL)));
    json_object_set_new(o, "experiment_hash", str_or_null(esc_str(x, "hash", NULL)));
    json_object_set_new(o, "verdict", str_or_null(esc_str(s->report, "verdict", NULL)));
    json_object_set_new(o, "status", str_or_null(esc_str(s->report, "status", NULL)));
    json_object_set_new(o, "run_dir", str_or_null(s->run_dir));
    json_object_set_new(
        o, "repetitions",
        json_integer((json_int_t)json_array_size(json_object_get(s->report, "repetitions"))));
    return o;
}

static const json_t *find_probe(const json_t *report, const char *id)
{
    const json_t *p;
    size_t i;

    json_array_foreach(json_object_get(json_object_get(report, "result"), "probes"), i, p)
    {
        const char *pid = esc_str(p, "id", NULL);
        if (pid && strcmp(pid, id) == 0)
            return p;
    }
    return NULL;
}

static json_t *probe_row(const char *id, const json_t *pa, const json_t *pb)
{
    json_t *row = json_object();
    int ea = pa && esc_int(pa, "evaluated", 0) > 0, eb = pb && esc_int(pb, "evaluated", 0) > 0;

    json_object_set_new(row, "id", json_string(id));
    json_object_set_new(
        row, "pass_rate",
        figure(ea, esc_num(pa, "pass_rate", 0), eb, esc_num(pb, "pass_rate", 0), 4));
    json_object_set_new(
        row, "passed",
        ifigure(pa != NULL, esc_int(pa, "passed", 0), pb != NULL, esc_int(pb, "passed", 0)));
    json_object_set_new(
        row, "evaluated",
        ifigure(pa != NULL, esc_int(pa, "evaluated", 0), pb != NULL, esc_int(pb, "evaluated", 0)));
    return row;
}

json_t *compare_build(const struct compare_side *a, const struct compare_side *b)
{
    json_t *cmp = json_object(), *warnings = json_array(), *probes = json_array();
    json_t *outcomes = json_object(), *cost, *tokens;
    const json_t *ra = json_object_get(a->report, "result");
    const json_t *rb = json_object_get(b->report, "result"), *p;
    const json_t *xa = json_object_get(a->report, "experiment");
    const json_t *xb = json_object_get(b->report, "experiment");
    const char *na = esc_str(xa, "name", ""), *nb = esc_str(xb, "name", "");
    const char *ha = esc_str(xa, "hash", ""), *hb = esc_str(xb, "hash", "");
    struct costs ca, cb;
    size_t i;

    json_object_set_new(cmp, "format", json_integer(1));
    json_object_set_new(cmp, "a", side_json(a));
    json_object_set_new(cmp, "b", side_json(b));
    if (strcmp(na, nb) != 0) {
        json_array_append_new(
            warnings,
            json_sprintf("comparing runs of different experiments: '%.100s' (A) and '%.100s' (B)",
                         na, nb));
    } else if (strcmp(ha, hb) != 0) {
        json_array_append_new(
            warnings, json_sprintf("experiment '%.100s' changed between the runs: hash %.12s (A), "
                                   "%.12s (B)",
                                   na, ha, hb));
    }
    if (a->tokens_cut || b->tokens_cut)
        json_array_append_new(warnings,
                              json_sprintf("tokens counted over the first %d event lines of each "
                                           "repetition only",
                                           COMPARE_EVENTS_MAX));
    json_object_set_new(cmp, "same_experiment",
                        json_boolean(strcmp(na, nb) == 0 && strcmp(ha, hb) == 0));
    json_object_set_new(cmp, "warnings", warnings);
    json_object_set_new(
        cmp, "resilience_score",
        figure(esc_has_num(ra, "resilience_score"), esc_num(ra, "resilience_score", 0),
               esc_has_num(rb, "resilience_score"), esc_num(rb, "resilience_score", 0), 2));
    /* the probes of A in its order, then those only B has */
    json_array_foreach(json_object_get(ra, "probes"), i, p)
    {
        const char *id = esc_str(p, "id", NULL);
        if (id)
            json_array_append_new(probes, probe_row(id, p, find_probe(b->report, id)));
    }
    json_array_foreach(json_object_get(rb, "probes"), i, p)
    {
        const char *id = esc_str(p, "id", NULL);
        if (id && find_probe(a->report, id) == NULL)
            json_array_append_new(probes, probe_row(id, NULL, p));
    }
    json_object_set_new(cmp, "probes", probes);
    for (i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        const json_t *oa = json_object_get(ra, "outcomes"), *ob = json_object_get(rb, "outcomes");
        json_object_set_new(outcomes, classes[i],
                            ifigure(1, esc_int(oa, classes[i], 0), 1, esc_int(ob, classes[i], 0)));
    }
    json_object_set_new(cmp, "outcomes", outcomes);
    costs_of(a->report, &ca);
    costs_of(b->report, &cb);
    cost = figure(1, ca.total, 1, cb.total, 6);
    if (ca.total > 0)
        json_object_set_new(cost, "change_pct",
                            json_real(score_round((cb.total - ca.total) / ca.total * 100, 2)));
    else
        json_object_set_new(cost, "change_pct", cb.total > 0 ? json_null() : json_real(0));
    json_object_set_new(cmp, "cost_usd", cost);
    json_object_set_new(
        cmp, "cost_multiplier",
        figure(ca.has_multiplier, ca.multiplier, cb.has_multiplier, cb.multiplier, 4));
    tokens = json_object();
    json_object_set_new(tokens, "input",
                        ifigure(a->has_tokens, a->input_tokens, b->has_tokens, b->input_tokens));
    json_object_set_new(tokens, "output",
                        ifigure(a->has_tokens, a->output_tokens, b->has_tokens, b->output_tokens));
    json_object_set_new(cmp, "tokens", tokens);
    return cmp;
}

/* --- the gate ------------------------------------------------------------------------------ */

int compare_check(const json_t *cmp, const struct compare_gate *g, struct buf *why)
{
    const json_t *s = json_object_get(cmp, "resilience_score");
    const json_t *c = json_object_get(cmp, "cost_usd");
    int failed = 0;

    if (g->has_score_drop) {
        if (!esc_has_num(s, "a") || !esc_has_num(s, "b")) {
            buf_addf(why,
                     "resilience score cannot be compared (A: %s, B: %s), so "
                     "--max-score-drop %g cannot hold\n",
                     esc_has_num(s, "a") ? "a score" : "none",
                     esc_has_num(s, "b") ? "a score" : "none", g->max_score_drop);
            failed++;
        } else if (-esc_num(s, "change", 0) > g->max_score_drop) {
            buf_addf(why,
                     "resilience score dropped %.2f points (%.2f to %.2f), over "
                     "--max-score-drop %g\n",
                     -esc_num(s, "change", 0), esc_num(s, "a", 0), esc_num(s, "b", 0),
                     g->max_score_drop);
            failed++;
        }
    }
    if (g->has_cost_increase) {
        double ca = esc_num(c, "a", 0), cb = esc_num(c, "b", 0);
        if (!esc_has_num(c, "change_pct")) {
            buf_addf(why, "cost rose from 0 to %.6f USD, over --max-cost-increase %g%%\n", cb,
                     g->max_cost_increase);
            failed++;
        } else if (esc_num(c, "change_pct", 0) > g->max_cost_increase) {
            buf_addf(why, "cost rose %.2f%% (%.6f to %.6f USD), over --max-cost-increase %g%%\n",
                     esc_num(c, "change_pct", 0), ca, cb, g->max_cost_increase);
            failed++;
        }
    }
    return failed;
}

/* --- rendering ----------------------------------------------------------------------------- */

/* s for a terminal: control bytes as '?', at most max bytes. */
static void add_plain(struct buf *out, const char *s, size_t max)
{
    for (size_t i = 0; s && s[i] && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        buf_addc(out, c < 0x20 || c == 0x7f ? '?' : (char)c);
    }
}

/* A figure's value as text: "-" for null. */
static void fmt_num(char *out, size_t size, const json_t *v, int decimals, const char *unit)
{
    if (json_is_integer(v))
        snprintf(out, size, "%lld%s", (long long)json_integer_value(v), unit);
    else if (json_is_number(v))
        snprintf(out, size, "%.*f%s", decimals, json_number_value(v), unit);
    else
        snprintf(out, size, "-");
}

static void fmt_change(char *out, size_t size, const json_t *v, int decimals, const char *unit)
{
    if (json_is_integer(v))
        snprintf(out, size, "%+lld%s", (long long)json_integer_value(v), unit);
    else if (json_is_number(v))
        snprintf(out, size, "%+.*f%s", decimals, json_number_value(v), unit);
    else
        snprintf(out, size, "-");
}

struct row {
    char name[96], a[48], b[48], change[80];
};

/* The rows of the table, shared by text and Markdown; caller frees. */
static struct row *rows_of(const json_t *cmp, size_t *n)
{
    const json_t *probes = json_object_get(cmp, "probes"), *p, *f;
    size_t cap = 8 + json_array_size(probes) + sizeof(classes) / sizeof(classes[0]), i, k = 0;
    struct row *rows = xcalloc(cap, sizeof(*rows));

    f = json_object_get(cmp, "resilience_score");
    snprintf(rows[k].name, sizeof(rows[k].name), "resilience score");
    fmt_num(rows[k].a, sizeof(rows[k].a), json_object_get(f, "a"), 2, "");
    fmt_num(rows[k].b, sizeof(rows[k].b), json_object_get(f, "b"), 2, "");
    fmt_change(rows[k].change, sizeof(rows[k].change), json_object_get(f, "change"), 2, "");
    k++;
    json_array_foreach(probes, i, p)
    {
        const json_t *r = json_object_get(p, "pass_rate");
        const json_t *ps = json_object_get(p, "passed"), *ev = json_object_get(p, "evaluated");
        char rate[32];
        snprintf(rows[k].name, sizeof(rows[k].name), "probe %.80s", esc_str(p, "id", "?"));
        for (int side = 0; side < 2; side++) {
            const char *key = side ? "b" : "a";
            char *cell = side ? rows[k].b : rows[k].a;
            fmt_num(rate, sizeof(rate), json_object_get(r, key), 4, "");
            if (json_is_integer(json_object_get(ev, key)))
                snprintf(cell, sizeof(rows[k].a), "%lld/%lld %s", (long long)esc_int(ps, key, 0),
                         (long long)esc_int(ev, key, 0), rate);
            else
                snprintf(cell, sizeof(rows[k].a), "not in run");
        }
        fmt_change(rows[k].change, sizeof(rows[k].change), json_object_get(r, "change"), 4, "");
        k++;
    }
    for (i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        f = json_object_get(json_object_get(cmp, "outcomes"), classes[i]);
        if (esc_int(f, "a", 0) == 0 && esc_int(f, "b", 0) == 0)
            continue;
        snprintf(rows[k].name, sizeof(rows[k].name), "outcome %s", classes[i]);
        fmt_num(rows[k].a, sizeof(rows[k].a), json_object_get(f, "a"), 0, "");
        fmt_num(rows[k].b, sizeof(rows[k].b), json_object_get(f, "b"), 0, "");
        fmt_change(rows[k].change, sizeof(rows[k].change), json_object_get(f, "change"), 0, "");
        k++;
    }
    f = json_object_get(cmp, "cost_usd");
    snprintf(rows[k].name, sizeof(rows[k].name), "cost USD");
    fmt_num(rows[k].a, sizeof(rows[k].a), json_object_get(f, "a"), 6, "");
    fmt_num(rows[k].b, sizeof(rows[k].b), json_object_get(f, "b"), 6, "");
    {
        char ch[32], pct[32];
        fmt_change(ch, sizeof(ch), json_object_get(f, "change"), 6, "");
        if (json_is_number(json_object_get(f, "change_pct")))
            fmt_change(pct, sizeof(pct), json_object_get(f, "change_pct"), 2, "%");
        else
            snprintf(pct, sizeof(pct), "from 0");
        snprintf(rows[k].change, sizeof(rows[k].change), "%s (%s)", ch, pct);
    }
    k++;
    f = json_object_get(cmp, "cost_multiplier");
    snprintf(rows[k].name, sizeof(rows[k].name), "cost multiplier");
    fmt_num(rows[k].a, sizeof(rows[k].a), json_object_get(f, "a"), 2, "x");
    fmt_num(rows[k].b, sizeof(rows[k].b), json_object_get(f, "b"), 2, "x");
    fmt_change(rows[k].change, sizeof(rows[k].change), json_object_get(f, "change"), 2, "");
    k++;
    for (i = 0; i < 2; i++) {
        f = json_object_get(json_object_get(cmp, "tokens"), i ? "output" : "input");
        snprintf(rows[k].name, sizeof(rows[k].name), "%s tokens", i ? "output" : "input");
        fmt_num(rows[k].a, sizeof(rows[k].a), json_object_get(f, "a"), 0, "");
        fmt_num(rows[k].b, sizeof(rows[k].b), json_object_get(f, "b"), 0, "");
        fmt_change(rows[k].change, sizeof(rows[k].change), json_object_get(f, "change"), 0, "");
        k++;
    }
    *n = k;
    return rows;
}

/* "run 3: NAME (scored, complete)" for side key. */
static void add_side(struct buf *out, const json_t *cmp, const char *key, int md)
{
    const json_t *s = json_object_get(cmp, key);
    const char *fields[] = {esc_str(s, "source", "?"), esc_str(s, "experiment", "?"),
                            esc_str(s, "verdict", "?"), esc_str(s, "status", "?")};

    for (int i = 0; i < 4; i++) {
        buf_adds(out, i == 0 ? "" : i == 1 ? ": " : i == 2 ? " (" : ", ");
        if (md)
            esc_md(out, fields[i], 200);
        else
            add_plain(out, fields[i], 200);
    }
    buf_adds(out, ")");
}

int compare_render_text(const json_t *cmp, struct buf *out)
{
    size_t n, i;
    struct row *rows = rows_of(cmp, &n);
    const json_t *w;

    buf_adds(out, "A  ");
    add_side(out, cmp, "a", 0);
    buf_adds(out, "\nB  ");
    add_side(out, cmp, "b", 0);
    buf_adds(out, "\n");
    json_array_foreach(json_object_get(cmp, "warnings"), i, w)
    {
        buf_adds(out, "warning: ");
        add_plain(out, json_string_value(w), 600);
        buf_adds(out, "\n");
    }
    buf_addf(out, "\n%-32s %16s %16s  %s\n", "figure", "A", "B", "change");
    for (i = 0; i < n; i++) {
        struct buf name = BUF_INIT;
        add_plain(&name, rows[i].name, sizeof(rows[i].name));
        buf_addf(out, "%-32s %16s %16s  %s\n", name.data, rows[i].a, rows[i].b, rows[i].change);
        buf_release(&name);
    }
    free(rows);
    return 0;
}

int compare_render_md(const json_t *cmp, struct buf *out)
{
    size_t n, i;
    struct row *rows = rows_of(cmp, &n);
    const json_t *w;

    buf_adds(out, "## faultline compare\n\n- A: ");
    add_side(out, cmp, "a", 1);
    buf_adds(out, "\n- B: ");
    add_side(out, cmp, "b", 1);
    buf_adds(out, "\n");
    json_array_foreach(json_object_get(cmp, "warnings"), i, w)
    {
        buf_adds(out, "- **warning**: ");
        esc_md(out, json_string_value(w), 600);
        buf_adds(out, "\n");
    }
    buf_adds(out, "\n| figure | A | B | change |\n| --- | ---: | ---: | ---: |\n");
    for (i = 0; i < n; i++) {
        buf_adds(out, "| ");
        esc_md(out, rows[i].name, sizeof(rows[i].name));
        buf_addf(out, " | %s | %s | ", rows[i].a, rows[i].b);
        esc_md(out, rows[i].change, sizeof(rows[i].change));
        buf_adds(out, " |\n");
    }
    free(rows);
    return 0;
}

/* --- drift --------------------------------------------------------------------------------- */

struct drift {
    json_t *diffs;
    size_t n, figures;
};

/* A side without the figure has no member ("absent" in the text). */
static void diff_add(struct drift *d, const char *path, const json_t *stored,
                     const json_t *regraded)
{
    json_t *o = json_object();

    json_object_set_new(o, "path", json_string(path));
    if (stored)
        json_object_set(o, "stored", (json_t *)stored);
    if (regraded)
        json_object_set(o, "regraded", (json_t *)regraded);
    json_array_append_new(d->diffs, o);
    d->n++;
}

static int is_leaf(const json_t *v)
{
    return !json_is_object(v) && !json_is_array(v);
}

static int leaf_equal(const json_t *x, const json_t *y)
{
    if (json_is_number(x) && json_is_number(y))
        return json_number_value(x) == json_number_value(y);
    return json_equal(x, y);
}

/* 1 when every element of a is an object with a string id, all distinct. */
static int keyed_by_id(const json_t *a)
{
    size_t i, j, n = json_array_size(a);

    if (n == 0)
        return 0;
    for (i = 0; i < n; i++) {
        const char *id = esc_str(json_array_get(a, i), "id", NULL);
        if (id == NULL || strlen(id) > 100)
            return 0;
        for (j = 0; j < i; j++)
            if (strcmp(id, esc_str(json_array_get(a, j), "id", "")) == 0)
                return 0;
    }
    return 1;
}

static const json_t *by_id(const json_t *a, const char *id)
{
    const json_t *x;
    size_t i;

    json_array_foreach(a, i, x) if (strcmp(esc_str(x, "id", ""), id) == 0) return x;
    return NULL;
}

static void walk(struct drift *d, struct buf *path, const json_t *s, const json_t *r);

static void walk_child(struct drift *d, struct buf *path, const char *fmt_key, int is_index,
                       const json_t *s, const json_t *r)
{
    size_t len = path->len;

    if (is_index)
        buf_addf(path, "[%s]", fmt_key);
    else
        buf_addf(path, "%s%s", len ? "." : "", fmt_key);
    walk(d, path, s, r);
    buf_truncate(path, len);
}

static void walk(struct drift *d, struct buf *path, const json_t *s, const json_t *r)
{
    const char *k;
    const json_t *v;
    size_t i;

    /* a leaf on either side (or a side without it): one figure */
    if (s == NULL || r == NULL || is_leaf(s) || is_leaf(r) ||
        json_is_object(s) != json_is_object(r)) {
        int same = s && r && (is_leaf(s) && is_leaf(r) ? leaf_equal(s, r) : json_equal(s, r));
        d->figures++;
        if (!same)
            diff_add(d, path->data, s, r);
        return;
    }
    if (json_is_object(s)) {
        json_object_foreach((json_t *)s, k, v)
        {
            walk_child(d, path, k, 0, v, json_object_get(r, k));
        }
        json_object_foreach((json_t *)r, k, v)
        {
            if (json_object_get(s, k) == NULL)
                walk_child(d, path, k, 0, NULL, v);
        }
        return;
    }
    if (keyed_by_id(s) && keyed_by_id(r)) {
        json_array_foreach(s, i, v)
        {
            const char *id = esc_str(v, "id", "");
            walk_child(d, path, id, 1, v, by_id(r, id));
        }
        json_array_foreach(r, i, v)
        {
            const char *id = esc_str(v, "id", "");
            if (by_id(s, id) == NULL)
                walk_child(d, path, id, 1, NULL, v);
        }
        return;
    }
    for (i = 0; i < json_array_size(s) || i < json_array_size(r); i++) {
        char idx[24];
        snprintf(idx, sizeof(idx), "%zu", i);
        walk_child(d, path, idx, 1, json_array_get(s, i), json_array_get(r, i));
    }
}

size_t compare_drift(const json_t *stored, const json_t *regraded, json_t *diffs, size_t *figures)
{
    struct drift d = {diffs, 0, 0};
    struct buf path = BUF_INIT;
    const json_t *v = json_object_get(regraded, "verdict");
    const struct {
        const char *key;
        const json_t *regraded;
    } top[] = {
        {"verdict", json_object_get(v, "verdict")},
        {"verdict_reason", json_object_get(v, "reason")},
        {"resilience_score", json_object_get(regraded, "resilience_score")},
        {"warnings", json_object_get(regraded, "warnings")},
        {"result", regraded},
    };

    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
        walk_child(&d, &path, top[i].key, 0, json_object_get(stored, top[i].key), top[i].regraded);
    buf_release(&path);
    if (figures)
        *figures = d.figures;
    return d.n;
}

static void add_value(struct buf *out, const json_t *v)
{
    char *s;

    if (v == NULL || json_is_null(v)) {
        buf_adds(out, v ? "null" : "absent");
        return;
    }
    s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
    if (s == NULL)
        return;
    if (strlen(s) > 200) {
        add_plain(out, s, 200);
        buf_adds(out, "...");
    } else {
        add_plain(out, s, 200);
    }
    free(s);
}

int compare_drift_text(const json_t *diffs, struct buf *out)
{
    const json_t *d;
    size_t i;

    json_array_foreach(diffs, i, d)
    {
        add_plain(out, esc_str(d, "path", "?"), 400);
        buf_adds(out, ": stored ");
        add_value(out, json_object_get(d, "stored"));
        buf_adds(out, ", regraded ");
        add_value(out, json_object_get(d, "regraded"));
        buf_adds(out, "\n");
    }
    return 0;
}
