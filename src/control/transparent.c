/*
 * transparent: the :80 and :443 listeners of transparent mode (transparent.h). A :443
 * connection is a struct tpeek until its first record is read:
 *
 *   READING --record complete, SNI found-->   egress_adopt (the connection is the proxy's)
 *   READING --no TLS / no SNI / malformed-->  closed, egress_request with the reason
 *   READING --timeout / client left-->        closed, egress_request with the reason
 *
 * A tpeek is freed outside its own callbacks (a list a deferred event empties).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "codec/sni.h"
#include "control/ctl.h"
#include "control/egress.h"
#include "control/transparent.h"
#include "events/ev.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/banned.h"

struct transparent;

struct tpeek {
    struct transparent *tr;
    struct tpeek *prev, *next;
    struct bufferevent *bev;
    int64_t t0_ms;
    int dead;
};

struct transparent {
    struct ctl *ctl;
    struct evconnlistener *http, *tls;
    struct tpeek *peeks, *dead;
    size_t npeeks;
    struct event *reap;
};

static void reap_cb(evutil_socket_t fd, short what, void *arg)
{
    struct transparent *tr = arg;

    (void)fd;
    (void)what;
    while (tr->dead) {
        struct tpeek *p = tr->dead;
        tr->dead = p->next;
        if (p->bev)
            bufferevent_free(p->bev);
        free(p);
    }
}

/* Ends the read: the bufferevent is kept (handed off) when p->bev was cleared. */
static void peek_end(struct tpeek *p, const char *error)
{
    struct transparent *tr = p->tr;

    if (p->dead)
        return;
    p->dead = 1;
    if (error) {
        json_t *j = ev_new(EVKIND_EGRESS_REQUEST);
        ev_set_str(j, "method", "TLS");
        ev_set_str(j, "host", "?");
        ev_set_int(j, "port", 443);
        ev_set_bool(j, "intercepted", 0);
        ev_set_str(j, "mode", "transparent");
        ev_set_int(j, "status", 0);
        ev_set_int(j, "duration_ms", (long long)(time_mono_ns() / 1000000 - p->t0_ms));
        ev_set_str(j, "error", error);
        ctl_emit(tr->ctl, j);
        json_decref(j);
    }
    if (p->prev)
        p->prev->next = p->next;
    else
        tr->peeks = p->next;
    if (p->next)
        p->next->prev = p->prev;
    tr->npeeks--;
    if (p->bev)
        bufferevent_disable(p->bev, EV_READ | EV_WRITE);
    p->prev = NULL;
    p->next = tr->dead;
    tr->dead = p;
    event_active(tr->reap, EV_TIMEOUT, 1);
}

static void peek_read(struct bufferevent *bev, void *arg)
{
    struct tpeek *p = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t have = evbuffer_get_length(in), need;
    char host[SNI_HOST_MAX + 1], why[300];
    struct err e = {0};
    const uint8_t *data = evbuffer_pullup(in, have < 5 ? (ssize_t)have : 5);
    int rc;

    if (sni_record_need(data, have < 5 ? have : 5, &need, &e) != 0) {
        snprintf(why, sizeof(why), "not TLS: %s", e.msg);
        peek_end(p, why);
        return;
    }
    if (have < need) {
        bufferevent_setwatermark(bev, EV_READ, need, 0);
        return;
    }
    data = evbuffer_pullup(in, (ssize_t)need);
    rc = sni_parse(data, need, host, &e);
    if (rc == ERR_NOTFOUND) {
        peek_end(p, "the ClientHello names no host (no SNI)");
        return;
    }
    if (rc != 0) {
        snprintf(why, sizeof(why), "a ClientHello faultline cannot route: %s", e.msg);
        peek_end(p, why);
        return;
    }
    bufferevent_setwatermark(bev, EV_READ, 0, 0);
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    p->bev = NULL; /* egress_adopt takes it, on every path */
    peek_end(p, NULL);
    if (egress_adopt(p->tr->ctl, bev, EGRESS_ADOPT_TLS, host) != 0)
        log_warn("transparent", "a TLS connection to '%s' was not taken", host);
}

static void peek_event(struct bufferevent *bev, short what, void *arg)
{
    struct tpeek *p = arg;

    (void)bev;
    peek_end(p, what & BEV_EVENT_TIMEOUT ? "no ClientHello in time" : "client left");
}

static void on_tls(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                   void *arg)
{
    struct transparent *tr = arg;
    struct tpeek *p;
    int ms = tr->ctl->cfg.client_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    (void)l;
    (void)sa;
    (void)len;
    if (tr->ctl->stopping || tr->npeeks >= tr->ctl->cfg.max_conns) {
        evutil_closesocket(fd);
        return;
    }
    p = xcalloc(1, sizeof(*p));
    p->tr = tr;
    p->t0_ms = time_mono_ns() / 1000000;
    p->bev = bufferevent_socket_new(tr->ctl->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (p->bev == NULL) {
        evutil_closesocket(fd);
        free(p);
        return;
    }
    p->next = tr->peeks;
    if (tr->peeks)
        tr->peeks->prev = p;
    tr->peeks = p;
    tr->npeeks++;
    bufferevent_setcb(p->bev, peek_read, NULL, peek_event, p);
    bufferevent_setwatermark(p->bev, EV_READ, 5, 0);
    bufferevent_set_timeouts(p->bev, &tv, &tv);
    bufferevent_enable(p->bev, EV_READ);
}

static void on_http(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                    void *arg)
{
    struct transparent *tr = arg;
    struct bufferevent *bev;

    (void)l;
    (void)sa;
    (void)len;
    if (tr->ctl->stopping) {
        evutil_closesocket(fd);
        return;
    }
    bev = bufferevent_socket_new(tr->ctl->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        evutil_closesocket(fd);
        return;
    }
    egress_adopt(tr->ctl, bev, EGRESS_ADOPT_HTTP, NULL);
}

static struct evconnlistener *listen_on(struct transparent *tr, const char *addr, int fd,
                                        evconnlistener_cb cb, const char *what, struct err *e)
{
    struct evconnlistener *lev;

    if (fd >= 0) {
        evutil_make_socket_nonblocking(fd);
        lev = evconnlistener_new(tr->ctl->base, cb, tr, LEV_OPT_CLOSE_ON_FREE, -1, fd);
    } else {
        struct sockaddr_storage ss;
        int slen = (int)sizeof(ss);
        memset(&ss, 0, sizeof(ss));
        if (hsrv_parse_addr(addr, &ss, &slen) != 0) {
            err_set(e, ERR_INVALID, "--transparent-%s '%.64s': expected HOST:PORT", what, addr);
            return NULL;
        }
        lev = evconnlistener_new_bind(tr->ctl->base, cb, tr,
                                      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
                                      (struct sockaddr *)&ss, slen);
    }
    if (lev == NULL)
        err_set(e, ERR_SYS, "cannot listen for transparent %s: %s", what, strerror(errno));
    return lev;
}

static void *transparent_init(struct ctl *ctl, struct err *e)
{
    struct transparent *tr = xcalloc(1, sizeof(*tr));
    const struct controller_config *cfg = &ctl->cfg;

    tr->ctl = ctl;
    tr->reap = event_new(ctl->base, -1, 0, reap_cb, tr);
    if (tr->reap == NULL) {
        err_set(e, ERR_SYS, "cannot create the transparent listeners' events");
        goto fail;
    }
    if ((cfg->transparent_http || cfg->transparent_http_fd >= 0) &&
        (tr->http = listen_on(tr, cfg->transparent_http, cfg->transparent_http_fd, on_http, "http",
                              e)) == NULL)
        goto fail;
    if ((cfg->transparent_tls || cfg->transparent_tls_fd >= 0) &&
        (tr->tls = listen_on(tr, cfg->transparent_tls, cfg->transparent_tls_fd, on_tls, "tls",
                             e)) == NULL)
        goto fail;
    log_info("transparent", "transparent listeners: http %s, tls %s", tr->http ? "on" : "off",
             tr->tls ? "on" : "off");
    return tr;
fail:
    if (tr->http)
        evconnlistener_free(tr->http);
    if (tr->reap)
        event_free(tr->reap);
    free(tr);
    return NULL;
}

static void transparent_stop(void *state)
{
    struct transparent *tr = state;

    if (tr->http)
        evconnlistener_disable(tr->http);
    if (tr->tls)
        evconnlistener_disable(tr->tls);
    while (tr->peeks)
        peek_end(tr->peeks, "controller stopped");
}

static void transparent_free(void *state)
{
    struct transparent *tr = state;

    transparent_stop(tr);
    reap_cb(-1, 0, tr);
    if (tr->http)
        evconnlistener_free(tr->http);
    if (tr->tls)
        evconnlistener_free(tr->tls);
    event_free(tr->reap);
    free(tr);
}

static size_t transparent_in_flight(void *state)
{
    return ((struct transparent *)state)->npeeks;
}

const struct ctl_handler transparent_handler = {
    .name = "transparent",
    .prefix = NULL,
    .init = transparent_init,
    .handle = NULL,
    .stop = transparent_stop,
    .free = transparent_free,
    .in_flight = transparent_in_flight,
    .side = NULL,
};
