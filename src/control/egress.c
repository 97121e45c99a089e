/*
 * egress: the forward proxy (egress.h has the forms, the states and the limits). One struct
 * econn per client connection; the upstream side is a second bufferevent once resolved. Both
 * are freed outside their own callbacks (conn_end moves them to a list a
 * deferred event frees).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "codec/http.h"
#include "control/ctl.h"
#include "control/egress.h"
#include "control/egress_policy.h"
#include "control/egress_tunnel.h"
#include "control/intercept.h"
#include "events/ev.h"
#include "experiment/catalog.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/num.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define EGRESS_LINGER_MAX (1024 * 1024) /* bytes dropped after an answer before cutting */

enum econn_state { EC_HEAD, EC_RESOLVE, EC_CONNECT_UP, EC_RELAY, EC_CLOSING, EC_DEAD };

struct egress;

struct econn {
    struct egress *eg;
    struct econn *prev, *next;
    struct bufferevent *client, *up;
    struct egress_tunnel *tun; /* a blind tunnel's splice relay (egress_tunnel.h), or NULL */
    enum econn_state state;
    struct http_head head;
    size_t scanned;
    struct egress_target t;
    char method[16];
    char path[EGRESS_PATH_MAX + 1];
    int tunnel;   /* CONNECT */
    int status;   /* returned to the client: ours, or the upstream's status line */
    int faulted;  /* an injected fault answered */
    int resolved; /* the address came from a --resolve entry */
    const char *error;
    const char *policy; /* the rule that refused it (EGRESS_POLICY_RULE), or NULL */
    uint64_t bytes_in, bytes_out;
    int64_t t0_ms;
    struct evdns_getaddrinfo_request *dnsreq;
    struct buf fwd; /* plain HTTP: the head as forwarded upstream */
    int up_eof, client_eof;
    size_t lingered; /* bytes dropped while CLOSING */
    int handed_off;  /* the client connection went to intercept_start */
    int transparent; /* 0, or EGRESS_ADOPT_HTTP / _TLS / _HOST_PORT (egress_adopt*) */
};

struct egress {
    struct ctl *ctl;
    struct evconnlistener *lev;
    struct econn *conns; /* live */
    size_t nconns;
    struct econn *dead; /* ended, freed by reap_cb (never inside their own callbacks) */
    struct event *reap;
    struct egress_resolve resolve[EGRESS_RESOLVE_MAX];
    size_t nresolve;
    struct egress_policy policy; /* the experiment's egress.allow (egress_policy.h) */
    char addr[80];
};

/* ---- parsing (pure: egress.h) ---- */

static int host_copy(struct egress_target *t, const char *s, size_t n, struct err *e)
{
    if (n == 0 || n > EGRESS_HOST_MAX)
        return err_set(e, ERR_PARSE, "malformed host in the request target");
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!(isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == ':'))
            return err_set(e, ERR_PARSE, "malformed host in the request target");
        t->host[i] = (char)tolower(ch);
    }
    t->host[n] = '\0';
    if (t->host[n - 1] == '.' && n > 1)
        t->host[n - 1] = '\0'; /* the root's dot: "example.com." is "example.com" */
    return 0;
}

/* host[:port] or [v6][:port] at s (n bytes); *port left alone when none is given. */
static int split_hostport(const char *s, size_t n, struct egress_target *t, int need_port,
                          struct err *e)
{
    const char *hend, *colon = NULL;
    long long port;
    char pbuf[8];

    if (n > 0 && s[0] == '[') {
        const char *rb = memchr(s, ']', n);
        if (rb == NULL)
            return err_set(e, ERR_PARSE, "malformed host in the request target");
        if (host_copy(t, s + 1, (size_t)(rb - s - 1), e) != 0)
            return ERR_PARSE;
        hend = rb + 1;
        if (hend < s + n) {
            if (*hend != ':')
                return err_set(e, ERR_PARSE, "malformed host in the request target");
            colon = hend;
        }
    } else {
        colon = memchr(s, ':', n);
        if (host_copy(t, s, colon ? (size_t)(colon - s) : n, e) != 0)
            return ERR_PARSE;
        if (strchr(t->host, ':'))
            return err_set(e, ERR_PARSE, "malformed host in the request target");
    }
    if (colon == NULL) {
        if (need_port)
            return err_set(e, ERR_PARSE, "a port is required");
        return 0;
    }
    n -= (size_t)(colon + 1 - s);
    if (n == 0 || n >= sizeof(pbuf))
        return err_set(e, ERR_PARSE, "malformed port in the request target");
    memcpy(pbuf, colon + 1, n);
    pbuf[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)pbuf[i]))
            return err_set(e, ERR_PARSE, "malformed port in the request target");
    if (num_parse_ll(pbuf, 1, 65535, &port) != 0)
        return err_set(e, ERR_PARSE, "malformed port in the request target");
    t->port = (int)port;
    return 0;
}

int egress_parse_authority(const char *s, struct egress_target *t, struct err *e)
{
    struct err why = {0};

    memset(t, 0, sizeof(*t));
    if (split_hostport(s, strlen(s), t, 1, &why) != 0)
        return err_set(e, ERR_PARSE, "malformed CONNECT target (expected host:port): %s", why.msg);
    return 0;
}

int egress_parse_absolute(const char *s, struct egress_target *t, struct err *e)
{
    const char *auth, *end;

    memset(t, 0, sizeof(*t));
    if (strncasecmp(s, "http://", 7) != 0) {
        if (strncasecmp(s, "https://", 8) == 0)
            return err_set(e, ERR_UNSUPPORTED, "https in absolute form: use CONNECT");
        return err_set(e, ERR_PARSE, "not a proxy request (expected http://host/path)");
    }
    auth = s + 7;
    end = auth + strcspn(auth, "/?#");
    if (memchr(auth, '@', (size_t)(end - auth)) != NULL)
        return err_set(e, ERR_PARSE, "user info in the request target");
    t->port = 80;
    if (split_hostport(auth, (size_t)(end - auth), t, 0, e) != 0)
        return ERR_PARSE;
    t->path = *end == '/' ? end : "/";
    if (*end == '?')
        t->path = end; /* "http://h?q": origin form needs a path; kept as sent */
    return 0;
}

int egress_resolve_parse(const char *spec, struct egress_resolve *r, struct err *e)
{
    const char *c1 = strchr(spec, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    char pbuf[8], abuf[64];
    struct egress_target t;
    struct err why = {0};
    long long port;
    size_t n;

    memset(r, 0, sizeof(*r));
    if (c1 == NULL || c2 == NULL)
        return err_set(e, ERR_INVALID, "--resolve '%.64s': expected HOST:PORT:ADDR", spec);
    if (host_copy(&t, spec, (size_t)(c1 - spec), &why) != 0 || strchr(t.host, ':'))
        return err_set(e, ERR_INVALID, "--resolve '%.64s': bad host", spec);
    memcpy(r->host, t.host, sizeof(r->host));
    n = (size_t)(c2 - c1 - 1);
    if (n == 1 && c1[1] == '*') {
        r->port = 0;
    } else {
        if (n == 0 || n >= sizeof(pbuf))
            return err_set(e, ERR_INVALID, "--resolve '%.64s': bad port", spec);
        memcpy(pbuf, c1 + 1, n);
        pbuf[n] = '\0';
        if (num_parse_ll(pbuf, 1, 65535, &port) != 0)
            return err_set(e, ERR_INVALID, "--resolve '%.64s': bad port", spec);
        r->port = (int)port;
    }
    n = strlen(c2 + 1);
    if (n == 0 || n >= sizeof(abuf))
        return err_set(e, ERR_INVALID, "--resolve '%.64s': bad address", spec);
    memcpy(abuf, c2 + 1, n + 1);
    if (abuf[0] == '[') {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&r->addr;
        if (abuf[n - 1] != ']')
            return err_set(e, ERR_INVALID, "--resolve '%.64s': bad address", spec);
        abuf[n - 1] = '\0';
        if (inet_pton(AF_INET6, abuf + 1, &s6->sin6_addr) != 1)
            return err_set(e, ERR_INVALID, "--resolve '%.64s': bad address", spec);
        s6->sin6_family = AF_INET6;
        r->addrlen = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&r->addr;
        if (inet_pton(AF_INET, abuf, &s4->sin_addr) != 1)
            return err_set(e, ERR_INVALID, "--resolve '%.64s': bad address", spec);
        s4->sin_family = AF_INET;
        r->addrlen = sizeof(*s4);
    }
    return 0;
}

static int v4_internal(uint32_t a)
{
    return (a >> 24) == 0 || (a >> 24) == 10 || (a >> 24) == 127 || (a >> 16) == 0xa9fe ||
           (a >> 20) == 0xac1 || (a >> 16) == 0xc0a8 || (a >> 22) == (100u << 2 | 1) ||
           (a >> 28) >= 0xe;
}

int egress_addr_internal(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return v4_internal(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa->sa_family == AF_INET6) {
        const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        static const uint8_t zero[15] = {0};
        if (memcmp(b, mapped, 12) == 0)
            return v4_internal((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
                               (uint32_t)b[14] << 8 | b[15]);
        if (memcmp(b, zero, 15) == 0 && (b[15] == 0 || b[15] == 1))
            return 1; /* :: and ::1 */
        return (b[0] & 0xfe) == 0xfc || (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) || b[0] == 0xff;
    }
    return 1; /* not an internet address: never dialled */
}

/* ---- the connection's end ---- */

static void emit_request(struct econn *c)
{
    json_t *j = ev_new(EVKIND_EGRESS_REQUEST);

    ev_set_str(j, "method", c->method[0] ? c->method : "?");
    ev_set_str(j, "host", c->t.host[0] ? c->t.host : "?");
    ev_set_int(j, "port", c->t.port);
    if (c->path[0])
        ev_set_str(j, "path", c->path);
    ev_set_bool(j, "intercepted", 0);
    if (c->transparent)
        ev_set_str(j, "mode",
                   c->transparent == EGRESS_ADOPT_HOST_PORT ? "host_port" : "transparent");
    ev_set_int(j, "status", c->status);
    ev_set_int(j, "bytes_in", (long long)c->bytes_in);
    ev_set_int(j, "bytes_out", (long long)c->bytes_out);
    ev_set_int(j, "duration_ms", (long long)((time_mono_ns() / 1000000) - c->t0_ms));
    if (c->faulted)
        ev_set_bool(j, "faulted", 1);
    if (c->error)
        ev_set_str(j, "error", c->error);
    if (c->policy)
        ev_set_str(j, "policy", c->policy);
    ctl_emit(c->eg->ctl, j);
    json_decref(j);
}

static void conn_free(struct econn *c)
{
    egress_tunnel_free(c->tun); /* before the sockets its events watch are closed */
    if (c->client)
        bufferevent_free(c->client);
    if (c->up)
        bufferevent_free(c->up);
    http_head_release(&c->head);
    buf_release(&c->fwd);
    free(c);
}

static void reap_cb(evutil_socket_t fd, short what, void *arg)
{
    struct egress *eg = arg;

    (void)fd;
    (void)what;
    while (eg->dead) {
        struct econn *c = eg->dead;
        eg->dead = c->next;
        conn_free(c);
    }
}

/* Records the connection and frees it outside the current callback. */
static void conn_end(struct econn *c)
{
    struct egress *eg = c->eg;

    if (c->state == EC_DEAD)
        return;
    c->state = EC_DEAD;
    if (c->tun) {
        uint64_t b[2];
        egress_tunnel_stop(c->tun);
        egress_tunnel_bytes(c->tun, b);
        c->bytes_out += b[0]; /* client -> upstream */
        c->bytes_in += b[1];
    }
    if (c->dnsreq) {
        evdns_getaddrinfo_cancel(c->dnsreq); /* calls on_resolved with EVUTIL_EAI_CANCEL */
        c->dnsreq = NULL;
    }
    if ((c->t.host[0] || c->method[0]) && !c->handed_off)
        emit_request(c); /* a handed-off connection's requests are intercept's to record */
    if (c->prev)
        c->prev->next = c->next;
    else
        eg->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    eg->nconns--;
    if (c->client)
        bufferevent_disable(c->client, EV_READ | EV_WRITE);
    if (c->up)
        bufferevent_disable(c->up, EV_READ | EV_WRITE);
    c->next = eg->dead;
    c->prev = NULL;
    eg->dead = c;
    if (eg->reap)
        event_active(eg->reap, EV_TIMEOUT, 1);
}

/* CLOSING, lingering: the answer is written and the write side shut; what the client still
 * sends (the rest of a head too large) is read and dropped until it closes or a second passes,
 * so the kernel does not reset the connection under the answer it has not read yet. */
static void linger_read(struct bufferevent *bev, void *arg)
{
    struct econn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);

    c->lingered += evbuffer_get_length(in);
    evbuffer_drain(in, evbuffer_get_length(in));
    if (c->lingered > EGRESS_LINGER_MAX)
        conn_end(c);
}

static void linger_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    conn_end(arg);
}

static void client_drained(struct bufferevent *bev, void *arg)
{
    struct econn *c = arg;
    struct timeval tv = {1, 0};

    if (c->client_eof || shutdown(bufferevent_getfd(bev), SHUT_WR) != 0) {
        conn_end(c);
        return;
    }
    bufferevent_setcb(bev, linger_read, NULL, linger_event, c);
    bufferevent_set_timeouts(bev, &tv, NULL);
    bufferevent_setwatermark(bev, EV_READ, 0, 0);
    bufferevent_enable(bev, EV_READ);
}

static void conn_close_after_write(struct econn *c)
{
    c->state = EC_CLOSING;
    if (c->up)
        bufferevent_disable(c->up, EV_READ);
    bufferevent_disable(c->client, EV_READ);
    bufferevent_setwatermark(c->client, EV_WRITE, 0, 0);
    bufferevent_setcb(c->client, NULL, client_drained, linger_event, c);
    bufferevent_enable(c->client, EV_WRITE);
    if (evbuffer_get_length(bufferevent_get_output(c->client)) == 0)
        client_drained(c->client, c);
}

/* An answer of the proxy's own: status, reason, extra header lines (or NULL), a text body. */
static void conn_answer(struct econn *c, int status, const char *reason, const char *hdrs,
                        const char *body)
{
    struct evbuffer *out = bufferevent_get_output(c->client);

    c->status = status;
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Content-Length: %zu\r\nConnection: close\r\n%s\r\n%s",
                        status, reason, strlen(body), hdrs ? hdrs : "", body);
    conn_close_after_write(c);
}

static void conn_fail(struct econn *c, int status, const char *error)
{
    char body[320];

    c->error = error;
    if (c->transparent == EGRESS_ADOPT_HOST_PORT) {
        /* not HTTP: no answer; the client's connection is reset, as a refused port would be */
        struct linger lg = {1, 0};
        c->status = status;
        setsockopt(bufferevent_getfd(c->client), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        conn_end(c);
        return;
    }
    snprintf(body, sizeof(body), "faultline egress: %s\n", error);
    conn_answer(c, status, http_reason(status), NULL, body);
}

/* ---- relay ---- */

static void relay_read(struct bufferevent *bev, void *arg);
static void relay_event(struct bufferevent *bev, short what, void *arg);

/* The sender's reading resumes once the receiver drained below half the high mark. */
static void relay_drained(struct bufferevent *bev, void *arg)
{
    struct econn *c = arg;
    struct bufferevent *src = bev == c->client ? c->up : c->client;

    bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
    bufferevent_setcb(bev, relay_read, NULL, relay_event, c);
    if (!(src == c->client ? c->client_eof : c->up_eof))
        bufferevent_enable(src, EV_READ);
}

/* First bytes of a plain response: its status for the event. */
static void peek_status(struct econn *c, struct evbuffer *in)
{
    unsigned char *p;
    size_t n = evbuffer_get_length(in);

    if (c->tunnel || c->status != 0 || n < 12)
        return;
    p = evbuffer_pullup(in, 12);
    if (p && memcmp(p, "HTTP/1.", 7) == 0 && p[8] == ' ' && isdigit(p[9]) && isdigit(p[10]) &&
        isdigit(p[11]))
        c->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
}

static void relay_read(struct bufferevent *bev, void *arg)
{
    struct econn *c = arg;
    struct bufferevent *dst = bev == c->client ? c->up : c->client;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n = evbuffer_get_length(in);

    if (bev == c->up) {
        peek_status(c, in);
        c->bytes_in += n;
    } else {
        c->bytes_out += n;
    }
    evbuffer_add_buffer(bufferevent_get_output(dst), in);
    if (evbuffer_get_length(bufferevent_get_output(dst)) >= EGRESS_RELAY_HIGH) {
        bufferevent_disable(bev, EV_READ);
        bufferevent_setwatermark(dst, EV_WRITE, EGRESS_RELAY_HIGH / 2, 0);
        bufferevent_setcb(dst, relay_read, relay_drained, relay_event, c);
    }
}

/* One side ended: its peer gets what is buffered, then the connection ends. */
static void relay_event(struct bufferevent *bev, short what, void *arg)
{
    struct econn *c = arg;
    struct bufferevent *peer = bev == c->client ? c->up : c->client;

    if (what & BEV_EVENT_TIMEOUT)
        c->error = "idle timeout";
    else if ((what & BEV_EVENT_ERROR) && c->error == NULL)
        c->error = bev == c->up ? "upstream connection error" : NULL;
    relay_read(bev, c); /* what it had left */
    if (bev == c->up) {
        c->up_eof = 1;
        if (!c->tunnel && c->status == 0 && c->bytes_in == 0) {
            conn_fail(c, 502, "the upstream closed without a response");
            return;
        }
    } else {
        c->client_eof = 1;
    }
    if (peer == c->client) {
        conn_close_after_write(c);
        return;
    }
    /* the client left: nothing more to send it */
    conn_end(c);
}

/* The relay through the bufferevents: plain HTTP (its status read on the way), and a tunnel
 * for which no splice relay could be made. */
static void copy_relay(struct econn *c)
{
    int idle = c->eg->ctl->cfg.idle_timeout_ms;
    struct timeval tv = {idle / 1000, (idle % 1000) * 1000};

    /* libevent reads and writes 16 KiB at a time by default: a tunnel moves bulk data */
    bufferevent_set_max_single_read(c->client, EGRESS_RELAY_HIGH / 4);
    bufferevent_set_max_single_read(c->up, EGRESS_RELAY_HIGH / 4);
    bufferevent_set_max_single_write(c->client, EGRESS_RELAY_HIGH / 4);
    bufferevent_set_max_single_write(c->up, EGRESS_RELAY_HIGH / 4);
    bufferevent_setcb(c->client, relay_read, NULL, relay_event, c);
    bufferevent_setcb(c->up, relay_read, NULL, relay_event, c);
    bufferevent_set_timeouts(c->client, &tv, NULL);
    bufferevent_set_timeouts(c->up, &tv, NULL);
    bufferevent_enable(c->client, EV_READ | EV_WRITE);
    bufferevent_enable(c->up, EV_READ | EV_WRITE);
    if (evbuffer_get_length(bufferevent_get_input(c->client)) > 0)
        relay_read(c->client, c); /* bytes that came with the head */
}

/* The splice relay ended (egress_tunnel.h): both sides closed, idle, or a socket failed. */
static void tunnel_done(struct egress_tunnel *t, const struct egress_tunnel_end *end, void *arg)
{
    struct econn *c = arg;

    (void)t;
    if (end->idle)
        c->error = "idle timeout";
    else if (end->err_side == 1 && c->error == NULL)
        c->error = "upstream connection error";
    conn_end(c); /* the tunnel is freed with the connection, outside this callback */
}

/* A blind tunnel whose bufferevents hold nothing more: its sockets go to the splice relay,
 * the bufferevents stay disabled until the connection is freed (they close the sockets). */
static void go_blind(struct econn *c)
{
    struct err e = {0};
    int a = bufferevent_getfd(c->client), b = bufferevent_getfd(c->up);

    bufferevent_disable(c->client, EV_READ | EV_WRITE);
    bufferevent_disable(c->up, EV_READ | EV_WRITE);
    bufferevent_setcb(c->client, NULL, NULL, NULL, NULL);
    bufferevent_setcb(c->up, NULL, NULL, NULL, NULL);
    if (a >= 0 && b >= 0)
        c->tun = egress_tunnel_new(c->eg->ctl->base, a, b, c->eg->ctl->cfg.idle_timeout_ms,
                                   tunnel_done, c, &e);
    if (c->tun == NULL) {
        log_warn("egress", "tunnel to '%s' relayed through user space: %s", c->t.host,
                 e.msg[0] ? e.msg : "no socket");
        copy_relay(c);
    }
}

static void blind_flushed(struct bufferevent *bev, void *arg)
{
    struct econn *c = arg;

    (void)bev;
    if (evbuffer_get_length(bufferevent_get_output(c->client)) == 0 &&
        evbuffer_get_length(bufferevent_get_output(c->up)) == 0)
        go_blind(c);
}

static void blind_event(struct bufferevent *bev, short what, void *arg)
{
    struct econn *c = arg;

    if (what & BEV_EVENT_TIMEOUT)
        c->error = "idle timeout";
    else if (bev == c->up)
        c->error = "upstream connection error";
    conn_end(c);
}

/* RELAY. A tunnel (CONNECT, transparent TLS) writes out what the bufferevents hold (the 200,
 * the bytes that came with the head), then goes blind (go_blind). Plain HTTP is copied. */
static void start_relay(struct econn *c)
{
    int idle = c->eg->ctl->cfg.idle_timeout_ms;
    struct timeval tv = {idle / 1000, (idle % 1000) * 1000};
    struct evbuffer *in = bufferevent_get_input(c->client);

    c->state = EC_RELAY;
    if (!c->tunnel) {
        copy_relay(c);
        return;
    }
    c->bytes_out += evbuffer_get_length(in);
    evbuffer_add_buffer(bufferevent_get_output(c->up), in);
    bufferevent_disable(c->client, EV_READ);
    bufferevent_disable(c->up, EV_READ);
    bufferevent_setwatermark(c->client, EV_WRITE, 0, 0);
    bufferevent_setwatermark(c->up, EV_WRITE, 0, 0);
    bufferevent_setcb(c->client, NULL, blind_flushed, blind_event, c);
    bufferevent_setcb(c->up, NULL, blind_flushed, blind_event, c);
    bufferevent_set_timeouts(c->client, NULL, &tv);
    bufferevent_set_timeouts(c->up, NULL, &tv);
    bufferevent_enable(c->client, EV_WRITE);
    bufferevent_enable(c->up, EV_WRITE);
    blind_flushed(NULL, c);
}

/* ---- upstream ---- */

static void on_up_event(struct bufferevent *bev, short what, void *arg)
{
    struct econn *c = arg;

    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        if (c->tunnel && c->transparent) {
            c->status = 200; /* nothing to say: the ClientHello waits in the input */
        } else if (c->tunnel) {
            c->status = 200;
            evbuffer_add_printf(bufferevent_get_output(c->client),
                                "HTTP/1.1 200 Connection established\r\n\r\n");
        } else {
            evbuffer_add(bufferevent_get_output(c->up), c->fwd.data, c->fwd.len);
        }
        start_relay(c);
        return;
    }
    if (what & BEV_EVENT_TIMEOUT)
        conn_fail(c, 504, "connect timeout");
    else
        conn_fail(c, 502, "connect refused");
}

static void connect_up(struct econn *c, const struct sockaddr *sa, socklen_t len)
{
    int ms = c->eg->ctl->cfg.connect_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    struct sockaddr_storage ss;

    if (!c->resolved && egress_addr_internal(sa)) {
        conn_fail(c, 403,
                  "destination is a loopback or private address (name it with --resolve to "
                  "allow it)");
        return;
    }
    memcpy(&ss, sa, len);
    if (ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)c->t.port);
    else
        ((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)c->t.port);
    c->state = EC_CONNECT_UP;
    c->up = bufferevent_socket_new(c->eg->ctl->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (c->up == NULL) {
        conn_fail(c, 502, "cannot create a socket");
        return;
    }
    bufferevent_setcb(c->up, NULL, NULL, on_up_event, c);
    bufferevent_set_timeouts(c->up, NULL, &tv); /* libevent times the connect as a write */
    bufferevent_disable(c->client, EV_READ);    /* the rest waits for the relay */
    if (bufferevent_socket_connect(c->up, (struct sockaddr *)&ss, (int)len) != 0)
        conn_fail(c, 502, "connect refused");
}

static void on_resolved(int result, struct evutil_addrinfo *res, void *arg)
{
    struct econn *c = arg;

    if (result == EVUTIL_EAI_CANCEL)
        return; /* conn_end cancelled it: c is being freed */
    c->dnsreq = NULL;
    if (result != 0 || res == NULL) {
        conn_fail(c, 502, "dns failure");
    } else {
        connect_up(c, res->ai_addr, (socklen_t)res->ai_addrlen);
    }
    if (res)
        evutil_freeaddrinfo(res);
}

static void resolve(struct econn *c)
{
    struct egress *eg = c->eg;
    struct evutil_addrinfo hints;
    struct sockaddr_in s4;
    struct sockaddr_in6 s6;
    struct evdns_getaddrinfo_request *req;

    for (size_t i = 0; i < eg->nresolve; i++) {
        const struct egress_resolve *r = &eg->resolve[i];
        if (strcmp(r->host, c->t.host) == 0 && (r->port == 0 || r->port == c->t.port)) {
            c->resolved = 1;
            connect_up(c, (const struct sockaddr *)&r->addr, r->addrlen);
            return;
        }
    }
    memset(&s4, 0, sizeof(s4));
    memset(&s6, 0, sizeof(s6));
    if (inet_pton(AF_INET, c->t.host, &s4.sin_addr) == 1) {
        s4.sin_family = AF_INET;
        connect_up(c, (struct sockaddr *)&s4, sizeof(s4));
        return;
    }
    if (inet_pton(AF_INET6, c->t.host, &s6.sin6_addr) == 1) {
        s6.sin6_family = AF_INET6;
        connect_up(c, (struct sockaddr *)&s6, sizeof(s6));
        return;
    }
    if (eg->ctl->dns == NULL) {
        conn_fail(c, 502, "dns failure");
        return;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    c->state = EC_RESOLVE;
    bufferevent_disable(c->client, EV_READ);
    req = evdns_getaddrinfo(eg->ctl->dns, c->t.host, NULL, &hints, on_resolved, c);
    if (req != NULL && c->state == EC_RESOLVE)
        c->dnsreq = req; /* NULL: answered already (on_resolved ran) */
}

/* ---- the request ---- */

static void head_read(struct bufferevent *bev, void *arg);
static void head_event(struct bufferevent *bev, short what, void *arg);

static void emit_fault(struct econn *c, const struct plan_decision *d)
{
    json_t *f = ev_new(EVKIND_FAULT_INJECTED);
    json_t *detail = json_pack("{s:s,s:i}", "method", c->method, "port", c->t.port);

    ev_set_str(f, "fault", d->kind);
    ev_set_int(f, "fault_index", (long long)d->fault_index);
    ev_set_int(f, "call_index", (long long)d->call_index);
    ev_set_str(f, "target", c->t.host);
    ev_set_str(f, "canary", plan_canary(c->eg->ctl->plan));
    ev_set_str(f, "component", "controller-egress");
    if (c->path[0])
        json_object_set_new(detail, "path", json_string(c->path));
    ev_set_ref(f, "detail", detail);
    ctl_emit(c->eg->ctl, f);
    json_decref(f);
    json_decref(detail);
}

const struct catalog_fault *egress_decide(struct ctl *ctl, const char *host,
                                          struct plan_decision *d)
{
    struct plan_call call = {.component = CATALOG_INJ_CONTROLLER_EGRESS, .host = host};

    if (!(plan_injectors(ctl->plan) & CATALOG_INJ_CONTROLLER_EGRESS))
        return NULL;
    if (plan_decide(ctl->plan, &call, d) != 0 || !d->inject || !ctl_fault_allowed(ctl, d, host))
        return NULL;
    return catalog_fault_find(d->kind);
}

/* The plan's say on this request. 1 when a fault answered it, 0 when it goes on. */
static int apply_fault(struct econn *c)
{
    struct ctl *ctl = c->eg->ctl;
    struct plan_decision d;
    const struct catalog_fault *row;
    const char *canary = plan_canary(ctl->plan);
    char reason[384], body[640];

    if ((row = egress_decide(ctl, c->t.host, &d)) == NULL)
        return 0;
    if (row && row->fid == CATALOG_F_EGRESS_DNS_FAIL) {
        c->faulted = 1;
        c->error = "dns failure";
        emit_fault(c, &d);
        snprintf(reason, sizeof(reason), "Bad Gateway (cannot resolve %s: %s)", c->t.host, canary);
        snprintf(body, sizeof(body),
                 "faultline egress: cannot resolve host '%s': name does not resolve (%s)\n",
                 c->t.host, canary);
        conn_answer(c, 502, reason, NULL, body);
        return 1;
    }
    if (row && row->fid == CATALOG_F_EGRESS_CREDENTIAL_401 && !c->tunnel) {
        struct buf hdrs = BUF_INIT, b = BUF_INIT;
        c->faulted = 1;
        emit_fault(c, &d);
        if (intercept_answer_401(c->t.host, canary, &hdrs, &b) != 0) {
            buf_release(&hdrs);
            buf_release(&b);
            conn_fail(c, 500, "cannot build the 401 answer");
            return 1;
        }
        c->status = 401;
        evbuffer_add_printf(bufferevent_get_output(c->client),
                            "HTTP/1.1 401 Unauthorized\r\n%sContent-Length: %zu\r\n"
                            "Connection: close\r\n\r\n",
                            hdrs.data, b.len);
        evbuffer_add(bufferevent_get_output(c->client), b.data, b.len);
        buf_release(&hdrs);
        buf_release(&b);
        conn_close_after_write(c);
        return 1;
    }
    ctl_warn(ctl, "fault_not_applied",
             "the egress proxy does not inject '%s' (fault %zu) into %s to '%s': passed "
             "through unfaulted",
             d.kind, d.fault_index, c->tunnel ? "a CONNECT tunnel" : "a request", c->t.host);
    return 0;
}

/* A transparent TLS connection under a fault: no HTTP can be said before TLS, so a dns_fail
 * closes it (its DNS query was most likely answered NXDOMAIN already). 1 when closed. */
static int apply_fault_tls(struct econn *c)
{
    struct plan_decision d;
    const struct catalog_fault *row = egress_decide(c->eg->ctl, c->t.host, &d);

    if (row == NULL || row->fid != CATALOG_F_EGRESS_DNS_FAIL)
        return 0;
    c->faulted = 1;
    c->error = "dns failure";
    emit_fault(c, &d);
    conn_end(c);
    return 1;
}

/* The head of a plain request as it goes upstream: origin form, hop-by-hop fields dropped,
 * Host set, "Connection: close" (one request per connection). */
static void build_forward(struct econn *c)
{
    const struct http_head *h = &c->head;

    buf_addf(&c->fwd, "%s %s HTTP/1.1\r\n", h->method, c->t.path);
    if (strchr(c->t.host, ':'))
        buf_addf(&c->fwd, "Host: [%s]", c->t.host);
    else
        buf_addf(&c->fwd, "Host: %s", c->t.host);
    if (c->t.port != 80)
        buf_addf(&c->fwd, ":%d", c->t.port);
    buf_adds(&c->fwd, "\r\n");
    for (size_t i = 0; i < h->nfields; i++) {
        const char *n = h->fields[i].name;
        if (http_is_hop_field(n) && strcasecmp(n, "content-length") != 0 &&
            strcasecmp(n, "transfer-encoding") != 0)
            continue;
        buf_addf(&c->fwd, "%s: %s\r\n", n, h->fields[i].value);
    }
    buf_adds(&c->fwd, "Connection: close\r\n\r\n");
}

/* A CONNECT to a host an intercepting fault matches: "200 Connection established", then the
 * client's connection is intercept's (intercept.h), which records each request inside. */
static void hand_to_intercept(struct econn *c)
{
    struct err e = {0};
    struct evbuffer *out = bufferevent_get_output(c->client);
    struct bufferevent *client = c->client;

    c->status = 200;
    evbuffer_add_printf(out, "HTTP/1.1 200 Connection established\r\n\r\n");
    bufferevent_setcb(client, NULL, NULL, NULL, NULL);
    if (intercept_start(c->eg->ctl, client, c->t.host, c->t.port, &e) != 0) {
        log_warn("egress", "cannot intercept '%s': %s", c->t.host, e.msg);
        evbuffer_drain(out, evbuffer_get_length(out));
        bufferevent_setcb(client, head_read, NULL, head_event, c);
        conn_fail(c, 502, "interception failed");
        return;
    }
    c->client = NULL; /* intercept's now */
    c->handed_off = 1;
    conn_end(c);
}

/* A request to the transparent :80 listener: origin form, the host from the Host field. */
static int parse_transparent(struct econn *c, struct err *e)
{
    const char *hv = http_head_get(&c->head, "host");

    if (c->tunnel || c->head.target[0] != '/')
        return err_set(e, ERR_PARSE, "not an origin-form request");
    if (hv == NULL || hv[0] == '\0')
        return err_set(e, ERR_PARSE, "no Host field");
    c->t.port = 80;
    if (split_hostport(hv, strlen(hv), &c->t, 0, e) != 0)
        return ERR_PARSE;
    c->t.path = c->head.target;
    return 0;
}

static void on_head(struct econn *c, size_t len)
{
    struct err e = {0};
    struct http_head *h = &c->head;
    int rc;

    if (http_head_parse_request(h, bufferevent_get_input(c->client), len, &e) != 0) {
        snprintf(c->method, sizeof(c->method), "?");
        conn_fail(c, 400, "malformed request head");
        return;
    }
    snprintf(c->method, sizeof(c->method), "%s", h->method);
    c->tunnel = strcmp(h->method, "CONNECT") == 0;
    if (c->transparent)
        rc = parse_transparent(c, &e);
    else
        rc = c->tunnel ? egress_parse_authority(h->target, &c->t, &e)
                       : egress_parse_absolute(h->target, &c->t, &e);
    if (!c->tunnel && rc == 0) {
        size_t n = strcspn(c->t.path, "?");
        if (n > EGRESS_PATH_MAX)
            n = EGRESS_PATH_MAX;
        memcpy(c->path, c->t.path, n);
        c->path[n] = '\0';
    }
    if (rc != 0) {
        c->error = rc == ERR_UNSUPPORTED ? "https in absolute form" : "malformed request target";
        conn_fail(c, 400, e.msg);
        return;
    }
    if (!egress_policy_allows(&c->eg->policy, c->t.host)) {
        c->policy = EGRESS_POLICY_RULE;
        conn_fail(c, 403, "host not on the experiment's egress allow list");
        return;
    }
    if (c->tunnel && intercept_wanted(c->eg->ctl, c->t.host)) {
        hand_to_intercept(c);
        return;
    }
    if (apply_fault(c))
        return;
    if (!c->tunnel)
        build_forward(c);
    resolve(c);
}

static void head_read(struct bufferevent *bev, void *arg)
{
    struct econn *c = arg;
    long len = http_head_find(bufferevent_get_input(bev), EGRESS_HEAD_MAX, &c->scanned);

    if (len == ERR_LIMIT) {
        snprintf(c->method, sizeof(c->method), "?");
        conn_fail(c, 431, "request head too large");
        return;
    }
    if (len > 0)
        on_head(c, (size_t)len);
}

static void head_event(struct bufferevent *bev, short what, void *arg)
{
    struct econn *c = arg;

    (void)bev;
    if (what & BEV_EVENT_TIMEOUT) {
        snprintf(c->method, sizeof(c->method), "?");
        conn_fail(c, 408, "no request head in time");
        return;
    }
    if (c->state == EC_RESOLVE || c->state == EC_CONNECT_UP)
        c->error = "client left";
    conn_end(c); /* the client left before a request: no event unless one was read */
}

/* A connection in HEAD on client (taken: freed with the connection), or NULL (client freed). */
static struct econn *conn_new(struct egress *eg, struct bufferevent *client)
{
    struct econn *c;
    int ms = eg->ctl->cfg.client_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    if (eg->ctl->stopping || eg->nconns >= eg->ctl->cfg.max_conns) {
        bufferevent_free(client);
        return NULL;
    }
    c = xcalloc(1, sizeof(*c));
    c->eg = eg;
    c->state = EC_HEAD;
    c->t0_ms = (time_mono_ns() / 1000000);
    http_head_init(&c->head);
    buf_init(&c->fwd, EGRESS_HEAD_MAX * 2);
    c->client = client;
    c->next = eg->conns;
    if (eg->conns)
        eg->conns->prev = c;
    eg->conns = c;
    eg->nconns++;
    bufferevent_setcb(c->client, head_read, NULL, head_event, c);
    bufferevent_set_timeouts(c->client, &tv, &tv);
    bufferevent_enable(c->client, EV_READ | EV_WRITE);
    return c;
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                      void *arg)
{
    struct egress *eg = arg;
    struct bufferevent *client;

    (void)l;
    (void)sa;
    (void)len;
    if (eg->ctl->stopping || eg->nconns >= eg->ctl->cfg.max_conns) {
        evutil_closesocket(fd);
        return;
    }
    client = bufferevent_socket_new(eg->ctl->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (client == NULL) {
        evutil_closesocket(fd);
        return;
    }
    conn_new(eg, client);
}

static struct egress *egress_of(struct ctl *ctl)
{
    for (size_t i = 0; i < ctl->nhandlers; i++)
        if (ctl->handlers[i].h == &egress_handler)
            return ctl->handlers[i].state;
    return NULL;
}

int egress_serving(struct ctl *ctl)
{
    return egress_of(ctl) != NULL;
}

/* A connection a listener other than the proxy's accepted, taken as the proxy's own (how:
 * EGRESS_ADOPT_*); NULL with *rc set (client freed when no proxy serves) otherwise. */
static struct econn *adopt_conn(struct ctl *ctl, struct bufferevent *client, int how, int *rc)
{
    struct egress *eg = egress_of(ctl);
    struct econn *c;

    if (eg == NULL) {
        bufferevent_free(client);
        *rc = ERR_UNSUPPORTED;
        return NULL;
    }
    if ((c = conn_new(eg, client)) == NULL) {
        *rc = ERR_LIMIT;
        return NULL;
    }
    c->transparent = how;
    return c;
}

int egress_adopt_host_port(struct ctl *ctl, struct bufferevent *client, int port)
{
    struct sockaddr_in s4;
    struct econn *c;
    int rc = 0;

    if ((c = adopt_conn(ctl, client, EGRESS_ADOPT_HOST_PORT, &rc)) == NULL)
        return rc;
    c->tunnel = 1;
    c->resolved = 1; /* the experiment named this loopback port */
    c->t.port = port;
    snprintf(c->method, sizeof(c->method), "TCP");
    snprintf(c->t.host, sizeof(c->t.host), "127.0.0.1");
    memset(&s4, 0, sizeof(s4));
    s4.sin_family = AF_INET;
    s4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connect_up(c, (struct sockaddr *)&s4, sizeof(s4));
    return 0;
}

int egress_adopt(struct ctl *ctl, struct bufferevent *client, int how, const char *host)
{
    struct econn *c;
    int rc = 0;

    if ((c = adopt_conn(ctl, client, how, &rc)) == NULL)
        return rc;
    if (how == EGRESS_ADOPT_HTTP) {
        if (evbuffer_get_length(bufferevent_get_input(client)) > 0)
            head_read(client, c);
        return 0;
    }
    /* TLS: a blind tunnel to host:443, or the interception when a fault wants the host */
    c->tunnel = 1;
    c->t.port = 443;
    snprintf(c->method, sizeof(c->method), "TLS");
    snprintf(c->t.host, sizeof(c->t.host), "%s", host);
    bufferevent_disable(client, EV_READ);
    if (intercept_wanted(ctl, c->t.host)) {
        struct err e = {0};
        bufferevent_setcb(client, NULL, NULL, NULL, NULL);
        if (intercept_start(ctl, client, NULL, 443, &e) != 0) {
            log_warn("egress", "cannot intercept '%s': %s", c->t.host, e.msg);
            c->error = "interception failed";
            conn_end(c);
            return 0;
        }
        c->client = NULL; /* intercept's now */
        c->handed_off = 1;
        conn_end(c);
        return 0;
    }
    if (apply_fault_tls(c))
        return 0;
    resolve(c);
    return 0;
}

/* ---- the handler ---- */

static void *egress_init(struct ctl *ctl, struct err *e)
{
    struct egress *eg = xcalloc(1, sizeof(*eg));
    const struct controller_config *cfg = &ctl->cfg;
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof(ss);
    int fd = cfg->egress_listen_fd;
    char host[64];

    eg->ctl = ctl;
    eg->reap = event_new(ctl->base, -1, 0, reap_cb, eg);
    if (eg->reap == NULL) {
        err_set(e, ERR_SYS, "cannot create the egress proxy's events");
        goto fail;
    }
    for (const char *const *rs = cfg->resolve; rs && *rs; rs++) {
        if (eg->nresolve == EGRESS_RESOLVE_MAX) {
            err_set(e, ERR_INVALID, "more than %d --resolve entries", EGRESS_RESOLVE_MAX);
            goto fail;
        }
        if (egress_resolve_parse(*rs, &eg->resolve[eg->nresolve], e) != 0)
            goto fail;
        eg->nresolve++;
    }
    if (egress_policy_init(&eg->policy, cfg->egress_allow, e) != 0)
        goto fail;
    if (fd < 0) {
        int slen = (int)sizeof(ss);
        memset(&ss, 0, sizeof(ss));
        if (cfg->egress_listen == NULL || hsrv_parse_addr(cfg->egress_listen, &ss, &slen) != 0) {
            err_set(e, ERR_INVALID, "--egress-listen '%.64s': expected HOST:PORT",
                    cfg->egress_listen);
            goto fail;
        }
        eg->lev = evconnlistener_new_bind(ctl->base, on_accept, eg,
                                          LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
                                          (struct sockaddr *)&ss, slen);
    } else {
        evutil_make_socket_nonblocking(fd);
        eg->lev = evconnlistener_new(ctl->base, on_accept, eg, LEV_OPT_CLOSE_ON_FREE, -1, fd);
    }
    if (eg->lev == NULL) {
        err_set(e, ERR_SYS, "cannot listen for the egress proxy on '%.64s': %s",
                fd < 0 ? cfg->egress_listen : "--egress-listen-fd", strerror(errno));
        goto fail;
    }
    if (getsockname(evconnlistener_get_fd(eg->lev), (struct sockaddr *)&ss, &sslen) != 0 ||
        (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
        snprintf(eg->addr, sizeof(eg->addr), "?");
    } else if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
        snprintf(eg->addr, sizeof(eg->addr), "%s:%d", host, ntohs(s4->sin_port));
    } else {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
        snprintf(eg->addr, sizeof(eg->addr), "[%s]:%d", host, ntohs(s6->sin6_port));
    }
    if (cfg->egress_ready_file) {
        char line[96];
        int n = snprintf(line, sizeof(line), "%s\n", eg->addr);
        if (fs_write_file(cfg->egress_ready_file, line, (size_t)n, e) != 0)
            goto fail;
    }
    log_info("egress", "forward proxy on %s (%zu --resolve entries)", eg->addr, eg->nresolve);
    return eg;
fail:
    if (eg->lev)
        evconnlistener_free(eg->lev);
    if (eg->reap)
        event_free(eg->reap);
    free(eg);
    return NULL;
}

static void egress_stop(void *state)
{
    struct egress *eg = state;

    if (eg->lev)
        evconnlistener_disable(eg->lev);
    while (eg->conns) {
        struct econn *c = eg->conns;
        if (c->error == NULL && c->state != EC_CLOSING)
            c->error = "controller stopped";
        conn_end(c);
    }
}

static void egress_free(void *state)
{
    struct egress *eg = state;

    egress_stop(eg);
    reap_cb(-1, 0, eg);
    if (eg->lev)
        evconnlistener_free(eg->lev);
    event_free(eg->reap);
    free(eg);
}

static size_t egress_in_flight(void *state)
{
    return ((struct egress *)state)->nconns;
}

const struct ctl_handler egress_handler = {
    .name = "egress",
    .prefix = NULL,
    .init = egress_init,
    .handle = NULL,
    .stop = egress_stop,
    .free = egress_free,
    .in_flight = egress_in_flight,
    .side = "controller-egress",
};
