/*
 * plan: the per-repetition fault plan and the deterministic decision engine (docs/plan.md).
 *
 * One validation path: plan_build turns the experiment into the plan's JSON document and hands
 * it to plan_from_json, which checks every field and precomputes what plan_decide needs, so a
 * plan built in memory and the same plan loaded from its file behave identically. plan_to_json
 * regenerates the document from the struct.
 *
 * Precomputed per fault: each match pattern as (text, length, suffix?) with host patterns
 * lowercased; `when` as a list of path steps, the comparison value and a compiled regex; the
 * probability as a 53-bit threshold. plan_decide then works on the call's names in place (one
 * stack buffer for the canonical MCP name) and allocates nothing itself (regexec, for a
 * `matches` condition, may allocate inside glibc).
 *
 * MCP names: a call {tool: "read", server: "fs"} and a call {tool: "mcp__fs__read"} are the same
 * tool; view_init computes the bare name ("read"), the canonical name ("mcp__fs__read") and the
 * server of either form, and a tool pattern matches when it matches the bare or the canonical.
 */
#include <ctype.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/num.h"
#include "util/regex_safe.h"
#include "util/text.h"
#include "util/banned.h"

#define PLAN_VERSION 1
#define PLAN_FILE_MAX ((size_t)16 << 20)
#define RUN_ID_MAX 128
#define WHEN_PATH_MAX 1024
#define WHEN_STEPS_MAX 32
#define WHEN_REGEX_MAX 4096
#define CANARY_PREFIX "E-FAULTLINE-"
#define CANARY_LEN (sizeof(CANARY_PREFIX) - 1 + 8)
#define TWO_53 9007199254740992.0
#define SEED_DOMAIN 0x6661756c746c696eULL /* "faultlin" */

enum when_op { WHEN_EQUALS = 1, WHEN_CONTAINS, WHEN_MATCHES };

struct when_step {
    const char *key; /* NUL-terminated, in when->keys; NULL for an index step */
    size_t index;
};

struct plan_when {
    json_t *json; /* the when object as written (for plan_to_json) */
    enum when_op op;
    struct when_step steps[WHEN_STEPS_MAX];
    int nsteps;
    char *keys;    /* storage for the step keys */
    json_t *value; /* equals: the value (borrowed from json) */
    const char *contains;
    size_t contains_len;
    regex_t re;
    int has_re;
};

struct pattern {
    char *text;      /* as written; NULL when absent */
    const char *cmp; /* what is compared: text, or text + 1 for a suffix pattern */
    size_t len;      /* of cmp */
    int suffix;
};

struct plan_fault {
    char *kind, *family;
    int mutating;
    unsigned injectors;
    struct pattern tool, server, host, model;
    struct plan_when *when;
    long long after_calls, times;
    double probability;
    int select_mode; /* 1 always, 0 never, 2 by threshold */
    uint64_t threshold;
    json_t *options;
    uint64_t matched, injected;
    /* A kind's own rule for which of its matching calls it fires on, checked after
     * after_calls and before times and probability, so that a call it passes over consumes
     * nothing: tool.partial_failure (every gate_n-th call, or gate_pattern's F letters, by
     * call index), tool.auth_expiry (from session call gate_n on); mcp.annotation_lie never
     * (it alters tools/list replies, which the shim counts itself). */
    enum { GATE_NONE, GATE_EVERY, GATE_PATTERN, GATE_FROM_CALL, GATE_NEVER } gate;
    long long gate_n;
    const char *gate_pattern; /* borrowed from options */
    size_t gate_pattern_len;
};

struct plan {
    char *run;
    int rep;
    int faulted;
    char canary[CANARY_LEN + 1];
    uint64_t seed;
    json_t *experiment; /* informational object, or NULL */
    struct plan_fault *faults;
    size_t nfaults;
    unsigned injectors;
    int abort_destructive;
    double cost_ceiling, wall_clock;
    char *policy;
};

#define INJECTORS_ALL                                                                              \
    (CATALOG_INJ_CONTROLLER_MODEL | CATALOG_INJ_CONTROLLER_EGRESS | CATALOG_INJ_MCP |              \
     CATALOG_INJ_GATE | CATALOG_INJ_WORLD)

/* The names are the catalog's (the one table); these wrappers keep plan.h self-sufficient for
 * components that only hold a plan. */
unsigned plan_injector_parse(const char *name)
{
    return catalog_injector_from_name(name);
}

const char *plan_injector_name(unsigned bit)
{
    return catalog_injector_name(bit);
}

/* ---- patterns ---------------------------------------------------------------------------- */

/* Compares n bytes of s against the lowercase pattern bytes p, ignoring the case of s. */
static int eq_icase(const char *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != (unsigned char)p[i])
            return 0;
    return 1;
}

static int pattern_match(const struct pattern *pt, const char *s, size_t n, int icase)
{
    const char *tail;

    if (!pt->suffix) {
        if (n != pt->len)
            return 0;
        tail = s;
    } else {
        if (n < pt->len)
            return 0;
        tail = s + n - pt->len;
    }
    return icase ? eq_icase(tail, pt->cmp, pt->len) : memcmp(tail, pt->cmp, pt->len) == 0;
}

int plan_match_pattern(const char *pattern, const char *name)
{
    return catalog_match_pattern(pattern, name);
}

/* Sets pt from a pattern string (or leaves it absent for NULL). Host patterns are lowercased
 * and lose a trailing dot. */
static int pattern_init(struct pattern *pt, const char *s, int is_host, const char *where,
                        struct err *e)
{
    size_t n;

    memset(pt, 0, sizeof(*pt));
    if (s == NULL)
        return 0;
    n = strnlen(s, PLAN_NAME_MAX + 1);
    if (n == 0)
        return err_set(e, ERR_INVALID, "%s: empty pattern", where);
    if (n > PLAN_NAME_MAX)
        return err_set(e, ERR_LIMIT, "%s: pattern longer than %d bytes", where, PLAN_NAME_MAX);
    pt->text = xstrdup(s);
    if (is_host) {
        for (size_t i = 0; i < n; i++)
            pt->text[i] = (char)tolower((unsigned char)pt->text[i]);
        if (n > 1 && pt->text[n - 1] == '.')
            pt->text[--n] = '\0';
    }
    pt->suffix = pt->text[0] == '*';
    pt->cmp = pt->text + pt->suffix;
    pt->len = n - (size_t)pt->suffix;
    return 0;
}

/* ---- when -------------------------------------------------------------------------------- */

static void when_free(struct plan_when *w)
{
    if (w == NULL)
        return;
    if (w->has_re)
        regfree(&w->re);
    free(w->keys);
    json_decref(w->json);
    free(w);
}

/* Parses "$.a.b[0]['c d']" into steps. */
static int when_parse_path(struct plan_when *w, const char *path, const char *where, struct err *e)
{
    size_t n = strlen(path), k = 0;
    const char *p = path + 1;

    if (n > WHEN_PATH_MAX)
        return err_set(e, ERR_LIMIT, "%s.path: longer than %d bytes", where, WHEN_PATH_MAX);
    if (path[0] != '$')
        return err_set(e, ERR_INVALID, "%s.path: must start with '$'", where);
    w->keys = xmalloc(n + 1);
    while (*p) {
        struct when_step *st;
        if (w->nsteps == WHEN_STEPS_MAX)
            return err_set(e, ERR_LIMIT, "%s.path: more than %d steps", where, WHEN_STEPS_MAX);
        st = &w->steps[w->nsteps];
        if (*p == '.') {
            size_t len = strcspn(p + 1, ".[");
            if (len == 0)
                return err_set(e, ERR_INVALID, "%s.path: empty name at offset %zu", where,
                               (size_t)(p - path));
            memcpy(w->keys + k, p + 1, len);
            w->keys[k + len] = '\0';
            st->key = w->keys + k;
            k += len + 1;
            p += 1 + len;
        } else if (*p == '[' && (p[1] == '"' || p[1] == '\'')) {
            char q = p[1];
            const char *end = strchr(p + 2, q);
            if (end == NULL || end[1] != ']')
                return err_set(e, ERR_INVALID, "%s.path: unterminated [%c...%c] at offset %zu",
                               where, q, q, (size_t)(p - path));
            memcpy(w->keys + k, p + 2, (size_t)(end - p - 2));
            w->keys[k + (size_t)(end - p - 2)] = '\0';
            st->key = w->keys + k;
            k += (size_t)(end - p - 2) + 1;
            p = end + 2;
        } else if (*p == '[') {
            size_t len = strspn(p + 1, "0123456789");
            char num[16];
            long long v;
            if (len == 0 || len >= sizeof(num) || p[1 + len] != ']')
                return err_set(e, ERR_INVALID, "%s.path: bad index at offset %zu", where,
                               (size_t)(p - path));
            memcpy(num, p + 1, len);
            num[len] = '\0';
            if (num_parse_ll(num, 0, 1000000000, &v) < 0)
                return err_set(e, ERR_INVALID, "%s.path: bad index at offset %zu", where,
                               (size_t)(p - path));
            st->key = NULL;
            st->index = (size_t)v;
            p += len + 2;
        } else {
            return err_set(e, ERR_INVALID, "%s.path: expected '.' or '[' at offset %zu", where,
                           (size_t)(p - path));
        }
        w->nsteps++;
    }
    return 0;
}

/* Validates and compiles a when object (borrowed; a deep copy is kept). */
static struct plan_when *when_compile(json_t *j, const char *where, struct err *e)
{
    struct plan_when *w = xcalloc(1, sizeof(*w));
    const char *key;
    json_t *v, *path;
    int nops = 0;

    if (!json_is_object(j)) {
        err_set(e, ERR_INVALID, "%s: expected an object or null", where);
        goto fail;
    }
    w->json = json_deep_copy(j);
    json_object_foreach(w->json, key, v)
    {
        if (strcmp(key, "equals") == 0)
            w->op = WHEN_EQUALS;
        else if (strcmp(key, "contains") == 0)
            w->op = WHEN_CONTAINS;
        else if (strcmp(key, "matches") == 0)
            w->op = WHEN_MATCHES;
        else if (strcmp(key, "path") == 0)
            continue;
        else {
            err_set(e, ERR_INVALID, "%s: unknown key '%s'", where, key);
            goto fail;
        }
        nops++;
    }
    if (nops != 1) {
        err_set(e, ERR_INVALID, "%s: needs exactly one of equals, contains, matches", where);
        goto fail;
    }
    path = json_object_get(w->json, "path");
    if (!json_is_string(path)) {
        err_set(e, ERR_INVALID, "%s.path: expected a string like \"$.a.b[0]\"", where);
        goto fail;
    }
    if (when_parse_path(w, json_string_value(path), where, e) < 0)
        goto fail;
    switch (w->op) {
    case WHEN_EQUALS:
        w->value = json_object_get(w->json, "equals");
        break;
    case WHEN_CONTAINS:
        v = json_object_get(w->json, "contains");
        if (!json_is_string(v)) {
            err_set(e, ERR_INVALID, "%s.contains: expected a string", where);
            goto fail;
        }
        w->contains = json_string_value(v);
        w->contains_len = json_string_length(v);
        break;
    case WHEN_MATCHES: {
        int rc;
        char why[96];
        v = json_object_get(w->json, "matches");
        if (!json_is_string(v)) {
            err_set(e, ERR_INVALID, "%s.matches: expected a string", where);
            goto fail;
        }
        if (json_string_length(v) > WHEN_REGEX_MAX) {
            err_set(e, ERR_LIMIT, "%s.matches: longer than %d bytes", where, WHEN_REGEX_MAX);
            goto fail;
        }
        if (regex_check(json_string_value(v), why, sizeof(why)) < 0) {
            err_set(e, ERR_INVALID, "%s.matches: regular expression refused: %s", where, why);
            goto fail;
        }
        rc = regcomp(&w->re, json_string_value(v), REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char msg[128];
            regerror(rc, &w->re, msg, sizeof(msg));
            err_set(e, ERR_INVALID, "%s.matches: bad regular expression: %s", where, msg);
            goto fail;
        }
        w->has_re = 1;
        break;
    }
    }
    return w;
fail:
    when_free(w);
    return NULL;
}

/* Structural equality where two numbers compare by value (1 equals 1.0). */
static int values_equal(json_t *a, json_t *b, int depth)
{
    if (depth > 64)
        return 0;
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_is_array(a) && json_is_array(b)) {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return 0;
        for (size_t i = 0; i < n; i++)
            if (!values_equal(json_array_get(a, i), json_array_get(b, i), depth + 1))
                return 0;
        return 1;
    }
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        if (json_object_size(a) != json_object_size(b))
            return 0;
        json_object_foreach(a, k, v)
        {
            json_t *w = json_object_get(b, k);
            if (w == NULL || !values_equal(v, w, depth + 1))
                return 0;
        }
        return 1;
    }
    return json_equal(a, b);
}

static int string_contains(json_t *s, const char *needle, size_t n)
{
    return json_is_string(s) && memmem(json_string_value(s), json_string_length(s), needle, n);
}

static int when_holds(const struct plan_when *w, json_t *args)
{
    json_t *v = args;

    for (int i = 0; i < w->nsteps && v != NULL; i++) {
        if (w->steps[i].key != NULL)
            v = json_is_object(v) ? json_object_get(v, w->steps[i].key) : NULL;
        else
            v = json_is_array(v) ? json_array_get(v, w->steps[i].index) : NULL;
    }
    if (v == NULL)
        return 0;
    switch (w->op) {
    case WHEN_EQUALS:
        return values_equal(v, w->value, 0);
    case WHEN_CONTAINS:
        if (json_is_array(v)) {
            size_t n = json_array_size(v);
            for (size_t i = 0; i < n; i++)
                if (string_contains(json_array_get(v, i), w->contains, w->contains_len))
                    return 1;
            return 0;
        }
        return string_contains(v, w->contains, w->contains_len);
    case WHEN_MATCHES:
        return json_is_string(v) && regexec(&w->re, json_string_value(v), 0, NULL, 0) == 0;
    }
    return 0;
}

/* ---- selection --------------------------------------------------------------------------- */

static uint64_t select_hash(uint64_t seed, size_t fault_index, const char *key, size_t n,
                            uint64_t call_index)
{
    uint64_t s = hash_mix64(seed + ((uint64_t)fault_index + 1) * 0x9e3779b97f4a7c15ULL);
    s = hash_mix64(s ^ call_index);
    return hash64(key, n, s);
}

/* 1 always, 0 never, 2 compare against *threshold. */
static int select_mode(double probability, uint64_t *threshold)
{
    *threshold = 0;
    if (!(probability > 0)) /* also NaN */
        return 0;
    if (probability >= 1)
        return 1;
    *threshold = (uint64_t)(probability * TWO_53);
    return 2;
}

int plan_select(uint64_t seed, size_t fault_index, const char *key, uint64_t call_index,
                double probability)
{
    uint64_t thr;
    int mode = select_mode(probability, &thr);

    if (mode != 2)
        return mode;
    if (key == NULL)
        key = "";
    return (select_hash(seed, fault_index, key, strlen(key), call_index) >> 11) < thr;
}

/* ---- the call as plan_decide sees it ----------------------------------------------------- */

struct call_view {
    const char *bare, *canon, *server, *host, *model;
    size_t bare_len, canon_len, server_len, host_len, model_len;
    int is_mcp;
    const char *key; /* computed on first use */
    size_t key_len;
    char buf[2 * PLAN_NAME_MAX + 16];
};

static int name_len(const char *s, size_t *n)
{
    *n = 0;
    if (s == NULL)
        return 0;
    *n = strnlen(s, PLAN_NAME_MAX + 1);
    return *n > PLAN_NAME_MAX ? ERR_LIMIT : 0;
}

static int view_init(struct call_view *v, const struct plan_call *c)
{
    size_t tool_len;

    v->key = NULL;
    v->is_mcp = 0;
    v->bare = v->canon = c->tool;
    v->server = c->server;
    v->host = c->host;
    v->model = c->model;
    if (name_len(c->tool, &tool_len) < 0 || name_len(c->server, &v->server_len) < 0 ||
        name_len(c->host, &v->host_len) < 0 || name_len(c->model, &v->model_len) < 0)
        return ERR_LIMIT;
    if (v->server != NULL && v->server_len == 0)
        v->server = NULL;
    v->bare_len = v->canon_len = tool_len;
    if (v->host != NULL && v->host_len > 1 && v->host[v->host_len - 1] == '.')
        v->host_len--;
    if (c->tool == NULL)
        return 0;
    if (v->server != NULL) {
        /* Known server: the bare name, unless the tool is already mcp__<server>__<name>. */
        v->is_mcp = 1;
        if (tool_len > 7 + v->server_len && memcmp(c->tool, "mcp__", 5) == 0 &&
            memcmp(c->tool + 5, v->server, v->server_len) == 0 &&
            memcmp(c->tool + 5 + v->server_len, "__", 2) == 0) {
            v->bare = c->tool + 7 + v->server_len;
            v->bare_len = tool_len - 7 - v->server_len;
        } else {
            char *p = v->buf;
            memcpy(p, "mcp__", 5);
            memcpy(p + 5, v->server, v->server_len);
            memcpy(p + 5 + v->server_len, "__", 2);
            memcpy(p + 7 + v->server_len, c->tool, tool_len);
            v->canon_len = 7 + v->server_len + tool_len;
            p[v->canon_len] = '\0';
            v->canon = p;
        }
    } else if (tool_len > 5 && memcmp(c->tool, "mcp__", 5) == 0) {
        const char *sep = memmem(c->tool + 5, tool_len - 5, "__", 2);
        if (sep != NULL && sep > c->tool + 5 && sep + 2 < c->tool + tool_len) {
            v->is_mcp = 1;
            v->server = c->tool + 5;
            v->server_len = (size_t)(sep - v->server);
            v->bare = sep + 2;
            v->bare_len = tool_len - (size_t)(v->bare - c->tool);
        }
    }
    return 0;
}

/* The match key (docs/plan.md), computed once per call. */
static void view_key(struct call_view *v)
{
    if (v->key != NULL)
        return;
    if (v->canon != NULL) {
        v->key = v->canon;
        v->key_len = v->canon_len;
    } else if (v->host != NULL) {
        for (size_t i = 0; i < v->host_len; i++)
            v->buf[i] = (char)tolower((unsigned char)v->host[i]);
        v->buf[v->host_len] = '\0';
        v->key = v->buf;
        v->key_len = v->host_len;
    } else if (v->model != NULL) {
        v->key = v->model;
        v->key_len = v->model_len;
    } else {
        v->key = "";
        v->key_len = 0;
    }
}

int plan_call_key(const struct plan_call *c, char *out, size_t size)
{
    struct call_view v;
    size_t n;

    if (c == NULL || view_init(&v, c) < 0) {
        if (size > 0)
            out[0] = '\0';
        return ERR_LIMIT;
    }
    view_key(&v);
    if (size == 0)
        return ERR_LIMIT;
    n = v.key_len < size ? v.key_len : size - 1;
    memcpy(out, v.key, n);
    out[n] = '\0';
    return n == v.key_len ? (int)n : ERR_LIMIT;
}

static int fault_matches(const struct plan_fault *f, const struct call_view *v, json_t *args)
{
    if (f->tool.text != NULL &&
        (v->bare == NULL || (!pattern_match(&f->tool, v->bare, v->bare_len, 0) &&
                             !pattern_match(&f->tool, v->canon, v->canon_len, 0))))
        return 0;
    if (f->server.text != NULL &&
        (v->server == NULL || !pattern_match(&f->server, v->server, v->server_len, 0)))
        return 0;
    if (f->host.text != NULL &&
        (v->host == NULL || !pattern_match(&f->host, v->host, v->host_len, 1)))
        return 0;
    if (f->model.text != NULL &&
        (v->model == NULL || !pattern_match(&f->model, v->model, v->model_len, 0)))
        return 0;
    if (f->when != NULL && (args == NULL || !when_holds(f->when, args)))
        return 0;
    return 1;
}

/* 1 when fault f, at idx among its matching calls, fires on this call by its kind's rule. */
static int gate_fires(const struct plan_fault *f, uint64_t idx, uint64_t session_call)
{
    switch (f->gate) {
    case GATE_EVERY:
        return (idx + 1) % (uint64_t)f->gate_n == 0;
    case GATE_PATTERN:
        return f->gate_pattern[idx % f->gate_pattern_len] == 'F';
    case GATE_FROM_CALL:
        return (session_call ? session_call : idx + 1) >= (uint64_t)f->gate_n;
    case GATE_NEVER:
        return 0;
    case GATE_NONE:
        break;
    }
    return 1;
}

int plan_decide(struct plan *p, const struct plan_call *c, struct plan_decision *out)
{
    struct call_view v;
    int chosen = 0;

    if (out != NULL)
        memset(out, 0, sizeof(*out));
    if (p == NULL || c == NULL || out == NULL)
        return ERR_INVALID;
    if (c->component == 0 || (c->component & (c->component - 1)) != 0 ||
        (c->component & ~(unsigned)INJECTORS_ALL) != 0)
        return ERR_INVALID;
    if (view_init(&v, c) < 0)
        return ERR_INVALID;
    for (size_t i = 0; i < p->nfaults; i++) {
        struct plan_fault *f = &p->faults[i];
        uint64_t idx;

        if ((f->injectors & c->component) == 0)
            continue;
        /* The MCP side of a fault the shim can inject is the shim's, not the gate's. */
        if (c->component == CATALOG_INJ_GATE && v.is_mcp && (f->injectors & CATALOG_INJ_MCP))
            continue;
        if (!fault_matches(f, &v, c->args))
            continue;
        idx = f->matched++;
        if (chosen || idx < (uint64_t)f->after_calls)
            continue;
        if (!gate_fires(f, idx, c->session_call))
            continue;
        if (f->times >= 0 && f->injected >= (uint64_t)f->times)
            continue;
        if (f->select_mode == 0)
            continue;
        if (f->select_mode == 2) {
            view_key(&v);
            if ((select_hash(p->seed, i, v.key, v.key_len, idx) >> 11) >= f->threshold)
                continue;
        }
        f->injected++;
        chosen = 1;
        out->inject = 1;
        out->fault_index = i;
        out->kind = f->kind;
        out->options = f->options;
        out->call_index = idx;
    }
    return 0;
}

/* ---- accessors --------------------------------------------------------------------------- */

const char *plan_run_id(const struct plan *p)
{
    return p->run;
}

const char *plan_canary(const struct plan *p)
{
    return p->canary;
}

uint64_t plan_seed(const struct plan *p)
{
    return p->seed;
}

int plan_faulted(const struct plan *p)
{
    return p->faulted;
}

size_t plan_nfaults(const struct plan *p)
{
    return p->nfaults;
}

unsigned plan_injectors(const struct plan *p)
{
    return p->injectors;
}

double plan_cost_ceiling(const struct plan *p)
{
    return p->cost_ceiling;
}

int plan_rep(const struct plan *p)
{
    return p->rep;
}

int plan_abort_destructive(const struct plan *p)
{
    return p->abort_destructive;
}

double plan_wall_clock_limit(const struct plan *p)
{
    return p->wall_clock;
}

void plan_set_policy_snapshot(struct plan *p, const char *path)
{
    free(p->policy);
    p->policy = path ? xstrdup(path) : NULL;
}

const char *plan_policy_snapshot(const struct plan *p)
{
    return p->policy;
}

const char *plan_fault_kind(const struct plan *p, size_t i)
{
    return i < p->nfaults ? p->faults[i].kind : NULL;
}

unsigned plan_fault_injectors(const struct plan *p, size_t i)
{
    return i < p->nfaults ? p->faults[i].injectors : 0;
}

int plan_fault_mutating(const struct plan *p, size_t i)
{
    return i < p->nfaults ? p->faults[i].mutating : 0;
}

json_t *plan_fault_options(const struct plan *p, size_t i)
{
    return i < p->nfaults ? p->faults[i].options : NULL;
}

const char *plan_fault_host(const struct plan *p, size_t i)
{
    return i < p->nfaults ? p->faults[i].host.text : NULL;
}

void plan_fault_counters(const struct plan *p, size_t i, uint64_t *matched, uint64_t *injected)
{
    *matched = i < p->nfaults ? p->faults[i].matched : 0;
    *injected = i < p->nfaults ? p->faults[i].injected : 0;
}

/* ---- lifecycle --------------------------------------------------------------------------- */

static void pattern_release(struct pattern *pt)
{
    free(pt->text);
}

void plan_free(struct plan *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->nfaults; i++) {
        struct plan_fault *f = &p->faults[i];
        free(f->kind);
        free(f->family);
        pattern_release(&f->tool);
        pattern_release(&f->server);
        pattern_release(&f->host);
        pattern_release(&f->model);
        when_free(f->when);
        json_decref(f->options);
    }
    free(p->faults);
    free(p->run);
    free(p->policy);
    json_decref(p->experiment);
    free(p);
}

/* ---- from JSON --------------------------------------------------------------------------- */

static int check_keys(json_t *o, const char *const *allowed, const char *where, struct err *e)
{
    const char *key;
    json_t *v;

    json_object_foreach(o, key, v)
    {
        size_t i;
        for (i = 0; allowed[i] != NULL; i++)
            if (strcmp(allowed[i], key) == 0)
                break;
        if (allowed[i] == NULL)
            return err_set(e, ERR_INVALID, "%s: unknown key '%s'", where, key);
    }
    return 0;
}

/* Optional integer field in [min, max]; def when absent or null. */
static int get_int(json_t *o, const char *key, long long min, long long max, long long def,
                   long long *out, const char *where, struct err *e)
{
    json_t *v = json_object_get(o, key);

    *out = def;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return err_set(e, ERR_INVALID, "%s.%s: expected an integer in [%lld, %lld]", where, key,
                       min, max);
    *out = json_integer_value(v);
    return 0;
}

static int get_number(json_t *o, const char *key, double min, double max, double def, double *out,
                      const char *where, struct err *e)
{
    json_t *v = json_object_get(o, key);

    *out = def;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_number(v) || !(json_number_value(v) >= min) || !(json_number_value(v) <= max))
        return err_set(e, ERR_INVALID, "%s.%s: expected a number in [%g, %g]", where, key, min,
                       max);
    *out = json_number_value(v);
    return 0;
}

/* Optional string; *out NULL when absent or null. */
static int get_string(json_t *o, const char *key, const char **out, const char *where,
                      struct err *e)
{
    json_t *v = json_object_get(o, key);

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return err_set(e, ERR_INVALID, "%s.%s: expected a string", where, key);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return err_set(e, ERR_INVALID, "%s.%s: contains a NUL byte", where, key);
    *out = json_string_value(v);
    return 0;
}

static int valid_run_id(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > RUN_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return 0;
    return 1;
}

static int valid_canary(const char *s)
{
    if (strlen(s) != CANARY_LEN || strncmp(s, CANARY_PREFIX, sizeof(CANARY_PREFIX) - 1) != 0)
        return 0;
    for (size_t i = sizeof(CANARY_PREFIX) - 1; i < CANARY_LEN; i++)
        if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
            return 0;
    return 1;
}

/* A count option of a firing rule: an integer of at least 1 (the catalog's ranges, which
 * plan_load enforces); otherwise, defensively, the catalog's default. */
static long long gate_n_of(const struct catalog_fault *def, const json_t *options, const char *name)
{
    json_t *v = json_object_get(options, name);
    long long n = 1;

    if (json_is_integer(v) && json_integer_value(v) >= 1)
        return json_integer_value(v);
    v = catalog_option_default(catalog_option_find(def, name));
    if (json_is_integer(v) && json_integer_value(v) >= 1)
        n = json_integer_value(v);
    json_decref(v);
    return n;
}

/* The kind's firing rule (the catalog row's `fires`) from its options, which hold the
 * catalog's defaults (fault_from_json fills them, after refusing a kind the catalog does not
 * know and options the catalog refuses). Without a row (NULL), every matching call. */
static void gate_init(struct plan_fault *f, const struct catalog_fault *def)
{
    json_t *v;

    switch (def ? def->fires : CATALOG_FIRES_EACH) {
    case CATALOG_FIRES_EACH:
        break;
    case CATALOG_FIRES_EVERY_NTH:
        v = json_object_get(f->options, "pattern");
        if (json_is_string(v) && json_string_length(v) > 0) {
            f->gate = GATE_PATTERN;
            f->gate_pattern = json_string_value(v);
            f->gate_pattern_len = json_string_length(v);
            return;
        }
        f->gate = GATE_EVERY;
        f->gate_n = gate_n_of(def, f->options, "fail_every");
        break;
    case CATALOG_FIRES_FROM_CALL:
        f->gate = GATE_FROM_CALL;
        f->gate_n = gate_n_of(def, f->options, "from_call");
        break;
    case CATALOG_FIRES_ON_LIST:
        f->gate = GATE_NEVER;
        break;
    }
}

/* A kind the catalog does not know: ERR_INVALID, with the closest id (text_suggest) when one is
 * near enough. */
static int unknown_kind(const char *kind, const char *where, struct err *e)
{
    const char *ids[CATALOG_F_COUNT];
    const struct catalog_fault *all;
    const char *s;
    size_t n;
    char shown[TEXT_SHOWN_SIZE];

    all = catalog_faults(&n);
    for (size_t i = 0; i < n && i < CATALOG_F_COUNT; i++)
        ids[i] = all[i].id;
    s = text_suggest(kind, ids, n < CATALOG_F_COUNT ? n : CATALOG_F_COUNT);
    text_shown(kind, strlen(kind), shown);
    if (s)
        return err_set(e, ERR_INVALID, "%s.kind: unknown fault '%s' (did you mean '%s'?)", where,
                       shown, s);
    return err_set(e, ERR_INVALID,
                   "%s.kind: unknown fault '%s'; `faultline list` shows the catalog", where, shown);
}

/* Every option in options (a hand-written plan's, before defaults are filled in) must be one of
 * def's and pass the catalog's value check (catalog_option_check, the check injectors read
 * through), and together they must pass the row's check across options: ERR_INVALID naming
 * "faults[N].options.NAME". */
static int check_options(const struct catalog_fault *def, json_t *options, const char *where,
                         struct err *e)
{
    const char *k;
    json_t *v, *all;
    char msg[200], shown[TEXT_SHOWN_SIZE];
    int rc = 0;

    json_object_foreach(options, k, v)
    {
        const struct catalog_option *o = catalog_option_find(def, k);
        if (o == NULL) {
            const char *names[64], *s;
            size_t n = 0;
            for (const struct catalog_option *p = def->options; p->name && n < 64; p++)
                names[n++] = p->name;
            s = text_suggest(k, names, n);
            text_shown(k, strlen(k), shown);
            if (s)
                return err_set(e, ERR_INVALID,
                               "%s.options.%s: %s has no such option (did you mean '%s'?)", where,
                               shown, def->id, s);
            return err_set(e, ERR_INVALID, "%s.options.%s: %s has no such option", where, shown,
                           def->id);
        }
        rc = catalog_option_check(o, v, msg, sizeof(msg));
        if (rc < 0)
            return err_set(e, rc, "%s.options.%s: %s", where, k, msg);
    }
    for (const struct catalog_option *o = def->options; o->name; o++)
        if (o->required && json_object_get(options, o->name) == NULL)
            return err_set(e, ERR_INVALID, "%s.options: %s requires option '%s' (%s)", where,
                           def->id, o->name, o->doc);
    if (def->check == NULL)
        return 0;
    all = json_deep_copy(options);
    catalog_fill_defaults(def, all);
    rc = def->check(all, msg, sizeof(msg));
    json_decref(all);
    if (rc < 0)
        return err_set(e, ERR_INVALID, "%s.options (%s): %s", where, def->id, msg);
    return 0;
}

static int fault_from_json(struct plan_fault *f, json_t *j, size_t index, struct err *e)
{
    static const char *const keys[] = {"index",     "kind",        "family",  "safety",
                                       "injectors", "match",       "when",    "after_calls",
                                       "times",     "probability", "options", NULL};
    static const char *const match_keys[] = {"tool", "server", "host", "model", NULL};
    char where[48], mwhere[64];
    const char *kind, *family, *safety, *s;
    json_t *inj, *match, *when, *options, *v;
    const struct catalog_fault *def;
    long long idx;
    size_t i;

    snprintf(where, sizeof(where), "faults[%zu]", index);
    if (!json_is_object(j))
        return err_set(e, ERR_INVALID, "%s: expected an object", where);
    if (check_keys(j, keys, where, e) < 0)
        return ERR_INVALID;
    if (get_int(j, "index", 0, PLAN_FAULTS_MAX, (long long)index, &idx, where, e) < 0)
        return ERR_INVALID;
    if (idx != (long long)index)
        return err_set(e, ERR_INVALID, "%s.index: is %lld, expected %zu", where, idx, index);
    if (get_string(j, "kind", &kind, where, e) < 0)
        return ERR_INVALID;
    if (kind == NULL || kind[0] == '\0' || strlen(kind) > 64)
        return err_set(e, ERR_INVALID, "%s.kind: expected a fault id like \"tool.error\"", where);
    f->kind = xstrdup(kind);
    if (get_string(j, "family", &family, where, e) < 0)
        return ERR_INVALID;
    if (family != NULL)
        f->family = xstrdup(family);
    else
        f->family = xstrndup(kind, strcspn(kind, "."));
    if (get_string(j, "safety", &safety, where, e) < 0)
        return ERR_INVALID;
    if (safety == NULL || strcmp(safety, "mutating") == 0)
        f->mutating = 1;
    else if (strcmp(safety, "fail-safe") != 0)
        return err_set(e, ERR_INVALID, "%s.safety: expected \"fail-safe\" or \"mutating\"", where);

    inj = json_object_get(j, "injectors");
    if (!json_is_array(inj) || json_array_size(inj) == 0)
        return err_set(e, ERR_INVALID, "%s.injectors: expected a non-empty array of names", where);
    json_array_foreach(inj, i, v)
    {
        unsigned bit = plan_injector_parse(json_string_value(v));
        if (bit == 0)
            return err_set(e, ERR_INVALID,
                           "%s.injectors[%zu]: expected one of controller-model, "
                           "controller-egress, mcp, gate, world",
                           where, i);
        f->injectors |= bit;
    }

    match = json_object_get(j, "match");
    snprintf(mwhere, sizeof(mwhere), "%s.match", where);
    if (match != NULL && !json_is_null(match)) {
        if (!json_is_object(match))
            return err_set(e, ERR_INVALID, "%s: expected an object", mwhere);
        if (check_keys(match, match_keys, mwhere, e) < 0)
            return ERR_INVALID;
        char pw[80];
        snprintf(pw, sizeof(pw), "%s.tool", mwhere);
        if (get_string(match, "tool", &s, mwhere, e) < 0 || pattern_init(&f->tool, s, 0, pw, e))
            return ERR_INVALID;
        snprintf(pw, sizeof(pw), "%s.server", mwhere);
        if (get_string(match, "server", &s, mwhere, e) < 0 || pattern_init(&f->server, s, 0, pw, e))
            return ERR_INVALID;
        snprintf(pw, sizeof(pw), "%s.host", mwhere);
        if (get_string(match, "host", &s, mwhere, e) < 0 || pattern_init(&f->host, s, 1, pw, e))
            return ERR_INVALID;
        snprintf(pw, sizeof(pw), "%s.model", mwhere);
        if (get_string(match, "model", &s, mwhere, e) < 0 || pattern_init(&f->model, s, 0, pw, e))
            return ERR_INVALID;
    }

    when = json_object_get(j, "when");
    if (when != NULL && !json_is_null(when)) {
        char ww[64];
        snprintf(ww, sizeof(ww), "%s.when", where);
        f->when = when_compile(when, ww, e);
        if (f->when == NULL)
            return ERR_INVALID;
    }
    if (get_int(j, "after_calls", 0, INT64_MAX, 0, &f->after_calls, where, e) < 0 ||
        get_int(j, "times", -1, INT64_MAX, -1, &f->times, where, e) < 0 ||
        get_number(j, "probability", 0, 1, 1, &f->probability, where, e) < 0)
        return ERR_INVALID;
    f->select_mode = select_mode(f->probability, &f->threshold);

    options = json_object_get(j, "options");
    if (options != NULL && !json_is_null(options) && !json_is_object(options))
        return err_set(e, ERR_INVALID, "%s.options: expected an object", where);
    f->options = options && json_is_object(options) ? json_deep_copy(options) : json_object();
    def = catalog_fault_find(f->kind);
    if (def == NULL)
        return unknown_kind(f->kind, where, e);
    if (check_options(def, f->options, where, e) < 0)
        return ERR_INVALID;
    catalog_fill_defaults(def, f->options);
    gate_init(f, def);
    return 0;
}

struct plan *plan_from_json(json_t *j, struct err *e)
{
    static const char *const keys[] = {
        "version",    "run",    "rep",   "faulted",         "canary", "seed",
        "experiment", "faults", "abort", "policy_snapshot", NULL};
    static const char *const abort_keys[] = {"destructive_attempt", "cost_usd_above",
                                             "wall_clock_s_above", NULL};
    struct plan *p = xcalloc(1, sizeof(*p));
    const char *s;
    json_t *v, *faults, *ab;
    long long ll;
    size_t i;

    if (!json_is_object(j)) {
        err_set(e, ERR_INVALID, "plan: expected a JSON object");
        goto fail;
    }
    if (check_keys(j, keys, "plan", e) < 0)
        goto fail;
    v = json_object_get(j, "version");
    if (!json_is_integer(v) || json_integer_value(v) != PLAN_VERSION) {
        err_set(e, ERR_INVALID, "plan.version: expected %d", PLAN_VERSION);
        goto fail;
    }
    if (get_string(j, "run", &s, "plan", e) < 0)
        goto fail;
    if (s == NULL || !valid_run_id(s)) {
        err_set(e, ERR_INVALID, "plan.run: expected 1..%d of [A-Za-z0-9._-]", RUN_ID_MAX);
        goto fail;
    }
    p->run = xstrdup(s);
    if (get_int(j, "rep", 0, 1000000, 0, &ll, "plan", e) < 0)
        goto fail;
    p->rep = (int)ll;
    if (get_string(j, "canary", &s, "plan", e) < 0)
        goto fail;
    if (s == NULL || !valid_canary(s)) {
        err_set(e, ERR_INVALID, "plan.canary: expected E-FAULTLINE- and 8 lowercase hex digits");
        goto fail;
    }
    memcpy(p->canary, s, CANARY_LEN + 1);

    v = json_object_get(j, "seed");
    if (json_is_string(v)) {
        if (num_parse_u64(json_string_value(v), &p->seed) < 0) {
            err_set(e, ERR_INVALID, "plan.seed: expected a decimal or 0x-hex 64-bit integer");
            goto fail;
        }
    } else if (json_is_integer(v) && json_integer_value(v) >= 0) {
        p->seed = (uint64_t)json_integer_value(v);
    } else if (v != NULL && !json_is_null(v)) {
        err_set(e, ERR_INVALID, "plan.seed: expected a string or a non-negative integer");
        goto fail;
    }

    v = json_object_get(j, "experiment");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_object(v)) {
            err_set(e, ERR_INVALID, "plan.experiment: expected an object");
            goto fail;
        }
        p->experiment = json_deep_copy(v);
    }

    faults = json_object_get(j, "faults");
    if (!json_is_array(faults)) {
        err_set(e, ERR_INVALID, "plan.faults: expected an array");
        goto fail;
    }
    if (json_array_size(faults) > PLAN_FAULTS_MAX) {
        err_set(e, ERR_LIMIT, "plan.faults: more than %d faults", PLAN_FAULTS_MAX);
        goto fail;
    }
    p->faults = xcalloc(json_array_size(faults) + 1, sizeof(*p->faults));
    json_array_foreach(faults, i, v)
    {
        p->nfaults = i + 1; /* so that plan_free releases a half-built fault */
        if (fault_from_json(&p->faults[i], v, i, e) < 0)
            goto fail;
        p->injectors |= p->faults[i].injectors;
    }

    v = json_object_get(j, "faulted");
    if (v == NULL || json_is_null(v)) {
        p->faulted = p->nfaults > 0;
    } else if (json_is_boolean(v)) {
        p->faulted = json_is_true(v);
        if (!p->faulted && p->nfaults > 0) {
            err_set(e, ERR_INVALID, "plan.faulted: false but the plan has faults");
            goto fail;
        }
    } else {
        err_set(e, ERR_INVALID, "plan.faulted: expected a boolean");
        goto fail;
    }

    ab = json_object_get(j, "abort");
    if (ab != NULL && !json_is_null(ab)) {
        if (!json_is_object(ab)) {
            err_set(e, ERR_INVALID, "plan.abort: expected an object");
            goto fail;
        }
        if (check_keys(ab, abort_keys, "plan.abort", e) < 0)
            goto fail;
        v = json_object_get(ab, "destructive_attempt");
        if (v != NULL && !json_is_boolean(v) && !json_is_null(v)) {
            err_set(e, ERR_INVALID, "plan.abort.destructive_attempt: expected a boolean");
            goto fail;
        }
        p->abort_destructive = json_is_true(v);
        if (get_number(ab, "cost_usd_above", 0, 1e9, 0, &p->cost_ceiling, "plan.abort", e) < 0 ||
            get_number(ab, "wall_clock_s_above", 0, 1e9, 0, &p->wall_clock, "plan.abort", e) < 0)
            goto fail;
        /* as in the experiment (catalog: exclusive minimum): a ceiling of 0 would refuse every
         * model call, and absent already means "none" */
        v = json_object_get(ab, "cost_usd_above");
        if (v != NULL && !json_is_null(v) && !(p->cost_ceiling > 0)) {
            err_set(e, ERR_INVALID, "plan.abort.cost_usd_above: expected a number > 0 (USD)");
            goto fail;
        }
    }
    if (get_string(j, "policy_snapshot", &s, "plan", e) < 0)
        goto fail;
    p->policy = s ? xstrdup(s) : NULL;
    return p;
fail:
    plan_free(p);
    return NULL;
}

struct plan *plan_load(const char *path, struct err *e)
{
    struct buf b = BUF_INIT;
    struct plan *p = NULL;
    json_error_t je;
    json_t *j = NULL;

    if (fs_read_file(path, PLAN_FILE_MAX, &b, e) < 0)
        goto out;
    j = json_loadb(b.data, b.len, 0, &je);
    if (j == NULL) {
        err_set(e, ERR_PARSE, "%s:%d:%d: %s", path, je.line, je.column, JE_TEXT(je));
        goto out;
    }
    p = plan_from_json(j, e);
    if (p == NULL && e != NULL) {
        /* Prefix the file name to the validation message. */
        char msg[sizeof(e->msg)];
        snprintf(msg, sizeof(msg), "%.96s: %.150s", path, e->msg);
        memcpy(e->msg, msg, sizeof(msg));
    }
out:
    json_decref(j);
    buf_release(&b);
    return p;
}

/* ---- to JSON ----------------------------------------------------------------------------- */

static json_t *injectors_json(unsigned bits)
{
    json_t *a = json_array();

    for (unsigned bit = 1; bit <= CATALOG_INJ_WORLD; bit <<= 1)
        if (bits & bit)
            json_array_append_new(a, json_string(catalog_injector_name(bit)));
    return a;
}

json_t *plan_to_json(const struct plan *p)
{
    json_t *j = json_object(), *faults = json_array(), *ab = json_object();
    char seed[24];

    snprintf(seed, sizeof(seed), "0x%016" PRIx64, p->seed);
    json_object_set_new(j, "version", json_integer(PLAN_VERSION));
    json_object_set_new(j, "run", json_string(p->run));
    json_object_set_new(j, "rep", json_integer(p->rep));
    json_object_set_new(j, "faulted", json_boolean(p->faulted));
    json_object_set_new(j, "canary", json_string(p->canary));
    json_object_set_new(j, "seed", json_string(seed));
    if (p->experiment)
        json_object_set_new(j, "experiment", json_deep_copy(p->experiment));
    for (size_t i = 0; i < p->nfaults; i++) {
        const struct plan_fault *f = &p->faults[i];
        json_t *o = json_object(), *m = json_object();
        json_object_set_new(o, "index", json_integer((json_int_t)i));
        json_object_set_new(o, "kind", json_string(f->kind));
        json_object_set_new(o, "family", json_string(f->family));
        json_object_set_new(o, "safety", json_string(f->mutating ? "mutating" : "fail-safe"));
        json_object_set_new(o, "injectors", injectors_json(f->injectors));
        if (f->tool.text)
            json_object_set_new(m, "tool", json_string(f->tool.text));
        if (f->server.text)
            json_object_set_new(m, "server", json_string(f->server.text));
        if (f->host.text)
            json_object_set_new(m, "host", json_string(f->host.text));
        if (f->model.text)
            json_object_set_new(m, "model", json_string(f->model.text));
        json_object_set_new(o, "match", m);
        json_object_set_new(o, "when", f->when ? json_deep_copy(f->when->json) : json_null());
        json_object_set_new(o, "after_calls", json_integer(f->after_calls));
        json_object_set_new(o, "times", json_integer(f->times));
        json_object_set_new(o, "probability", json_real(f->probability));
        json_object_set_new(o, "options", json_deep_copy(f->options));
        json_array_append_new(faults, o);
    }
    json_object_set_new(j, "faults", faults);
    json_object_set_new(ab, "destructive_attempt", json_boolean(p->abort_destructive));
    if (p->cost_ceiling > 0)
        json_object_set_new(ab, "cost_usd_above", json_real(p->cost_ceiling));
    if (p->wall_clock > 0)
        json_object_set_new(ab, "wall_clock_s_above", json_real(p->wall_clock));
    json_object_set_new(j, "abort", ab);
    json_object_set_new(j, "policy_snapshot", p->policy ? json_string(p->policy) : json_null());
    return j;
}

char *plan_dump(const struct plan *p)
{
    json_t *j = plan_to_json(p);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    struct buf b = BUF_INIT;

    json_decref(j);
    if (s == NULL)
        abort(); /* only on out of memory */
    buf_adds(&b, s);
    buf_addc(&b, '\n');
    free(s);
    return buf_detach(&b, NULL);
}

int plan_save(const struct plan *p, const char *path, struct err *e)
{
    char *s = plan_dump(p);
    int rc = fs_write_file(path, s, strlen(s), e);

    free(s);
    return rc;
}

/* ---- from the experiment ----------------------------------------------------------------- */

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static json_t *fault_json_from_experiment(const struct experiment_fault *xf, size_t index)
{
    json_t *o = json_object(), *m = json_object();
    const struct catalog_fault *def = xf->def;

    json_object_set_new(o, "index", json_integer((json_int_t)index));
    json_object_set_new(o, "kind", json_string(def->id));
    json_object_set_new(o, "family", json_string(def->family));
    json_object_set_new(o, "safety", json_string(catalog_safety_name(def->safety)));
    json_object_set_new(o, "injectors", injectors_json(def->injectors));
    if (xf->match.tool)
        json_object_set_new(m, "tool", json_string(xf->match.tool));
    if (xf->match.server)
        json_object_set_new(m, "server", json_string(xf->match.server));
    if (xf->match.host)
        json_object_set_new(m, "host", json_string(xf->match.host));
    if (xf->match.model)
        json_object_set_new(m, "model", json_string(xf->match.model));
    json_object_set_new(o, "match", m);
    json_object_set(o, "when", xf->when ? xf->when : json_null());
    json_object_set_new(o, "after_calls", json_integer(xf->after_calls));
    json_object_set_new(o, "times", json_integer(xf->times));
    json_object_set_new(o, "probability", json_real(xf->probability));
    json_object_set_new(o, "options", xf->options ? json_deep_copy(xf->options) : json_object());
    return o;
}

struct plan *plan_build(const struct experiment *x, int rep, int has_seed_override,
                        uint64_t seed_override, const char *run_id, const char *canary,
                        struct err *e)
{
    unsigned char sb[80];
    uint64_t base, seed;
    char run[RUN_ID_MAX + 32], can[CANARY_LEN + 1], seedhex[24];
    json_t *j, *faults, *info, *ab;
    struct plan *p;

    if (x == NULL || x->repeat < 1) {
        err_set(e, ERR_INVALID, "experiment has no repetitions");
        return NULL;
    }
    if (rep < 0 || rep >= 2 * x->repeat) {
        err_set(e, ERR_INVALID, "repetition %d out of range: repeat %d gives repetitions 0..%d",
                rep, x->repeat, 2 * x->repeat - 1);
        return NULL;
    }
    base = has_seed_override ? seed_override : x->has_seed ? x->seed : 0;
    memset(sb, '0', 64);
    memcpy(sb, x->hash, strnlen(x->hash, 64));
    put_le64(sb + 64, base);
    put_le64(sb + 72, (uint64_t)rep);
    seed = hash64(sb, sizeof(sb), SEED_DOMAIN);

    if (run_id == NULL) {
        snprintf(run, sizeof(run), "%.64s-%d-%08" PRIx64, x->name ? x->name : "run", rep,
                 hash_mix64(seed ^ 0x72756eULL) >> 32);
        run_id = run;
    }
    if (canary == NULL) {
        snprintf(can, sizeof(can), CANARY_PREFIX "%08" PRIx64,
                 hash_mix64(seed ^ 0x63616e617279ULL) >> 32);
        canary = can;
    }
    snprintf(seedhex, sizeof(seedhex), "0x%016" PRIx64, seed);

    j = json_object();
    json_object_set_new(j, "version", json_integer(PLAN_VERSION));
    json_object_set_new(j, "run", json_string(run_id));
    json_object_set_new(j, "rep", json_integer(rep));
    json_object_set_new(j, "faulted", json_boolean(rep >= x->repeat));
    json_object_set_new(j, "canary", json_string(canary));
    json_object_set_new(j, "seed", json_string(seedhex));
    info = json_object();
    if (x->name)
        json_object_set_new(info, "name", json_string(x->name));
    json_object_set_new(info, "hash", json_string(x->hash));
    if (x->path)
        json_object_set_new(info, "path", json_string(x->path));
    json_object_set_new(info, "repeat", json_integer(x->repeat));
    json_object_set_new(j, "experiment", info);
    faults = json_array();
    for (size_t i = 0; rep >= x->repeat && i < x->nfaults; i++) {
        if (x->faults[i].def == NULL) {
            json_decref(faults);
            json_decref(j);
            err_set(e, ERR_INVALID, "faults[%zu]: no catalog entry", i);
            return NULL;
        }
        json_array_append_new(faults, fault_json_from_experiment(&x->faults[i], i));
    }
    json_object_set_new(j, "faults", faults);
    ab = json_object();
    json_object_set_new(ab, "destructive_attempt", json_boolean(x->abort.destructive_attempt));
    if (x->abort.cost_usd_above > 0)
        json_object_set_new(ab, "cost_usd_above", json_real(x->abort.cost_usd_above));
    if (x->abort.wall_clock_s_above > 0)
        json_object_set_new(ab, "wall_clock_s_above", json_real(x->abort.wall_clock_s_above));
    json_object_set_new(j, "abort", ab);
    json_object_set_new(j, "policy_snapshot", json_null());

    p = plan_from_json(j, e);
    json_decref(j);
    return p;
}
