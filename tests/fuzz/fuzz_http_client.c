/*
 * fuzz_http_client: the client side of the one HTTP/1.1 codec: httpc's response parser
 * (codec/httpc.h over codec/http.h: status line, fields, 1xx skipping, body framing by
 * Content-Length, chunked or close, the body limit, the keep-alive decision) on untrusted
 * response bytes, fed as a server's answer arrives: in any split.
 *
 * Input: byte 0 holds flags:
 *   bit 0     the request was HEAD (no body whatever the fields say)
 *   bits 1-2  max_body: 0 (no limit), 1, 16, 1024
 *   bit 3     the connection closes after the bytes (httpc_parser_eof)
 * The rest is what the server sent.
 *
 * The bytes are parsed fed all at once, one byte at a time, and split in two at every point
 * (at 64 evenly spaced points past 1024 bytes), each with a fresh parser.
 *
 * Invariants (abort on violation):
 * - Every feeding gives the same outcome: return code of the feeds and of the close, status,
 *   done, keep-alive, delivered body bytes (compared byte for byte), bytes after the message.
 * - An error is ERR_PROTO or ERR_LIMIT with a message, and sticky: a later feed fails too.
 * - The body delivered never exceeds max_body; the callback sees a final status (>= 200)
 *   and, with Content-Length framing, the whole body is exactly that length.
 * - keep-alive implies a whole message, not framed by the close, nothing after it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/httpc.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

struct outcome {
    int rc, eof_rc, status, done, keep;
    uint64_t extra;
    struct buf body;
};

static int on_body(const struct httpc_parser *p, const char *d, size_t n, void *arg)
{
    struct outcome *o = arg;
    char v[8];

    CHECK(p->status >= 200 && p->status <= 999);
    CHECK(n > 0);
    (void)httpc_parser_header(p, "content-type", v, sizeof(v));
    CHECK(buf_add(&o->body, d, n) == 0);
    return 0;
}

/* Parses data[0..n) fed in pieces: cut > 0 splits once at cut; step > 0 feeds step bytes at a
 * time; else all at once. */
static void run(const uint8_t *data, size_t n, size_t cut, size_t step, int head_only,
                uint64_t max_body, int close, struct outcome *o)
{
    struct httpc_parser p;
    struct err e = {0};
    size_t at = 0;

    memset(o, 0, sizeof(*o));
    buf_init(&o->body, 0);
    httpc_parser_init(&p, max_body, on_body, o);
    p.head_only = head_only;
    while (at < n && o->rc == 0) {
        size_t k = n - at;
        if (cut > 0)
            k = at < cut ? cut - at : n - at;
        else if (step > 0 && k > step)
            k = step;
        o->rc = httpc_parser_feed(&p, (const char *)data + at, k, &e);
        at += k;
    }
    if (o->rc < 0) {
        struct err again = {0};
        CHECK(o->rc == ERR_PROTO || o->rc == ERR_LIMIT);
        CHECK(e.code == o->rc && e.msg[0] != '\0');
        CHECK(p.state == HTTPC_P_ERROR);
        CHECK(httpc_parser_feed(&p, "x", 1, &again) < 0); /* sticky */
    }
    if (close && o->rc == 0) {
        struct err ee = {0};
        o->eof_rc = httpc_parser_eof(&p, &ee);
        CHECK(o->eof_rc == 0 || (o->eof_rc == ERR_PROTO && ee.msg[0] != '\0'));
    }
    o->status = p.status;
    o->done = httpc_parser_done(&p);
    o->keep = httpc_parser_keep_alive(&p);
    o->extra = p.extra;
    CHECK(p.body_bytes == o->body.len);
    if (max_body)
        CHECK(o->body.len <= max_body);
    if (o->keep)
        CHECK(o->done && !p.to_eof && p.extra == 0);
    if (o->done && p.state == HTTPC_P_DONE && p.head.framing == HTTP_BODY_LENGTH && !head_only &&
        p.status != 204 && p.status != 304)
        CHECK(o->body.len == p.head.content_length);
    if (o->done)
        CHECK(o->status >= 200);
    httpc_parser_release(&p);
}

static void same(const struct outcome *a, const struct outcome *b)
{
    CHECK(a->rc == b->rc);
    CHECK(a->eof_rc == b->eof_rc);
    CHECK(a->status == b->status);
    CHECK(a->done == b->done);
    CHECK(a->keep == b->keep);
    CHECK(a->extra == b->extra);
    CHECK(a->body.len == b->body.len);
    CHECK(a->body.len == 0 || memcmp(a->body.data, b->body.data, a->body.len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint64_t maxes[] = {0, 1, 16, 1024};
    struct outcome whole, other;
    int head_only, close;
    uint64_t max_body;
    size_t stride;

    if (size < 1)
        return 0;
    head_only = data[0] & 1;
    max_body = maxes[(data[0] >> 1) & 3];
    close = (data[0] >> 3) & 1;
    data++;
    size--;

    run(data, size, 0, 0, head_only, max_body, close, &whole);
    run(data, size, 0, 1, head_only, max_body, close, &other);
    same(&whole, &other);
    buf_release(&other.body);
    stride = size > 1024 ? size / 64 : 1;
    for (size_t cut = 1; cut < size; cut += stride) {
        run(data, size, cut, 0, head_only, max_body, close, &other);
        same(&whole, &other);
        buf_release(&other.body);
    }
    buf_release(&whole.body);
    return 0;
}
