/*
 * jscan: see jscan.h. Everything here trusts that the text is valid JSON (the events view
 * validated the line) and only skips over it: strings end at the first quote not preceded by an
 * odd run of backslashes, containers at their matching bracket outside strings.
 */
#include <stdlib.h>
#include <string.h>

#include "score/jscan.h"
#include "util/buf.h"
#include "util/num.h"
#include "util/utf8.h"
#include "util/banned.h"

static int is_ws(unsigned c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_digit(unsigned c)
{
    return c >= '0' && c <= '9';
}

/* Reads 4 hex digits at p (valid text: they are there). */
static long hex4(const unsigned char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++)
        v = v * 16 + num_hexval(p[i]);
    return v;
}

/* ---- decoding (the text is known to be valid) ---- */

/* Decodes one escape at p (the backslash) into out (at least 4 bytes); returns the number of
 * bytes written and advances *pp past the escape. */
static size_t decode_escape(const char **pp, char *out)
{
    const unsigned char *p = (const unsigned char *)*pp;
    unsigned long u;

    switch (p[1]) {
    case 'b':
        out[0] = '\b';
        break;
    case 'f':
        out[0] = '\f';
        break;
    case 'n':
        out[0] = '\n';
        break;
    case 'r':
        out[0] = '\r';
        break;
    case 't':
        out[0] = '\t';
        break;
    case 'u':
        u = (unsigned long)hex4(p + 2);
        p += 6;
        if (u >= 0xD800 && u <= 0xDBFF) {
            u = ((u - 0xD800) << 10) + ((unsigned long)hex4(p + 2) - 0xDC00) + 0x10000;
            p += 6;
        }
        *pp = (const char *)p;
        return utf8_put(u, out);
    default: /* '"', '\\', '/' */
        out[0] = (char)p[1];
        break;
    }
    *pp = (const char *)p + 2;
    return 1;
}

long jscan_str_copy(const struct jscan_val *v, char *out, size_t cap)
{
    const char *p, *end;
    size_t len = 0;

    if (cap == 0)
        return ERR_LIMIT;
    out[0] = '\0';
    if (v == NULL || v->type != JSCAN_STRING)
        return ERR_INVALID;
    if (!v->escaped) {
        if (v->n + 1 > cap)
            return ERR_LIMIT;
        memcpy(out, v->p, v->n);
        out[v->n] = '\0';
        return (long)v->n;
    }
    p = v->p;
    end = v->p + v->n;
    while (p < end) {
        char tmp[4];
        size_t k;
        if (*p == '\\') {
            k = decode_escape(&p, tmp);
        } else {
            tmp[0] = *p++;
            k = 1;
        }
        if (len + k + 1 > cap) {
            out[0] = '\0';
            return ERR_LIMIT;
        }
        memcpy(out + len, tmp, k);
        len += k;
    }
    out[len] = '\0';
    return (long)len;
}

int jscan_str_eq(const struct jscan_val *v, const char *s)
{
    size_t n = strlen(s);

    if (v == NULL || v->type != JSCAN_STRING)
        return 0;
    if (!v->escaped)
        return v->n == n && memcmp(v->p, s, n) == 0;
    {
        const char *p = v->p, *end = v->p + v->n;
        size_t i = 0;
        while (p < end) {
            char tmp[4];
            size_t k;
            if (*p == '\\') {
                k = decode_escape(&p, tmp);
            } else {
                tmp[0] = *p++;
                k = 1;
            }
            if (i + k > n || memcmp(s + i, tmp, k) != 0)
                return 0;
            i += k;
        }
        return i == n;
    }
}

int jscan_number(const struct jscan_val *v, double *out)
{
    char small[64];

    if (v == NULL || (v->type != JSCAN_INT && v->type != JSCAN_REAL))
        return ERR_INVALID;
    if (v->n < sizeof(small)) {
        memcpy(small, v->p, v->n);
        small[v->n] = '\0';
        *out = strtod(small, NULL);
    } else {
        char *copy = xstrndup(v->p, v->n);
        *out = strtod(copy, NULL);
        free(copy);
    }
    return 0;
}

int jscan_int(const struct jscan_val *v, int64_t *out)
{
    const char *p;
    int neg = 0;
    uint64_t u = 0;

    if (v == NULL || v->type != JSCAN_INT)
        return ERR_INVALID;
    p = v->p;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    for (; p < v->p + v->n; p++)
        u = u * 10 + (uint64_t)(*p - '0');
    /* validated: fits, including -2^63 */
    *out = neg ? (int64_t)(0 - u) : (int64_t)u;
    return 0;
}

int jscan_bool(const struct jscan_val *v)
{
    if (v == NULL)
        return JSCAN_NOT_BOOL;
    if (v->type == JSCAN_TRUE)
        return 1;
    if (v->type == JSCAN_FALSE)
        return 0;
    return JSCAN_NOT_BOOL;
}

/* ---- iteration over validated text ---- */

/* End of the string whose opening quote is at p. */
static const char *skip_string(const char *p, const char *end)
{
    p++;
    while (p < end) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (q == NULL)
            return end;
        /* the quote is escaped when preceded by an odd number of backslashes */
        size_t bs = 0;
        while (q - bs > p && q[-1 - (long)bs] == '\\')
            bs++;
        if (bs % 2 == 0)
            return q + 1;
        p = q + 1;
    }
    return end;
}

static const char *skip_ws_c(const char *p, const char *end)
{
    while (p < end && is_ws((unsigned char)*p))
        p++;
    return p;
}

/* Reads the value at p into *v; returns the position after it. */
static const char *read_value(const char *p, const char *end, struct jscan_val *v)
{
    const char *start = p;
    int esc = 0;

    v->escaped = 0;
    switch (*p) {
    case '"':
        p = skip_string(p, end);
        v->type = JSCAN_STRING;
        v->p = start + 1;
        v->n = (size_t)(p - start - 2);
        for (const char *q = v->p; q < v->p + v->n && !esc; q++)
            esc = *q == '\\';
        v->escaped = esc;
        return p;
    case '{':
    case '[': {
        int depth = 0;
        v->type = *p == '{' ? JSCAN_OBJECT : JSCAN_ARRAY;
        while (p < end) {
            char c = *p;
            if (c == '"') {
                p = skip_string(p, end);
                continue;
            }
            p++;
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                break;
        }
        break;
    }
    case 't':
        v->type = JSCAN_TRUE;
        p += 4;
        break;
    case 'f':
        v->type = JSCAN_FALSE;
        p += 5;
        break;
    case 'n':
        v->type = JSCAN_NULL;
        p += 4;
        break;
    default:
        v->type = JSCAN_INT;
        while (p < end && (is_digit((unsigned char)*p) || *p == '-' || *p == '+' || *p == '.' ||
                           *p == 'e' || *p == 'E')) {
            if (*p == '.' || *p == 'e' || *p == 'E')
                v->type = JSCAN_REAL;
            p++;
        }
        break;
    }
    v->p = start;
    v->n = (size_t)(p - start);
    return p;
}

void jscan_val_of(const char *raw, size_t n, struct jscan_val *out)
{
    const char *end = raw + n;
    memset(out, 0, sizeof(*out));
    raw = skip_ws_c(raw, end);
    while (end > raw && is_ws((unsigned char)end[-1]))
        end--;
    if (raw >= end)
        return;
    read_value(raw, end, out);
}

void jscan_iter_init(struct jscan_iter *it, const struct jscan_val *v)
{
    it->p = it->end = NULL;
    it->is_object = 0;
    if (v == NULL || (v->type != JSCAN_OBJECT && v->type != JSCAN_ARRAY) || v->n < 2)
        return;
    it->is_object = v->type == JSCAN_OBJECT;
    it->p = v->p + 1;
    it->end = v->p + v->n - 1; /* the closing bracket */
}

int jscan_iter_next(struct jscan_iter *it, struct jscan_val *key, struct jscan_val *val)
{
    struct jscan_val k;

    if (it->p == NULL)
        return 0;
    it->p = skip_ws_c(it->p, it->end);
    if (it->p < it->end && *it->p == ',')
        it->p = skip_ws_c(it->p + 1, it->end);
    if (it->p >= it->end)
        return 0;
    if (it->is_object) {
        it->p = read_value(it->p, it->end, &k);
        it->p = skip_ws_c(it->p, it->end);
        it->p = skip_ws_c(it->p + 1, it->end); /* ':' */
        if (key)
            *key = k;
    }
    it->p = read_value(it->p, it->end, val);
    return 1;
}

int jscan_object_of(struct jscan_obj *o, const struct jscan_val *v)
{
    struct jscan_iter it;
    struct jscan_member mb;

    o->count = o->total = 0;
    o->p = NULL;
    o->n = 0;
    if (v == NULL || v->type != JSCAN_OBJECT)
        return ERR_INVALID;
    o->p = v->p;
    o->n = v->n;
    jscan_iter_init(&it, v);
    while (jscan_iter_next(&it, &mb.key, &mb.val)) {
        if (o->count < JSCAN_MEMBERS)
            o->m[o->count++] = mb;
        o->total++;
    }
    return 0;
}

int jscan_get(const struct jscan_obj *o, const char *key, struct jscan_val *out)
{
    out->type = JSCAN_NONE;
    out->escaped = 0;
    out->p = NULL;
    out->n = 0;
    if (o->total > o->count) {
        /* Members past the stored ones: walk the whole text, keeping the last match. */
        struct jscan_val obj = {JSCAN_OBJECT, 0, o->p, o->n}, k, v;
        struct jscan_iter it;
        int found = 0;
        jscan_iter_init(&it, &obj);
        while (jscan_iter_next(&it, &k, &v))
            if (jscan_str_eq(&k, key)) {
                *out = v;
                found = 1;
            }
        return found;
    }
    size_t klen = strlen(key);
    for (size_t i = o->count; i-- > 0;) {
        const struct jscan_val *k = &o->m[i].key;
        /* most keys have no escapes: compare the bytes; decode only the others */
        if (k->escaped ? jscan_str_eq(k, key) : k->n == klen && memcmp(k->p, key, klen) == 0) {
            *out = o->m[i].val;
            return 1;
        }
    }
    return 0;
}

void jscan_walk(const struct jscan_val *v, jscan_scalar_fn fn, void *ctx)
{
    const char *p, *end;

    if (v == NULL || v->type == JSCAN_NONE)
        return;
    if (v->type == JSCAN_STRING) {
        p = v->p - 1; /* back to the quote, handled below */
        end = v->p + v->n + 1;
    } else {
        p = v->p;
        end = v->p + v->n;
    }
    while (p < end) {
        char c = *p;
        if (c == '"') {
            const char *q = p + 1, *close = skip_string(p, end) - 1;
            if (memchr(q, '\\', (size_t)(close - q)) == NULL) {
                if (fn(ctx, JSCAN_STRING, q, (size_t)(close - q), 0))
                    return;
            } else {
                char chunk[256];
                size_t len = 0;
                while (q < close) {
                    char tmp[4];
                    size_t k = 1;
                    if (*q == '\\')
                        k = decode_escape(&q, tmp);
                    else
                        tmp[0] = *q++;
                    if (len + k > sizeof(chunk)) {
                        if (fn(ctx, JSCAN_STRING, chunk, len, 1))
                            return;
                        len = 0;
                    }
                    memcpy(chunk + len, tmp, k);
                    len += k;
                }
                if (fn(ctx, JSCAN_STRING, chunk, len, 0))
                    return;
            }
            p = close + 1;
            continue;
        }
        if (c == '-' || is_digit((unsigned char)c)) {
            const char *q = p;
            while (q < end && (is_digit((unsigned char)*q) || *q == '-' || *q == '+' || *q == '.' ||
                               *q == 'e' || *q == 'E'))
                q++;
            if (fn(ctx, JSCAN_REAL, p, (size_t)(q - p), 0))
                return;
            p = q;
            continue;
        }
        if (c == 't' || c == 'n') {
            p += 4;
            continue;
        }
        if (c == 'f') {
            p += 5;
            continue;
        }
        p++;
    }
}
