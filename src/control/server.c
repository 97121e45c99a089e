/*
 * server: HTTP/1.1 server connections on raw non-blocking sockets (state table in server.h).
 *
 * Each connection owns its socket, a persistent read event, a write event that is armed only
 * while the socket refuses output, input/output/body buffers, and one timer. Bytes are read
 * with read(2) into the input buffer (no FIONREAD probe per read, unlike bufferevents) and
 * written with writev(2) straight from the output buffer: output written by a callback is
 * flushed once, at the end of the loop iteration, by the server's flush event, so a reply
 * costs one system call and no epoll changes unless the client reads slowly. The timer serves
 * every wait of the connection, one at a time (timer_mode): the keep-alive idle wait, the
 * deadline of a request being received, the lingering close, and a "kick" that re-enters
 * conn_process from the loop when a response ended outside the connection's own callbacks
 * while a pipelined request already waits in the input. A connection is never freed inside
 * one of its own callbacks: callbacks hold a reference (conn_hold/conn_unhold) and a free
 * requested meanwhile happens when the last one returns (tmux server_client_unref).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <jansson.h>

#include "control/server.h"
#include "util/log.h"
#include "util/num.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define MAX_LISTENERS 4
#define LINGER_MS 2000
#define READ_MIN 4096 /* first read of a request; grows while reads fill it */
#define READ_MAX 65536
#define SMALL_BODY 8192
#define DEADLINE_MIN_MS 2000 /* the head/body/idle wait at the connection limit */
/* A connection is evicted only once it has been this long in its head-phase queue: a burst
 * of new connections cannot drop a client that had no time to send its head, nor a
 * keep-alive client between two calls. */
#define EVICT_MIN_MS 250
#define EVICT_KEEPALIVE_MS 1000
#define EVICT_TRIES 8 /* victims looked at for one new connection */
#define RESUME_MS 100 /* accepting paused: how often to look again */

enum conn_state { C_HEAD, C_BODY, C_HANDLER, C_CLOSING };
enum timer_mode { T_NONE, T_IDLE, T_REQUEST, T_LINGER, T_KICK };
/* The head-phase queues, in eviction order: part of a head received (what a slowloris socket
 * looks like once it has been so a while), a new connection waiting for its first byte, a
 * keep-alive connection waiting for its next request (a client that already completed a
 * request: the least suspect). */
enum { HQ_PARTIAL, HQ_FRESH, HQ_KEEPALIVE, HQ_N };

struct hreq {
    struct hconn *c;
    int active;  /* the handler owns it: dispatched and not ended */
    int started; /* status line written */
    int chunked; /* body framed with chunked encoding */
    int no_body; /* HEAD request or a status without a body: writes are dropped */
    int want_drain;
    hreq_event_fn on_close, on_drain;
    void *cb_arg;
    const char *body;
    size_t body_len;
};

struct hconn {
    struct hsrv *s;
    struct hconn *prev, *next;             /* all connections */
    struct hconn *flush_prev, *flush_next; /* connections with output to flush */
    evutil_socket_t fd;
    struct event *rev; /* read, persistent; deleted while input is held back */
    struct event *wev; /* write, armed (with the write timeout) while output waits */
    struct evbuffer *in, *out;
    int reading;      /* rev is added */
    int writing;      /* wev is added */
    int dirty;        /* on the server's flush list */
    size_t in_max;    /* reading pauses once the input holds this much (0: no limit) */
    int outq;         /* bytes in the socket's send queue when the write event was armed */
    size_t read_size; /* the next read's size, READ_MIN..READ_MAX */
    struct event *timer;
    enum conn_state state;
    enum timer_mode timer_mode;
    int refs;       /* callbacks of this connection on the stack */
    int dead;       /* free requested while refs > 0 */
    int got_bytes;  /* the current request has started arriving */
    int keep_alive; /* another request may follow the current one */
    int shut;       /* write side shut down (lingering close) */
    int peer_eof;   /* the client shut its write side: read no more, answer what was read */
    int in_headq;   /* on a head-phase queue (exactly when state == C_HEAD) */
    int headq;      /* which: see conn_headq */
    int served;     /* a request completed on this connection */
    struct hconn *headq_prev, *headq_next;
    int64_t head_since_ms; /* when it joined that queue (monotonic) */
    size_t scanned;        /* http_head_find progress */
    uint64_t body_left;
    struct http_head head;
    struct http_chunked chunked;
    struct evbuffer *body;
    struct buf small; /* a small body, copied out of body's (16 KiB) read buffer */
    struct hreq req;
};

struct hsrv {
    struct event_base *base;
    struct hsrv_config cfg;
    hsrv_handler_fn handler;
    hsrv_reject_fn reject;
    void *arg;
    struct evconnlistener *lev[MAX_LISTENERS];
    size_t nlev;
    struct event *resume;
    int accepting; /* 0 after hsrv_stop_accepting */
    int paused;    /* listeners disabled for now (connection limit, EMFILE) */
    struct hconn *conns;
    size_t nconns;
    struct event *flush_ev; /* runs conn_flush for the dirty connections, once per iteration */
    struct hconn *flush_list;
    struct hconn *headq_first[HQ_N], *headq_last[HQ_N]; /* C_HEAD connections, oldest first */
    uint64_t evicted; /* head-phase connections dropped at the limit */
    int64_t evict_logged_ms;
    hsrv_hook_fn before_write; /* hsrv_set_before_write */
    void *before_write_arg;
};

static void conn_process(struct hconn *c);
static void conn_linger(struct hconn *c);
static void conn_mark_dirty(struct hconn *c);
static void conn_read_limit(struct hconn *c, size_t max);
static void conn_unmark_dirty(struct hconn *c);

/* A read or write that may succeed later. */
static int retriable(int err)
{
    return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

static struct timeval ms_tv(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

static int64_t mono_ms(void)
{
    return time_mono_ns() / 1000000;
}

/* The head-phase queue c belongs on while in C_HEAD. */
static int conn_headq(const struct hconn *c)
{
    if (c->got_bytes)
        return HQ_PARTIAL;
    return c->served ? HQ_KEEPALIVE : HQ_FRESH;
}

#ifndef NDEBUG
/* The invariants of struct hconn (sqlite's assert_pager_state), checked at every state
 * transition and wherever a wait is armed. Returns 1 so that it can sit inside assert(). */
static int assert_conn_state(const struct hconn *c)
{
    const struct hsrv *s = c->s;

    /* Exactly the connections waiting for a head are on the head-phase queue. */
    assert(c->in_headq == (c->state == C_HEAD && !c->dead));
    assert(c->in_headq || (c->headq_prev == NULL && c->headq_next == NULL));
    assert(!c->in_headq || c->headq == conn_headq(c));
    assert(!c->in_headq || (c->headq_prev == NULL) == (s->headq_first[c->headq] == c));
    assert(!c->in_headq || (c->headq_next == NULL) == (s->headq_last[c->headq] == c));
    /* The handler owns a request exactly while the connection is in C_HANDLER. */
    assert(c->dead || c->req.active == (c->state == C_HANDLER));
    assert(!c->req.active || c->req.c == c);
    /* A body is read only for a head that announced one. */
    assert(c->state != C_BODY || c->head.framing != HTTP_BODY_NONE);
    /* The write side is shut only in a lingering close. */
    assert(!c->shut || c->state == C_CLOSING);
    /* Each timer mode belongs to the states that wait for it. */
    assert(c->timer_mode != T_LINGER || c->state == C_CLOSING);
    assert(c->timer_mode != T_IDLE || c->state == C_HEAD || c->state == C_BODY);
    assert(c->timer_mode != T_REQUEST || c->state == C_HEAD || c->state == C_BODY);
    assert(c->timer_mode != T_KICK || c->state == C_HEAD);
    /* Output is either queued for the end of the iteration or waiting on the socket. */
    assert(!(c->dirty && c->writing));
    assert(!c->writing || evbuffer_get_length(c->out) > 0);
    /* Nothing is read after the client's EOF, or from a dead connection. */
    assert(!c->reading || (!c->peer_eof && !c->dead));
    assert(!c->dead || (!c->writing && !c->dirty));
    assert(c->refs >= 0);
    return 1;
}
#endif

/* ---- the head-phase queue: connections in C_HEAD, oldest first ---- */

static void headq_add(struct hconn *c, int q)
{
    struct hsrv *s = c->s;

    c->in_headq = 1;
    c->headq = q;
    c->head_since_ms = mono_ms();
    c->headq_next = NULL;
    c->headq_prev = s->headq_last[q];
    if (s->headq_last[q])
        s->headq_last[q]->headq_next = c;
    else
        s->headq_first[q] = c;
    s->headq_last[q] = c;
}

static void headq_remove(struct hconn *c)
{
    struct hsrv *s = c->s;

    if (!c->in_headq)
        return;
    if (c->headq_prev)
        c->headq_prev->headq_next = c->headq_next;
    else
        s->headq_first[c->headq] = c->headq_next;
    if (c->headq_next)
        c->headq_next->headq_prev = c->headq_prev;
    else
        s->headq_last[c->headq] = c->headq_prev;
    c->headq_prev = c->headq_next = NULL;
    c->in_headq = 0;
}

/* Every state change goes through here: it keeps the head-phase queue and checks the
 * invariants. */
static void conn_set_state(struct hconn *c, enum conn_state st)
{
    if (st == C_HEAD && !c->in_headq)
        headq_add(c, conn_headq(c));
    else if (st != C_HEAD)
        headq_remove(c);
    c->state = st;
}

/* The first byte of a request came: the connection moves to the partial-head queue. */
static void headq_got_bytes(struct hconn *c)
{
    c->got_bytes = 1;
    if (c->in_headq && c->headq != HQ_PARTIAL) {
        headq_remove(c);
        headq_add(c, HQ_PARTIAL);
    }
}

/* The connection to drop so that a new one fits: the oldest of the first queue (in HQ_
 * order) whose oldest has been there long enough, or NULL. */
static struct hconn *headq_victim(struct hsrv *s)
{
    int64_t now = mono_ms();

    for (int q = 0; q < HQ_N; q++) {
        struct hconn *c = s->headq_first[q];
        int64_t min = q == HQ_KEEPALIVE ? EVICT_KEEPALIVE_MS : EVICT_MIN_MS;
        if (c && now - c->head_since_ms >= min)
            return c;
    }
    return NULL;
}

/* The wait for a request (or the next keep-alive request) shrinks as the connection slots
 * fill: full below half of max_conns, then linearly down to DEADLINE_MIN_MS at the limit, so
 * that sockets trickling bytes cannot hold the slots for long. */
static int conn_deadline_ms(const struct hsrv *s, int full)
{
    size_t max = s->cfg.max_conns, half = max / 2, n = s->nconns;
    int64_t lo = full < DEADLINE_MIN_MS ? full : DEADLINE_MIN_MS;

    if (n <= half)
        return full;
    if (n >= max)
        return (int)lo;
    return (int)(full - (full - lo) * (int64_t)(n - half) / (int64_t)(max - half));
}

/* ---- listener pausing ---- */

static void listeners_enable(struct hsrv *s, int on)
{
    for (size_t i = 0; i < s->nlev; i++) {
        if (on)
            evconnlistener_enable(s->lev[i]);
        else
            evconnlistener_disable(s->lev[i]);
    }
    s->paused = !on;
}

static struct hconn *headq_victim(struct hsrv *s);

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct hsrv *s = arg;
    if (s->accepting && (s->nconns < s->cfg.max_conns || headq_victim(s)))
        listeners_enable(s, 1);
    else if (s->accepting) {
        struct timeval tv = ms_tv(RESUME_MS);
        evtimer_add(s->resume, &tv);
    }
}

/* ---- connection lifetime ---- */

static void conn_destroy(struct hconn *c)
{
    struct hsrv *s = c->s;

    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    headq_remove(c);
    conn_unmark_dirty(c);
    event_free(c->rev);
    event_free(c->wev);
    evutil_closesocket(c->fd);
    event_free(c->timer);
    evbuffer_free(c->in);
    evbuffer_free(c->out);
    evbuffer_free(c->body);
    buf_release(&c->small);
    http_head_release(&c->head);
    free(c);
    if (s->paused && s->accepting && s->nconns < s->cfg.max_conns)
        listeners_enable(s, 1);
}

static void conn_hold(struct hconn *c)
{
    c->refs++;
}

/* Drops a reference; frees c if a free was requested meanwhile. c may be gone after. */
static void conn_unhold(struct hconn *c)
{
    if (--c->refs == 0 && c->dead)
        conn_destroy(c);
}

/* Closes the connection now. notify: an in-flight request's handler gets on_close. */
static void conn_kill(struct hconn *c, int notify)
{
    struct hreq *r = &c->req;

    if (c->dead)
        return;
    c->dead = 1;
    headq_remove(c);
    event_del(c->rev);
    event_del(c->wev);
    c->reading = c->writing = 0;
    evtimer_del(c->timer);
    if (r->active) {
        r->active = 0;
        if (notify && r->on_close) {
            conn_hold(c);
            r->on_close(r, r->cb_arg);
            c->refs--;
        }
    }
    if (c->refs == 0)
        conn_destroy(c);
}

static void timer_set(struct hconn *c, enum timer_mode mode, int ms)
{
    struct timeval tv = ms_tv(ms);
    c->timer_mode = mode;
    evtimer_add(c->timer, &tv);
}

static void timer_off(struct hconn *c)
{
    c->timer_mode = T_NONE;
    evtimer_del(c->timer);
}

/* Runs conn_process from the loop soon (a response ended outside this connection's
 * callbacks and a pipelined request is waiting). */
static void conn_kick(struct hconn *c)
{
    evtimer_del(c->timer);
    c->timer_mode = T_KICK;
    event_active(c->timer, EV_TIMEOUT, 1);
}

/* Arms the wait that fits the state after conn_process stopped for more input. */
static void conn_arm(struct hconn *c)
{
    if (c->dead)
        return;
    if (c->peer_eof) {
        conn_linger(c); /* the client sent its last byte: this request can never complete */
        return;
    }
    if (c->state == C_HEAD && !c->got_bytes) {
        if (c->timer_mode != T_IDLE && c->timer_mode != T_KICK)
            timer_set(c, T_IDLE, conn_deadline_ms(c->s, c->s->cfg.idle_timeout_ms));
    } else if (c->state == C_HEAD || c->state == C_BODY) {
        int one = 1;
        if (c->timer_mode != T_REQUEST && c->timer_mode != T_KICK)
            timer_set(c, T_REQUEST, conn_deadline_ms(c->s, c->s->cfg.request_timeout_ms));
        /* Part of a request came: acknowledge it now. A client that writes the head and the
         * body separately holds the body back (Nagle) until this ACK, which the kernel
         * would otherwise delay by up to 40 ms on a keep-alive connection (TCP_NODELAY on
         * our side cannot help; TCP_QUICKACK is not sticky, hence each time). */
        setsockopt(c->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
    }
    assert(assert_conn_state(c));
}

/* ---- refusing a request ---- */

static void conn_reject(struct hconn *c, const struct http_head *h, int status, const char *type,
                        const char *msg)
{
    struct hsrv *s = c->s;
    struct evbuffer *out = c->out;
    struct buf hdrs = BUF_INIT, body = BUF_INIT;
    json_t *j = json_pack("{s:{s:s,s:s}}", "error", "type", type, "message", msg);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

    if (text)
        buf_adds(&body, text);
    free(text);
    json_decref(j);
    if (s->reject)
        s->reject(s->arg, h, status, type, msg, &hdrs, &body);
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n", status,
                        http_reason(status));
    evbuffer_add(out, hdrs.data, hdrs.len);
    evbuffer_add_printf(out, "Content-Length: %zu\r\nConnection: close\r\n\r\n", body.len);
    evbuffer_add(out, body.data, body.len);
    conn_mark_dirty(c);
    buf_release(&hdrs);
    buf_release(&body);
    log_info("server", "refused a request: %d %s", status, msg);
    c->keep_alive = 0;
    conn_linger(c);
}

/* How long a lingering close waits for the client's EOF: not at all once it came. */
static int linger_ms(const struct hconn *c)
{
    return c->peer_eof ? 0 : LINGER_MS;
}

/* Lingering close: flush the output, shut the write side, then read and discard what the
 * client still sends until it closes or LINGER_MS pass, so an error reply sent before the
 * request body was read is not destroyed by a reset. */
static void conn_linger(struct hconn *c)
{
    conn_set_state(c, C_CLOSING);
    evbuffer_drain(c->in, evbuffer_get_length(c->in));
    conn_read_limit(c, 0);
    if (evbuffer_get_length(c->out) == 0 && !c->shut && c->s->before_write == NULL) {
        c->shut = 1;
        shutdown(c->fd, SHUT_WR);
        timer_set(c, T_LINGER, linger_ms(c));
    } else {
        timer_off(c); /* the write timeout bounds the flush; conn_flush then shuts */
        conn_mark_dirty(c);
    }
    assert(assert_conn_state(c));
}

/* ---- request dispatch ---- */

static void conn_dispatch(struct hconn *c)
{
    struct hreq *r = &c->req;

    timer_off(c);
    conn_set_state(c, C_HANDLER);
    c->got_bytes = 0;
    c->read_size = READ_MIN;
    memset(r, 0, sizeof(*r));
    r->c = c;
    r->active = 1;
    r->no_body = strcmp(c->head.method, "HEAD") == 0;
    r->body_len = evbuffer_get_length(c->body);
    assert(assert_conn_state(c));
    if (r->body_len <= SMALL_BODY) {
        /* Copied out so that a request waiting on a slow upstream does not pin a whole read
         * buffer: 500 open streams should cost about a kilobyte each. */
        buf_reset(&c->small);
        if (r->body_len) {
            buf_grow(&c->small, r->body_len);
            evbuffer_remove(c->body, c->small.data, r->body_len);
            c->small.len = r->body_len;
            c->small.data[r->body_len] = '\0';
        }
        r->body = c->small.data;
    } else {
        r->body = (const char *)evbuffer_pullup(c->body, -1);
    }
    /* Keep reading (to notice a client that goes away) but hold at most one more head. */
    conn_read_limit(c, c->s->cfg.max_head);
    c->s->handler(r, c->s->arg);
}

/* The handler ended the response. */
static void conn_request_done(struct hconn *c)
{
    struct evbuffer *in = c->in;

    c->req.active = 0;
    c->served = 1;
    evbuffer_drain(c->body, evbuffer_get_length(c->body));
    if (!c->keep_alive || !c->s->accepting || (c->peer_eof && evbuffer_get_length(in) == 0)) {
        conn_linger(c);
        return;
    }
    conn_set_state(c, C_HEAD);
    conn_read_limit(c, 0);
    if (evbuffer_get_length(in) > 0) {
        conn_kick(c); /* a pipelined request waits: have the loop parse it */
    } else {
        timer_set(c, T_IDLE, conn_deadline_ms(c->s, c->s->cfg.idle_timeout_ms));
    }
    assert(assert_conn_state(c));
}

/* Parses and dispatches as many requests as the input holds. Called with c held. */
static void conn_process(struct hconn *c)
{
    struct hsrv *s = c->s;
    struct evbuffer *in = c->in;
    struct err e = {0};

    while (!c->dead) {
        switch (c->state) {
        case C_HEAD: {
            long n;
            int rc;

            if (evbuffer_get_length(in) == 0)
                goto wait;
            headq_got_bytes(c);
            n = http_head_find(in, s->cfg.max_head, &c->scanned);
            if (n == 0)
                goto wait;
            if (n < 0) {
                conn_reject(c, NULL, 431, "request_too_large", "request head too large");
                return;
            }
            c->scanned = 0;
            err_clear(&e);
            rc = http_head_parse_request(&c->head, in, (size_t)n, &e);
            if (rc == ERR_UNSUPPORTED) {
                conn_reject(c, &c->head, 501, "invalid_request_error", e.msg);
                return;
            }
            if (rc != 0) {
                conn_reject(c, NULL, 400, "invalid_request_error", e.msg);
                return;
            }
            c->keep_alive = c->head.keep_alive;
            if (c->head.framing == HTTP_BODY_NONE) {
                conn_dispatch(c);
                break;
            }
            if (c->head.framing == HTTP_BODY_LENGTH) {
                if (c->head.content_length > s->cfg.max_body) {
                    char msg[128];
                    snprintf(msg, sizeof(msg),
                             "request body of %llu bytes is over the %zu-byte limit",
                             (unsigned long long)c->head.content_length, s->cfg.max_body);
                    conn_reject(c, &c->head, 413, "request_too_large", msg);
                    return;
                }
                c->body_left = c->head.content_length;
            } else {
                http_chunked_init(&c->chunked);
            }
            if (c->head.expect_continue) {
                evbuffer_add(c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
                conn_mark_dirty(c);
            }
            conn_set_state(c, C_BODY);
            assert(assert_conn_state(c));
            break;
        }
        case C_BODY:
            if (c->head.framing == HTTP_BODY_LENGTH) {
                size_t have = evbuffer_get_length(in);
                size_t take = have < c->body_left ? have : (size_t)c->body_left;
                evbuffer_remove_buffer(in, c->body, take);
                c->body_left -= take;
                if (c->body_left > 0)
                    goto wait;
                conn_dispatch(c);
            } else {
                int rc;
                err_clear(&e);
                rc = http_chunked_decode(&c->chunked, in, c->body, 0, &e);
                if (evbuffer_get_length(c->body) > s->cfg.max_body) {
                    char msg[128];
                    snprintf(msg, sizeof(msg), "request body is over the %zu-byte limit",
                             s->cfg.max_body);
                    conn_reject(c, &c->head, 413, "request_too_large", msg);
                    return;
                }
                if (rc < 0) {
                    conn_reject(c, &c->head, 400, "invalid_request_error", e.msg);
                    return;
                }
                if (rc == 0)
                    goto wait;
                conn_dispatch(c);
            }
            break;
        case C_HANDLER:
            return;
        case C_CLOSING:
            evbuffer_drain(in, evbuffer_get_length(in));
            return;
        }
    }
    return;
wait:
    conn_arm(c);
}

/* ---- socket I/O ---- */

/* send_queue's "not known" (the ioctl failed): below every queue length, not an error code. */
#define SEND_QUEUE_UNKNOWN (-1)

/* Bytes waiting in fd's send queue, or SEND_QUEUE_UNKNOWN. */
static int send_queue(evutil_socket_t fd)
{
    int q = SEND_QUEUE_UNKNOWN;
    if (ioctl(fd, SIOCOUTQ, &q) != 0)
        return SEND_QUEUE_UNKNOWN;
    return q;
}

/* Holds back reading once the input holds max bytes (0: no limit). */
static void conn_read_limit(struct hconn *c, size_t max)
{
    c->in_max = max;
    if (c->dead)
        return;
    if (max && evbuffer_get_length(c->in) >= max) {
        if (c->reading) {
            event_del(c->rev);
            c->reading = 0;
        }
    } else if (!c->reading && !c->peer_eof) {
        event_add(c->rev, NULL);
        c->reading = 1;
    }
}

/* Writes what the output holds; arms the write event (with the write timeout) while the
 * socket refuses the rest. Then the steps that wait for an empty output: the shutdown of a
 * lingering close, or the handler's on_drain. Called with c held. */
static void conn_flush(struct hconn *c)
{
    struct hreq *r = &c->req;
    size_t left;

    if (c->s->before_write)
        c->s->before_write(c->s->before_write_arg);
    while ((left = evbuffer_get_length(c->out)) > 0) {
        int n = evbuffer_write(c->out, c->fd);
        if (n < 0) {
            int err = errno;
            if (retriable(err))
                break;
            log_debug("server", "client write failed: %s", evutil_socket_error_to_string(err));
            conn_kill(c, 1);
            return;
        }
        if ((size_t)n < left)
            break; /* the socket buffer is full */
    }
    if (evbuffer_get_length(c->out) > 0) {
        struct timeval tv = ms_tv(c->s->cfg.write_timeout_ms);
        event_add(c->wev, &tv); /* (re)starts the write timeout: progress was made */
        c->writing = 1;
        c->outq = send_queue(c->fd);
        return;
    }
    if (c->writing) {
        event_del(c->wev);
        c->writing = 0;
    }
    if (c->state == C_CLOSING && !c->shut) {
        c->shut = 1;
        shutdown(c->fd, SHUT_WR);
        timer_set(c, T_LINGER, linger_ms(c));
    } else if (c->state == C_HANDLER && r->active && r->want_drain) {
        r->want_drain = 0;
        if (r->on_drain)
            r->on_drain(r, r->cb_arg);
    }
}

/* Queues c for conn_flush at the end of this loop iteration (unless its write event is
 * armed: then the socket is full and the event flushes when it drains). */
static void conn_mark_dirty(struct hconn *c)
{
    struct hsrv *s = c->s;

    if (c->dirty || c->writing || c->dead)
        return;
    c->dirty = 1;
    c->flush_prev = NULL;
    c->flush_next = s->flush_list;
    if (s->flush_list)
        s->flush_list->flush_prev = c;
    s->flush_list = c;
    event_active(s->flush_ev, EV_TIMEOUT, 1);
}

/* Takes c off the flush list (its output is about to be written directly). */
static void conn_unmark_dirty(struct hconn *c)
{
    struct hsrv *s = c->s;

    if (!c->dirty)
        return;
    if (c->flush_prev)
        c->flush_prev->flush_next = c->flush_next;
    else
        s->flush_list = c->flush_next;
    if (c->flush_next)
        c->flush_next->flush_prev = c->flush_prev;
    c->flush_next = c->flush_prev = NULL;
    c->dirty = 0;
}

static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
    struct hsrv *s = arg;

    while (s->flush_list) {
        struct hconn *c = s->flush_list;
        s->flush_list = c->flush_next;
        if (s->flush_list)
            s->flush_list->flush_prev = NULL;
        c->dirty = 0;
        c->flush_next = c->flush_prev = NULL;
        conn_hold(c);
        conn_flush(c);
        conn_unhold(c);
    }
}

/* The client shut its write side: shutdown(SHUT_WR), or close(2), which looks the same until
 * a write fails. Nothing more will be read. A request already read whole is answered (its
 * handler runs, or keeps running), and so is any pipelined after it; then the connection
 * closes. A request still arriving can never complete: the connection closes once the
 * output is flushed. A lingering close is over. Called with c held. */
static void conn_eof(struct hconn *c)
{
    c->peer_eof = 1;
    if (c->reading) {
        event_del(c->rev);
        c->reading = 0;
    }
    switch (c->state) {
    case C_HANDLER:
        break; /* conn_request_done closes after the response */
    case C_HEAD:
    case C_BODY:
        conn_process(c); /* dispatches what is whole; conn_arm closes on the rest */
        break;
    case C_CLOSING:
        if (c->shut || evbuffer_get_length(c->out) == 0)
            conn_kill(c, 1);
        /* else conn_flush shuts the write side, then the linger timer (0 ms) closes */
        break;
    }
    if (!c->dead)
        assert(assert_conn_state(c));
}

static void conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
    struct hconn *c = arg;
    struct evbuffer_iovec v;
    ssize_t n;

    conn_hold(c);
    if (c->read_size < READ_MIN)
        c->read_size = READ_MIN;
    if (evbuffer_reserve_space(c->in, (ev_ssize_t)c->read_size, &v, 1) < 1) {
        conn_kill(c, 1);
        goto out;
    }
    n = read(c->fd, v.iov_base, v.iov_len);
    if (n < 0) {
        int err = errno;
        evbuffer_commit_space(c->in, &v, 0);
        if (!retriable(err)) {
            if (c->state != C_CLOSING)
                log_debug("server", "client read failed: %s", evutil_socket_error_to_string(err));
            conn_kill(c, 1);
        }
        goto out;
    }
    if ((size_t)n == v.iov_len && c->read_size < READ_MAX)
        c->read_size *= 4; /* a big body is arriving: read it in bigger pieces */
    v.iov_len = (size_t)n;
    evbuffer_commit_space(c->in, &v, 1);
    if (n == 0) {
        conn_eof(c);
        goto out;
    }
    if (c->state == C_CLOSING)
        evbuffer_drain(c->in, evbuffer_get_length(c->in));
    else
        conn_process(c);
    if (!c->dead && c->in_max && evbuffer_get_length(c->in) >= c->in_max)
        conn_read_limit(c, c->in_max);
out:
    conn_unhold(c);
}

static void conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
    struct hconn *c = arg;
    int q;

    conn_hold(c);
    c->writing = 0;
    if (!(what & EV_TIMEOUT)) {
        conn_flush(c);
    } else if ((q = send_queue(c->fd)) >= 0 && q < c->outq) {
        /* Still full, but the client took bytes meanwhile: a slow reader, not a stalled one
         * (the kernel reports the socket writable only once a good part of it is free). */
        struct timeval tv = ms_tv(c->s->cfg.write_timeout_ms);
        c->outq = q;
        event_add(c->wev, &tv);
        c->writing = 1;
    } else {
        log_info("server", "client stopped reading; dropping the connection");
        conn_kill(c, 1);
    }
    conn_unhold(c);
}

static void conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct hconn *c = arg;
    enum timer_mode mode = c->timer_mode;

    conn_hold(c);
    c->timer_mode = T_NONE;
    switch (mode) {
    case T_KICK:
        if (c->state == C_HEAD)
            conn_process(c);
        break;
    case T_REQUEST:
        if (c->state == C_HEAD || c->state == C_BODY)
            conn_reject(c, c->state == C_BODY ? &c->head : NULL, 408, "timeout_error",
                        "request not received in time");
        break;
    case T_IDLE:
    case T_LINGER:
        conn_kill(c, 1);
        break;
    case T_NONE:
        break;
    }
    conn_unhold(c);
}

/* At the connection limit: drops the connection longest in its head phase so that the new
 * one fits. A client that sends its head promptly is never locked out by sockets that do
 * not (slowloris): they are the oldest in the queue and go first. */
static void conn_evict(struct hsrv *s)
{
    for (int tries = 0; tries < EVICT_TRIES && s->nconns > s->cfg.max_conns; tries++) {
        struct hconn *v = headq_victim(s);
        int64_t now;
        int spare;

        if (v == NULL)
            return;
        /* Under a flood the loop lags: the victim's request may be waiting in its socket. Read
         * it first; a client whose head is there whole is served, not dropped. */
        conn_hold(v);
        if (v->reading)
            conn_read_cb(v->fd, EV_READ, v);
        spare = v->dead || !v->in_headq || headq_victim(s) != v;
        if (!spare) {
            s->evicted++;
            now = mono_ms();
            if (s->evict_logged_ms == 0 || now - s->evict_logged_ms >= 10000) {
                log_warn("server", "at the connection limit: dropped %llu slow heads so far",
                         (unsigned long long)s->evicted);
                s->evict_logged_ms = now;
            }
            conn_kill(v, 1);
        }
        conn_unhold(v);
    }
}

static void accept_cb(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
                      int socklen, void *arg)
{
    struct hsrv *s = arg;
    struct hconn *c;
    int one = 1;

    if (!s->accepting) {
        evutil_closesocket(fd);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c = xcalloc(1, sizeof(*c));
    c->s = s;
    c->fd = fd;
    c->rev = event_new(s->base, fd, EV_READ | EV_PERSIST, conn_read_cb, c);
    c->wev = event_new(s->base, fd, EV_WRITE, conn_write_cb, c);
    c->timer = evtimer_new(s->base, conn_timer_cb, c);
    c->in = evbuffer_new();
    c->out = evbuffer_new();
    c->body = evbuffer_new();
    if (!c->rev || !c->wev || !c->timer || !c->in || !c->out || !c->body) {
        fprintf(stderr, "faultline: out of memory\n");
        abort();
    }
    http_head_init(&c->head);
    buf_init(&c->small, 0);
    event_add(c->rev, NULL);
    c->reading = 1;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    conn_set_state(c, C_HEAD);
    timer_set(c, T_IDLE, conn_deadline_ms(s, s->cfg.idle_timeout_ms));
    assert(assert_conn_state(c));
    if (s->nconns > s->cfg.max_conns)
        conn_evict(s);
    if (s->nconns >= s->cfg.max_conns && headq_victim(s) == NULL) {
        /* Every slot holds a request being served or a client that just came: wait for one
         * to end (conn_destroy) or to become evictable (resume_cb). */
        struct timeval tv = ms_tv(RESUME_MS);
        log_debug("server", "%zu connections open: pausing accept", s->nconns);
        listeners_enable(s, 0);
        evtimer_add(s->resume, &tv);
    }
}

static void accept_error_cb(struct evconnlistener *lev, void *arg)
{
    struct hsrv *s = arg;
    struct timeval tv = ms_tv(100);
    int err = errno;

    log_warn("server", "accept failed: %s", evutil_socket_error_to_string(err));
    /* EMFILE and friends: libevent would retry at once, forever. Back off a little. */
    listeners_enable(s, 0);
    evtimer_add(s->resume, &tv);
}

/* ---- public API ---- */

struct hsrv *hsrv_new(struct event_base *base, const struct hsrv_config *cfg,
                      hsrv_handler_fn handler, hsrv_reject_fn reject, void *arg)
{
    struct hsrv *s = xcalloc(1, sizeof(*s));

    s->base = base;
    s->cfg = *cfg;
    if (s->cfg.max_head == 0)
        s->cfg.max_head = HTTP_HEAD_MAX_DEFAULT;
    if (s->cfg.max_conns == 0)
        s->cfg.max_conns = 4096;
    if (s->cfg.request_timeout_ms <= 0)
        s->cfg.request_timeout_ms = 60000;
    if (s->cfg.idle_timeout_ms <= 0)
        s->cfg.idle_timeout_ms = 60000;
    if (s->cfg.write_timeout_ms <= 0)
        s->cfg.write_timeout_ms = 60000;
    s->handler = handler;
    s->reject = reject;
    s->arg = arg;
    s->accepting = 1;
    s->resume = evtimer_new(base, resume_cb, s);
    s->flush_ev = event_new(base, -1, 0, flush_cb, s);
    if (s->resume == NULL || s->flush_ev == NULL) {
        if (s->resume)
            event_free(s->resume);
        free(s);
        return NULL;
    }
    return s;
}

void hsrv_set_before_write(struct hsrv *s, hsrv_hook_fn fn, void *arg)
{
    s->before_write = fn;
    s->before_write_arg = arg;
}

static int add_listener(struct hsrv *s, evutil_socket_t fd, struct err *e)
{
    struct evconnlistener *lev;

    if (s->nlev == MAX_LISTENERS)
        return err_set(e, ERR_LIMIT, "at most %d listening sockets", MAX_LISTENERS);
    lev = evconnlistener_new(s->base, accept_cb, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                             0, fd);
    if (lev == NULL)
        return err_set(e, ERR_SYS, "cannot listen: %s", strerror(errno));
    evconnlistener_set_error_cb(lev, accept_error_cb);
    s->lev[s->nlev++] = lev;
    return 0;
}

int hsrv_parse_addr(const char *addr, struct sockaddr_storage *ss, int *sslen)
{
    const char *colon = strrchr(addr, ':');
    char host[64];
    size_t hl;
    long long port;

    if (colon == NULL || num_parse_ll(colon + 1, 0, 65535, &port) != 0)
        return ERR_INVALID;
    hl = (size_t)(colon - addr);
    if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
        if (hl - 2 >= sizeof(host))
            return ERR_INVALID;
        memcpy(host, addr + 1, hl - 2);
        host[hl - 2] = '\0';
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t)port);
        *sslen = sizeof(*sin6);
        return evutil_inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1 ? 0 : ERR_INVALID;
    } else {
        struct sockaddr_in *sin = (struct sockaddr_in *)ss;
        if (hl == 0 || hl >= sizeof(host))
            return ERR_INVALID;
        memcpy(host, addr, hl);
        host[hl] = '\0';
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t)port);
        *sslen = sizeof(*sin);
        return evutil_inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : ERR_INVALID;
    }
}

int hsrv_listen(struct hsrv *s, const char *addr, struct err *e)
{
    struct sockaddr_storage ss;
    int sslen = sizeof(ss), one = 1;
    evutil_socket_t fd;

    memset(&ss, 0, sizeof(ss));
    if (hsrv_parse_addr(addr, &ss, &sslen) != 0)
        return err_set(e, ERR_INVALID, "invalid listen address '%s' (want HOST:PORT)", addr);
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return err_set(e, ERR_SYS, "socket: %s", strerror(errno));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, (socklen_t)sslen) != 0) {
        int err = errno;
        close(fd);
        return err_set(e, ERR_SYS, "cannot bind '%s': %s", addr, strerror(err));
    }
    if (listen(fd, 1024) != 0) {
        int err = errno;
        close(fd);
        return err_set(e, ERR_SYS, "cannot listen on '%s': %s", addr, strerror(err));
    }
    if (add_listener(s, fd, e) != 0) {
        close(fd);
        return e ? e->code : ERR_SYS;
    }
    return 0;
}

int hsrv_listen_fd(struct hsrv *s, int fd, struct err *e)
{
    int type = 0;
    socklen_t len = sizeof(type);

    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return err_set(e, ERR_SYS, "descriptor %d is not a stream socket", fd);
    if (listen(fd, 1024) != 0)
        return err_set(e, ERR_SYS, "cannot listen on descriptor %d: %s", fd, strerror(errno));
    evutil_make_socket_nonblocking(fd);
    evutil_make_socket_closeonexec(fd);
    return add_listener(s, fd, e);
}

int hsrv_address(struct hsrv *s, char *out, size_t n)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char host[64];
    int port;

    if (s->nlev == 0)
        return ERR_SYS;
    if (getsockname(evconnlistener_get_fd(s->lev[0]), (struct sockaddr *)&ss, &len) != 0)
        return ERR_SYS;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        evutil_inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
        port = ntohs(sin->sin_port);
        snprintf(out, n, "%s:%d", host, port);
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        evutil_inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
        port = ntohs(sin6->sin6_port);
        snprintf(out, n, "[%s]:%d", host, port);
    } else {
        return ERR_SYS;
    }
    return 0;
}

void hsrv_stop_accepting(struct hsrv *s)
{
    s->accepting = 0;
    listeners_enable(s, 0);
    evtimer_del(s->resume);
}

size_t hsrv_nconns(const struct hsrv *s)
{
    return s->nconns;
}

void hsrv_free(struct hsrv *s)
{
    if (s == NULL)
        return;
    s->accepting = 0;
    while (s->conns)
        conn_kill(s->conns, 1);
    for (size_t i = 0; i < s->nlev; i++)
        evconnlistener_free(s->lev[i]);
    event_free(s->resume);
    event_free(s->flush_ev);
    free(s);
}

const char *hreq_method(const struct hreq *r)
{
    return r->c->head.method;
}

const char *hreq_target(const struct hreq *r)
{
    return r->c->head.target;
}

const struct http_head *hreq_head(const struct hreq *r)
{
    return &r->c->head;
}

const char *hreq_header(const struct hreq *r, const char *name)
{
    return http_head_get(&r->c->head, name);
}

const char *hreq_body(struct hreq *r, size_t *len)
{
    *len = r->body_len;
    return r->body;
}

void hreq_set_callbacks(struct hreq *r, hreq_event_fn on_close, hreq_event_fn on_drain, void *arg)
{
    r->on_close = on_close;
    r->on_drain = on_drain;
    r->cb_arg = arg;
}

/* "PREFIX<n in base>\r\n" without printf (this runs for every response and every chunk). */
static void add_number_line(struct evbuffer *out, const char *prefix, uint64_t n, unsigned base)
{
    char tmp[48];
    size_t pl = strlen(prefix), i = sizeof(tmp);

    tmp[--i] = '\n';
    tmp[--i] = '\r';
    do {
        tmp[--i] = "0123456789abcdef"[n % base];
        n /= base;
    } while (n);
    evbuffer_add(out, prefix, pl);
    evbuffer_add(out, tmp + i, sizeof(tmp) - i);
}

static void add_status_line(struct evbuffer *out, int status)
{
    const char *reason = http_reason(status);
    char line[16] = "HTTP/1.1 000 ";

    if (status < 100 || status > 999)
        status = 500;
    line[9] = (char)('0' + status / 100);
    line[10] = (char)('0' + status / 10 % 10);
    line[11] = (char)('0' + status % 10);
    evbuffer_add(out, line, 13);
    evbuffer_add(out, reason, strlen(reason));
    evbuffer_add(out, "\r\n", 2);
}

void hreq_start(struct hreq *r, int status, const char *hdrs, size_t hlen, int64_t content_length)
{
    struct hconn *c = r->c;
    struct evbuffer *out;

    if (!r->active || r->started)
        return;
    out = c->out;
    conn_mark_dirty(c);
    r->started = 1;
    add_status_line(out, status);
    if (hlen)
        evbuffer_add(out, hdrs, hlen);
    if (status == 204 || status == 304 || (status >= 100 && status < 200)) {
        r->no_body = 1;
    } else if (content_length >= 0) {
        add_number_line(out, "Content-Length: ", (uint64_t)content_length, 10);
    } else if (!r->no_body) {
        if (c->head.minor >= 1) {
            evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
            r->chunked = 1;
        } else {
            c->keep_alive = 0; /* HTTP/1.0: the body ends when the connection does */
        }
    }
    if (!c->keep_alive || !c->s->accepting || (c->peer_eof && evbuffer_get_length(c->in) == 0))
        evbuffer_add(out, "Connection: close\r\n\r\n", 21);
    else
        evbuffer_add(out, "\r\n", 2);
}

void hreq_write(struct hreq *r, const void *p, size_t n)
{
    struct evbuffer *out;

    if (!r->active || !r->started || r->no_body || n == 0)
        return;
    out = r->c->out;
    conn_mark_dirty(r->c);
    if (r->chunked) {
        add_number_line(out, "", n, 16);
        evbuffer_add(out, p, n);
        evbuffer_add(out, "\r\n", 2);
    } else {
        evbuffer_add(out, p, n);
    }
}

void hreq_write_buffer(struct hreq *r, struct evbuffer *src)
{
    struct evbuffer *out;
    size_t n = evbuffer_get_length(src);

    if (!r->active || !r->started || r->no_body || n == 0) {
        evbuffer_drain(src, n);
        return;
    }
    out = r->c->out;
    conn_mark_dirty(r->c);
    if (r->chunked) {
        add_number_line(out, "", n, 16);
        evbuffer_add_buffer(out, src);
        evbuffer_add(out, "\r\n", 2);
    } else {
        evbuffer_add_buffer(out, src);
    }
}

void hreq_end(struct hreq *r)
{
    struct hconn *c = r->c;

    if (!r->active)
        return;
    if (!r->started)
        hreq_start(r, 200, NULL, 0, 0);
    if (r->chunked)
        evbuffer_add(c->out, "0\r\n\r\n", 5);
    conn_request_done(c);
    if (c->s->before_write) {
        /* The owner records what its end implies first: the end leaves with the flush. */
        conn_mark_dirty(c);
        return;
    }
    /* The response is whole: write it now rather than at the end of the loop iteration, so
     * whatever the handler does next (accounting, events) is not in the client's wait. */
    conn_hold(c);
    conn_unmark_dirty(c);
    if (!c->writing && !c->dead)
        conn_flush(c);
    conn_unhold(c);
}

void hreq_reply(struct hreq *r, int status, const char *hdrs, const void *body, size_t n)
{
    if (!r->active)
        return;
    hreq_start(r, status, hdrs, hdrs ? strlen(hdrs) : 0, (int64_t)n);
    hreq_write(r, body, n);
    hreq_end(r);
}

void hreq_abort(struct hreq *r)
{
    if (!r->active)
        return;
    r->active = 0;
    r->c->keep_alive = 0;
    conn_linger(r->c);
}

size_t hreq_pending(const struct hreq *r)
{
    if (!r->active)
        return 0;
    return evbuffer_get_length(r->c->out);
}

void hreq_want_drain(struct hreq *r)
{
    r->want_drain = 1;
}

int hreq_started(const struct hreq *r)
{
    return r->started;
}
