/*
 * events view: validate an event line in one pass and index its top-level fields (view.h).
 *
 * A recursive-descent scanner over the bytes of the line (struct scan). It accepts exactly what
 * json_loadb(line, len, JSON_ALLOW_NUL) accepts, which tests/fuzz/fuzz_events.c checks on every
 * input by comparing the two:
 *   - RFC 8259 grammar; whitespace is space, tab, CR, LF; only whitespace after the object;
 *   - strings: no raw byte < 0x20; escapes \" \\ \/ \b \f \n \r \t \uXXXX; a \u high surrogate
 *     must be followed by a \u low surrogate, a lone low surrogate is an error; \u0000 is
 *     allowed in values (JSON_ALLOW_NUL) but not in keys; raw bytes >= 0x80 must be valid UTF-8
 *     (no overlong forms, no surrogates, nothing past U+10FFFF), checked as jansson's utf8.c;
 *   - numbers: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; an integer (no fraction, no
 *     exponent) must fit int64; a real must not overflow to +-HUGE_VAL (strtod, as jansson);
 *   - nesting depth at most 2048 (JSON_PARSER_MAX_DEPTH).
 * The scanner's inner string loop skips plain bytes with a class table, so a line costs a few
 * hundred nanoseconds (docs/performance.md).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "events/view.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/num.h"
#include "util/text.h"
#include "util/utf8.h"
#include "util/banned.h"

#define DEPTH_MAX 2048

/* Byte classes inside a string: 0 plain, 1 quote, 2 backslash, 3 control, 4 non-ASCII. */
static const unsigned char str_class[256] = {
    [0 ... 0x1f] = 3,
    ['"'] = 1,
    ['\\'] = 2,
    [0x80 ... 0xff] = 4,
};

struct find {
    const char *key; /* wanted key */
    size_t key_len;
    struct events_view_field hit; /* the last field with that key */
    int found;
};

struct scan {
    const unsigned char *p, *end;
    int depth;
    struct events_view *index; /* top-level fields go here (first pass) */
    struct find *find;         /* or are matched against a key (overflow lookups) */
};

static int scan_value(struct scan *s);

static void skip_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* hex4's "not 4 hex digits": below every code point, not an error code. */
#define HEX4_BAD (-1L)

/* The 4 hex digits at p (p + 4 <= end checked by the caller), or HEX4_BAD. */
static long hex4(const unsigned char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = num_hexval(p[i]);
        if (h < 0)
            return HEX4_BAD;
        v = v * 16 + h;
    }
    return v;
}

/* The scan_* functions return 0 (s->p past what they read), or ERR_PARSE: not what
 * json_loadb accepts there, nesting past DEPTH_MAX included (jansson's parse error too). */

/* At the opening quote; leaves p after the closing quote. */
static int scan_string(struct scan *s, int is_key, int *escaped)
{
    const unsigned char *p = s->p + 1, *end = s->end;

    for (;;) {
        /* plain bytes eight at a time (a 16 KiB argument is one string): one branch for them */
        while (end - p >= 8 &&
               (str_class[p[0]] | str_class[p[1]] | str_class[p[2]] | str_class[p[3]] |
                str_class[p[4]] | str_class[p[5]] | str_class[p[6]] | str_class[p[7]]) == 0)
            p += 8;
        while (p < end && str_class[*p] == 0)
            p++;
        if (p >= end)
            return ERR_PARSE;
        switch (str_class[*p]) {
        case 1:
            s->p = p + 1;
            return 0;
        case 2: {
            long cp;
            *escaped = 1;
            if (p + 1 >= end)
                return ERR_PARSE;
            if (p[1] != 'u') {
                if (!strchr("\"\\/bfnrt", p[1]) || p[1] == '\0')
                    return ERR_PARSE;
                p += 2;
                break;
            }
            if (end - p < 6 || (cp = hex4(p + 2)) == HEX4_BAD)
                return ERR_PARSE;
            p += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo;
                if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || (lo = hex4(p + 2)) == HEX4_BAD)
                    return ERR_PARSE;
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return ERR_PARSE;
                p += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return ERR_PARSE;
            } else if (cp == 0 && is_key) {
                return ERR_PARSE; /* jansson: NUL byte in object key not supported */
            }
            break;
        }
        case 3:
            return ERR_PARSE;
        default: {
            size_t n = utf8_seq(p, (size_t)(end - p));
            if (n == 0)
                return ERR_PARSE;
            p += n;
        }
        }
    }
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int scan_number(struct scan *s)
{
    const unsigned char *p = s->p, *end = s->end, *start = s->p;
    int neg = 0;

    if (*p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end)
        return ERR_PARSE;
    if (*p == '0') {
        p++;
        if (p < end && is_digit(*p))
            return ERR_PARSE;
    } else if (is_digit(*p)) {
        while (p < end && is_digit(*p))
            p++;
    } else {
        return ERR_PARSE;
    }
    if (p >= end || (*p != '.' && *p != 'e' && *p != 'E')) {
        /* An integer: must fit int64, as strtoll in jansson. */
        unsigned long long v = 0, lim = neg ? 9223372036854775808ULL : 9223372036854775807ULL;
        for (const unsigned char *d = start + neg; d < p; d++) {
            if (v > (lim - (unsigned)(*d - '0')) / 10)
                return ERR_PARSE;
            v = v * 10 + (unsigned)(*d - '0');
        }
        s->p = p;
        return 0;
    }
    size_t int_digits = (size_t)(p - start - neg);
    long exp = 0;
    if (*p == '.') {
        p++;
        if (p >= end || !is_digit(*p))
            return ERR_PARSE;
        while (p < end && is_digit(*p))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        int eneg = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        if (p >= end || !is_digit(*p))
            return ERR_PARSE;
        while (p < end && is_digit(*p)) {
            if (exp < 100000)
                exp = exp * 10 + (*p - '0');
            p++;
        }
        if (eneg)
            exp = -exp;
    }
    /* Below 10^307 no double overflows: skip strtod for the usual small reals. */
    if ((long)int_digits + exp <= 307) {
        s->p = p;
        return 0;
    }
    {
        /* A real: jansson rejects overflow to +-HUGE_VAL. */
        char small[64], *txt = small;
        size_t n = (size_t)(p - start);
        double d;
        if (n >= sizeof(small))
            txt = xmalloc(n + 1);
        memcpy(txt, start, n);
        txt[n] = '\0';
        errno = 0;
        d = strtod(txt, NULL);
        if (txt != small)
            free(txt);
        if ((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE)
            return ERR_PARSE;
    }
    s->p = p;
    return 0;
}

static int scan_literal(struct scan *s, const char *lit, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return ERR_PARSE;
    s->p += n;
    return 0;
}

/* after_item's outcomes besides ERR_PARSE: a ',' was passed (another item follows), or the
 * closer (the container is done: SCAN_CLOSED is 0, its scan's success). */
#define SCAN_CLOSED 0
#define SCAN_NEXT 1

/* After an element of an array or a member of an object (close: ']' or '}'): SCAN_NEXT past a
 * ',', SCAN_CLOSED past the closer (the depth back down), or ERR_PARSE. */
static int after_item(struct scan *s, unsigned char close)
{
    skip_ws(s);
    if (s->p >= s->end)
        return ERR_PARSE;
    if (*s->p == ',') {
        s->p++;
        return SCAN_NEXT;
    }
    if (*s->p != close)
        return ERR_PARSE;
    s->p++;
    s->depth--;
    return SCAN_CLOSED;
}

static int scan_array(struct scan *s)
{
    int rc;

    s->p++;
    if (++s->depth > DEPTH_MAX)
        return ERR_PARSE;
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        s->depth--;
        return 0;
    }
    for (;;) {
        skip_ws(s);
        if (scan_value(s) < 0)
            return ERR_PARSE;
        if ((rc = after_item(s, ']')) != SCAN_NEXT)
            return rc;
    }
}

/* Unescapes the body of a valid JSON string into out (at most size - 1 bytes and a NUL when
 * size > 0); returns the full unescaped length. */
static size_t unescape(const char *s, size_t n, char *out, size_t size)
{
    size_t o = 0;

#define PUT(c)                                                                                     \
    do {                                                                                           \
        if (o + 1 < size)                                                                          \
            out[o] = (char)(c);                                                                    \
        o++;                                                                                       \
    } while (0)
    for (size_t i = 0; i < n;) {
        long cp;
        char enc[4];
        size_t enc_len;
        if (s[i] != '\\') {
            PUT(s[i]);
            i++;
            continue;
        }
        switch (s[i + 1]) {
        case 'b':
            PUT('\b');
            break;
        case 'f':
            PUT('\f');
            break;
        case 'n':
            PUT('\n');
            break;
        case 'r':
            PUT('\r');
            break;
        case 't':
            PUT('\t');
            break;
        case 'u':
            cp = hex4((const unsigned char *)s + i + 2);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo = hex4((const unsigned char *)s + i + 8);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
            enc_len = utf8_put((unsigned long)cp, enc);
            for (size_t k = 0; k < enc_len; k++)
                PUT(enc[k]);
            i += 6;
            continue;
        default: /* " \ / */
            PUT(s[i + 1]);
        }
        i += 2;
    }
#undef PUT
    if (size > 0)
        out[o < size ? o : size - 1] = '\0';
    return o;
}

/* 1 when the body of a valid JSON string (raw[0..n), with escapes) unescapes to s[0..m). */
static int escaped_equals(const char *raw, size_t n, const char *s, size_t m)
{
    char small[256], *tmp = small;
    int eq;

    if (m > n)
        return 0; /* escapes only make a string shorter */
    if (m + 1 > sizeof(small))
        tmp = xmalloc(m + 1);
    eq = unescape(raw, n, tmp, m + 1) == m && memcmp(tmp, s, m) == 0;
    if (tmp != small)
        free(tmp);
    return eq;
}

static int key_equals(const struct events_view_field *f, const char *key, size_t n)
{
    if (!f->key_escaped)
        return f->key_len == n && memcmp(f->key, key, n) == 0;
    return escaped_equals(f->key, f->key_len, key, n);
}

static int scan_object(struct scan *s)
{
    int top = s->depth == 0, rc;

    s->p++;
    if (++s->depth > DEPTH_MAX)
        return ERR_PARSE;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        s->depth--;
        return 0;
    }
    for (;;) {
        struct events_view_field f;
        int esc = 0;
        skip_ws(s);
        if (s->p >= s->end || *s->p != '"')
            return ERR_PARSE;
        f.key = (const char *)s->p + 1;
        if (scan_string(s, 1, &esc) < 0)
            return ERR_PARSE;
        f.key_len = (uint32_t)((const char *)s->p - 1 - f.key);
        f.key_escaped = esc;
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':')
            return ERR_PARSE;
        s->p++;
        skip_ws(s);
        f.val = (const char *)s->p;
        if (scan_value(s) < 0)
            return ERR_PARSE;
        f.val_len = (uint32_t)((const char *)s->p - f.val);
        if (top && s->index) {
            if (s->index->nfields < EVENTS_VIEW_FIELDS)
                s->index->f[s->index->nfields++] = f;
            else
                s->index->overflow = 1;
        } else if (top && s->find && key_equals(&f, s->find->key, s->find->key_len)) {
            s->find->hit = f;
            s->find->found = 1;
        }
        if ((rc = after_item(s, '}')) != SCAN_NEXT)
            return rc;
    }
}

static int scan_value(struct scan *s)
{
    if (s->p >= s->end)
        return ERR_PARSE;
    /* jansson counts every value, scalars too, as one level of depth: a scalar inside
     * DEPTH_MAX nested containers is one level too deep for it, so it is for us. */
    if (*s->p != '{' && *s->p != '[' && s->depth + 1 > DEPTH_MAX)
        return ERR_PARSE;
    switch (*s->p) {
    case '{':
        return scan_object(s);
    case '[':
        return scan_array(s);
    case '"': {
        int esc = 0;
        return scan_string(s, 0, &esc);
    }
    case 't':
        return scan_literal(s, "true", 4);
    case 'f':
        return scan_literal(s, "false", 5);
    case 'n':
        return scan_literal(s, "null", 4);
    default:
        return scan_number(s);
    }
}

/* Scans a whole line: an object and only whitespace after it. */
static int scan_line(struct scan *s, const char *line, size_t len)
{
    s->p = (const unsigned char *)line;
    s->end = s->p + len;
    s->depth = 0;
    skip_ws(s);
    if (s->p >= s->end || *s->p != '{' || scan_object(s) < 0)
        return ERR_PARSE;
    skip_ws(s);
    return s->p == s->end ? 0 : ERR_PARSE;
}

size_t events_json_unescape(const char *s, size_t n, char *out, size_t size)
{
    return unescape(s, n, out, size);
}

int events_json_check(const char *p, size_t n)
{
    struct scan s = {0};

    s.p = (const unsigned char *)p;
    s.end = s.p + n;
    skip_ws(&s);
    if (scan_value(&s) < 0)
        return ERR_PARSE;
    skip_ws(&s);
    return s.p == s.end ? 0 : ERR_PARSE;
}

static const struct events_view_field *find_field(const struct events_view *v, const char *key,
                                                  struct events_view_field *tmp)
{
    size_t n = strlen(key);

    if (v->overflow) {
        /* More fields than indexed: walk the line (rare; the last match wins). */
        struct find fd = {key, n, {0}, 0};
        struct scan s = {0};
        s.find = &fd;
        if (scan_line(&s, v->line, v->len) < 0 || !fd.found)
            return NULL;
        *tmp = fd.hit;
        return tmp;
    }
    for (size_t i = v->nfields; i-- > 0;)
        if (key_equals(&v->f[i], key, n))
            return &v->f[i];
    return NULL;
}

int events_view_parse(struct events_view *v, const char *line, size_t len)
{
    struct scan s = {0};
    struct events_view_field tmp;
    const struct events_view_field *k;

    v->line = line;
    v->len = len;
    v->nfields = 0;
    v->overflow = 0;
    v->kind = NULL;
    v->kind_len = 0;
    s.index = v;
    if (len > UINT32_MAX || scan_line(&s, line, len) < 0)
        return ERR_PARSE;
    k = find_field(v, "kind", &tmp);
    if (k == NULL || k->val[0] != '"')
        return ERR_PARSE;
    if (memchr(k->val, '\\', k->val_len) == NULL) {
        v->kind = k->val + 1;
        v->kind_len = k->val_len - 2;
    } else {
        v->kind_len = unescape(k->val + 1, k->val_len - 2, v->kind_buf, sizeof(v->kind_buf));
        if (v->kind_len > EVENTS_VIEW_KIND_MAX)
            v->kind_len = EVENTS_VIEW_KIND_MAX;
        v->kind = v->kind_buf;
    }
    return 0;
}

int events_next_view(struct events_reader *r, struct events_view *v)
{
    const char *line;
    size_t len;
    int rc;

    while ((rc = events_next_line(r, &line, &len)) == 1) {
        if (text_blank(line, len))
            continue;
        if (events_view_parse(v, line, len) == 0)
            return 1;
        events_reader_count_malformed(r);
    }
    return rc;
}

const char *events_view_raw(const struct events_view *v, const char *key, size_t *len)
{
    struct events_view_field tmp;
    const struct events_view_field *f = find_field(v, key, &tmp);

    if (f == NULL)
        return NULL;
    if (len)
        *len = f->val_len;
    return f->val;
}

int events_view_is(const struct events_view *v, const char *key, const char *s)
{
    size_t n, m = strlen(s);
    const char *raw = events_view_raw(v, key, &n);

    if (raw == NULL || raw[0] != '"')
        return 0;
    if (memchr(raw, '\\', n) == NULL)
        return n - 2 == m && memcmp(raw + 1, s, m) == 0;
    return escaped_equals(raw + 1, n - 2, s, m);
}

int events_view_string(const struct events_view *v, const char *key, char *out, size_t size,
                       size_t *len)
{
    size_t n, full;
    const char *raw = events_view_raw(v, key, &n);

    if (raw == NULL || raw[0] != '"') {
        if (size > 0)
            out[0] = '\0';
        return ERR_NOTFOUND;
    }
    full = unescape(raw + 1, n - 2, out, size);
    if (len)
        *len = full;
    return full < size ? 0 : ERR_LIMIT;
}

/* Copies a raw number into a NUL-terminated buffer (b) for num_parse_*. */
static const char *number_text(const struct events_view *v, const char *key, struct buf *b,
                               int *is_int)
{
    size_t n;
    const char *raw = events_view_raw(v, key, &n);

    if (raw == NULL || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')))
        return NULL;
    *is_int =
        memchr(raw, '.', n) == NULL && memchr(raw, 'e', n) == NULL && memchr(raw, 'E', n) == NULL;
    buf_add(b, raw, n);
    return b->data;
}

int events_view_int(const struct events_view *v, const char *key, long long *out)
{
    struct buf b = BUF_INIT;
    int is_int = 0, rc = ERR_NOTFOUND;
    const char *t = number_text(v, key, &b, &is_int);

    if (t && is_int && num_parse_ll(t, INT64_MIN, INT64_MAX, out) == 0)
        rc = 0;
    buf_release(&b);
    return rc;
}

int64_t events_view_time_us(const struct events_view *v)
{
    long long x;

    if (events_view_int(v, "t_us", &x) == 0 && x >= 0)
        return x;
    if (events_view_int(v, "t", &x) == 0 && x >= 0 && x <= INT64_MAX / 1000)
        return (int64_t)x * 1000;
    return EVENTS_NO_TIME;
}

int events_view_number(const struct events_view *v, const char *key, double *out)
{
    struct buf b = BUF_INIT;
    int is_int = 0, rc = ERR_NOTFOUND;
    const char *t = number_text(v, key, &b, &is_int);

    if (t) {
        /* The scanner validated the grammar and ruled out overflow; like jansson, an underflow
         * gives 0 or a denormal rather than an error (num_parse_double would refuse it). */
        *out = strtod(t, NULL);
        rc = 0;
    }
    buf_release(&b);
    return rc;
}

int events_view_bool(const struct events_view *v, const char *key, int *out)
{
    size_t n;
    const char *raw = events_view_raw(v, key, &n);

    if (raw && n == 4 && memcmp(raw, "true", 4) == 0)
        *out = 1;
    else if (raw && n == 5 && memcmp(raw, "false", 5) == 0)
        *out = 0;
    else
        return ERR_NOTFOUND;
    return 0;
}

json_t *events_view_get(const struct events_view *v, const char *key)
{
    size_t n;
    const char *raw = events_view_raw(v, key, &n);

    return raw ? json_loadb(raw, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
}

json_t *events_view_json(const struct events_view *v)
{
    return json_loadb(v->line, v->len, JSON_ALLOW_NUL, NULL);
}
