/*
 * events: the repetition's event log, JSONL (docs/events.md).
 *
 * Writer (events_append): build a new object with the stamped fields first (t, seq, run, src,
 * kind) and the caller's other values after them (shared, not copied); check whether anything
 * needs redacting (a dry run of the redaction walk) and only then deep-copy and redact; dump it
 * compactly into the writer's reusable buffer; when the line is over EVENTS_LINE_MAX, cut the
 * biggest strings of a private copy (cut_line) or fall back to a small "truncated" object; add
 * the newline and write the whole line with one write(2) on an O_APPEND descriptor, so lines of
 * concurrent writers never interleave.
 *
 * Reader (events_next_line): one fixed buffer of READ_CHUNK + EVENTS_LINE_MAX bytes. Lines are
 * found with memchr and handed out in place; the partial line at the end of the buffer is moved
 * to the front before the next read(2). A line that outgrows EVENTS_LINE_MAX is counted once and
 * its bytes are discarded up to its newline (state `skipping`). events_next parses one line with
 * json_loadb and keeps it only when it is an object with a string kind.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events/events.h"
#include "events/view.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/redact.h"
#include "util/timeutil.h"
#include "util/text.h"
#include "util/utf8.h"
#include "util/banned.h"

#define KIND_MAX 256
#define REDACT_DEPTH_MAX 256
#define REDACTED REDACT_MARK
#define READ_CHUNK (256 * 1024)
#define CUT_ROUNDS 32
#define CUT_MIN 64                  /* strings this short are not worth cutting */
#define RAW_KEY "\001faultline.raw" /* a raw value's wrapper: {RAW_KEY: text} */
#define RAW_FIELDS_MAX 8            /* raw fields an event writes as text; more go through a tree */

struct events_writer {
    int fd;
    char *path, *run, *src;
    char *run_json, *src_json; /* run and src as JSON text, made once (fast_line) */
    uint64_t seq;
    json_t *run_v, *src_v;       /* and as JSON strings, made once (the stamped copy's) */
    struct redact_lits *secrets; /* events_add_secret; NULL until the first */
    struct buf line;
    int holding; /* events_hold: lines collect in batch until events_release */
    struct buf batch;
};

/* ---- redaction (the text rules are util/redact.c) --------------------------------------- */

static int secret_name(const char *name, size_t n)
{
    return redact_is_secret_name(name, n);
}

int events_is_secret_name(const char *name)
{
    return name != NULL && secret_name(name, strlen(name));
}

struct redact_ctx {
    const struct redact_lits *lits; /* registered secrets, or NULL */
    int apply;                      /* 0: only count */
    int count;
};

static void redact_string(struct redact_ctx *cx, json_t *v)
{
    struct buf b = BUF_INIT;

    if (!cx->apply) {
        if (redact_text(cx->lits, json_string_value(v), json_string_length(v), NULL) > 0)
            cx->count++;
        return;
    }
    if (redact_text(cx->lits, json_string_value(v), json_string_length(v), &b) > 0) {
        cx->count++;
        json_string_setn(v, b.data, b.len);
    }
    buf_release(&b);
}

/* An object key that holds a credential ({"sk-ant-...": 1}): renamed with it redacted. */
static void redact_keys(struct redact_ctx *cx, json_t *obj)
{
    const char *key;
    json_t *x;
    void *tmp;

    json_object_foreach_safe(obj, tmp, key, x)
    {
        size_t n = strlen(key);
        struct buf b = BUF_INIT;
        if (redact_text(cx->lits, key, n, NULL) == 0)
            continue;
        cx->count++;
        if (!cx->apply)
            continue;
        redact_text(cx->lits, key, n, &b);
        json_object_set(obj, b.data, x); /* x stays alive: obj still holds it under key */
        json_object_del(obj, key);
        buf_release(&b);
    }
}

static void redact_value(struct redact_ctx *cx, json_t *v, int depth);

/* Replaces the value at a secret-named place: counts it, and in apply mode returns the
 * replacement (a new reference), else NULL. Null and booleans carry no secret and stay. */
static int redact_slot(struct redact_ctx *cx, json_t *v)
{
    if (v == NULL || json_is_null(v) || json_is_boolean(v))
        return 0;
    if (json_is_string(v) && strcmp(json_string_value(v), REDACTED) == 0)
        return 0; /* already redacted */
    cx->count++;
    return cx->apply;
}

static int is_header_pair(json_t *a)
{
    json_t *name = json_array_get(a, 0);
    return json_array_size(a) == 2 && json_is_string(name) &&
           secret_name(json_string_value(name), json_string_length(name));
}

static void redact_value(struct redact_ctx *cx, json_t *v, int depth)
{
    const char *key;
    json_t *x;
    size_t i;

    if (depth > REDACT_DEPTH_MAX) {
        /* Too deep to inspect: treat it all as a secret rather than let one through. */
        if ((json_is_object(v) || json_is_array(v)) && redact_slot(cx, v)) {
            if (json_is_object(v))
                json_object_clear(v);
            else
                json_array_clear(v);
        }
        return;
    }
    if (json_is_string(v)) {
        redact_string(cx, v);
    } else if (json_is_object(v)) {
        json_t *name;
        redact_keys(cx, v);
        name = json_object_get(v, "name");
        int pair = json_is_string(name) && json_object_get(v, "value") != NULL &&
                   secret_name(json_string_value(name), json_string_length(name));
        json_object_foreach(v, key, x)
        {
            if (secret_name(key, strlen(key)) || (pair && strcmp(key, "value") == 0)) {
                if (redact_slot(cx, x))
                    json_object_set_new(v, key, json_string(REDACTED));
            } else {
                redact_value(cx, x, depth + 1);
            }
        }
    } else if (json_is_array(v)) {
        if (is_header_pair(v)) {
            if (redact_slot(cx, json_array_get(v, 1)))
                json_array_set_new(v, 1, json_string(REDACTED));
            return;
        }
        json_array_foreach(v, i, x) redact_value(cx, x, depth + 1);
    }
}

int events_redact(json_t *ev)
{
    struct redact_ctx cx = {NULL, 1, 0};

    if (ev != NULL)
        redact_value(&cx, ev, 0);
    return cx.count;
}

static int dump_cb(const char *p, size_t n, void *data);

/* ---- raw values (events.h) ----------------------------------------------------------------- */

json_t *events_raw_new_checked(const char *p, size_t n)
{
    json_t *w = json_object();

    json_object_set_new(w, RAW_KEY, json_stringn_nocheck(p, n));
    return w;
}

json_t *events_raw_new(const char *p, size_t n)
{
    if (p == NULL || events_json_check(p, n) < 0)
        return NULL;
    return events_raw_new_checked(p, n);
}

const char *events_raw_text(const json_t *v, size_t *n)
{
    json_t *t;

    if (!json_is_object(v) || json_object_size(v) != 1 ||
        !json_is_string(t = json_object_get(v, RAW_KEY)))
        return NULL;
    *n = json_string_length(t);
    return json_string_value(t);
}

json_t *events_raw_tree(const json_t *v)
{
    size_t n;
    const char *p = events_raw_text(v, &n);

    return p ? json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
}

json_t *events_raw_shape(const json_t *v)
{
    size_t n, i = 0;
    const char *p = events_raw_text(v, &n);

    if (p == NULL)
        return NULL;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    switch (i < n ? p[i] : 'n') {
    case '{':
        return json_object();
    case '[':
        return json_array();
    case '"':
        return json_string("");
    case 't':
    case 'f':
        return json_true();
    case 'n':
        return json_null();
    }
    for (; i < n; i++)
        if (p[i] == '.' || p[i] == 'e' || p[i] == 'E')
            return json_real(0);
    return json_integer(0);
}

/* The string token at p[*i] (a '"') of a text events_json_check accepted: its body in
 * [*b, *b + *bl), *esc when it holds escapes; *i moves past the closing quote. */
static void raw_string(const char *p, size_t n, size_t *i, size_t *b, size_t *bl, int *esc)
{
    const char *q = p + *i + 1, *end = p + n, *body = q;

    /* memchr to each quote: it closes the string unless an odd run of backslashes escapes it */
    while (q < end && (q = memchr(q, '"', (size_t)(end - q))) != NULL) {
        size_t bs = 0;
        while (q - bs > body && q[-1 - (ptrdiff_t)bs] == '\\')
            bs++;
        if (bs % 2 == 0)
            break;
        q++;
    }
    if (q == NULL || q > end)
        q = end;
    *b = (size_t)(body - p);
    *bl = (size_t)(q - body);
    *esc = memchr(body, '\\', *bl) != NULL;
    *i = *b + *bl + 1;
}

/*
 * 1 when the redaction walk (redact_value) would change nothing in the value whose JSON text is
 * p[0..n) (accepted by events_json_check) at depth 1 of an event: no credential in its text
 * (nor in a string with escapes, decoded), no secret-like key, no secret-like string where the
 * walk reads a name (the first element of an array: a header pair; the value of a "name": a
 * name/value pair), no nesting near REDACT_DEPTH_MAX. 0 means "maybe": the caller redacts a
 * tree instead, so a false 0 costs time, never a secret.
 */
static int raw_clean(const struct redact_lits *lits, const char *p, size_t n)
{
    unsigned char is_obj[REDACT_DEPTH_MAX], first[REDACT_DEPTH_MAX];
    size_t depth = 0, i = 0;
    int key_next = 0, after_name = 0;

    if (redact_text(lits, p, n, NULL) > 0)
        return 0;
    while (i < n) {
        char c = p[i];
        if (c == '"') {
            size_t b, bl;
            int esc, is_key = depth > 0 && is_obj[depth - 1] && key_next, clean = 1;
            int named = depth > 0 && (is_obj[depth - 1] ? after_name : first[depth - 1]);
            json_t *d = NULL;
            const char *s;
            size_t sl;
            raw_string(p, n, &i, &b, &bl, &esc);
            s = p + b;
            sl = bl;
            if (esc) {
                d = json_loadb(p + b - 1, bl + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
                if (!json_is_string(d)) {
                    json_decref(d);
                    return 0;
                }
                s = json_string_value(d);
                sl = json_string_length(d);
                clean = redact_text(lits, s, sl, NULL) == 0;
            }
            if (clean && (is_key || named))
                clean = !secret_name(s, sl);
            if (is_key)
                after_name = sl == 4 && memcmp(s, "name", 4) == 0;
            json_decref(d);
            if (!clean)
                return 0;
            continue;
        }
        switch (c) {
        case '{':
        case '[':
            if (depth + 2 >= REDACT_DEPTH_MAX)
                return 0;
            is_obj[depth] = c == '{';
            first[depth] = 1;
            depth++;
            key_next = c == '{';
            after_name = 0;
            break;
        case '}':
        case ']':
            if (depth > 0)
                depth--;
            key_next = after_name = 0;
            break;
        case ',':
            if (depth > 0) {
                first[depth - 1] = 0;
                key_next = is_obj[depth - 1];
            }
            after_name = 0;
            break;
        case ':':
            key_next = 0;
            break;
        }
        i++;
    }
    return 1;
}

struct raw_field {
    const char *key;
    const char *text;
    size_t len;
};

/* Appends the compact dump of obj with the raw fields after its own ones to b. */
static int dump_spliced(json_t *obj, const struct raw_field *raw, size_t nraw, struct buf *b)
{
    if (json_dump_callback(obj, dump_cb, b, JSON_COMPACT) < 0)
        return ERR_LIMIT;
    for (size_t i = 0; i < nraw; i++) {
        json_t *k = json_string(raw[i].key);
        int rc;
        /* the object is never empty here (the kind at least), so a ',' always separates */
        b->len--; /* the '}' */
        rc = buf_addc(b, json_object_size(obj) > 0 || i > 0 ? ',' : ' ');
        if (rc == 0 && json_dump_callback(k, dump_cb, b, JSON_ENCODE_ANY) < 0)
            rc = ERR_LIMIT;
        json_decref(k);
        if (rc == 0)
            rc = buf_addc(b, ':');
        if (rc == 0)
            rc = buf_add(b, raw[i].text, raw[i].len);
        if (rc == 0)
            rc = buf_addc(b, '}');
        if (rc < 0)
            return ERR_LIMIT;
        b->data[b->len] = '\0';
    }
    return 0;
}

int events_dump(const json_t *ev, struct buf *out)
{
    struct raw_field raw[RAW_FIELDS_MAX];
    size_t nraw = 0;
    json_t *obj = json_object(), *v;
    const char *key;
    int rc;

    json_object_foreach((json_t *)ev, key, v)
    {
        size_t n;
        const char *t = events_raw_text(v, &n);
        if (t && nraw < RAW_FIELDS_MAX)
            raw[nraw++] = (struct raw_field){key, t, n};
        else if (t)
            json_object_set_new(obj, key, events_raw_tree(v));
        else
            json_object_set(obj, key, v);
    }
    rc = dump_spliced(obj, raw, nraw, out);
    json_decref(obj);
    return rc;
}

/* ---- writer ------------------------------------------------------------------------------ */

/* s as a JSON string's text (caller frees), NULL for NULL. */
static char *json_text(const char *s)
{
    json_t *j;
    char *t;

    if (s == NULL)
        return NULL;
    j = json_string(s); /* NULL for bytes that are not UTF-8: the slow path writes no field */
    t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    return t;
}

struct events_writer *events_open(const char *path, const char *run, const char *src, struct err *e)
{
    struct events_writer *w;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);

    if (fd < 0) {
        err_set(e, ERR_IO, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    w = xcalloc(1, sizeof(*w));
    w->fd = fd;
    w->path = xstrdup(path);
    w->run = run ? xstrdup(run) : NULL;
    w->src = src ? xstrdup(src) : NULL;
    w->run_v = run ? json_string(run) : NULL; /* the stamped copy's (stamp) */
    w->src_v = src ? json_string(src) : NULL;
    w->run_json = json_text(w->run); /* fast_line's */
    w->src_json = json_text(w->src);
    buf_init(&w->line, 0);
    buf_init(&w->batch, 0);
    return w;
}

void events_close(struct events_writer *w)
{
    if (w == NULL)
        return;
    events_release(w);
    close(w->fd);
    redact_lits_free(w->secrets);
    buf_release(&w->line);
    buf_release(&w->batch);
    json_decref(w->run_v);
    json_decref(w->src_v);
    free(w->path);
    free(w->run);
    free(w->src);
    free(w->run_json);
    free(w->src_json);
    free(w);
}

int events_add_secret(struct events_writer *w, const char *value)
{
    if (value == NULL || strlen(value) < REDACT_LIT_MIN)
        return 0;
    if (w->secrets == NULL)
        w->secrets = redact_lits_new();
    return redact_lits_add(w->secrets, value);
}

uint64_t events_next_seq(const struct events_writer *w)
{
    return w->seq;
}

/* json_dump_callback's callback: 0, or nonzero to stop the dump (buf_add's ERR_LIMIT or
 * ERR_NOMEM; jansson only tests for nonzero). */
static int dump_cb(const char *p, size_t n, void *data)
{
    return buf_add(data, p, n);
}

static int dump_into(json_t *o, struct buf *b)
{
    buf_reset(b);
    return json_dump_callback(o, dump_cb, b, JSON_COMPACT) < 0 ? ERR_LIMIT : 0;
}

/* The biggest string value under v (NULL when none). Top-level kind is never cut. */
static json_t *biggest_string(json_t *v, int top, int depth)
{
    json_t *best = NULL, *x, *c;
    const char *key;
    size_t i;

    if (depth > REDACT_DEPTH_MAX)
        return NULL;
    if (json_is_string(v))
        return v;
    if (json_is_object(v)) {
        json_object_foreach(v, key, x)
        {
            if (top && strcmp(key, "kind") == 0)
                continue;
            c = biggest_string(x, 0, depth + 1);
            if (c && (!best || json_string_length(c) > json_string_length(best)))
                best = c;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            c = biggest_string(x, 0, depth + 1);
            if (c && (!best || json_string_length(c) > json_string_length(best)))
                best = c;
        }
    }
    return best;
}

/* Bytes a string byte takes in jansson's compact dump (no JSON_ENSURE_ASCII). */
static size_t escaped_size(unsigned char c)
{
    if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
        return 2;
    return c < 0x20 ? 6 : 1;
}

/* How many leading bytes of s[0..n) to keep so that its dump shrinks by at least need bytes. */
static size_t cut_keep(const char *s, size_t n, size_t need)
{
    size_t total = 0, acc = 0, keep = 0;

    for (size_t i = 0; i < n; i++)
        total += escaped_size((unsigned char)s[i]);
    if (total <= need)
        return 0;
    while (keep < n && acc + escaped_size((unsigned char)s[keep]) <= total - need)
        acc += escaped_size((unsigned char)s[keep++]);
    return utf8_boundary(s, n, keep); /* never split a UTF-8 sequence */
}

/* Makes b hold a line of at most EVENTS_LINE_MAX - 1 bytes for out (b holds its too-long
 * dump): cuts the biggest strings of a copy, else falls back to a small object. */
static void cut_line(json_t *out, struct buf *b)
{
    size_t original = b->len;
    json_t *cp = json_deep_copy(out), *small;
    const char *stamp[] = {"t", "t_us", "seq", "run", "src", "kind"};

    for (int round = 0; round < CUT_ROUNDS; round++) {
        json_t *s = biggest_string(cp, 1, 0);
        size_t len, need, keep;
        char marker[48];
        struct buf nb = BUF_INIT;

        if (s == NULL || json_string_length(s) <= CUT_MIN)
            break;
        len = json_string_length(s);
        need = b->len + 1 - EVENTS_LINE_MAX + 40; /* 40: room for the marker */
        keep = cut_keep(json_string_value(s), len, need);
        snprintf(marker, sizeof(marker), "...[cut %zu bytes]", len - keep);
        buf_add(&nb, json_string_value(s), keep);
        buf_adds(&nb, marker);
        json_string_setn(s, nb.data, nb.len);
        buf_release(&nb);
        if (dump_into(cp, b) == 0 && b->len + 1 <= EVENTS_LINE_MAX) {
            json_decref(cp);
            return;
        }
    }
    json_decref(cp);
    small = json_object();
    for (size_t i = 0; i < sizeof(stamp) / sizeof(stamp[0]); i++) {
        json_t *v = json_object_get(out, stamp[i]);
        /* only short scalars: a caller's "run" may be any JSON value, even a huge one */
        if (json_is_number(v) || json_is_boolean(v) || json_is_null(v) ||
            (json_is_string(v) && json_string_length(v) <= KIND_MAX))
            json_object_set(small, stamp[i], v);
    }
    json_object_set_new(small, "truncated", json_true());
    json_object_set_new(small, "original_bytes", json_integer((json_int_t)original));
    dump_into(small, b);
    json_decref(small);
}

/* Writes p[0..n) (whole lines) with as few write(2)s as the kernel allows. When a write fails
 * part way (disk full), the partial line is ended so that readers skip only it. */
static int write_lines(int fd, const char *p, size_t n)
{
    size_t off = 0;

    while (off < n) {
        ssize_t k = write(fd, p + off, n - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        off += (size_t)k;
    }
    if (off == n)
        return 0;
    if (off > 0 && p[off - 1] != '\n') {
        ssize_t r;
        do
            r = write(fd, "\n", 1);
        while (r < 0 && errno == EINTR);
    }
    return ERR_IO;
}

#define BATCH_MAX (256 * 1024)

static int write_line(struct events_writer *w)
{
    int rc = 0;

    if (!w->holding)
        return write_lines(w->fd, w->line.data, w->line.len);
    if (w->batch.len > 0 && w->batch.len + w->line.len > BATCH_MAX) {
        rc = write_lines(w->fd, w->batch.data, w->batch.len);
        buf_reset(&w->batch);
    }
    if (buf_add(&w->batch, w->line.data, w->line.len) < 0)
        return ERR_IO;
    return rc;
}

void events_hold(struct events_writer *w)
{
    if (w != NULL)
        w->holding = 1;
}

int events_release(struct events_writer *w)
{
    int rc;

    if (w == NULL || !w->holding)
        return 0;
    w->holding = 0;
    rc = w->batch.len > 0 ? write_lines(w->fd, w->batch.data, w->batch.len) : 0;
    buf_reset(&w->batch);
    if (w->batch.alloc > 2 * BATCH_MAX)
        buf_release(&w->batch);
    return rc;
}

/* An integer time field of ev (t or t_us) that is >= 0, else EVENTS_NO_TIME. */
static int64_t time_field(const json_t *ev, const char *key)
{
    json_t *v = json_object_get(ev, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v)
                                                            : EVENTS_NO_TIME;
}

void events_stamp(json_t *ev)
{
    int64_t us;

    if (!json_is_object(ev) || time_field(ev, "t_us") >= 0 || time_field(ev, "t") >= 0)
        return;
    us = time_now_us();
    json_object_set_new(ev, "t", json_integer(us / 1000));
    json_object_set_new(ev, "t_us", json_integer(us));
}

int64_t events_time_us(const json_t *ev)
{
    int64_t us = time_field(ev, "t_us"), ms;

    if (us >= 0)
        return us;
    ms = time_field(ev, "t");
    return ms >= 0 && ms <= INT64_MAX / 1000 ? ms * 1000 : EVENTS_NO_TIME;
}

/* Sets t and t_us of out (the line being built) from ev: both kept when set; t from t_us when
 * only t_us is; an old writer's t alone stays alone (no precision is made up); neither: now. */
static void stamp_time(json_t *ev, json_t *out)
{
    int64_t t = time_field(ev, "t"), us = time_field(ev, "t_us");

    if (t < 0 && us < 0) {
        us = time_now_us();
        t = us / 1000;
    } else if (t < 0) {
        t = us / 1000;
    }
    json_object_set_new(out, "t", json_integer((json_int_t)t));
    if (us >= 0)
        json_object_set_new(out, "t_us", json_integer((json_int_t)us));
}

/* A key written as it is between quotes: printable ASCII but '"' and '\\' (what a JSON
 * string's escaping leaves alone). */
static int key_plain(const char *k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] < 0x20 || (unsigned char)k[i] > 0x7e || k[i] == '"' || k[i] == '\\')
            return 0;
    return 1;
}

/* Appends ,"key": (a key_plain key) to b. */
static int add_key(struct buf *b, const char *key, size_t n)
{
    return buf_add(b, ",\"", 2) | buf_add(b, key, n) | buf_add(b, "\":", 2);
}

/* Appends v in decimal to b, without printf. */
static int add_num(struct buf *b, long long v)
{
    char d[24];
    size_t k = sizeof(d);
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

    do
        d[--k] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0)
        d[--k] = '-';
    return buf_add(b, d + k, sizeof(d) - k);
}

/* Appends v's compact JSON to b, as jansson writes it; 0 or ERR_LIMIT. A scalar jansson would
 * write as it is (a string of key_plain bytes, which its dump leaves unescaped, an integer, a
 * literal) is appended here: json_dump_callback allocates its loop check's table each call. */
static int dump_value(const json_t *v, struct buf *b)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        if (!key_plain(json_string_value(v), json_string_length(v)))
            break;
        return buf_addc(b, '"') | buf_add(b, json_string_value(v), json_string_length(v)) |
               buf_addc(b, '"');
    case JSON_INTEGER:
        return add_num(b, (long long)json_integer_value(v));
    case JSON_TRUE:
        return buf_add(b, "true", 4);
    case JSON_FALSE:
        return buf_add(b, "false", 5);
    case JSON_NULL:
        return buf_add(b, "null", 4);
    default:
        break;
    }
    return json_dump_callback(v, dump_cb, b, JSON_COMPACT | JSON_ENCODE_ANY) < 0 ? ERR_LIMIT : 0;
}

/*
 * The common case of events_append without the stamped copy: the line the slow path below
 * would write (the same bytes: the stamped fields, then ev's other fields in order, then its
 * clean raw values), dumped straight from ev into w->line. 0 with the line there (w->seq
 * moved on), or 1 when the slow path must write it, having changed nothing: something to
 * redact (the same dry run of the redaction walk, field by field), a raw value that is not
 * clean, a name/value pair or a secret-like name at the top level, a key that would need
 * escaping, a line over EVENTS_LINE_MAX.
 */
static int fast_line(struct events_writer *w, json_t *ev, json_t *kind)
{
    struct raw_field raw[RAW_FIELDS_MAX];
    struct redact_ctx cx = {w->secrets, 0, 0};
    size_t nraw = 0;
    int64_t t = time_field(ev, "t"), us = time_field(ev, "t_us");
    json_t *seqv = json_object_get(ev, "seq"), *runv = json_object_get(ev, "run"),
           *srcv = json_object_get(ev, "src"), *v;
    uint64_t seq = json_is_integer(seqv) && json_integer_value(seqv) >= 0
                       ? (uint64_t)json_integer_value(seqv)
                       : w->seq;
    struct buf *b = &w->line;
    const char *key;
    int rc = 0;

    if (json_object_get(ev, "name") != NULL && json_object_get(ev, "value") != NULL)
        return 1; /* the walk's name/value pair: the slow path decides */
    if ((w->run && !w->run_json) || (w->src && !w->src_json))
        return 1; /* a run or src that is not UTF-8 */
    if (t < 0 && us < 0) {
        us = time_now_us();
        t = us / 1000;
    } else if (t < 0) {
        t = us / 1000;
    }
    buf_reset(b);
    rc |= buf_adds(b, "{\"t\":");
    rc |= add_num(b, (long long)t);
    if (us >= 0)
        rc |= add_key(b, "t_us", 4) | add_num(b, (long long)us);
    if (seq > (uint64_t)INT64_MAX)
        return 1;
    rc |= add_key(b, "seq", 3) | add_num(b, (long long)seq);
    if (w->run || runv) {
        rc |= add_key(b, "run", 3);
        if (w->run)
            rc |= buf_adds(b, w->run_json);
        else
            rc |= dump_value(runv, b);
        if (!w->run)
            redact_value(&cx, runv, 1);
        else if (redact_text(w->secrets, w->run, strlen(w->run), NULL) > 0)
            cx.count++;
    }
    if (json_is_string(srcv) || w->src) {
        rc |= add_key(b, "src", 3);
        if (json_is_string(srcv)) {
            rc |= dump_value(srcv, b);
            redact_value(&cx, srcv, 1);
        } else {
            rc |= buf_adds(b, w->src_json);
            if (redact_text(w->secrets, w->src, strlen(w->src), NULL) > 0)
                cx.count++;
        }
    }
    rc |= add_key(b, "kind", 4);
    rc |= dump_value(kind, b);
    redact_value(&cx, kind, 1);
    json_object_foreach(ev, key, v)
    {
        size_t n = strlen(key), tn;
        const char *text;
        if (!strcmp(key, "t") || !strcmp(key, "t_us") || !strcmp(key, "seq") ||
            !strcmp(key, "run") || !strcmp(key, "src") || !strcmp(key, "kind"))
            continue;
        if (!key_plain(key, n) || secret_name(key, n) || redact_text(w->secrets, key, n, NULL) > 0)
            return 1;
        text = events_raw_text(v, &tn);
        if (text) {
            if (nraw >= RAW_FIELDS_MAX || !raw_clean(w->secrets, text, tn))
                return 1;
            raw[nraw++] = (struct raw_field){key, text, tn};
            continue;
        }
        redact_value(&cx, v, 1);
        if (cx.count > 0)
            return 1;
        rc |= add_key(b, key, n);
        rc |= dump_value(v, b);
    }
    if (cx.count > 0)
        return 1;
    for (size_t i = 0; i < nraw; i++) {
        rc |= add_key(b, raw[i].key, strlen(raw[i].key));
        rc |= buf_add(b, raw[i].text, raw[i].len);
    }
    rc |= buf_addc(b, '}');
    if (rc != 0 || b->len + 1 > EVENTS_LINE_MAX)
        return 1;
    if (json_is_integer(seqv) && json_integer_value(seqv) >= 0) {
        if (seq >= w->seq)
            w->seq = seq + 1;
    } else {
        w->seq++;
    }
    return 0;
}

int events_append(struct events_writer *w, json_t *ev)
{
    struct raw_field raw[RAW_FIELDS_MAX];
    size_t nraw = 0;
    json_t *kind, *v, *out;
    struct redact_ctx cx = {w->secrets, 0, 0};
    const char *key;
    int rc;

    if (w == NULL || !json_is_object(ev))
        return ERR_INVALID;
    kind = json_object_get(ev, "kind");
    if (!json_is_string(kind) || json_string_length(kind) == 0 ||
        json_string_length(kind) > KIND_MAX)
        return ERR_INVALID;
    if (fast_line(w, ev, kind) == 0)
        goto write;

    out = json_object();
    stamp_time(ev, out);
    v = json_object_get(ev, "seq");
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        json_object_set(out, "seq", v);
        if ((uint64_t)json_integer_value(v) >= w->seq)
            w->seq = (uint64_t)json_integer_value(v) + 1;
    } else {
        json_object_set_new(out, "seq", json_integer((json_int_t)w->seq++));
    }
    v = json_object_get(ev, "run");
    if (w->run) {
        if (w->run_v) /* NULL when not UTF-8: no run then, as before */
            json_object_set(out, "run", w->run_v);
    } else if (v)
        json_object_set(out, "run", v);
    v = json_object_get(ev, "src");
    if (json_is_string(v))
        json_object_set(out, "src", v);
    else if (w->src && w->src_v)
        json_object_set(out, "src", w->src_v);
    json_object_set(out, "kind", kind);
    json_object_foreach(ev, key, v)
    {
        size_t n;
        const char *t;
        if (!strcmp(key, "t") || !strcmp(key, "t_us") || !strcmp(key, "seq") ||
            !strcmp(key, "run") || !strcmp(key, "src") || !strcmp(key, "kind"))
            continue;
        t = events_raw_text(v, &n);
        if (t && nraw < RAW_FIELDS_MAX && !secret_name(key, strlen(key)) &&
            raw_clean(w->secrets, t, n))
            raw[nraw++] = (struct raw_field){key, t, n}; /* written as it is */
        else if (t)
            json_object_set_new(out, key, events_raw_tree(v)); /* redacted as a tree */
        else
            json_object_set(out, key, v);
    }

    /* Values are still shared with the caller's ev: copy only when something is redacted. */
    redact_value(&cx, out, 0);
    if (cx.count > 0) {
        json_t *cp = json_deep_copy(out);
        json_decref(out);
        out = cp;
        cx.apply = 1;
        redact_value(&cx, out, 0);
    }

    buf_reset(&w->line);
    if (dump_spliced(out, raw, nraw, &w->line) < 0 || w->line.len + 1 > EVENTS_LINE_MAX) {
        /* too long: cut from a tree (the raw values were clean: nothing to redact in them) */
        for (size_t i = 0; i < nraw; i++)
            json_object_set_new(
                out, raw[i].key,
                json_loadb(raw[i].text, raw[i].len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL));
        if (dump_into(out, &w->line) < 0 || w->line.len + 1 > EVENTS_LINE_MAX)
            cut_line(out, &w->line);
    }
    json_decref(out);
write:
    if (buf_addc(&w->line, '\n') < 0)
        return ERR_IO;
    rc = write_line(w);
    buf_reset(&w->line);
    if (w->line.alloc > 4 * EVENTS_LINE_MAX)
        buf_release(&w->line);
    return rc;
}

int events_emit(struct events_writer *w, const char *kind, json_t *fields)
{
    json_t *ev = json_object();
    const char *key;
    json_t *v;
    int rc;

    json_object_set_new(ev, "kind", json_string(kind ? kind : ""));
    if (json_is_object(fields)) {
        json_object_foreach(fields, key, v)
        {
            if (strcmp(key, "kind") != 0)
                json_object_set(ev, key, v);
        }
    }
    rc = events_append(w, ev);
    json_decref(ev);
    return rc;
}

/* ---- reader ------------------------------------------------------------------------------ */

struct events_reader {
    int fd;
    char *buf;
    size_t cap, start, end;
    int follow;
    int skipping; /* discarding the rest of an overlong line */
    size_t malformed;
    uint64_t base; /* file offset of buf[0] (of where the reader started) */
    uint64_t last; /* offset of the line events_next_line returned last */
};

struct events_reader *events_reader_open(const char *path, struct err *e)
{
    int fd = fs_open_regular(path, e);

    return fd < 0 ? NULL : events_reader_fdopen(fd);
}

struct events_reader *events_reader_fdopen(int fd)
{
    struct events_reader *r = xcalloc(1, sizeof(*r));

    r->fd = fd;
    r->cap = READ_CHUNK + EVENTS_LINE_MAX;
    r->buf = xmalloc(r->cap);
    return r;
}

void events_reader_free(struct events_reader *r)
{
    if (r == NULL)
        return;
    close(r->fd);
    free(r->buf);
    free(r);
}

void events_reader_set_follow(struct events_reader *r, int follow)
{
    r->follow = follow;
}

uint64_t events_reader_tell(const struct events_reader *r)
{
    return r->last;
}

size_t events_reader_malformed(const struct events_reader *r)
{
    return r->malformed;
}

void events_reader_count_malformed(struct events_reader *r)
{
    r->malformed++;
}

int events_next_line(struct events_reader *r, const char **line, size_t *len)
{
    for (;;) {
        char *p = r->buf + r->start;
        char *nl = memchr(p, '\n', r->end - r->start);
        ssize_t n;

        if (nl != NULL) {
            size_t l = (size_t)(nl - p);
            r->start += l + 1;
            if (r->skipping) {
                r->skipping = 0;
                continue;
            }
            if (l + 1 > EVENTS_LINE_MAX) {
                r->malformed++;
                continue;
            }
            if (l > 0 && p[l - 1] == '\r')
                l--;
            r->last = r->base + (uint64_t)(p - r->buf);
            *line = p;
            *len = l;
            return 1;
        }
        if (r->end - r->start >= EVENTS_LINE_MAX) {
            /* No newline within the limit: drop what we have, skip to the next newline. */
            if (!r->skipping)
                r->malformed++;
            r->skipping = 1;
            r->base += r->end;
            r->start = r->end = 0;
        }
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, r->end - r->start);
            r->end -= r->start;
            r->base += r->start;
            r->start = 0;
        }
        do
            n = read(r->fd, r->buf + r->end, r->cap - r->end);
        while (n < 0 && errno == EINTR);
        if (n < 0)
            return ERR_IO;
        if (n > 0) {
            r->end += (size_t)n;
            continue;
        }
        /* End of file. */
        if (r->end == r->start || r->follow)
            return 0;
        if (r->skipping) {
            r->skipping = 0;
            r->base += r->end;
            r->start = r->end = 0;
            return 0;
        }
        r->last = r->base + r->start;
        *line = r->buf + r->start;
        *len = r->end - r->start;
        r->base += r->end;
        r->start = r->end = 0;
        return 1;
    }
}

int events_next(struct events_reader *r, json_t **ev)
{
    const char *line;
    size_t len;
    int rc;

    *ev = NULL;
    while ((rc = events_next_line(r, &line, &len)) == 1) {
        json_t *j;
        if (text_blank(line, len))
            continue;
        /* A raw NUL byte is never valid JSON, but jansson skips one that follows a number or
         * a literal (its stream treats a pushed-back NUL as "buffer empty"). */
        j = memchr(line, '\0', len) ? NULL : json_loadb(line, len, JSON_ALLOW_NUL, NULL);
        if (j == NULL || !json_is_object(j) || !json_is_string(json_object_get(j, "kind"))) {
            json_decref(j);
            r->malformed++;
            continue;
        }
        *ev = j;
        return 1;
    }
    return rc;
}
