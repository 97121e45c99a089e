/*
 * sse: incremental Server-Sent Events parser and writer (see sse.h for the format).
 *
 * The parser keeps the unconsumed input in one buffer. `scan` is the offset of the first byte
 * of the current event's next unread line, `searched` how far we already looked for a line end
 * without finding one (so a long line fed in small pieces is scanned once, not quadratically).
 * Each complete line is validated (no NUL, valid UTF-8, at most line_max bytes) and applied to
 * the event under construction; a blank line after at least one line dispatches the event,
 * whose raw bytes are in[0, scan). Those bytes stay in place until the next call, which drops
 * them first, so every pointer handed out is valid exactly until the next call.
 *
 *   state        input                      action
 *   wait BOM     < 3 bytes, BOM prefix      return 0 (need more)
 *   wait BOM     EF BB BF                   drop it, go to lines
 *   lines        no line end in sight       return 0, or ERR_LIMIT past line_max
 *   lines        "\r" as the last byte      return 0 (a "\n" may follow)
 *   lines        field line                 apply_field; ERR_LIMIT past event_max
 *   lines        blank line, lines seen     dispatch: return 1
 *   lines        blank line, nothing seen   keep it in raw, go on
 *   any          bad byte / limit           sticky error
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/sse.h"
#include "util/utf8.h"
#include "util/banned.h"

#define SSE_INPUT_MAX ((size_t)1 << 30)

struct sse_parser {
    struct buf in;   /* input not yet consumed */
    size_t scan;     /* start of the next unread line of the current event */
    size_t searched; /* bytes after scan known to hold no line end */
    size_t drop;     /* raw bytes of the event returned last, dropped on the next call */
    size_t line_max, event_max;
    size_t fed;      /* total bytes fed */
    size_t consumed; /* total bytes dropped from in */
    int bom_done;
    int err;
    char errmsg[200];
    /* the event under construction */
    struct buf event, data, id;
    int has_data, any_line;
    long retry_ms;
};

struct sse_parser *sse_parser_new(size_t line_max, size_t event_max)
{
    struct sse_parser *p = xcalloc(1, sizeof(*p));
    p->line_max = line_max ? line_max : SSE_LINE_MAX_DEFAULT;
    p->event_max = event_max ? event_max : SSE_EVENT_MAX_DEFAULT;
    buf_init(&p->in, SSE_INPUT_MAX);
    buf_init(&p->event, 0);
    buf_init(&p->data, 0);
    buf_init(&p->id, 0);
    p->retry_ms = -1;
    return p;
}

void sse_parser_free(struct sse_parser *p)
{
    if (p == NULL)
        return;
    buf_release(&p->in);
    buf_release(&p->event);
    buf_release(&p->data);
    buf_release(&p->id);
    free(p);
}

static void event_clear(struct sse_parser *p)
{
    buf_reset(&p->event);
    buf_reset(&p->data);
    buf_reset(&p->id);
    p->has_data = 0;
    p->any_line = 0;
    p->retry_ms = -1;
}

void sse_parser_reset(struct sse_parser *p)
{
    buf_reset(&p->in);
    event_clear(p);
    p->scan = p->searched = p->drop = 0;
    p->fed = p->consumed = 0;
    p->bom_done = 0;
    p->err = 0;
    p->errmsg[0] = '\0';
}

static int fail(struct sse_parser *p, int code, struct err *e, const char *what, size_t off)
{
    p->err = code;
    snprintf(p->errmsg, sizeof(p->errmsg), "sse: %s at byte %zu", what, off);
    return err_set(e, code, "%s", p->errmsg);
}

int sse_parser_feed(struct sse_parser *p, const void *data, size_t len)
{
    if (p->err)
        return p->err;
    if (buf_add(&p->in, data, len) < 0)
        return ERR_LIMIT;
    p->fed += len;
    return 0;
}

/* Offset of the first bad byte in s[0..n), or n when the line is clean. */
static size_t line_check(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (u[i] >= 0x01 && u[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = u[i] == 0 ? 0 : utf8_seq(u + i, n - i);
        if (k == 0)
            return i; /* NUL or not UTF-8 */
        i += k;
    }
    return n;
}

static void apply_field(struct sse_parser *p, const char *line, size_t n)
{
    const char *colon = memchr(line, ':', n);
    size_t fn = colon ? (size_t)(colon - line) : n;
    const char *v = colon ? colon + 1 : line + n;
    size_t vn = colon ? n - fn - 1 : 0;

    p->any_line = 1;
    if (fn == 0)
        return; /* comment */
    if (vn > 0 && v[0] == ' ') {
        v++;
        vn--;
    }
    /* The buffers hold at most one event (bounded by event_max), so appends cannot fail. */
    if (fn == 5 && memcmp(line, "event", 5) == 0) {
        buf_reset(&p->event);
        buf_add(&p->event, v, vn);
    } else if (fn == 4 && memcmp(line, "data", 4) == 0) {
        if (p->has_data)
            buf_addc(&p->data, '\n');
        buf_add(&p->data, v, vn);
        p->has_data = 1;
    } else if (fn == 2 && memcmp(line, "id", 2) == 0) {
        buf_reset(&p->id);
        buf_add(&p->id, v, vn);
    } else if (fn == 5 && memcmp(line, "retry", 5) == 0) {
        long r = 0;
        size_t i;
        for (i = 0; i < vn && v[i] >= '0' && v[i] <= '9' && r < 100000000; i++)
            r = r * 10 + (v[i] - '0');
        if (vn > 0 && i == vn)
            p->retry_ms = r;
    }
    /* unknown fields are ignored, as the spec says */
}

int sse_parser_next(struct sse_parser *p, struct sse_event *ev, struct err *e)
{
    if (p->err)
        return err_set(e, p->err, "%s", p->errmsg);
    if (p->drop > 0) {
        buf_consume(&p->in, p->drop);
        p->consumed += p->drop;
        p->drop = 0;
        p->scan = p->searched = 0;
        event_clear(p);
    }
    if (!p->bom_done) {
        static const char bom[3] = {'\xEF', '\xBB', '\xBF'};
        size_t n = p->in.len < 3 ? p->in.len : 3;
        if (memcmp(p->in.data, bom, n) == 0) {
            if (n < 3)
                return 0;
            buf_consume(&p->in, 3);
            p->consumed += 3;
        }
        p->bom_done = 1;
    }
    for (;;) {
        const char *start = p->in.data + p->scan;
        size_t avail = p->in.len - p->scan;
        size_t i, term = 0;

        for (i = p->searched; i < avail; i++) {
            if (start[i] == '\n') {
                term = 1;
                break;
            }
            if (start[i] == '\r') {
                if (i + 1 == avail) {
                    /* a "\n" may follow in the next feed */
                    p->searched = i;
                    return 0;
                }
                term = start[i + 1] == '\n' ? 2 : 1;
                break;
            }
        }
        if (term == 0) {
            p->searched = avail;
            if (avail > p->line_max)
                return fail(p, ERR_LIMIT, e, "line longer than the limit", p->consumed + p->scan);
            return 0;
        }
        if (i > p->line_max)
            return fail(p, ERR_LIMIT, e, "line longer than the limit", p->consumed + p->scan);
        size_t bad = line_check(start, i);
        if (bad < i)
            return fail(p, ERR_PARSE, e, start[bad] == '\0' ? "NUL byte" : "invalid UTF-8",
                        p->consumed + p->scan + bad);
        p->scan += i + term;
        p->searched = 0;
        if (p->scan > p->event_max)
            return fail(p, ERR_LIMIT, e, "event larger than the limit", p->consumed);
        if (i > 0) {
            apply_field(p, start, i);
            continue;
        }
        if (!p->any_line)
            continue; /* a stray blank line: kept in the next event's raw bytes */
        memset(ev, 0, sizeof(*ev));
        ev->event = p->event.data;
        ev->event_len = p->event.len;
        ev->data = p->data.data;
        ev->data_len = p->data.len;
        ev->has_data = p->has_data;
        ev->id = p->id.data;
        ev->id_len = p->id.len;
        ev->retry_ms = p->retry_ms;
        ev->raw = p->in.data;
        ev->raw_len = p->scan;
        p->drop = p->scan;
        return 1;
    }
}

size_t sse_parser_pending(const struct sse_parser *p)
{
    size_t n = p->in.len - p->drop;
    /* stray blank lines between events are not a partial event */
    const char *s = p->in.data + p->drop;
    size_t i = 0;
    while (i < n && (s[i] == '\n' || s[i] == '\r'))
        i++;
    return i == n ? 0 : n;
}

size_t sse_parser_offset(const struct sse_parser *p)
{
    return p->fed;
}

int sse_write(struct buf *out, const char *event, const char *data, size_t len)
{
    size_t mark = out->len;
    int rc = 0;

    if (event && strpbrk(event, "\r\n"))
        return ERR_INVALID;
    if (event)
        rc = buf_addf(out, "event: %s\n", event);
    /* One data line per line of data; a trailing line break gives a final empty data line,
     * so the parser's "\n"-join gives back exactly data. */
    size_t i = 0;
    for (;;) {
        size_t j = i;
        while (j < len && data[j] != '\n' && data[j] != '\r')
            j++;
        if (rc == 0)
            rc = buf_adds(out, "data: ");
        if (rc == 0)
            rc = buf_add(out, data + i, j - i);
        if (rc == 0)
            rc = buf_addc(out, '\n');
        if (rc < 0 || j >= len)
            break;
        if (data[j] == '\r' && j + 1 < len && data[j + 1] == '\n')
            j++;
        i = j + 1;
    }
    if (rc == 0)
        rc = buf_addc(out, '\n');
    if (rc < 0)
        buf_truncate(out, mark);
    return rc;
}

int sse_write_json(struct buf *out, const char *event, const json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL)
        return ERR_INVALID;
    int rc = sse_write(out, event, s, strlen(s));
    free(s);
    return rc;
}

int sse_write_comment(struct buf *out, const char *text)
{
    size_t mark = out->len;
    if (strpbrk(text, "\r\n"))
        return ERR_INVALID;
    int rc = buf_addf(out, ": %s\n\n", text);
    if (rc < 0)
        buf_truncate(out, mark);
    return rc;
}
