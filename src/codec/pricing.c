/*
 * pricing: the built-in price table (protocols.md section 4), lookup with name tolerance,
 * cost of one call, override files, and the Markdown docs/pricing.md is generated from.
 *
 * A table is a heap array of entries whose strings it owns (built-in rows are copied in
 * pricing_new, so one free path serves both). Lookup normalises the name step by step (see
 * pricing.h) and tries each step against the rows; rows are few (tens), so a linear scan is
 * simpler than an index and fast enough for one lookup per model call. Override files are JSON
 * (jansson) or YAML (the JSON view of util/yaml.h, which refuses aliases and duplicate keys);
 * both go through one checker, with positions for YAML.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/pricing.h"
#include "util/fs.h"
#include "util/yaml.h"
#include "util/text.h"
#include "util/banned.h"

#define PRICING_FILE_MAX ((size_t)1 << 20)
#define PRICING_ROWS_MAX 10000

struct pricing_table {
    struct pricing_entry *v;
    size_t n, alloc;
    struct pricing_entry dflt;
};

/* Rates: input, 5m cache write, 1h cache write, cache read, output (USD per 1M tokens). */
#define R(i, w, w1, r, o)                                                                          \
    {                                                                                              \
        i, w, w1, r, o                                                                             \
    }
#define NOTIER 0, R(0, 0, 0, 0, 0)
#define OA(i, r, o) R(i, i, i, r, o) /* OpenAI: no cache-write premium */

static const struct pricing_entry builtin[] = {
    {"claude-opus-5-5", R(4, 5, 8, 0.20, 20), NOTIER, "anthropic",
     "Opus 5.5; id follows the naming pattern, not seen verbatim"},
    {"claude-opus-5", R(5, 6.25, 10, 0.50, 25), NOTIER, "anthropic", "Opus 5"},
    {"claude-opus-4-8", R(5, 6.25, 10, 0.50, 25), NOTIER, "anthropic", "Opus 4.8"},
    {"claude-opus-4-7", R(5, 6.25, 10, 0.50, 25), NOTIER, "anthropic", "Opus 4.7"},
    {"claude-opus-4-6", R(5, 6.25, 10, 0.50, 25), NOTIER, "anthropic", "Opus 4.6"},
    {"claude-opus-4-5", R(5, 6.25, 10, 0.50, 25), NOTIER, "anthropic", "Opus 4.5"},
    {"claude-opus-4-1", R(15, 18.75, 30, 1.50, 75), NOTIER, "anthropic",
     "Opus 4.1, retired on the first-party API"},
    {"claude-opus-4", R(15, 18.75, 30, 1.50, 75), NOTIER, "anthropic",
     "Opus 4, retired on the first-party API"},
    {"claude-sonnet-5-5", R(2, 2.50, 4, 0.10, 10), NOTIER, "anthropic",
     "Sonnet 5.5; cache read 0.20 before 2026-10-07"},
    {"claude-sonnet-5", R(2, 2.50, 4, 0.20, 10), NOTIER, "anthropic", "Sonnet 5"},
    {"claude-sonnet-4-6", R(3, 3.75, 6, 0.30, 15), NOTIER, "anthropic", "Sonnet 4.6"},
    {"claude-sonnet-4-5", R(3, 3.75, 6, 0.30, 15), NOTIER, "anthropic", "Sonnet 4.5"},
    {"claude-sonnet-4", R(3, 3.75, 6, 0.30, 15), NOTIER, "anthropic", "Sonnet 4"},
    {"claude-haiku-5-5", R(0.10, 0.125, 0.20, 0.01, 0.50), 100000, R(0.50, 0.625, 1.00, 0.05, 2.50),
     "anthropic", "Haiku 5.5; a prompt over 100k tokens prices all its tokens at the tier"},
    {"claude-haiku-4-5", R(1, 1.25, 2, 0.10, 5), NOTIER, "anthropic", "Haiku 4.5"},
    {"claude-fable-5-1", R(10, 12.50, 20, 0.25, 50), NOTIER, "anthropic",
     "Fable 5.1; id guessed from the naming pattern"},
    {"claude-mythos-5-1", R(10, 12.50, 20, 0.25, 50), NOTIER, "anthropic",
     "Mythos 5.1; id guessed from the naming pattern"},
    {"gpt-5.5", OA(5.00, 0.50, 30.00), NOTIER, "openai", ""},
    {"gpt-5.5-pro", OA(30, 30, 180), NOTIER, "openai", "no cached-input discount"},
    {"gpt-5.4", OA(2.50, 0.25, 15.00), NOTIER, "openai", ""},
    {"gpt-5.4-mini", OA(0.75, 0.075, 4.50), NOTIER, "openai", ""},
    {"gpt-5.4-nano", OA(0.20, 0.02, 1.25), NOTIER, "openai", ""},
    {"gpt-5", OA(1.25, 0.125, 10.00), NOTIER, "openai", ""},
    {"gpt-5-codex", OA(1.25, 0.125, 10.00), NOTIER, "openai", ""},
    {"gpt-5-mini", OA(0.25, 0.025, 2.00), NOTIER, "openai", ""},
    {"gpt-4.1", OA(2.00, 0.50, 8.00), NOTIER, "openai", ""},
    {"gpt-4o-mini", OA(0.15, 0.075, 0.60), NOTIER, "openai", ""},
};

static const struct pricing_entry builtin_default = {
    "default", R(15, 18.75, 30, 1.50, 75), NOTIER, "",
    "unknown models: Opus 4.1 rates, so a cost ceiling errs on the safe side"};

static void entry_copy(struct pricing_entry *dst, const struct pricing_entry *src)
{
    *dst = *src;
    dst->model = xstrdup(src->model);
    dst->provider = xstrdup(src->provider ? src->provider : "");
    dst->note = xstrdup(src->note ? src->note : "");
}

static void entry_free(struct pricing_entry *en)
{
    free((char *)en->model);
    free((char *)en->provider);
    free((char *)en->note);
}

static void table_add(struct pricing_table *t, const struct pricing_entry *src)
{
    if (t->n == t->alloc) {
        t->alloc = t->alloc ? t->alloc * 2 : 64;
        t->v = xrealloc(t->v, t->alloc * sizeof(*t->v));
    }
    entry_copy(&t->v[t->n++], src);
}

struct pricing_table *pricing_new(void)
{
    struct pricing_table *t = xcalloc(1, sizeof(*t));
    for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
        table_add(t, &builtin[i]);
    entry_copy(&t->dflt, &builtin_default);
    return t;
}

void pricing_free(struct pricing_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n; i++)
        entry_free(&t->v[i]);
    entry_free(&t->dflt);
    free(t->v);
    free(t);
}

size_t pricing_count(const struct pricing_table *t)
{
    return t->n;
}

const struct pricing_entry *pricing_at(const struct pricing_table *t, size_t i)
{
    return i < t->n ? &t->v[i] : NULL;
}

const struct pricing_entry *pricing_default(const struct pricing_table *t)
{
    return &t->dflt;
}

static const struct pricing_entry *find_exact(const struct pricing_table *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].model, name) == 0)
            return &t->v[i];
    return NULL;
}

static int all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* Cuts a trailing "[...]" tag and a "-YYYYMMDD", "@YYYYMMDD" or "-YYYY-MM-DD" date. */
static void strip_suffixes(char *s)
{
    size_t n = strlen(s);
    if (n > 0 && s[n - 1] == ']') {
        char *lb = strrchr(s, '[');
        if (lb) {
            *lb = '\0';
            n = strlen(s);
        }
    }
    if (n > 9 && (s[n - 9] == '-' || s[n - 9] == '@') && all_digits(s + n - 8, 8)) {
        s[n - 9] = '\0';
        return;
    }
    if (n > 11 && s[n - 11] == '-' && all_digits(s + n - 10, 4) && s[n - 6] == '-' &&
        all_digits(s + n - 5, 2) && s[n - 3] == '-' && all_digits(s + n - 2, 2))
        s[n - 11] = '\0';
}

int pricing_lookup(const struct pricing_table *t, const char *model,
                   const struct pricing_entry **out)
{
    char name[256];
    const struct pricing_entry *hit;

    *out = &t->dflt;
    if (model == NULL || model[0] == '\0')
        return 0;
    if ((hit = find_exact(t, model)) != NULL) {
        *out = hit;
        return 1;
    }
    const char *slash = strrchr(model, '/');
    snprintf(name, sizeof(name), "%s", slash ? slash + 1 : model);
    if ((hit = find_exact(t, name)) != NULL) {
        *out = hit;
        return 1;
    }
    strip_suffixes(name);
    if ((hit = find_exact(t, name)) != NULL) {
        *out = hit;
        return 1;
    }
    size_t best = 0;
    for (size_t i = 0; i < t->n; i++) {
        size_t k = strlen(t->v[i].model);
        char next = name[k];
        if (k > best && strncmp(name, t->v[i].model, k) == 0 &&
            (next == '-' || next == '@' || next == ':')) {
            best = k;
            hit = &t->v[i];
        }
    }
    if (hit) {
        *out = hit;
        return 1;
    }
    return 0;
}

double pricing_cost(const struct pricing_table *t, const char *model, const struct wire_usage *u,
                    int *known)
{
    const struct pricing_entry *en;
    int k = pricing_lookup(t, model, &en);
    const struct pricing_rates *r = &en->rates;
    int64_t w1h = u->cache_write_1h_tokens, w = u->cache_write_tokens;

    if (known)
        *known = k;
    if (w1h > w)
        w1h = w;
    if (w1h < 0)
        w1h = 0;
    int64_t prompt = u->input_tokens + u->cache_write_tokens + u->cache_read_tokens;
    if (en->tier_above > 0 && prompt > en->tier_above)
        r = &en->tier;
    double c = ((double)u->input_tokens * r->input + (double)(w - w1h) * r->cache_write +
                (double)w1h * r->cache_write_1h + (double)u->cache_read_tokens * r->cache_read +
                (double)u->output_tokens * r->output) /
               1e6;
    return c > 0 ? c : 0;
}

/* --- override files --- */

/* Sets e to "NAME:LINE:COL: what" at the value container[key], or at container itself when key
 * is NULL (ydoc_json_err; m is NULL for a JSON file, which gives "NAME: what"). */
static int pos_err(struct err *e, int code, const char *name, const struct ydoc_marks *m,
                   const json_t *container, const char *key, const char *what)
{
    return ydoc_json_err(e, code, name, m, container, key, 0, what);
}

/* Reads o[key] (absent: *set untouched) as a rate. Returns 0, or ERR_INVALID: not a number
 * from 0 to 1e9 (the caller says where). */
static int read_rate(const json_t *o, const char *key, double *out, int *set)
{
    const json_t *v = json_object_get(o, key);
    if (v == NULL)
        return 0;
    if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e9)
        return ERR_INVALID;
    *out = json_number_value(v);
    *set = 1;
    return 0;
}

/* Reads the five rates of o into r. Returns 0, or ERR_INVALID with *bad the first bad key. */
static int read_rates(const json_t *o, struct pricing_rates *r, const char **bad)
{
    static const char *const keys[] = {"input", "cache_write", "cache_write_1h", "cache_read",
                                       "output"};
    double v[5] = {0, 0, 0, 0, 0};
    int set[5] = {0, 0, 0, 0, 0};
    for (int i = 0; i < 5; i++) {
        if (read_rate(o, keys[i], &v[i], &set[i]) < 0) {
            *bad = keys[i];
            return ERR_INVALID;
        }
    }
    r->input = v[0];
    r->output = v[4];
    r->cache_write = set[1] ? v[1] : r->input;
    r->cache_write_1h = set[2] ? v[2] : r->cache_write;
    r->cache_read = set[3] ? v[3] : r->input;
    return 0;
}

static int parse_row(const char *name, const struct ydoc_marks *m, const char *model,
                     const json_t *o, struct pricing_entry *en, struct err *e)
{
    static const char *const allowed[] = {"input",      "cache_write", "cache_write_1h",
                                          "cache_read", "output",      "tier_above",
                                          "tier",       "note",        NULL};
    const char *key, *bad = NULL;
    const json_t *v;
    char msg[200];

    if (!json_is_object(o)) {
        snprintf(msg, sizeof(msg), "prices of '%s' must be a mapping", model);
        return pos_err(e, ERR_INVALID, name, m, o, NULL, msg);
    }
    json_object_foreach((json_t *)o, key, v)
    {
        size_t i;
        for (i = 0; allowed[i] && strcmp(allowed[i], key) != 0; i++)
            ;
        if (allowed[i] == NULL) {
            snprintf(msg, sizeof(msg), "unknown key '%.64s' in the prices of '%.64s'", key, model);
            return ydoc_json_err(e, ERR_INVALID, name, m, o, key, 1, msg);
        }
    }
    memset(en, 0, sizeof(*en));
    en->model = model;
    en->provider = "";
    en->note = json_string_value(json_object_get(o, "note"));
    if (en->note == NULL)
        en->note = "";
    if (read_rates(o, &en->rates, &bad) < 0) {
        snprintf(msg, sizeof(msg), "'%s' of '%s' must be a number from 0 to 1e9", bad, model);
        return pos_err(e, ERR_INVALID, name, m, o, bad, msg);
    }
    v = json_object_get(o, "tier_above");
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            snprintf(msg, sizeof(msg), "'tier_above' of '%s' must be a token count", model);
            return pos_err(e, ERR_INVALID, name, m, o, "tier_above", msg);
        }
        en->tier_above = json_integer_value(v);
        const json_t *tier = json_object_get(o, "tier");
        if (!json_is_object(tier)) {
            snprintf(msg, sizeof(msg), "'%s' has tier_above but no 'tier' mapping", model);
            return pos_err(e, ERR_INVALID, name, m, o, "tier_above", msg);
        }
        if (read_rates(tier, &en->tier, &bad) < 0) {
            snprintf(msg, sizeof(msg), "tier '%s' of '%s' must be a number from 0 to 1e9", bad,
                     model);
            return pos_err(e, ERR_INVALID, name, m, tier, bad, msg);
        }
    } else if (json_object_get(o, "tier")) {
        snprintf(msg, sizeof(msg), "'%s' has a tier but no 'tier_above'", model);
        return pos_err(e, ERR_INVALID, name, m, o, "tier", msg);
    }
    return 0;
}

int pricing_load_text(struct pricing_table *t, const char *text, size_t len, const char *name,
                      int is_json, struct err *e)
{
    static const struct ydoc_limits yaml_limits = {
        .max_nodes = 200000, .no_aliases = 1, .kind = "a price file"};
    struct ydoc_marks *marks = NULL;
    json_t *root = NULL;
    struct pricing_entry *rows = NULL, dflt;
    size_t nrows = 0;
    int have_dflt = 0, rc = 0;
    const char *key;
    json_t *v;

    if (len > PRICING_FILE_MAX)
        return err_set(e, ERR_LIMIT, "%s: larger than %zu bytes", name, PRICING_FILE_MAX);
    if (is_json) {
        json_error_t je;
        root = json_loadb(text, len, 0, &je);
        if (root == NULL)
            return err_set(e, ERR_PARSE, "%s:%d:%d: %s", name, je.line, je.column, JE_TEXT(je));
    } else {
        root = ydoc_parse_json(text, len, name, &yaml_limits, &marks, e);
        if (root == NULL)
            return e ? e->code : ERR_PARSE;
    }
    if (!json_is_object(root)) {
        rc = pos_err(e, ERR_INVALID, name, marks, root, NULL,
                     "a price file is a mapping with 'models' and/or 'default'");
        goto out;
    }
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "models") != 0 && strcmp(key, "default") != 0) {
            char msg[160];
            snprintf(msg, sizeof(msg), "unknown key '%.64s' (expected 'models' or 'default')", key);
            rc = ydoc_json_err(e, ERR_INVALID, name, marks, root, key, 1, msg);
            goto out;
        }
    }
    json_t *models = json_object_get(root, "models");
    if (models && !json_is_object(models)) {
        rc = pos_err(e, ERR_INVALID, name, marks, root, "models",
                     "'models' must map model ids to prices");
        goto out;
    }
    if (json_object_size(models) > PRICING_ROWS_MAX) {
        rc = pos_err(e, ERR_LIMIT, name, marks, root, "models", "more than 10000 models");
        goto out;
    }
    rows = xcalloc(json_object_size(models) + 1, sizeof(*rows));
    json_object_foreach(models, key, v)
    {
        if (key[0] == '\0') {
            rc = pos_err(e, ERR_INVALID, name, marks, models, key, "empty model id");
            goto out;
        }
        if ((rc = parse_row(name, marks, key, v, &rows[nrows], e)) < 0)
            goto out;
        nrows++;
    }
    v = json_object_get(root, "default");
    if (v) {
        if ((rc = parse_row(name, marks, "default", v, &dflt, e)) < 0)
            goto out;
        have_dflt = 1;
    }
    /* All rows are valid: apply them. */
    for (size_t i = 0; i < nrows; i++) {
        struct pricing_entry *old = (struct pricing_entry *)find_exact(t, rows[i].model);
        if (old) {
            const char *prov = old->provider;
            rows[i].provider = prov;
            struct pricing_entry copy;
            entry_copy(&copy, &rows[i]);
            entry_free(old);
            *old = copy;
        } else {
            table_add(t, &rows[i]);
        }
    }
    if (have_dflt) {
        entry_free(&t->dflt);
        entry_copy(&t->dflt, &dflt);
    }
out:
    free(rows);
    json_decref(root);
    ydoc_marks_free(marks);
    return rc;
}

int pricing_load_file(struct pricing_table *t, const char *path, struct err *e)
{
    struct buf b = BUF_INIT;
    size_t n = strlen(path);
    int rc = fs_read_file(path, PRICING_FILE_MAX, &b, e);
    if (rc == 0)
        rc = pricing_load_text(t, b.data, b.len, path, n >= 5 && strcmp(path + n - 5, ".json") == 0,
                               e);
    buf_release(&b);
    return rc;
}

/* --- docs --- */

/* A rate as text: up to 4 decimals, trailing zeros trimmed, at least 2 decimals. */
static void fmt_rate(char *out, size_t size, double v)
{
    snprintf(out, size, "%.4f", v);
    size_t n = strlen(out);
    char *dot = strchr(out, '.');
    while (dot && n > (size_t)(dot - out) + 3 && out[n - 1] == '0')
        out[--n] = '\0';
}

static int md_row(struct buf *out, const char *model, const char *provider,
                  const struct pricing_rates *r, const char *note)
{
    char a[5][32];
    fmt_rate(a[0], sizeof(a[0]), r->input);
    fmt_rate(a[1], sizeof(a[1]), r->cache_write);
    fmt_rate(a[2], sizeof(a[2]), r->cache_write_1h);
    fmt_rate(a[3], sizeof(a[3]), r->cache_read);
    fmt_rate(a[4], sizeof(a[4]), r->output);
    return buf_addf(out, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", model, provider, a[0], a[1],
                    a[2], a[3], a[4], note);
}

int pricing_markdown(const struct pricing_table *t, struct buf *out)
{
    int rc = buf_adds(out, "| model | provider | input | cache write 5m | cache write 1h | "
                           "cache read | output | note |\n"
                           "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for (size_t i = 0; rc == 0 && i < t->n; i++) {
        const struct pricing_entry *en = &t->v[i];
        char label[300];
        rc = md_row(out, en->model, en->provider, &en->rates, en->note);
        if (rc == 0 && en->tier_above > 0) {
            snprintf(label, sizeof(label), "%s, prompt > %lld tokens", en->model,
                     (long long)en->tier_above);
            rc = md_row(out, label, en->provider, &en->tier, "all tokens of the call");
        }
    }
    if (rc == 0)
        rc = md_row(out, "(default)", "any", &t->dflt.rates, t->dflt.note);
    return rc;
}
