/*
 * relay: see relay.h.
 *
 * One libevent loop (the poll backend: epoll refuses regular files, and the client side may be
 * one) watches four descriptors, the signals and the session's timers:
 *
 *   client in  --framer--> mcp_session_client_line --> to_server --> child stdin
 *   child out  --framer--> mcp_session_server_line --> to_client --> client out
 *
 * Writes are attempted at once after each batch of input (most complete without waiting); a
 * write event is armed only for what is left. Reading a side pauses while the output it feeds
 * holds more than HIGH_WATER bytes and resumes under LOW_WATER.
 *
 * Phases and their edges:
 *   RUNNING --client EOF, pending-----> RUNNING  (pending_wait: until answered or eof_wait_ms)
 *   RUNNING --client EOF--------------> CLOSING  (close child stdin when drained, grace timer)
 *   RUNNING/CLOSING --child reaped----> DRAINING (read child stdout to EOF or drain_ms)
 *   RUNNING/CLOSING --signal----------> CLOSING  (SIGTERM now, SIGKILL after grace_ms)
 *   DRAINING --stdout EOF or drain_ms-> DONE     (pending requests answered, loop ends)
 * finish() then flushes stdout (bounded) and ends the supervised child (its tree is already
 * gone when it has exited) and reaps.
 *
 * The functions of the edges: on_client_read (client EOF: pending_wait, or begin_close),
 * flush_outputs and on_pending_timeout (pending_wait over: begin_close), on_eof_wait (stdout
 * closed, child alive: CLOSING), child_gone (from on_server_read or SIGCHLD: DRAINING),
 * on_signal (CLOSING, SIGTERM), on_grace (the SIGTERM and SIGKILL steps), finish_loop (DONE).
 * assert_relay_state checks the invariants after each of them.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "mcp/relay.h"
#include "util/log.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define READ_CHUNK (256 * 1024)
#define HIGH_WATER (8u << 20)
#define LOW_WATER (1u << 20)
#define FINAL_FLUSH_MS 2000

enum phase { PH_RUNNING, PH_CLOSING, PH_DRAINING, PH_DONE };

struct relay_timer {
    struct relay_timer *next;
    struct relay *r;
    struct event *ev;
    uint64_t token;
    int armed;
};

struct relay {
    const struct mcp_relay_opts *o;
    struct event_base *base;
    struct mcp_session *s;
    struct proc child;
    int in_fd, out_fd;
    int in_flags, out_flags; /* to restore */
    struct jsonrpc_framer cfr, sfr;
    struct event *ev_cin, *ev_cout, *ev_sout, *ev_sin;
    struct event *ev_sig[4];
    struct event *ev_grace, *ev_drain, *ev_eofwait, *ev_pending;
    struct relay_timer *timers;
    enum phase phase;
    int client_eof, client_out_dead, sout_eof;
    int cin_paused, sout_paused;
    int close_sin_when_drained;
    int pending_wait; /* client EOF with requests pending: waiting for their answers */
    int grace_step;   /* 0 none, 1 waiting before SIGTERM, 2 waiting before SIGKILL, 3 killed */
    int term_sig;     /* a signal that ended the shim */
};

#ifndef NDEBUG
/* The invariants of struct relay (sqlite's assert_pager_state). Returns 1 for assert(). */
static int assert_relay_state(const struct relay *r)
{
    /* A side read to its EOF is no longer watched, nor paused by the water marks. */
    assert(!r->client_eof || (!r->cin_paused && !event_pending(r->ev_cin, EV_READ, NULL)));
    assert(!r->sout_eof || (!r->sout_paused && !event_pending(r->ev_sout, EV_READ, NULL)));
    assert(!r->cin_paused || !event_pending(r->ev_cin, EV_READ, NULL));
    assert(!r->sout_paused || !event_pending(r->ev_sout, EV_READ, NULL));
    /* The child's stdin has its write event exactly while it is open. */
    assert((r->child.in_fd >= 0) == (r->ev_sin != NULL));
    /* Waiting for answers after the client's EOF happens only while running, on a timer. */
    assert(!r->pending_wait || (r->phase == PH_RUNNING && r->client_eof && !r->client_out_dead));
    assert(r->pending_wait == event_pending(r->ev_pending, EV_TIMEOUT, NULL) || !r->pending_wait);
    /* The shutdown steps belong to the closing phases. */
    assert(r->phase != PH_RUNNING || (r->grace_step == 0 && !r->close_sin_when_drained));
    assert(r->term_sig == 0 || r->phase != PH_RUNNING);
    assert(r->grace_step >= 0 && r->grace_step <= 3);
    /* Draining and done come after the child is reaped, with its stdin closed. */
    assert(r->phase < PH_DRAINING || (r->child.exited && r->child.in_fd < 0));
    assert(r->phase != PH_DRAINING || event_pending(r->ev_drain, EV_TIMEOUT, NULL));
    assert(r->phase < PH_DRAINING || !event_pending(r->ev_grace, EV_TIMEOUT, NULL));
    return 1;
}

/* After a flush: nothing is kept for an output that is gone. */
static int assert_relay_flushed(const struct relay *r)
{
    assert(!r->client_out_dead || mcp_session_to_client(r->s)->len == 0);
    assert(r->child.in_fd >= 0 || mcp_session_to_server(r->s)->len == 0);
    assert(!r->pending_wait || mcp_session_pending(r->s) > 0);
    return assert_relay_state(r);
}
#endif

/* ---- session host ---- */

static int64_t host_now(void *ctx)
{
    return time_mono_ns() / 1000000;
}

static void flush_outputs(struct relay *r);

static void timer_fire(evutil_socket_t fd, short what, void *arg)
{
    struct relay_timer *t = arg;
    t->armed = 0;
    mcp_session_timer(t->r->s, t->token);
    flush_outputs(t->r);
}

static void host_set_timer(void *ctx, uint64_t token, int64_t delay_ms)
{
    struct relay *r = ctx;
    struct relay_timer *t;
    struct timeval tv = {(time_t)(delay_ms / 1000), (suseconds_t)((delay_ms % 1000) * 1000)};

    for (t = r->timers; t; t = t->next)
        if (!t->armed)
            break;
    if (t == NULL) {
        t = xcalloc(1, sizeof(*t));
        t->r = r;
        t->ev = evtimer_new(r->base, timer_fire, t);
        t->next = r->timers;
        r->timers = t;
    }
    t->token = token;
    t->armed = 1;
    evtimer_add(t->ev, &tv);
}

static void host_cancel_timer(void *ctx, uint64_t token)
{
    struct relay *r = ctx;

    for (struct relay_timer *t = r->timers; t; t = t->next) {
        if (t->armed && t->token == token) {
            evtimer_del(t->ev);
            t->armed = 0;
            return;
        }
    }
}

/* ---- output ---- */

static void update_reads(struct relay *r);

/* Writes as much of b as fd takes now. Returns 0, or ERR_IO when fd is dead (EPIPE etc.;
 * errno set). */
static int write_some(int fd, struct buf *b)
{
    while (b->len > 0) {
        ssize_t w = write(fd, b->data, b->len);
        if (w > 0) {
            buf_consume(b, (size_t)w);
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        return ERR_IO;
    }
    return 0;
}

static void close_child_stdin(struct relay *r)
{
    if (r->child.in_fd < 0)
        return;
    if (r->ev_sin) {
        event_free(r->ev_sin);
        r->ev_sin = NULL;
    }
    proc_close_fd(&r->child.in_fd);
}

/* The client's output is gone: nothing more is written there, and the session records what
 * it answers from now on as not delivered. */
static void client_out_lost(struct relay *r)
{
    if (r->client_out_dead)
        return;
    r->client_out_dead = 1;
    mcp_session_client_gone(r->s);
}

/* Notices a client that closed its reading end before a write says so (EPIPE), so that the
 * events of answers not yet written say "delivered": false. */
static void probe_client_out(struct relay *r)
{
    struct pollfd pfd = {r->out_fd, POLLOUT, 0};

    if (!r->client_out_dead && poll(&pfd, 1, 0) > 0 &&
        (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
        client_out_lost(r);
}

static void begin_close(struct relay *r);

static void flush_outputs(struct relay *r)
{
    struct buf *ts = mcp_session_to_server(r->s);
    struct buf *tc = mcp_session_to_client(r->s);

    if (r->child.in_fd >= 0 && ts->len > 0) {
        if (write_some(r->child.in_fd, ts) < 0) {
            log_warn("mcp", "writing to the MCP server failed: %s", strerror(errno));
            mcp_session_server_input_closed(r->s);
            buf_reset(ts);
            close_child_stdin(r);
        }
    }
    if (r->child.in_fd < 0)
        buf_reset(ts);
    if (r->child.in_fd >= 0) {
        if (ts->len > 0)
            event_add(r->ev_sin, NULL);
        else
            event_del(r->ev_sin);
        if (ts->len == 0 && r->close_sin_when_drained)
            close_child_stdin(r);
    }
    if (!r->client_out_dead && tc->len > 0) {
        if (write_some(r->out_fd, tc) < 0) {
            log_info("mcp", "the client stopped reading: %s", strerror(errno));
            client_out_lost(r);
        }
    }
    if (r->client_out_dead)
        buf_reset(tc);
    if (tc->len > 0)
        event_add(r->ev_cout, NULL);
    else
        event_del(r->ev_cout);
    update_reads(r);
    if (r->pending_wait && (mcp_session_pending(r->s) == 0 || r->client_out_dead)) {
        r->pending_wait = 0;
        evtimer_del(r->ev_pending);
        begin_close(r);
    }
    assert(assert_relay_flushed(r));
    /* The session may have answered held requests while the loop waits for nothing else. */
    if (r->o->idle)
        r->o->idle(r->o->idle_ctx);
}

static void update_reads(struct relay *r)
{
    size_t ts = mcp_session_to_server(r->s)->len, tc = mcp_session_to_client(r->s)->len;

    if (!r->client_eof) {
        if (!r->cin_paused && ts > HIGH_WATER) {
            event_del(r->ev_cin);
            r->cin_paused = 1;
        } else if (r->cin_paused && ts < LOW_WATER) {
            event_add(r->ev_cin, NULL);
            r->cin_paused = 0;
        }
    }
    if (!r->sout_eof) {
        if (!r->sout_paused && tc > HIGH_WATER) {
            event_del(r->ev_sout);
            r->sout_paused = 1;
        } else if (r->sout_paused && tc < LOW_WATER) {
            event_add(r->ev_sout, NULL);
            r->sout_paused = 0;
        }
    }
}

static void on_write_ready(evutil_socket_t fd, short what, void *arg)
{
    flush_outputs(arg);
}

/* ---- shutdown steps ---- */

static void arm_grace(struct relay *r, int step)
{
    struct timeval tv = {r->o->grace_ms / 1000, (r->o->grace_ms % 1000) * 1000};
    r->grace_step = step;
    evtimer_add(r->ev_grace, &tv);
}

static void on_grace(evutil_socket_t fd, short what, void *arg)
{
    struct relay *r = arg;

    if (r->child.exited)
        return;
    if (r->grace_step == 1) {
        log_info("mcp", "the MCP server did not exit after its input closed: SIGTERM");
        proc_signal(&r->child, SIGTERM);
        arm_grace(r, 2);
    } else if (r->grace_step == 2) {
        log_warn("mcp", "the MCP server ignored SIGTERM: SIGKILL");
        proc_signal(&r->child, SIGKILL);
        r->grace_step = 3;
    }
    assert(assert_relay_state(r));
}

static void finish_loop(struct relay *r)
{
    char how[160], msg[200];

    if (r->phase == PH_DONE)
        return;
    r->phase = PH_DONE;
    if (r->child.exited)
        proc_describe(&r->child, how, sizeof(how));
    else
        snprintf(how, sizeof(how), "closed its output");
    snprintf(msg, sizeof(msg), "%s", how);
    probe_client_out(r);
    mcp_session_server_exited(r->s, msg);
    flush_outputs(r);
    event_base_loopbreak(r->base);
    assert(assert_relay_state(r));
}

static void on_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct relay *r = arg;
    log_warn("mcp", "the MCP server's output stayed open after it exited (a descendant holds it)");
    finish_loop(r);
}

static void child_gone(struct relay *r)
{
    struct timeval tv = {r->o->drain_ms / 1000, (r->o->drain_ms % 1000) * 1000};
    char how[160];

    if (r->phase >= PH_DRAINING)
        return;
    proc_describe(&r->child, how, sizeof(how));
    log_info("mcp", "the MCP server %s", how);
    r->phase = PH_DRAINING;
    r->pending_wait = 0;
    evtimer_del(r->ev_pending);
    evtimer_del(r->ev_grace);
    evtimer_del(r->ev_eofwait);
    close_child_stdin(r);
    if (r->sout_eof)
        finish_loop(r);
    else
        evtimer_add(r->ev_drain, &tv);
    assert(assert_relay_state(r));
}

static void begin_close(struct relay *r)
{
    if (r->phase != PH_RUNNING)
        return;
    r->phase = PH_CLOSING;
    r->close_sin_when_drained = 1;
    flush_outputs(r);
    arm_grace(r, 1);
    assert(assert_relay_state(r));
}

/* ---- input ---- */

static void pump_lines(struct relay *r, struct jsonrpc_framer *f, int from_client)
{
    const char *line;
    size_t len;
    enum jsonrpc_frame k;

    while ((k = jsonrpc_framer_next(f, &line, &len)) != JSONRPC_FRAME_NONE) {
        if (k == JSONRPC_FRAME_LINE) {
            if (from_client)
                mcp_session_client_line(r->s, line, len);
            else
                mcp_session_server_line(r->s, line, len);
        } else if (from_client) {
            mcp_session_client_too_long(r->s, len, &f->skim);
        } else {
            mcp_session_server_too_long(r->s, len, &f->skim);
        }
    }
}

/* read_into's results: not error codes (a read error other than EAGAIN reads as EOF). */
#define READ_DATA 1
#define READ_EOF 0
#define READ_NOTHING_NOW (-1)

/* Reads once from fd into f: READ_DATA, READ_EOF (end of file or a read error), or
 * READ_NOTHING_NOW (EAGAIN). */
static int read_into(int fd, struct jsonrpc_framer *f)
{
    char *p = jsonrpc_framer_reserve(f, READ_CHUNK);
    ssize_t n;

    do {
        n = read(fd, p, READ_CHUNK);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
        jsonrpc_framer_commit(f, (size_t)n);
        return READ_DATA;
    }
    if (n == 0)
        return READ_EOF;
    return (errno == EAGAIN || errno == EWOULDBLOCK) ? READ_NOTHING_NOW : READ_EOF;
}

static void on_client_read(evutil_socket_t fd, short what, void *arg)
{
    struct relay *r = arg;
    int rc = read_into(r->in_fd, &r->cfr);

    if (rc == READ_NOTHING_NOW)
        return;
    if (rc == READ_DATA) {
        probe_client_out(r);
        pump_lines(r, &r->cfr, 1);
        flush_outputs(r);
        return;
    }
    {
        const char *rest;
        size_t held;
        uint64_t partial = jsonrpc_framer_finish(&r->cfr, &rest, &held);
        r->client_eof = 1;
        event_del(r->ev_cin);
        log_info("mcp", "the client closed its output");
        mcp_session_client_eof(r->s, partial);
        probe_client_out(r);
        if (r->phase == PH_RUNNING && !r->client_out_dead && mcp_session_pending(r->s) > 0) {
            /* It may still read (a half-close): its pending requests get their answers, or an
             * error once the server is gone, before the server's input is closed. */
            struct timeval tv = {r->o->eof_wait_ms / 1000, (r->o->eof_wait_ms % 1000) * 1000};
            log_info("mcp", "%zu requests pending: up to %d ms for their answers",
                     mcp_session_pending(r->s), r->o->eof_wait_ms);
            r->pending_wait = 1;
            evtimer_add(r->ev_pending, &tv);
            assert(assert_relay_state(r));
            return;
        }
        begin_close(r);
    }
}

static void on_pending_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct relay *r = arg;

    log_info("mcp",
             "%zu requests still pending %d ms after the client's EOF: closing the server's input",
             mcp_session_pending(r->s), r->o->eof_wait_ms);
    r->pending_wait = 0;
    begin_close(r);
}

static void on_server_read(evutil_socket_t fd, short what, void *arg)
{
    struct relay *r = arg;
    int rc = read_into(r->child.out_fd, &r->sfr);

    if (rc == READ_NOTHING_NOW)
        return;
    if (rc == READ_DATA) {
        probe_client_out(r); /* one poll per batch: results are recorded as they are queued */
        pump_lines(r, &r->sfr, 0);
        flush_outputs(r);
        return;
    }
    {
        const char *rest;
        size_t held;
        uint64_t partial = jsonrpc_framer_finish(&r->sfr, &rest, &held);
        r->sout_eof = 1;
        event_del(r->ev_sout);
        mcp_session_server_eof(r->s, partial);
        if (r->phase == PH_DRAINING) {
            evtimer_del(r->ev_drain);
            finish_loop(r);
            return;
        }
        proc_reap_all();
        if (r->child.exited) {
            child_gone(r);
            return;
        }
        /* The exit usually follows at once: wait a moment for it, to report its status. */
        {
            struct timeval tv = {0, 250000};
            evtimer_add(r->ev_eofwait, &tv);
        }
    }
}

static void on_eof_wait(evutil_socket_t fd, short what, void *arg)
{
    struct relay *r = arg;

    if (r->child.exited || r->phase >= PH_DRAINING)
        return;
    /* The server closed its output but lives on: it cannot answer anything more. Its status is
     * taken when it exits (or after the grace steps). */
    log_info("mcp", "the MCP server closed its output");
    mcp_session_server_exited(r->s, "closed its output");
    flush_outputs(r);
    if (r->phase == PH_RUNNING) {
        r->phase = PH_CLOSING;
        close_child_stdin(r);
        arm_grace(r, 1);
    }
    assert(assert_relay_state(r));
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct relay *r = arg;

    if (sig == SIGCHLD) {
        proc_reap_all();
        if (r->child.exited)
            child_gone(r);
        return;
    }
    if (r->term_sig == 0) {
        r->term_sig = (int)sig;
        log_info("mcp", "signal %d: ending the MCP server", (int)sig);
        if (!r->child.exited) {
            proc_signal(&r->child, SIGTERM);
            arm_grace(r, 2);
        }
        if (r->phase == PH_RUNNING)
            r->phase = PH_CLOSING;
        r->pending_wait = 0;
        evtimer_del(r->ev_pending);
        close_child_stdin(r);
    }
    assert(assert_relay_state(r));
}

/* ---- setup and teardown ---- */

/* Makes fd non-blocking, its former flags in *saved. Returns 0, or ERR_SYS (errno set). */
static int set_nonblock(int fd, int *saved)
{
    int fl = fcntl(fd, F_GETFL);
    *saved = fl;
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return ERR_SYS;
    return 0;
}

static void final_flush(struct relay *r)
{
    struct buf *tc = mcp_session_to_client(r->s);
    int64_t deadline = time_mono_ns() + (int64_t)FINAL_FLUSH_MS * 1000000;

    while (tc->len > 0 && !r->client_out_dead) {
        struct pollfd pfd = {r->out_fd, POLLOUT, 0};
        int64_t left = (deadline - time_mono_ns()) / 1000000;
        if (left <= 0) {
            log_warn("mcp", "the client did not read the last %zu bytes", tc->len);
            break;
        }
        if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
            break;
        if (write_some(r->out_fd, tc) < 0)
            r->client_out_dead = 1; /* too late for the events: they are written */
    }
}

static void relay_teardown(struct relay *r)
{
    struct relay_timer *t, *next;

    if (r->ev_cin)
        event_free(r->ev_cin);
    if (r->ev_cout)
        event_free(r->ev_cout);
    if (r->ev_sout)
        event_free(r->ev_sout);
    if (r->ev_sin)
        event_free(r->ev_sin);
    for (int i = 0; i < 4; i++)
        if (r->ev_sig[i])
            event_free(r->ev_sig[i]);
    if (r->ev_grace)
        event_free(r->ev_grace);
    if (r->ev_drain)
        event_free(r->ev_drain);
    if (r->ev_eofwait)
        event_free(r->ev_eofwait);
    if (r->ev_pending)
        event_free(r->ev_pending);
    for (t = r->timers; t; t = next) {
        next = t->next;
        event_free(t->ev);
        free(t);
    }
    mcp_session_free(r->s);
    jsonrpc_framer_release(&r->cfr);
    jsonrpc_framer_release(&r->sfr);
    if (r->base)
        event_base_free(r->base);
    if (r->in_flags >= 0)
        fcntl(r->in_fd, F_SETFL, r->in_flags);
    if (r->out_flags >= 0)
        fcntl(r->out_fd, F_SETFL, r->out_flags);
}

/* The defaults, stated once: applied to what is unset (mcp_relay_opts_init fills them in for
 * the option table to show; mcp_relay_run for callers that left a field 0). */
static void opts_defaults(struct mcp_relay_opts *o)
{
    if (o->max_line == 0)
        o->max_line = (size_t)32 << 20;
    if (o->grace_ms <= 0)
        o->grace_ms = 2000;
    if (o->drain_ms <= 0)
        o->drain_ms = 500;
    if (o->eof_wait_ms <= 0)
        o->eof_wait_ms = 5000;
}

void mcp_relay_opts_init(struct mcp_relay_opts *o)
{
    memset(o, 0, sizeof(*o));
    opts_defaults(o);
}

int mcp_relay_run(const struct mcp_relay_opts *oin, const struct mcp_session_opts *so,
                  const struct mcp_backend *b, struct err *e)
{
    struct mcp_relay_opts o = *oin;
    struct relay r;
    struct event_config *cfg;
    struct proc_opts po;
    struct mcp_host host;
    static const int sigs[4] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP};
    int rc;

    opts_defaults(&o);
    if (o.in_fd == 0 && o.out_fd == 0)
        o.out_fd = 1;
    memset(&r, 0, sizeof(r));
    r.o = &o;
    r.in_fd = o.in_fd;
    r.out_fd = o.out_fd;
    r.in_flags = r.out_flags = -1;
    r.child.in_fd = r.child.out_fd = r.child.err_fd = -1;
    jsonrpc_framer_init(&r.cfr, o.max_line);
    jsonrpc_framer_init(&r.sfr, o.max_line);

    signal(SIGPIPE, SIG_IGN);
    if (proc_become_subreaper() < 0)
        log_debug("mcp", "cannot become a child subreaper: %s", strerror(errno));
    cfg = event_config_new();
    event_config_avoid_method(cfg, "epoll"); /* regular files on stdin/stdout */
    r.base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    if (r.base == NULL) {
        rc = err_set(e, ERR_SYS, "cannot create the event loop");
        goto fail;
    }
    /* Signals are routed through the loop before the child exists, so no SIGCHLD is lost. */
    for (int i = 0; i < 4; i++) {
        r.ev_sig[i] = evsignal_new(r.base, sigs[i], on_signal, &r);
        if (r.ev_sig[i] == NULL || evsignal_add(r.ev_sig[i], NULL) < 0) {
            rc = err_set(e, ERR_SYS, "cannot watch signal %d", sigs[i]);
            goto fail;
        }
    }
    memset(&po, 0, sizeof(po));
    po.argv = o.argv;
    po.in = PROC_PIPE;
    po.out = PROC_PIPE;
    po.err = PROC_INHERIT;
    po.die_with_parent = 1;
    po.supervise = 1;
    po.grace_ms = o.grace_ms;
    rc = proc_spawn(&r.child, &po, e);
    if (rc < 0)
        goto fail;
    if (set_nonblock(r.in_fd, &r.in_flags) < 0 || set_nonblock(r.out_fd, &r.out_flags) < 0)
        log_debug("mcp", "cannot make the client descriptors non-blocking: %s", strerror(errno));

    host.ctx = &r;
    host.now_ms = host_now;
    host.set_timer = host_set_timer;
    host.cancel_timer = host_cancel_timer;
    r.s = mcp_session_new(so, b, &host);
    r.ev_cin = event_new(r.base, r.in_fd, EV_READ | EV_PERSIST, on_client_read, &r);
    r.ev_cout = event_new(r.base, r.out_fd, EV_WRITE | EV_PERSIST, on_write_ready, &r);
    r.ev_sout = event_new(r.base, r.child.out_fd, EV_READ | EV_PERSIST, on_server_read, &r);
    r.ev_sin = event_new(r.base, r.child.in_fd, EV_WRITE | EV_PERSIST, on_write_ready, &r);
    r.ev_grace = evtimer_new(r.base, on_grace, &r);
    r.ev_drain = evtimer_new(r.base, on_drain_timeout, &r);
    r.ev_eofwait = evtimer_new(r.base, on_eof_wait, &r);
    r.ev_pending = evtimer_new(r.base, on_pending_timeout, &r);
    if (!r.ev_cin || !r.ev_cout || !r.ev_sout || !r.ev_sin || !r.ev_grace || !r.ev_drain ||
        !r.ev_eofwait || !r.ev_pending || event_add(r.ev_cin, NULL) < 0 ||
        event_add(r.ev_sout, NULL) < 0) {
        rc = err_set(e, ERR_SYS, "cannot watch the client and server descriptors");
        proc_terminate(&r.child, 0);
        proc_release(&r.child);
        goto fail;
    }
    /* The child may already be gone (SIGCHLD before the events existed is still queued). */
    if (proc_poll(&r.child))
        child_gone(&r);

    event_base_dispatch(r.base);

    mcp_session_finish(r.s);
    flush_outputs(&r);
    final_flush(&r);
    /* Stragglers in the server's group (and the server itself, if the loop ended otherwise). */
    proc_terminate(&r.child, r.child.exited ? 0 : o.grace_ms);
    proc_reap_all();
    if (o.idle)
        o.idle(o.idle_ctx);
    rc = r.term_sig ? 128 + r.term_sig : proc_exit_code(&r.child);
    if (rc < 0)
        rc = 1;
    proc_release(&r.child);
    relay_teardown(&r);
    return rc;

fail:
    relay_teardown(&r);
    return rc;
}
