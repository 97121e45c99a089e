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

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "util/httpc.h"
#include "util/num.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define CHUNK_LINE_MAX 1024

/* ---- URLs ---- */

int httpc_url_parse(const char *url, struct httpc_url *u, struct err *e)
{
    const char *p, *host, *host_end, *port = NULL, *path;
    size_t n;

    memset(u, 0, sizeof(*u));
    if (url == NULL || *url == '\0')
        return err_set(e, ERR_INVALID, "bad URL '': empty");
    if (strncasecmp(url, "http://", 7) == 0) {
        p = url + 7;
    } else if (strncasecmp(url, "https://", 8) == 0) {
        p = url + 8;
        u->tls = 1;
    } else {
        return err_set(e, ERR_INVALID, "bad URL '%.200s': not http:// or https://", url);
    }
    if (strpbrk(url, "?#") || strpbrk(url, " \t\r\n"))
        return err_set(e, ERR_INVALID, "bad URL '%.200s': query, fragment or blank", url);
    path = strchr(p, '/');
    if (path == NULL)
        path = p + strlen(p);
    if (memchr(p, '@', (size_t)(path - p)))
        return err_set(e, ERR_INVALID, "bad URL '%.200s': credentials in the URL", url);
    if (*p == '[') {
        host = p + 1;
        host_end = memchr(host, ']', (size_t)(path - host));
        if (host_end == NULL)
            return err_set(e, ERR_INVALID, "bad URL '%.200s': unclosed '['", url);
        u->ipv6 = 1;
        if (host_end[1] == ':')
            port = host_end + 2;
        else if (host_end + 1 != path)
            return err_set(e, ERR_INVALID, "bad URL '%.200s': junk after ']'", url);
    } else {
        host = p;
        host_end = memchr(p, ':', (size_t)(path - p));
        if (host_end)
            port = host_end + 1;
        else
            host_end = path;
    }
    n = (size_t)(host_end - host);
    if (n == 0 || n >= sizeof(u->host))
        return err_set(e, ERR_INVALID, "bad URL '%.200s': empty or long host", url);
    memcpy(u->host, host, n);
    if (port) {
        long long v;
        char tmp[16];
        size_t pn = (size_t)(path - port);
        if (pn == 0 || pn >= sizeof(tmp))
            return err_set(e, ERR_INVALID, "bad URL '%.200s': bad port", url);
        memcpy(tmp, port, pn);
        tmp[pn] = '\0';
        if (num_parse_ll(tmp, 1, 65535, &v) < 0)
            return err_set(e, ERR_INVALID, "bad URL '%.200s': bad port", url);
        snprintf(u->port, sizeof(u->port), "%lld", v);
    } else {
        snprintf(u->port, sizeof(u->port), "%s", u->tls ? "443" : "80");
    }
    n = strlen(path);
    while (n > 0 && path[n - 1] == '/')
        n--;
    if (n >= sizeof(u->path))
        return err_set(e, ERR_INVALID, "bad URL '%.200s': path too long", url);
    memcpy(u->path, path, n);
    u->path[n] = '\0';
    return 0;
}

void httpc_url_authority(const struct httpc_url *u, char *out, size_t n)
{
    snprintf(out, n, u->ipv6 ? "[%s]:%s" : "%s:%s", u->host, u->port);
}

/* ---- response parser ---- */

void httpc_parser_init(struct httpc_parser *p, uint64_t max_body, httpc_body_fn on_body, void *arg)
{
    memset(p, 0, sizeof(*p));
    buf_init(&p->head, HTTPC_HEAD_MAX + 2);
    buf_init(&p->line, HTTPC_HEAD_MAX + 2);
    p->max_body = max_body;
    p->on_body = on_body;
    p->arg = arg;
}

void httpc_parser_release(struct httpc_parser *p)
{
    buf_release(&p->head);
    buf_release(&p->line);
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

/* Appends bytes up to and including '\n' to p->line. Returns 1 with the line complete (its
 * "\r\n" or "\n" stripped), 0 when the input ran out, ERR_LIMIT past limit. */
static int take_line(struct httpc_parser *p, const char *d, size_t n, size_t *i, size_t limit)
{
    const char *nl = memchr(d + *i, '\n', n - *i);
    size_t k = nl ? (size_t)(nl - (d + *i)) + 1 : n - *i;

    if (p->line.len + k > limit)
        return ERR_LIMIT;
    buf_add(&p->line, d + *i, k);
    *i += k;
    if (nl == NULL)
        return 0;
    buf_truncate(&p->line, p->line.len - 1);
    if (p->line.len > 0 && p->line.data[p->line.len - 1] == '\r')
        buf_truncate(&p->line, p->line.len - 1);
    return 1;
}

/* The k-th (0-based) header called name, as httpc_parser_header. */
static int header_nth(const struct httpc_parser *p, const char *name, size_t k, char *out, size_t n)
{
    size_t nl = strlen(name);
    const char *s = memchr(p->head.data, '\n', p->head.len);

    if (n > 0)
        out[0] = '\0';
    while (s != NULL) {
        const char *line = s + 1,
                   *end = memchr(line, '\n', p->head.len - (size_t)(line - p->head.data));
        if (end == NULL)
            end = p->head.data + p->head.len;
        if ((size_t)(end - line) > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0 &&
            k-- == 0) {
            const char *v = line + nl + 1;
            while (v < end && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = end;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            size_t k = (size_t)(ve - v);
            if (n > 0) {
                if (k >= n)
                    k = n - 1;
                memcpy(out, v, k);
                out[k] = '\0';
            }
            return 1;
        }
        s = end < p->head.data + p->head.len ? end : NULL;
    }
    return 0;
}

int httpc_parser_header(const struct httpc_parser *p, const char *name, char *out, size_t n)
{
    return header_nth(p, name, 0, out, n);
}

static int parse_status(struct httpc_parser *p, struct err *e)
{
    const char *l = p->line.data;

    if (p->line.len < 12 || strncmp(l, "HTTP/1.", 7) != 0 || (l[7] != '0' && l[7] != '1') ||
        l[8] != ' ')
        return fail(p, e, ERR_PROTO, "malformed status line");
    for (int k = 9; k < 12; k++)
        if (l[k] < '0' || l[k] > '9')
            return fail(p, e, ERR_PROTO, "malformed status code");
    if (p->line.len > 12 && l[12] != ' ')
        return fail(p, e, ERR_PROTO, "malformed status line");
    p->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
    if (p->status < 100)
        return fail(p, e, ERR_PROTO, "status below 100");
    return 0;
}

/* The head ended: pick the body framing. */
static int end_of_head(struct httpc_parser *p, struct err *e)
{
    char te[256], cl[64], other[64];

    if (p->status >= 100 && p->status < 200) {
        if (p->status == 101)
            return fail(p, e, ERR_PROTO, "unexpected 101 Switching Protocols");
        buf_reset(&p->head); /* interim answer: the real one follows */
        p->status = 0;
        return 0;
    }
    if (p->head_only || p->status == 204 || p->status == 304) {
        p->state = HTTPC_P_DONE;
        return 0;
    }
    if (httpc_parser_header(p, "transfer-encoding", te, sizeof(te))) {
        size_t k = strlen(te);
        while (k > 0 && (te[k - 1] == ' ' || te[k - 1] == ','))
            k--;
        if (k >= 7 && strncasecmp(te + k - 7, "chunked", 7) == 0) {
            p->state = HTTPC_P_CHUNK_SIZE;
            return 0;
        }
        p->state = HTTPC_P_UNTIL_EOF; /* another coding last: the body runs to the close */
        p->to_eof = 1;
        return 0;
    }
    if (httpc_parser_header(p, "content-length", cl, sizeof(cl))) {
        uint64_t v;
        for (const char *c = cl; *c; c++)
            if (*c < '0' || *c > '9')
                return fail(p, e, ERR_PROTO, "bad Content-Length");
        if (cl[0] == '\0' || strlen(cl) > 18 || num_parse_u64(cl, &v) < 0)
            return fail(p, e, ERR_PROTO, "bad Content-Length");
        for (size_t k = 1; header_nth(p, "content-length", k, other, sizeof(other)); k++)
            if (strcmp(other, cl) != 0)
                return fail(p, e, ERR_PROTO, "conflicting Content-Length values");
        if (p->max_body && v > p->max_body) {
            p->state = HTTPC_P_ERROR;
            return err_set(e, ERR_LIMIT, "response body of %llu bytes is over the limit of %llu",
                           (unsigned long long)v, (unsigned long long)p->max_body);
        }
        p->remaining = v;
        p->state = v == 0 ? HTTPC_P_DONE : HTTPC_P_LENGTH;
        return 0;
    }
    p->state = HTTPC_P_UNTIL_EOF;
    p->to_eof = 1;
    return 0;
}

static int deliver(struct httpc_parser *p, const char *d, size_t n, struct err *e)
{
    if (n == 0)
        return 0;
    if (p->max_body && p->body_bytes + n > p->max_body) {
        p->state = HTTPC_P_ERROR;
        return err_set(e, ERR_LIMIT, "response body is over the limit of %llu bytes",
                       (unsigned long long)p->max_body);
    }
    p->body_bytes += n;
    if (p->on_body) {
        int rc = p->on_body(p, d, n, p->arg);
        if (rc < 0) {
            p->state = HTTPC_P_ERROR;
            return rc;
        }
    }
    return 0;
}

static int parse_chunk_size(struct httpc_parser *p, struct err *e)
{
    uint64_t v = 0;
    size_t k = 0;
    const char *l = p->line.data;

    for (; k < p->line.len; k++) {
        int d = num_hexval((unsigned char)l[k]);
        if (d < 0)
            break;
        if (v > ((uint64_t)1 << 56))
            return fail(p, e, ERR_PROTO, "chunk size too large");
        v = v * 16 + (uint64_t)d;
    }
    if (k == 0)
        return fail(p, e, ERR_PROTO, "malformed chunk size");
    while (k < p->line.len && (l[k] == ' ' || l[k] == '\t'))
        k++;
    if (k < p->line.len && l[k] != ';')
        return fail(p, e, ERR_PROTO, "malformed chunk size");
    if (p->max_body && v > p->max_body - p->body_bytes) {
        p->state = HTTPC_P_ERROR;
        return err_set(e, ERR_LIMIT, "response body is over the limit of %llu bytes",
                       (unsigned long long)p->max_body);
    }
    p->remaining = v;
    p->state = v == 0 ? HTTPC_P_TRAILER : HTTPC_P_CHUNK_DATA;
    return 0;
}

int httpc_parser_feed(struct httpc_parser *p, const char *d, size_t n, struct err *e)
{
    size_t i = 0;
    int rc;

    if (p->state == HTTPC_P_ERROR)
        return err_set(e, ERR_PROTO, "bad HTTP response: parser in error");
    while (i < n && p->state != HTTPC_P_DONE) {
        switch (p->state) {
        case HTTPC_P_HEAD:
        case HTTPC_P_TRAILER:
            rc = take_line(p, d, n, &i,
                           p->head.len < HTTPC_HEAD_MAX ? HTTPC_HEAD_MAX - p->head.len : 0);
            if (rc == ERR_LIMIT) {
                p->state = HTTPC_P_ERROR;
                return err_set(e, ERR_LIMIT, "response head over %zu bytes", HTTPC_HEAD_MAX);
            }
            if (rc == 0)
                break;
            if (p->state == HTTPC_P_TRAILER) {
                if (p->line.len == 0)
                    p->state = HTTPC_P_DONE;
                buf_reset(&p->line);
                break;
            }
            if (p->head.len == 0) {
                if (p->line.len == 0) /* tolerate blank lines before the status line */
                    break;
                if ((rc = parse_status(p, e)) < 0)
                    return rc;
                buf_add(&p->head, p->line.data, p->line.len);
            } else if (p->line.len == 0) {
                if ((rc = end_of_head(p, e)) < 0)
                    return rc;
            } else {
                const char *colon = memchr(p->line.data, ':', p->line.len);
                if (colon == NULL || colon == p->line.data || p->line.data[0] == ' ' ||
                    p->line.data[0] == '\t')
                    return fail(p, e, ERR_PROTO, "malformed header line");
                buf_addc(&p->head, '\n');
                buf_add(&p->head, p->line.data, p->line.len);
            }
            buf_reset(&p->line);
            break;
        case HTTPC_P_CHUNK_SIZE:
            rc = take_line(p, d, n, &i, CHUNK_LINE_MAX);
            if (rc == ERR_LIMIT)
                return fail(p, e, ERR_PROTO, "chunk size line too long");
            if (rc == 0)
                break;
            rc = parse_chunk_size(p, e);
            buf_reset(&p->line);
            if (rc < 0)
                return rc;
            break;
        case HTTPC_P_CHUNK_DATA:
        case HTTPC_P_LENGTH: {
            size_t k = n - i;
            if ((uint64_t)k > p->remaining)
                k = (size_t)p->remaining;
            if ((rc = deliver(p, d + i, k, e)) < 0)
                return rc;
            i += k;
            p->remaining -= k;
            if (p->remaining == 0)
                p->state = p->state == HTTPC_P_LENGTH ? HTTPC_P_DONE : HTTPC_P_CHUNK_CRLF;
            break;
        }
        case HTTPC_P_CHUNK_CRLF:
            rc = take_line(p, d, n, &i, 2);
            if (rc == ERR_LIMIT || (rc == 1 && p->line.len != 0))
                return fail(p, e, ERR_PROTO, "missing CRLF after chunk data");
            if (rc == 1) {
                p->state = HTTPC_P_CHUNK_SIZE;
                buf_reset(&p->line);
            }
            break;
        case HTTPC_P_UNTIL_EOF:
            if ((rc = deliver(p, d + i, n - i, e)) < 0)
                return rc;
            i = n;
            break;
        case HTTPC_P_DONE:
        case HTTPC_P_ERROR:
            break;
        }
    }
    if (p->state == HTTPC_P_DONE)
        p->extra += n - i;
    return 0;
}

/* 1 when the comma-separated list has token (case-insensitive). */
static int list_has(const char *list, const char *token)
{
    size_t tn = strlen(token);

    for (const char *s = list; *s;) {
        while (*s == ' ' || *s == '\t' || *s == ',')
            s++;
        const char *t = s;
        while (*s && *s != ',')
            s++;
        const char *te = s;
        while (te > t && (te[-1] == ' ' || te[-1] == '\t'))
            te--;
        if ((size_t)(te - t) == tn && strncasecmp(t, token, tn) == 0)
            return 1;
    }
    return 0;
}

int httpc_parser_keep_alive(const struct httpc_parser *p)
{
    char v[256];
    int has = httpc_parser_header(p, "connection", v, sizeof(v));

    if (p->state != HTTPC_P_DONE || p->to_eof || p->extra > 0 || p->head.len < 8)
        return 0;
    if (has && list_has(v, "close"))
        return 0;
    if (httpc_parser_header(p, "transfer-encoding", NULL, 0) &&
        httpc_parser_header(p, "content-length", NULL, 0))
        return 0;               /* RFC 9112 6.3: the framing is in doubt; do not reuse */
    if (p->head.data[7] == '0') /* HTTP/1.0: only when asked for */
        return has && list_has(v, "keep-alive");
    return 1;
}

int httpc_parser_eof(struct httpc_parser *p, struct err *e)
{
    if (p->state == HTTPC_P_UNTIL_EOF)
        p->state = HTTPC_P_DONE;
    if (p->state == HTTPC_P_DONE)
        return 0;
    if (p->state == HTTPC_P_ERROR)
        return err_set(e, ERR_PROTO, "bad HTTP response");
    if (p->status == 0 && p->head.len == 0 && p->line.len == 0)
        return err_set(e, ERR_PROTO, "connection closed before any response");
    return err_set(e, ERR_PROTO,
                   "connection closed before the end of the response (HTTP %d, %llu body bytes)",
                   p->status, (unsigned long long)p->body_bytes);
}

/* ---- transport ---- */

static SSL_CTX *tls_ctx;

void httpc_global_cleanup(void)
{
    if (tls_ctx) {
        SSL_CTX_free(tls_ctx);
        tls_ctx = NULL;
    }
}

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

static int tls_start(struct link *l, const struct httpc_url *u, struct err *e)
{
    if (tls_ctx == NULL) {
        tls_ctx = SSL_CTX_new(TLS_client_method());
        if (tls_ctx == NULL)
            return err_set(e, ERR_SYS, "cannot make a TLS context");
        SSL_CTX_set_min_proto_version(tls_ctx, TLS1_2_VERSION);
        SSL_CTX_set_default_verify_paths(tls_ctx);
        SSL_CTX_set_verify(tls_ctx, SSL_VERIFY_PEER, NULL);
        SSL_CTX_set_options(tls_ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    }
    l->ssl = SSL_new(tls_ctx);
    if (l->ssl == NULL || SSL_set_fd(l->ssl, l->fd) != 1)
        return err_set(e, ERR_SYS, "cannot make a TLS session");
    unsigned char tmp[16];
    int is_ip = inet_pton(AF_INET, u->host, tmp) == 1 || inet_pton(AF_INET6, u->host, tmp) == 1;
    if (is_ip) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(l->ssl), u->host);
    } else {
        SSL_set_tlsext_host_name(l->ssl, u->host);
        SSL_set1_host(l->ssl, u->host);
    }
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
 * l->deadline_ns. On error l may hold a socket: link_close it. */
static int link_open(struct link *l, const struct httpc_url *u, int connect_timeout_ms,
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
        return tls_start(l, u, e);
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
static void link_setup(struct link *l, const struct httpc_call *hc, const struct httpc_url *u)
{
    l->idle_ms = hc->idle_timeout_ms > 0 ? hc->idle_timeout_ms : 300000;
    l->total_ms = hc->total_timeout_ms > 0 ? hc->total_timeout_ms : 900000;
    l->stop = hc->stop;
    if (hc->peer)
        snprintf(l->where, sizeof(l->where), "%s", hc->peer);
    else
        httpc_url_authority(u, l->where, sizeof(l->where));
}

static int connect_ms(const struct httpc_call *hc)
{
    return hc->connect_timeout_ms > 0 ? hc->connect_timeout_ms : 10000;
}

/* The whole request for hc to u into req, head and body, so that it goes out in one write (a
 * head and a body written apart cost a round of Nagle and delayed ACK on a socket without
 * TCP_NODELAY, and two segments on one with it); "Connection: keep-alive" or "close". */
static int build_request(struct buf *req, const struct httpc_call *hc, const struct httpc_url *u,
                         int keep, struct err *e)
{
    char host_hdr[HTTPC_HOST_MAX + 16];

    if ((u->tls && strcmp(u->port, "443") == 0) || (!u->tls && strcmp(u->port, "80") == 0))
        snprintf(host_hdr, sizeof(host_hdr), u->ipv6 ? "[%s]" : "%s", u->host);
    else
        httpc_url_authority(u, host_hdr, sizeof(host_hdr));
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
    int rc, sent = 0;

    parser_start(p, hc);
    link_setup(&l, hc, hc->url);
    l.deadline_ns = time_mono_ns() + (int64_t)l.total_ms * 1000000;
    rc = build_request(&req, hc, hc->url, 0, e);
    if (rc == 0)
        rc = link_open(&l, hc->url, connect_ms(hc), e);
    if (rc == 0)
        rc = exchange(&l, &req, hc, p, &sent, e);
    link_close(&l);
    buf_release(&req);
    return rc;
}

/* ---- kept connections ---- */

struct httpc_conn {
    struct httpc_url url;
    struct link l;
    unsigned long opens;
    int sent;          /* of the last request */
    int64_t idle_ns;   /* when the last exchange ended (time_mono_ns) */
    int reuse_idle_ms; /* idle longer than this: reopen rather than reuse */
};

struct httpc_conn *httpc_conn_new(const struct httpc_url *u)
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
        rc = link_open(&k->l, &k->url, connect_ms(hc), e);
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
