/*
 * dnsstub: the sandbox's DNS server (dnsstub.h has the answers and the limits). dnsstub_reply
 * is the pure part; the handler below reads datagrams off the socket (a persistent read event
 * on the controller's loop, at most DNSSTUB_BURST per wake-up so one flood cannot starve the
 * model proxy), answers, and records.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/util.h>

#include "control/ctl.h"
#include "control/dnsstub.h"
#include "control/egress.h"
#include "events/ev.h"
#include "experiment/catalog.h"
#include "util/log.h"
#include "util/banned.h"

#define DNSSTUB_BURST 64 /* datagrams read per wake-up */

/* ---- the answer (pure) ---- */

static size_t refuse(struct dnsstub_result *r, int rcode, const char *answer, int with_question,
                     const char *why, uint8_t *out, size_t size)
{
    long n;

    r->answer = answer;
    snprintf(r->error, sizeof(r->error), "%s", why);
    n = dns_build_reply(&r->q, with_question, rcode, NULL, 0, out, size);
    return n > 0 ? (size_t)n : 0;
}

size_t dnsstub_reply(const uint8_t *msg, size_t len, dnsstub_fail_fn fail, void *arg, uint8_t *out,
                     size_t size, struct dnsstub_result *r)
{
    struct err e = {0};
    struct in_addr a4;
    int rc = dns_parse_query(msg, len, &r->q, &e);
    long n;

    r->parsed = 0;
    r->faulted = 0;
    r->error[0] = '\0';
    r->answer = "dropped";
    if (rc == ERR_LIMIT || len < 12 || (r->q.flags & 0x8000)) {
        /* nothing to answer: too large to be ours, no id to answer to, or not a question */
        snprintf(r->error, sizeof(r->error), "%s", e.msg);
        return 0;
    }
    if (rc == ERR_UNSUPPORTED && ((r->q.flags >> 11) & 0xF) != 0)
        return refuse(r, DNS_RCODE_NOTIMP, "notimp", 0, e.msg, out, size);
    if (rc != 0)
        return refuse(r, DNS_RCODE_FORMERR, "formerr", 0, e.msg, out, size);
    r->parsed = 1;
    if (r->q.qclass != DNS_CLASS_IN)
        return refuse(r, DNS_RCODE_REFUSED, "refused", 1, "a class other than IN", out, size);
    if (fail && fail(arg, &r->q)) {
        r->faulted = 1;
        r->answer = "nxdomain";
        n = dns_build_reply(&r->q, 1, DNS_RCODE_NXDOMAIN, NULL, 0, out, size);
        return n > 0 ? (size_t)n : 0;
    }
    inet_pton(AF_INET, DNSSTUB_ADDR, &a4);
    r->answer = r->q.qtype == DNS_TYPE_A ? "address" : "nodata";
    n = dns_build_reply(&r->q, 1, DNS_RCODE_NOERROR, &a4, sizeof(a4), out, size);
    return n > 0 ? (size_t)n : 0;
}

/* ---- the handler ---- */

struct dnsstub {
    struct ctl *ctl;
    int fd;
    struct event *ev;
    uint64_t queries, recorded;
    int warned;
};

/* as plan_decide sees a host: lowercase, without a trailing dot */
static void host_of(const struct dns_query *q, char *name)
{
    size_t len = strlen(q->name);

    for (size_t i = 0; i <= len; i++)
        name[i] = (char)tolower((unsigned char)q->name[i]);
    if (len > 1 && name[len - 1] == '.')
        name[len - 1] = '\0';
}

/* 1 when an egress.dns_fail fault's match.host matches name: only those queries reach the
 * plan, so that a query never counts for a fault that does not act on DNS. */
static int dns_fail_matches(struct ctl *ctl, const char *name)
{
    size_t n = plan_nfaults(ctl->plan);

    for (size_t i = 0; i < n; i++) {
        const char *pat = plan_fault_host(ctl->plan, i);
        const struct catalog_fault *row = catalog_fault_find(plan_fault_kind(ctl->plan, i));
        if (row && row->fid == CATALOG_F_EGRESS_DNS_FAIL && pat && plan_match_pattern(pat, name))
            return 1;
    }
    return 0;
}

static int stub_fail(void *arg, const struct dns_query *q)
{
    struct dnsstub *st = arg;
    struct ctl *ctl = st->ctl;
    char name[DNS_NAME_MAX + 1];
    struct plan_decision d;
    const struct catalog_fault *row;
    json_t *f, *detail;

    host_of(q, name);
    if (name[0] == '\0' || !dns_fail_matches(ctl, name))
        return 0;
    row = egress_decide(ctl, name, &d);
    if (row == NULL || row->fid != CATALOG_F_EGRESS_DNS_FAIL)
        return 0;
    f = ev_new(EVKIND_FAULT_INJECTED);
    detail = json_pack("{s:s,s:i}", "via", "dns", "qtype", (int)q->qtype);
    ev_set_str(f, "fault", d.kind);
    ev_set_int(f, "fault_index", (long long)d.fault_index);
    ev_set_int(f, "call_index", (long long)d.call_index);
    ev_set_str(f, "target", name);
    ev_set_str(f, "canary", plan_canary(ctl->plan));
    ev_set_str(f, "component", "controller-egress");
    ev_set_ref(f, "detail", detail);
    ctl_emit(ctl, f);
    json_decref(f);
    json_decref(detail);
    return 1;
}

static void record(struct dnsstub *st, const struct dnsstub_result *r)
{
    json_t *j;

    if (st->recorded >= DNSSTUB_EVENTS_MAX) {
        if (!st->warned)
            ctl_warn(st->ctl, "dns_events_capped",
                     "the DNS stub recorded %d queries and records no more (it still answers)",
                     DNSSTUB_EVENTS_MAX);
        st->warned = 1;
        return;
    }
    st->recorded++;
    j = ev_new(EVKIND_DNS_QUERY);
    ev_set_str(j, "name", r->parsed ? r->q.name : "?");
    if (r->parsed)
        ev_set_int(j, "qtype", r->q.qtype);
    ev_set_str(j, "answer", r->answer);
    if (strcmp(r->answer, "address") == 0)
        ev_set_str(j, "address", DNSSTUB_ADDR);
    if (r->faulted)
        ev_set_bool(j, "faulted", 1);
    if (r->error[0])
        ev_set_str(j, "error", r->error);
    ctl_emit(st->ctl, j);
    json_decref(j);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct dnsstub *st = arg;
    uint8_t in[DNS_MSG_MAX + 1], out[DNS_MSG_MAX];
    struct sockaddr_storage from;
    struct dnsstub_result r;

    (void)what;
    for (int i = 0; i < DNSSTUB_BURST && !st->ctl->stopping; i++) {
        socklen_t fromlen = sizeof(from);
        /* MSG_TRUNC: the datagram's real length, so an oversized one is seen as such */
        ssize_t n = recvfrom(fd, in, sizeof(in), MSG_TRUNC | MSG_DONTWAIT, (struct sockaddr *)&from,
                             &fromlen);
        size_t len, olen;
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                log_warn("dnsstub", "recvfrom: %s", strerror(errno));
            return;
        }
        len = (size_t)n;
        st->queries++;
        if (len > sizeof(in)) {
            memset(&r, 0, sizeof(r));
            r.answer = "dropped";
            snprintf(r.error, sizeof(r.error), "message of %zu bytes (at most %d)", len,
                     DNS_MSG_MAX);
            record(st, &r);
            continue;
        }
        olen = dnsstub_reply(in, len, stub_fail, st, out, sizeof(out), &r);
        if (olen > 0 && sendto(fd, out, olen, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&from,
                               fromlen) < 0)
            log_debug("dnsstub", "sendto: %s", strerror(errno));
        record(st, &r);
    }
}

static void *dnsstub_init(struct ctl *ctl, struct err *e)
{
    struct dnsstub *st = xcalloc(1, sizeof(*st));
    const struct controller_config *cfg = &ctl->cfg;

    st->ctl = ctl;
    st->fd = cfg->dns_listen_fd;
    if (st->fd < 0) {
        struct sockaddr_storage ss;
        int slen = (int)sizeof(ss);
        memset(&ss, 0, sizeof(ss));
        if (cfg->dns_listen == NULL || hsrv_parse_addr(cfg->dns_listen, &ss, &slen) != 0) {
            err_set(e, ERR_INVALID, "--dns-listen '%.64s': expected HOST:PORT", cfg->dns_listen);
            goto fail;
        }
        st->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (st->fd < 0 || bind(st->fd, (struct sockaddr *)&ss, (socklen_t)slen) != 0) {
            err_set(e, ERR_SYS, "cannot bind the DNS stub on '%.64s': %s", cfg->dns_listen,
                    strerror(errno));
            goto fail;
        }
    }
    evutil_make_socket_nonblocking(st->fd);
    st->ev = event_new(ctl->base, st->fd, EV_READ | EV_PERSIST, on_read, st);
    if (st->ev == NULL || event_add(st->ev, NULL) != 0) {
        err_set(e, ERR_SYS, "cannot create the DNS stub's event");
        goto fail;
    }
    log_info("dnsstub", "DNS stub serving (names answer %s)", DNSSTUB_ADDR);
    return st;
fail:
    if (st->ev)
        event_free(st->ev);
    if (st->fd >= 0)
        close(st->fd);
    free(st);
    return NULL;
}

static void dnsstub_stop(void *state)
{
    struct dnsstub *st = state;

    if (st->ev)
        event_del(st->ev);
}

static void dnsstub_free(void *state)
{
    struct dnsstub *st = state;

    if (st->ev)
        event_free(st->ev);
    if (st->fd >= 0)
        close(st->fd);
    free(st);
}

const struct ctl_handler dnsstub_handler = {
    .name = "dns",
    .prefix = NULL,
    .init = dnsstub_init,
    .handle = NULL,
    .stop = dnsstub_stop,
    .free = dnsstub_free,
    .in_flight = NULL,
    .side = NULL,
};
