/*
 * experiment: reads an experiment file (YAML) into a validated, normalised, hashed struct
 * experiment, reporting every problem in one pass (see experiment.h, docs/experiment-format.md).
 *
 * How: the YAML reader (util/yaml.h) builds a node tree with marks under hard limits (size,
 * nodes, depth, aliases); then one walk checks it against the structure tables (format.h) and
 * the catalog (catalog.h), appending a diagnostic for each problem and carrying on, and fills
 * struct experiment as it goes. Cross-checks that need the whole file (world tools, server
 * names, probe weights) run last. Only when no error was found is the experiment returned, with
 * its hash: SHA-256 of the canonical JSON of experiment_to_json.
 *
 * Unknown keys are always errors, with a "did you mean" from an edit distance over the keys
 * that mapping takes: a misspelled key is never ignored.
 */
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/url.h"
#include "experiment/experiment.h"
#include "experiment/format.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/num.h"
#include "util/yaml.h"
#include "util/jschema.h"
#include "util/regex_safe.h"
#include "util/text.h"
#include "util/banned.h"

struct vctx {
    struct experiment_diags *d;
    struct experiment *x;
    int has_world;
    char *world_name;
    const struct ynode *task_success; /* the task_success probe item, for the weight warning */
};

/* ---- diagnostics ------------------------------------------------------------------------- */

static void vdiag(struct experiment_diags *d, int warn, int line, int col, const char *fmt,
                  va_list ap)
{
    struct experiment_diag *g;

    if (!warn)
        d->nerrors++;
    if (d->n >= EXPERIMENT_DIAGS_MAX) {
        d->dropped++;
        return;
    }
    if (d->n == d->alloc) {
        d->alloc = d->alloc ? d->alloc * 2 : 16;
        d->v = xrealloc(d->v, d->alloc * sizeof(*d->v));
    }
    g = &d->v[d->n++];
    g->is_warning = warn;
    g->mark.line = line;
    g->mark.col = col;
    vsnprintf(g->msg, sizeof(g->msg), fmt, ap);
}

static void diag_at(struct experiment_diags *d, int warn, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void diag_at(struct experiment_diags *d, int warn, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdiag(d, warn, line, col, fmt, ap);
    va_end(ap);
}

static void err_at(struct vctx *v, const struct ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void err_at(struct vctx *v, const struct ynode *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdiag(v->d, 0, n ? n->line : 1, n ? n->col : 1, fmt, ap);
    va_end(ap);
}

static void warn_at(struct vctx *v, const struct ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn_at(struct vctx *v, const struct ynode *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdiag(v->d, 1, n ? n->line : 1, n ? n->col : 1, fmt, ap);
    va_end(ap);
}

/* Sorts d->v[from..] by position, keeping the order of equal positions (insertion sort: at
 * most EXPERIMENT_DIAGS_MAX entries). */
static void sort_diags(struct experiment_diags *d, size_t from)
{
    for (size_t i = from + 1; i < d->n; i++) {
        struct experiment_diag t = d->v[i];
        size_t j = i;
        while (j > from &&
               (d->v[j - 1].mark.line > t.mark.line ||
                (d->v[j - 1].mark.line == t.mark.line && d->v[j - 1].mark.col > t.mark.col))) {
            d->v[j] = d->v[j - 1];
            j--;
        }
        d->v[j] = t;
    }
}

void experiment_diags_release(struct experiment_diags *d)
{
    free(d->v);
    memset(d, 0, sizeof(*d));
}

void experiment_diags_format(const struct experiment_diags *d, const char *file, struct buf *out)
{
    for (size_t i = 0; i < d->n; i++)
        buf_addf(out, "%s:%d:%d: %s: %s\n", file, d->v[i].mark.line, d->v[i].mark.col,
                 d->v[i].is_warning ? "warning" : "error", d->v[i].msg);
    if (d->dropped)
        buf_addf(out, "%s: %zu more problems not shown\n", file, d->dropped);
}

/* ---- small helpers ------------------------------------------------------------------------ */

#define Q(s) text_shown((s), strlen(s), (char[TEXT_SHOWN_SIZE]){0})

/* What a node is, for "found ..." in messages. */
static const char *found(const struct ynode *n, char out[80])
{
    char t[TEXT_SHOWN_SIZE];
    switch (n->type) {
    case YNODE_NULL:
        return n->str && *n->str ? "null" : "nothing";
    case YNODE_SEQ:
        return "a list";
    case YNODE_MAP:
        return "a mapping";
    case YNODE_STR:
        snprintf(out, 80, "the string '%s'", text_shown(n->str, strlen(n->str), t));
        return out;
    default:
        snprintf(out, 80, "%s %s", n->type == YNODE_BOOL ? "the boolean" : "the number",
                 text_shown(n->str, strlen(n->str), t));
        return out;
    }
}
#define FOUND(n) found((n), (char[80]){0})

/* A number for a message, without an exponent for integers. */
static const char *num(double d, char out[32])
{
    if (d == floor(d) && fabs(d) < 1e15)
        snprintf(out, 32, "%.0f", d);
    else
        snprintf(out, 32, "%g", d);
    return out;
}
#define NUM(d) num((d), (char[32]){0})

static int re_full_match(const char *pattern, const char *s)
{
    regex_t re;
    int ok;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return 0;
    ok = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

/* Lists of names for suggestions and messages. */
struct names {
    const char *v[96];
    size_t n;
};

static void names_add(struct names *nm, const char *s)
{
    if (nm->n < sizeof(nm->v) / sizeof(nm->v[0]))
        nm->v[nm->n++] = s;
}

static const char *names_join(const struct names *nm, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < nm->n && off + 4 < len; i++) {
        int w = snprintf(out + off, len - off, "%s%s", i ? ", " : "", nm->v[i]);
        if (w < 0 || (size_t)w >= len - off) {
            snprintf(out + (len > 4 ? len - 4 : 0), 4, "...");
            break;
        }
        off += (size_t)w;
    }
    return out;
}

static void section_names(const struct format_section *sec, struct names *nm)
{
    for (const struct format_key *k = sec->keys; k->name; k++)
        names_add(nm, k->name);
}

/* Reports every key of map that is neither in sec nor in extra, and every required key of
 * sec that map lacks. where names the mapping in messages ("" for the top level). */
static void check_keys(struct vctx *v, const struct ynode *map, const struct format_section *sec,
                       const struct names *extra, const char *where)
{
    struct names all = {0};
    char list[160];

    section_names(sec, &all);
    for (size_t i = 0; extra && i < extra->n; i++)
        names_add(&all, extra->v[i]);
    for (size_t i = 0; i < map->n; i++) {
        const struct ynode *k = map->keys[i];
        int known = 0;
        for (size_t j = 0; j < all.n && !known; j++)
            known = strcmp(all.v[j], k->str) == 0;
        if (known)
            continue;
        const char *s = text_suggest(k->str, all.v, all.n);
        if (s)
            err_at(v, k, "unknown key '%s'%s%s (did you mean '%s'?)", Q(k->str),
                   *where ? " in " : "", where, s);
        else
            err_at(v, k, "unknown key '%s'%s%s; expected one of: %s", Q(k->str),
                   *where ? " in " : "", where, names_join(&all, list, sizeof(list)));
    }
    for (const struct format_key *k = sec->keys; k->name; k++)
        if (k->required && ynode_get(map, k->name) == NULL)
            err_at(v, map, "%s%smissing required key '%s' (%s)", where, *where ? ": " : "", k->name,
                   k->doc);
}

static int want(struct vctx *v, const struct ynode *n, enum ynode_type t, const char *path)
{
    if (n->type == t)
        return 0;
    if (t == YNODE_REAL && n->type == YNODE_INT)
        return 0;
    err_at(v, n, "%s: expected %s %s, found %s%s", path, t == YNODE_INT ? "an" : "a",
           t == YNODE_REAL ? "number" : ynode_type_name(t), FOUND(n),
           (t == YNODE_STR && (n->type == YNODE_BOOL || n->type == YNODE_INT ||
                               n->type == YNODE_REAL || (n->type == YNODE_NULL && *n->str)))
               ? " (quote it to make it a string)"
               : "");
    return ERR_INVALID;
}

/* Reports n (of value val) as outside [min, max] (or (min, max] when excl). */
static void range_err(struct vctx *v, const struct ynode *n, double val, double min, double max,
                      int excl, const char *path, const char *what)
{
    err_at(v, n, "%s: must be %s%s %s%s %s, found %s", path, what, excl ? " above" : " from",
           NUM(min), excl ? " and at most" : " to", NUM(max), n->str ? Q(n->str) : NUM(val));
}

static int check_range(struct vctx *v, const struct ynode *n, double val, double min, double max,
                       int excl, const char *path, const char *what)
{
    if (min > max)
        return 0;
    if ((excl && val <= min) || (!excl && val < min) || val > max) {
        range_err(v, n, val, min, max, excl, path, what);
        return ERR_INVALID;
    }
    return 0;
}

/* Reports the string n as not one of values (NULL-terminated), with a suggestion. */
static void enum_err(struct vctx *v, const struct ynode *n, const char *const *values,
                     const char *path)
{
    struct names nm = {0};
    char list[160];
    for (const char *const *p = values; *p; p++)
        names_add(&nm, *p);
    const char *s = text_suggest(n->str, nm.v, nm.n);
    if (s)
        err_at(v, n, "%s: '%s' is not one of %s (did you mean '%s'?)", path, Q(n->str),
               names_join(&nm, list, sizeof(list)), s);
    else
        err_at(v, n, "%s: '%s' is not one of %s", path, Q(n->str),
               names_join(&nm, list, sizeof(list)));
}

static int check_string(struct vctx *v, const struct ynode *n, const struct format_key *k,
                        const char *path)
{
    if (want(v, n, YNODE_STR, path) < 0)
        return ERR_INVALID;
    if (k->min <= k->max && ((double)n->len < k->min || (double)n->len > k->max)) {
        if (n->len == 0)
            err_at(v, n, "%s: must not be empty", path);
        else
            err_at(v, n, "%s: must be %s to %s bytes long, found %zu", path, NUM(k->min),
                   NUM(k->max), n->len);
        return ERR_INVALID;
    }
    if (k->pattern && !re_full_match(k->pattern, n->str)) {
        err_at(v, n, "%s: '%s' is not %s", path, Q(n->str), k->pattern_doc);
        return ERR_INVALID;
    }
    return 0;
}

/* The check_* and want helpers report through err_at and return 0, or ERR_INVALID (the value
 * breaks its row). */

/* Checks a value against its format row (not SPECIAL, MAP, LIST, DICT contents). */
static int check_value(struct vctx *v, const struct ynode *n, const struct format_key *k,
                       const char *path)
{
    switch (k->type) {
    case FORMAT_STRING:
        return check_string(v, n, k, path);
    case FORMAT_INT:
        if (want(v, n, YNODE_INT, path) < 0)
            return ERR_INVALID;
        return check_range(v, n, n->d, k->min, k->max, 0, path, "an integer");
    case FORMAT_NUMBER:
        if (want(v, n, YNODE_REAL, path) < 0)
            return ERR_INVALID;
        if (!isfinite(n->d)) {
            err_at(v, n, "%s: must be a finite number", path);
            return ERR_INVALID;
        }
        return check_range(v, n, n->d, k->min, k->max, k->min_exclusive, path, "a number");
    case FORMAT_BOOL:
        return want(v, n, YNODE_BOOL, path);
    case FORMAT_ENUM:
        if (want(v, n, YNODE_STR, path) < 0)
            return ERR_INVALID;
        for (const char *const *p = k->values; *p; p++)
            if (strcmp(*p, n->str) == 0)
                return 0;
        enum_err(v, n, k->values, path);
        return ERR_INVALID;
    case FORMAT_STRING_LIST: {
        int rc = 0;
        if (want(v, n, YNODE_SEQ, path) < 0)
            return ERR_INVALID;
        if (k->min <= k->max && ((double)n->n < k->min || (double)n->n > k->max)) {
            err_at(v, n, "%s: must have %s to %s items, found %zu", path, NUM(k->min), NUM(k->max),
                   n->n);
            return ERR_INVALID;
        }
        for (size_t i = 0; i < n->n; i++) {
            char p[96];
            struct format_key item = *k;
            item.min = 1;
            item.max = 4096;
            snprintf(p, sizeof(p), "%s[%zu]", path, i);
            if (check_string(v, n->items[i], &item, p) < 0) {
                rc = -1;
                continue;
            }
            for (size_t j = 0; j < i; j++) {
                if (n->items[j]->type == YNODE_STR &&
                    strcmp(n->items[j]->str, n->items[i]->str) == 0) {
                    err_at(v, n->items[i], "%s: '%s' is listed twice", p, Q(n->items[i]->str));
                    rc = -1;
                    break;
                }
            }
        }
        return rc;
    }
    case FORMAT_MAP:
    case FORMAT_DICT:
        if (want(v, n, YNODE_MAP, path) < 0)
            return ERR_INVALID;
        if (k->min <= k->max && ((double)n->n < k->min || (double)n->n > k->max)) {
            err_at(v, n, "%s: must have %s to %s entries, found %zu", path, NUM(k->min),
                   NUM(k->max), n->n);
            return ERR_INVALID;
        }
        return 0;
    case FORMAT_LIST:
        if (want(v, n, YNODE_SEQ, path) < 0)
            return ERR_INVALID;
        if (k->min <= k->max && ((double)n->n < k->min || (double)n->n > k->max)) {
            if (n->n == 0)
                err_at(v, n, "%s: must not be empty", path);
            else
                err_at(v, n, "%s: must have %s to %s items, found %zu", path, NUM(k->min),
                       NUM(k->max), n->n);
            return ERR_INVALID;
        }
        return 0;
    case FORMAT_ANY: {
        const struct ynode *bad = NULL;
        json_t *j = ynode_to_json(n, &bad);
        if (j == NULL) {
            err_at(v, bad ? bad : n, "%s: not representable as JSON (infinite or NaN number)",
                   path);
            return ERR_INVALID;
        }
        json_decref(j);
        return 0;
    }
    case FORMAT_SPECIAL:
        return 0;
    }
    return 0;
}

static const struct format_key *fkey(const char *section, const char *key)
{
    return format_key_find(format_section_find(section), key);
}

/* Looks up key in map and checks it against its row in section; NULL when absent or bad. */
static const struct ynode *get_checked(struct vctx *v, const struct ynode *map, const char *section,
                                       const char *key, const char *where, int *bad)
{
    const struct ynode *n = ynode_get(map, key);
    char path[128];
    if (n == NULL)
        return NULL;
    snprintf(path, sizeof(path), "%s%s%s", where, *where ? "." : "", key);
    if (check_value(v, n, fkey(section, key), path) < 0) {
        if (bad)
            *bad = 1;
        return NULL;
    }
    return n;
}

static json_t *to_json(const struct ynode *n)
{
    const struct ynode *bad = NULL;
    return ynode_to_json(n, &bad);
}

/* ---- faults ------------------------------------------------------------------------------ */

/* ---- fault options: the catalog decides (catalog_option_check_each), the validator words it ----
 */

/* The YAML type an option's value must have: checked first, so that a message says what was
 * found and that quoting tells "5" from 5. YNODE_NULL: any (JSON options). */
static enum ynode_type option_node_type(const struct catalog_option *o)
{
    switch (o->type) {
    case CATALOG_OPT_INT:
        return YNODE_INT;
    case CATALOG_OPT_NUMBER:
        return YNODE_REAL; /* want() takes an integer for it too */
    case CATALOG_OPT_STRING:
    case CATALOG_OPT_ENUM:
        return YNODE_STR;
    case CATALOG_OPT_BOOL:
        return YNODE_BOOL;
    case CATALOG_OPT_STRING_LIST:
        return YNODE_SEQ;
    case CATALOG_OPT_OBJECT:
        return YNODE_MAP;
    case CATALOG_OPT_JSON:
        break;
    }
    return YNODE_NULL;
}

struct option_ctx {
    struct vctx *v;
    const struct ynode *n; /* the value as read */
    const struct catalog_option *o;
    const char *path;
    int reported;
};

/* catalog_option_check_each's callback: one refusal, in the validator's words, at the mark of
 * the YAML node (or list item) it is about. */
static void option_refused(enum catalog_refusal why, size_t item, void *arg)
{
    struct option_ctx *c = arg;
    struct vctx *v = c->v;
    const struct ynode *n = c->n, *it = NULL;
    const struct catalog_option *o = c->o;
    char p[96];

    c->reported = 1;
    if (why >= CATALOG_REFUSED_ITEM_TYPE) {
        if (n->type != YNODE_SEQ || item >= n->n)
            goto other;
        it = n->items[item];
        snprintf(p, sizeof(p), "%s[%zu]", c->path, item);
    }
    switch (why) {
    case CATALOG_REFUSED_RANGE:
        range_err(v, n, n->d, o->min, o->max, 0, c->path,
                  o->type == CATALOG_OPT_INT ? "an integer" : "a number");
        return;
    case CATALOG_REFUSED_VALUES:
        if (o->type == CATALOG_OPT_ENUM) {
            enum_err(v, n, o->values, c->path);
        } else {
            struct names nm = {0};
            char list[160];
            for (const char *const *q = o->values; q && *q; q++)
                names_add(&nm, *q);
            err_at(v, n, "%s: must be one of %s, found %s", c->path,
                   names_join(&nm, list, sizeof(list)), n->str ? Q(n->str) : NUM(n->d));
        }
        return;
    case CATALOG_REFUSED_EMPTY:
        err_at(v, n, "%s: must not be empty", c->path);
        return;
    case CATALOG_REFUSED_LONG:
        err_at(v, n, "%s: longer than %d bytes", c->path, CATALOG_STRING_MAX);
        return;
    case CATALOG_REFUSED_COUNT:
        err_at(v, n, "%s: must have %s to %s items, found %zu", c->path, NUM(0),
               NUM(CATALOG_LIST_MAX), n->n);
        return;
    case CATALOG_REFUSED_ITEM_TYPE:
        if (want(v, it, YNODE_STR, p) < 0)
            return;
        break;
    case CATALOG_REFUSED_ITEM_EMPTY:
        err_at(v, it, "%s: must not be empty", p);
        return;
    case CATALOG_REFUSED_ITEM_LONG:
        err_at(v, it, "%s: must be %s to %s bytes long, found %zu", p, NUM(1),
               NUM(CATALOG_LIST_ITEM_MAX), it->len);
        return;
    case CATALOG_REFUSED_ITEM_TWICE:
        err_at(v, it, "%s: '%s' is listed twice", p, it->str ? Q(it->str) : "");
        return;
    case CATALOG_REFUSED_TYPE:
        break;
    }
other:
    err_at(v, n, "%s: not a valid value of option '%s'", c->path, o->name);
}

/* The value of a list option as JSON for the catalog: an item JSON cannot hold (an infinite
 * number) becomes null, which the catalog refuses as "not a string" like any non-string. */
static json_t *list_json(const struct ynode *n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n->n; i++) {
        json_t *j = to_json(n->items[i]);
        json_array_append_new(a, j ? j : json_null());
    }
    return a;
}

/* Checks the value n of option o (the YAML type here, everything else by the catalog's one
 * check, so that a value validate accepts is one the plan loader and the injectors accept) and
 * returns it as JSON (new reference), or reports why not and returns NULL. */
static json_t *check_option(struct vctx *v, const struct ynode *n, const struct catalog_option *o,
                            const char *path)
{
    enum ynode_type t = option_node_type(o);
    struct option_ctx c = {v, n, o, path, 0};
    const struct ynode *bad = NULL;
    char msg[200];
    json_t *j;

    if (t != YNODE_NULL && want(v, n, t, path) < 0)
        return NULL;
    if (o->type == CATALOG_OPT_NUMBER && !isfinite(n->d)) {
        err_at(v, n, "%s: must be a finite number", path);
        return NULL;
    }
    /* a number option is a JSON real in the plan, also when written as an integer */
    j = o->type == CATALOG_OPT_NUMBER        ? json_real(n->d)
        : o->type == CATALOG_OPT_STRING_LIST ? list_json(n)
                                             : ynode_to_json(n, &bad);
    if (j == NULL) {
        err_at(v, bad ? bad : n, "%s: not representable as JSON (infinite or NaN number)", path);
        return NULL;
    }
    if (catalog_option_check_each(o, j, option_refused, &c, msg, sizeof(msg)) != 0) {
        if (!c.reported)
            err_at(v, n, "%s: %s", path, msg);
        json_decref(j);
        return NULL;
    }
    return j;
}

/* The names of the bits set in bits, from 1 up to last, as "a, b, c" in out (cut to len);
 * name gives a bit's name. Returns out. */
static const char *bits_text(unsigned bits, unsigned last, const char *(*name)(unsigned bit),
                             char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (unsigned b = 1; b <= last; b <<= 1)
        if ((bits & b) && off < len)
            off += (size_t)snprintf(out + off, len - off, "%s%s", off ? ", " : "", name(b));
    return out;
}

static const char *injectors_text(unsigned bits, char *out, size_t len)
{
    return bits_text(bits, CATALOG_INJ_WORLD, catalog_injector_name, out, len);
}

static const char *match_keys_text(unsigned bits, char *out, size_t len)
{
    return bits_text(bits, CATALOG_MATCH_SERVER, catalog_match_key_name, out, len);
}

static void parse_match(struct vctx *v, const struct ynode *m, const struct catalog_fault *def,
                        const char *where, struct experiment_match *out)
{
    static const struct {
        const char *name;
        unsigned bit;
    } keys[] = {{"tool", CATALOG_MATCH_TOOL},
                {"host", CATALOG_MATCH_HOST},
                {"model", CATALOG_MATCH_MODEL},
                {"server", CATALOG_MATCH_SERVER}};
    char path[128];

    snprintf(path, sizeof(path), "%s.match", where);
    if (want(v, m, YNODE_MAP, path) < 0)
        return;
    check_keys(v, m, format_section_find("match"), NULL, path);
    for (size_t i = 0; i < 4; i++) {
        const struct ynode *n = get_checked(v, m, "match", keys[i].name, path, NULL);
        if (n == NULL)
            continue;
        if (def && !(catalog_match_keys(def->injectors) & keys[i].bit)) {
            char inj[96], mk[64];
            err_at(v, n, "%s.%s: does not apply to %s: its injectors (%s) match on %s only", path,
                   keys[i].name, def->id, injectors_text(def->injectors, inj, sizeof(inj)),
                   match_keys_text(catalog_match_keys(def->injectors), mk, sizeof(mk)));
            continue;
        }
        char **slot = i == 0   ? &out->tool
                      : i == 1 ? &out->host
                      : i == 2 ? &out->model
                               : &out->server;
        *slot = xstrdup(n->str);
    }
}

static json_t *parse_when(struct vctx *v, const struct ynode *w, const struct catalog_fault *def,
                          const char *where)
{
    static const char *const ops[] = {"equals", "contains", "matches"};
    const struct ynode *path_n, *op_n = NULL;
    const char *op = NULL;
    char path[128], inj[96];
    int bad = 0;

    snprintf(path, sizeof(path), "%s.when", where);
    if (want(v, w, YNODE_MAP, path) < 0)
        return NULL;
    check_keys(v, w, format_section_find("when"), NULL, path);
    if (def && !catalog_fault_sees_args(def)) {
        err_at(
            v, w,
            "%s: %s is injected by %s, which sees no tool arguments: when applies to tool-call faults only",
            path, def->id, injectors_text(def->injectors, inj, sizeof(inj)));
        return NULL;
    }
    path_n = get_checked(v, w, "when", "path", path, &bad);
    for (size_t i = 0; i < 3; i++) {
        const struct ynode *n = ynode_get(w, ops[i]);
        if (n == NULL)
            continue;
        if (op_n) {
            err_at(v, n, "%s: takes one of equals, contains, matches, not both %s and %s", path, op,
                   ops[i]);
            bad = 1;
            continue;
        }
        op = ops[i];
        op_n = get_checked(v, w, "when", ops[i], path, &bad);
        if (op_n == NULL)
            op_n = n; /* reported; remember that one was given */
    }
    if (op == NULL) {
        err_at(v, w, "%s: needs one of equals, contains, matches", path);
        return NULL;
    }
    if (strcmp(op, "matches") == 0 && op_n->type == YNODE_STR && !bad) {
        regex_t re;
        char why[96];
        int rc;
        if (regex_check(op_n->str, why, sizeof(why)) < 0) {
            err_at(v, op_n, "%s.matches: regular expression refused: %s", path, why);
            bad = 1;
        } else if ((rc = regcomp(&re, op_n->str, REG_EXTENDED | REG_NOSUB)) != 0) {
            char eb[96];
            regerror(rc, &re, eb, sizeof(eb));
            err_at(v, op_n, "%s.matches: not a POSIX extended regular expression: %s", path, eb);
            bad = 1;
        } else {
            regfree(&re);
        }
    }
    if (bad || path_n == NULL)
        return NULL;
    json_t *j = json_object();
    json_object_set_new(j, "path", json_string(path_n->str));
    json_object_set_new(j, op, to_json(op_n));
    return j;
}

static void unknown_fault(struct vctx *v, const struct ynode *id, const char *where)
{
    const struct catalog_seed_kind *sk = catalog_seed_kind_find(id->str);
    struct names ids = {0}, tails = {0};
    size_t n;
    const struct catalog_fault *all = catalog_faults(&n);
    const char *s;

    if (sk && strcmp(sk->id, id->str) != 0) {
        err_at(v, id, "%s.id: unknown fault '%s': seed %s's %s is '%s' here", where, Q(id->str),
               sk->seed, sk->name, sk->id);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        names_add(&ids, all[i].id);
        names_add(&tails, strchr(all[i].id, '.') + 1);
    }
    s = text_suggest(id->str, ids.v, ids.n);
    if (s == NULL && strchr(id->str, '.') == NULL) {
        const char *t = text_suggest(id->str, tails.v, tails.n);
        for (size_t i = 0; t && i < n; i++)
            if (tails.v[i] == t)
                s = all[i].id;
    }
    if (s)
        err_at(v, id, "%s.id: unknown fault '%s' (did you mean '%s'?)", where, Q(id->str), s);
    else
        err_at(v, id, "%s.id: unknown fault '%s'; `faultline list` shows the catalog", where,
               Q(id->str));
}

static void parse_fault(struct vctx *v, const struct ynode *n, size_t idx,
                        struct experiment_fault *f)
{
    const struct ynode *id, *m;
    const struct catalog_fault *def = NULL;
    char where[32];
    int opts_ok = 1;

    snprintf(where, sizeof(where), "faults[%zu]", idx);
    f->mark.line = n->line;
    f->mark.col = n->col;
    f->after_calls = 0;
    f->times = -1;
    f->probability = 1;
    if (n->type != YNODE_MAP) {
        err_at(v, n, "%s: expected a mapping with id, match and the fault's options, found %s",
               where, FOUND(n));
        return;
    }
    id = ynode_get(n, "id");
    char idpath[48];
    snprintf(idpath, sizeof(idpath), "%s.id", where);
    if (id && want(v, id, YNODE_STR, idpath) == 0) {
        def = catalog_fault_find(id->str);
        if (def == NULL)
            unknown_fault(v, id, where);
    }
    f->def = def;
    if (def) {
        struct names extra = {0};
        for (const struct catalog_option *o = def->options; o->name; o++)
            names_add(&extra, o->name);
        check_keys(v, n, format_section_find("fault"), &extra, where);
    } else if (id == NULL) {
        err_at(v, n, "%s: missing required key 'id' (the fault's id in the catalog)", where);
    }
    if ((m = ynode_get(n, "match")) != NULL)
        parse_match(v, m, def, where, &f->match);
    if ((m = ynode_get(n, "when")) != NULL)
        f->when = parse_when(v, m, def, where);
    if ((m = get_checked(v, n, "fault", "after_calls", where, NULL)) != NULL)
        f->after_calls = m->i;
    if ((m = get_checked(v, n, "fault", "times", where, NULL)) != NULL)
        f->times = m->i;
    if ((m = get_checked(v, n, "fault", "probability", where, NULL)) != NULL) {
        f->probability = m->d;
        if (m->d == 0)
            warn_at(v, m, "%s.probability: 0 never injects this fault", where);
    }
    if (def == NULL)
        return;

    f->options = json_object();
    for (const struct catalog_option *o = def->options; o->name; o++) {
        const struct ynode *on = ynode_get(n, o->name);
        char path[128];
        json_t *j;
        snprintf(path, sizeof(path), "%s.%s", where, o->name);
        if (on == NULL) {
            if (o->required) {
                err_at(v, n, "%s: %s requires option '%s' (%s)", where, def->id, o->name, o->doc);
                opts_ok = 0;
            } else if ((j = catalog_option_default(o)) != NULL) {
                json_object_set_new(f->options, o->name, j);
            }
            continue;
        }
        if ((j = check_option(v, on, o, path)) == NULL) {
            opts_ok = 0;
            continue;
        }
        json_object_set_new(f->options, o->name, j);
    }
    if (opts_ok && def->check) {
        char msg[200];
        if (def->check(f->options, msg, sizeof(msg)) < 0)
            err_at(v, n, "%s (%s): %s", where, def->id, msg);
    }
    if (def->requires_host && f->match.host == NULL &&
        ynode_get(ynode_get(n, "match"), "host") == NULL)
        err_at(
            v, n,
            "%s: %s requires match.host (the host whose calls fail, e.g. match: {host: \"*.npmjs.org\"})",
            where, def->id);
    if (def->requires_tool && f->match.tool == NULL &&
        ynode_get(ynode_get(n, "match"), "tool") == NULL)
        err_at(v, n, "%s: %s requires match.tool (the world tool it targets)", where, def->id);
}

/* ---- probes and abort conditions ----------------------------------------------------------- */

static int check_param(struct vctx *v, const struct ynode *n, enum catalog_opt_type t, double min,
                       double max, int excl, const char *path)
{
    if (want(v, n, t == CATALOG_OPT_INT ? YNODE_INT : YNODE_REAL, path) < 0)
        return ERR_INVALID;
    if (!isfinite(n->d)) {
        err_at(v, n, "%s: must be a finite number", path);
        return ERR_INVALID;
    }
    return check_range(v, n, n->d, min, max, excl, path,
                       t == CATALOG_OPT_INT ? "an integer" : "a number");
}

static void parse_probes(struct vctx *v, const struct ynode *list)
{
    const struct format_key *k = fkey("experiment", "probes");
    size_t n;
    const struct catalog_probe *all = catalog_probes(&n);
    struct names ids = {0};

    for (size_t i = 0; i < n; i++)
        names_add(&ids, all[i].id);
    if (want(v, list, YNODE_SEQ, "probes") < 0)
        return;
    if (list->n == 0) {
        err_at(v, list, "probes: must not be empty (what should be scored?)");
        return;
    }
    if ((double)list->n > k->max) {
        err_at(v, list, "probes: at most %s items", NUM(k->max));
        return;
    }
    v->x->probes = xcalloc(list->n, sizeof(*v->x->probes));
    for (size_t i = 0; i < list->n; i++) {
        const struct ynode *it = list->items[i], *idn = NULL, *w = NULL, *val = NULL;
        const struct catalog_probe *p;
        char where[32];
        int bad = 0;

        snprintf(where, sizeof(where), "probes[%zu]", i);
        if (it->type == YNODE_STR) {
            idn = it;
        } else if (it->type == YNODE_MAP) {
            check_keys(v, it, format_section_find("probe"), NULL, where);
            idn = ynode_get(it, "id");
            w = get_checked(v, it, "probe", "weight", where, &bad);
            val = ynode_get(it, "value");
        } else {
            err_at(v, it, "%s: expected {id: PROBE, weight: N} or a probe id, found %s", where,
                   FOUND(it));
            continue;
        }
        if (idn == NULL || want(v, idn, YNODE_STR, where) < 0)
            continue;
        p = catalog_probe_find(idn->str);
        if (p == NULL) {
            const struct catalog_invariant *inv = catalog_invariant_find(idn->str);
            const char *s = text_suggest(idn->str, ids.v, ids.n);
            char list_s[160];
            if (inv)
                err_at(
                    v, idn,
                    "%s: '%s' is an invariant, not a probe: faultline score checks it by itself; probes are %s",
                    where, Q(idn->str), names_join(&ids, list_s, sizeof(list_s)));
            else if (s)
                err_at(v, idn, "%s: unknown probe '%s' (did you mean '%s'?)", where, Q(idn->str),
                       s);
            else
                err_at(v, idn, "%s: unknown probe '%s'; probes are %s", where, Q(idn->str),
                       names_join(&ids, list_s, sizeof(list_s)));
            continue;
        }
        for (size_t j = 0; j < v->x->nprobes; j++) {
            if (strcmp(v->x->probes[j].id, p->id) == 0) {
                err_at(v, idn, "%s: probe '%s' is listed twice (first at line %d)", where, p->id,
                       v->x->probes[j].mark.line);
                bad = 1;
                break;
            }
        }
        if (p->takes_value && val == NULL) {
            err_at(v, it, "%s: %s needs a value (%s)", where, p->id, p->value_doc);
            bad = 1;
        } else if (!p->takes_value && val != NULL) {
            err_at(v, val, "%s.value: %s takes no value", where, p->id);
            bad = 1;
        } else if (val) {
            char path[64];
            snprintf(path, sizeof(path), "%s.value", where);
            if (check_param(v, val, p->value_type, p->value_min, p->value_max,
                            p->value_min_exclusive, path) < 0)
                bad = 1;
        }
        if (bad)
            continue;
        struct experiment_probe *ep = &v->x->probes[v->x->nprobes++];
        ep->id = xstrdup(p->id);
        ep->weight = w ? w->d : 1;
        ep->has_value = val != NULL;
        ep->value = val ? val->d : 0;
        ep->mark.line = it->line;
        ep->mark.col = it->col;
        if (strcmp(p->id, "task_success") == 0)
            v->task_success = it;
    }
}

static void parse_abort(struct vctx *v, const struct ynode *list)
{
    size_t n;
    const struct catalog_abort *all = catalog_aborts(&n);
    const struct ynode *seen[16] = {0};
    struct names ids = {0};

    for (size_t i = 0; i < n; i++)
        names_add(&ids, all[i].id);
    if (want(v, list, YNODE_SEQ, "abort") < 0)
        return;
    for (size_t i = 0; i < list->n; i++) {
        const struct ynode *it = list->items[i], *idn, *val = NULL;
        const struct catalog_abort *c = NULL;
        char where[32];
        size_t ci;

        snprintf(where, sizeof(where), "abort[%zu]", i);
        if (it->type == YNODE_STR) {
            idn = it;
        } else if (it->type == YNODE_MAP && it->n == 1) {
            idn = it->keys[0];
            val = it->items[0];
        } else if (it->type == YNODE_MAP) {
            err_at(v, it, "%s: one condition per item: write each as its own '- name: value'",
                   where);
            continue;
        } else {
            err_at(v, it,
                   "%s: expected a condition (destructive_attempt, or name: value), found %s",
                   where, FOUND(it));
            continue;
        }
        for (ci = 0; ci < n; ci++)
            if (strcmp(all[ci].id, idn->str) == 0)
                c = &all[ci];
        if (c == NULL) {
            const char *s = text_suggest(idn->str, ids.v, ids.n);
            char list_s[160];
            if (s)
                err_at(v, idn, "%s: unknown abort condition '%s' (did you mean '%s'?)", where,
                       Q(idn->str), s);
            else
                err_at(v, idn, "%s: unknown abort condition '%s'; conditions are %s", where,
                       Q(idn->str), names_join(&ids, list_s, sizeof(list_s)));
            continue;
        }
        ci = (size_t)(c - all);
        if (ci < 16 && seen[ci]) {
            err_at(v, idn, "%s: '%s' is listed twice (first at line %d)", where, c->id,
                   seen[ci]->line);
            continue;
        }
        if (ci < 16)
            seen[ci] = it;
        if (c->takes_value && val == NULL) {
            err_at(v, it, "%s: %s needs a value (%s): write '- %s: N'", where, c->id, c->value_doc,
                   c->id);
            continue;
        }
        if (!c->takes_value && val != NULL) {
            err_at(v, val, "%s: %s takes no value: write '- %s'", where, c->id, c->id);
            continue;
        }
        if (val) {
            char path[64];
            snprintf(path, sizeof(path), "%s.%s", where, c->id);
            if (check_param(v, val, c->value_type, c->value_min, c->value_max,
                            c->value_min_exclusive, path) < 0)
                continue;
        }
        if (strcmp(c->id, "destructive_attempt") == 0)
            v->x->abort.destructive_attempt = 1;
        else if (strcmp(c->id, "cost_usd_above") == 0)
            v->x->abort.cost_usd_above = val->d;
        else if (strcmp(c->id, "wall_clock_s_above") == 0)
            v->x->abort.wall_clock_s_above = val->d;
    }
    for (size_t i = 0; i < n && i < 16; i++)
        if (all[i].required && seen[i] == NULL)
            err_at(
                v, list,
                "abort: %s is mandatory: every repetition spends real tokens (write '- %s: 2' for a ceiling of 2 US dollars)",
                all[i].id, all[i].id);
}

/* ---- model, mcp_servers, world, env, seed ------------------------------------------------- */

static void parse_model(struct vctx *v, const struct ynode *n)
{
    if (n->type == YNODE_STR) {
        static const char *const kinds[] = {"anthropic", "openai"};
        const char *s = n->str;
        struct url pu;
        struct err ue = {0};
        /* the one URL parser: a URL valid here is one the controller accepts as an upstream */
        int url = n->len == strlen(s) && url_parse(s, &pu, &ue) == 0;
        if (!strcmp(s, "anthropic") || !strcmp(s, "openai") || (url && n->len <= 2048)) {
            v->x->model = json_string(s);
            return;
        }
        if (!strncasecmp(s, "http://", 7) || !strncasecmp(s, "https://", 8)) {
            err_at(v, n, "model: %s", ue.code ? ue.msg : "URL over 2048 bytes");
            return;
        }
        const char *g = text_suggest(s, kinds, 2);
        if (g)
            err_at(v, n, "model: '%s' is not a known upstream (did you mean '%s'?)", Q(s), g);
        else
            err_at(v, n,
                   "model: expected anthropic, openai, an http(s) URL or {mock: PATH}, found '%s'",
                   Q(s));
        return;
    }
    if (n->type != YNODE_MAP) {
        err_at(v, n, "model: expected anthropic, openai, an http(s) URL or {mock: PATH}, found %s",
               FOUND(n));
        return;
    }
    check_keys(v, n, format_section_find("model"), NULL, "model");
    const struct ynode *m = get_checked(v, n, "model", "mock", "model", NULL);
    if (m)
        v->x->model = json_pack("{s:s}", "mock", m->str);
}

static void parse_mcp_servers(struct vctx *v, const struct ynode *n)
{
    const struct format_key *k = fkey("experiment", "mcp_servers");
    json_t *out;
    int bad = 0;

    if (check_value(v, n, k, "mcp_servers") < 0)
        return;
    out = json_object();
    for (size_t i = 0; i < n->n; i++) {
        const struct ynode *name = n->keys[i], *s = n->items[i], *c, *a, *e;
        char where[96];
        snprintf(where, sizeof(where), "mcp_servers.%s", Q(name->str));
        if (name->len == 0 || name->len > 64 || !re_full_match(k->pattern, name->str)) {
            err_at(v, name, "mcp_servers: server name '%s' is not %s (1 to 64 of them)",
                   Q(name->str), k->pattern_doc);
            bad = 1;
            continue;
        }
        if (want(v, s, YNODE_MAP, where) < 0) {
            bad = 1;
            continue;
        }
        check_keys(v, s, format_section_find("mcp_server"), NULL, where);
        c = get_checked(v, s, "mcp_server", "command", where, &bad);
        a = get_checked(v, s, "mcp_server", "args", where, &bad);
        e = get_checked(v, s, "mcp_server", "env", where, &bad);
        if (c == NULL)
            continue;
        json_object_set_new(out, name->str,
                            json_pack("{s:s,s:o,s:o}", "command", c->str, "args",
                                      a ? to_json(a) : json_array(), "env",
                                      e ? to_json(e) : json_array()));
    }
    if (bad) {
        json_decref(out);
        return;
    }
    v->x->mcp_servers = out;
}

static const struct ynode *world_tool_of_collection(const struct ynode *tools, const char *coll)
{
    for (size_t i = 0; tools && i < tools->n; i++) {
        const struct ynode *e = ynode_get(tools->items[i], "effect");
        const struct ynode *c = ynode_get(e, "collection");
        if (c && c->type == YNODE_STR && strcmp(c->str, coll) == 0)
            return tools->items[i];
    }
    return NULL;
}

static json_t *parse_world_invariant(struct vctx *v, const struct ynode *it, const char *where,
                                     const struct ynode *tools)
{
    static const char *const allowed_unique[] = {"id", "collection", "key", NULL};
    static const char *const allowed_approval[] = {"id", "collection", NULL};
    static const char *const allowed_count[] = {"id",  "collection",    "min",
                                                "max", "when_approved", NULL};
    const struct ynode *idn, *coll, *key, *mn, *mx, *wa;
    const struct catalog_invariant *inv;
    const char *const *allowed;
    int bad = 0;

    if (want(v, it, YNODE_MAP, where) < 0)
        return NULL;
    check_keys(v, it, format_section_find("world_invariant"), NULL, where);
    idn = ynode_get(it, "id");
    if (idn == NULL || want(v, idn, YNODE_STR, where) < 0)
        return NULL;
    inv = catalog_invariant_find(idn->str);
    if (inv == NULL || !inv->world_declared) {
        static const char *const ids[] = {"unique", "approval", "count"};
        const char *s = text_suggest(idn->str, ids, 3);
        if (inv)
            err_at(
                v, idn,
                "%s.id: '%s' is checked by faultline score whenever its evidence exists; a world declares only unique, approval and count",
                where, inv->id);
        else if (s)
            err_at(v, idn, "%s.id: unknown invariant '%s' (did you mean '%s'?)", where, Q(idn->str),
                   s);
        else
            err_at(v, idn,
                   "%s.id: unknown invariant '%s'; a world declares unique, approval or count",
                   where, Q(idn->str));
        return NULL;
    }
    allowed = !strcmp(inv->id, "unique")     ? allowed_unique
              : !strcmp(inv->id, "approval") ? allowed_approval
                                             : allowed_count;
    for (size_t i = 0; i < it->n; i++) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(*a, it->keys[i]->str) == 0;
        if (!ok && format_key_find(format_section_find("world_invariant"), it->keys[i]->str)) {
            err_at(v, it->keys[i], "%s: %s does not take '%s'", where, inv->id, it->keys[i]->str);
            bad = 1;
        }
    }
    coll = get_checked(v, it, "world_invariant", "collection", where, &bad);
    key = get_checked(v, it, "world_invariant", "key", where, &bad);
    mn = get_checked(v, it, "world_invariant", "min", where, &bad);
    mx = get_checked(v, it, "world_invariant", "max", where, &bad);
    wa = get_checked(v, it, "world_invariant", "when_approved", where, &bad);
    if (bad)
        return NULL;
    if (strcmp(inv->id, "approval") != 0 && coll == NULL) {
        err_at(v, it, "%s: %s needs collection", where, inv->id);
        return NULL;
    }
    const struct ynode *tool = coll ? world_tool_of_collection(tools, coll->str) : NULL;
    if (coll && tool == NULL) {
        err_at(v, coll, "%s.collection: no tool of the world writes collection '%s'", where,
               Q(coll->str));
        return NULL;
    }
    json_t *j = json_pack("{s:s}", "id", inv->id);
    if (coll)
        json_object_set_new(j, "collection", json_string(coll->str));
    if (!strcmp(inv->id, "unique")) {
        const struct ynode *bk = ynode_get(ynode_get(tool, "effect"), "business_key");
        if (key == NULL && (bk == NULL || bk->type != YNODE_STR)) {
            err_at(v, it, "%s: unique needs key: no tool of collection '%s' declares business_key",
                   where, Q(coll->str));
            json_decref(j);
            return NULL;
        }
        json_object_set_new(j, "key", json_string(key ? key->str : bk->str));
    }
    if (!strcmp(inv->id, "count")) {
        if (mn == NULL && mx == NULL) {
            err_at(v, it, "%s: count needs min or max (or both)", where);
            json_decref(j);
            return NULL;
        }
        if (mn && mx && mn->i > mx->i) {
            err_at(v, mn, "%s: min %lld is above max %lld", where, mn->i, mx->i);
            json_decref(j);
            return NULL;
        }
        if (mn)
            json_object_set_new(j, "min", json_integer(mn->i));
        if (mx)
            json_object_set_new(j, "max", json_integer(mx->i));
        json_object_set_new(j, "when_approved", json_boolean(wa ? wa->b : 0));
    }
    return j;
}

/* The node reached from n by the schema keys of *w (as far as they lead). */
static const struct ynode *node_at(const struct ynode *n, const struct jschema_where *w)
{
    for (size_t i = 0; i < w->nsteps; i++) {
        const struct ynode *k = ynode_key(n, w->steps[i]);
        const struct ynode *next = ynode_get(n, w->steps[i]);
        if (k == NULL || next == NULL)
            return n;
        if (i + 1 == w->nsteps || next->type != YNODE_MAP)
            return k;
        n = next;
    }
    return n;
}

/* input_schema: the subset util/jschema.h supports, refused at the offending key. */
static int check_input_schema(struct vctx *v, const struct ynode *is, const char *where)
{
    struct jschema_where w;
    char msg[200];
    json_t *j = to_json(is);
    struct jschema *s = jschema_new(j, &w, msg, sizeof(msg));
    int rc = 0;

    if (s == NULL) {
        err_at(v, node_at(is, &w), "%s.input_schema: %s", where, msg);
        rc = ERR_INVALID;
    }
    jschema_free(s);
    json_decref(j);
    return rc;
}

/* world.initial: collection -> list of mappings; world.expected: {effects: [{collection,
 * business_key?, count}]}. Shapes only; the scorer reads expected as run.json holds it. */
static int check_world_state(struct vctx *v, const struct ynode *ini, const struct ynode *exp)
{
    int bad = 0;

    if (ini && ini->type != YNODE_MAP) {
        err_at(v, ini, "world.initial: expected a mapping of collections to lists, found %s",
               FOUND(ini));
        bad = 1;
    }
    for (size_t i = 0; ini && ini->type == YNODE_MAP && i < ini->n; i++) {
        const struct ynode *l = ini->items[i];
        if (l->type != YNODE_SEQ) {
            err_at(v, l, "world.initial.%s: expected a list of records, found %s",
                   ini->keys[i]->str, FOUND(l));
            bad = 1;
            continue;
        }
        for (size_t k = 0; k < l->n; k++)
            if (l->items[k]->type != YNODE_MAP) {
                err_at(v, l->items[k], "world.initial.%s[%zu]: expected a mapping, found %s",
                       ini->keys[i]->str, k, FOUND(l->items[k]));
                bad = 1;
            }
    }
    if (exp) {
        const struct ynode *ef = ynode_get(exp, "effects");
        if (exp->type != YNODE_MAP || ef == NULL || ef->type != YNODE_SEQ || exp->n != 1) {
            err_at(v, exp,
                   "world.expected: expected {effects: [{collection, business_key, count}]}");
            return ERR_INVALID;
        }
        for (size_t k = 0; k < ef->n; k++) {
            const struct ynode *x = ef->items[k], *c = ynode_get(x, "collection");
            const struct ynode *n = ynode_get(x, "count");
            if (x->type != YNODE_MAP || c == NULL || c->type != YNODE_STR || n == NULL ||
                n->type != YNODE_INT || n->i < 0) {
                err_at(
                    v, x,
                    "world.expected.effects[%zu]: expected {collection: NAME, business_key: VALUE (optional), count: N >= 0}",
                    k);
                bad = 1;
            }
        }
    }
    return bad ? ERR_INVALID : 0;
}

static void parse_world(struct vctx *v, const struct ynode *w)
{
    const struct ynode *name, *appr, *tools, *invs, *obj, *maxc, *dl, *ini, *exp;
    json_t *jt, *ji;
    int bad = 0;

    if (want(v, w, YNODE_MAP, "world") < 0)
        return;
    v->has_world = 1;
    check_keys(v, w, format_section_find("world"), NULL, "world");
    name = get_checked(v, w, "world", "name", "world", &bad);
    appr = get_checked(v, w, "world", "approved", "world", &bad);
    tools = get_checked(v, w, "world", "tools", "world", &bad);
    invs = get_checked(v, w, "world", "invariants", "world", &bad);
    obj = get_checked(v, w, "world", "objective", "world", &bad);
    maxc = get_checked(v, w, "world", "max_calls", "world", &bad);
    dl = get_checked(v, w, "world", "deadline_s", "world", &bad);
    ini = get_checked(v, w, "world", "initial", "world", &bad);
    exp = get_checked(v, w, "world", "expected", "world", &bad);
    if (check_world_state(v, ini, exp) < 0)
        bad = 1;
    v->world_name = xstrdup(name ? name->str : "world");

    jt = json_array();
    for (size_t i = 0; tools && i < tools->n; i++) {
        const struct ynode *t = tools->items[i], *tn, *d, *is, *ef, *res, *rd;
        char where[48];
        json_t *j;
        snprintf(where, sizeof(where), "world.tools[%zu]", i);
        if (want(v, t, YNODE_MAP, where) < 0) {
            bad = 1;
            continue;
        }
        check_keys(v, t, format_section_find("world_tool"), NULL, where);
        tn = get_checked(v, t, "world_tool", "name", where, &bad);
        d = get_checked(v, t, "world_tool", "description", where, &bad);
        is = get_checked(v, t, "world_tool", "input_schema", where, &bad);
        ef = get_checked(v, t, "world_tool", "effect", where, &bad);
        res = get_checked(v, t, "world_tool", "result", where, &bad);
        rd = get_checked(v, t, "world_tool", "reads", where, &bad);
        if (is && is->type != YNODE_MAP) {
            err_at(v, is, "%s.input_schema: expected a mapping (a JSON Schema object), found %s",
                   where, FOUND(is));
            bad = 1;
        } else if (is && check_input_schema(v, is, where) < 0) {
            bad = 1;
        }
        if (rd && ef) {
            err_at(v, rd, "%s: a tool either reads a collection or has an effect, not both", where);
            bad = 1;
        }
        if (tn) {
            for (size_t k = 0; k < i; k++) {
                const struct ynode *o = ynode_get(tools->items[k], "name");
                if (o && o->type == YNODE_STR && strcmp(o->str, tn->str) == 0) {
                    err_at(v, tn, "%s.name: tool '%s' is defined twice (first at line %d)", where,
                           Q(tn->str), o->line);
                    bad = 1;
                }
            }
        }
        if (tn == NULL)
            continue;
        j = json_pack("{s:s,s:s}", "name", tn->str, "description", d ? d->str : "");
        if (is)
            json_object_set_new(j, "input_schema", to_json(is));
        if (res)
            json_object_set_new(j, "result", to_json(res));
        if (rd)
            json_object_set_new(j, "reads", json_string(rd->str));
        if (ef) {
            char ew[64];
            snprintf(ew, sizeof(ew), "%s.effect", where);
            check_keys(v, ef, format_section_find("world_effect"), NULL, ew);
            const struct ynode *c = get_checked(v, ef, "world_effect", "collection", ew, &bad);
            const struct ynode *bk = get_checked(v, ef, "world_effect", "business_key", ew, &bad);
            const struct ynode *dk = get_checked(v, ef, "world_effect", "dedupe_key", ew, &bad);
            const struct ynode *op = get_checked(v, ef, "world_effect", "op", ew, &bad);
            const struct ynode *bal = get_checked(v, ef, "world_effect", "balance", ew, &bad);
            if (op && strcmp(op->str, "append") != 0 && bk == NULL) {
                err_at(v, op, "%s.op: %s needs business_key (the record it changes)", ew, op->str);
                bad = 1;
            }
            if (c) {
                json_t *e = json_pack("{s:s}", "collection", c->str);
                if (op && strcmp(op->str, "append") != 0)
                    json_object_set_new(e, "op", json_string(op->str));
                if (bal)
                    json_object_set_new(e, "balance", json_string(bal->str));
                if (bk)
                    json_object_set_new(e, "business_key", json_string(bk->str));
                if (dk)
                    json_object_set_new(e, "dedupe_key", json_string(dk->str));
                json_object_set_new(j, "effect", e);
            }
        }
        json_array_append_new(jt, j);
    }
    ji = json_array();
    for (size_t i = 0; invs && i < invs->n; i++) {
        char where[48];
        snprintf(where, sizeof(where), "world.invariants[%zu]", i);
        json_t *j = parse_world_invariant(v, invs->items[i], where, tools);
        if (j == NULL)
            bad = 1;
        else
            json_array_append_new(ji, j);
    }
    if (bad || tools == NULL) {
        json_decref(jt);
        json_decref(ji);
        return;
    }
    v->x->world = json_pack("{s:s,s:b,s:o,s:o}", "name", v->world_name, "approved",
                            appr ? appr->b : 1, "tools", jt, "invariants", ji);
    /* keys added later go in only when given, so the hash of an experiment without them holds */
    if (obj)
        json_object_set_new(v->x->world, "objective", json_string(obj->str));
    if (maxc)
        json_object_set_new(v->x->world, "max_calls", json_integer(maxc->i));
    if (dl)
        json_object_set_new(v->x->world, "deadline_s", json_integer(dl->i));
    if (ini)
        json_object_set_new(v->x->world, "initial", to_json(ini));
    if (exp)
        json_object_set_new(v->x->world, "expected", to_json(exp));
}

static void parse_env(struct vctx *v, const struct ynode *n)
{
    if (check_value(v, n, fkey("experiment", "env"), "env") < 0)
        return;
    for (size_t i = 0; i < n->n; i++) {
        if (strncmp(n->items[i]->str, "FAULTLINE_", 10) == 0) {
            err_at(v, n->items[i], "env[%zu]: FAULTLINE_* variables are set by the runner", i);
            return;
        }
    }
    v->x->env = xcalloc(n->n ? n->n : 1, sizeof(*v->x->env));
    for (size_t i = 0; i < n->n; i++)
        v->x->env[v->x->nenv++] = xstrdup(n->items[i]->str);
}

#define EGRESS_PATTERN_MAX 254 /* '*' and a DNS name's longest text form */

/* egress.host_ports: 1..EXPERIMENT_HOST_PORTS_MAX distinct ports, none the sandbox's own. */
static void parse_host_ports(struct vctx *v, const struct ynode *n)
{
    static const int reserved[] = EXPERIMENT_HOST_PORTS_RESERVED;
    const struct format_key *k = fkey("egress", "host_ports");
    int bad = 0;

    if (want(v, n, YNODE_SEQ, "egress.host_ports") < 0)
        return;
    if ((double)n->n < k->min || (double)n->n > k->max) {
        err_at(v, n, "egress.host_ports: must have %s to %s items, found %zu", NUM(k->min),
               NUM(k->max), n->n);
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        const struct ynode *it = n->items[i];
        char path[64];
        snprintf(path, sizeof(path), "egress.host_ports[%zu]", i);
        if (want(v, it, YNODE_INT, path) < 0 ||
            check_range(v, it, it->d, 1, 65535, 0, path, "a port") < 0) {
            bad = 1;
            continue;
        }
        for (size_t r = 0; r < sizeof(reserved) / sizeof(reserved[0]); r++) {
            if (it->i == reserved[r]) {
                err_at(v, it,
                       "%s: port %d is the sandbox's own (53 the DNS stub, 80 and 443 transparent "
                       "mode): it cannot also lead to the host",
                       path, reserved[r]);
                bad = 1;
            }
        }
        for (size_t j = 0; j < i; j++) {
            if (n->items[j]->type == YNODE_INT && n->items[j]->i == it->i) {
                err_at(v, it, "%s: port %lld is listed twice", path, (long long)it->i);
                bad = 1;
                break;
            }
        }
    }
    if (bad)
        return;
    for (size_t i = 0; i < n->n; i++)
        v->x->egress_host_ports[v->x->negress_host_ports++] = (int)n->items[i]->i;
}

static void parse_egress(struct vctx *v, const struct ynode *n)
{
    const struct ynode *allow, *ports;
    int bad = 0;

    if (want(v, n, YNODE_MAP, "egress") < 0)
        return;
    check_keys(v, n, format_section_find("egress"), NULL, "egress");
    if ((ports = ynode_get(n, "host_ports")) != NULL)
        parse_host_ports(v, ports);
    allow = get_checked(v, n, "egress", "allow", "egress", &bad);
    if (allow == NULL)
        return;
    for (size_t i = 0; i < allow->n; i++) {
        if (strlen(allow->items[i]->str) > EGRESS_PATTERN_MAX) {
            err_at(v, allow->items[i], "egress.allow[%zu]: longer than %d bytes", i,
                   EGRESS_PATTERN_MAX);
            return;
        }
    }
    v->x->egress_allow = xcalloc(allow->n ? allow->n : 1, sizeof(*v->x->egress_allow));
    for (size_t i = 0; i < allow->n; i++)
        v->x->egress_allow[v->x->negress_allow++] = xstrdup(allow->items[i]->str);
    v->x->has_egress_allow = 1;
}

static void parse_seed(struct vctx *v, const struct ynode *n)
{
    uint64_t u;
    if (n->type == YNODE_INT && n->i >= 0) {
        v->x->seed = (uint64_t)n->i;
        v->x->has_seed = 1;
        return;
    }
    if (n->type == YNODE_STR && num_parse_u64(n->str, &u) == 0 && u <= 0x7fffffffffffffffULL) {
        v->x->seed = u;
        v->x->has_seed = 1;
        return;
    }
    err_at(v, n, "seed: expected an integer from 0 to 2^63-1 (decimal or 0x-hex), found %s",
           FOUND(n));
}

/* ---- whole-file checks --------------------------------------------------------------------- */

static void cross_checks(struct vctx *v, const struct ynode *root)
{
    struct experiment *x = v->x;
    const struct ynode *faults = ynode_get(root, "faults");
    const struct ynode *wtools = ynode_get(ynode_get(root, "world"), "tools");
    int has_perm = 0;

    for (size_t i = 0; i < x->nfaults; i++) {
        struct experiment_fault *f = &x->faults[i];
        const struct ynode *fn = faults->items[i];
        if (f->def == NULL)
            continue;
        if (strcmp(f->def->id, "permission.deny_or_delay") == 0)
            has_perm = 1;
        /* a fault only the world injects needs a world and one of its tools; the tool.* faults
         * the world shares with the shim may name any tool */
        if ((f->def->injectors & ~(unsigned)CATALOG_INJ_WORLD) == 0) {
            if (!v->has_world) {
                err_at(v, fn,
                       "faults[%zu]: %s is injected by the world, and this experiment has no world",
                       i, f->def->id);
            } else if (f->match.tool && wtools && wtools->type == YNODE_SEQ) {
                int hit = 0;
                for (size_t k = 0; k < wtools->n && !hit; k++) {
                    const struct ynode *tn = ynode_get(wtools->items[k], "name");
                    hit = tn && tn->type == YNODE_STR &&
                          catalog_match_pattern(f->match.tool, tn->str);
                }
                if (!hit)
                    err_at(v, ynode_get(ynode_get(fn, "match"), "tool"),
                           "faults[%zu].match.tool: '%s' matches no tool of the world", i,
                           Q(f->match.tool));
            }
        }
        if (f->match.server && (x->mcp_servers || v->has_world)) {
            int hit = v->world_name && catalog_match_pattern(f->match.server, v->world_name);
            const char *k;
            json_t *val;
            json_object_foreach(x->mcp_servers, k, val)
            {
                hit |= catalog_match_pattern(f->match.server, k);
            }
            if (!hit)
                warn_at(v, ynode_get(ynode_get(fn, "match"), "server"),
                        "faults[%zu].match.server: '%s' matches none of this experiment's servers",
                        i, Q(f->match.server));
        }
    }
    if (v->world_name && json_object_get(x->mcp_servers, v->world_name))
        err_at(v, ynode_get(root, "world"),
               "world: its server name '%s' is also a key of mcp_servers (set world.name)",
               Q(v->world_name));

    if (has_perm && v->task_success) {
        double ts = 0, other = 0;
        for (size_t i = 0; i < x->nprobes; i++) {
            if (strcmp(x->probes[i].id, "task_success") == 0)
                ts = x->probes[i].weight;
            else if (x->probes[i].weight > other)
                other = x->probes[i].weight;
        }
        if (ts >= other)
            warn_at(
                v, v->task_success,
                "task_success has the highest weight in an experiment with permission.deny_or_delay: an agent that respects the denial fails the task and scores low; weight failure_surfaced, no_policy_hits and no_destructive_attempt higher");
    }
    if (x->sandbox && strcmp(x->sandbox, "native") == 0 && x->sandbox_image)
        warn_at(v, ynode_get(root, "sandbox_image"),
                "sandbox_image is ignored with sandbox: native");
}

/* ---- entry points -------------------------------------------------------------------------- */

static char *dup_field(struct vctx *v, const struct ynode *root, const char *key)
{
    const struct ynode *n = get_checked(v, root, "experiment", key, "", NULL);
    return n ? xstrdup(n->str) : NULL;
}

static void validate(struct vctx *v, const struct ynode *root)
{
    struct experiment *x = v->x;
    const struct ynode *n;

    check_keys(v, root, format_section_find("experiment"), NULL, "");
    x->name = dup_field(v, root, "name");
    x->description = dup_field(v, root, "description");
    x->agent = dup_field(v, root, "agent");
    x->verify = dup_field(v, root, "verify");
    x->sandbox_image = dup_field(v, root, "sandbox_image");
    x->sandbox = dup_field(v, root, "sandbox");
    x->repeat = 1;
    if ((n = get_checked(v, root, "experiment", "repeat", "", NULL)) != NULL)
        x->repeat = (int)n->i;
    if ((n = ynode_get(root, "seed")) != NULL)
        parse_seed(v, n);
    if ((n = ynode_get(root, "model")) != NULL)
        parse_model(v, n);
    if ((n = ynode_get(root, "mcp_servers")) != NULL)
        parse_mcp_servers(v, n);
    if ((n = ynode_get(root, "world")) != NULL)
        parse_world(v, n);
    if ((n = ynode_get(root, "env")) != NULL)
        parse_env(v, n);
    if ((n = ynode_get(root, "egress")) != NULL)
        parse_egress(v, n);
    if ((n = get_checked(v, root, "experiment", "faults", "", NULL)) != NULL) {
        x->faults = xcalloc(n->n, sizeof(*x->faults));
        x->nfaults = n->n;
        for (size_t i = 0; i < n->n; i++)
            parse_fault(v, n->items[i], i, &x->faults[i]);
    }
    if ((n = ynode_get(root, "probes")) != NULL)
        parse_probes(v, n);
    if ((n = ynode_get(root, "abort")) != NULL)
        parse_abort(v, n);
    if (ynode_get(root, "faults") && x->faults)
        cross_checks(v, root);
}

static void free_match(struct experiment_match *m)
{
    free(m->tool);
    free(m->host);
    free(m->model);
    free(m->server);
}

void experiment_free(struct experiment *x)
{
    if (x == NULL)
        return;
    free(x->path);
    free(x->name);
    free(x->description);
    free(x->agent);
    free(x->verify);
    for (size_t i = 0; i < x->nfaults; i++) {
        free_match(&x->faults[i].match);
        json_decref(x->faults[i].when);
        json_decref(x->faults[i].options);
    }
    free(x->faults);
    for (size_t i = 0; i < x->nprobes; i++)
        free(x->probes[i].id);
    free(x->probes);
    free(x->sandbox_image);
    free(x->sandbox);
    json_decref(x->model);
    json_decref(x->mcp_servers);
    json_decref(x->world);
    for (size_t i = 0; i < x->nenv; i++)
        free(x->env[i]);
    free(x->env);
    for (size_t i = 0; i < x->negress_allow; i++)
        free(x->egress_allow[i]);
    free(x->egress_allow);
    free(x);
}

static void set_str(json_t *j, const char *k, const char *v)
{
    if (v)
        json_object_set_new(j, k, json_string(v));
}

json_t *experiment_to_json(const struct experiment *x)
{
    json_t *j = json_object(), *a;

    set_str(j, "name", x->name);
    set_str(j, "description", x->description);
    set_str(j, "agent", x->agent);
    set_str(j, "verify", x->verify);
    json_object_set_new(j, "repeat", json_integer(x->repeat));
    if (x->has_seed)
        json_object_set_new(j, "seed", json_integer((json_int_t)x->seed));
    a = json_array();
    for (size_t i = 0; i < x->nfaults; i++) {
        const struct experiment_fault *f = &x->faults[i];
        json_t *fj = json_object(), *m = json_object();
        set_str(fj, "id", f->def ? f->def->id : NULL);
        set_str(m, "tool", f->match.tool);
        set_str(m, "host", f->match.host);
        set_str(m, "model", f->match.model);
        set_str(m, "server", f->match.server);
        json_object_set_new(fj, "match", m);
        if (f->when)
            json_object_set(fj, "when", f->when);
        json_object_set_new(fj, "after_calls", json_integer(f->after_calls));
        json_object_set_new(fj, "times", f->times < 0 ? json_null() : json_integer(f->times));
        json_object_set_new(fj, "probability", json_real(f->probability));
        json_object_set_new(fj, "options", f->options ? json_deep_copy(f->options) : json_object());
        json_object_set_new(
            fj, "safety", json_string(f->def ? catalog_safety_name(f->def->safety) : "fail-safe"));
        json_array_append_new(a, fj);
    }
    json_object_set_new(j, "faults", a);
    a = json_array();
    for (size_t i = 0; i < x->nprobes; i++) {
        const struct experiment_probe *p = &x->probes[i];
        json_t *pj = json_pack("{s:s,s:f}", "id", p->id, "weight", p->weight);
        if (p->has_value)
            json_object_set_new(pj, "value", json_real(p->value));
        json_array_append_new(a, pj);
    }
    json_object_set_new(j, "probes", a);
    a = json_pack("{s:b,s:f}", "destructive_attempt", x->abort.destructive_attempt,
                  "cost_usd_above", x->abort.cost_usd_above);
    if (x->abort.wall_clock_s_above > 0)
        json_object_set_new(a, "wall_clock_s_above", json_real(x->abort.wall_clock_s_above));
    json_object_set_new(j, "abort", a);
    set_str(j, "sandbox_image", x->sandbox_image);
    set_str(j, "sandbox", x->sandbox);
    if (x->model)
        json_object_set(j, "model", x->model);
    if (x->mcp_servers)
        json_object_set(j, "mcp_servers", x->mcp_servers);
    if (x->world)
        json_object_set(j, "world", x->world);
    a = json_array();
    for (size_t i = 0; i < x->nenv; i++)
        json_array_append_new(a, json_string(x->env[i]));
    json_object_set_new(j, "env", a);
    /* egress only when set: the hash of an experiment without it stays */
    if (x->has_egress_allow || x->negress_host_ports) {
        json_t *eg = json_object();
        if (x->has_egress_allow) {
            a = json_array();
            for (size_t i = 0; i < x->negress_allow; i++)
                json_array_append_new(a, json_string(x->egress_allow[i]));
            json_object_set_new(eg, "allow", a);
        }
        if (x->negress_host_ports) {
            a = json_array();
            for (size_t i = 0; i < x->negress_host_ports; i++)
                json_array_append_new(a, json_integer(x->egress_host_ports[i]));
            json_object_set_new(eg, "host_ports", a);
        }
        json_object_set_new(j, "egress", eg);
    }
    return j;
}

static void describe_root(struct vctx *v, const struct ynode *root)
{
    static const char *const what =
        "an experiment is a mapping with name, agent, verify, faults, probes and abort";
    if (root == NULL)
        diag_at(v->d, 0, 1, 1, "empty file: %s", what);
    else if (root->type == YNODE_SEQ)
        err_at(v, root, "the file is a list: %s", what);
    else
        err_at(v, root, "the file is %s: %s", FOUND(root), what);
}

struct experiment *experiment_parse(const char *name, const char *text, size_t len,
                                    struct experiment_diags *diags, struct err *e)
{
    static const struct ydoc_limits yaml_limits = {.kind = "an experiment file"};
    struct ydoc doc;
    struct ydoc_problem fatal;
    struct vctx v;
    size_t first = diags->n;
    int rc;

    memset(&v, 0, sizeof(v));
    v.d = diags;
    if (len > EXPERIMENT_FILE_MAX) {
        diag_at(diags, 0, 1, 1, "the file is %zu bytes, over the limit of %zu for an experiment",
                len, EXPERIMENT_FILE_MAX);
        err_set(e, ERR_INVALID, "'%s' is invalid", name);
        return NULL;
    }
    rc = ydoc_parse(text, len, &yaml_limits, &doc, &fatal);
    for (size_t i = 0; i < doc.nproblems; i++)
        diag_at(diags, 0, doc.problems[i].line, doc.problems[i].col, "%s", doc.problems[i].msg);
    if (rc < 0) {
        diag_at(diags, 0, fatal.line, fatal.col, "%s", fatal.msg);
    } else if (doc.root == NULL || doc.root->type != YNODE_MAP) {
        describe_root(&v, doc.root);
    } else {
        v.x = xcalloc(1, sizeof(*v.x));
        v.x->path = xstrdup(name);
        validate(&v, doc.root);
    }
    ydoc_release(&doc);
    free(v.world_name);
    sort_diags(diags, first);
    if (diags->nerrors > 0 || v.x == NULL) {
        experiment_free(v.x);
        err_set(e, ERR_INVALID, "'%s' is invalid", name);
        return NULL;
    }
    json_t *j = experiment_to_json(v.x);
    char *s = json_dumps(j, EXPERIMENT_JSON_FLAGS);
    hash_sha256_hex(s, strlen(s), v.x->hash);
    free(s);
    json_decref(j);
    return v.x;
}

json_t *experiment_load_as_json(const char *path, struct experiment_diags *diags, struct err *e)
{
    static const struct ydoc_limits yaml_limits = {.kind = "an experiment file"};
    struct buf b = BUF_INIT;
    struct err re = {0};
    struct ydoc doc;
    struct ydoc_problem fatal;
    const struct ynode *bad = NULL;
    json_t *j = NULL;
    int stdin_ = strcmp(path, "-") == 0;
    int rc = stdin_ ? fs_read_fd(0, EXPERIMENT_STDIN_NAME, EXPERIMENT_FILE_MAX, &b, &re)
                    : fs_read_file(path, EXPERIMENT_FILE_MAX, &b, &re);

    if (stdin_)
        path = EXPERIMENT_STDIN_NAME;
    if (rc == ERR_LIMIT) {
        diag_at(diags, 0, 1, 1, "the file is over the limit of %zu bytes", EXPERIMENT_FILE_MAX);
        err_set(e, ERR_INVALID, "'%s' is invalid", path);
        buf_release(&b);
        return NULL;
    }
    if (rc < 0) {
        err_set(e, ERR_IO, "%s", re.msg);
        buf_release(&b);
        return NULL;
    }
    rc = ydoc_parse(b.data, b.len, &yaml_limits, &doc, &fatal);
    buf_release(&b);
    for (size_t i = 0; i < doc.nproblems; i++)
        diag_at(diags, 0, doc.problems[i].line, doc.problems[i].col, "%s", doc.problems[i].msg);
    if (rc < 0) {
        diag_at(diags, 0, fatal.line, fatal.col, "%s", fatal.msg);
        err_set(e, ERR_INVALID, "'%s' is invalid", path);
        goto out;
    }
    j = doc.root ? ynode_to_json(doc.root, &bad) : json_null();
    if (j == NULL) {
        diag_at(diags, 0, bad->line, bad->col,
                "not representable as JSON (infinite or NaN number)");
        err_set(e, ERR_INVALID, "'%s' is invalid", path);
    }
out:
    ydoc_release(&doc);
    return j;
}

/* Reads an input file of kind what ("an experiment", "a world") under EXPERIMENT_FILE_MAX
 * (`-`: stdin, named EXPERIMENT_STDIN_NAME in *path); 0, or ERR_INVALID (too large: a diagnostic
 * at 1:1) or ERR_IO, with e set. */
static int read_input(const char **path, const char *what, struct experiment_diags *diags,
                      struct buf *b, struct err *e)
{
    struct err re = {0};
    int stdin_ = strcmp(*path, "-") == 0;
    int rc = stdin_ ? fs_read_fd(0, EXPERIMENT_STDIN_NAME, EXPERIMENT_FILE_MAX, b, &re)
                    : fs_read_file(*path, EXPERIMENT_FILE_MAX, b, &re);

    if (stdin_)
        *path = EXPERIMENT_STDIN_NAME;
    if (rc == ERR_LIMIT) {
        diag_at(diags, 0, 1, 1, "the file is over the limit of %zu bytes for %s",
                EXPERIMENT_FILE_MAX, what);
        return err_set(e, ERR_INVALID, "'%s' is invalid", *path);
    }
    if (rc < 0)
        return err_set(e, ERR_IO, "%s", re.msg);
    return 0;
}

struct experiment *experiment_load(const char *path, struct experiment_diags *diags, struct err *e)
{
    struct buf b = BUF_INIT;
    struct experiment *x = NULL;

    if (read_input(&path, "an experiment", diags, &b, e) == 0)
        x = experiment_parse(path, b.data, b.len, diags, e);
    buf_release(&b);
    return x;
}

/* ---- world files ----------------------------------------------------------------------------- */

json_t *experiment_world_parse(const char *name, const char *text, size_t len,
                               struct experiment_diags *diags, struct err *e)
{
    static const struct ydoc_limits yaml_limits = {.kind = "a world file"};
    struct ydoc doc;
    struct ydoc_problem fatal;
    struct vctx v;
    size_t first = diags->n;
    json_t *out = NULL;
    int rc;

    memset(&v, 0, sizeof(v));
    v.d = diags;
    if (len > EXPERIMENT_FILE_MAX) {
        diag_at(diags, 0, 1, 1, "the file is %zu bytes, over the limit of %zu for a world", len,
                EXPERIMENT_FILE_MAX);
        err_set(e, ERR_INVALID, "'%s' is invalid", name);
        return NULL;
    }
    rc = ydoc_parse(text, len, &yaml_limits, &doc, &fatal);
    for (size_t i = 0; i < doc.nproblems; i++)
        diag_at(diags, 0, doc.problems[i].line, doc.problems[i].col, "%s", doc.problems[i].msg);
    if (rc < 0) {
        diag_at(diags, 0, fatal.line, fatal.col, "%s", fatal.msg);
    } else if (doc.root && doc.root->type == YNODE_MAP && ynode_get(doc.root, "world") &&
               ynode_get(doc.root, "agent")) {
        /* an experiment: the whole of it is checked, its world is the answer */
        ydoc_release(&doc);
        struct experiment *x = experiment_parse(name, text, len, diags, e);
        if (x == NULL)
            return NULL;
        out = json_incref(x->world);
        experiment_free(x);
        return out;
    } else if (doc.root == NULL || doc.root->type != YNODE_MAP) {
        if (doc.root == NULL)
            diag_at(diags, 0, 1, 1, "empty file: a world is a mapping with name and tools");
        else
            err_at(&v, doc.root, "the file is %s: a world is a mapping with name and tools",
                   FOUND(doc.root));
    } else {
        v.x = xcalloc(1, sizeof(*v.x));
        v.x->path = xstrdup(name);
        parse_world(&v, doc.root);
        if (v.x->world == NULL && diags->nerrors == 0)
            diag_at(diags, 0, 1, 1, "the world is invalid");
    }
    ydoc_release(&doc);
    free(v.world_name);
    sort_diags(diags, first);
    if (diags->nerrors == 0 && v.x)
        out = json_incref(v.x->world);
    experiment_free(v.x);
    if (out == NULL)
        err_set(e, ERR_INVALID, "'%s' is invalid", name);
    return out;
}

json_t *experiment_world_load(const char *path, struct experiment_diags *diags, struct err *e)
{
    struct buf b = BUF_INIT;
    json_t *w = NULL;

    if (read_input(&path, "a world", diags, &b, e) == 0)
        w = experiment_world_parse(path, b.data, b.len, diags, e);
    buf_release(&b);
    return w;
}

/* ---- the checks, for other files described by format tables --------------------------------- */

void experiment_diag_error(struct experiment_diags *d, const struct ynode *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdiag(d, 0, n ? n->line : 1, n ? n->col : 1, fmt, ap);
    va_end(ap);
}

void experiment_check_keys(struct experiment_diags *d, const struct ynode *map,
                           const struct format_section *sec, const char *where)
{
    struct vctx v = {.d = d};
    check_keys(&v, map, sec, NULL, where);
}

int experiment_check_value(struct experiment_diags *d, const struct ynode *n,
                           const struct format_key *k, const char *path)
{
    struct vctx v = {.d = d};
    return check_value(&v, n, k, path);
}
