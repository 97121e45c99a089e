/* index: the campaign index; see index.h. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "report/esc.h"
#include "report/history.h"
#include "report/index.h"
#include "util/utf8.h"
#include "util/banned.h"

/* Bytes of a source path or error shown in a Markdown cell. */
#define MD_CELL_MAX 300
/* A verdict's pill in the HTML table (the page's CSS is html.c's: inline, as the CSP allows). */
#define PILL "color:#fff;border-radius:4px;padding:1px 6px;font-weight:600;"

void rpt_index_init(struct rpt_index *ix, enum rpt_format f, const char *out_path)
{
    char dir[4096], *slash;

    memset(ix, 0, sizeof(*ix));
    ix->rows = json_array();
    ix->errors = json_array();
    ix->format = f;
    snprintf(dir, sizeof(dir), "%s", out_path ? out_path : ".");
    if (out_path) {
        slash = strrchr(dir, '/');
        if (slash == NULL)
            snprintf(dir, sizeof(dir), ".");
        else if (slash == dir)
            dir[1] = '\0';
        else
            *slash = '\0';
    }
    if (realpath(dir, ix->base) == NULL)
        ix->base[0] = '\0';
}

void rpt_index_release(struct rpt_index *ix)
{
    json_decref(ix->rows);
    json_decref(ix->errors);
    ix->rows = ix->errors = NULL;
}

/* A JSON string of s with bytes that are not UTF-8 as U+FFFD (json_string refuses them). */
static json_t *jstr(const char *s)
{
    struct buf b = BUF_INIT;
    json_t *j;

    utf8_sanitize(s, strlen(s), &b);
    j = json_string(b.data);
    buf_release(&b);
    return j ? j : json_string("");
}

static void add_error(struct rpt_index *ix, const char *entry, const char *msg)
{
    json_t *o = json_object();

    json_object_set_new(o, "entry", jstr(entry));
    json_object_set_new(o, "error", jstr(msg));
    json_array_append_new(ix->errors, o);
}

json_t *rpt_index_row(const json_t *report, const char *source, const char *link, long long when,
                      long long history_id)
{
    const json_t *result = json_object_get(report, "result"), *r, *n;
    json_t *row = json_object(), *outcomes = json_object();
    const char *k;
    double cost = 0;
    size_t i;

    json_array_foreach(json_object_get(report, "repetitions"), i, r) cost +=
        esc_num(r, "cost_usd", 0);
    json_object_foreach((json_t *)json_object_get(result, "outcomes"), k, n)
    {
        if (json_is_integer(n) && json_integer_value(n) > 0)
            json_object_set_new(outcomes, k, json_integer(json_integer_value(n)));
    }
    json_object_set_new(row, "experiment",
                        jstr(esc_str(json_object_get(report, "experiment"), "name", "?")));
    json_object_set_new(row, "status", json_string(esc_str(report, "status", "?")));
    json_object_set_new(row, "verdict", json_string(esc_str(report, "verdict", "invalid")));
    json_object_set_new(row, "resilience_score",
                        esc_has_num(report, "resilience_score")
                            ? json_real(esc_num(report, "resilience_score", 0))
                            : json_null());
    json_object_set_new(row, "flaky", json_boolean(rpt_flaky(report, NULL)));
    json_object_set_new(
        row, "repetitions",
        json_integer((json_int_t)json_array_size(json_object_get(result, "repetitions"))));
    json_object_set_new(row, "outcomes", outcomes);
    json_object_set_new(row, "cost_usd", json_real(cost));
    json_object_set_new(row, "when", json_integer((json_int_t)when));
    json_object_set_new(row, "source", source ? jstr(source) : json_null());
    json_object_set_new(row, "link", link ? jstr(link) : json_null());
    json_object_set_new(row, "history_id",
                        history_id >= 0 ? json_integer((json_int_t)history_id) : json_null());
    return row;
}

int rpt_index_url(struct buf *out, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = 0;

    for (const unsigned char *p = (const unsigned char *)path; *p && rc == 0; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~/", *p))
            rc = buf_addc(out, (char)*p);
        else
            rc = buf_addf(out, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
    }
    return rc;
}

/* The link to target (an existing path): relative to ix->base when both resolve, else as
 * given; percent-encoded (a relative one starts with ./ or ../). Caller frees. */
static char *link_to(const struct rpt_index *ix, const char *target)
{
    char abs[PATH_MAX];
    struct buf rel = BUF_INIT, url = BUF_INIT;
    size_t common = 0, i;

    if (ix->base[0] == '\0' || realpath(target, abs) == NULL) {
        buf_adds(&rel, target);
        goto encode;
    }
    /* the longest common prefix of whole components */
    for (i = 0; ix->base[i] && ix->base[i] == abs[i]; i++)
        if (abs[i] == '/')
            common = i;
    if (ix->base[i] == '\0' && (abs[i] == '/' || abs[i] == '\0'))
        common = i;
    if (strcmp(ix->base, "/") == 0)
        common = 0;
    for (const char *p = ix->base + common; *p; p++)
        if (*p == '/')
            buf_adds(&rel, "../");
    if (rel.len == 0)
        buf_adds(&rel, "./");
    buf_adds(&rel, abs[common] == '/' ? abs + common + 1 : abs + common);
encode:
    rpt_index_url(&url, rel.data);
    buf_release(&rel);
    return buf_detach(&url, NULL);
}

static long long mtime_of(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 ? (long long)st.st_mtime : 0;
}

static int is_file(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_run_dir(const char *path)
{
    char p[4096];

    return (size_t)snprintf(p, sizeof(p), "%s/run.json", path) < sizeof(p) && is_file(p);
}

/* The link of the report file report_path: its rendering in the index's format when it
 * exists, else the report. Caller frees. */
static char *report_link(const struct rpt_index *ix, const char *report_path)
{
    char p[4096];

    if (ix->format != RPT_JSON && rpt_path(report_path, ix->format, p, sizeof(p)) == 0 &&
        is_file(p))
        return link_to(ix, p);
    return link_to(ix, report_path);
}

/* Loads entry (a report file or a run folder) and adds its row. 1 added, 0 an error entry. */
static int add_entry(struct rpt_index *ix, const char *entry, int is_dir)
{
    struct err e = {0};
    char *run_dir = NULL, *link, p[4096];
    json_t *report = rpt_load(entry, &run_dir, &e);
    long long when;

    free(run_dir);
    if (report == NULL) {
        add_error(ix, entry, e.msg);
        return 0;
    }
    if (is_dir) {
        snprintf(p, sizeof(p), "%s/run.json", entry);
        when = mtime_of(p);
        link = link_to(ix, entry);
    } else {
        when = mtime_of(entry);
        link = report_link(ix, entry);
    }
    json_array_append_new(ix->rows, rpt_index_row(report, entry, link, when, -1));
    free(link);
    json_decref(report);
    return 1;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The report FOLDER.json next to the run folder dir, into out: 1 when it is a file. */
static int sibling_report(const char *dir, char *out, size_t size)
{
    size_t n = strlen(dir);

    while (n > 1 && dir[n - 1] == '/')
        n--;
    return (size_t)snprintf(out, size, "%.*s.json", (int)n, dir) < size && is_file(out);
}

int rpt_index_add_path(struct rpt_index *ix, const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *de;
    char **names = NULL, p[4096], msg[512];
    size_t n = 0, cap = 0;
    int added = 0;

    if (stat(path, &st) < 0) {
        add_error(ix, path, "no such file or folder");
        return 0;
    }
    if (!S_ISDIR(st.st_mode))
        return add_entry(ix, path, 0);
    if (is_run_dir(path))
        return sibling_report(path, p, sizeof(p)) ? add_entry(ix, p, 0) : add_entry(ix, path, 1);
    if ((d = opendir(path)) == NULL) {
        add_error(ix, path, "cannot read the folder");
        return 0;
    }
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == RPT_INDEX_ENTRIES_MAX) {
            snprintf(msg, sizeof(msg), "more than %d entries: the rest is not indexed",
                     RPT_INDEX_ENTRIES_MAX);
            add_error(ix, path, msg);
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            names = xrealloc(names, cap * sizeof(*names));
        }
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), name_cmp);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        char sib[4096];
        if ((size_t)snprintf(p, sizeof(p), "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/",
                             names[i]) >= sizeof(p)) {
            add_error(ix, names[i], "the path is too long");
            continue;
        }
        if (len > 5 && strcmp(names[i] + len - 5, ".json") == 0 && is_file(p))
            added += add_entry(ix, p, 0);
        else if (is_run_dir(p) && !sibling_report(p, sib, sizeof(sib)))
            added += add_entry(ix, p, 1);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (added == 0 && n == 0)
        add_error(ix, path, "no report or run folder in it");
    return added;
}

int rpt_index_add_history(struct rpt_index *ix, const char *db, const char *experiment, int limit,
                          struct err *e)
{
    struct hist *h = hist_open(db, e);
    json_t *runs = NULL, *r;
    size_t i;
    int added = 0;

    if (h == NULL)
        return e->code ? e->code : ERR_IO;
    if ((runs = hist_list(h, experiment, limit, e)) == NULL) {
        hist_close(h);
        return e->code ? e->code : ERR_IO;
    }
    json_array_foreach(runs, i, r)
    {
        long long id = esc_int(r, "id", 0);
        const char *path = esc_str(r, "report", NULL);
        struct err re = {0};
        json_t *report = hist_report(h, id, &re);
        char *link = NULL, entry[64];
        snprintf(entry, sizeof(entry), "history run %lld", id);
        if (report == NULL) {
            add_error(ix, entry, re.msg);
            continue;
        }
        if (path && path[0] && is_file(path))
            link = report_link(ix, path);
        json_array_append_new(ix->rows, rpt_index_row(report, path && path[0] ? path : entry, link,
                                                      esc_int(r, "recorded_at", 0), id));
        free(link);
        json_decref(report);
        added++;
    }
    json_decref(runs);
    hist_close(h);
    return added;
}

/* ---- rendering ---- */

static int row_cmp(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    long long tx = esc_int(x, "when", 0), ty = esc_int(y, "when", 0);
    long long hx = esc_int(x, "history_id", -1), hy = esc_int(y, "history_id", -1);

    if (tx != ty)
        return tx < ty ? 1 : -1;
    if (hx != hy)
        return hx < hy ? 1 : -1;
    return strcmp(esc_str(x, "source", ""), esc_str(y, "source", ""));
}

static void sort_rows(struct rpt_index *ix)
{
    size_t n = json_array_size(ix->rows), i;
    json_t **v, *sorted = json_array(), *r;

    if (n < 2) {
        json_decref(sorted);
        return;
    }
    v = xcalloc(n, sizeof(*v));
    json_array_foreach(ix->rows, i, r) v[i] = r;
    qsort(v, n, sizeof(*v), row_cmp);
    for (i = 0; i < n; i++)
        json_array_append(sorted, v[i]);
    free(v);
    json_decref(ix->rows);
    ix->rows = sorted;
}

static void when_text(char *out, size_t size, long long when)
{
    time_t t = (time_t)when;
    struct tm tm;

    snprintf(out, size, "?");
    if (when > 0 && gmtime_r(&t, &tm))
        strftime(out, size, "%Y-%m-%d %H:%M:%S", &tm);
}

/* "SAFE_SUCCESS 4, HARMFUL_ACTION 1" (text, unescaped) into out. */
static void mix_text(struct buf *out, const json_t *row)
{
    const char *k;
    const json_t *n;
    int first = 1;

    json_object_foreach((json_t *)json_object_get(row, "outcomes"), k, n)
    {
        buf_addf(out, "%s%s %lld", first ? "" : ", ", k, (long long)json_integer_value(n));
        first = 0;
    }
}

static void html_row(struct buf *b, const json_t *row)
{
    char when[32], score[32] = "–";
    const char *verdict = esc_str(row, "verdict", "invalid"), *link = esc_str(row, "link", NULL);
    int has = esc_has_num(row, "resilience_score");
    struct buf mix = BUF_INIT;

    when_text(when, sizeof(when), esc_int(row, "when", 0));
    if (has)
        snprintf(score, sizeof(score), "%.2f", esc_num(row, "resilience_score", 0));
    buf_addf(b, "<tr><td>%s</td><td>", when);
    esc_xmls(b, esc_str(row, "experiment", "?"));
    buf_adds(b, "</td><td><span class=\"pill\" style=\"" PILL "background:");
    buf_adds(b, esc_verdict_colour(verdict, has, esc_num(row, "resilience_score", 0)));
    buf_adds(b, "\">");
    esc_xmls(b, verdict);
    buf_adds(b, "</span>");
    if (json_is_true(json_object_get(row, "flaky")))
        buf_adds(b, " <span class=\"pill\" style=\"" PILL "background:#7b2cbf\">flaky</span>");
    buf_addf(b, "</td><td class=\"n\">%s</td><td>", score);
    mix_text(&mix, row);
    esc_xmls(b, mix.data);
    buf_addf(b, "</td><td class=\"n\">%.4f</td><td>", esc_num(row, "cost_usd", 0));
    if (link) {
        buf_adds(b, "<a href=\"");
        esc_xmls(b, link);
        buf_adds(b, "\">");
        esc_xmls(b, esc_str(row, "source", "report"));
        buf_adds(b, "</a>");
    } else {
        esc_xmls(b, esc_str(row, "source", "–"));
    }
    buf_adds(b, "</td></tr>\n");
    buf_release(&mix);
}

static int render_html(const struct rpt_index *ix, struct buf *out)
{
    const json_t *r;
    size_t i;

    rpt_html_head(out, "campaign index");
    buf_addf(out,
             "<header class=\"top\"><div><h1>Campaign index</h1><div class=\"mute\">%zu run%s, "
             "newest first",
             json_array_size(ix->rows), json_array_size(ix->rows) == 1 ? "" : "s");
    if (json_array_size(ix->errors))
        buf_addf(out, " · %zu entries not indexed", json_array_size(ix->errors));
    buf_adds(out, "</div></div></header>\n");
    if (json_array_size(ix->errors)) {
        buf_adds(out, "<h2>Not indexed</h2>\n");
        json_array_foreach(ix->errors, i, r)
        {
            buf_adds(out, "<div class=\"warn\"><code>");
            esc_xmls(out, esc_str(r, "entry", "?"));
            buf_adds(out, "</code>: ");
            esc_xmls(out, esc_str(r, "error", "?"));
            buf_adds(out, "</div>\n");
        }
    }
    buf_adds(out, "<h2>Runs</h2>\n<div class=\"wrap\"><table class=\"index\"><tr><th>recorded "
                  "(UTC)</th><th>experiment</th><th>verdict</th><th>score</th><th>outcomes</th>"
                  "<th>cost USD</th><th>report</th></tr>\n");
    json_array_foreach(ix->rows, i, r) html_row(out, r);
    buf_adds(out, "</table></div>\n");
    return rpt_html_foot(out, "faultline campaign index");
}

static void md_row(struct buf *b, const json_t *row)
{
    char when[32];
    const char *link = esc_str(row, "link", NULL);
    struct buf mix = BUF_INIT;

    when_text(when, sizeof(when), esc_int(row, "when", 0));
    buf_addf(b, "| %s | ", when);
    esc_md(b, esc_str(row, "experiment", "?"), MD_CELL_MAX);
    buf_adds(b, " | ");
    esc_md(b, esc_str(row, "verdict", "invalid"), 40);
    if (json_is_true(json_object_get(row, "flaky")))
        buf_adds(b, " (flaky)");
    if (esc_has_num(row, "resilience_score"))
        buf_addf(b, " | %.2f | ", esc_num(row, "resilience_score", 0));
    else
        buf_adds(b, " | – | ");
    mix_text(&mix, row);
    esc_md(b, mix.data, MD_CELL_MAX);
    buf_addf(b, " | %.4f | ", esc_num(row, "cost_usd", 0));
    if (link) {
        buf_adds(b, "[");
        esc_md(b, esc_str(row, "source", "report"), MD_CELL_MAX);
        buf_adds(b, "](");
        buf_adds(b, link); /* percent-encoded: no space, parenthesis or bracket */
        buf_adds(b, ")");
    } else {
        esc_md(b, esc_str(row, "source", "–"), MD_CELL_MAX);
    }
    buf_adds(b, " |\n");
    buf_release(&mix);
}

static int render_md(const struct rpt_index *ix, struct buf *out)
{
    const json_t *r;
    size_t i, n = json_array_size(ix->rows);

    buf_addf(out, "## faultline campaign index\n\n%zu run%s, newest first.\n\n", n,
             n == 1 ? "" : "s");
    json_array_foreach(ix->errors, i, r)
    {
        if (i == 20) {
            buf_addf(out, "- and %zu more entries not indexed\n", json_array_size(ix->errors) - i);
            break;
        }
        buf_adds(out, "- not indexed: ");
        esc_md(out, esc_str(r, "entry", "?"), MD_CELL_MAX);
        buf_adds(out, ": ");
        esc_md(out, esc_str(r, "error", "?"), MD_CELL_MAX);
        buf_adds(out, "\n");
    }
    if (json_array_size(ix->errors))
        buf_adds(out, "\n");
    buf_adds(out, "| recorded (UTC) | experiment | verdict | score | outcomes | cost USD | report "
                  "|\n| --- | --- | --- | ---: | --- | ---: | --- |\n");
    json_array_foreach(ix->rows, i, r)
    {
        struct buf line = BUF_INIT;
        md_row(&line, r);
        /* the Markdown cap (a pull-request comment): the rows that fit, then how many not */
        if (out->len + line.len + 100 > RPT_MD_MAX) {
            buf_release(&line);
            buf_addf(out, "\n%zu more runs left out (the Markdown index stops at %d characters)\n",
                     n - i, RPT_MD_MAX);
            break;
        }
        buf_add(out, line.data, line.len);
        buf_release(&line);
    }
    return buf_adds(out, "");
}

int rpt_index_render(struct rpt_index *ix, struct buf *out)
{
    json_t *doc;
    char *s;
    int rc;

    sort_rows(ix);
    if (ix->format == RPT_HTML)
        return render_html(ix, out);
    if (ix->format == RPT_MD)
        return render_md(ix, out);
    doc = json_pack("{s:i,s:O,s:O}", "format", 1, "runs", ix->rows, "errors", ix->errors);
    s = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15)) : NULL;
    rc = s ? buf_adds(out, s) : ERR_NOMEM;
    if (rc == 0)
        rc = buf_addc(out, '\n');
    free(s);
    json_decref(doc);
    return rc;
}
