/*
 * fuzz_control_http: the one HTTP/1.1 codec's head parser and chunked decoder (codec/http.h)
 * on untrusted bytes, fed through libevent evbuffers as the server and the upstream client do.
 *
 * Input: byte 0 picks the feed size (1..256), so one input also exercises splits inside CRLF,
 * inside "\r\n\r\n" and inside chunk-size lines; byte 1 holds flags:
 *   bit 0     parse the head as a response (else as a request)
 *   bit 1     no head: the rest is a chunked body only
 *   bits 2-3  the request method a response answers: POST, GET, HEAD, none
 *   bits 4-5  max_out for the chunked decoder: 0 (unbounded), 1, 7, 64
 *   bits 6-7  the head size limit: 32, 128, 512 or HTTP_HEAD_MAX_DEFAULT
 * The rest is a head and the bytes after it. A head found is parsed as the kind bit 0 names,
 * then as the other kind into the same (reused) storage; the bytes after it are decoded as a
 * chunked body whatever the framing said.
 *
 * Invariants (abort on violation):
 * - http_head_find answers what a flat search of the bytes received so far answers: the first
 *   "\r\n\r\n" when it ends within the limit, ERR_LIMIT past the limit, else 0.
 * - A parsed head consumed exactly its bytes; every slice is NUL-terminated inside the head's
 *   storage; method and field names are tokens; field values hold no control character but
 *   HTAB and no surrounding whitespace; http_head_get finds every field; http_list_has finds
 *   every element of every value; the framing is consistent with the fields (at most one
 *   Transfer-Encoding, and a request with one is chunked and has no Content-Length; repeated
 *   Content-Length fields repeat one value, which is content_length) and with the status.
 *   A refused head has an error message and a known code.
 * - The chunked decoder gives the same result (return code, output, bytes consumed) fed piece by
 *   piece with a bounded max_out as fed all at once; it never outputs more than it consumed,
 *   never more than max_out per call, and a complete body consumed at least its "0\r\n\r\n".
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "codec/http.h"
#include "util/num.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

static const uint8_t *find4(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 4 <= n; i++)
        if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' && p[i + 3] == '\n')
            return p + i;
    return NULL;
}

/* What http_head_find must answer for the first n bytes of p. */
static long head_find_ref(const uint8_t *p, size_t n, size_t max)
{
    const uint8_t *f = find4(p, n);
    if (f != NULL)
        return (size_t)(f - p) + 4 > max ? ERR_LIMIT : (long)(f - p) + 4;
    if (n >= 4 && n >= max)
        return ERR_LIMIT;
    return 0;
}

static int is_tchar(unsigned char ch)
{
    return isalnum(ch) || (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* s is a NUL-terminated string lying wholly inside h's storage. */
static void check_slice(const struct http_head *h, const char *s)
{
    const char *lo = h->raw.data, *hi = h->raw.data + h->raw.len;
    CHECK(s != NULL);
    if (s[0] == '\0' && (s < lo || s > hi))
        return; /* a static "" (an empty reason) */
    CHECK(s >= lo && s <= hi);
    CHECK(memchr(s, '\0', (size_t)(hi - s) + 1) != NULL);
}

/* Every comma-separated element of v (trimmed, non-empty) is found by http_list_has. The
 * elements are found here with strtok_r, not with the parser's own walk. */
static void check_list(const char *v)
{
    char copy[512], *save = NULL, *tok;

    if (strlen(v) >= sizeof(copy))
        return;
    memcpy(copy, v, strlen(v) + 1);
    for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        size_t n;
        tok += strspn(tok, " \t");
        n = strlen(tok);
        while (n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
            tok[--n] = '\0';
        if (n > 0)
            CHECK(http_list_has(v, tok) == 1);
    }
}

static void check_head(const struct http_head *h, int is_request, const char *method)
{
    int has_te = 0, has_cl = 0;
    long long cl;

    CHECK(h->raw.len >= 4);
    CHECK(h->minor == 0 || h->minor == 1);
    if (is_request) {
        check_slice(h, h->method);
        check_slice(h, h->target);
        CHECK(h->method[0] != '\0' && h->target[0] != '\0');
        for (const char *m = h->method; *m; m++)
            CHECK(is_tchar((unsigned char)*m));
        for (const char *t = h->target; *t; t++)
            CHECK((unsigned char)*t > 0x20 && (unsigned char)*t != 0x7f);
        CHECK(h->framing != HTTP_BODY_CLOSE);
    } else {
        check_slice(h, h->reason);
        CHECK(strstr(h->reason, "\r\n") == NULL);
        CHECK(h->status >= 100 && h->status <= 999);
        (void)http_reason(h->status);
    }
    CHECK(h->nfields <= HTTP_FIELDS_MAX && h->nfields <= h->afields);
    for (size_t i = 0; i < h->nfields; i++) {
        const struct http_field *f = &h->fields[i];
        const char *got;
        size_t vl;

        check_slice(h, f->name);
        check_slice(h, f->value);
        CHECK(f->name[0] != '\0');
        for (const char *c = f->name; *c; c++)
            CHECK(is_tchar((unsigned char)*c));
        for (const char *c = f->value; *c; c++)
            CHECK((unsigned char)*c >= 0x20 || *c == '\t');
        vl = strlen(f->value);
        if (vl > 0) {
            CHECK(f->value[0] != ' ' && f->value[0] != '\t');
            CHECK(f->value[vl - 1] != ' ' && f->value[vl - 1] != '\t');
        }
        got = http_head_get(h, f->name);
        CHECK(got != NULL);
        for (size_t k = 0; k < i; k++)
            if (strcasecmp(h->fields[k].name, f->name) == 0) {
                CHECK(got == h->fields[k].value);
                break;
            }
        check_list(f->value);
        (void)http_is_hop_field(f->name);
        if (strcasecmp(f->name, "transfer-encoding") == 0)
            has_te++;
        if (strcasecmp(f->name, "content-length") == 0) {
            /* duplicates are accepted only when they repeat one value */
            CHECK(!has_cl || strcmp(http_head_get(h, "content-length"), f->value) == 0);
            has_cl++;
        }
    }
    CHECK(has_te <= 1);
    if (is_request && has_te)
        CHECK(h->framing == HTTP_BODY_CHUNKED && !has_cl);
    switch (h->framing) {
    case HTTP_BODY_CHUNKED:
        CHECK(has_te && strcasecmp(http_head_get(h, "transfer-encoding"), "chunked") == 0);
        break;
    case HTTP_BODY_LENGTH:
        CHECK(has_cl && !has_te && h->content_length > 0 &&
              h->content_length <= (uint64_t)1 << 53);
        CHECK(num_parse_ll(http_head_get(h, "content-length"), 1, (long long)1 << 53, &cl) == 0 &&
              (uint64_t)cl == h->content_length);
        break;
    case HTTP_BODY_CLOSE:
        CHECK(!is_request && !h->keep_alive);
        break;
    case HTTP_BODY_NONE:
        break;
    default:
        abort();
    }
    if (!is_request && (h->status < 200 || h->status == 204 || h->status == 304 ||
                        (method && strcmp(method, "HEAD") == 0)))
        CHECK(h->framing == HTTP_BODY_NONE);
    if (h->expect_continue)
        CHECK(is_request);
}

/* Parses the len-byte head at the start of in (found by http_head_find) into h, which may
 * hold an earlier head: its storage is reused. */
static void parse_one(struct http_head *h, size_t len, struct evbuffer *in, int is_request,
                      const char *method)
{
    struct err e = {0};
    size_t before = evbuffer_get_length(in);
    int rc;

    if (is_request)
        rc = http_head_parse_request(h, in, len, &e);
    else
        rc = http_head_parse_response(h, in, len, method, &e);
    CHECK(evbuffer_get_length(in) == before - len);
    if (rc == 0) {
        CHECK(h->raw.len == len);
        check_head(h, is_request, method);
    } else {
        CHECK(rc == ERR_PARSE || rc == ERR_UNSUPPORTED || rc == ERR_LIMIT);
        CHECK(e.code == rc && e.msg[0] != '\0');
    }
}

struct decoded {
    int rc;
    size_t consumed;
    struct evbuffer *out;
};

/* Decodes p[0..n) fed step bytes at a time, with max_out per call, until no progress. */
static void decode(const uint8_t *p, size_t n, size_t step, size_t max_out, struct decoded *d)
{
    struct http_chunked c;
    struct evbuffer *in = evbuffer_new();
    size_t fed = 0;

    d->out = evbuffer_new();
    d->rc = 0;
    d->consumed = 0;
    http_chunked_init(&c);
    do {
        size_t k = n - fed < step ? n - fed : step;
        evbuffer_add(in, p + fed, k);
        fed += k;
        for (;;) {
            struct err e = {0};
            size_t in0 = evbuffer_get_length(in), out0 = evbuffer_get_length(d->out);
            size_t took, made;

            d->rc = http_chunked_decode(&c, in, d->out, max_out, &e);
            took = in0 - evbuffer_get_length(in);
            made = evbuffer_get_length(d->out) - out0;
            d->consumed += took;
            CHECK(made <= took);
            CHECK(max_out == 0 || made <= max_out);
            CHECK(evbuffer_get_length(d->out) <= d->consumed);
            if (d->rc < 0) {
                CHECK(d->rc == ERR_PARSE || d->rc == ERR_LIMIT);
                CHECK(e.code == d->rc && e.msg[0] != '\0');
                goto done;
            }
            if (d->rc == 1) {
                CHECK(c.state == HTTP_CHUNK_DONE);
                CHECK(d->consumed >= evbuffer_get_length(d->out) + 5);
                break;
            }
            CHECK(d->rc == 0 && c.state != HTTP_CHUNK_DONE);
            if (took == 0 && made == 0)
                break;
        }
    } while (fed < n && d->rc != 1);
done:
    if (d->rc == 1) {
        /* done stays done and takes nothing more */
        struct err e = {0};
        size_t left = evbuffer_get_length(in);
        CHECK(http_chunked_decode(&c, in, d->out, max_out, &e) == 1);
        CHECK(evbuffer_get_length(in) == left);
    }
    evbuffer_free(in);
}

static void check_chunked(const uint8_t *p, size_t n, size_t step, size_t max_out)
{
    struct decoded whole, split;

    decode(p, n, n ? n : 1, 0, &whole);
    decode(p, n, step, max_out, &split);
    CHECK(whole.rc == split.rc);
    CHECK(whole.consumed == split.consumed);
    CHECK(evbuffer_get_length(whole.out) == evbuffer_get_length(split.out));
    if (evbuffer_get_length(whole.out) > 0)
        CHECK(memcmp(evbuffer_pullup(whole.out, -1), evbuffer_pullup(split.out, -1),
                     evbuffer_get_length(whole.out)) == 0);
    evbuffer_free(whole.out);
    evbuffer_free(split.out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const methods[] = {"POST", "GET", "HEAD", NULL};
    static const size_t head_max[] = {32, 128, 512, HTTP_HEAD_MAX_DEFAULT};
    static const size_t outs[] = {0, 1, 7, 64};
    struct evbuffer *in;
    size_t step, max, scanned = 0, fed = 0;
    unsigned flags;
    int is_request;
    const char *method;
    long n = 0;

    if (size < 2)
        return 0;
    step = (size_t)data[0] + 1;
    flags = data[1];
    data += 2;
    size -= 2;
    is_request = !(flags & 1);
    method = methods[(flags >> 2) & 3];
    max = head_max[(flags >> 6) & 3];
    if (flags & 2) {
        check_chunked(data, size, step, outs[(flags >> 4) & 3]);
        return 0;
    }

    in = evbuffer_new();
    while (fed < size) {
        size_t k = size - fed < step ? size - fed : step;
        evbuffer_add(in, data + fed, k);
        fed += k;
        n = http_head_find(in, max, &scanned);
        CHECK(n == head_find_ref(data, fed, max));
        if (n != 0)
            break;
    }
    if (n > 0) {
        struct http_head h;
        struct evbuffer *again = evbuffer_new();

        /* the rest of the input joins what arrived after the head */
        evbuffer_add(in, data + fed, size - fed);
        http_head_init(&h);
        parse_one(&h, (size_t)n, in, is_request, method);
        /* the same head as the other kind, into the same storage */
        evbuffer_add(again, data, (size_t)n);
        parse_one(&h, (size_t)n, again, !is_request, method);
        http_head_release(&h);
        evbuffer_free(again);
        check_chunked(data + n, size - (size_t)n, step, outs[(flags >> 4) & 3]);
    }
    evbuffer_free(in);
    return 0;
}
