/*
 * jscan: see jscan.h. A recursive-descent validator over a byte range (depth is bounded by
 * JSCAN_MAX_DEPTH, so recursion is too), with a table-driven fast path through ordinary string
 * bytes, which are most of an event line. Everything after validation (jscan_get, jscan_iter,
 * jscan_walk) trusts that the text is valid JSON and only skips over it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "score/jscan.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/banned.h"

struct scan {
    const unsigned char *p, *end;
    int depth;
};

/* 1 for bytes that may stand in a string as themselves with no further check: printable
 * ASCII except '"' and '\\'. */
static const unsigned char plain[256] = {
    ['\x20'] = 1,
    1,
    0,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1, /* 0x20-0x2f, '"' excluded */
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1, /* 0x30-0x3f */
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1, /* 0x40-0x4f */
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    0,
    1,
    1,
    1, /* 0x50-0x5f, '\\' excluded */
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1, /* 0x60-0x6f */
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1,
    1, /* 0x70-0x7f */
};

static int is_ws(unsigned c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_digit(unsigned c)
{
    return c >= '0' && c <= '9';
}

static int hexval(unsigned c)
{
    if (c >= '0' && c <= '9')
        return (int)(c - '0');
    if (c >= 'a' && c <= 'f')
        return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F')
        return (int)(c - 'A' + 10);
    return -1;
}

static void skip_ws(struct scan *s)
{
    while (s->p < s->end && is_ws(*s->p))
        s->p++;
}

/* Reads 4 hex digits at p (p + 4 <= end checked by the caller). -1 when not hex. */
static long hex4(const unsigned char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* One UTF-8 sequence starting at s->p (a byte >= 0x80), as jansson's utf8_check_full. */
static int scan_utf8(struct scan *s)
{
    const unsigned char *p = s->p;
    unsigned c = *p;
    int count;
    unsigned long v;

    if (c >= 0xC2 && c <= 0xDF) {
        count = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        count = 3;
        v = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        count = 4;
        v = c & 0x07;
    } else {
        return -1;
    }
    if (s->end - p < count)
        return -1;
    for (int i = 1; i < count; i++) {
        if (p[i] < 0x80 || p[i] > 0xBF)
            return -1;
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return -1;
    if ((count == 3 && v < 0x800) || (count == 4 && v < 0x10000))
        return -1;
    s->p = p + count;
    return 0;
}

/* A string at s->p (the opening quote). Sets *escaped when a backslash occurs. */
static int scan_string(struct scan *s, int *escaped, int is_key)
{
    const unsigned char *p = s->p + 1, *end = s->end;

    *escaped = 0;
    for (;;) {
        while (p < end && plain[*p])
            p++;
        if (p >= end)
            return -1;
        if (*p == '"') {
            s->p = p + 1;
            return 0;
        }
        if (*p == '\\') {
            *escaped = 1;
            if (end - p < 2)
                return -1;
            switch (p[1]) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                p += 2;
                continue;
            case 'u':
                break;
            default:
                return -1;
            }
            if (end - p < 6)
                return -1;
            long u = hex4(p + 2);
            if (u < 0 || (u == 0 && is_key)) /* jansson never takes a NUL in a key */
                return -1;
            p += 6;
            if (u >= 0xDC00 && u <= 0xDFFF)
                return -1;
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
                    return -1;
                long lo = hex4(p + 2);
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return -1;
                p += 6;
            }
            continue;
        }
        if (*p < 0x20)
            return -1;
        s->p = p;
        if (scan_utf8(s) < 0)
            return -1;
        p = s->p;
    }
}

/* 1 when the decimal digits d[0..n) (no sign, no leading zero) exceed 9223372036854775807,
 * or ...808 for a negative number: strtoll's ERANGE, which jansson rejects. */
static int int_overflows(const unsigned char *d, size_t n, int neg)
{
    static const char max[] = "9223372036854775807";
    static const char min[] = "9223372036854775808";
    if (n != 19)
        return n > 19;
    return memcmp(d, neg ? min : max, 19) > 0;
}

/* 1 when strtod of the n-byte number text t overflows to +-HUGE_VAL. */
static int real_overflows(const unsigned char *t, size_t n)
{
    char small[128], *copy = small;
    double v;
    int over;

    if (n >= sizeof(small))
        copy = xmalloc(n + 1);
    memcpy(copy, t, n);
    copy[n] = '\0';
    errno = 0;
    v = strtod(copy, NULL);
    over = (v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE;
    if (copy != small)
        free(copy);
    return over;
}

static int scan_number(struct scan *s, enum jscan_type *type)
{
    const unsigned char *p = s->p, *end = s->end, *digits;
    int neg = 0, is_int = 1, has_exp = 0;

    if (*p == '-') {
        neg = 1;
        p++;
    }
    digits = p;
    if (p >= end)
        return -1;
    if (*p == '0') {
        p++;
        if (p < end && is_digit(*p))
            return -1;
    } else if (is_digit(*p)) {
        while (p < end && is_digit(*p))
            p++;
    } else {
        return -1;
    }
    size_t ndigits = (size_t)(p - digits);
    if (p < end && *p == '.') {
        is_int = 0;
        p++;
        if (p >= end || !is_digit(*p))
            return -1;
        while (p < end && is_digit(*p))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_int = 0;
        has_exp = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || !is_digit(*p))
            return -1;
        while (p < end && is_digit(*p))
            p++;
    }
    if (is_int) {
        if (int_overflows(digits, ndigits, neg))
            return -1;
        *type = JSCAN_INT;
    } else {
        /* Without an exponent, fewer than 300 digits cannot reach DBL_MAX (~1.8e308). */
        if ((has_exp || p - s->p >= 300) && real_overflows(s->p, (size_t)(p - s->p)))
            return -1;
        *type = JSCAN_REAL;
    }
    s->p = p;
    return 0;
}

static int scan_literal(struct scan *s, const char *word, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return -1;
    s->p += n;
    /* jansson reads a whole run of letters as one word: "nullx" is not "null" then "x", but
     * either way it is an error, and so it is here: the caller finds no separator. */
    return 0;
}

static int scan_value(struct scan *s, struct jscan_val *out, struct jscan_obj *o);

static int scan_members(struct scan *s, struct jscan_obj *o)
{
    s->p++; /* '{' */
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return 0;
    }
    for (;;) {
        struct jscan_val key, val;
        if (s->p >= s->end || *s->p != '"')
            return -1;
        key.type = JSCAN_STRING;
        key.p = (const char *)s->p + 1;
        if (scan_string(s, &key.escaped, 1) < 0)
            return -1;
        key.n = (size_t)((const char *)s->p - 1 - key.p);
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':')
            return -1;
        s->p++;
        skip_ws(s);
        if (scan_value(s, &val, NULL) < 0)
            return -1;
        if (o != NULL) {
            if (o->count < JSCAN_MEMBERS) {
                o->m[o->count].key = key;
                o->m[o->count].val = val;
                o->count++;
            }
            o->total++;
        }
        skip_ws(s);
        if (s->p >= s->end)
            return -1;
        if (*s->p == ',') {
            s->p++;
            skip_ws(s);
            continue;
        }
        if (*s->p == '}') {
            s->p++;
            return 0;
        }
        return -1;
    }
}

static int scan_elements(struct scan *s)
{
    s->p++; /* '[' */
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return 0;
    }
    for (;;) {
        struct jscan_val val;
        if (scan_value(s, &val, NULL) < 0)
            return -1;
        skip_ws(s);
        if (s->p >= s->end)
            return -1;
        if (*s->p == ',') {
            s->p++;
            skip_ws(s);
            continue;
        }
        if (*s->p == ']') {
            s->p++;
            return 0;
        }
        return -1;
    }
}

/* One value at s->p (whitespace already skipped). o collects the members when the value is
 * the top-level object (NULL otherwise). */
static int scan_value(struct scan *s, struct jscan_val *out, struct jscan_obj *o)
{
    const unsigned char *start = s->p;
    int rc;

    if (s->p >= s->end || ++s->depth > JSCAN_MAX_DEPTH)
        return -1;
    out->escaped = 0;
    switch (*s->p) {
    case '{':
        out->type = JSCAN_OBJECT;
        rc = scan_members(s, o);
        break;
    case '[':
        out->type = JSCAN_ARRAY;
        rc = scan_elements(s);
        break;
    case '"':
        out->type = JSCAN_STRING;
        rc = scan_string(s, &out->escaped, 0);
        if (rc == 0) {
            out->p = (const char *)start + 1;
            out->n = (size_t)(s->p - start - 2);
            s->depth--;
            return 0;
        }
        break;
    case 't':
        out->type = JSCAN_TRUE;
        rc = scan_literal(s, "true", 4);
        break;
    case 'f':
        out->type = JSCAN_FALSE;
        rc = scan_literal(s, "false", 5);
        break;
    case 'n':
        out->type = JSCAN_NULL;
        rc = scan_literal(s, "null", 4);
        break;
    default:
        rc = scan_number(s, &out->type);
        break;
    }
    if (rc < 0)
        return -1;
    out->p = (const char *)start;
    out->n = (size_t)(s->p - start);
    s->depth--;
    return 0;
}

int jscan_object(struct jscan_obj *o, const char *p, size_t n)
{
    struct scan s = {(const unsigned char *)p, (const unsigned char *)p + n, 0};
    struct jscan_val top;

    o->count = o->total = 0;
    /* A raw NUL is never JSON. (jansson would skip one right after a number or a word, a quirk
     * of its push-back; the events reader rejects every line holding one, and so does this.) */
    if (memchr(p, '\0', n) != NULL)
        return ERR_PARSE;
    skip_ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return ERR_PARSE;
    if (scan_value(&s, &top, o) < 0)
        return ERR_PARSE;
    skip_ws(&s);
    if (s.p != s.end)
        return ERR_PARSE;
    o->p = top.p;
    o->n = top.n;
    return 0;
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
        if (u < 0x80) {
            out[0] = (char)u;
            return 1;
        }
        if (u < 0x800) {
            out[0] = (char)(0xC0 | (u >> 6));
            out[1] = (char)(0x80 | (u & 0x3F));
            return 2;
        }
        if (u < 0x10000) {
            out[0] = (char)(0xE0 | (u >> 12));
            out[1] = (char)(0x80 | ((u >> 6) & 0x3F));
            out[2] = (char)(0x80 | (u & 0x3F));
            return 3;
        }
        out[0] = (char)(0xF0 | (u >> 18));
        out[1] = (char)(0x80 | ((u >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((u >> 6) & 0x3F));
        out[3] = (char)(0x80 | (u & 0x3F));
        return 4;
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
        return -1;
    out[0] = '\0';
    if (v == NULL || v->type != JSCAN_STRING)
        return -1;
    if (!v->escaped) {
        if (v->n + 1 > cap)
            return -1;
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
            return -1;
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
        return -1;
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
        return -1;
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
        return -1;
    if (v->type == JSCAN_TRUE)
        return 1;
    if (v->type == JSCAN_FALSE)
        return 0;
    return -1;
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
        return -1;
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
