/*
 * hostport: the listeners of egress.host_ports (hostport.h). Each accepted connection is the
 * egress proxy's at once (egress_adopt_host_port): the relay, its limits and its event are
 * the proxy's own, so this file keeps only the listeners.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "control/ctl.h"
#include "control/egress.h"
#include "control/hostport.h"
#include "util/log.h"
#include "util/num.h"
#include "util/banned.h"

struct hostport;

struct hp_listener {
    struct hostport *hp;
    struct evconnlistener *lev;
    int port;
};

struct hostport {
    struct ctl *ctl;
    struct hp_listener l[HOSTPORT_MAX];
    size_t n;
};

int hostport_parse(const char *spec, struct hostport_spec *out, size_t max, size_t *n,
                   struct err *e)
{
    const char *p = spec;

    for (;;) {
        size_t len = strcspn(p, ",");
        const char *colon = memchr(p, ':', len);
        char a[8], b[8];
        long long fd, port;

        if (colon == NULL || (size_t)(colon - p) >= sizeof(a) || colon == p ||
            (size_t)(p + len - colon - 1) >= sizeof(b) || colon + 1 == p + len)
            return err_set(e, ERR_INVALID, "--host-port-fd '%.64s': expected FD:PORT[,FD:PORT...]",
                           spec);
        memcpy(a, p, (size_t)(colon - p));
        a[colon - p] = '\0';
        memcpy(b, colon + 1, (size_t)(p + len - colon - 1));
        b[p + len - colon - 1] = '\0';
        if (num_parse_ll(a, 0, 65535, &fd) != 0)
            return err_set(e, ERR_INVALID, "--host-port-fd '%.64s': bad descriptor '%s'", spec, a);
        if (num_parse_ll(b, 1, 65535, &port) != 0)
            return err_set(e, ERR_INVALID, "--host-port-fd '%.64s': bad port '%s' (1 to 65535)",
                           spec, b);
        for (size_t i = 0; i < *n; i++)
            if (out[i].port == (int)port)
                return err_set(e, ERR_INVALID, "--host-port-fd: port %lld given twice", port);
        if (*n >= max)
            return err_set(e, ERR_LIMIT, "--host-port-fd: at most %zu host ports", max);
        out[*n].fd = (int)fd;
        out[*n].port = (int)port;
        (*n)++;
        p += len;
        if (*p == '\0')
            return 0;
        p++;
    }
}

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa, int len,
                      void *arg)
{
    struct hp_listener *l = arg;
    struct ctl *ctl = l->hp->ctl;
    struct bufferevent *bev;

    (void)lev;
    (void)sa;
    (void)len;
    if (ctl->stopping) {
        evutil_closesocket(fd);
        return;
    }
    bev = bufferevent_socket_new(ctl->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        evutil_closesocket(fd);
        return;
    }
    if (egress_adopt_host_port(ctl, bev, l->port) == ERR_UNSUPPORTED)
        log_warn("hostport", "a connection to host port %d was dropped: no egress proxy", l->port);
}

static void hostport_free(void *state)
{
    struct hostport *hp = state;

    for (size_t i = 0; i < hp->n; i++)
        evconnlistener_free(hp->l[i].lev);
    free(hp);
}

static void *hostport_init(struct ctl *ctl, struct err *e)
{
    struct hostport *hp = xcalloc(1, sizeof(*hp));
    const struct controller_config *cfg = &ctl->cfg;

    hp->ctl = ctl;
    if (!egress_serving(ctl)) {
        err_set(e, ERR_INVALID,
                "--host-port-fd needs the egress proxy (--egress-listen or --egress-listen-fd)");
        goto fail;
    }
    if (cfg->nhost_ports > HOSTPORT_MAX) {
        err_set(e, ERR_LIMIT, "more than %d host ports", HOSTPORT_MAX);
        goto fail;
    }
    for (size_t i = 0; i < cfg->nhost_ports; i++) {
        struct hp_listener *l = &hp->l[hp->n];
        int fd = cfg->host_ports[i].fd;
        l->hp = hp;
        l->port = cfg->host_ports[i].port;
        evutil_make_socket_nonblocking(fd);
        l->lev = evconnlistener_new(ctl->base, on_accept, l, LEV_OPT_CLOSE_ON_FREE, -1, fd);
        if (l->lev == NULL) {
            err_set(e, ERR_SYS, "cannot listen for host port %d on descriptor %d: %s", l->port, fd,
                    strerror(errno));
            goto fail;
        }
        hp->n++;
    }
    log_info("hostport", "%zu host port(s) relayed to the host's loopback", hp->n);
    return hp;
fail:
    hostport_free(hp);
    return NULL;
}

static void hostport_stop(void *state)
{
    struct hostport *hp = state;

    for (size_t i = 0; i < hp->n; i++)
        evconnlistener_disable(hp->l[i].lev);
}

const struct ctl_handler hostport_handler = {
    .name = "hostport",
    .prefix = NULL,
    .init = hostport_init,
    .handle = NULL,
    .stop = hostport_stop,
    .free = hostport_free,
    .in_flight = NULL, /* the connections are the egress proxy's, counted there */
    .side = NULL,
};
