/*
 * egress_tunnel: splice(2) relay of a blind tunnel (egress_tunnel.h has the states). Each
 * direction owns a pipe, the read event of its source and the write event of its
 * destination, all persistent and added only while waited on: in the steady state (both
 * sides keep up) a readable source costs one splice in, one splice out and one splice in
 * that would block, and no epoll_ctl. A direction splices into its pipe only when the pipe is
 * empty, so "would block" on the way in always means the socket has nothing (a full pipe
 * cannot be mistaken for an empty socket and spin).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/util.h>

#include "control/egress_tunnel.h"
#include "util/timeutil.h"
#include "util/buf.h"
#include "util/banned.h"

struct tdir {
    struct egress_tunnel *t;
    int side;     /* the source's side: 0 a, 1 b */
    int src, dst; /* sockets, borrowed */
    int pr, pw;   /* the pipe's ends */
    size_t inpipe;
    int eof, done;
    struct event *rd, *wr; /* the source readable, the destination writable */
    int rd_on, wr_on;
    uint64_t bytes;
};

struct egress_tunnel {
    struct event_base *base;
    struct tdir d[2];
    struct event *idle_ev;
    int idle_ms;
    int64_t last_ns; /* a byte last moved */
    int ended;
    egress_tunnel_done_fn done;
    void *arg;
};

static void want(struct event *ev, int *on, int yes)
{
    if (*on == yes)
        return;
    *on = yes;
    if (yes)
        event_add(ev, NULL);
    else
        event_del(ev);
}

void egress_tunnel_stop(struct egress_tunnel *t)
{
    for (int i = 0; i < 2; i++) {
        if (t->d[i].rd)
            want(t->d[i].rd, &t->d[i].rd_on, 0);
        if (t->d[i].wr)
            want(t->d[i].wr, &t->d[i].wr_on, 0);
    }
    if (t->idle_ev)
        event_del(t->idle_ev);
}

static void finish(struct egress_tunnel *t, int idle, int err_side, int err_errno)
{
    struct egress_tunnel_end end = {.idle = idle, .err_side = err_side, .err_errno = err_errno};

    if (t->ended)
        return;
    t->ended = 1;
    egress_tunnel_stop(t);
    end.bytes[0] = t->d[0].bytes;
    end.bytes[1] = t->d[1].bytes;
    t->done(t, &end, t->arg);
}

/* Moves what it can of one direction: drain the pipe into the destination, refill it from the
 * source, until one of the two would block, the source ends or a socket fails. */
static void pump(struct tdir *d)
{
    struct egress_tunnel *t = d->t;
    int moved = 0;
    ssize_t n;

    while (!t->ended) {
        while (d->inpipe > 0) {
            n = splice(d->pr, NULL, d->dst, NULL, d->inpipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                d->inpipe -= (size_t)n;
                d->bytes += (uint64_t)n;
                moved = 1;
            } else if (n < 0 && errno == EINTR) {
                continue;
            } else if (n < 0 && errno == EAGAIN) {
                want(d->rd, &d->rd_on, 0); /* backpressure: the pipe holds what is buffered */
                want(d->wr, &d->wr_on, 1);
                goto out;
            } else {
                finish(t, 0, !d->side, n < 0 ? errno : EPIPE);
                return;
            }
        }
        want(d->wr, &d->wr_on, 0);
        if (d->eof) {
            want(d->rd, &d->rd_on, 0);
            d->done = 1;
            if (shutdown(d->dst, SHUT_WR) != 0 && errno != ENOTCONN) {
                finish(t, 0, !d->side, errno);
                return;
            }
            if (t->d[!d->side].done)
                finish(t, 0, EGRESS_TUNNEL_SIDE_NONE, 0);
            goto out;
        }
        n = splice(d->src, NULL, d->pw, NULL, EGRESS_TUNNEL_PIPE,
                   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            d->inpipe = (size_t)n;
        } else if (n == 0) {
            d->eof = 1;
        } else if (errno == EAGAIN) {
            want(d->rd, &d->rd_on, 1);
            goto out;
        } else if (errno != EINTR) {
            finish(t, 0, d->side, errno);
            return;
        }
    }
out:
    if (moved)
        t->last_ns = time_mono_ns();
}

static void on_io(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pump(arg);
}

static void arm_idle(struct egress_tunnel *t, int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};

    event_add(t->idle_ev, &tv);
}

static void on_idle(evutil_socket_t fd, short what, void *arg)
{
    struct egress_tunnel *t = arg;
    int64_t quiet_ms = (time_mono_ns() - t->last_ns) / 1000000;

    (void)fd;
    (void)what;
    if (quiet_ms >= t->idle_ms)
        finish(t, 1, EGRESS_TUNNEL_SIDE_NONE, 0);
    else
        arm_idle(t, t->idle_ms - quiet_ms);
}

struct egress_tunnel *egress_tunnel_new(struct event_base *base, int a, int b, int idle_ms,
                                        egress_tunnel_done_fn done, void *arg, struct err *e)
{
    struct egress_tunnel *t = xcalloc(1, sizeof(*t));
    int fds[2] = {a, b};

    t->base = base;
    t->done = done;
    t->arg = arg;
    t->idle_ms = idle_ms;
    t->last_ns = time_mono_ns();
    for (int i = 0; i < 2; i++)
        t->d[i].pr = t->d[i].pw = -1;
    if (evutil_make_socket_nonblocking(a) != 0 || evutil_make_socket_nonblocking(b) != 0) {
        err_set(e, ERR_SYS, "cannot make the tunnel's sockets non-blocking: %s", strerror(errno));
        goto fail;
    }
    for (int i = 0; i < 2; i++) {
        struct tdir *d = &t->d[i];
        int p[2];
        d->t = t;
        d->side = i;
        d->src = fds[i];
        d->dst = fds[!i];
        if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) {
            err_set(e, ERR_SYS, "cannot create the tunnel's pipe: %s", strerror(errno));
            goto fail;
        }
        d->pr = p[0];
        d->pw = p[1];
        (void)fcntl(d->pw, F_SETPIPE_SZ, EGRESS_TUNNEL_PIPE); /* the default 64 KiB else */
        d->rd = event_new(base, d->src, EV_READ | EV_PERSIST, on_io, d);
        d->wr = event_new(base, d->dst, EV_WRITE | EV_PERSIST, on_io, d);
        if (d->rd == NULL || d->wr == NULL) {
            err_set(e, ERR_SYS, "cannot create the tunnel's events");
            goto fail;
        }
    }
    if (idle_ms > 0) {
        t->idle_ev = event_new(base, -1, 0, on_idle, t);
        if (t->idle_ev == NULL) {
            err_set(e, ERR_SYS, "cannot create the tunnel's timer");
            goto fail;
        }
        arm_idle(t, idle_ms);
    }
    for (int i = 0; i < 2; i++)
        want(t->d[i].rd, &t->d[i].rd_on, 1);
    return t;
fail:
    egress_tunnel_free(t);
    return NULL;
}

void egress_tunnel_bytes(const struct egress_tunnel *t, uint64_t out[2])
{
    out[0] = t->d[0].bytes;
    out[1] = t->d[1].bytes;
}

void egress_tunnel_free(struct egress_tunnel *t)
{
    if (t == NULL)
        return;
    for (int i = 0; i < 2; i++) {
        struct tdir *d = &t->d[i];
        if (d->rd)
            event_free(d->rd);
        if (d->wr)
            event_free(d->wr);
        if (d->pr >= 0)
            close(d->pr);
        if (d->pw >= 0)
            close(d->pw);
    }
    if (t->idle_ev)
        event_free(t->idle_ev);
    free(t);
}
