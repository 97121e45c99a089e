/*
 * test_upstream: the controller's upstream client (src/control/upstream.c) against raw origins
 * written here, for the pool's edges: an origin that ends its side of a keep-alive connection
 * after a complete response.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "codec/http.h"
#include "control/upstream.h"
#include "util/buf.h"
#include "util/banned.h"

#define MAX_CONNS 8

/* The origin: answers the first request of each connection with a complete keep-alive
 * response ("HTTP/1.1 200", Content-Length, no "Connection: close"), then shuts its write side
 * (SHUT_WR) and goes on reading, counting every request that still arrives on that
 * connection: one there is a request sent on a connection the origin had ended. */
struct origin {
    struct event_base *base;
    int lfd;
    struct event *accept_ev;
    int nconns;
    struct oconn {
        struct origin *o;
        int fd;
        struct event *ev;
        struct buf in;
        int answered;
        int late; /* requests after the answer, on this ended connection */
    } conns[MAX_CONNS];
};

/* The count of request heads in b (each request here has no body). */
static int heads_in(const struct buf *b)
{
    int n = 0;
    for (const char *p = b->data; (p = strstr(p, "\r\n\r\n")) != NULL; p += 4)
        n++;
    return n;
}

static void oconn_read_cb(evutil_socket_t fd, short what, void *arg)
{
    struct oconn *c = arg;
    char tmp[4096];
    ssize_t n = read(fd, tmp, sizeof(tmp));

    if (n <= 0) {
        event_del(c->ev);
        close(c->fd);
        c->fd = -1;
        return;
    }
    buf_add(&c->in, tmp, (size_t)n);
    if (!c->answered && heads_in(&c->in) >= 1) {
        char reply[128];
        int len = snprintf(reply, sizeof(reply),
                           "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nanswer %d\n",
                           (int)(c - c->o->conns) + 1);
        assert_int_equal(write(fd, reply, (size_t)len), len);
        shutdown(fd, SHUT_WR);
        c->answered = 1;
    }
    c->late = heads_in(&c->in) - 1;
}

static void origin_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
    struct origin *o = arg;
    int fd = accept(lfd, NULL, NULL);
    struct oconn *c;

    if (fd < 0)
        return;
    assert_true(o->nconns < MAX_CONNS);
    c = &o->conns[o->nconns++];
    c->o = o;
    c->fd = fd;
    buf_init(&c->in, 0);
    c->ev = event_new(o->base, fd, EV_READ | EV_PERSIST, oconn_read_cb, c);
    event_add(c->ev, NULL);
}

static void origin_start(struct origin *o, struct event_base *base, char *url, size_t len)
{
    struct sockaddr_in sin;
    socklen_t slen = sizeof(sin);

    memset(o, 0, sizeof(*o));
    o->base = base;
    o->lfd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(o->lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(o->lfd, 8), 0);
    assert_int_equal(getsockname(o->lfd, (struct sockaddr *)&sin, &slen), 0);
    snprintf(url, len, "http://127.0.0.1:%d", ntohs(sin.sin_port));
    o->accept_ev = event_new(base, o->lfd, EV_READ | EV_PERSIST, origin_accept_cb, o);
    event_add(o->accept_ev, NULL);
}

static void origin_stop(struct origin *o)
{
    for (int i = 0; i < o->nconns; i++) {
        event_free(o->conns[i].ev);
        if (o->conns[i].fd >= 0)
            close(o->conns[i].fd);
        buf_release(&o->conns[i].in);
    }
    event_free(o->accept_ev);
    close(o->lfd);
}

/* One request's outcome. */
struct call {
    struct event_base *base;
    int status, error, done;
    struct buf body;
};

static void on_head(struct ureq *q, const struct http_head *h, void *arg)
{
    ((struct call *)arg)->status = h->status;
}

static void on_body(struct ureq *q, struct evbuffer *data, void *arg)
{
    struct call *c = arg;
    size_t n = evbuffer_get_length(data);
    buf_add(&c->body, evbuffer_pullup(data, -1), n);
    evbuffer_drain(data, n);
}

static void on_done(struct ureq *q, void *arg)
{
    struct call *c = arg;
    c->done = 1;
    event_base_loopbreak(c->base);
}

static void on_error(struct ureq *q, int code, int got_head, const char *msg, void *arg)
{
    struct call *c = arg;
    c->error = code;
    c->done = 1;
    event_base_loopbreak(c->base);
}

static const struct ureq_callbacks cbs = {on_head, on_body, on_done, on_error};

/* Sends GET / and runs the loop until it ends (5 s at most). */
static void call_once(struct upstream *u, struct call *c)
{
    struct timeval tv = {5, 0};
    c->status = c->error = c->done = 0;
    buf_reset(&c->body);
    upstream_send(u, "GET", "/", NULL, 0, NULL, 0, &cbs, c);
    event_base_loopexit(c->base, &tv);
    event_base_dispatch(c->base);
    assert_true(c->done);
}

/* The origin ended each connection after its answer, and the upstream had not read that end
 * yet when the next request came (sent at once, before the loop ran again): the request must
 * go on a new connection, never onto the ended one (where the origin may still read it: it
 * reached the origin twice, once there and once when sent again after the close). */
static void test_no_reuse_after_origin_end(void **state)
{
    struct event_base *base = event_base_new();
    struct upstream_config uc = {0};
    struct origin o;
    struct call c = {.base = base};
    struct err e = {0};
    char url[64];
    struct upstream *u;

    buf_init(&c.body, 0);
    origin_start(&o, base, url, sizeof(url));
    u = upstream_new(base, NULL, url, &uc, &e);
    assert_non_null(u);
    for (int i = 1; i <= 3; i++) {
        char want[32];
        call_once(u, &c);
        assert_int_equal(c.error, 0);
        assert_int_equal(c.status, 200);
        snprintf(want, sizeof(want), "answer %d\n", i);
        assert_string_equal(c.body.data, want);
    }
    assert_int_equal(o.nconns, 3);
    for (int i = 0; i < o.nconns; i++)
        if (o.conns[i].late != 0)
            fail_msg("connection %d: %d request(s) after the origin ended it", i + 1,
                     o.conns[i].late);
    upstream_free(u);
    origin_stop(&o);
    buf_release(&c.body);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_reuse_after_origin_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
