/*
 * test_intercept: intercept_start on real loopback sockets. The test's loop accepts a client
 * connection and hands it to intercept_start as the egress proxy does after CONNECT; a
 * blocking OpenSSL client in a thread (trusting only the run's CA) sends requests; a TLS
 * origin on the same loop, with its own CA given as --upstream-ca and reached through a
 * --resolve entry, stands in for the real host. Checked: credential_401 with after_calls 2
 * (two requests forwarded, the third answered 401 with the canary), the events, no fault,
 * a Host that names another host (421), an SNI other than the CONNECT host (a TLS alert),
 * and intercept_answer_401's two shapes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <openssl/err.h>

#include "codec/tlsmint.h"
#include "control/ctl.h"
#include "control/intercept.h"
#include "events/events.h"
#include "util/timeutil.h"
#include "helpers.h"
#include "util/banned.h"

#define PLAN_401                                                                                   \
    "{\"version\":1,\"run\":\"r-icpt\",\"rep\":1,\"faulted\":true,"                                \
    "\"canary\":\"E-FAULTLINE-0000abcd\",\"seed\":\"0x1\","                                        \
    "\"faults\":[{\"index\":0,\"kind\":\"egress.credential_401\",\"family\":\"egress\","           \
    "\"safety\":\"fail-safe\",\"injectors\":[\"controller-egress\"],"                              \
    "\"match\":{\"host\":\"api.github.com\"},\"when\":null,\"after_calls\":2,\"times\":-1,"        \
    "\"probability\":1.0,\"options\":{}}],\"abort\":{},\"policy_snapshot\":null}"
#define PLAN_NONE                                                                                  \
    "{\"version\":1,\"run\":\"r-icpt\",\"rep\":0,\"faulted\":false,"                               \
    "\"canary\":\"E-FAULTLINE-0000abcd\",\"seed\":\"0x1\",\"faults\":[],\"abort\":{},"            \
    "\"policy_snapshot\":null}"

struct fixture {
    struct ctl c;
    struct ut_tmpfile events, origin_ca;
    struct tlsmint *origin_mint; /* the origin's own CA (the "real" host's) */
    struct tlsmint_sni origin_sni[16];
    int norigin;
    struct evconnlistener *front, *origin;
    int front_port, origin_port;
    const char *connect_host; /* what the "CONNECT" named */
    char resolve[64];
    const char *resolve_list[2];
    int origin_requests;
    int preread;
    char ca_dir[64];
};

/* ---- the origin: answers every request 200 "hello PATH" ---- */

static void origin_read(struct bufferevent *bev, void *arg)
{
    struct fixture *f = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    struct evbuffer_ptr p;

    while ((p = evbuffer_search(in, "\r\n\r\n", 4, NULL)).pos >= 0) {
        char line[256] = {0};
        char path[200] = "?";
        size_t n = (size_t)p.pos + 4;
        char *head = xmalloc(n + 1);
        evbuffer_remove(in, head, n);
        head[n] = '\0';
        memcpy(line, head, strcspn(head, "\r") < sizeof(line) - 1 ? strcspn(head, "\r") : 0);
        sscanf(line, "%*s %199s", path);
        /* no secrets are relayed the wrong way: the origin sees the client's Authorization */
        f->origin_requests++;
        {
            char body[300];
            int bn = snprintf(body, sizeof(body), "hello %s%s", path,
                              strstr(head, "Authorization: token s3cret") ? " authed" : "");
            evbuffer_add_printf(bufferevent_get_output(bev),
                                "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Origin: yes\r\n\r\n%s",
                                bn, body);
        }
        free(head);
    }
}

static void origin_event(struct bufferevent *bev, short what, void *arg)
{
    (void)arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        bufferevent_free(bev);
}

static void origin_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                          int len, void *arg)
{
    struct fixture *f = arg;
    struct err e = {0};
    struct tlsmint_sni *sni = &f->origin_sni[f->norigin++ % 16];
    SSL *ssl;
    struct bufferevent *bev;

    (void)l;
    (void)sa;
    (void)len;
    sni->expect[0] = '\0';
    ssl = tlsmint_ssl_new(f->origin_mint, sni, &e);
    assert_non_null(ssl);
    bev = bufferevent_openssl_socket_new(f->c.base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                         BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(bev, origin_read, NULL, origin_event, f);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

/* ---- the front: what the egress proxy does after CONNECT ---- */

/* preread: the proxy read the start of the ClientHello before handing the connection over
 * (a transparent listener that read, rather than peeked, the SNI): the TLS filter path */
static void front_read(struct bufferevent *bev, void *arg)
{
    struct fixture *f = arg;
    struct err e = {0};

    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    assert_true(evbuffer_get_length(bufferevent_get_input(bev)) > 0);
    assert_int_equal(intercept_start(&f->c, bev, f->connect_host, f->origin_port, &e), 0);
}

static void front_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                         int len, void *arg)
{
    struct fixture *f = arg;
    struct err e = {0};
    struct bufferevent *bev = bufferevent_socket_new(f->c.base, fd, BEV_OPT_CLOSE_ON_FREE);

    (void)l;
    (void)sa;
    (void)len;
    if (f->preread) {
        bufferevent_setcb(bev, front_read, NULL, NULL, f);
        bufferevent_enable(bev, EV_READ);
        return;
    }
    assert_int_equal(intercept_start(&f->c, bev, f->connect_host, f->origin_port, &e), 0);
}

static int listener_port(struct evconnlistener *l)
{
    struct sockaddr_in sin;
    socklen_t n = sizeof(sin);
    getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&sin, &n);
    return ntohs(sin.sin_port);
}

static struct evconnlistener *listen_on(struct fixture *f, evconnlistener_cb cb)
{
    struct sockaddr_in sin;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return evconnlistener_new_bind(f->c.base, cb, f, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                   16, (struct sockaddr *)&sin, sizeof(sin));
}

static void fixture_init(struct fixture *f, const char *plan_text)
{
    struct err e = {0};
    json_t *pj = ut_json(plan_text);

    memset(f, 0, sizeof(*f));
    controller_config_init(&f->c.cfg);
    f->c.base = event_base_new();
    f->c.plan = plan_from_json(pj, &e);
    json_decref(pj);
    assert_non_null(f->c.plan);
    ut_tmpfile_init(&f->events);
    f->c.ev = events_open(f->events.path, "r-icpt", "controller", &e);
    assert_non_null(f->c.ev);
    f->c.sandbox = "declared";
    f->origin_mint = tlsmint_new("origin", &e);
    assert_non_null(f->origin_mint);
    ut_tmpfile_init(&f->origin_ca);
    assert_int_equal(tlsmint_write_ca(f->origin_mint, f->origin_ca.path, &e), 0);
    f->c.cfg.upstream_ca = f->origin_ca.path;
    f->c.cfg.client_timeout_ms = 5000;
    f->c.cfg.connect_timeout_ms = 5000;
    f->front = listen_on(f, front_accept);
    f->origin = listen_on(f, origin_accept);
    f->front_port = listener_port(f->front);
    f->origin_port = listener_port(f->origin);
    snprintf(f->resolve, sizeof(f->resolve), "api.github.com:%d:127.0.0.1", f->origin_port);
    f->resolve_list[0] = f->resolve;
    f->c.cfg.resolve = f->resolve_list;
    f->connect_host = "api.github.com";
    snprintf(f->ca_dir, sizeof(f->ca_dir), "/tmp/faultline-unit-XXXXXX");
    assert_non_null(mkdtemp(f->ca_dir));
    f->c.cfg.ca_dir = f->ca_dir;
    f->c.icpt = intercept_new(&f->c, &e);
    assert_non_null(f->c.icpt);
}

static void fixture_release(struct fixture *f)
{
    intercept_free(f->c.icpt);
    /* the origin's connections see the pool's close and free themselves */
    for (int i = 0; i < 50; i++) {
        event_base_loop(f->c.base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
    evconnlistener_free(f->front);
    evconnlistener_free(f->origin);
    events_close(f->c.ev);
    plan_free(f->c.plan);
    tlsmint_free(f->origin_mint);
    event_base_free(f->c.base);
    unlink(f->events.path);
    unlink(f->origin_ca.path);
    {
        char p[128];
        snprintf(p, sizeof(p), "%s/ca.pem", f->ca_dir);
        unlink(p);
        snprintf(p, sizeof(p), "%s/ca-bundle.pem", f->ca_dir);
        unlink(p);
        rmdir(f->ca_dir);
    }
}

/* ---- the client, in a thread ---- */

struct job {
    int port;
    const char *sni; /* NULL: none */
    char ca_file[96]; /* the run CA, as intercept_new wrote it */
    const char *reqs[4];
    int nreq;
    char resp[4][2048];
    int handshake_ok;
    atomic_int done;
};

/* Reads one response (head + Content-Length body) into out. */
static void read_response(SSL *ssl, char *out, size_t size)
{
    size_t n = 0;
    char *end = NULL;

    out[0] = '\0';
    while (n + 1 < size) {
        int r = SSL_read(ssl, out + n, (int)(size - 1 - n));
        if (r <= 0)
            break;
        n += (size_t)r;
        out[n] = '\0';
        if ((end = strstr(out, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(out, "Content-Length: ");
            size_t want = cl ? strtoul(cl + 16, NULL, 10) : 0;
            if (n >= (size_t)(end + 4 - out) + want)
                break;
        }
    }
}

static void *client_main(void *arg)
{
    struct job *j = arg;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    struct sockaddr_in sin;
    SSL *ssl;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {5, 0};

    assert_int_equal(SSL_CTX_load_verify_locations(ctx, j->ca_file, NULL), 1);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)j->port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
        goto out;
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (j->sni) {
        SSL_set_tlsext_host_name(ssl, j->sni);
        SSL_set1_host(ssl, j->sni);
    }
    if (SSL_connect(ssl) == 1) {
        j->handshake_ok = 1;
        for (int i = 0; i < j->nreq; i++) {
            SSL_write(ssl, j->reqs[i], (int)strlen(j->reqs[i]));
            read_response(ssl, j->resp[i], sizeof(j->resp[i]));
        }
        SSL_shutdown(ssl);
    }
    SSL_free(ssl);
out:
    close(fd);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    atomic_store(&j->done, 1);
    return NULL;
}

/* Runs the client against the front while the loop serves; bounded by 15 s. */
static void run_client_with(struct fixture *f, struct job *j)
{
    pthread_t t;
    int64_t deadline = time_now_ms() + 15000;

    j->port = f->front_port;
    snprintf(j->ca_file, sizeof(j->ca_file), "%s/ca.pem", f->ca_dir);
    assert_int_equal(pthread_create(&t, NULL, client_main, j), 0);
    while (!atomic_load(&j->done) && time_now_ms() < deadline) {
        event_base_loop(f->c.base, EVLOOP_NONBLOCK);
        usleep(200);
    }
    /* let the last events be written */
    for (int i = 0; i < 20; i++) {
        event_base_loop(f->c.base, EVLOOP_NONBLOCK);
        usleep(200);
    }
    assert_true(atomic_load(&j->done));
    pthread_join(t, NULL);
}

/* The events file's events of kind, in order, as a new array. */
static json_t *events_of(struct fixture *f, const char *kind)
{
    struct buf b = BUF_INIT;
    struct err e = {0};
    json_t *out = json_array();
    char *line, *save = NULL;

    assert_int_equal(fs_read_file(f->events.path, 1 << 20, &b, &e), 0);
    for (line = strtok_r(b.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *ev = ut_json(line);
        if (strcmp(json_string_value(json_object_get(ev, "kind")), kind) == 0)
            json_array_append(out, ev);
        json_decref(ev);
    }
    buf_release(&b);
    return out;
}

#define GET(path)                                                                                  \
    "GET " path " HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: token s3cret\r\n\r\n"

static void test_credential_401_after_two(void **state)
{
    struct fixture f;
    struct job j;
    json_t *reqs, *faults, *ev;

    (void)state;
    fixture_init(&f, PLAN_401);
    memset(&j, 0, sizeof(j));
    j.sni = "api.github.com";
    j.reqs[0] = GET("/user");
    j.reqs[1] = GET("/repos/o/r");
    j.reqs[2] = GET("/user?x=1");
    j.nreq = 3;
    run_client_with(&f, &j);
    assert_true(j.handshake_ok);
    /* the first two pass through to the origin, over TLS verified against its CA */
    assert_non_null(strstr(j.resp[0], "HTTP/1.1 200 OK"));
    assert_non_null(strstr(j.resp[0], "X-Origin: yes"));
    assert_non_null(strstr(j.resp[0], "hello /user authed"));
    assert_non_null(strstr(j.resp[1], "hello /repos/o/r"));
    /* the third: 401, GitHub's shape, the canary */
    assert_non_null(strstr(j.resp[2], "HTTP/1.1 401 Unauthorized"));
    assert_non_null(strstr(j.resp[2], "WWW-Authenticate: Basic realm=\"GitHub\""));
    assert_non_null(strstr(j.resp[2], "{\"message\":\"Bad credentials"));
    assert_non_null(strstr(j.resp[2], "E-FAULTLINE-0000abcd"));
    assert_non_null(strstr(j.resp[2], "\"documentation_url\":"));
    assert_int_equal(f.origin_requests, 2);
    /* events: three egress_request (intercepted), one fault_injected */
    reqs = events_of(&f, "egress_request");
    faults = events_of(&f, "fault_injected");
    assert_int_equal(json_array_size(reqs), 3);
    for (size_t i = 0; i < 3; i++) {
        ev = json_array_get(reqs, i);
        assert_true(json_is_true(json_object_get(ev, "intercepted")));
        assert_string_equal(json_string_value(json_object_get(ev, "host")), "api.github.com");
        assert_string_equal(json_string_value(json_object_get(ev, "method")), "GET");
        assert_int_equal(json_integer_value(json_object_get(ev, "port")), f.origin_port);
    }
    assert_int_equal(json_integer_value(json_object_get(json_array_get(reqs, 0), "status")),
                     200);
    assert_null(json_object_get(json_array_get(reqs, 0), "faulted"));
    ev = json_array_get(reqs, 2);
    assert_int_equal(json_integer_value(json_object_get(ev, "status")), 401);
    assert_true(json_is_true(json_object_get(ev, "faulted")));
    assert_string_equal(json_string_value(json_object_get(ev, "path")), "/user");
    assert_int_equal(json_array_size(faults), 1);
    ev = json_array_get(faults, 0);
    assert_string_equal(json_string_value(json_object_get(ev, "fault")), "egress.credential_401");
    assert_string_equal(json_string_value(json_object_get(ev, "target")), "api.github.com");
    assert_string_equal(json_string_value(json_object_get(ev, "canary")), "E-FAULTLINE-0000abcd");
    assert_string_equal(json_string_value(json_object_get(ev, "component")), "controller-egress");
    assert_int_equal(json_integer_value(json_object_get(ev, "call_index")), 2);
    json_decref(reqs);
    json_decref(faults);
    /* the secret the client sent never reached the events */
    {
        struct buf b = BUF_INIT;
        struct err e = {0};
        assert_int_equal(fs_read_file(f.events.path, 1 << 20, &b, &e), 0);
        assert_null(strstr(b.data, "s3cret"));
        buf_release(&b);
    }
    fixture_release(&f);
}

/* The same with the ClientHello already in the client's input buffer. */
static void test_preread_client_hello(void **state)
{
    struct fixture f;
    struct job j;

    (void)state;
    fixture_init(&f, PLAN_401);
    f.preread = 1;
    memset(&j, 0, sizeof(j));
    j.sni = "api.github.com";
    j.reqs[0] = GET("/user");
    j.reqs[1] = GET("/repos/o/r");
    j.reqs[2] = GET("/user");
    j.nreq = 3;
    run_client_with(&f, &j);
    assert_true(j.handshake_ok);
    assert_non_null(strstr(j.resp[0], "hello /user authed"));
    assert_non_null(strstr(j.resp[1], "hello /repos/o/r"));
    assert_non_null(strstr(j.resp[2], "HTTP/1.1 401 Unauthorized"));
    assert_int_equal(f.origin_requests, 2);
    fixture_release(&f);
}

static void test_no_fault_forwards(void **state)
{
    struct fixture f;
    struct job j;
    json_t *reqs;

    (void)state;
    fixture_init(&f, PLAN_NONE);
    memset(&j, 0, sizeof(j));
    j.sni = "api.github.com";
    j.reqs[0] = GET("/a");
    j.reqs[1] = GET("/b");
    j.reqs[2] = GET("/c");
    j.nreq = 3;
    run_client_with(&f, &j);
    for (int i = 0; i < 3; i++)
        assert_non_null(strstr(j.resp[i], "HTTP/1.1 200 OK"));
    assert_non_null(strstr(j.resp[2], "hello /c"));
    assert_int_equal(f.origin_requests, 3);
    reqs = events_of(&f, "egress_request");
    assert_int_equal(json_array_size(reqs), 3);
    json_decref(reqs);
    reqs = events_of(&f, "fault_injected");
    assert_int_equal(json_array_size(reqs), 0);
    json_decref(reqs);
    fixture_release(&f);
}

static void test_host_mismatch_421(void **state)
{
    struct fixture f;
    struct job j;
    json_t *reqs;

    (void)state;
    fixture_init(&f, PLAN_401);
    memset(&j, 0, sizeof(j));
    j.sni = "api.github.com";
    j.reqs[0] = "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n";
    j.nreq = 1;
    run_client_with(&f, &j);
    assert_non_null(strstr(j.resp[0], "HTTP/1.1 421 "));
    assert_int_equal(f.origin_requests, 0);
    reqs = events_of(&f, "egress_request");
    assert_int_equal(json_array_size(reqs), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(reqs, 0), "status")), 421);
    assert_non_null(json_object_get(json_array_get(reqs, 0), "error"));
    json_decref(reqs);
    fixture_release(&f);
}

static void test_sni_mismatch_alert(void **state)
{
    struct fixture f;
    struct job j;
    json_t *reqs;
    const char *err;

    (void)state;
    fixture_init(&f, PLAN_401);
    memset(&j, 0, sizeof(j));
    j.sni = "evil.example";
    j.reqs[0] = GET("/");
    j.nreq = 1;
    run_client_with(&f, &j);
    assert_false(j.handshake_ok);
    reqs = events_of(&f, "egress_request");
    assert_int_equal(json_array_size(reqs), 1);
    err = json_string_value(json_object_get(json_array_get(reqs, 0), "error"));
    assert_non_null(err);
    assert_non_null(strstr(err, "SNI does not match"));
    json_decref(reqs);
    /* and no SNI at all */
    memset(&j, 0, sizeof(j));
    j.sni = NULL;
    j.reqs[0] = GET("/");
    j.nreq = 1;
    run_client_with(&f, &j);
    assert_false(j.handshake_ok);
    reqs = events_of(&f, "egress_request");
    assert_int_equal(json_array_size(reqs), 2);
    err = json_string_value(json_object_get(json_array_get(reqs, 1), "error"));
    assert_non_null(strstr(err, "no SNI"));
    json_decref(reqs);
    fixture_release(&f);
}

static void test_answer_401_shapes(void **state)
{
    struct buf h = BUF_INIT, b = BUF_INIT;
    json_t *j;

    (void)state;
    assert_int_equal(intercept_answer_401("api.github.com", "E-FAULTLINE-1", &h, &b), 0);
    j = ut_json(b.data);
    assert_non_null(strstr(json_string_value(json_object_get(j, "message")), "Bad credentials"));
    assert_non_null(strstr(json_string_value(json_object_get(j, "message")), "E-FAULTLINE-1"));
    assert_non_null(json_object_get(j, "documentation_url"));
    assert_non_null(strstr(h.data, "WWW-Authenticate: "));
    json_decref(j);
    buf_reset(&h);
    buf_reset(&b);
    assert_int_equal(intercept_answer_401("registry.example.org", "E-FAULTLINE-1", &h, &b), 0);
    assert_non_null(strstr(b.data, "401 Unauthorized"));
    assert_non_null(strstr(b.data, "E-FAULTLINE-1"));
    assert_non_null(strstr(h.data, "WWW-Authenticate: Bearer realm=\"registry.example.org\""));
    assert_non_null(strstr(h.data, "text/plain"));
    buf_release(&h);
    buf_release(&b);
}

static void test_wanted(void **state)
{
    struct fixture f;

    (void)state;
    fixture_init(&f, PLAN_401);
    assert_int_equal(intercept_wanted(&f.c, "api.github.com"), 1);
    assert_int_equal(intercept_wanted(&f.c, "API.GITHUB.COM"), 1);
    assert_int_equal(intercept_wanted(&f.c, "github.com"), 0);
    assert_int_equal(intercept_wanted(&f.c, NULL), 0);
    fixture_release(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credential_401_after_two),
        cmocka_unit_test(test_preread_client_hello),
        cmocka_unit_test(test_no_fault_forwards),
        cmocka_unit_test(test_host_mismatch_421),
        cmocka_unit_test(test_sni_mismatch_alert),
        cmocka_unit_test(test_answer_401_shapes),
        cmocka_unit_test(test_wanted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
