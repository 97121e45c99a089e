/*
 * httpc: a blocking HTTP/1.1 client (see httpc.h for the parser's state table).
 *
 * Transport: getaddrinfo, then a non-blocking connect(2) per address with poll(2) bounding
 * the wait; every later read and write also waits in poll, for at most the idle timeout and
 * never past the call's total deadline. TLS is OpenSSL on the same non-blocking socket: a
 * WANT_READ / WANT_WRITE from SSL_* turns into the matching poll. The socket layer is the
 * struct link below (plain or TLS): the only place that touches sockets or OpenSSL.
 *
 * httpc_call_run opens a link, runs one exchange (send, read until the parser is done) and
 * closes it. A struct httpc_conn keeps its link open between exchanges while the responses
 * allow it; before reusing the link it polls it with a zero timeout (link_idle_ok): an idle
 * HTTP/1.1 connection has nothing to read, so anything readable means the peer closed it (or
 * broke the protocol) and a new link is opened before a byte of the request is sent.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "codec/tls.h"
#include "codec/httpc.h"
#include "util/num.h"
#include "util/timeutil.h"
#include "util/banned.h"

/* ---- response parser ---- */

static struct evbuffer *evbuffer_new_or_die(void)
{
    struct evbuffer *b = evbuffer_new();
    if (b == NULL)
        abort(); /* allocation failure, as xmalloc */
    return b;
}

void httpc_parser_init(struct httpc_parser *p, uint64_t max_body, httpc_body_fn on_body, void *arg)
{
    memset(p, 0, sizeof(*p));
    http_head_init(&p->head);
    p->in = evbuffer_new_or_die();
    p->body = evbuffer_new_or_die();
    p->max_body = max_body;
    p->on_body = on_body;
    p->arg = arg;
}

void httpc_parser_release(struct httpc_parser *p)
{
    http_head_release(&p->head);
    if (p->in)
        evbuffer_free(p->in);
    if (p->body)
        evbuffer_free(p->body);
    p->in = p->body = NULL;
}

int httpc_parser_done(const struct httpc_parser *p)
{
    return p->state == HTTPC_P_DONE;
}

static int fail(struct httpc_parser *p, struct err *e, int code, const char *what)
{
    p->state = HTTPC_P_ERROR;
    return err_set(e, code, "bad HTTP response: %s", what);
}

static int over_limit(struct httpc_parser *p, struct err *e)
{
    p->state = HTTPC_P_ERROR;
    return err_set(e, ERR_LIMIT, "response body is over the limit of %llu bytes",
                   (unsigned long long)p->max_body);
}

int httpc_parser_header(const struct httpc_parser *p, const char *name, char *out, size_t n)
{
    /* status is set once a final head parsed whole: never a refused or interim head's fields */
    const char *v = p->status == 0 ? NULL : http_head_get(&p->head, name);

    if (n > 0) {
        size_t k = v ? strlen(v) : 0;
        if (k >= n)
            k = n - 1;
        if (k > 0)
            memcpy(out, v, k);
        out[k] = '\0';
    }
    return v != NULL;
}

/* Hands the first k bytes of b to the callback, extent by extent, and drains them. */
static int deliver(struct httpc_parser *p, struct evbuffer *b, size_t k, struct err *e)
{
    while (k > 0) {
        struct evbuffer_iovec v;
        size_t take;
        int rc = 0;

        if (evbuffer_peek(b, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
            break;
        take = v.iov_len < k ? v.iov_len : k;
        if (p->max_body && p->body_bytes + take > p->max_body) {
            /* what fits is delivered first, so that the bytes delivered never depend on how
             * the input was split */
            if (p->body_bytes == p->max_body)
                return over_limit(p, e);
            take = (size_t)(p->max_body - p->body_bytes);
            k = take + 1; /* the next turn reports the limit */
        }
        p->body_bytes += take;
        if (p->on_body)
            rc = p->on_body(p, v.iov_base, take, p->arg);
        evbuffer_drain(b, take);
        if (rc < 0) {
            p->state = HTTPC_P_ERROR;
            return rc;
        }
        k -= take;
    }
    return 0;
}

/* A whole head is at the start of p->in, or not yet: parse it and pick the body framing. */
static int read_head(struct httpc_parser *p, struct err *e)
{
    struct err sub = {0};
    char two[2];
    long len;
    int rc;

    /* empty lines before the status line are dropped (as before a request line, RFC 9112 2.2) */
    while (evbuffer_copyout(p->in, two, 2) == 2 && two[0] == '\r' && two[1] == '\n') {
        evbuffer_drain(p->in, 2);
        p->scanned = 0;
    }
    len = http_head_find(p->in, HTTPC_HEAD_MAX, &p->scanned);
    if (len < 0) {
        p->state = HTTPC_P_ERROR;
        return err_set(e, ERR_LIMIT, "response head over %zu bytes", HTTPC_HEAD_MAX);
    }
    if (len == 0)
        return 0;
    p->scanned = 0;
    rc = http_head_parse_response(&p->head, p->in, (size_t)len, p->head_only ? "HEAD" : NULL, &sub);
    if (rc < 0)
        return fail(p, e, rc == ERR_LIMIT ? ERR_LIMIT : ERR_PROTO, sub.msg);
    if (p->head.status < 200) {
        if (p->head.status == 101)
            return fail(p, e, ERR_PROTO, "unexpected 101 Switching Protocols");
        return 1; /* interim answer: the real one follows */
    }
    p->status = p->head.status;
    switch (p->head.framing) {
    case HTTP_BODY_NONE:
        p->state = HTTPC_P_DONE;
        break;
    case HTTP_BODY_LENGTH:
        if (p->max_body && p->head.content_length > p->max_body) {
            p->state = HTTPC_P_ERROR;
            return err_set(e, ERR_LIMIT, "response body of %llu bytes is over the limit of %llu",
                           (unsigned long long)p->head.content_length,
                           (unsigned long long)p->max_body);
        }
        p->remaining = p->head.content_length;
        p->state = HTTPC_P_LENGTH;
        break;
    case HTTP_BODY_CHUNKED:
        http_chunked_init(&p->chunked);
        p->chunked.max_body = p->max_body;
        p->state = HTTPC_P_CHUNKED;
        break;
    case HTTP_BODY_CLOSE:
        p->state = HTTPC_P_UNTIL_EOF;
        p->to_eof = 1;
        break;
    }
    return 1;
}

/* Consumes what p->in holds, as far as it goes. */
static int parser_run(struct httpc_parser *p, struct err *e)
{
    struct err sub = {0};
    size_t have;
    int rc, drc;

    for (;;) {
        switch (p->state) {
        case HTTPC_P_HEAD:
            if ((rc = read_head(p, e)) <= 0)
                return rc;
            break;
        case HTTPC_P_CHUNKED:
            /* a chunk announced over the limit fails before its bytes arrive (the codec
             * checks each size line against max_body); the data before an error is
             * delivered first, whatever the split */
            rc = http_chunked_decode(&p->chunked, p->in, p->body, 0, &sub);
            if ((drc = deliver(p, p->body, evbuffer_get_length(p->body), e)) < 0)
                return drc;
            if (rc < 0)
                return fail(p, e, rc == ERR_LIMIT ? ERR_LIMIT : ERR_PROTO, sub.msg);
            if (p->chunked.state != HTTP_CHUNK_DONE)
                return 0;
            p->state = HTTPC_P_DONE;
            break;
        case HTTPC_P_LENGTH:
            have = evbuffer_get_length(p->in);
            if ((uint64_t)have > p->remaining)
                have = (size_t)p->remaining;
            if ((rc = deliver(p, p->in, have, e)) < 0)
                return rc;
            p->remaining -= have;
            if (p->remaining > 0)
                return 0;
            p->state = HTTPC_P_DONE;
            break;
        case HTTPC_P_UNTIL_EOF:
            return deliver(p, p->in, evbuffer_get_length(p->in), e);
        case HTTPC_P_DONE:
            have = evbuffer_get_length(p->in);
            p->extra += have;
            evbuffer_drain(p->in, have);
            return 0;
        case HTTPC_P_ERROR:
            return ERR_PROTO;
        }
    }
}

int httpc_parser_feed(struct httpc_parser *p, const char *d, size_t n, struct err *e)
{
    if (p->state == HTTPC_P_ERROR)
        return err_set(e, ERR_PROTO, "bad HTTP response: parser in error");
    if (p->state == HTTPC_P_DONE) {
        p->extra += n;
        return 0;
    }
    if (n > 0 && evbuffer_add(p->in, d, n) != 0)
        abort(); /* allocation failure */
    return parser_run(p, e);
}

int httpc_parser_keep_alive(const struct httpc_parser *p)
{
    return p->state == HTTPC_P_DONE && !p->to_eof && p->extra == 0 && p->head.keep_alive;
}

int httpc_parser_eof(struct httpc_parser *p, struct err *e)
{
    if (p->state == HTTPC_P_UNTIL_EOF)
        p->state = HTTPC_P_DONE;
    if (p->state == HTTPC_P_DONE)
        return 0;
    if (p->state == HTTPC_P_ERROR)
        return err_set(e, ERR_PROTO, "bad HTTP response");
    if (p->state == HTTPC_P_HEAD && evbuffer_get_length(p->in) == 0)
        return err_set(e, ERR_PROTO, "connection closed before any response");
    return err_set(e, ERR_PROTO,
                   "connection closed before the end of the response (HTTP %d, %llu body bytes)",
                   p->status, (unsigned long long)p->body_bytes);
}

/* ---- transport ---- */

/* One socket (plain or TLS) and the waits of the request in flight on it. */
struct link {
    int fd; /* -1: closed */
    SSL *ssl;
    char where[HTTPC_HOST_MAX + 64]; /* the peer, for messages: c->peer or host:port */
    int64_t deadline_ns;             /* total deadline (monotonic) */
    int idle_ms;
    int total_ms;
    volatile sig_atomic_t *stop;
};

/* Waits for events on l->fd: 0 when ready, ERR_TIMEOUT, ERR_SYS (interrupted or poll failed). */
static int link_wait(struct link *l, short events, const char *doing, struct err *e)
{
    for (;;) {
        int64_t left_ms = (l->deadline_ns - time_mono_ns()) / 1000000;
        int t = l->idle_ms;
        if (left_ms <= 0)
            return err_set(e, ERR_TIMEOUT, "%s %s: no complete answer within %g s", doing, l->where,
                           l->total_ms / 1000.0);
        if (left_ms < t)
            t = (int)left_ms;
        struct pollfd pfd = {.fd = l->fd, .events = events};
        int r = poll(&pfd, 1, t);
        if (l->stop && *l->stop)
            return err_set(e, ERR_SYS, "%s %s: interrupted", doing, l->where);
        if (r > 0)
            return 0;
        if (r == 0) {
            if (t == l->idle_ms)
                return err_set(e, ERR_TIMEOUT, "%s %s: nothing for %g s", doing, l->where,
                               l->idle_ms / 1000.0);
            continue; /* the total deadline: reported at the top */
        }
        if (errno != EINTR)
            return err_set(e, ERR_SYS, "poll: %s", strerror(errno));
    }
}

static void tls_error_text(char *out, size_t n)
{
    unsigned long code = ERR_get_error();
    if (code == 0)
        snprintf(out, n, "%s", errno ? strerror(errno) : "connection closed");
    else
        ERR_error_string_n(code, out, n);
    ERR_clear_error();
}

/* Waits as SSL asks after a call returned rc. 0 to retry, or an error. */
/* After a failed send(2)/recv(2) (errno set): 0 to try again (interrupted, or l became ready
 * within its deadline: link_wait for events, its timeout named by waiting), else the error
 * ("doing HOST: reason"). */
static int sock_retry(struct link *l, short events, const char *waiting, const char *doing,
                      struct err *e)
{
    int err = errno;

    if (err == EINTR)
        return 0;
    if (err == EAGAIN || err == EWOULDBLOCK)
        return link_wait(l, events, waiting, e);
    return err_set(e, ERR_IO, "%s %s: %s", doing, l->where, strerror(err));
}

static int tls_retry(struct link *l, int rc, const char *doing, struct err *e)
{
    char why[200];
    int se = SSL_get_error(l->ssl, rc);

    if (se == SSL_ERROR_WANT_READ)
        return link_wait(l, POLLIN, doing, e);
    if (se == SSL_ERROR_WANT_WRITE)
        return link_wait(l, POLLOUT, doing, e);
    tls_error_text(why, sizeof(why));
    return err_set(e, ERR_IO, "%s %s: TLS: %s", doing, l->where, why);
}

static int tls_start(struct link *l, SSL_CTX *ctx, const struct url *u, struct err *e)
{
    int rc;

    l->ssl = SSL_new(ctx);
    if (l->ssl == NULL || SSL_set_fd(l->ssl, l->fd) != 1)
        return err_set(e, ERR_SYS, "cannot make a TLS session");
    if ((rc = tls_client_session_host(l->ssl, u->host, e)) < 0)
        return rc;
    for (;;) {
        int rc = SSL_connect(l->ssl);
        if (rc == 1)
            return 0;
        long vr = SSL_get_verify_result(l->ssl);
        if (vr != X509_V_OK)
            return err_set(e, ERR_IO, "TLS handshake with %s: certificate: %s", l->where,
                           X509_verify_cert_error_string(vr));
        if ((rc = tls_retry(l, rc, "TLS handshake with", e)) < 0)
            return rc;
    }
}

/* Connects l (closed) to u, then starts TLS for https. The TLS handshake waits against
 * l->deadline_ns, with a session from ctx (made for https URLs only). On error l may hold a
 * socket: link_close it. */
static int link_open(struct link *l, SSL_CTX *ctx, const struct url *u, int connect_timeout_ms,
                     struct err *e)
{
    struct addrinfo hints, *res = NULL, *ai;
    int rc, last_errno = 0, timed_out = 0;
    int64_t end; /* one deadline for every address the name has */

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0)
        return err_set(e, ERR_INVALID, "cannot resolve '%s': %s", u->host, gai_strerror(rc));
    end = time_mono_ns() + (int64_t)connect_timeout_ms * 1000000;
    for (ai = res; ai; ai = ai->ai_next) {
        if (ai != res && time_mono_ns() >= end) {
            timed_out = 1;
            break;
        }
        int fd =
            socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last_errno = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            l->fd = fd;
            break;
        }
        if (errno != EINPROGRESS) {
            last_errno = errno;
            close(fd);
            continue;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int r;
        for (;;) {
            int64_t left = (end - time_mono_ns()) / 1000000;
            r = poll(&pfd, 1, left > 0 ? (int)left : 0);
            if (l->stop && *l->stop) {
                close(fd);
                freeaddrinfo(res);
                return err_set(e, ERR_SYS, "connecting to %s: interrupted", l->where);
            }
            if (r >= 0 || errno != EINTR)
                break;
        }
        if (r == 0) {
            timed_out = 1;
            close(fd);
            continue;
        }
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
            soerr = errno;
        if (soerr == 0) {
            l->fd = fd;
            break;
        }
        last_errno = soerr;
        close(fd);
    }
    freeaddrinfo(res);
    if (l->fd >= 0) {
        /* A request is one write (build_request), and its answer is awaited at once: Nagle's
         * algorithm would only hold back a last segment until the peer's delayed ACK (40 ms). */
        int one = 1;
        (void)setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    if (l->fd < 0) {
        if (timed_out && last_errno == 0)
            return err_set(e, ERR_TIMEOUT, "cannot connect to %s: no answer within %d ms", l->where,
                           connect_timeout_ms);
        return err_set(e, ERR_IO, "cannot connect to %s: %s", l->where,
                       strerror(last_errno ? last_errno : ECONNREFUSED));
    }
    if (u->tls)
        return tls_start(l, ctx, u, e);
    return 0;
}

/* 1 when an open, idle l may carry a request: nothing to read (a readable idle socket holds
 * the peer's close or stray bytes). For TLS, records without application data (TLS 1.3
 * session tickets) are consumed first. */
static int link_idle_ok(struct link *l)
{
    struct pollfd pfd = {.fd = l->fd, .events = POLLIN};
    int r = poll(&pfd, 1, 0);

    if (r == 0)
        return 1;
    if (r < 0 || l->ssl == NULL)
        return 0;
    char b;
    size_t got = 0;
    int rc = SSL_peek_ex(l->ssl, &b, 1, &got);
    int ok = rc != 1 && SSL_get_error(l->ssl, rc) == SSL_ERROR_WANT_READ;
    ERR_clear_error();
    return ok;
}

static int link_write_all(struct link *l, const char *p, size_t n, struct err *e)
{
    while (n > 0) {
        ssize_t w;
        if (l->ssl) {
            size_t done = 0;
            int rc = SSL_write_ex(l->ssl, p, n, &done);
            if (rc <= 0) {
                if ((rc = tls_retry(l, rc, "sending to", e)) < 0)
                    return rc;
                continue;
            }
            w = (ssize_t)done;
        } else {
            w = send(l->fd, p, n, MSG_NOSIGNAL);
            if (w < 0) {
                int rc = sock_retry(l, POLLOUT, "sending to", "sending to", e);
                if (rc < 0)
                    return rc;
                continue;
            }
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads some bytes: > 0 count, 0 at end of stream, or a negative error. */
static ssize_t link_read(struct link *l, char *p, size_t n, struct err *e)
{
    for (;;) {
        if (l->ssl) {
            size_t got = 0;
            int rc = SSL_read_ex(l->ssl, p, n, &got);
            if (rc == 1)
                return (ssize_t)got;
            int se = SSL_get_error(l->ssl, rc);
            if (se == SSL_ERROR_ZERO_RETURN)
                return 0;
            if (se == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0)
                return 0;
            if ((rc = tls_retry(l, rc, "reading from", e)) < 0)
                return rc;
            continue;
        }
        ssize_t r = recv(l->fd, p, n, 0);
        if (r >= 0)
            return r;
        int rc = sock_retry(l, POLLIN, "waiting for", "reading from", e);
        if (rc < 0)
            return rc;
    }
}

static void link_close(struct link *l)
{
    if (l->ssl)
        SSL_free(l->ssl);
    l->ssl = NULL;
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

/* Takes the request's waits and the peer's name from hc, for a request to u. */
static void link_setup(struct link *l, const struct httpc_call *hc, const struct url *u)
{
    l->idle_ms = hc->idle_timeout_ms > 0 ? hc->idle_timeout_ms : 300000;
    l->total_ms = hc->total_timeout_ms > 0 ? hc->total_timeout_ms : 900000;
    l->stop = hc->stop;
    if (hc->peer)
        snprintf(l->where, sizeof(l->where), "%s", hc->peer);
    else
        url_authority(u, l->where, sizeof(l->where));
}

static int connect_ms(const struct httpc_call *hc)
{
    return hc->connect_timeout_ms > 0 ? hc->connect_timeout_ms : 10000;
}

/* The whole request for hc to u into req, head and body, so that it goes out in one write (a
 * head and a body written apart cost a round of Nagle and delayed ACK on a socket without
 * TCP_NODELAY, and two segments on one with it); "Connection: keep-alive" or "close". */
static int build_request(struct buf *req, const struct httpc_call *hc, const struct url *u,
                         int keep, struct err *e)
{
    char host_hdr[HTTPC_HOST_MAX + 16];

    url_host_field(u, host_hdr, sizeof(host_hdr));
    buf_addf(req, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: %s\r\n", hc->method, hc->target,
             host_hdr, keep ? "keep-alive" : "close");
    if (hc->body_len > 0 || strcmp(hc->method, "POST") == 0)
        buf_addf(req, "Content-Length: %zu\r\n", hc->body_len);
    for (const char *const *h = hc->headers; h && *h; h++)
        buf_addf(req, "%s\r\n", *h);
    buf_adds(req, "\r\n");
    if (hc->body_len > 0 && buf_add(req, hc->body, hc->body_len) < 0)
        return err_set(e, ERR_LIMIT, "a request body of %zu bytes is over the limit", hc->body_len);
    return 0;
}

/* Sends req (head and body) on the open l, then reads the response into p (initialised) until
 * it ends. *sent is set to 1 before the first byte is written. */
static int exchange(struct link *l, const struct buf *req, const struct httpc_call *hc,
                    struct httpc_parser *p, int *sent, struct err *e)
{
    char buf[16384];
    int rc;

    *sent = 1;
    if ((rc = link_write_all(l, req->data, req->len, e)) < 0)
        return rc;
    while (!httpc_parser_done(p)) {
        ssize_t r = link_read(l, buf, sizeof(buf), e);
        if (r < 0)
            return (int)r;
        if (r == 0)
            return httpc_parser_eof(p, e);
        if ((rc = httpc_parser_feed(p, buf, (size_t)r, e)) < 0)
            return rc;
    }
    return 0;
}

static void parser_start(struct httpc_parser *p, const struct httpc_call *hc)
{
    httpc_parser_init(p, hc->max_body, hc->on_body, hc->arg);
    p->head_only = strcmp(hc->method, "HEAD") == 0;
}

int httpc_call_run(const struct httpc_call *hc, struct httpc_parser *p, struct err *e)
{
    struct link l = {.fd = -1};
    struct buf req = BUF_INIT;
    SSL_CTX *ctx = NULL, *made = NULL;
    int rc, sent = 0;

    parser_start(p, hc);
    link_setup(&l, hc, hc->url);
    l.deadline_ns = time_mono_ns() + (int64_t)l.total_ms * 1000000;
    rc = build_request(&req, hc, hc->url, 0, e);
    if (rc == 0 && hc->url->tls && (ctx = hc->tls) == NULL &&
        (ctx = made = tls_client_ctx_new(NULL, e)) == NULL)
        rc = ERR_SYS; /* no CA file here: OpenSSL refused */
    if (rc == 0)
        rc = link_open(&l, ctx, hc->url, connect_ms(hc), e);
    if (rc == 0)
        rc = exchange(&l, &req, hc, p, &sent, e);
    link_close(&l);
    SSL_CTX_free(made);
    buf_release(&req);
    return rc;
}

/* ---- kept connections ---- */

struct httpc_conn {
    struct url url;
    SSL_CTX *tls; /* made with the first https connection, kept for the later ones */
    struct link l;
    unsigned long opens;
    int sent;          /* of the last request */
    int64_t idle_ns;   /* when the last exchange ended (time_mono_ns) */
    int reuse_idle_ms; /* idle longer than this: reopen rather than reuse */
};

struct httpc_conn *httpc_conn_new(const struct url *u)
{
    struct httpc_conn *k = xcalloc(1, sizeof(*k));

    k->url = *u;
    k->l.fd = -1;
    k->reuse_idle_ms = HTTPC_REUSE_IDLE_MS;
    return k;
}

void httpc_conn_close(struct httpc_conn *k)
{
    link_close(&k->l);
}

void httpc_conn_free(struct httpc_conn *k)
{
    if (k == NULL)
        return;
    link_close(&k->l);
    SSL_CTX_free(k->tls);
    free(k);
}

int httpc_conn_sent(const struct httpc_conn *k)
{
    return k->sent;
}

unsigned long httpc_conn_opens(const struct httpc_conn *k)
{
    return k->opens;
}

void httpc_conn_set_reuse_idle_ms(struct httpc_conn *k, int ms)
{
    if (k != NULL && ms > 0)
        k->reuse_idle_ms = ms;
}

int httpc_conn_run(struct httpc_conn *k, const struct httpc_call *hc, struct httpc_parser *p,
                   struct err *e)
{
    struct buf req = BUF_INIT;
    int rc = 0;

    parser_start(p, hc);
    k->sent = 0;
    link_setup(&k->l, hc, &k->url);
    if ((rc = build_request(&req, hc, &k->url, 1, e)) < 0)
        goto out;
    /* A connection idle for long may be closed by the server just as the request goes out
     * (the controller closes idle clients after 60 s): such a request would fail, not be
     * resent, so a fresh connection is opened instead. */
    if (k->l.fd >= 0 &&
        (time_mono_ns() - k->idle_ns > (int64_t)k->reuse_idle_ms * 1000000 || !link_idle_ok(&k->l)))
        link_close(&k->l);
    if (k->l.fd < 0) {
        /* the connect timeout bounds the TLS handshake too */
        int total_ms = k->l.total_ms;
        k->l.total_ms = connect_ms(hc);
        k->l.deadline_ns = time_mono_ns() + (int64_t)k->l.total_ms * 1000000;
        if (k->url.tls && k->tls == NULL && (k->tls = tls_client_ctx_new(NULL, e)) == NULL)
            rc = ERR_SYS; /* no CA file here: OpenSSL refused */
        else
            rc = link_open(&k->l, k->tls, &k->url, connect_ms(hc), e);
        k->l.total_ms = total_ms;
        if (rc < 0)
            goto out;
        k->opens++;
    }
    k->l.deadline_ns = time_mono_ns() + (int64_t)k->l.total_ms * 1000000;
    rc = exchange(&k->l, &req, hc, p, &k->sent, e);
    if (rc == 0 && !httpc_parser_keep_alive(p))
        link_close(&k->l);
    k->idle_ns = time_mono_ns();
out:
    if (rc < 0)
        link_close(&k->l);
    buf_release(&req);
    return rc;
}
