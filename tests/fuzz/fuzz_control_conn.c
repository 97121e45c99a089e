/*
 * fuzz_control_conn: the controller's HTTP server (control/server.h) and upstream client
 * (control/upstream.h) together, driven at the connection level on loopback inside one
 * process: a client socket -> hsrv -> a forwarding handler shaped like the proxy's (stream
 * the answer through, pause the upstream read while the client's output is full, cancel on
 * close) -> upstream -> a fake origin that misbehaves as the input says.
 *
 * Input: a sequence of records, each [op][len][len bytes of data] (len one byte):
 *   op % 8 == 0  client writes data raw (any bytes: the server's parser judges them)
 *   op % 8 == 1  client writes a well-formed POST /v1/messages with data as its body
 *   op % 8 == 2  the same with a chunked request body, data cut into pieces of data[0]
 *   op % 8 == 3  client writes a POST whose body is (data[0] + 1) * 64 KiB of 'x' (huge)
 *   op % 8 == 4  the next origin answers use behaviours data[0], data[1], ... (below)
 *   op % 8 == 5  run the loop a little (up to 8 non-blocking passes) before the next record
 *   op % 8 == 6  client shuts its write side
 *   op % 8 == 7  client closes its connection and opens a new one
 * Origin behaviours (b % 10): 0 a normal answer with Content-Length, 1 chunked in small
 * pieces, 2 close before any byte, 3 half a head then close, 4 half the body then close,
 * 5 a 1 MiB body, 6 answer 20 ms later, 7 a garbage head, 8 a 100 Continue then an answer,
 * 9 a close-delimited body. After the records the loop runs until the server has closed
 * the client (short idle timeouts) or 400 ms pass; then everything is freed.
 *
 * Invariants: no sanitizer report, no leak, no hang (every wait has a timeout); the client
 * never receives more response bytes than the origin sent plus the proxy's own framing and
 * error replies (bounded here by a generous multiple).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "control/server.h"
#include "control/upstream.h"
#include "util/buf.h"
#include "util/banned.h"

#define MAX_BEHAVIOURS 64
#define HUGE_UNIT (64 * 1024)
#define BIG_ANSWER (1 << 20)

struct world;

/* One request the handler forwards. */
struct fwd {
    struct world *w;
    struct fwd *prev, *next;
    struct hreq *r;
    struct ureq *q;
    int started, paused;
};

/* One connection of the fake origin. */
struct oconn {
    struct world *w;
    struct oconn *prev, *next;
    struct bufferevent *bev;
    struct event *later; /* behaviour 6 */
    int behaviour;
    int closing; /* close once the output is written */
};

struct world {
    struct event_base *base;
    struct hsrv *srv;
    struct upstream *up;
    struct evconnlistener *olis;
    struct oconn *oconns;
    struct fwd *fwds;
    unsigned char beh[MAX_BEHAVIOURS];
    size_t nbeh, nextbeh;
    struct bufferevent *client;
    int client_eof;
    size_t origin_sent, client_got;
    char saddr[80];
};

/* ---- the fake origin ---- */

static void oconn_free(struct oconn *o)
{
    struct world *w = o->w;

    if (o->prev)
        o->prev->next = o->next;
    else
        w->oconns = o->next;
    if (o->next)
        o->next->prev = o->prev;
    if (o->later)
        event_free(o->later);
    bufferevent_free(o->bev);
    free(o);
}

static void origin_add(struct oconn *o, const char *s, size_t n)
{
    bufferevent_write(o->bev, s, n);
    o->w->origin_sent += n;
}

static void origin_answer(struct oconn *o)
{
    static const char body[] = "{\"id\":\"x\",\"type\":\"message\",\"content\":[],\"usage\":{}}";
    char head[160];
    int n;

    switch (o->behaviour) {
    case 1:
        n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        origin_add(o, head, (size_t)n);
        for (size_t i = 0; i < sizeof(body) - 1; i += 7) {
            size_t k = sizeof(body) - 1 - i < 7 ? sizeof(body) - 1 - i : 7;
            n = snprintf(head, sizeof(head), "%zx\r\n", k);
            origin_add(o, head, (size_t)n);
            origin_add(o, body + i, k);
            origin_add(o, "\r\n", 2);
        }
        origin_add(o, "0\r\n\r\n", 5);
        return;
    case 2:
        o->closing = 1;
        return;
    case 3:
        origin_add(o, "HTTP/1.1 200 OK\r\nContent-Le", 27);
        o->closing = 1;
        return;
    case 4:
        n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
                     sizeof(body) - 1);
        origin_add(o, head, (size_t)n);
        origin_add(o, body, 10);
        o->closing = 1;
        return;
    case 5: {
        char *big = malloc(BIG_ANSWER);
        memset(big, 'y', BIG_ANSWER);
        n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n",
                     BIG_ANSWER);
        origin_add(o, head, (size_t)n);
        origin_add(o, big, BIG_ANSWER);
        free(big);
        return;
    }
    case 7:
        origin_add(o, "HTTP/9 nope\r\n\x01\r\n\r\n", 19);
        return;
    case 8:
        origin_add(o, "HTTP/1.1 100 Continue\r\n\r\n", 25);
        break;
    case 9:
        n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
        origin_add(o, head, (size_t)n);
        origin_add(o, body, sizeof(body) - 1);
        o->closing = 1;
        return;
    default:
        break;
    }
    n = snprintf(head, sizeof(head),
                 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                 sizeof(body) - 1);
    origin_add(o, head, (size_t)n);
    origin_add(o, body, sizeof(body) - 1);
}

static void origin_later_cb(evutil_socket_t fd, short what, void *arg)
{
    struct oconn *o = arg;

    o->behaviour = 0;
    origin_answer(o);
}

/* Reads whole requests (head + Content-Length body; a chunked body up to its last chunk is
 * taken as read when "0\r\n\r\n" arrives) and answers each. */
static void origin_read_cb(struct bufferevent *bev, void *arg)
{
    struct oconn *o = arg;
    struct world *w = o->w;
    struct evbuffer *in = bufferevent_get_input(bev);

    while (!o->closing) {
        struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
        size_t hlen, blen = 0;
        char *head;
        const char *cl;

        if (end.pos < 0)
            return;
        hlen = (size_t)end.pos + 4;
        head = malloc(hlen + 1);
        evbuffer_copyout(in, head, hlen);
        head[hlen] = '\0';
        cl = strstr(head, "Content-Length: ");
        if (cl)
            blen = strtoul(cl + 16, NULL, 10);
        free(head);
        if (evbuffer_get_length(in) < hlen + blen)
            return;
        evbuffer_drain(in, hlen + blen);
        o->behaviour = w->nbeh ? w->beh[w->nextbeh++ % w->nbeh] % 10 : 0;
        if (o->behaviour == 6) {
            struct timeval tv = {0, 20000};
            if (o->later == NULL)
                o->later = evtimer_new(w->base, origin_later_cb, o);
            evtimer_add(o->later, &tv);
            return;
        }
        origin_answer(o);
    }
    evbuffer_drain(in, evbuffer_get_length(in));
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        oconn_free(o);
}

static void origin_write_cb(struct bufferevent *bev, void *arg)
{
    struct oconn *o = arg;

    if (o->closing)
        oconn_free(o);
}

static void origin_event_cb(struct bufferevent *bev, short what, void *arg)
{
    oconn_free(arg);
}

static void origin_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                             int salen, void *arg)
{
    struct world *w = arg;
    struct oconn *o = calloc(1, sizeof(*o));

    o->w = w;
    o->bev = bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(o->bev, origin_read_cb, origin_write_cb, origin_event_cb, o);
    bufferevent_enable(o->bev, EV_READ | EV_WRITE);
    o->next = w->oconns;
    if (w->oconns)
        w->oconns->prev = o;
    w->oconns = o;
}

/* ---- the forwarding handler (the proxy's shape) ---- */

static void fwd_free(struct fwd *f)
{
    struct world *w = f->w;

    if (f->prev)
        f->prev->next = f->next;
    else
        w->fwds = f->next;
    if (f->next)
        f->next->prev = f->prev;
    free(f);
}

static void up_head(struct ureq *q, const struct http_head *h, void *arg)
{
    struct fwd *f = arg;

    if (f->r) {
        hreq_start(f->r, h->status, "Content-Type: application/json\r\n", 32,
                   h->framing == HTTP_BODY_LENGTH ? (int64_t)h->content_length : -1);
        f->started = 1;
    }
}

static void up_body(struct ureq *q, struct evbuffer *data, void *arg)
{
    struct fwd *f = arg;

    if (f->r == NULL) {
        evbuffer_drain(data, evbuffer_get_length(data));
        return;
    }
    hreq_write_buffer(f->r, data);
    if (hreq_pending(f->r) > 64 * 1024 && !f->paused) {
        f->paused = 1;
        ureq_pause(q, 1);
        hreq_want_drain(f->r);
    }
}

static void up_done(struct ureq *q, void *arg)
{
    struct fwd *f = arg;

    if (f->r)
        hreq_end(f->r);
    fwd_free(f);
}

static void up_error(struct ureq *q, int code, int got_head, const char *msg, void *arg)
{
    struct fwd *f = arg;

    if (f->r && !f->started)
        hreq_reply(f->r, code == UPSTREAM_ETIMEOUT ? 504 : 502, NULL, msg, strlen(msg));
    else if (f->r)
        hreq_abort(f->r);
    fwd_free(f);
}

static const struct ureq_callbacks up_cbs = {up_head, up_body, up_done, up_error};

static void client_closed(struct hreq *r, void *arg)
{
    struct fwd *f = arg;

    if (f->q)
        ureq_cancel(f->q);
    fwd_free(f);
}

static void client_drained(struct hreq *r, void *arg)
{
    struct fwd *f = arg;

    if (f->paused && f->q) {
        f->paused = 0;
        ureq_pause(f->q, 0);
    }
}

static void handler(struct hreq *r, void *arg)
{
    struct world *w = arg;
    struct fwd *f = calloc(1, sizeof(*f));
    size_t blen;
    const char *body = hreq_body(r, &blen);

    f->w = w;
    f->r = r;
    f->next = w->fwds;
    if (w->fwds)
        w->fwds->prev = f;
    w->fwds = f;
    hreq_set_callbacks(r, client_closed, client_drained, f);
    f->q = upstream_send(w->up, hreq_method(r), hreq_target(r), NULL, 0, body, blen, &up_cbs, f);
}

/* ---- the client ---- */

static void client_read_cb(struct bufferevent *bev, void *arg)
{
    struct world *w = arg;
    struct evbuffer *in = bufferevent_get_input(bev);

    w->client_got += evbuffer_get_length(in);
    evbuffer_drain(in, evbuffer_get_length(in));
}

static void client_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct world *w = arg;

    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        w->client_eof = 1;
        event_base_loopbreak(w->base);
    }
}

static void client_open(struct world *w)
{
    struct sockaddr_in sin;
    char host[64];
    const char *colon = strrchr(w->saddr, ':');

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    snprintf(host, sizeof(host), "%.*s", (int)(colon - w->saddr), w->saddr);
    inet_pton(AF_INET, host, &sin.sin_addr);
    sin.sin_port = htons((uint16_t)strtoul(colon + 1, NULL, 10));
    w->client = bufferevent_socket_new(w->base, -1, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(w->client, client_read_cb, NULL, client_event_cb, w);
    bufferevent_enable(w->client, EV_READ | EV_WRITE);
    bufferevent_socket_connect(w->client, (struct sockaddr *)&sin, sizeof(sin));
    w->client_eof = 0;
}

static void client_post(struct world *w, const uint8_t *body, size_t n, int chunked, size_t piece)
{
    struct evbuffer *out = bufferevent_get_output(w->client);

    if (!chunked) {
        evbuffer_add_printf(
            out, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", n);
        evbuffer_add(out, body, n);
        return;
    }
    evbuffer_add_printf(
        out, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    if (piece == 0)
        piece = 1;
    for (size_t i = 0; i < n; i += piece) {
        size_t k = n - i < piece ? n - i : piece;
        evbuffer_add_printf(out, "%zx\r\n", k);
        evbuffer_add(out, body + i, k);
        evbuffer_add(out, "\r\n", 2);
    }
    evbuffer_add(out, "0\r\n\r\n", 5);
}

/* ---- the run ---- */

static int world_init(struct world *w)
{
    struct hsrv_config sc = {0};
    struct upstream_config uc = {0};
    struct sockaddr_in sin;
    socklen_t slen = sizeof(sin);
    struct err e = {0};
    char url[96];

    memset(w, 0, sizeof(*w));
    w->base = event_base_new();
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    w->olis = evconnlistener_new_bind(w->base, origin_accept_cb, w,
                                      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 64,
                                      (struct sockaddr *)&sin, sizeof(sin));
    if (w->olis == NULL)
        return -1;
    getsockname(evconnlistener_get_fd(w->olis), (struct sockaddr *)&sin, &slen);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ntohs(sin.sin_port));
    uc.connect_timeout_ms = 200;
    uc.first_byte_timeout_ms = 150;
    uc.idle_timeout_ms = 150;
    uc.pool_idle_ms = 300;
    w->up = upstream_new(w->base, NULL, url, &uc, &e);
    sc.max_body = (size_t)8 << 20;
    sc.max_head = 4096;
    sc.request_timeout_ms = 100;
    sc.idle_timeout_ms = 60;
    sc.write_timeout_ms = 200;
    w->srv = hsrv_new(w->base, &sc, handler, NULL, w);
    if (w->up == NULL || w->srv == NULL || hsrv_listen(w->srv, "127.0.0.1:0", &e) != 0 ||
        hsrv_address(w->srv, w->saddr, sizeof(w->saddr)) != 0)
        return -1;
    return 0;
}

static void world_release(struct world *w)
{
    if (w->client)
        bufferevent_free(w->client);
    hsrv_free(w->srv); /* in-flight requests: on_close cancels their upstream requests */
    while (w->fwds) {
        if (w->fwds->q)
            ureq_cancel(w->fwds->q);
        fwd_free(w->fwds);
    }
    upstream_free(w->up);
    while (w->oconns)
        oconn_free(w->oconns);
    if (w->olis)
        evconnlistener_free(w->olis);
    event_base_free(w->base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct world w;
    size_t i = 0;
    struct timeval cap = {0, 400000};

    signal(SIGPIPE, SIG_IGN);
    if (world_init(&w) != 0) {
        world_release(&w);
        return 0;
    }
    client_open(&w);
    while (i + 2 <= size) {
        unsigned op = data[i] % 8;
        size_t len = data[i + 1];
        const uint8_t *d = data + i + 2;
        if (len > size - i - 2)
            len = size - i - 2;
        i += 2 + len;
        switch (op) {
        case 0:
            bufferevent_write(w.client, d, len);
            break;
        case 1:
            client_post(&w, d, len, 0, 0);
            break;
        case 2:
            client_post(&w, len ? d + 1 : d, len ? len - 1 : 0, 1, len ? d[0] : 1);
            break;
        case 3: {
            size_t n = (size_t)((len ? d[0] % 32 : 0) + 1) * HUGE_UNIT;
            uint8_t *big = malloc(n);
            memset(big, 'x', n);
            client_post(&w, big, n, 0, 0);
            free(big);
            break;
        }
        case 4:
            for (size_t k = 0; k < len && w.nbeh < MAX_BEHAVIOURS; k++)
                w.beh[w.nbeh++] = d[k];
            break;
        case 5:
            for (size_t k = 0; k < (len ? d[0] % 8u + 1 : 1); k++)
                event_base_loop(w.base, EVLOOP_NONBLOCK);
            break;
        case 6:
            event_base_loop(w.base, EVLOOP_NONBLOCK);
            shutdown(bufferevent_getfd(w.client), SHUT_WR);
            break;
        default:
            event_base_loop(w.base, EVLOOP_NONBLOCK);
            bufferevent_free(w.client);
            client_open(&w);
            break;
        }
    }
    event_base_loopexit(w.base, &cap);
    while (!w.client_eof && event_base_dispatch(w.base) == 0 && !event_base_got_exit(w.base))
        ;
    /* Whatever the client got came from the origin, or is framing and the handler's 502s. */
    if (w.client_got > 2 * w.origin_sent + 64 * 1024 + 4096 * size)
        abort();
    world_release(&w);
    return 0;
}
