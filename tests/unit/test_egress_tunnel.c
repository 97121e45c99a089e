/* Unit tests for src/control/egress_tunnel: the splice relay of a blind tunnel between two
 * loopback TCP connections, their far ends driven by threads with blocking sockets: bytes
 * intact and counted each way, one side's EOF passed on as a half-close while the other way
 * keeps flowing, the idle timeout, a reset reported on its side, and a reader that stops
 * reading holding the writer back (bounded buffering). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <event2/event.h>

#include "control/egress_tunnel.h"
#include "util/banned.h"

/* A connected pair of loopback TCP sockets: *x the connecting end, *y the accepted one. */
static void tcp_pair(int *x, int *y)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);
    int l = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(l >= 0);
    assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(l, 1), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &len), 0);
    *x = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(*x, (struct sockaddr *)&sa, sizeof(sa)), 0);
    *y = accept(l, NULL, NULL);
    assert_true(*y >= 0);
    close(l);
}

/* The test stream: byte i of stream seed. */
static unsigned char pat(uint64_t i, unsigned seed)
{
    uint64_t x = (i / 8 + seed) * 0x9e3779b97f4a7c15ull;
    return (unsigned char)(x >> (8 * (i % 8)));
}

static void send_pattern(int fd, uint64_t n, unsigned seed)
{
    unsigned char buf[65536];
    uint64_t off = 0;

    while (off < n) {
        size_t k = n - off < sizeof(buf) ? (size_t)(n - off) : sizeof(buf);
        ssize_t w;
        for (size_t i = 0; i < k; i++)
            buf[i] = pat(off + i, seed);
        w = send(fd, buf, k, 0);
        if (w <= 0)
            return;
        off += (uint64_t)w; /* a short write: the rest is made again from off */
    }
}

/* Reads to EOF; the count read, or UINT64_MAX when a byte differs from the pattern. */
static uint64_t recv_pattern(int fd, unsigned seed)
{
    unsigned char buf[65536];
    uint64_t off = 0;
    int bad = 0;
    ssize_t r;

    while ((r = recv(fd, buf, sizeof(buf), 0)) > 0) {
        for (ssize_t i = 0; i < r; i++)
            if (buf[i] != pat(off + (uint64_t)i, seed))
                bad = 1;
        off += (uint64_t)r;
    }
    return bad ? UINT64_MAX : off;
}

/* a's far end: sends its request, half-closes, reads the answer. b's far end: reads to EOF
 * first (the half-close arrived), then answers and closes. */
struct far {
    int fd;
    uint64_t send_n, got;
    unsigned send_seed, recv_seed;
    int answer_after_eof;
};

static void *far_run(void *arg)
{
    struct far *f = arg;
    struct timeval tv = {10, 0}; /* a tunnel that stalls fails the test, not hangs it */

    setsockopt(f->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(f->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (f->answer_after_eof) {
        f->got = recv_pattern(f->fd, f->recv_seed);
        send_pattern(f->fd, f->send_n, f->send_seed);
        shutdown(f->fd, SHUT_WR);
    } else {
        send_pattern(f->fd, f->send_n, f->send_seed);
        shutdown(f->fd, SHUT_WR);
        f->got = recv_pattern(f->fd, f->recv_seed);
    }
    return NULL;
}

struct result {
    struct event_base *base;
    int calls;
    struct egress_tunnel_end end;
};

static void on_done(struct egress_tunnel *t, const struct egress_tunnel_end *end, void *arg)
{
    struct result *r = arg;

    (void)t;
    r->calls++;
    r->end = *end;
    event_base_loopbreak(r->base);
}

static void guard_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

/* Runs base until the tunnel ends or secs pass. */
static void run_for(struct event_base *base, int secs)
{
    struct timeval tv = {secs, 0};
    struct event *guard = evtimer_new(base, guard_cb, base);

    evtimer_add(guard, &tv);
    event_base_dispatch(base);
    event_free(guard);
}

/* A tunnel between a (whose far end is afar) and b (far end bfar), on its own base. */
struct fixture {
    struct event_base *base;
    struct result r;
    int afar, a, b, bfar;
    struct egress_tunnel *t;
};

static void fixture_open(struct fixture *f, int idle_ms)
{
    struct err e = {0};

    f->base = event_base_new();
    f->r = (struct result){.base = f->base};
    tcp_pair(&f->afar, &f->a);
    tcp_pair(&f->b, &f->bfar);
    f->t = egress_tunnel_new(f->base, f->a, f->b, idle_ms, on_done, &f->r, &e);
    assert_non_null(f->t);
}

/* Frees the tunnel and closes every end still open (bfar -1: closed by the test). */
static void fixture_close(struct fixture *f)
{
    egress_tunnel_free(f->t);
    close(f->a);
    close(f->b);
    close(f->afar);
    if (f->bfar >= 0)
        close(f->bfar);
    event_base_free(f->base);
}

static void transfer(uint64_t up_n, uint64_t down_n)
{
    struct fixture f;
    struct far fa, fb;
    pthread_t ta, tb;

    fixture_open(&f, 10000);
    fa = (struct far){.fd = f.afar, .send_n = up_n, .send_seed = 1, .recv_seed = 2};
    fb = (struct far){
        .fd = f.bfar, .send_n = down_n, .send_seed = 2, .recv_seed = 1, .answer_after_eof = 1};
    assert_int_equal(pthread_create(&ta, NULL, far_run, &fa), 0);
    assert_int_equal(pthread_create(&tb, NULL, far_run, &fb), 0);
    run_for(f.base, 20);
    assert_int_equal(pthread_join(ta, NULL), 0);
    assert_int_equal(pthread_join(tb, NULL), 0);
    assert_int_equal(f.r.calls, 1);
    assert_int_equal(f.r.end.err_side, EGRESS_TUNNEL_SIDE_NONE);
    assert_int_equal(f.r.end.idle, 0);
    assert_true(f.r.end.bytes[0] == up_n);
    assert_true(f.r.end.bytes[1] == down_n);
    assert_true(fb.got == up_n);   /* intact, and b's end saw EOF before answering */
    assert_true(fa.got == down_n); /* the answer came back after a's half-close */
    fixture_close(&f);
}

static void test_transfer_half_close(void **state)
{
    (void)state;
    transfer(3u << 20, 17u << 20);
    transfer(0, 1);
    transfer(1, 0);
    transfer(5u << 20, 0);
}

static void test_idle(void **state)
{
    struct fixture f;

    (void)state;
    fixture_open(&f, 150);
    assert_int_equal(send(f.afar, "hi", 2, 0), 2);
    run_for(f.base, 5);
    assert_int_equal(f.r.calls, 1);
    assert_int_equal(f.r.end.idle, 1);
    assert_true(f.r.end.bytes[0] == 2);
    fixture_close(&f);
}

static void test_reset(void **state)
{
    struct fixture f;
    struct linger lg = {1, 0};

    (void)state;
    fixture_open(&f, 10000);
    assert_int_equal(setsockopt(f.bfar, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    close(f.bfar); /* a reset */
    f.bfar = -1;
    run_for(f.base, 5);
    assert_int_equal(f.r.calls, 1);
    assert_int_equal(f.r.end.err_side, 1);
    assert_int_equal(f.r.end.err_errno, ECONNRESET);
    fixture_close(&f);
}

static void test_backpressure(void **state)
{
    struct fixture f;
    int stuck = 0;
    uint64_t sent = 0, moved[2];
    static unsigned char chunk[65536];

    (void)state;
    fixture_open(&f, 10000);
    assert_int_equal(fcntl(f.afar, F_SETFL, O_NONBLOCK), 0);
    /* b's far end never reads: the writer must come to a stop */
    for (int i = 0; i < 20000 && stuck < 200 && sent < (256u << 20); i++) {
        ssize_t w = send(f.afar, chunk, sizeof(chunk), 0);
        if (w > 0) {
            sent += (uint64_t)w;
            stuck = 0;
        } else {
            assert_true(errno == EAGAIN);
            stuck++;
            usleep(500);
        }
        event_base_loop(f.base, EVLOOP_NONBLOCK);
    }
    egress_tunnel_bytes(f.t, moved);
    assert_int_equal(f.r.calls, 0);
    assert_true(stuck >= 200);       /* stopped */
    assert_true(sent < (64u << 20)); /* socket buffers and one pipe, not the whole stream */
    assert_true(moved[0] < sent);
    fixture_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transfer_half_close),
        cmocka_unit_test(test_idle),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_backpressure),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
