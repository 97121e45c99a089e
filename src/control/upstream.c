/*
 * upstream: HTTP/1.1 client connections with a keep-alive pool and TLS (state table in
 * upstream.h).
 *
 * A request starts from its own deferred event (ureq.start), never inside upstream_send, so
 * that a connect error reported synchronously by libevent still reaches the caller from the
 * loop. Each connection holds a reference while one of its callbacks runs (uconn_hold) and
 * is freed when the last reference drops (tmux server_client_unref). The request keeps its
 * serialised bytes until the response head arrives, so it can be sent again when a reused
 * pooled connection turns out to have been closed by the origin.
 *
 * The edges of the table in upstream.h and the function that takes each:
 *   request: started (upstream_send) -> on a connection (ureq_dispatch: a pooled one, or a
 *            new one in CONNECTING) -> head received (uconn_process) -> done (uconn_finish)
 *            or failed (uconn_fail: sent again once through its start event when a reused
 *            connection failed before any byte) or cancelled (ureq_cancel); paused and
 *            resumed at any point (ureq_pause).
 *   connection: CONNECTING -> HEAD (uconn_send, from uconn_event_cb), HEAD -> BODY
 *            (uconn_process), HEAD/BODY -> IDLE (uconn_finish), IDLE -> HEAD (ureq_dispatch
 *            then uconn_send), any -> closed (uconn_close, uconn_fail, ureq_cancel).
 * assert_uconn_state and assert_ureq_state check the invariants after each edge.
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/util.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "codec/tls.h"
#include "util/url.h"
#include "control/tlsout.h"
#include "control/upstream.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/banned.h"

enum uconn_state { U_CONNECTING, U_HEAD, U_BODY, U_IDLE };

struct uconn {
    struct upstream *u;
    struct uconn *prev, *next; /* all connections of the origin */
    struct bufferevent *bev;
    struct event *timer; /* pool idle timeout, or a kick after ureq_pause(q, 0) */
    enum uconn_state state;
    int refs, dead;
    int reused; /* served a request before the current one */
    int idle;   /* in the pool */
    int kick;   /* the timer is a kick, not the pool timeout */
    int eof;    /* the origin closed its side; the input may still hold body bytes */
    struct ureq *q;
    struct http_head head;
    struct http_chunked chunked;
    uint64_t body_left;
    size_t scanned;
    struct evbuffer *piece; /* decoded body staging for on_body */
};

struct ureq {
    struct upstream *u;
    struct ureq *prev, *next; /* every live request of the origin */
    struct uconn *c;
    struct ureq_callbacks cb;
    void *arg;
    struct evbuffer *wire; /* the serialised request, until the response head arrives: the
                            * head copied, then the caller's body by reference */
    size_t head_len;       /* bytes of wire before the body */
    struct event *start;
    char method[16];
    int got_bytes; /* a byte of the response arrived */
    int got_head;
    int paused;
    int resent; /* already sent again after a stale pooled connection */
};

struct upstream {
    struct event_base *base;
    struct evdns_base *dns;
    struct upstream_config cfg;
    char *url, *host, *hosthdr, *prefix;
    int port;
    int tls;       /* https: connections get TLS */
    char *ca_file; /* extra CA for TLS, or NULL */
    char *addr;    /* cfg.connect_addr, or NULL */
    SSL_CTX *ssl;  /* created with the first TLS connection (OpenSSL's start-up costs ~4 MB) */
    struct uconn *conns;
    struct ureq *reqs;
    size_t nidle;
};

static void uconn_process(struct uconn *c);

#ifndef NDEBUG
/* The invariants of struct ureq (sqlite's assert_pager_state). Returns 1 for assert(). */
static int assert_ureq_state(const struct ureq *q)
{
    /* The serialised request is kept exactly until the response head arrives. */
    assert((q->wire == NULL) == q->got_head);
    assert(!q->got_head || q->got_bytes);
    assert(q->start != NULL);
    if (q->c != NULL) {
        const struct uconn *c = q->c;
        /* A request and its connection point at each other; a live one is not pooled. */
        assert(c->q == q);
        assert(!c->idle);
        assert(c->dead || c->state != U_IDLE);
        /* The head comes in HEAD; after it the connection reads the body. */
        assert(c->dead || q->got_head == (c->state == U_BODY));
        assert(c->dead || c->state != U_CONNECTING || !q->got_bytes);
        /* A request sent again never goes back on a pooled connection. */
        assert(!q->resent || !c->reused);
        /* A paused body is not read. */
        assert(c->dead || !q->paused || c->state != U_BODY ||
               !(bufferevent_get_enabled(c->bev) & EV_READ));
    }
    return 1;
}

/* The invariants of struct uconn, and of the pool count. Returns 1 for assert(). */
static int assert_uconn_state(const struct uconn *c)
{
    const struct upstream *u = c->u;
    size_t nidle = 0;

    assert(c->refs >= 0);
    /* Exactly the pooled connections are IDLE; they have no request, no kick, and no
     * unread byte; a pooled connection is one that served a request. */
    assert(!c->idle || (c->state == U_IDLE && c->q == NULL && !c->kick && c->reused));
    assert(c->dead || c->idle == (c->state == U_IDLE));
    assert(!c->idle || c->dead || evbuffer_get_length(bufferevent_get_input(c->bev)) == 0);
    /* A new connection has served nothing. */
    assert(c->state != U_CONNECTING || !c->reused);
    /* The origin's EOF is seen only on a connection that carried a request. */
    assert(!c->eof || c->state != U_CONNECTING);
    /* A kick resumes a request that is still there. */
    assert(!c->kick || c->dead || c->q != NULL);
    assert(c->q == NULL || c->q->c == c);
    for (const struct uconn *p = u->conns; p; p = p->next)
        nidle += p->idle;
    assert(nidle == u->nidle);
    assert(u->nidle <= u->cfg.max_idle);
    return 1;
}
#endif

static struct timeval ms_tv(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

/* ---- origin ---- */

struct upstream *upstream_new(struct event_base *base, struct evdns_base *dns, const char *url,
                              const struct upstream_config *cfg, struct err *e)
{
    struct upstream *u = NULL;
    struct url pu;
    struct err sub = {0};
    char hosthdr[URL_HOST_MAX + 16];

    if (url_parse(url, &pu, &sub) < 0) { /* the message quotes the URL redacted */
        err_set(e, ERR_INVALID, "upstream URL: %s", sub.msg);
        return NULL;
    }
    u = xcalloc(1, sizeof(*u));
    u->base = base;
    u->dns = dns;
    u->cfg = *cfg;
    u->cfg.ca_file = NULL;
    u->cfg.connect_addr = NULL;
    if (cfg->connect_addr)
        u->addr = xstrdup(cfg->connect_addr);
    u->url = xstrdup(url);
    u->host = xstrdup(pu.host);
    u->port = url_port(&pu);
    url_host_field(&pu, hosthdr, sizeof(hosthdr));
    u->hosthdr = xstrdup(hosthdr);
    u->prefix = xstrdup(pu.path);
    if (u->cfg.max_idle == 0)
        u->cfg.max_idle = 64;
    if (u->cfg.pool_idle_ms <= 0)
        u->cfg.pool_idle_ms = 30000;
    if (u->cfg.connect_timeout_ms <= 0)
        u->cfg.connect_timeout_ms = 10000;
    if (u->cfg.first_byte_timeout_ms <= 0)
        u->cfg.first_byte_timeout_ms = 600000;
    if (u->cfg.idle_timeout_ms <= 0)
        u->cfg.idle_timeout_ms = 300000;
    u->tls = pu.tls;
    if (u->tls && cfg->ca_file) {
        if (access(cfg->ca_file, R_OK) != 0) {
            err_set(e, ERR_INVALID, "cannot read CA file '%s': %s", cfg->ca_file, strerror(errno));
            goto fail;
        }
        u->ca_file = xstrdup(cfg->ca_file);
    }
    return u;
fail:
    upstream_free(u);
    return NULL;
}

/* The TLS context (the codec's one client set-up), made on first use. NULL when OpenSSL
 * refuses or the CA file does not load (logged). */
static SSL_CTX *tls_context(struct upstream *u)
{
    struct err e = {0};

    if (u->ssl == NULL && (u->ssl = tls_client_ctx_new(u->ca_file, &e)) == NULL)
        log_error("upstream", "%s", e.msg);
    return u->ssl;
}

const char *upstream_host(const struct upstream *u)
{
    return u->hosthdr;
}

const char *upstream_prefix(const struct upstream *u)
{
    return u->prefix;
}

const char *upstream_url(const struct upstream *u)
{
    return u->url;
}

/* ---- connections ---- */

static void uconn_destroy(struct uconn *c)
{
    struct upstream *u = c->u;

    if (c->prev)
        c->prev->next = c->next;
    else
        u->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->idle)
        u->nidle--;
    if (c->bev)
        bufferevent_free(c->bev);
    event_free(c->timer);
    evbuffer_free(c->piece);
    http_head_release(&c->head);
    free(c);
}

static void uconn_hold(struct uconn *c)
{
    c->refs++;
}

static void uconn_unhold(struct uconn *c)
{
    if (--c->refs == 0 && c->dead)
        uconn_destroy(c);
}

/* Closes c (its request, if any, must already be detached). */
static void uconn_close(struct uconn *c)
{
    if (c->dead)
        return;
    c->dead = 1;
    if (c->bev)
        bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    evtimer_del(c->timer);
    if (c->refs == 0)
        uconn_destroy(c);
}

static void ureq_free(struct ureq *q)
{
    if (q->prev)
        q->prev->next = q->next;
    else
        q->u->reqs = q->next;
    if (q->next)
        q->next->prev = q->prev;
    if (q->wire)
        evbuffer_free(q->wire);
    event_free(q->start);
    free(q);
}

static void ureq_dispatch(struct ureq *q);

/* Ends q with an error (detaching it from c, which is closed). Sends it again instead when
 * the connection was a reused one that failed before any response byte. */
static void uconn_fail(struct uconn *c, int code, const char *msg)
{
    struct ureq *q = c->q;
    int reused = c->reused; /* c may be freed by uconn_close when no callback holds it */

    assert(assert_uconn_state(c));
    assert(q == NULL || assert_ureq_state(q));
    c->q = NULL;
    uconn_close(c);
    if (q == NULL)
        return;
    q->c = NULL;
    if (reused && !q->got_bytes && !q->resent && q->wire && code != UPSTREAM_ETIMEOUT) {
        log_debug("upstream", "stale pooled connection to %s; sending again", q->u->url);
        q->resent = 1;
        q->got_bytes = 0;
        assert(assert_ureq_state(q));
        event_active(q->start, EV_TIMEOUT, 1);
        return;
    }
    q->cb.on_error(q, code, q->got_head, msg, q->arg);
    ureq_free(q);
}

/* The response is complete: report it, then pool or close the connection. */
static void uconn_finish(struct uconn *c)
{
    struct ureq *q = c->q;
    struct upstream *u = c->u;
    int reuse = c->head.keep_alive && evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
                evbuffer_get_length(bufferevent_get_output(c->bev)) == 0 &&
                u->nidle < u->cfg.max_idle;

    assert(assert_uconn_state(c));
    assert(assert_ureq_state(q));
    c->q = NULL;
    q->c = NULL;
    q->cb.on_done(q, q->arg);
    ureq_free(q);
    if (c->dead)
        return;
    if (!reuse) {
        uconn_close(c);
        return;
    }
    c->state = U_IDLE;
    c->idle = 1;
    c->reused = 1;
    u->nidle++;
    bufferevent_set_timeouts(c->bev, NULL, NULL);
    bufferevent_enable(c->bev, EV_READ);
    c->kick = 0;
    {
        struct timeval tv = ms_tv(u->cfg.pool_idle_ms);
        evtimer_add(c->timer, &tv);
    }
    assert(assert_uconn_state(c));
}

/* Appends q->wire from byte off on to out: the head copied (the wire is freed when the
 * response head arrives, which may be before out drains), the body by reference (the caller
 * keeps it until the request ends, and a connection whose output still holds some is never
 * pooled: uconn_finish). No copy of a 30 MiB body. */
static void wire_copy_from(struct ureq *q, size_t off, struct evbuffer *out)
{
    size_t total = evbuffer_get_length(q->wire);

    while (off < total) {
        struct evbuffer_iovec v[16];
        struct evbuffer_ptr pos;
        int n;

        evbuffer_ptr_set(q->wire, &pos, off, EVBUFFER_PTR_SET);
        n = evbuffer_peek(q->wire, -1, &pos, v, 16);
        if (n > 16)
            n = 16;
        for (int i = 0; i < n; i++) {
            if (off >= q->head_len)
                evbuffer_add_reference(out, v[i].iov_base, v[i].iov_len, NULL, NULL);
            else
                evbuffer_add(out, v[i].iov_base, v[i].iov_len);
            off += v[i].iov_len;
        }
    }
}

/* Writes what the socket takes of q->wire at once, straight from the wire (never through
 * the bufferevent's output, whose start libevent freezes outside its own write callback:
 * evbuffer_write on it then fails with errno unset). Returns the bytes written, or ERR_SYS
 * with errno set on a write error. */
static ssize_t wire_write_direct(struct ureq *q, evutil_socket_t fd)
{
    size_t total = evbuffer_get_length(q->wire), done = 0;

    while (done < total) {
        struct evbuffer_iovec v[16];
        struct evbuffer_ptr pos;
        size_t want = 0;
        ssize_t w;
        int n;

        evbuffer_ptr_set(q->wire, &pos, done, EVBUFFER_PTR_SET);
        n = evbuffer_peek(q->wire, -1, &pos, v, 16);
        if (n > 16)
            n = 16;
        for (int i = 0; i < n; i++)
            want += v[i].iov_len;
        w = writev(fd, (const struct iovec *)v, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            return ERR_SYS;
        }
        done += (size_t)w;
        if ((size_t)w < want)
            break; /* the socket buffer is full */
    }
    return (ssize_t)done;
}

/* Writes q's request on c and waits for the head. A plain connection with nothing pending
 * writes at once, from here: the bufferevent's write event is armed only if the socket takes
 * less than all (the rest is copied to its output), which spares two epoll changes and a
 * loop round per call. Called with c held (c may be closed, never freed, on return). */
static void uconn_send(struct uconn *c, struct ureq *q)
{
    struct upstream *u = c->u;
    struct timeval rtv = ms_tv(u->cfg.first_byte_timeout_ms);
    struct timeval wtv = ms_tv(u->cfg.connect_timeout_ms);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    size_t off = 0;

    c->state = U_HEAD;
    c->scanned = 0;
    bufferevent_set_timeouts(c->bev, &rtv, &wtv);
    if (!u->tls && evbuffer_get_length(out) == 0) {
        ssize_t n = wire_write_direct(q, bufferevent_getfd(c->bev));
        if (n < 0) {
            char msg[200];
            snprintf(msg, sizeof(msg), "cannot write to %s: %s", u->url, strerror(errno));
            uconn_fail(c, UPSTREAM_ERESET, msg);
            return;
        }
        off = (size_t)n;
    } else if (u->tls && evbuffer_get_length(out) == 0 &&
               evbuffer_get_length(q->wire) <= TLSOUT_MAX) {
        /* a small request on an idle TLS connection: SSL_write now (tlsout.h), no write
         * event armed for it, the rest (if any) copied to the output */
        size_t total = evbuffer_get_length(q->wire);
        tlsout_write(c->bev, evbuffer_pullup(q->wire, -1), total);
        off = total;
    }
    wire_copy_from(q, off, out);
    bufferevent_enable(c->bev, evbuffer_get_length(out) > 0 ? EV_READ | EV_WRITE : EV_READ);
    assert(assert_uconn_state(c));
    assert(assert_ureq_state(q));
}

/* A plain connection's request has been written by the bufferevent: back to direct writes. */
static void uconn_write_cb(struct bufferevent *bev, void *arg)
{
    struct uconn *c = arg;
    if (!c->u->tls)
        bufferevent_disable(bev, EV_WRITE);
}

static void uconn_read_cb(struct bufferevent *bev, void *arg)
{
    struct uconn *c = arg;

    uconn_hold(c);
    if (c->state == U_IDLE) {
        log_debug("upstream", "stray bytes on an idle connection to %s", c->u->url);
        uconn_close(c);
    } else {
        uconn_process(c);
    }
    uconn_unhold(c);
}

static void uconn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct uconn *c = arg;
    char msg[200];

    uconn_hold(c);
    if (what & BEV_EVENT_CONNECTED) {
        if (c->state == U_CONNECTING && c->q) {
            int one = 1;
            setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            uconn_send(c, c->q);
        }
        uconn_unhold(c);
        return;
    }
    if (c->state == U_IDLE || c->q == NULL) {
        uconn_close(c);
        uconn_unhold(c);
        return;
    }
    if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && c->state != U_CONNECTING) {
        c->eof = 1;
        uconn_process(c); /* deliver what is left in the input; it then judges the end */
        uconn_unhold(c);
        return;
    }
    if (what & BEV_EVENT_TIMEOUT) {
        snprintf(msg, sizeof(msg), "%s timed out %s", c->u->url,
                 c->state == U_CONNECTING ? "connecting"
                 : c->state == U_HEAD     ? "before the response head"
                                          : "in the middle of the response body");
        uconn_fail(c, UPSTREAM_ETIMEOUT, msg);
    } else if (c->state == U_CONNECTING) {
        int dnserr = bufferevent_socket_get_dns_error(bev);
        unsigned long sslerr = c->u->tls ? bufferevent_get_openssl_error(bev) : 0;
        if (dnserr)
            snprintf(msg, sizeof(msg), "cannot resolve %s: %s", c->u->host,
                     evutil_gai_strerror(dnserr));
        else if (sslerr)
            snprintf(msg, sizeof(msg), "TLS handshake with %s failed: %s", c->u->host,
                     ERR_reason_error_string(sslerr) ? ERR_reason_error_string(sslerr) : "?");
        else
            snprintf(msg, sizeof(msg), "cannot connect to %s: %s", c->u->url,
                     evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        uconn_fail(c, UPSTREAM_ECONNECT, msg);
    } else {
        snprintf(msg, sizeof(msg), "%s closed the connection %s", c->u->url,
                 c->state == U_HEAD ? "before the response head" : "in the middle of the body");
        uconn_fail(c, UPSTREAM_ERESET, msg);
    }
    uconn_unhold(c);
}

static void uconn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct uconn *c = arg;

    uconn_hold(c);
    if (c->kick) {
        c->kick = 0;
        if (c->q && !c->q->paused)
            uconn_process(c);
    } else if (c->state == U_IDLE) {
        uconn_close(c);
    }
    uconn_unhold(c);
}

/* The origin closed the connection and every byte it sent has been handed over: the end of
 * a close-delimited body, otherwise a response cut short. */
static void uconn_at_eof(struct uconn *c)
{
    char msg[200];

    if (c->state == U_BODY && c->head.framing == HTTP_BODY_CLOSE) {
        c->head.keep_alive = 0;
        uconn_finish(c);
        return;
    }
    snprintf(msg, sizeof(msg), "%s closed the connection %s", c->u->url,
             c->state == U_HEAD ? "before the response head" : "in the middle of the body");
    uconn_fail(c, UPSTREAM_ERESET, msg);
}

/* Parses the head and hands over the body. Called with c held. */
static void uconn_process(struct uconn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct err e = {0};

    while (!c->dead && c->q && !c->q->paused) {
        struct ureq *q = c->q;
        size_t have = evbuffer_get_length(in);

        assert(assert_uconn_state(c));
        assert(assert_ureq_state(q));
        if (have == 0) {
            if (c->eof)
                uconn_at_eof(c);
            return;
        }
        q->got_bytes = 1;
        if (c->state == U_HEAD) {
            long n = http_head_find(in, HTTP_HEAD_MAX_DEFAULT, &c->scanned);
            int rc;
            if (n == 0) {
                if (c->eof)
                    uconn_at_eof(c); /* half a head, then the close: no timeout would fire */
                return;
            }
            if (n < 0) {
                uconn_fail(c, UPSTREAM_EPROTO, "response head too large");
                return;
            }
            c->scanned = 0;
            err_clear(&e);
            rc = http_head_parse_response(&c->head, in, (size_t)n, q->method, &e);
            if (rc != 0) {
                char msg[300];
                snprintf(msg, sizeof(msg), "malformed response from %s: %s", c->u->url, e.msg);
                uconn_fail(c, UPSTREAM_EPROTO, msg);
                return;
            }
            if (c->head.status < 200)
                continue; /* interim response */
            if (q->wire) {
                evbuffer_free(q->wire);
                q->wire = NULL;
            }
            q->got_head = 1;
            {
                struct timeval rtv = ms_tv(c->u->cfg.idle_timeout_ms);
                bufferevent_set_timeouts(c->bev, &rtv, NULL);
            }
            if (c->head.framing == HTTP_BODY_LENGTH)
                c->body_left = c->head.content_length;
            else if (c->head.framing == HTTP_BODY_CHUNKED)
                http_chunked_init(&c->chunked);
            c->state = U_BODY;
            assert(assert_uconn_state(c));
            assert(assert_ureq_state(q));
            q->cb.on_head(q, &c->head, q->arg);
            if (c->dead || c->q != q)
                return;
            if (c->head.framing == HTTP_BODY_NONE) {
                uconn_finish(c);
                return;
            }
            continue;
        }
        /* U_BODY */
        if (c->head.framing == HTTP_BODY_LENGTH) {
            size_t take = have < c->body_left ? have : (size_t)c->body_left;
            evbuffer_remove_buffer(in, c->piece, take);
            c->body_left -= take;
        } else if (c->head.framing == HTTP_BODY_CHUNKED) {
            int rc;
            err_clear(&e);
            rc = http_chunked_decode(&c->chunked, in, c->piece, 0, &e);
            if (rc < 0) {
                char msg[300];
                if (evbuffer_get_length(c->piece) > 0) {
                    q->cb.on_body(q, c->piece, q->arg);
                    evbuffer_drain(c->piece, evbuffer_get_length(c->piece));
                    if (c->dead || c->q != q)
                        return;
                }
                snprintf(msg, sizeof(msg), "malformed chunked body from %s: %s", c->u->url, e.msg);
                uconn_fail(c, UPSTREAM_EPROTO, msg);
                return;
            }
        } else {
            evbuffer_add_buffer(c->piece, in);
        }
        if (evbuffer_get_length(c->piece) > 0) {
            q->cb.on_body(q, c->piece, q->arg);
            evbuffer_drain(c->piece, evbuffer_get_length(c->piece));
            if (c->dead || c->q != q)
                return;
        }
        if ((c->head.framing == HTTP_BODY_LENGTH && c->body_left == 0) ||
            (c->head.framing == HTTP_BODY_CHUNKED && c->chunked.state == HTTP_CHUNK_DONE)) {
            uconn_finish(c);
            return;
        }
        if (c->head.framing == HTTP_BODY_CHUNKED && evbuffer_get_length(in) == have) {
            if (c->eof)
                uconn_at_eof(c);
            return; /* the decoder needs more input */
        }
    }
}

static struct uconn *uconn_new(struct upstream *u)
{
    struct uconn *c = xcalloc(1, sizeof(*c));
    struct timeval tv = ms_tv(u->cfg.connect_timeout_ms);

    c->u = u;
    c->timer = evtimer_new(u->base, uconn_timer_cb, c);
    c->piece = evbuffer_new();
    http_head_init(&c->head);
    if (u->tls) {
        SSL_CTX *ctx = tls_context(u);
        SSL *ssl = ctx ? SSL_new(ctx) : NULL;
        struct err e = {0};
        if (ssl == NULL)
            goto fail;
        if (tls_client_session_host(ssl, u->host, &e) < 0) {
            log_error("upstream", "%s", e.msg);
            SSL_free(ssl);
            goto fail;
        }
        c->bev = bufferevent_openssl_socket_new(u->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                BEV_OPT_CLOSE_ON_FREE);
        if (c->bev == NULL) {
            SSL_free(ssl);
            goto fail;
        }
        bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    } else {
        c->bev = bufferevent_socket_new(u->base, -1, BEV_OPT_CLOSE_ON_FREE);
        if (c->bev == NULL)
            goto fail;
    }
    bufferevent_setcb(c->bev, uconn_read_cb, uconn_write_cb, uconn_event_cb, c);
    if (!u->tls)
        bufferevent_disable(c->bev, EV_WRITE); /* uconn_send writes; connecting still works */
    bufferevent_set_timeouts(c->bev, &tv, &tv);
    c->state = U_CONNECTING;
    c->next = u->conns;
    if (u->conns)
        u->conns->prev = c;
    u->conns = c;
    return c;
fail:
    if (c->timer)
        event_free(c->timer);
    if (c->piece)
        evbuffer_free(c->piece);
    http_head_release(&c->head);
    free(c);
    return NULL;
}

/* Whether the pooled connection c can take a request: nothing to read on its socket, neither
 * the origin's end nor a byte. The origin may end a keep-alive connection right after its
 * response, and that end may still be unread when the next request comes (it comes in the
 * same loop iteration, or before the loop reads again): sent there, the request could reach an
 * origin that only shut its write side, and then reach it again when sent on a fresh
 * connection (uconn_fail). An idle TLS connection has nothing to read either: a close_notify or
 * any record there ends it too. */
static int uconn_alive(const struct uconn *c)
{
    char b;
    ssize_t n = recv(bufferevent_getfd(c->bev), &b, 1, MSG_PEEK | MSG_DONTWAIT);

    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* Puts q on a pooled connection (one still alive; the ended ones it meets are closed) or a
 * new one. */
static void ureq_dispatch(struct ureq *q)
{
    struct upstream *u = q->u;
    struct uconn *c, *next;

    for (c = u->conns; c; c = next) {
        next = c->next;
        if (!c->idle || c->dead)
            continue;
        if (uconn_alive(c))
            break;
        log_debug("upstream", "pooled connection to %s was ended by the origin; closed", u->url);
        uconn_close(c);
    }
    if (c && !q->resent) {
        c->idle = 0;
        u->nidle--;
        evtimer_del(c->timer);
        c->q = q;
        q->c = c;
        uconn_hold(c); /* uconn_send may fail the request and close c */
        uconn_send(c, q);
        uconn_unhold(c);
        return;
    }
    c = uconn_new(u);
    if (c == NULL) {
        q->cb.on_error(q, UPSTREAM_ECONNECT, 0, "cannot create a connection", q->arg);
        ureq_free(q);
        return;
    }
    c->q = q;
    q->c = c;
    assert(assert_uconn_state(c));
    assert(assert_ureq_state(q));
    uconn_hold(c);
    if (bufferevent_socket_connect_hostname(c->bev, u->dns, AF_UNSPEC, u->addr ? u->addr : u->host,
                                            u->port) != 0 &&
        !c->dead && c->q == q) {
        char msg[200];
        snprintf(msg, sizeof(msg), "cannot connect to %s", u->url);
        uconn_fail(c, UPSTREAM_ECONNECT, msg);
    }
    uconn_unhold(c);
}

static void ureq_start_cb(evutil_socket_t fd, short what, void *arg)
{
    ureq_dispatch(arg);
}

struct ureq *upstream_send(struct upstream *u, const char *method, const char *target,
                           const char *hdrs, size_t hlen, const void *body, size_t blen,
                           const struct ureq_callbacks *cb, void *arg)
{
    struct ureq *q = xcalloc(1, sizeof(*q));

    q->u = u;
    q->cb = *cb;
    q->arg = arg;
    snprintf(q->method, sizeof(q->method), "%s", method);
    q->next = u->reqs;
    if (u->reqs)
        u->reqs->prev = q;
    u->reqs = q;
    q->wire = evbuffer_new();
    q->start = event_new(u->base, -1, 0, ureq_start_cb, q);
    if (q->wire == NULL || q->start == NULL) {
        fprintf(stderr, "faultline: out of memory\n");
        abort();
    }
    evbuffer_add(q->wire, method, strlen(method));
    evbuffer_add(q->wire, " ", 1);
    evbuffer_add(q->wire, target, strlen(target));
    evbuffer_add(q->wire, " HTTP/1.1\r\nHost: ", 17);
    evbuffer_add(q->wire, u->hosthdr, strlen(u->hosthdr));
    evbuffer_add(q->wire, "\r\n", 2);
    if (hlen)
        evbuffer_add(q->wire, hdrs, hlen);
    if (blen || (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0))
        evbuffer_add_printf(q->wire, "Content-Length: %zu\r\n", blen);
    evbuffer_add(q->wire, "\r\n", 2);
    q->head_len = evbuffer_get_length(q->wire);
    if (blen)
        evbuffer_add_reference(q->wire, body, blen, NULL, NULL);
    event_active(q->start, EV_TIMEOUT, 1);
    return q;
}

void ureq_cancel(struct ureq *q)
{
    struct uconn *c = q->c;

    assert(assert_ureq_state(q));
    if (c) {
        assert(assert_uconn_state(c));
        c->q = NULL;
        q->c = NULL;
        uconn_close(c);
    }
    ureq_free(q);
}

void ureq_pause(struct ureq *q, int paused)
{
    struct uconn *c = q->c;

    if (q->paused == paused)
        return;
    q->paused = paused;
    if (c == NULL || c->dead)
        return;
    if (paused) {
        bufferevent_disable(c->bev, EV_READ);
    } else {
        bufferevent_enable(c->bev, EV_READ);
        if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0) {
            evtimer_del(c->timer);
            c->kick = 1;
            event_active(c->timer, EV_TIMEOUT, 1);
        }
    }
    assert(assert_uconn_state(c));
    assert(assert_ureq_state(q));
}

void upstream_free(struct upstream *u)
{
    if (u == NULL)
        return;
    while (u->reqs)
        ureq_cancel(u->reqs);
    while (u->conns) {
        struct uconn *c = u->conns;
        c->dead = 1;
        c->refs = 0;
        uconn_destroy(c);
    }
    if (u->ssl)
        SSL_CTX_free(u->ssl);
    free(u->url);
    free(u->host);
    free(u->addr);
    free(u->hosthdr);
    free(u->prefix);
    free(u->ca_file);
    free(u);
}
