/* Unit tests for src/control/tlsout, the interception's TLS writes made at once: over a real
 * TLS session between two libevent bufferevent_openssl ends (a server session of the run's
 * tlsmint, a client trusting its CA) on a socket pair, a small write leaves nothing in the
 * output (it went out before any loop turn), one behind bytes already waiting keeps the
 * order, a record the socket only half takes is finished by libevent with the same bytes,
 * and data larger than one record goes through the output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "codec/tlsmint.h"
#include "control/tlsout.h"
#include "util/banned.h"

struct pair {
    struct event_base *base;
    struct tlsmint *mint;
    struct tlsmint_sni sni;
    SSL_CTX *cctx;
    struct bufferevent *srv, *cli;
    int connected;
    struct evbuffer *got; /* what the client read */
    size_t want;
};

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct pair *p = arg;

    (void)bev;
    if (what & BEV_EVENT_CONNECTED)
        p->connected++;
    else
        fail_msg("TLS event 0x%x", what);
    if (p->connected == 2)
        event_base_loopbreak(p->base);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct pair *p = arg;

    evbuffer_add_buffer(p->got, bufferevent_get_input(bev));
    if (evbuffer_get_length(p->got) >= p->want)
        event_base_loopbreak(p->base);
}

static void guard_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

static void run(struct pair *p)
{
    struct timeval tv = {10, 0};
    struct event *guard = evtimer_new(p->base, guard_cb, p->base);

    evtimer_add(guard, &tv);
    event_base_dispatch(p->base);
    event_free(guard);
}

/* A handshake done between the two ends; sndbuf > 0 shrinks the server's socket buffer. */
static void pair_open(struct pair *p, int sndbuf)
{
    struct err e = {0};
    int sv[2];
    SSL *s, *c;

    memset(p, 0, sizeof(*p));
    p->base = event_base_new();
    p->mint = tlsmint_new("r-test", &e);
    assert_non_null(p->mint);
    p->got = evbuffer_new();
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    if (sndbuf > 0)
        assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
    evutil_make_socket_nonblocking(sv[0]);
    evutil_make_socket_nonblocking(sv[1]);
    snprintf(p->sni.expect, sizeof(p->sni.expect), "api.test");
    s = tlsmint_ssl_new(p->mint, &p->sni, &e);
    assert_non_null(s);
    p->cctx = SSL_CTX_new(TLS_client_method());
    X509_STORE_add_cert(SSL_CTX_get_cert_store(p->cctx), tlsmint_ca_cert(p->mint));
    SSL_CTX_set_verify(p->cctx, SSL_VERIFY_PEER, NULL);
    c = SSL_new(p->cctx);
    SSL_set_tlsext_host_name(c, "api.test");
    SSL_set1_host(c, "api.test");
    p->srv = bufferevent_openssl_socket_new(p->base, sv[0], s, BUFFEREVENT_SSL_ACCEPTING,
                                            BEV_OPT_CLOSE_ON_FREE);
    p->cli = bufferevent_openssl_socket_new(p->base, sv[1], c, BUFFEREVENT_SSL_CONNECTING,
                                            BEV_OPT_CLOSE_ON_FREE);
    assert_non_null(p->srv);
    assert_non_null(p->cli);
    bufferevent_setcb(p->srv, NULL, NULL, on_event, p);
    bufferevent_setcb(p->cli, on_read, NULL, on_event, p);
    bufferevent_enable(p->srv, EV_READ | EV_WRITE);
    bufferevent_enable(p->cli, EV_READ | EV_WRITE);
    run(p);
    assert_int_equal(p->connected, 2);
}

static void pair_close(struct pair *p)
{
    bufferevent_free(p->srv);
    bufferevent_free(p->cli);
    SSL_CTX_free(p->cctx);
    tlsmint_free(p->mint);
    evbuffer_free(p->got);
    event_base_free(p->base);
    ERR_clear_error();
}

/* Runs the loop until the client read n bytes; they must be data. */
static void expect_read(struct pair *p, const void *data, size_t n)
{
    p->want = n;
    if (evbuffer_get_length(p->got) < n)
        run(p);
    assert_int_equal(evbuffer_get_length(p->got), n);
    assert_memory_equal(evbuffer_pullup(p->got, -1), data, n);
    evbuffer_drain(p->got, n);
}

static void test_written_now(void **state)
{
    struct pair p;
    static const char msg[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    (void)state;
    pair_open(&p, 0);
    tlsout_write(p.srv, msg, sizeof(msg) - 1);
    /* no loop turn yet: nothing left for the write event */
    assert_int_equal(evbuffer_get_length(bufferevent_get_output(p.srv)), 0);
    expect_read(&p, msg, sizeof(msg) - 1);
    tlsout_write(p.srv, "", 0);
    assert_int_equal(evbuffer_get_length(bufferevent_get_output(p.srv)), 0);
    pair_close(&p);
}

static void test_behind_waiting_bytes(void **state)
{
    struct pair p;

    (void)state;
    pair_open(&p, 0);
    evbuffer_add(bufferevent_get_output(p.srv), "first ", 6);
    tlsout_write(p.srv, "second", 6);
    assert_int_equal(evbuffer_get_length(bufferevent_get_output(p.srv)), 12);
    expect_read(&p, "first second", 12);
    pair_close(&p);
}

static void test_half_taken_record(void **state)
{
    static unsigned char big[TLSOUT_MAX], huge[4 * TLSOUT_MAX];
    struct pair p;

    (void)state;
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (unsigned char)(i * 7 + 3);
    for (size_t i = 0; i < sizeof(huge); i++)
        huge[i] = (unsigned char)(i * 13 + 1);
    pair_open(&p, 1); /* the smallest send buffer: the record does not fit */
    tlsout_write(p.srv, big, sizeof(big));
    assert_true(evbuffer_get_length(bufferevent_get_output(p.srv)) > 0);
    expect_read(&p, big, sizeof(big));
    /* larger than a record: through the output, whole */
    tlsout_write(p.srv, huge, sizeof(huge));
    assert_int_equal(evbuffer_get_length(bufferevent_get_output(p.srv)), sizeof(huge));
    expect_read(&p, huge, sizeof(huge));
    /* and direct again once the output is empty */
    tlsout_write(p.srv, "x", 1);
    assert_int_equal(evbuffer_get_length(bufferevent_get_output(p.srv)), 0);
    expect_read(&p, "x", 1);
    pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_written_now),
        cmocka_unit_test(test_behind_waiting_bytes),
        cmocka_unit_test(test_half_taken_record),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
