/*
 * jscan: the request scan (see jscan.h). A recursive-descent walk over the body with an
 * explicit depth bound; every check jansson makes when loading (grammar, escapes, surrogate
 * pairs, no NUL, valid UTF-8, integers that fit, trailing data) is made here too, and
 * whatever the walk is not sure of answers JSCAN_FALLBACK. Top-level members are remembered
 * as their last occurrence, as jansson keeps the last of duplicate keys.
 */
#include <stdint.h>
#include <string.h>

#include "control/jscan.h"
#include "util/num.h"
#include "util/banned.h"

enum vtype { V_NONE = 0, V_STRING, V_NUMBER, V_TRUE, V_FALSE, V_NULL, V_OBJECT, V_ARRAY };

struct scan {
    const unsigned char *p, *end;
    int fail;
};

/* What the walk learned about one value. */
struct val {
    enum vtype type;
    const unsigned char *str; /* V_STRING: raw contents between the quotes */
    size_t str_len;
    int escaped;    /* V_STRING: holds a backslash escape */
    size_t count;   /* V_ARRAY: elements */
    int usage_true; /* V_OBJECT at stream_options: include_usage is true (last wins) */
};

static int value(struct scan *s, int depth, struct val *out, int want_usage);

static void ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int d = num_hexval(p[i]);
        if (d < 0)
            return JSCAN_FALLBACK;
        v = v * 16 + (unsigned)d;
    }
    *out = v;
    return 0;
}

/* One UTF-8 sequence starting at p (a byte >= 0x80): its length, or 0 when invalid
 * (overlong, surrogate, above U+10FFFF, truncated). */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0], cp;
    size_t n;

    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* The end of the run of plain string bytes (printable ASCII other than '"' and '\\') that
 * starts at p, eight bytes at a time (SWAR zero-byte tests; a false alarm only hands the
 * word to the byte-by-byte walk). Spares a 30 MiB body most of the per-byte walk. */
static const unsigned char *plain_run(const unsigned char *p, const unsigned char *end)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;

    while (end - p >= 8) {
        uint64_t x, q, b;
        memcpy(&x, p, 8);
        q = x ^ (ones * '"');
        b = x ^ (ones * '\\');
        if (((x | ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs) != 0)
            break;
        p += 8;
    }
    return p;
}

/* A string; s->p at the opening quote. */
static int string(struct scan *s, struct val *out)
{
    const unsigned char *start = ++s->p;

    out->type = V_STRING;
    out->escaped = 0;
    while (s->p < s->end) {
        unsigned c;
        s->p = plain_run(s->p, s->end);
        if (s->p >= s->end)
            break;
        c = *s->p;
        if (c == '"') {
            out->str = start;
            out->str_len = (size_t)(s->p - start);
            s->p++;
            return 0;
        }
        if (c < 0x20)
            return JSCAN_FALLBACK;
        if (c == '\\') {
            out->escaped = 1;
            if (s->end - s->p < 2)
                return JSCAN_FALLBACK;
            c = s->p[1];
            if (c == 'u') {
                unsigned u, lo;
                if (s->end - s->p < 6 || hex4(s->p + 2, &u) != 0 || u == 0)
                    return JSCAN_FALLBACK; /* \u0000: jansson refuses NUL without JSON_ALLOW_NUL */
                s->p += 6;
                if (u >= 0xDC00 && u <= 0xDFFF)
                    return JSCAN_FALLBACK; /* a lone low surrogate */
                if (u >= 0xD800 && u <= 0xDBFF) {
                    if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' ||
                        hex4(s->p + 2, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF)
                        return JSCAN_FALLBACK;
                    s->p += 6;
                }
                continue;
            }
            if (!strchr("\"\\/bfnrt", (int)c) || c == '\0')
                return JSCAN_FALLBACK;
            s->p += 2;
            continue;
        }
        if (c >= 0x80) {
            size_t n = utf8_seq(s->p, s->end);
            if (n == 0)
                return JSCAN_FALLBACK;
            s->p += n;
            continue;
        }
        s->p++;
    }
    return JSCAN_FALLBACK;
}

/* A number (grammar of RFC 8259). Exponents and numbers with more than 18 integer digits fall
 * back: jansson refuses what overflows (an integer past int64, a real past DBL_MAX such as 400
 * digits then ".5"), and the walk does not redo its arithmetic. */
static int number(struct scan *s, struct val *out)
{
    const unsigned char *p = s->p;
    int digits = 0, frac = 0;

    out->type = V_NUMBER;
    if (p < s->end && *p == '-')
        p++;
    if (p >= s->end)
        return JSCAN_FALLBACK;
    if (*p == '0') {
        p++;
        digits = 1;
    } else if (*p >= '1' && *p <= '9') {
        while (p < s->end && *p >= '0' && *p <= '9')
            p++, digits++;
    } else {
        return JSCAN_FALLBACK;
    }
    if (p < s->end && *p == '.') {
        p++;
        while (p < s->end && *p >= '0' && *p <= '9')
            p++, frac++;
        if (frac == 0)
            return JSCAN_FALLBACK;
    }
    if (p < s->end && (*p == 'e' || *p == 'E'))
        return JSCAN_FALLBACK;
    if (digits > 18)
        return JSCAN_FALLBACK;
    s->p = p;
    return 0;
}

static int literal(struct scan *s, const char *word, enum vtype t, struct val *out)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return JSCAN_FALLBACK;
    s->p += n;
    out->type = t;
    return 0;
}

/* An object; want_usage: remember whether its include_usage member is true. */
static int object(struct scan *s, int depth, struct val *out, int want_usage)
{
    struct val k, v;

    out->type = V_OBJECT;
    out->usage_true = 0;
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return 0;
    }
    for (;;) {
        int is_usage;
        ws(s);
        if (s->p >= s->end || *s->p != '"' || string(s, &k) != 0)
            return JSCAN_FALLBACK;
        if (want_usage && k.escaped)
            return JSCAN_FALLBACK; /* the key may decode to include_usage: let jansson judge */
        is_usage = want_usage && k.str_len == 13 && memcmp(k.str, "include_usage", 13) == 0;
        ws(s);
        if (s->p >= s->end || *s->p != ':')
            return JSCAN_FALLBACK;
        s->p++;
        if (value(s, depth + 1, &v, 0) != 0)
            return JSCAN_FALLBACK;
        if (is_usage)
            out->usage_true = v.type == V_TRUE;
        ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return 0;
        }
        return JSCAN_FALLBACK;
    }
}

static int array(struct scan *s, int depth, struct val *out)
{
    struct val v;

    out->type = V_ARRAY;
    out->count = 0;
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return 0;
    }
    for (;;) {
        if (value(s, depth + 1, &v, 0) != 0)
            return JSCAN_FALLBACK;
        out->count++;
        ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return 0;
        }
        return JSCAN_FALLBACK;
    }
}

static int value(struct scan *s, int depth, struct val *out, int want_usage)
{
    if (depth > JSCAN_DEPTH_MAX)
        return JSCAN_FALLBACK;
    ws(s);
    if (s->p >= s->end)
        return JSCAN_FALLBACK;
    switch (*s->p) {
    case '{':
        return object(s, depth, out, want_usage);
    case '[':
        return array(s, depth, out);
    case '"':
        return string(s, out);
    case 't':
        return literal(s, "true", V_TRUE, out);
    case 'f':
        return literal(s, "false", V_FALSE, out);
    case 'n':
        return literal(s, "null", V_NULL, out);
    default:
        return number(s, out);
    }
}

static int key_is(const struct val *k, const char *name)
{
    size_t n = strlen(name);
    return !k->escaped && k->str_len == n && memcmp(k->str, name, n) == 0;
}

int jscan_request(enum wire_api api, const char *body, size_t len, struct jscan_info *out)
{
    struct scan s = {(const unsigned char *)body, (const unsigned char *)body + len, 0};
    struct val model = {0}, stream = {0}, sopts = {0}, msgs = {0}, tools = {0}, k, v;
    const char *msgs_key = api == WIRE_API_OPENAI_RESPONSES ? "input" : "messages";

    memset(out, 0, sizeof(*out));
    if (len > WIRE_BODY_MAX)
        return JSCAN_FALLBACK; /* wire_json_parse refuses it: so must the fast path */
    ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return JSCAN_FALLBACK;
    s.p++;
    ws(&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
    } else {
        for (;;) {
            ws(&s);
            if (s.p >= s.end || *s.p != '"' || string(&s, &k) != 0)
                return JSCAN_FALLBACK;
            ws(&s);
            if (s.p >= s.end || *s.p != ':')
                return JSCAN_FALLBACK;
            s.p++;
            if (value(&s, 1, &v, key_is(&k, "stream_options")) != 0)
                return JSCAN_FALLBACK;
            if (k.escaped) {
                /* a key spelled with escapes may decode to one of ours: let jansson judge */
                return JSCAN_FALLBACK;
            } else if (key_is(&k, "model")) {
                model = v;
            } else if (key_is(&k, "stream")) {
                stream = v;
            } else if (key_is(&k, "stream_options")) {
                sopts = v;
            } else if (key_is(&k, msgs_key)) {
                msgs = v;
            } else if (key_is(&k, "tools")) {
                tools = v;
            }
            ws(&s);
            if (s.p < s.end && *s.p == ',') {
                s.p++;
                continue;
            }
            if (s.p < s.end && *s.p == '}') {
                s.p++;
                break;
            }
            return JSCAN_FALLBACK;
        }
    }
    ws(&s);
    if (s.p != s.end)
        return JSCAN_FALLBACK; /* trailing data */

    if (model.type == V_STRING) {
        if (model.escaped)
            return JSCAN_FALLBACK;
        out->model = (const char *)model.str;
        out->model_len = model.str_len;
    } else if (model.type != V_NONE && model.type != V_NULL) {
        return JSCAN_FALLBACK;
    }
    if (stream.type == V_TRUE)
        out->stream = 1;
    else if (stream.type != V_NONE && stream.type != V_NULL && stream.type != V_FALSE)
        return JSCAN_FALLBACK;
    if (sopts.type == V_OBJECT)
        out->include_usage = sopts.usage_true;
    if (msgs.type == V_ARRAY)
        out->n_messages = msgs.count;
    else if (api == WIRE_API_OPENAI_RESPONSES && msgs.type == V_STRING)
        out->n_messages = 1;
    else if (msgs.type != V_NONE && msgs.type != V_NULL)
        return JSCAN_FALLBACK;
    if (tools.type == V_ARRAY)
        out->n_tools = tools.count;
    else if (tools.type != V_NONE && tools.type != V_NULL)
        return JSCAN_FALLBACK;
    return 0;
}
