/*
 * intercept: TLS interception of the egress hosts a fault targets (state table in intercept.h).
 *
 * Each intercepted client connection (struct icon) is the client's plain bufferevent wrapped
 * in a TLS filter (bufferevent_openssl_filter_new) whose server session comes from the run's
 * tlsmint (the SNI picks the leaf). Requests are read one at a time with src/codec/http.h
 * (head bounded by HTTP_HEAD_MAX_DEFAULT, body by the controller's max_body), each decided by
 * the plan (component controller-egress, host = the TLS name, `when` args {method, path}):
 *   egress.credential_401 -> the 401 of intercept_answer_401
 *   egress.dns_fail       -> 502, as the proxy answers for a name that does not resolve
 *   nothing               -> forwarded to https://HOST:PORT through an upstream (upstream.h:
 *                            verified TLS, keep-alive pool, the --resolve address if any)
 * and recorded as one egress_request (intercepted: true), after a fault_injected when one
 * fired. The response is written to the client as it arrives (Content-Length when the origin
 * gave one, else chunked); reading the next request waits until it ended.
 *
 * A connection is freed from a zero-delay timer (icon_drop), never inside one of its own
 * bufferevent's callbacks; a connection being dropped has cancelled its upstream request.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>

#include "codec/tlsmint.h"
#include "control/ctl.h"
#include "control/egress.h"
#include "control/faults.h"
#include "control/intercept.h"
#include "control/tlsout.h"
#include "control/upstream.h"
#include "events/ev.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define ORIGINS_MAX 64 /* upstreams kept (one per intercepted host:port) */
/* client bytes buffered while a request is answered (a pipelined head and body start) */
#define ICON_INPUT_MAX (HTTP_HEAD_MAX_DEFAULT + 64 * 1024)

enum icon_state { I_HANDSHAKE, I_HEAD, I_BODY, I_UPSTREAM, I_CLOSING };

struct origin {
    char key[TLSMINT_HOST_MAX + 8]; /* "host:port" */
    struct upstream *u;
};

struct icon {
    struct intercept *ic;
    struct icon *prev, *next;
    struct bufferevent *bev; /* the TLS filter; frees the client's bufferevent with it */
    struct event *drop_ev;
    struct tlsmint_sni sni;
    int port;
    int transparent;
    enum icon_state state;
    struct http_head req;
    size_t scanned;
    struct http_chunked chunked;
    struct buf body;
    struct ureq *q;
    int64_t t0;
    int status;
    uint64_t bytes_in;
    /* the response being built: written to the TLS filter in one piece per origin read, so
     * that it becomes one TLS record rather than one per header line (bufferevent_openssl
     * writes a record per evbuffer addition) */
    struct evbuffer *stage;
    int resp_chunked;  /* the response to the client is chunked */
    uint64_t resp_len; /* its Content-Length, or UINT64_MAX */
    int keep_alive;
    int dropping;
};

struct intercept {
    struct ctl *ctl;
    struct tlsmint *mint;
    struct icon *conns;
    struct origin origins[ORIGINS_MAX];
    size_t norigins;
};

static void icon_process(struct icon *c);

/* ---- the 401 ---- */

/* A GitHub-like API host: api.github.com, or a name with "github" in it (GitHub Enterprise
 * hosts are commonly so named). */
static int github_like(const char *host)
{
    return strcasecmp(host, "api.github.com") == 0 || strcasestr(host, "github") != NULL;
}

int intercept_answer_401(const char *host, const char *canary, struct buf *hdrs, struct buf *body)
{
    struct buf msg = BUF_INIT;
    json_t *j;
    char *text;
    int rc = 0;

    if (faults_message(&msg, "egress.credential_401", "the credential was revoked", canary) < 0)
        rc = ERR_LIMIT;
    if (github_like(host)) {
        struct buf m = BUF_INIT;
        buf_addf(&m, "Bad credentials (%s)", msg.data);
        j = json_pack("{s:s, s:s, s:s}", "message", m.data, "documentation_url",
                      "https://docs.github.com/rest", "status", "401");
        text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        buf_release(&m);
        if (text == NULL) {
            rc = ERR_NOMEM;
        } else {
            if (buf_adds(body, text) < 0)
                rc = ERR_LIMIT;
            free(text);
        }
        if (buf_adds(hdrs, "Content-Type: application/json; charset=utf-8\r\n"
                           "WWW-Authenticate: Basic realm=\"GitHub\"\r\n") < 0)
            rc = ERR_LIMIT;
    } else {
        if (buf_addf(body, "401 Unauthorized: %s\n", msg.data) < 0 ||
            buf_addf(hdrs,
                     "Content-Type: text/plain; charset=utf-8\r\n"
                     "WWW-Authenticate: Bearer realm=\"%.200s\", error=\"invalid_token\", "
                     "error_description=\"the access token was revoked\"\r\n",
                     host) < 0)
            rc = ERR_LIMIT;
    }
    buf_release(&msg);
    return rc;
}

/* ---- set-up ---- */

struct intercept *intercept_new(struct ctl *ctl, struct err *e)
{
    struct intercept *ic = xcalloc(1, sizeof(*ic));
    struct buf path = BUF_INIT;

    ic->ctl = ctl;
    ic->mint = tlsmint_new(plan_run_id(ctl->plan), e);
    if (ic->mint == NULL)
        goto fail;
    if (ctl->cfg.ca_dir) {
        buf_addf(&path, "%s/ca.pem", ctl->cfg.ca_dir);
        if (tlsmint_write_ca(ic->mint, path.data, e) < 0)
            goto fail;
        buf_reset(&path);
        buf_addf(&path, "%s/ca-bundle.pem", ctl->cfg.ca_dir);
        if (tlsmint_write_bundle(ic->mint, NULL, path.data, e) < 0)
            goto fail;
    }
    buf_release(&path);
    return ic;
fail:
    buf_release(&path);
    intercept_free(ic);
    return NULL;
}

int intercept_wanted(struct ctl *ctl, const char *host)
{
    size_t n = plan_nfaults(ctl->plan), len;
    char name[TLSMINT_HOST_MAX + 1];

    if (host == NULL || (len = strlen(host)) == 0 || len > TLSMINT_HOST_MAX)
        return 0;
    /* as plan_decide sees a host: lowercase, without a trailing dot */
    for (size_t i = 0; i <= len; i++)
        name[i] = (char)tolower((unsigned char)host[i]);
    if (len > 1 && name[len - 1] == '.')
        name[len - 1] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *pat = plan_fault_host(ctl->plan, i);
        if (strcmp(plan_fault_kind(ctl->plan, i), "egress.credential_401") == 0 && pat &&
            plan_match_pattern(pat, name))
            return 1;
    }
    return 0;
}

/* ---- events ---- */

static json_t *request_event(struct icon *c, const char *error)
{
    json_t *j = ev_new(EVKIND_EGRESS_REQUEST);
    const char *host = c->sni.host[0] ? c->sni.host : c->sni.expect;

    ev_set_str(j, "method", c->req.method ? c->req.method : "CONNECT");
    ev_set_str(j, "host", host[0] ? host : "?");
    ev_set_int(j, "port", c->port);
    if (c->req.target)
        ev_set_strn(j, "path", c->req.target, strcspn(c->req.target, "?"));
    ev_set_bool(j, "intercepted", 1);
    ev_set_int(j, "status", c->status);
    ev_set_int(j, "bytes_in", (long long)c->bytes_in);
    ev_set_int(j, "bytes_out", (long long)c->body.len);
    ev_set_int(j, "duration_ms", (long long)(time_now_ms() - c->t0));
    if (error)
        ev_set_str(j, "error", error);
    return j;
}

static void emit_request(struct icon *c, int faulted, const char *error)
{
    json_t *j = request_event(c, error);

    if (faulted)
        ev_set_bool(j, "faulted", 1);
    ctl_emit(c->ic->ctl, j);
    json_decref(j);
}

static void emit_fault(struct icon *c, const struct plan_decision *d, int status)
{
    struct ctl *ctl = c->ic->ctl;
    json_t *f = ev_new(EVKIND_FAULT_INJECTED);

    ev_set_str(f, "fault", d->kind);
    ev_set_int(f, "fault_index", (long long)d->fault_index);
    ev_set_int(f, "call_index", (long long)d->call_index);
    ev_set_str(f, "target", c->sni.host);
    ev_set_str(f, "canary", plan_canary(ctl->plan));
    ev_set_str(f, "component", "controller-egress");
    ev_set(f, "detail",
           json_pack("{s:i, s:s, s:s%}", "status", status, "method", c->req.method, "path",
                     c->req.target, strcspn(c->req.target, "?")));
    ctl_emit(ctl, f);
    json_decref(f);
}

/* ---- connections ---- */

static void icon_free(struct icon *c)
{
    struct intercept *ic = c->ic;

    if (c->q)
        ureq_cancel(c->q);
    if (c->prev)
        c->prev->next = c->next;
    else
        ic->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->bev)
        bufferevent_free(c->bev);
    if (c->drop_ev)
        event_free(c->drop_ev);
    if (c->stage)
        evbuffer_free(c->stage);
    http_head_release(&c->req);
    buf_release(&c->body);
    free(c);
}

static void icon_drop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    icon_free(arg);
}

/* Frees c from the loop, after the current callback. */
static void icon_drop(struct icon *c)
{
    static const struct timeval zero = {0, 0};

    if (c->dropping)
        return;
    c->dropping = 1;
    c->state = I_CLOSING;
    if (c->q) {
        ureq_cancel(c->q);
        c->q = NULL;
    }
    bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    event_add(c->drop_ev, &zero);
}

/* Closes once what was written reached the client. */
static void icon_close_after_write(struct icon *c)
{
    c->state = I_CLOSING;
    bufferevent_disable(c->bev, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        icon_drop(c);
}

/* Writes a whole response (hdrs: "Name: value\r\n" lines). */
static void icon_flush(struct icon *c);

static void icon_reply(struct icon *c, int status, const char *reason, const char *hdrs,
                       const void *body, size_t n)
{
    struct evbuffer *out = c->stage;

    c->status = status;
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n%sContent-Length: %zu\r\n%s\r\n", status,
                        reason ? reason : http_reason(status), hdrs ? hdrs : "", n,
                        c->keep_alive ? "" : "Connection: close\r\n");
    if (strcmp(c->req.method ? c->req.method : "", "HEAD") != 0)
        evbuffer_add(out, body, n);
    icon_flush(c);
}

/* The request was answered: the next one, or the close. */
static void icon_request_done(struct icon *c)
{
    http_head_release(&c->req);
    http_head_init(&c->req);
    buf_reset(&c->body);
    c->scanned = 0;
    c->status = 0;
    c->bytes_in = 0;
    if (!c->keep_alive) {
        icon_close_after_write(c);
        return;
    }
    c->state = I_HEAD;
    /* a pipelined request already read: from the loop, not recursively */
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
        bufferevent_trigger(c->bev, EV_READ, BEV_OPT_DEFER_CALLBACKS);
}

/* A request the controller refuses itself (400, 413, 421, 431): answered, recorded, closed. */
static void icon_refuse(struct icon *c, int status, const char *why)
{
    char body[320];
    int n = snprintf(body, sizeof(body), "%d %s: %s\n", status, http_reason(status), why);

    c->keep_alive = 0;
    c->status = status;
    emit_request(c, 0, why);
    icon_reply(c, status, NULL, "Content-Type: text/plain; charset=utf-8\r\n", body, (size_t)n);
    icon_close_after_write(c);
}

/* Moves the staged response to the client, contiguous when small (one TLS record). */
static void icon_flush(struct icon *c)
{
    size_t n = evbuffer_get_length(c->stage);

    if (n == 0)
        return;
    if (n <= TLSOUT_MAX) {
        /* written now when nothing waits before it (tlsout.h): no write event armed */
        tlsout_write(c->bev, evbuffer_pullup(c->stage, -1), n);
        evbuffer_drain(c->stage, n);
        return;
    }
    if (n <= 64 * 1024)
        evbuffer_pullup(c->stage, -1);
    evbuffer_add_buffer(bufferevent_get_output(c->bev), c->stage);
}

/* ---- forwarding ---- */

/* The address a --resolve entry (egress.h's parser, curl's meaning) gives host:port, as an IP
 * literal in out; NULL when none names it. */
static const char *resolve_addr(struct ctl *ctl, const char *host, int port, char *out, size_t size)
{
    for (size_t i = 0; ctl->cfg.resolve && ctl->cfg.resolve[i]; i++) {
        struct egress_resolve r;
        struct err e = {0};
        const struct sockaddr *sa = (const struct sockaddr *)&r.addr;
        const void *a;

        if (egress_resolve_parse(ctl->cfg.resolve[i], &r, &e) != 0 ||
            strcasecmp(r.host, host) != 0 || (r.port != 0 && r.port != port))
            continue;
        a = sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
                                      : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;
        if (inet_ntop(sa->sa_family, a, out, (socklen_t)size) != NULL)
            return out;
    }
    return NULL;
}

static struct upstream *origin_get(struct icon *c, struct err *e)
{
    struct intercept *ic = c->ic;
    struct ctl *ctl = ic->ctl;
    struct upstream_config ucfg;
    char key[sizeof(((struct origin *)0)->key)], url[TLSMINT_HOST_MAX + 32], addr[64];
    struct origin *o;
    int v6 = strchr(c->sni.host, ':') != NULL;

    snprintf(key, sizeof(key), "%s:%d", c->sni.host, c->port);
    for (size_t i = 0; i < ic->norigins; i++)
        if (strcmp(ic->origins[i].key, key) == 0)
            return ic->origins[i].u;
    if (ic->norigins == ORIGINS_MAX) {
        err_set(e, ERR_LIMIT, "more than %d intercepted origins", ORIGINS_MAX);
        return NULL;
    }
    snprintf(url, sizeof(url), "https://%s%s%s:%d", v6 ? "[" : "", c->sni.host, v6 ? "]" : "",
             c->port);
    memset(&ucfg, 0, sizeof(ucfg));
    ucfg.connect_timeout_ms = ctl->cfg.connect_timeout_ms;
    ucfg.first_byte_timeout_ms = ctl->cfg.first_byte_timeout_ms;
    ucfg.idle_timeout_ms = ctl->cfg.idle_timeout_ms;
    ucfg.ca_file = ctl->cfg.upstream_ca;
    ucfg.connect_addr = resolve_addr(ctl, c->sni.host, c->port, addr, sizeof(addr));
    o = &ic->origins[ic->norigins];
    o->u = upstream_new(ctl->base, ctl->dns, url, &ucfg, e);
    if (o->u == NULL)
        return NULL;
    snprintf(o->key, sizeof(o->key), "%s", key);
    ic->norigins++;
    return o->u;
}

static void up_head(struct ureq *q, const struct http_head *h, void *arg)
{
    struct icon *c = arg;
    struct evbuffer *out = c->stage;
    int no_body = h->framing == HTTP_BODY_NONE;

    (void)q;
    c->status = h->status;
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", h->status,
                        h->reason && *h->reason ? h->reason : http_reason(h->status));
    for (size_t i = 0; i < h->nfields; i++) {
        if (http_is_hop_field(h->fields[i].name))
            continue;
        evbuffer_add_printf(out, "%s: %s\r\n", h->fields[i].name, h->fields[i].value);
    }
    c->resp_chunked = 0;
    c->resp_len = h->framing == HTTP_BODY_LENGTH ? (uint64_t)h->content_length : UINT64_MAX;
    if (h->framing == HTTP_BODY_LENGTH) {
        evbuffer_add_printf(out, "Content-Length: %llu\r\n", (unsigned long long)h->content_length);
    } else if (!no_body) {
        evbuffer_add_printf(out, "Transfer-Encoding: chunked\r\n");
        c->resp_chunked = 1;
    } else if (h->status != 204 && h->status != 304 && (h->status < 100 || h->status >= 200) &&
               strcmp(c->req.method, "HEAD") != 0) {
        evbuffer_add_printf(out, "Content-Length: 0\r\n");
    }
    if (!c->keep_alive)
        evbuffer_add_printf(out, "Connection: close\r\n");
    evbuffer_add(out, "\r\n", 2);
}

static void up_body(struct ureq *q, struct evbuffer *data, void *arg)
{
    struct icon *c = arg;
    struct evbuffer *out = c->stage;
    size_t n = evbuffer_get_length(data);

    (void)q;
    c->bytes_in += n;
    if (n == 0)
        return;
    if (c->resp_chunked)
        evbuffer_add_printf(out, "%zx\r\n", n);
    evbuffer_add_buffer(out, data);
    if (c->resp_chunked)
        evbuffer_add(out, "\r\n", 2);
    if (c->bytes_in >= c->resp_len)
        return; /* the whole response: up_done records it, then writes it */
    icon_flush(c);
    out = bufferevent_get_output(c->bev);
    /* backpressure: stop reading the origin while the client lags */
    if (evbuffer_get_length(out) > 4 * 1024 * 1024 && c->q)
        ureq_pause(c->q, 1);
}

static void up_done(struct ureq *q, void *arg)
{
    struct icon *c = arg;

    (void)q;
    c->q = NULL;
    if (c->resp_chunked)
        evbuffer_add(c->stage, "0\r\n\r\n", 5);
    emit_request(c, 0, NULL); /* before the response's end reaches the client, as before */
    icon_flush(c);
    icon_request_done(c);
}

static void up_error(struct ureq *q, int code, int got_head, const char *msg, void *arg)
{
    struct icon *c = arg;

    (void)q;
    (void)code;
    c->q = NULL;
    if (got_head) {
        /* the client sees the response cut short */
        emit_request(c, 0, msg);
        icon_drop(c);
        return;
    }
    c->keep_alive = 0;
    c->status = 502;
    emit_request(c, 0, msg);
    {
        char body[320];
        int n = snprintf(body, sizeof(body), "502 Bad Gateway: %s\n", msg);
        icon_reply(c, 502, NULL, "Content-Type: text/plain; charset=utf-8\r\n", body, (size_t)n);
    }
    icon_close_after_write(c);
}

static const struct ureq_callbacks up_cb = {up_head, up_body, up_done, up_error};

static void icon_forward(struct icon *c)
{
    struct buf hdrs = BUF_INIT;
    struct err e = {0};
    struct upstream *u = origin_get(c, &e);

    if (u == NULL) {
        c->keep_alive = 0;
        c->status = 502;
        emit_request(c, 0, e.msg);
        icon_reply(c, 502, NULL, "Content-Type: text/plain; charset=utf-8\r\n", e.msg,
                   strlen(e.msg));
        icon_close_after_write(c);
        return;
    }
    for (size_t i = 0; i < c->req.nfields; i++) {
        if (http_is_hop_field(c->req.fields[i].name))
            continue;
        buf_addf(&hdrs, "%s: %s\r\n", c->req.fields[i].name, c->req.fields[i].value);
    }
    /* one request at a time: what the client sends meanwhile waits in the input, bounded by
     * the read watermark (reading is not switched off and on per request: each switch is a
     * system call) */
    c->state = I_UPSTREAM;
    c->q = upstream_send(u, c->req.method, c->req.target, hdrs.data, hdrs.len, c->body.data,
                         c->body.len, &up_cb, c);
    buf_release(&hdrs);
}

/* ---- per request ---- */

/* The Host field's name part equals the TLS name. An absent Host (HTTP/1.0) passes. */
static int host_matches(const char *field, const char *name)
{
    size_t n;

    if (field == NULL)
        return 1;
    if (field[0] == '[') {
        const char *end = strchr(field, ']');
        n = end ? (size_t)(end - field - 1) : 0;
        return end && strlen(name) == n && strncasecmp(field + 1, name, n) == 0;
    }
    n = strcspn(field, ":");
    return strlen(name) == n && strncasecmp(field, name, n) == 0;
}

static void icon_dispatch(struct icon *c)
{
    struct ctl *ctl = c->ic->ctl;
    struct plan_call call;
    struct plan_decision d;
    json_t *args;

    if (!host_matches(http_head_get(&c->req, "Host"), c->sni.host)) {
        icon_refuse(c, 421, "the Host header does not name the host the TLS session is for");
        return;
    }
    args = json_pack("{s:s, s:s%}", "method", c->req.method, "path", c->req.target,
                     strcspn(c->req.target, "?"));
    memset(&call, 0, sizeof(call));
    call.component = CATALOG_INJ_CONTROLLER_EGRESS;
    call.host = c->sni.host;
    call.args = args;
    if (plan_decide(ctl->plan, &call, &d) < 0)
        d.inject = 0;
    json_decref(args);
    if (d.inject && !ctl_fault_allowed(ctl, &d, c->sni.host))
        d.inject = 0;
    if (d.inject && strcmp(d.kind, "egress.credential_401") == 0) {
        struct buf hdrs = BUF_INIT, body = BUF_INIT;
        intercept_answer_401(c->sni.host, plan_canary(ctl->plan), &hdrs, &body);
        c->status = 401;
        emit_fault(c, &d, 401);
        emit_request(c, 1, NULL);
        icon_reply(c, 401, NULL, hdrs.data, body.data, body.len);
        buf_release(&hdrs);
        buf_release(&body);
        icon_request_done(c);
        return;
    }
    if (d.inject && strcmp(d.kind, "egress.dns_fail") == 0) {
        struct buf msg = BUF_INIT;
        faults_message(&msg, d.kind, "the name does not resolve", plan_canary(ctl->plan));
        c->status = 502;
        c->keep_alive = 0;
        emit_fault(c, &d, 502);
        emit_request(c, 1, "dns failure");
        icon_reply(c, 502, msg.data, "Content-Type: text/plain; charset=utf-8\r\n", msg.data,
                   msg.len);
        buf_release(&msg);
        icon_close_after_write(c);
        return;
    }
    icon_forward(c);
}

/* Reads what can be read of the current request; dispatches it once whole. */
static void icon_process(struct icon *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct ctl *ctl = c->ic->ctl;
    size_t max_body = ctl->cfg.max_body ? ctl->cfg.max_body : (size_t)32 << 20;
    struct err e = {0};

    if (c->state == I_HEAD) {
        long n = http_head_find(in, HTTP_HEAD_MAX_DEFAULT, &c->scanned);
        if (n == 0)
            return;
        c->t0 = time_now_ms();
        if (n < 0) {
            icon_refuse(c, 431, "request head too large");
            return;
        }
        if (http_head_parse_request(&c->req, in, (size_t)n, &e) < 0) {
            icon_refuse(c, e.code == ERR_UNSUPPORTED ? 501 : 400, e.msg);
            return;
        }
        c->keep_alive = c->req.keep_alive;
        if (c->req.framing == HTTP_BODY_LENGTH && c->req.content_length > max_body) {
            icon_refuse(c, 413, "request body too large");
            return;
        }
        if (c->req.framing == HTTP_BODY_CHUNKED) {
            http_chunked_init(&c->chunked);
            c->chunked.max_body = max_body;
        }
        if (c->req.expect_continue)
            evbuffer_add_printf(bufferevent_get_output(c->bev), "HTTP/1.1 100 Continue\r\n\r\n");
        c->state = I_BODY;
    }
    if (c->state == I_BODY) {
        if (c->req.framing == HTTP_BODY_LENGTH) {
            size_t want = (size_t)c->req.content_length - c->body.len;
            size_t have = evbuffer_get_length(in);
            size_t take = have < want ? have : want;
            if (buf_grow(&c->body, take) < 0) {
                icon_refuse(c, 413, "request body too large");
                return;
            }
            evbuffer_remove(in, c->body.data + c->body.len, take);
            c->body.len += take;
            c->body.data[c->body.len] = '\0';
            if (c->body.len < c->req.content_length)
                return;
        } else if (c->req.framing == HTTP_BODY_CHUNKED) {
            struct evbuffer *tmp = evbuffer_new();
            int rc = http_chunked_decode(&c->chunked, in, tmp, 0, &e);
            size_t n = evbuffer_get_length(tmp);
            if (rc >= 0 && buf_grow(&c->body, n) == 0) {
                evbuffer_remove(tmp, c->body.data + c->body.len, n);
                c->body.len += n;
                c->body.data[c->body.len] = '\0';
            }
            evbuffer_free(tmp);
            if (rc < 0) {
                icon_refuse(c, rc == ERR_LIMIT ? 413 : 400, e.msg);
                return;
            }
            if (rc == 0)
                return;
        }
        icon_dispatch(c);
    }
}

static void icon_read_cb(struct bufferevent *bev, void *arg)
{
    struct icon *c = arg;

    (void)bev;
    if (c->state == I_HEAD || c->state == I_BODY)
        icon_process(c);
}

static void icon_write_cb(struct bufferevent *bev, void *arg)
{
    struct icon *c = arg;

    (void)bev;
    if (c->state == I_CLOSING && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        icon_drop(c);
    else if (c->state == I_UPSTREAM && c->q)
        ureq_pause(c->q, 0);
}

static const char *ssl_reason(struct bufferevent *bev, char *out, size_t size)
{
    unsigned long code;
    const char *r = NULL;

    while ((code = bufferevent_get_openssl_error(bev)) != 0)
        r = ERR_reason_error_string(code);
    snprintf(out, size, "TLS handshake failed: %s", r ? r : "connection closed");
    return out;
}

static void icon_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct icon *c = arg;
    char why[200];

    if (what & BEV_EVENT_CONNECTED) {
        c->state = I_HEAD;
        icon_process(c);
        return;
    }
    if (c->state == I_HANDSHAKE) {
        c->t0 = c->t0 ? c->t0 : time_now_ms();
        emit_request(c, 0, c->sni.refused ? c->sni.refused : ssl_reason(bev, why, sizeof(why)));
    } else if (c->state == I_BODY || (c->state == I_UPSTREAM && (what & BEV_EVENT_ERROR))) {
        emit_request(c, 0, "the client closed the connection mid-request");
    }
    ERR_clear_error();
    icon_drop(c);
}

/* Writes what the proxy left in the client's output (its "200 Connection established") to
 * the socket now. 1 when all of it went, 0 when some remains (the TLS filter then writes it
 * first). */
static int write_pending(struct bufferevent *client, int fd)
{
    struct evbuffer *out = bufferevent_get_output(client);
    size_t n = evbuffer_get_length(out);
    ssize_t w;

    if (n == 0)
        return 1;
    w = write(fd, evbuffer_pullup(out, -1), n);
    if (w > 0)
        evbuffer_drain(out, (size_t)w);
    return w == (ssize_t)n;
}

int intercept_start(struct ctl *ctl, struct bufferevent *client, const char *host, int port,
                    struct err *err)
{
    struct intercept *ic = ctl->icpt;
    struct timeval tv;
    struct icon *c;
    SSL *ssl;
    int ms = ctl->cfg.client_timeout_ms > 0 ? ctl->cfg.client_timeout_ms : 60000, one = 1;
    int fd = bufferevent_getfd(client), direct;

    if (ic == NULL)
        return err_set(err, ERR_UNSUPPORTED, "the controller does not intercept TLS");
    if (host && (host[0] == '\0' || strlen(host) > TLSMINT_HOST_MAX))
        return err_set(err, ERR_INVALID, "cannot intercept host '%.80s'", host);
    if (port <= 0 || port > 65535)
        return err_set(err, ERR_INVALID, "cannot intercept port %d", port);
    c = xcalloc(1, sizeof(*c));
    c->ic = ic;
    c->port = port;
    c->transparent = host == NULL;
    snprintf(c->sni.expect, sizeof(c->sni.expect), "%s", host ? host : "");
    http_head_init(&c->req);
    buf_init(&c->body, 0);
    c->t0 = time_now_ms();
    c->drop_ev = evtimer_new(ctl->base, icon_drop_cb, c);
    c->stage = evbuffer_new();
    ssl = tlsmint_ssl_new(ic->mint, &c->sni, err);
    if (ssl == NULL || c->drop_ev == NULL || c->stage == NULL)
        goto fail;
    direct = fd >= 0 && evbuffer_get_length(bufferevent_get_input(client)) == 0 &&
             write_pending(client, fd);
    if (direct)
        c->bev = bufferevent_openssl_socket_new(ctl->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                BEV_OPT_CLOSE_ON_FREE);
    else
        c->bev = bufferevent_openssl_filter_new(ctl->base, client, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                BEV_OPT_CLOSE_ON_FREE);
    if (c->bev == NULL) {
        SSL_free(ssl);
        err_set(err, ERR_SYS, "cannot start TLS towards the client");
        goto fail;
    }
    if (direct) {
        /* the socket is the TLS session's now: the proxy's bufferevent lets go of it */
        bufferevent_setfd(client, -1);
        bufferevent_free(client);
    }
    bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    /* an interactive exchange: no Nagle delay between a response's records */
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    bufferevent_setcb(c->bev, icon_read_cb, icon_write_cb, icon_event_cb, c);
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    bufferevent_set_timeouts(c->bev, &tv, &tv);
    bufferevent_setwatermark(c->bev, EV_READ, 0, ICON_INPUT_MAX);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    c->next = ic->conns;
    if (ic->conns)
        ic->conns->prev = c;
    ic->conns = c;
    /* bytes the proxy already read (the ClientHello) sit in the client's input: read them */
    if (!direct && evbuffer_get_length(bufferevent_get_input(client)) > 0)
        bufferevent_trigger(client, EV_READ, BEV_OPT_DEFER_CALLBACKS);
    return 0;
fail:
    if (c->drop_ev)
        event_free(c->drop_ev);
    if (c->stage)
        evbuffer_free(c->stage);
    http_head_release(&c->req);
    buf_release(&c->body);
    free(c);
    return err->code ? err->code : ERR_SYS;
}

void intercept_stop(struct intercept *ic)
{
    if (ic == NULL)
        return;
    while (ic->conns) {
        struct icon *c = ic->conns;
        if (c->state == I_UPSTREAM || c->state == I_BODY)
            emit_request(c, 0, "the controller stopped");
        icon_free(c);
    }
}

void intercept_free(struct intercept *ic)
{
    if (ic == NULL)
        return;
    intercept_stop(ic);
    for (size_t i = 0; i < ic->norigins; i++)
        upstream_free(ic->origins[i].u);
    tlsmint_free(ic->mint);
    free(ic);
}
