/*
 * jsonrpc: see jsonrpc.h.
 *
 * The skim is a byte-at-a-time state machine over the top level of one JSON object:
 *
 *   state       byte                next state     action
 *   KEY_WAIT    '"'                 KEY            start a key
 *   KEY_WAIT    '}'                 (done)
 *   KEY         '"' (unescaped)     COLON          key complete
 *   COLON       ':'                 VALUE_WAIT     choose what to capture (id, method)
 *   VALUE_WAIT  '"'                 VALUE_STR
 *   VALUE_WAIT  '{' '['             VALUE_NESTED   nest = 1
 *   VALUE_WAIT  other               VALUE_SCALAR
 *   VALUE_STR   '"' (unescaped)     AFTER_VALUE    value complete
 *   VALUE_SCALAR blank ',' '}'      AFTER_VALUE    value complete, byte re-read
 *   VALUE_NESTED brackets balance   AFTER_VALUE    (strings inside are skipped)
 *   AFTER_VALUE ','                 KEY_WAIT
 *   AFTER_VALUE '}'                 (done)
 *
 * Anything else marks the skim broken; it then ignores the rest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/jsonrpc.h"
#include "events/view.h"
#include "util/err.h"
#include "util/hash.h"
#include "util/text.h"
#include "util/banned.h"

/* ---- skim ---- */

enum {
    SK_KEY_WAIT = 0,
    SK_KEY,
    SK_COLON,
    SK_VALUE_WAIT,
    SK_VALUE_STR,
    SK_VALUE_SCALAR,
    SK_VALUE_NESTED,
    SK_AFTER_VALUE
};

enum { CAP_NONE = 0, CAP_ID, CAP_METHOD };

void jsonrpc_skim_init(struct jsonrpc_skim *s)
{
    memset(s, 0, sizeof(*s));
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void skim_capture(struct jsonrpc_skim *s, char c)
{
    if (s->capture == CAP_ID) {
        if (s->idlen < sizeof(s->id) - 1)
            s->id[s->idlen++] = c;
        else
            s->id_long = 1;
    } else if (s->capture == CAP_METHOD) {
        if (s->methodlen < sizeof(s->method) - 1)
            s->method[s->methodlen++] = c;
        else
            s->method_long = 1;
    }
}

static void skim_value_done(struct jsonrpc_skim *s)
{
    if (s->capture == CAP_ID) {
        s->id[s->idlen] = '\0';
        s->has_id = !s->id_long;
    } else if (s->capture == CAP_METHOD) {
        s->method[s->methodlen] = '\0';
        s->has_method = 1;
    }
    s->capture = CAP_NONE;
    s->state = SK_AFTER_VALUE;
}

static void skim_key_done(struct jsonrpc_skim *s)
{
    s->key[s->keylen] = '\0';
    s->capture = CAP_NONE;
    if (s->key_long)
        return;
    if (strcmp(s->key, "id") == 0) {
        s->capture = CAP_ID;
        s->idlen = 0;
        s->id_long = 0;
        s->has_id = 0;
    } else if (strcmp(s->key, "method") == 0) {
        s->capture = CAP_METHOD;
        s->methodlen = 0;
        s->method_long = 0;
    } else if (strcmp(s->key, "result") == 0) {
        s->has_result = 1;
    } else if (strcmp(s->key, "error") == 0) {
        s->has_error = 1;
    }
}

static void skim_byte(struct jsonrpc_skim *s, char c)
{
    if (!s->started) {
        if (is_blank(c))
            return;
        s->started = 1;
        if (c == '{') {
            s->is_object = 1;
            s->state = SK_KEY_WAIT;
        } else {
            s->is_array = c == '[';
            s->broken = 1;
        }
        return;
    }
    switch (s->state) {
    case SK_KEY_WAIT:
        if (is_blank(c))
            return;
        if (c == '"') {
            s->state = SK_KEY;
            s->keylen = 0;
            s->key_long = 0;
            s->esc = 0;
        } else if (c == '}') {
            s->done = 1;
        } else {
            s->broken = 1;
        }
        return;
    case SK_KEY:
        if (s->esc) {
            s->esc = 0;
        } else if (c == '\\') {
            s->esc = 1;
        } else if (c == '"') {
            s->state = SK_COLON;
            return;
        }
        if (s->keylen < sizeof(s->key) - 1)
            s->key[s->keylen++] = c;
        else
            s->key_long = 1;
        return;
    case SK_COLON:
        if (is_blank(c))
            return;
        if (c == ':') {
            skim_key_done(s);
            s->state = SK_VALUE_WAIT;
        } else {
            s->broken = 1;
        }
        return;
    case SK_VALUE_WAIT:
        if (is_blank(c))
            return;
        if (c == '"') {
            if (s->capture == CAP_ID)
                skim_capture(s, c);
            s->state = SK_VALUE_STR;
            s->esc = 0;
        } else if (c == '{' || c == '[') {
            s->state = SK_VALUE_NESTED;
            s->nest = 1;
            s->in_str = 0;
            s->esc = 0;
            if (s->capture == CAP_ID)
                s->id_long = 1; /* an id is never structured */
            s->capture = CAP_NONE;
        } else {
            skim_capture(s, c);
            s->state = SK_VALUE_SCALAR;
        }
        return;
    case SK_VALUE_STR:
        if (s->esc) {
            s->esc = 0;
            skim_capture(s, c);
            return;
        }
        if (c == '\\') {
            s->esc = 1;
            skim_capture(s, c);
            return;
        }
        if (c == '"') {
            if (s->capture == CAP_ID)
                skim_capture(s, c);
            skim_value_done(s);
            return;
        }
        skim_capture(s, c);
        return;
    case SK_VALUE_SCALAR:
        if (is_blank(c) || c == ',' || c == '}') {
            skim_value_done(s);
            skim_byte(s, c);
            return;
        }
        skim_capture(s, c);
        return;
    case SK_VALUE_NESTED:
        if (s->in_str) {
            if (s->esc)
                s->esc = 0;
            else if (c == '\\')
                s->esc = 1;
            else if (c == '"')
                s->in_str = 0;
            return;
        }
        if (c == '"')
            s->in_str = 1;
        else if (c == '{' || c == '[')
            s->nest++;
        else if ((c == '}' || c == ']') && --s->nest == 0)
            s->state = SK_AFTER_VALUE;
        return;
    case SK_AFTER_VALUE:
        if (is_blank(c))
            return;
        if (c == ',')
            s->state = SK_KEY_WAIT;
        else if (c == '}')
            s->done = 1;
        else
            s->broken = 1;
        return;
    }
}

void jsonrpc_skim_feed(struct jsonrpc_skim *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n && !s->broken && !s->done; i++)
        skim_byte(s, p[i]);
}

json_t *jsonrpc_skim_id(const struct jsonrpc_skim *s)
{
    json_t *v;

    if (!s->has_id || s->idlen == 0)
        return NULL;
    v = json_loadb(s->id, s->idlen, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (v && !json_is_string(v) && !json_is_number(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

/* ---- lax scan ---- */

/* The string starting at p[*i] (a '"'): moves *i past its closing quote. Escapes are checked
 * for their form only (a lone surrogate is fine); bytes >= 0x80 are taken as they are, since
 * a UTF-8 decoder never swallows an ASCII byte into an invalid sequence. Raw controls are not
 * JSON. *esc is set when the string holds a backslash. 0, or ERR_PARSE (not a JSON string). */
static const unsigned char lax_str_special[256] = {
    [0 ... 0x1f] = 1,
    ['"'] = 1,
    ['\\'] = 1,
};

static int lax_string(const char *p, size_t n, size_t *i, int *esc)
{
    size_t k = *i + 1;

    const unsigned char *u = (const unsigned char *)p;

    for (; k < n; k++) {
        unsigned char c;
        /* the plain bytes, eight a branch (a 16 KiB argument is one string), then one by one */
        while (n - k >= 8 &&
               (lax_str_special[u[k]] | lax_str_special[u[k + 1]] | lax_str_special[u[k + 2]] |
                lax_str_special[u[k + 3]] | lax_str_special[u[k + 4]] | lax_str_special[u[k + 5]] |
                lax_str_special[u[k + 6]] | lax_str_special[u[k + 7]]) == 0)
            k += 8;
        while (k < n && !lax_str_special[u[k]])
            k++;
        if (k >= n)
            break;
        c = (unsigned char)p[k];
        if (c == '"') {
            *i = k + 1;
            return 0;
        }
        if (c < 0x20)
            return ERR_PARSE;
        if (c != '\\')
            continue;
        *esc = 1;
        if (++k >= n)
            return ERR_PARSE;
        switch (p[k]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            break;
        case 'u':
            for (int j = 0; j < 4; j++) {
                char h = ++k < n ? p[k] : '\0';
                if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')))
                    return ERR_PARSE;
            }
            break;
        default:
            return ERR_PARSE;
        }
    }
    return ERR_PARSE;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A number of any magnitude: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; moves *i past it.
 * 0, or ERR_PARSE. */
static int lax_number(const char *p, size_t n, size_t *i)
{
    size_t k = *i;

    if (k < n && p[k] == '-')
        k++;
    if (k < n && p[k] == '0')
        k++;
    else if (k < n && is_digit(p[k]))
        while (k < n && is_digit(p[k]))
            k++;
    else
        return ERR_PARSE;
    if (k < n && p[k] == '.') {
        if (++k >= n || !is_digit(p[k]))
            return ERR_PARSE;
        while (k < n && is_digit(p[k]))
            k++;
    }
    if (k < n && (p[k] == 'e' || p[k] == 'E')) {
        k++;
        if (k < n && (p[k] == '+' || p[k] == '-'))
            k++;
        if (k >= n || !is_digit(p[k]))
            return ERR_PARSE;
        while (k < n && is_digit(p[k]))
            k++;
    }
    *i = k;
    return 0;
}

/* The literal w at p[*i]: moves *i past it. 0, or ERR_PARSE. */
static int lax_word(const char *p, size_t n, size_t *i, const char *w)
{
    size_t l = strlen(w);

    if (n - *i < l || memcmp(p + *i, w, l) != 0)
        return ERR_PARSE;
    *i += l;
    return 0;
}

static size_t lax_blank(const char *p, size_t n, size_t i)
{
    while (i < n && is_blank(p[i]))
        i++;
    return i;
}

/* The key at p[off..off+len) (with its quotes) equals key, decoded. */
static int lax_key_is(const char *p, size_t off, size_t len, int esc, const char *key)
{
    size_t kl = strlen(key);
    json_t *v;
    int eq;

    if (!esc)
        return len == kl + 2 && memcmp(p + off + 1, key, kl) == 0;
    v = json_loadb(p + off, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    eq = json_is_string(v) && json_string_length(v) == kl &&
         memcmp(json_string_value(v), key, kl) == 0;
    json_decref(v);
    return eq;
}

enum { LX_NONE = 0, LX_VERSION, LX_ID, LX_METHOD, LX_PARAMS, LX_RESULT, LX_ERROR };

static int lax_field(const char *p, size_t off, size_t len, int esc)
{
    static const char *const names[] = {NULL,     "jsonrpc", "id",   "method",
                                        "params", "result",  "error"};
    for (int f = LX_VERSION; f <= LX_ERROR; f++)
        if (lax_key_is(p, off, len, esc, names[f]))
            return f;
    return LX_NONE;
}

static struct jsonrpc_span *lax_slot(struct jsonrpc_lax *out, int f)
{
    switch (f) {
    case LX_VERSION:
        return &out->version;
    case LX_ID:
        return &out->id;
    case LX_METHOD:
        return &out->method;
    case LX_PARAMS:
        return &out->params;
    case LX_RESULT:
        return &out->result;
    case LX_ERROR:
        return &out->error;
    }
    return NULL;
}

static char lax_type(char c)
{
    switch (c) {
    case '"':
        return 's';
    case '{':
        return 'o';
    case '[':
        return 'a';
    case 't':
        return 't';
    case 'f':
        return 'f';
    case 'n':
        return 'z';
    }
    return 'n';
}

/*
 * One pass, no recursion: a bit per open level (1 object, 0 array) on a stack that starts in
 * the frame and moves to the heap past 4096 levels.
 *
 *   state   byte                       next
 *   VALUE   '{'                        KEY (or AFTER on '}')
 *   VALUE   '['                        VALUE (or AFTER on ']')
 *   VALUE   string, number, word       AFTER
 *   AFTER   (depth 0) end of text      accept
 *   AFTER   ',' in an object / array   KEY / VALUE
 *   AFTER   '}' / ']' closing its kind AFTER, one level up
 *   KEY     string ':'                 VALUE
 */
int jsonrpc_lax_scan(const char *p, size_t n, struct jsonrpc_lax *out)
{
    uint64_t small[64], *stack = small;
    size_t cap = sizeof(small) * 8, depth = 0, i, vstart = 0, kstart;
    int field = LX_NONE, rc = ERR_PARSE, esc;
    enum { ST_VALUE, ST_AFTER, ST_KEY } st = ST_VALUE;

    memset(out, 0, sizeof(*out));
    i = lax_blank(p, n, 0);
    if (i < n)
        out->type = lax_type(p[i]);
    for (;;) {
        char c;
        if (st == ST_VALUE) {
            i = lax_blank(p, n, i);
            if (i >= n)
                goto done;
            c = p[i];
            if (depth == 1)
                vstart = i;
            if (c == '{' || c == '[') {
                if (depth == cap) {
                    uint64_t *bigger = xmalloc(cap / 4);
                    memcpy(bigger, stack, cap / 8);
                    if (stack != small)
                        free(stack);
                    stack = bigger;
                    cap *= 2;
                }
                if (c == '{')
                    stack[depth / 64] |= (uint64_t)1 << (depth % 64);
                else
                    stack[depth / 64] &= ~((uint64_t)1 << (depth % 64));
                depth++;
                i = lax_blank(p, n, i + 1);
                if (i < n && p[i] == (c == '{' ? '}' : ']')) {
                    i++;
                    depth--;
                    st = ST_AFTER;
                } else {
                    st = c == '{' ? ST_KEY : ST_VALUE;
                }
                continue;
            }
            esc = 0;
            if ((c == '"' && lax_string(p, n, &i, &esc) < 0) ||
                (c == 't' && lax_word(p, n, &i, "true") < 0) ||
                (c == 'f' && lax_word(p, n, &i, "false") < 0) ||
                (c == 'n' && lax_word(p, n, &i, "null") < 0) ||
                ((c == '-' || is_digit(c)) && lax_number(p, n, &i) < 0) ||
                !(c == '"' || c == 't' || c == 'f' || c == 'n' || c == '-' || is_digit(c)))
                goto done;
            st = ST_AFTER;
            continue;
        }
        if (st == ST_AFTER) {
            int in_obj;
            if (depth == 1 && field != LX_NONE && (stack[0] & 1)) {
                struct jsonrpc_span *sp = lax_slot(out, field);
                sp->off = vstart;
                sp->len = i - vstart;
                sp->type = lax_type(p[vstart]);
                field = LX_NONE;
            }
            i = lax_blank(p, n, i);
            if (depth == 0) {
                rc = i == n ? 0 : ERR_PARSE;
                goto done;
            }
            if (i >= n)
                goto done;
            c = p[i++];
            in_obj = (stack[(depth - 1) / 64] >> ((depth - 1) % 64)) & 1;
            if (c == ',') {
                st = in_obj ? ST_KEY : ST_VALUE;
            } else if (c == (in_obj ? '}' : ']')) {
                depth--;
            } else {
                goto done;
            }
            continue;
        }
        /* ST_KEY */
        i = lax_blank(p, n, i);
        if (i >= n || p[i] != '"')
            goto done;
        kstart = i;
        esc = 0;
        if (lax_string(p, n, &i, &esc) < 0)
            goto done;
        if (depth == 1)
            field = lax_field(p, kstart, i - kstart, esc);
        i = lax_blank(p, n, i);
        if (i >= n || p[i] != ':')
            goto done;
        i++;
        st = ST_VALUE;
    }
done:
    if (stack != small)
        free(stack);
    if (rc < 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

/* The index just past the closing quote of the string that opens at p[i] (a '"') in a text
 * the scan accepted: memchr to each quote, which ends the string unless an odd run of
 * backslashes escapes it. */
static size_t lax_string_end(const char *p, size_t n, size_t i)
{
    const char *q = p + i + 1, *end = p + n;

    while (q < end && (q = memchr(q, '"', (size_t)(end - q))) != NULL) {
        size_t bs = 0;
        while (q - bs > p + i + 1 && q[-1 - (ptrdiff_t)bs] == '\\')
            bs++;
        if (bs % 2 == 0)
            return (size_t)(q - p) + 1;
        q++;
    }
    return n;
}

/* Moves *i past the value at p[*i] of a text the scan accepted. */
static void lax_skip(const char *p, size_t n, size_t *i)
{
    size_t nest = 0;

    if (p[*i] == '"') {
        *i = lax_string_end(p, n, *i);
        return;
    }
    if (p[*i] != '{' && p[*i] != '[') {
        while (*i < n && !is_blank(p[*i]) && p[*i] != ',' && p[*i] != '}' && p[*i] != ']')
            (*i)++;
        return;
    }
    for (; *i < n; (*i)++) {
        char c = p[*i];
        if (c == '"') {
            *i = lax_string_end(p, n, *i) - 1; /* at the closing quote */
        } else if (c == '{' || c == '[') {
            nest++;
        } else if ((c == '}' || c == ']') && --nest == 0) {
            (*i)++;
            return;
        }
    }
}

int jsonrpc_lax_member(const char *p, const struct jsonrpc_span *obj, const char *key,
                       struct jsonrpc_span *out)
{
    size_t n, i, kstart;
    int found = 0;

    if (obj == NULL || obj->type != 'o')
        return 0;
    n = obj->off + obj->len;
    i = lax_blank(p, n, obj->off + 1);
    while (i < n && p[i] == '"') {
        int esc = 0, match;
        kstart = i;
        lax_string(p, n, &i, &esc);
        match = lax_key_is(p, kstart, i - kstart, esc, key);
        i = lax_blank(p, n, i) + 1; /* the ':' */
        i = lax_blank(p, n, i);
        if (i >= n)
            break;
        if (match) {
            out->off = i;
            out->type = lax_type(p[i]);
            found = 1;
        }
        lax_skip(p, n, &i);
        if (match)
            out->len = i - out->off;
        i = lax_blank(p, n, i);
        if (i < n && p[i] == ',')
            i = lax_blank(p, n, i + 1);
    }
    return found;
}

int jsonrpc_lax_element(const char *p, const struct jsonrpc_span *arr, size_t *pos,
                        struct jsonrpc_span *out)
{
    size_t n, i;

    if (arr == NULL || arr->type != 'a')
        return 0;
    n = arr->off + arr->len;
    i = lax_blank(p, n, *pos == 0 ? arr->off + 1 : *pos);
    if (i < n && p[i] == ',')
        i = lax_blank(p, n, i + 1);
    if (i >= n || p[i] == ']')
        return 0;
    out->off = i;
    out->type = lax_type(p[i]);
    lax_skip(p, n, &i);
    out->len = i - out->off;
    *pos = i;
    return 1;
}

int jsonrpc_lax_path(const char *p, const struct jsonrpc_span *obj, const char *const *keys,
                     struct jsonrpc_span *out)
{
    struct jsonrpc_span cur = *obj;

    for (; *keys; keys++)
        if (!jsonrpc_lax_member(p, &cur, *keys, &cur))
            return 0;
    *out = cur;
    return 1;
}

json_t *jsonrpc_lax_value(const char *p, const struct jsonrpc_span *sp)
{
    json_t *v;

    if (sp == NULL || sp->type == 0 || sp->type == 'o' || sp->type == 'a')
        return NULL;
    /* Every line's id comes through here: the common shapes without jansson's parser (the
     * same values it makes of them; anything else goes to it). */
    if (sp->type == 'n' && sp->len > 0 && sp->len <= 18) {
        const char *q = p + sp->off, *end = q + sp->len;
        int neg = *q == '-';
        long long x = 0;
        for (q += neg; q < end && *q >= '0' && *q <= '9'; q++)
            x = x * 10 + (*q - '0');
        if (q == end && end - (p + sp->off) > neg &&
            !(p[sp->off + neg] == '0' && end - (p + sp->off) > neg + 1)) /* no leading 0 */
            return json_integer(neg ? -x : x);
    }
    if (sp->type == 's' && sp->len >= 2 && memchr(p + sp->off, '\\', sp->len) == NULL)
        return json_stringn(p + sp->off + 1, sp->len - 2); /* NULL when not UTF-8, as jansson */
    v = json_loadb(p + sp->off, sp->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (v == NULL && sp->type == 'n')
        v = json_loadb(p + sp->off, sp->len,
                       JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
    return v;
}

/* ---- framing ---- */

void jsonrpc_framer_init(struct jsonrpc_framer *f, size_t max_line)
{
    memset(f, 0, sizeof(*f));
    buf_init(&f->in, 0);
    f->max_line = max_line ? max_line : 1;
    jsonrpc_skim_init(&f->skim);
}

void jsonrpc_framer_release(struct jsonrpc_framer *f)
{
    buf_release(&f->in);
    f->start = f->scan = 0;
}

static void framer_compact(struct jsonrpc_framer *f)
{
    if (f->start == 0)
        return;
    buf_consume(&f->in, f->start);
    f->scan -= f->start;
    f->start = 0;
}

char *jsonrpc_framer_reserve(struct jsonrpc_framer *f, size_t n)
{
    framer_compact(f);
    if (buf_grow(&f->in, n) < 0)
        return NULL; /* cannot happen: the buffer has the default (1 GiB) max and is drained */
    return f->in.data + f->in.len;
}

void jsonrpc_framer_commit(struct jsonrpc_framer *f, size_t n)
{
    f->in.len += n;
    f->in.data[f->in.len] = '\0';
}

void jsonrpc_framer_feed(struct jsonrpc_framer *f, const void *p, size_t n)
{
    char *dst = jsonrpc_framer_reserve(f, n);
    if (dst == NULL)
        return;
    memcpy(dst, p, n);
    jsonrpc_framer_commit(f, n);
}

enum jsonrpc_frame jsonrpc_framer_next(struct jsonrpc_framer *f, const char **line, size_t *len)
{
    const char *base = f->in.data + f->start;
    size_t avail = f->in.len - f->start;
    size_t from = f->scan - f->start;
    const char *nl = avail > from ? memchr(base + from, '\n', avail - from) : NULL;

    *line = NULL;
    *len = 0;
    if (f->discarding) {
        size_t upto = nl ? (size_t)(nl - base) : avail;
        jsonrpc_skim_feed(&f->skim, base, upto);
        f->dropped += upto;
        if (nl == NULL) {
            f->start = f->scan = f->in.len;
            return JSONRPC_FRAME_NONE;
        }
        f->start += upto + 1;
        f->scan = f->start;
        f->discarding = 0;
        *len = (size_t)f->dropped;
        return JSONRPC_FRAME_TOO_LONG;
    }
    if (nl != NULL && (size_t)(nl - base) <= f->max_line) {
        *line = base;
        *len = (size_t)(nl - base);
        f->start += *len + 1;
        f->scan = f->start;
        return JSONRPC_FRAME_LINE;
    }
    if (nl == NULL && avail <= f->max_line) {
        f->scan = f->in.len;
        return JSONRPC_FRAME_NONE;
    }
    /* Over the limit: from here on its bytes are skimmed and dropped. */
    f->discarding = 1;
    f->dropped = 0;
    jsonrpc_skim_init(&f->skim);
    return jsonrpc_framer_next(f, line, len);
}

uint64_t jsonrpc_framer_finish(struct jsonrpc_framer *f, const char **line, size_t *held)
{
    uint64_t n = (uint64_t)(f->in.len - f->start);

    *line = NULL;
    *held = 0;
    if (f->discarding) {
        jsonrpc_skim_feed(&f->skim, f->in.data + f->start, f->in.len - f->start);
        n += f->dropped;
        f->discarding = 0;
    } else if (n > 0) {
        *line = f->in.data + f->start;
        *held = (size_t)n;
    }
    f->start = f->scan = f->in.len;
    return n;
}

/* ---- classification ---- */

const char *jsonrpc_kind_name(enum jsonrpc_kind k)
{
    switch (k) {
    case JSONRPC_EMPTY:
        return "empty";
    case JSONRPC_NOT_JSON:
        return "not_json";
    case JSONRPC_NOT_RPC:
        return "not_jsonrpc";
    case JSONRPC_REQUEST:
        return "request";
    case JSONRPC_NOTIFICATION:
        return "notification";
    case JSONRPC_RESPONSE:
        return "response";
    case JSONRPC_ERROR:
        return "error";
    case JSONRPC_BATCH:
        return "batch";
    }
    return "unknown";
}

static enum jsonrpc_kind not_rpc(struct jsonrpc_msg *m, const char *why)
{
    snprintf(m->why, sizeof(m->why), "%s", why);
    m->id = NULL;
    m->method = NULL;
    m->params = m->result = m->error = NULL;
    m->flags &= JSONRPC_F_OPAQUE;
    return m->kind = JSONRPC_NOT_RPC;
}

static int id_type_ok(const json_t *id, unsigned *flags)
{
    if (json_is_string(id) || json_is_integer(id))
        return 1;
    if (json_is_real(id)) {
        *flags |= JSONRPC_F_REAL_ID;
        return 1;
    }
    return 0;
}

enum jsonrpc_kind jsonrpc_classify(json_t *v, struct jsonrpc_msg *m)
{
    json_t *ver, *method;

    memset(m, 0, sizeof(*m));
    if (json_is_array(v)) {
        if (json_array_size(v) == 0)
            return not_rpc(m, "empty batch");
        return m->kind = JSONRPC_BATCH;
    }
    if (!json_is_object(v))
        return not_rpc(m, "not an object");
    ver = json_object_get(v, "jsonrpc");
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0)
        m->flags |= JSONRPC_F_NO_VERSION;
    m->id = json_object_get(v, "id");
    method = json_object_get(v, "method");
    m->result = json_object_get(v, "result");
    m->error = json_object_get(v, "error");
    if (method != NULL) {
        if (!json_is_string(method))
            return not_rpc(m, "method is not a string");
        if (m->result || m->error)
            return not_rpc(m, "both a method and a result or error");
        m->method = json_string_value(method);
        m->params = json_object_get(v, "params");
        if (m->params && !json_is_object(m->params) && !json_is_array(m->params))
            m->flags |= JSONRPC_F_BAD_PARAMS;
        if (m->id == NULL)
            return m->kind = JSONRPC_NOTIFICATION;
        if (json_is_null(m->id))
            m->flags |= JSONRPC_F_NULL_ID;
        else if (!id_type_ok(m->id, &m->flags))
            return not_rpc(m, "id is not a string or a number");
        return m->kind = JSONRPC_REQUEST;
    }
    if (m->result && m->error)
        return not_rpc(m, "both a result and an error");
    if (m->result) {
        if (m->id == NULL || json_is_null(m->id))
            return not_rpc(m, "result without an id");
        if (!id_type_ok(m->id, &m->flags))
            return not_rpc(m, "id is not a string or a number");
        return m->kind = JSONRPC_RESPONSE;
    }
    if (m->error) {
        json_t *code = json_object_get(m->error, "code");
        json_t *msg = json_object_get(m->error, "message");
        if (!json_is_object(m->error) || !json_is_integer(code) || !json_is_string(msg))
            m->flags |= JSONRPC_F_BAD_ERROR;
        if (m->id == NULL || json_is_null(m->id)) {
            m->flags |= JSONRPC_F_NULL_ID;
            m->id = NULL;
        } else if (!id_type_ok(m->id, &m->flags)) {
            return not_rpc(m, "id is not a string or a number");
        }
        return m->kind = JSONRPC_ERROR;
    }
    return not_rpc(m, "neither a method, a result nor an error");
}

enum jsonrpc_kind jsonrpc_parse(const char *line, size_t len, struct jsonrpc_msg *m)
{
    json_error_t je;
    json_t *root;
    size_t i;

    memset(m, 0, sizeof(*m));
    for (i = 0; i < len && is_blank(line[i]); i++)
        ;
    if (i == len)
        return m->kind = JSONRPC_EMPTY;
    m->root = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (m->root == NULL && strstr(je.text, "too big") != NULL)
        m->root =
            json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &je);
    if (m->root == NULL) {
        snprintf(m->why, sizeof(m->why), "column %d: %.160s", je.column, JE_TEXT(je));
        return m->kind = JSONRPC_NOT_JSON;
    }
    root = m->root;
    jsonrpc_classify(root, m);
    m->root = root;
    return m->kind;
}

/* 1 when the string at *sp decodes to s ("2\u002e0" is "2.0", as jansson reads it). */
static int lax_string_is(const char *p, const struct jsonrpc_span *sp, const char *s)
{
    json_t *v = jsonrpc_lax_value(p, sp);
    int eq = json_is_string(v) && strcmp(json_string_value(v), s) == 0;

    json_decref(v);
    return eq;
}

/* Classifies a text the lax scan accepted, as jsonrpc_classify does a tree. */
static enum jsonrpc_kind lax_classify(const char *line, struct jsonrpc_msg *m)
{
    const struct jsonrpc_lax *lx = &m->lax;

    m->flags = JSONRPC_F_OPAQUE;
    if (lx->type == 'a')
        return m->kind = JSONRPC_BATCH; /* "[]" is not opaque: jansson takes it */
    if (lx->type != 'o')
        return not_rpc(m, "not an object");
    if (lx->version.type != 's' ||
        !(lx->version.len == 5 ? memcmp(line + lx->version.off, "\"2.0\"", 5) == 0
                               : lax_string_is(line, &lx->version, "2.0")))
        m->flags |= JSONRPC_F_NO_VERSION;
    if (lx->id.type == 'z' || lx->id.type == 's' || lx->id.type == 'n') {
        m->own_id = jsonrpc_lax_value(line, &lx->id);
        if (m->own_id == NULL)
            m->flags |= JSONRPC_F_OPAQUE_ID;
        else if (json_is_real(m->own_id))
            m->flags |= JSONRPC_F_REAL_ID;
    }
    m->id = m->own_id;
    if (lx->method.type != 0) {
        json_t *v;
        if (lx->method.type != 's')
            return not_rpc(m, "method is not a string");
        if (lx->result.type || lx->error.type)
            return not_rpc(m, "both a method and a result or error");
        v = jsonrpc_lax_value(line, &lx->method);
        if (v)
            m->own_method = xstrdup(json_string_value(v));
        else /* undecodable: its raw text, only ever compared and quoted */
            m->own_method = xstrndup(line + lx->method.off + 1, lx->method.len - 2);
        json_decref(v);
        m->method = m->own_method;
        if (lx->params.type && lx->params.type != 'o' && lx->params.type != 'a')
            m->flags |= JSONRPC_F_BAD_PARAMS;
        if (lx->id.type == 0)
            return m->kind = JSONRPC_NOTIFICATION;
        if (lx->id.type == 'z')
            m->flags |= JSONRPC_F_NULL_ID;
        else if (lx->id.type != 's' && lx->id.type != 'n')
            return not_rpc(m, "id is not a string or a number");
        return m->kind = JSONRPC_REQUEST;
    }
    if (lx->result.type && lx->error.type)
        return not_rpc(m, "both a result and an error");
    if (lx->result.type) {
        if (lx->id.type == 0 || lx->id.type == 'z')
            return not_rpc(m, "result without an id");
        if (lx->id.type != 's' && lx->id.type != 'n')
            return not_rpc(m, "id is not a string or a number");
        return m->kind = JSONRPC_RESPONSE;
    }
    if (lx->error.type) {
        struct jsonrpc_span code, msg;
        if (!jsonrpc_lax_member(line, &lx->error, "code", &code) || code.type != 'n' ||
            memchr(line + code.off, '.', code.len) || memchr(line + code.off, 'e', code.len) ||
            memchr(line + code.off, 'E', code.len) ||
            !jsonrpc_lax_member(line, &lx->error, "message", &msg) || msg.type != 's')
            m->flags |= JSONRPC_F_BAD_ERROR;
        if (lx->id.type == 0 || lx->id.type == 'z') {
            m->flags |= JSONRPC_F_NULL_ID;
            m->flags &= ~(unsigned)JSONRPC_F_OPAQUE_ID;
            json_decref(m->own_id);
            m->own_id = m->id = NULL;
        } else if (lx->id.type != 's' && lx->id.type != 'n') {
            return not_rpc(m, "id is not a string or a number");
        }
        return m->kind = JSONRPC_ERROR;
    }
    return not_rpc(m, "neither a method, a result nor an error");
}

enum jsonrpc_kind jsonrpc_parse_lax(const char *line, size_t len, struct jsonrpc_msg *m)
{
    struct jsonrpc_lax lx;

    if (jsonrpc_parse(line, len, m) != JSONRPC_NOT_JSON || jsonrpc_lax_scan(line, len, &lx) < 0)
        return m->kind;
    m->lax = lx;
    return lax_classify(line, m);
}

enum jsonrpc_kind jsonrpc_parse_scan(const char *line, size_t len, struct jsonrpc_msg *m)
{
    memset(m, 0, sizeof(*m));
    if (events_json_check(line, len) == 0 && jsonrpc_lax_scan(line, len, &m->lax) == 0 &&
        m->lax.type == 'o') {
        lax_classify(line, m);
        if (m->kind != JSONRPC_NOT_RPC && !(m->flags & JSONRPC_F_OPAQUE_ID)) {
            m->flags = (m->flags & ~(unsigned)JSONRPC_F_OPAQUE) | JSONRPC_F_SCANNED;
            return m->kind;
        }
        jsonrpc_msg_release(m); /* what jansson says of it, in its words */
    }
    return jsonrpc_parse_lax(line, len, m);
}

enum jsonrpc_kind jsonrpc_msg_tree(struct jsonrpc_msg *m, const char *line, size_t len)
{
    if (!(m->flags & JSONRPC_F_SCANNED))
        return m->kind;
    jsonrpc_msg_release(m);
    return jsonrpc_parse_lax(line, len, m);
}

void jsonrpc_msg_release(struct jsonrpc_msg *m)
{
    json_decref(m->root);
    json_decref(m->own_id);
    free(m->own_method);
    memset(m, 0, sizeof(*m));
}

/* ---- ids ---- */

int jsonrpc_id_key(const json_t *id, struct buf *out)
{
    if (json_is_integer(id)) {
        /* every request and reply looks its id up: digits by hand, not a printf */
        char d[24], *p = d + sizeof(d);
        long long v = (long long)json_integer_value(id);
        unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
        do
            *--p = (char)('0' + u % 10);
        while ((u /= 10) > 0);
        if (v < 0)
            *--p = '-';
        *--p = ':';
        *--p = 'n';
        return buf_add(out, p, (size_t)(d + sizeof(d) - p));
    }
    if (json_is_string(id)) {
        int rc = buf_adds(out, "s:");
        return rc ? rc : buf_add(out, json_string_value(id), json_string_length(id));
    }
    if (json_is_real(id))
        return buf_addf(out, "r:%.17g", json_real_value(id));
    if (id == NULL || json_is_null(id))
        return buf_adds(out, "null");
    return ERR_INVALID;
}

struct jsonrpc_idmap_entry {
    struct jsonrpc_idmap_entry *next;
    uint64_t hash;
    void *value;
    size_t keylen;
    char key[];
};

void jsonrpc_idmap_init(struct jsonrpc_idmap *m, size_t max)
{
    memset(m, 0, sizeof(*m));
    m->max = max;
    buf_init(&m->key, 0);
}

void jsonrpc_idmap_release(struct jsonrpc_idmap *m, void (*free_value)(void *))
{
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct jsonrpc_idmap_entry *e = m->buckets[i], *next;
        for (; e; e = next) {
            next = e->next;
            if (free_value)
                free_value(e->value);
            free(e);
        }
    }
    free(m->buckets);
    buf_release(&m->key);
    m->buckets = NULL;
    m->nbuckets = m->count = 0;
}

static int idmap_key(struct jsonrpc_idmap *m, const json_t *id, uint64_t *h)
{
    buf_reset(&m->key);
    if (id == NULL || jsonrpc_id_key(id, &m->key) < 0)
        return ERR_INVALID;
    *h = hash64(m->key.data, m->key.len, 0x6a736f6e727063ULL);
    return 0;
}

static struct jsonrpc_idmap_entry **idmap_find(struct jsonrpc_idmap *m, uint64_t h)
{
    struct jsonrpc_idmap_entry **pp;

    if (m->nbuckets == 0)
        return NULL;
    for (pp = &m->buckets[h & (m->nbuckets - 1)]; *pp; pp = &(*pp)->next)
        if ((*pp)->hash == h && (*pp)->keylen == m->key.len &&
            memcmp((*pp)->key, m->key.data, m->key.len) == 0)
            return pp;
    return NULL;
}

static void idmap_grow(struct jsonrpc_idmap *m)
{
    size_t n = m->nbuckets ? m->nbuckets * 2 : 16;
    struct jsonrpc_idmap_entry **b = xcalloc(n, sizeof(*b));

    for (size_t i = 0; i < m->nbuckets; i++) {
        struct jsonrpc_idmap_entry *e = m->buckets[i], *next;
        for (; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
}

void *jsonrpc_idmap_get(struct jsonrpc_idmap *m, const json_t *id)
{
    struct jsonrpc_idmap_entry **pp;
    uint64_t h;

    if (idmap_key(m, id, &h) < 0)
        return NULL;
    pp = idmap_find(m, h);
    return pp ? (*pp)->value : NULL;
}

int jsonrpc_idmap_put(struct jsonrpc_idmap *m, const json_t *id, void *value)
{
    struct jsonrpc_idmap_entry *e;
    uint64_t h;

    if (idmap_key(m, id, &h) < 0)
        return ERR_INVALID;
    if (idmap_find(m, h))
        return ERR_INVALID;
    if (m->count >= m->max)
        return ERR_LIMIT;
    if (m->count >= m->nbuckets / 2 + m->nbuckets / 4)
        idmap_grow(m);
    e = xmalloc(sizeof(*e) + m->key.len);
    e->hash = h;
    e->value = value;
    e->keylen = m->key.len;
    memcpy(e->key, m->key.data, m->key.len);
    e->next = m->buckets[h & (m->nbuckets - 1)];
    m->buckets[h & (m->nbuckets - 1)] = e;
    m->count++;
    return 0;
}

void *jsonrpc_idmap_take(struct jsonrpc_idmap *m, const json_t *id)
{
    struct jsonrpc_idmap_entry **pp, *e;
    void *v;
    uint64_t h;

    if (idmap_key(m, id, &h) < 0)
        return NULL;
    pp = idmap_find(m, h);
    if (pp == NULL)
        return NULL;
    e = *pp;
    *pp = e->next;
    v = e->value;
    free(e);
    m->count--;
    return v;
}

size_t jsonrpc_idmap_count(const struct jsonrpc_idmap *m)
{
    return m->count;
}

void jsonrpc_idmap_each(struct jsonrpc_idmap *m, void (*fn)(void *value, void *ctx), void *ctx)
{
    for (size_t i = 0; i < m->nbuckets; i++)
        for (struct jsonrpc_idmap_entry *e = m->buckets[i]; e; e = e->next)
            fn(e->value, ctx);
}

/* ---- building ---- */

/* json_dump_callback's callback: 0, or nonzero to stop the dump (buf_add's ERR_LIMIT or
 * ERR_NOMEM; jansson only tests for nonzero). */
static int dump_to_buf(const char *p, size_t n, void *data)
{
    return buf_add(data, p, n);
}

int jsonrpc_write(struct buf *out, const json_t *v)
{
    size_t before = out->len;

    if (json_dump_callback(v, dump_to_buf, out, JSON_COMPACT | JSON_ENCODE_ANY) < 0 ||
        buf_addc(out, '\n') < 0) {
        buf_truncate(out, before);
        return ERR_LIMIT;
    }
    return 0;
}

static json_t *id_copy(const json_t *id)
{
    return id ? json_deep_copy(id) : json_null();
}

json_t *jsonrpc_make_error(const json_t *id, int code, const char *message, json_t *data)
{
    json_t *err = json_object();

    json_object_set_new(err, "code", json_integer(code));
    json_object_set_new(err, "message", json_string(message));
    if (err && json_object_get(err, "message") == NULL)
        json_object_set_new(err, "message", json_string("error")); /* message not UTF-8 */
    if (data)
        json_object_set_new(err, "data", data);
    return json_pack("{s:s, s:o, s:o}", "jsonrpc", "2.0", "id", id_copy(id), "error", err);
}

json_t *jsonrpc_make_result(const json_t *id, json_t *result)
{
    return json_pack("{s:s, s:o, s:o}", "jsonrpc", "2.0", "id", id_copy(id), "result",
                     result ? result : json_object());
}

json_t *jsonrpc_make_request(const json_t *id, const char *method, json_t *params)
{
    json_t *m = json_pack("{s:s, s:o, s:s}", "jsonrpc", "2.0", "id", id_copy(id), "method", method);
    if (params)
        json_object_set_new(m, "params", params);
    return m;
}

json_t *jsonrpc_make_notification(const char *method, json_t *params)
{
    json_t *m = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
    if (params)
        json_object_set_new(m, "params", params);
    return m;
}
