/*
 * replay: see replay.h. The comparison descends both values together, object keys in sorted
 * order and array items by index, to the first place they disagree (diff_at), so every
 * difference has one path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/hash.h"
#include "util/redact.h"
#include "world/decide.h"
#include "world/replay.h"
#include "world/world.h"
#include "util/banned.h"

#define SHOW_MAX 120 /* bytes of a value shown in a difference */

/* v (new reference) with every real that holds an integer (3998.0) made that integer: the
 * ledger writes balances as reals, and a tool that rewrites the file (jq) may write 3998. */
static json_t *normal(const json_t *v)
{
    json_t *c;
    const char *k;
    json_t *x;

    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == (double)(json_int_t)d && d > -9.0e15 && d < 9.0e15)
            return json_integer((json_int_t)d);
        return json_real(d);
    }
    if (json_is_object(v)) {
        c = json_object();
        json_object_foreach((json_t *)v, k, x) json_object_set_new(c, k, normal(x));
        return c;
    }
    if (json_is_array(v)) {
        c = json_array();
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_append_new(c, normal(json_array_get(v, i)));
        return c;
    }
    return v ? json_incref((json_t *)v) : NULL;
}

static void sha_of(const json_t *v, char out[65])
{
    json_t *n = normal(v);
    char *s =
        n ? json_dumps(n, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17))
          : NULL;
    json_decref(n);
    const char *t = s ? s : "null";
    hash_sha256_hex(t, strlen(t), out);
    free(s);
}

void world_replay_digest(const json_t *spec, const json_t *plan, const json_t *ledger,
                         struct world_digest *out)
{
    json_t *rest = NULL;

    sha_of(spec, out->world);
    sha_of(plan, out->plan);
    sha_of(json_object_get(ledger, "calls"), out->calls);
    if (json_is_object(ledger)) {
        rest = json_copy((json_t *)ledger);
        json_object_del(rest, "calls");
    }
    sha_of(rest ? rest : ledger, out->ledger);
    json_decref(rest);
}

json_t *world_replay_digest_json(const struct world_digest *d)
{
    return json_pack("{s:i,s:s,s:s,s:s,s:s}", "format", 1, "world", d->world, "plan", d->plan,
                     "calls", d->calls, "ledger", d->ledger);
}

int world_replay_digest_parse(const json_t *j, struct world_digest *out, struct err *e)
{
    static const char *const names[] = {"world", "plan", "calls", "ledger"};
    char *dst[] = {out->world, out->plan, out->calls, out->ledger};

    memset(out, 0, sizeof(*out));
    if (!json_is_object(j))
        return err_set(e, ERR_INVALID, "expected an object");
    if (json_integer_value(json_object_get(j, "format")) != 1)
        return err_set(e, ERR_INVALID, "format: expected 1");
    for (size_t i = 0; i < 4; i++) {
        const char *h = json_string_value(json_object_get(j, names[i]));
        if (h == NULL || strlen(h) != 64 || strspn(h, "0123456789abcdef") != 64)
            return err_set(e, ERR_INVALID, "%s: expected a hex SHA-256", names[i]);
        memcpy(dst[i], h, 65);
    }
    return 0;
}

int world_replay_digest_diff(const struct world_digest *recorded, const struct world_digest *now,
                             char *out, size_t n)
{
    const char *names[] = {"world", "plan", "calls", "ledger"};
    const char *a[] = {recorded->world, recorded->plan, recorded->calls, recorded->ledger};
    const char *b[] = {now->world, now->plan, now->calls, now->ledger};
    struct buf t = BUF_INIT;
    int k = 0;

    for (size_t i = 0; i < 4; i++)
        if (strcmp(a[i], b[i]) != 0)
            buf_addf(&t, "%s%s", k++ ? ", " : "", names[i]);
    snprintf(out, n, "%s", t.data);
    buf_release(&t);
    return k;
}

/* ---- rebuild ----------------------------------------------------------------------------- */

json_t *world_replay_rebuild(const json_t *spec, const json_t *ledger, struct seam *s,
                             struct err *e)
{
    json_t *calls = json_object_get(ledger, "calls"),
           *after = json_object_get(ledger, "closed_after");
    json_t *out = NULL;
    struct world *w;
    size_t n, close_at = SIZE_MAX;

    if (!json_is_object(ledger)) {
        err_set(e, ERR_INVALID, "expected a ledger object");
        return NULL;
    }
    if (!json_is_array(calls)) {
        err_set(e, ERR_INVALID, "calls: expected an array (a world's ledger)");
        return NULL;
    }
    n = json_array_size(calls);
    if (n > WORLD_CALLS_MAX) {
        err_set(e, ERR_LIMIT, "calls: %zu calls, more than a world takes (%d)", n, WORLD_CALLS_MAX);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(calls, i);
        if (!json_is_object(c)) {
            err_set(e, ERR_INVALID, "calls[%zu]: expected an object", i);
            return NULL;
        }
        if (!json_is_string(json_object_get(c, "tool"))) {
            err_set(e, ERR_INVALID, "calls[%zu].tool: expected a string", i);
            return NULL;
        }
    }
    if (json_is_true(json_object_get(ledger, "closed"))) {
        close_at = n; /* a ledger from before closed_after: the report came last */
        if (after && (!json_is_integer(after) || json_integer_value(after) < 0)) {
            err_set(e, ERR_INVALID, "closed_after: expected an integer from 0");
            return NULL;
        }
        /* past the calls (one was removed): after the last, and the comparison says so */
        if (after && (size_t)json_integer_value(after) < n)
            close_at = (size_t)json_integer_value(after);
    }
    if ((w = world_new(spec, e)) == NULL)
        return NULL;
    for (size_t i = 0; i <= n; i++) {
        json_t *rc = json_array_get(calls, i), *t;
        struct world_call c;
        struct world_reply rep;
        struct seam_decision d;

        if (i == close_at) {
            json_t *r = json_object_get(ledger, "report");
            world_report(w, json_is_object(r) ? r : NULL);
        }
        if (i == n)
            break;
        memset(&c, 0, sizeof(c));
        c.tool = json_string_value(json_object_get(rc, "tool"));
        c.args = json_object_get(rc, "args");
        t = json_object_get(rc, "t");
        c.t_ms = json_is_integer(t) ? (int64_t)json_integer_value(t) : 0;
        world_decide(w, s, &c, &d);
        world_call(w, &c, &rep);
        json_decref(rep.result);
        json_decref(d.options);
    }
    out = world_ledger_json(w);
    world_free(w);
    return out;
}

/* ---- compare ----------------------------------------------------------------------------- */

static void show(struct buf *b, const json_t *v)
{
    char *s;
    if (v == NULL) {
        buf_adds(b, "absent");
        return;
    }
    s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
    if (s && strlen(s) > SHOW_MAX)
        buf_addf(b, "%.*s...", SHOW_MAX, s);
    else
        buf_adds(b, s ? s : "?");
    free(s);
}

/* ".KEY", or ".\"KEY\"" (JSON-escaped) when KEY holds a control character or a quote, so a
 * key cannot print a line of its own. */
static void add_key(struct buf *b, const char *k)
{
    for (const char *p = k; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '"') {
            json_t *s = json_string(k);
            buf_addc(b, '.');
            show(b, s);
            json_decref(s);
            return;
        }
    buf_addf(b, ".%s", k);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends to path the place where a and b (either may be NULL: absent) first differ, then
 * ": recorded A, replayed B". Only called when they differ. */
static void diff_at(const json_t *a, const json_t *b, struct buf *path)
{
    if (json_is_object(a) && json_is_object(b)) {
        size_t na = json_object_size(a), nb = json_object_size(b), k = 0;
        const char **keys = xcalloc(na + nb + 1, sizeof(*keys));
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)a, key, v) keys[k++] = key;
        json_object_foreach((json_t *)b, key, v) if (json_object_get(a, key) == NULL) keys[k++] =
            key;
        qsort(keys, k, sizeof(*keys), cmp_str);
        for (size_t i = 0; i < k; i++) {
            json_t *x = json_object_get(a, keys[i]), *y = json_object_get(b, keys[i]);
            if (x && y && json_equal(x, y))
                continue;
            add_key(path, keys[i]);
            free(keys);
            diff_at(x, y, path);
            return;
        }
        free(keys);
    } else if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++) {
            if (json_equal(json_array_get(a, i), json_array_get(b, i)))
                continue;
            buf_addf(path, "[%zu]", i);
            diff_at(json_array_get(a, i), json_array_get(b, i), path);
            return;
        }
    }
    buf_adds(path, ": recorded ");
    show(path, a);
    buf_adds(path, ", replayed ");
    show(path, b);
}

/* a and b without their "t" (new references; NULL stays NULL). */
static json_t *untimed(const json_t *v)
{
    json_t *c;
    if (!json_is_object(v))
        return v ? json_incref((json_t *)v) : NULL;
    c = json_copy((json_t *)v);
    json_object_del(c, "t");
    return c;
}

/* 1 with out->what set when a and b (named path) differ, ignoring their times. */
/* The fields of a call and of an entry in the order a person reads them: the first that
 * differs is named before the others (then any other key, sorted). */
static const char *const call_order[] = {"call",    "tool",    "args",   "fault",
                                         "outcome", "effects", "answer", NULL};
static const char *const entry_order[] = {
    "call",       "effect_id",    "tool",    "collection", "op",       "args",   "business_key",
    "dedupe_key", "deduplicated", "faulted", "fault",      "approved", "result", NULL};

static int differ(const json_t *a, const json_t *b, const char *path, struct world_replay_diff *out)
{
    json_t *x = untimed(a), *y = untimed(b);
    int d = !(x && y && json_equal(x, y)) && !(x == NULL && y == NULL);
    if (d) {
        struct buf t = BUF_INIT, r = BUF_INIT;
        const char *const *order = strncmp(path, "calls[", 6) == 0     ? call_order
                                   : strncmp(path, "effects[", 8) == 0 ? entry_order
                                                                       : NULL;
        buf_adds(&t, path);
        for (; order && *order && json_is_object(x) && json_is_object(y); order++) {
            json_t *u = json_object_get(x, *order), *v = json_object_get(y, *order);
            if ((u == NULL && v == NULL) || (u && v && json_equal(u, v)))
                continue;
            add_key(&t, *order);
            x = (json_decref(x), u ? json_incref(u) : NULL);
            y = (json_decref(y), v ? json_incref(v) : NULL);
            break;
        }
        diff_at(x, y, &t);
        redact_text(NULL, t.data, t.len, &r); /* arguments may hold a credential */
        snprintf(out->what, sizeof(out->what), "%s", r.data);
        buf_release(&t);
        buf_release(&r);
    }
    json_decref(x);
    json_decref(y);
    return d;
}

static uint64_t call_of(const json_t *effect)
{
    json_t *c = json_object_get(effect, "call");
    return json_is_integer(c) && json_integer_value(c) > 0 ? (uint64_t)json_integer_value(c) : 0;
}

static int compare(const json_t *recorded, const json_t *replayed, struct world_replay_diff *out)
{
    static const char *const tail[] = {"world",        "approved", "closed",
                                       "closed_after", "report",   "snapshot"};
    json_t *rc = json_object_get(recorded, "calls"), *pc = json_object_get(replayed, "calls");
    json_t *re = json_object_get(recorded, "effects"), *pe = json_object_get(replayed, "effects");
    size_t nc =
        json_array_size(rc) > json_array_size(pc) ? json_array_size(rc) : json_array_size(pc);
    size_t ri = 0, pi = 0;
    char path[64];

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < nc; i++) {
        json_t *a = json_array_get(rc, i), *b = json_array_get(pc, i);
        const char *tool = json_string_value(json_object_get(a ? a : b, "tool"));
        out->call = i + 1;
        snprintf(out->tool, sizeof(out->tool), "%s", tool ? tool : "");
        for (char *p = out->tool; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
        snprintf(path, sizeof(path), "calls[%zu]", i);
        if (a && b && !json_object_get(a, "answer")) { /* a ledger from before answer */
            json_t *c = json_copy(b);
            int d;
            json_object_del(c, "answer");
            d = differ(a, c, path, out);
            json_decref(c);
            if (d)
                return 1;
        } else if (differ(a, b, path, out)) {
            return 1;
        }
        for (;;) {
            json_t *x = call_of(json_array_get(re, ri)) == i + 1 ? json_array_get(re, ri) : NULL;
            json_t *y = call_of(json_array_get(pe, pi)) == i + 1 ? json_array_get(pe, pi) : NULL;
            if (x == NULL && y == NULL)
                break;
            snprintf(path, sizeof(path), "effects[%zu]", x ? ri : pi);
            if (differ(x, y, path, out))
                return 1;
            ri++;
            pi++;
        }
    }
    out->call = 0;
    out->tool[0] = '\0';
    if (ri < json_array_size(re) || pi < json_array_size(pe)) {
        size_t k = ri < json_array_size(re) ? ri : pi;
        snprintf(path, sizeof(path), "effects[%zu]", k);
        if (differ(json_array_get(re, ri), json_array_get(pe, pi), path, out))
            return 1;
    }
    for (size_t i = 0; i < sizeof(tail) / sizeof(tail[0]); i++) {
        json_t *a = json_object_get(recorded, tail[i]), *b = json_object_get(replayed, tail[i]);
        if (strcmp(tail[i], "closed_after") == 0 && a == NULL)
            continue; /* a ledger from before closed_after */
        if (differ(a, b, tail[i], out))
            return 1;
    }
    return 0;
}

int world_replay_compare(const json_t *recorded, const json_t *replayed,
                         struct world_replay_diff *out)
{
    json_t *a = normal(recorded), *b = normal(replayed);
    int d = compare(a, b, out);
    json_decref(a);
    json_decref(b);
    return d;
}
