/*
 * toolres: see toolres.h. Pure functions over jansson values; the number-token scanner is the
 * only part with rules of its own (number_token_at). Moved here from the MCP shim
 * (src/mcp/alter.c) so that the world changes its results by the same code.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/toolres.h"
#include "codec/jsonrpc.h"
#include "events/view.h"
#include "util/err.h"
#include "util/banned.h"

void toolres_canary_text(struct buf *out, const char *message, const char *canary)
{
    buf_adds(out, message ? message : "");
    if (canary && *canary)
        buf_addf(out, " [%s]", canary);
}

json_t *toolres_text_result(const char *text, int is_error, int stateless)
{
    json_t *item = json_pack("{s:s, s:s}", "type", "text", "text", "");
    json_t *r;

    json_object_set_new(item, "text", json_stringn(text, strlen(text)));
    r = json_pack("{s:[o], s:b}", "content", item, "isError", is_error);
    if (stateless)
        json_object_set_new(r, "resultType", json_string("complete"));
    return r;
}

static int is_text_item(const json_t *it)
{
    const char *type = json_string_value(json_object_get(it, "type"));
    return type && strcmp(type, "text") == 0 && json_is_string(json_object_get(it, "text"));
}

static size_t utf8_cut(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* ---- structuredContent mirrors ----
 *
 * A server that returns structuredContent usually repeats it in content (MCP asks it to), and
 * clients show their model one or the other: Claude Code and Codex show structuredContent,
 * faultline's reference agent the content items. A fault that changes one changes the other the
 * same way (docs/mcp-shim.md, "Content and structuredContent"). Two kinds of mirror are recognised:
 * - a string anywhere in structuredContent equal to the text of a content text item (the
 *   text mirror: server-filesystem's {"content": TEXT});
 * - a content text item that is the JSON of the whole structuredContent (the JSON mirror: the
 *   SDKs' JSON.stringify(structured)).
 */

/* Copies of the texts of result's text items, in order (new reference, an array of strings). */
static json_t *content_texts(const json_t *result)
{
    json_t *content = json_object_get(result, "content"), *out = json_array();

    for (size_t i = 0; i < json_array_size(content); i++) {
        json_t *it = json_array_get(content, i);
        if (is_text_item(it))
            json_array_append(out, json_object_get(it, "text"));
    }
    return out;
}

/* Changes one string of structuredContent: returns its new value (new reference), or NULL to
 * leave it. */
typedef json_t *(*mirror_fn)(const json_t *s, void *arg);

/* Changes one member x of a container: returns the number of changes it takes, with *nv the
 * value that is to replace x (a new reference), or NULL when x stays. */
typedef size_t (*member_fn)(json_t *x, void *arg, json_t **nv);

/* The one walk of the containers below: calls fn on each member of an object or element of an
 * array v, in order, and replaces the member where fn gives a value; with once, stops after the
 * first member that counts a change. Returns the sum of fn's counts (0 for a scalar v). */
static size_t each_member(json_t *v, member_fn fn, void *arg, int once)
{
    size_t changed = 0;

    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        void *tmp;
        json_object_foreach_safe(v, tmp, k, x)
        {
            json_t *nv = NULL;
            changed += fn(x, arg, &nv);
            if (nv)
                json_object_set_new(v, k, nv);
            if (once && changed)
                break;
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *nv = NULL;
            changed += fn(json_array_get(v, i), arg, &nv);
            if (nv)
                json_array_set_new(v, i, nv);
            if (once && changed)
                break;
        }
    }
    return changed;
}

struct strings_walk {
    mirror_fn fn;
    void *arg;
    int once;
};

/* each_member's fn for walk_strings: a string fn changes, or the strings inside. */
static size_t strings_member(json_t *x, void *arg, json_t **nv)
{
    const struct strings_walk *w = arg;

    if (json_is_string(x)) {
        *nv = w->fn(x, w->arg);
        return *nv != NULL;
    }
    return each_member(x, strings_member, arg, w->once);
}

/* Walks v and replaces each string for which fn returns a value; stops after the first change
 * when once is set. Returns the number of strings changed. */
static size_t walk_strings(json_t *v, mirror_fn fn, void *arg, int once)
{
    struct strings_walk w = {fn, arg, once};
    return each_member(v, strings_member, &w, once);
}

/* text_index's "not there": below every index, not an error code. */
#define NO_TEXT (-1L)

/* Index in texts (an array of strings) of a string equal to s, or NO_TEXT. An empty string
 * mirrors nothing. */
static long text_index(const json_t *texts, const json_t *s)
{
    if (json_string_length(s) == 0)
        return NO_TEXT;
    for (size_t i = 0; i < json_array_size(texts); i++)
        if (json_equal(json_array_get(texts, i), s))
            return (long)i;
    return NO_TEXT;
}

struct remap {
    const json_t *from, *to; /* arrays of strings: from[i] becomes to[i] ("" past its end) */
};

static json_t *remap_fn(const json_t *s, void *arg)
{
    const struct remap *m = arg;
    long i = text_index(m->from, s);
    json_t *t;

    if (i == NO_TEXT)
        return NULL;
    t = json_array_get(m->to, (size_t)i);
    return t ? json_copy(t) : json_string("");
}

/* Replaces the content text items that are the JSON of old_sc (the JSON mirror) with the JSON
 * of result's structuredContent now ("" when it is gone). Returns how many. */
static size_t sync_json_mirror(json_t *result, const json_t *old_sc)
{
    json_t *content = json_object_get(result, "content");
    json_t *sc = json_object_get(result, "structuredContent");
    size_t n = 0;

    if (old_sc == NULL || json_equal(old_sc, sc))
        return 0;
    for (size_t i = 0; i < json_array_size(content); i++) {
        json_t *it = json_array_get(content, i), *parsed;
        const char *t;
        if (!is_text_item(it))
            continue;
        t = json_string_value(json_object_get(it, "text"));
        while (*t == ' ' || *t == '\n' || *t == '\t' || *t == '\r')
            t++;
        if (*t != '{' && *t != '[')
            continue;
        parsed = json_loads(t, JSON_DECODE_ANY, NULL);
        if (parsed && json_equal(parsed, old_sc)) {
            char *d = sc ? json_dumps(sc, JSON_INDENT(2) | JSON_ENCODE_ANY) : NULL;
            json_object_set_new(it, "text", json_string(d ? d : ""));
            free(d);
            n++;
        }
        json_decref(parsed);
    }
    return n;
}

size_t toolres_omit(json_t *result, int truncate, size_t keep_bytes)
{
    json_t *content = json_object_get(result, "content");
    json_t *before, *after, *sc;
    size_t removed = 0, budget = keep_bytes, i;

    if (!json_is_object(result))
        return 0;
    if (!json_is_array(content)) {
        json_object_del(result, "structuredContent");
        json_object_set_new(result, "content", json_array());
        return 0;
    }
    before = content_texts(result);
    if (!truncate) {
        for (i = 0; i < json_array_size(content); i++) {
            json_t *it = json_array_get(content, i);
            if (is_text_item(it))
                removed += json_string_length(json_object_get(it, "text"));
        }
        json_array_clear(content);
        goto mirror;
    }
    for (i = 0; i < json_array_size(content); i++) {
        json_t *it = json_array_get(content, i);
        json_t *t;
        size_t len, keep;
        if (!is_text_item(it))
            continue;
        t = json_object_get(it, "text");
        len = json_string_length(t);
        if (len <= budget) {
            budget -= len;
            continue;
        }
        keep = utf8_cut(json_string_value(t), budget);
        removed += len - keep;
        json_object_set_new(it, "text", json_stringn(json_string_value(t), keep));
        i++;
        break;
    }
    /* Everything after the cut goes. */
    while (json_array_size(content) > i) {
        json_t *it = json_array_get(content, json_array_size(content) - 1);
        if (is_text_item(it))
            removed += json_string_length(json_object_get(it, "text"));
        json_array_remove(content, json_array_size(content) - 1);
    }
mirror:
    /* Text items keep their order, so the k-th text before is the k-th after (or gone). The
     * strings of structuredContent that mirrored a text follow it; without a mirror,
     * structuredContent goes. */
    after = content_texts(result);
    sc = json_object_get(result, "structuredContent");
    if (sc) {
        struct remap m = {before, after};
        if (walk_strings(sc, remap_fn, &m, 0) == 0)
            json_object_del(result, "structuredContent");
    }
    json_decref(after);
    json_decref(before);
    return removed;
}

/* ---- numbers in text ---- */

static int is_word(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* If a number token starts at s[i], returns its length (and *frac, the digits after its '.'),
 * else 0. See alter.h for what counts as a token. */
static size_t number_token_at(const char *s, size_t n, size_t i, int *frac)
{
    size_t j = i, int_digits = 0, frac_digits = 0;
    char prev = i > 0 ? s[i - 1] : ' ';
    char prev2 = i > 1 ? s[i - 2] : ' ';

    if (is_word(prev) || prev == '.')
        return 0;
    if ((prev == '-' || prev == '/' || prev == ':') && isdigit((unsigned char)prev2))
        return 0; /* the second part of a date, a time or a fraction */
    if (s[j] == '-') {
        if (prev == '-')
            return 0;
        j++;
    }
    while (j < n && isdigit((unsigned char)s[j])) {
        j++;
        int_digits++;
    }
    if (int_digits == 0)
        return 0;
    if (j + 1 < n && s[j] == '.' && isdigit((unsigned char)s[j + 1])) {
        j++;
        while (j < n && isdigit((unsigned char)s[j])) {
            j++;
            frac_digits++;
        }
    }
    if (j < n) {
        char c = s[j];
        int digit_next = j + 1 < n && isdigit((unsigned char)s[j + 1]);
        if (is_word(c))
            return 0; /* "5px", "3rd" */
        if ((c == '.' || c == '-' || c == '/' || c == ':') && digit_next)
            return 0; /* "1.2.3", the first part of a date, a time or a fraction */
    }
    if (int_digits > 18)
        return 0; /* an identifier, not an amount */
    *frac = (int)frac_digits;
    return j - i;
}

static double change_number(double v, enum toolres_wrong_mode mode, double by)
{
    return mode == TOOLRES_WRONG_SCALE ? v * by : v + by;
}

static void format_number(struct buf *out, double v, int frac)
{
    if (frac == 0 && v == floor(v) && fabs(v) < 1e15)
        buf_addf(out, "%lld", (long long)v);
    else if (frac > 0)
        buf_addf(out, "%.*f", frac, v);
    else
        buf_addf(out, "%.15g", v);
}

size_t toolres_numbers_in_text(const char *s, size_t n, enum toolres_wrong_mode mode, double by,
                               struct buf *out)
{
    size_t i = 0, changed = 0;

    while (i < n) {
        int frac = 0;
        size_t len =
            (isdigit((unsigned char)s[i]) || s[i] == '-') ? number_token_at(s, n, i, &frac) : 0;
        if (len == 0) {
            buf_addc(out, s[i]);
            i++;
            continue;
        }
        {
            char tmp[64];
            double v;
            size_t k = len < sizeof(tmp) - 1 ? len : sizeof(tmp) - 1;
            memcpy(tmp, s + i, k);
            tmp[k] = '\0';
            v = strtod(tmp, NULL);
            format_number(out, change_number(v, mode, by), frac);
        }
        changed++;
        i += len;
    }
    return changed;
}

static size_t replace_all(const char *s, size_t n, const char *find, const char *with,
                          struct buf *out)
{
    size_t flen = strlen(find), count = 0, i = 0;

    while (i < n) {
        if (flen && i + flen <= n && memcmp(s + i, find, flen) == 0) {
            buf_adds(out, with);
            i += flen;
            count++;
        } else {
            buf_addc(out, s[i++]);
        }
    }
    return count;
}

/* Rewrites string v; returns how many changes were made (and the new string through *out). */
static size_t rewrite_string(const json_t *v, enum toolres_wrong_mode mode, double by,
                             const char *find, const char *with, json_t **out)
{
    struct buf b = BUF_INIT;
    size_t c;

    if (mode == TOOLRES_WRONG_TEXT)
        c = replace_all(json_string_value(v), json_string_length(v), find, with, &b);
    else
        c = toolres_numbers_in_text(json_string_value(v), json_string_length(v), mode, by, &b);
    *out = c ? json_stringn(b.data, b.len) : NULL;
    buf_release(&b);
    return *out ? c : 0;
}

struct wrong_walk {
    enum toolres_wrong_mode mode;
    double by;
    const char *find, *with;
};

/* each_member's fn for wrong_data: a string or a number changed (replaced), or what is inside
 * a container. */
static size_t wrong_member(json_t *x, void *arg, json_t **nv)
{
    const struct wrong_walk *w = arg;

    if (json_is_string(x)) {
        size_t c = rewrite_string(x, w->mode, w->by, w->find, w->with, nv);
        return *nv ? c : 0;
    }
    if (json_is_number(x) && w->mode != TOOLRES_WRONG_TEXT) {
        double d = change_number(json_number_value(x), w->mode, w->by);
        if (json_is_integer(x) && d == floor(d) && fabs(d) < 9e18)
            *nv = json_integer((json_int_t)d);
        else
            *nv = json_real(d);
        return 1;
    }
    return each_member(x, wrong_member, arg, 0);
}

/* Walks a JSON value; changes numbers and strings in place (through their container). */
static size_t wrong_walk(json_t *v, enum toolres_wrong_mode mode, double by, const char *find,
                         const char *with)
{
    struct wrong_walk w = {mode, by, find, with};
    return each_member(v, wrong_member, &w, 0);
}

size_t toolres_wrong_data(json_t *result, enum toolres_wrong_mode mode, double by, const char *find,
                          const char *replace_with)
{
    json_t *content = json_object_get(result, "content");
    size_t changed = 0;

    if (mode == TOOLRES_WRONG_TEXT && (find == NULL || *find == '\0'))
        return 0;
    if (replace_with == NULL)
        replace_with = "";
    for (size_t i = 0; i < json_array_size(content); i++) {
        json_t *it = json_array_get(content, i), *nv = NULL;
        if (!is_text_item(it))
            continue;
        changed += rewrite_string(json_object_get(it, "text"), mode, by, find, replace_with, &nv);
        if (nv)
            json_object_set_new(it, "text", nv);
    }
    if (json_object_get(result, "structuredContent"))
        changed +=
            wrong_walk(json_object_get(result, "structuredContent"), mode, by, find, replace_with);
    return changed;
}

struct inject_arg {
    const json_t *texts; /* NULL: any string */
    const char *payload;
    enum toolres_inject_pos pos;
};

static json_t *inject_fn(const json_t *s, void *arg)
{
    const struct inject_arg *a = arg;
    struct buf b = BUF_INIT;
    json_t *r;

    if (a->texts && text_index(a->texts, s) == NO_TEXT)
        return NULL;
    if (a->pos == TOOLRES_INJECT_REPLACE) {
        buf_adds(&b, a->payload);
    } else if (a->pos == TOOLRES_INJECT_PREPEND) {
        buf_adds(&b, a->payload);
        buf_addc(&b, '\n');
        buf_add(&b, json_string_value(s), json_string_length(s));
    } else {
        buf_add(&b, json_string_value(s), json_string_length(s));
        buf_addc(&b, '\n');
        buf_adds(&b, a->payload);
    }
    r = json_stringn(b.data, b.len);
    buf_release(&b);
    return r;
}

const char *toolres_sc_name(enum toolres_sc_change c)
{
    switch (c) {
    case TOOLRES_SC_ABSENT:
        return "absent";
    case TOOLRES_SC_MIRROR:
        return "mirror";
    case TOOLRES_SC_FIRST_STRING:
        return "first_string";
    case TOOLRES_SC_REMOVED:
        return "removed";
    case TOOLRES_SC_UNCHANGED:
        return "unchanged";
    }
    return "absent";
}

int toolres_inject(json_t *result, const char *payload, enum toolres_inject_pos pos,
                   enum toolres_sc_change *sc_change)
{
    json_t *content, *item, *sc, *texts;
    struct inject_arg a = {NULL, payload ? payload : "", pos};
    enum toolres_sc_change how = TOOLRES_SC_ABSENT;

    if (sc_change)
        *sc_change = TOOLRES_SC_ABSENT;
    if (!json_is_object(result))
        return ERR_INVALID;
    content = json_object_get(result, "content");
    if (!json_is_array(content)) {
        content = json_array();
        json_object_set_new(result, "content", content);
    }
    /* structuredContent first: its mirrors are found by the content as the server sent it. */
    sc = json_object_get(result, "structuredContent");
    texts = content_texts(result);
    if (sc) {
        a.texts = texts;
        if (walk_strings(sc, inject_fn, &a, 0) > 0) {
            how = TOOLRES_SC_MIRROR;
        } else if (pos == TOOLRES_INJECT_REPLACE) {
            json_object_del(result, "structuredContent");
            how = TOOLRES_SC_REMOVED;
        } else {
            a.texts = NULL;
            how = walk_strings(sc, inject_fn, &a, 1) > 0 ? TOOLRES_SC_FIRST_STRING
                                                         : TOOLRES_SC_UNCHANGED;
        }
    }
    json_decref(texts);
    item = json_pack("{s:s, s:s}", "type", "text", "text", "");
    json_object_set_new(item, "text", json_string(a.payload));
    if (pos == TOOLRES_INJECT_REPLACE) {
        json_array_clear(content);
        json_array_append_new(content, item);
    } else if (pos == TOOLRES_INJECT_PREPEND) {
        json_array_insert_new(content, 0, item);
    } else {
        json_array_append_new(content, item);
    }
    if (sc_change)
        *sc_change = how;
    return 0;
}

/* A value of another JSON type than v. */
static json_t *other_type(const json_t *v)
{
    if (json_is_string(v))
        return json_integer(0);
    if (json_is_number(v))
        return json_string("not a number");
    if (json_is_boolean(v))
        return json_string(json_is_true(v) ? "true" : "false");
    if (json_is_null(v))
        return json_integer(0);
    return json_string("not an object");
}

static const char *violate(json_t *result, const json_t *output_schema,
                           enum toolres_violate_mode mode, const char *canary)
{
    json_t *sc = json_object_get(result, "structuredContent");
    json_t *props = json_object_get(output_schema, "properties");
    json_t *required = json_object_get(output_schema, "required");
    const char *k;
    json_t *v;

    if (!json_is_object(result))
        return "";
    if (!json_is_object(sc)) {
        if (mode == TOOLRES_VIOLATE_WRONG_TYPE) {
            struct buf b = BUF_INIT;
            toolres_canary_text(&b, "not an object", canary);
            json_object_set_new(result, "structuredContent", json_string(b.data));
            buf_release(&b);
            return "";
        }
        sc = json_object();
        json_object_set_new(result, "structuredContent", sc);
        if (mode == TOOLRES_VIOLATE_MISSING_REQUIRED)
            return "";
    }
    switch (mode) {
    case TOOLRES_VIOLATE_WRONG_TYPE:
        json_object_foreach(props, k, v)
        {
            json_t *cur = json_object_get(sc, k);
            if (cur) {
                json_object_set_new(sc, k, other_type(cur));
                return k;
            }
        }
        json_object_foreach(sc, k, v)
        {
            json_object_set_new(sc, k, other_type(v));
            return k;
        }
        json_object_set_new(result, "structuredContent", json_string("not an object"));
        return "";
    case TOOLRES_VIOLATE_MISSING_REQUIRED:
        for (size_t i = 0; i < json_array_size(required); i++) {
            const char *name = json_string_value(json_array_get(required, i));
            if (name && json_object_get(sc, name)) {
                json_object_del(sc, name);
                return name;
            }
        }
        json_object_foreach(sc, k, v)
        {
            static char first[128];
            snprintf(first, sizeof(first), "%s", k);
            json_object_del(sc, k);
            return first;
        }
        return "";
    case TOOLRES_VIOLATE_EXTRA:
        json_object_set_new(sc, "faultline_undeclared", json_string(canary ? canary : ""));
        return "faultline_undeclared";
    }
    return "";
}

const char *toolres_violate(json_t *result, const json_t *output_schema,
                            enum toolres_violate_mode mode, const char *canary)
{
    json_t *old = json_deep_copy(json_object_get(result, "structuredContent"));
    const char *prop = violate(result, output_schema, mode, canary);

    sync_json_mirror(result, old);
    json_decref(old);
    return prop;
}

void toolres_result_text(const json_t *result, struct buf *out, size_t max)
{
    json_t *content = json_object_get(result, "content");
    size_t start = out->len;

    for (size_t i = 0; i < json_array_size(content); i++) {
        json_t *it = json_array_get(content, i);
        json_t *t = json_object_get(it, "text");
        if (!is_text_item(it))
            continue;
        if (out->len > start)
            buf_addc(out, '\n');
        buf_add(out, json_string_value(t), json_string_length(t));
        if (out->len - start >= max) {
            buf_truncate(out, start + utf8_cut(out->data + start, max));
            return;
        }
    }
}

void toolres_result_text_scan(const char *line, const struct jsonrpc_span *result, struct buf *out,
                              size_t max)
{
    struct jsonrpc_span content, it, type, text;
    size_t start = out->len, pos = 0;

    if (!jsonrpc_lax_member(line, result, "content", &content))
        return;
    while (jsonrpc_lax_element(line, &content, &pos, &it)) {
        json_t *tv;
        int is_text;
        size_t room, full;
        if (!jsonrpc_lax_member(line, &it, "type", &type) || type.type != 's' ||
            !jsonrpc_lax_member(line, &it, "text", &text) || text.type != 's')
            continue;
        tv = jsonrpc_lax_value(line, &type);
        is_text = json_is_string(tv) && strcmp(json_string_value(tv), "text") == 0;
        json_decref(tv);
        if (!is_text)
            continue;
        if (out->len > start)
            buf_addc(out, '\n');
        /* decode no more than the excerpt needs (and one byte past it, for utf8_cut) */
        room = max - (out->len - start) + 8;
        if (buf_grow(out, room + 1) < 0)
            return;
        full =
            events_json_unescape(line + text.off + 1, text.len - 2, out->data + out->len, room + 1);
        out->len += full < room ? full : room;
        out->data[out->len] = '\0';
        if (out->len - start >= max) {
            buf_truncate(out, start + utf8_cut(out->data + start, max));
            return;
        }
    }
}

void toolres_malformed(struct buf *out, const json_t *id, const json_t *result,
                       enum toolres_malformed_mode mode, const char *canary)
{
    json_t *msg, *r;
    struct buf text = BUF_INIT;

    toolres_result_text(result, &text, 4096);
    switch (mode) {
    case TOOLRES_MALFORMED_INVALID_JSON: {
        /* A reply cut inside its text: it never parses. */
        struct buf line = BUF_INIT;
        json_t *idc = id ? json_deep_copy(id) : json_null();
        char *ids = json_dumps(idc, JSON_ENCODE_ANY | JSON_COMPACT);
        buf_addf(&line,
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\","
                 "\"text\":\"",
                 ids ? ids : "null");
        if (canary && *canary)
            buf_addf(&line, "[%s] ", canary);
        for (size_t i = 0; i < text.len && i < 64; i++)
            if (text.data[i] != '"' && text.data[i] != '\\' && (unsigned char)text.data[i] >= 32)
                buf_addc(&line, text.data[i]);
        buf_add(out, line.data, line.len);
        buf_addc(out, '\n');
        free(ids);
        json_decref(idc);
        buf_release(&line);
        break;
    }
    case TOOLRES_MALFORMED_MISSING_CONTENT:
        r = json_deep_copy(result);
        if (!json_is_object(r)) {
            json_decref(r);
            r = json_object();
        }
        json_object_del(r, "content");
        json_object_del(r, "structuredContent");
        msg = jsonrpc_make_result(id, r);
        jsonrpc_write(out, msg);
        json_decref(msg);
        break;
    case TOOLRES_MALFORMED_WRONG_TYPE: {
        struct buf s = BUF_INIT;
        toolres_canary_text(&s, text.data, canary);
        r = json_deep_copy(result);
        if (!json_is_object(r)) {
            json_decref(r);
            r = json_object();
        }
        json_object_set_new(r, "content", json_string(s.data));
        msg = jsonrpc_make_result(id, r);
        jsonrpc_write(out, msg);
        json_decref(msg);
        buf_release(&s);
        break;
    }
    }
    buf_release(&text);
}
