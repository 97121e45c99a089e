/*
 * controller: sets up one repetition's controller (plan, events file, price table, the core's
 * handlers, listening socket), serves until SIGTERM/SIGINT, and takes it all down again. The
 * core's functions are in core.c; the handlers (ctlapi.c, proxy.c) register in controller_run.
 *
 * Start-up order matters to the runner: the plan is loaded and checked, whether the agent is
 * known to be sandboxed settled (controller.h, the safety rule), the events file opened and
 * each injecting side's plan_loaded recorded, the socket bound, and only then is the ready file
 * written (atomically: a reader sees the whole address or no file). Shutdown: stop accepting, end
 * every call in flight (every handler's stop: recorded as such, clients cut), write the queued
 * events (ctl_emit_soon), close the connections and free everything.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <linux/sockios.h>

#include <event2/dns.h>
#include <event2/event.h>

#include "control/ctl.h"
#include "control/egress.h"
#include "control/dnsstub.h"
#include "control/transparent.h"
#include "control/hostport.h"
#include "control/intercept.h"
#include "control/gatectl.h"
#include "events/ev.h"
#include "experiment/catalog.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/banned.h"

/* The defaults, stated once: applied to what is unset (controller_config_init fills them in,
 * so `faultline proxy --help` shows them from the values; controller_run applies them again
 * for a caller that cleared a field). */
static void config_defaults(struct controller_config *cfg)
{
    if (cfg->listen_addr == NULL)
        cfg->listen_addr = "127.0.0.1:0";
    if (cfg->upstream_anthropic == NULL)
        cfg->upstream_anthropic = "https://api.anthropic.com";
    if (cfg->upstream_openai == NULL)
        cfg->upstream_openai = "https://api.openai.com";
    if (cfg->max_body == 0)
        cfg->max_body = (size_t)32 << 20;
    if (cfg->max_conns == 0)
        cfg->max_conns = 4096;
    if (cfg->retries < 0)
        cfg->retries = 2;
    if (cfg->retry_base_ms <= 0)
        cfg->retry_base_ms = 500;
    if (cfg->retry_max_ms <= 0)
        cfg->retry_max_ms = 8000;
    if (cfg->connect_timeout_ms <= 0)
        cfg->connect_timeout_ms = 10000;
    if (cfg->first_byte_timeout_ms <= 0)
        cfg->first_byte_timeout_ms = 600000;
    if (cfg->idle_timeout_ms <= 0)
        cfg->idle_timeout_ms = 300000;
    if (cfg->client_timeout_ms <= 0)
        cfg->client_timeout_ms = 60000;
}

void controller_config_init(struct controller_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->listen_fd = -1;
    cfg->egress_listen_fd = -1;
    cfg->dns_listen_fd = -1;
    cfg->transparent_http_fd = cfg->transparent_tls_fd = -1;
    cfg->retries = -1;
    config_defaults(cfg);
}

/* ---- server hooks ---- */

static void evq_cb(evutil_socket_t fd, short what, void *arg)
{
    ctl_flush_events(arg);
}

/* The server is about to write response bytes: the queued events describing them go first,
 * so a SIGKILL never leaves a response the agent received without its record. */
static void before_write(void *arg)
{
    ctl_flush_events(arg);
}

static void on_request(struct hreq *r, void *arg)
{
    ctl_route(arg, r);
}

static void on_reject(void *arg, const struct http_head *h, int status, const char *type,
                      const char *msg, struct buf *headers, struct buf *body)
{
    struct ctl *c = arg;
    json_t *j = ev_new(EVKIND_WARNING);

    ev_set_str(j, "code", "request_rejected");
    ev_set_str(j, "message", msg);
    ev_set_int(j, "status", status);
    if (h && h->target)
        ev_set_strn(j, "path", h->target, strcspn(h->target, "?"));
    ctl_emit(c, j);
    json_decref(j);
    ctl_reject_body(c, h, status, msg, body);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct ctl *c = arg;

    if (c->stopping)
        return;
    c->stopping = 1;
    log_info("controller", "signal %d: stopping", (int)sig);
    hsrv_stop_accepting(c->srv);
    ctl_stop_handlers(c);
    intercept_stop(c->icpt);
    ctl_flush_events(c);
    event_base_loopbreak(c->base);
}

/* ---- setup ---- */

/* The listener's network namespace is not the controller's own: the runner made it inside the
 * sandbox's namespace (sandbox_open), so every client that reaches it is in there. SIOCGSKNS
 * needs CAP_NET_ADMIN over the socket's namespace, which the runner's user holds over the
 * sandbox it made; any failure to tell counts as "not known". */
static int listener_in_other_netns(int fd)
{
    struct stat own, sock;
    int nsfd = ioctl(fd, SIOCGSKNS);
    int rc;

    if (nsfd < 0) {
        log_info("controller", "cannot read the listener's network namespace: %s", strerror(errno));
        return 0;
    }
    rc = fstat(nsfd, &sock) == 0 && stat("/proc/self/ns/net", &own) == 0 &&
         (sock.st_dev != own.st_dev || sock.st_ino != own.st_ino);
    close(nsfd);
    return rc;
}

/* One plan_loaded per injecting side (the handlers' side): each says for itself that it can
 * fire the plan's faults, so a reader can tell which could not. */
static void emit_plan_loaded(struct ctl *c, const char *side)
{
    json_t *inj = json_array();
    unsigned bits = plan_injectors(c->plan);
    json_t *pj = plan_to_json(c->plan);
    const char *hash =
        json_string_value(json_object_get(json_object_get(pj, "experiment"), "hash"));
    json_t *j;

    for (unsigned b = 1; b && b <= bits; b <<= 1)
        if ((bits & b) && plan_injector_name(b))
            json_array_append_new(inj, json_string(plan_injector_name(b)));
    j = ev_new(EVKIND_PLAN_LOADED);
    ev_set_str(j, "component", side);
    ev_set_str(j, "plan", c->cfg.plan_path);
    ev_set_bool(j, "faulted", plan_faulted(c->plan));
    ev_set_int(j, "faults", (long long)plan_nfaults(c->plan));
    ev_set(j, "injectors", inj);
    ev_set_str(j, "canary", plan_canary(c->plan));
    ev_set_str(j, "listen", c->addr);
    ev_set_str(j, "sandbox", c->sandbox ? c->sandbox : "none");
    ev_set_str(j, "experiment", hash);
    if (strcmp(side, "controller-egress") == 0 && c->cfg.egress_allow) {
        size_t n = 0;
        while (c->cfg.egress_allow[n])
            n++;
        ev_set_int(j, "egress_allow", (long long)n); /* the scorer's no_policy_hits reads it */
    }
    ctl_emit(c, j);
    json_decref(j);
    json_decref(pj);
}

static void ctl_release(struct ctl *c)
{
    if (c->ev)
        ctl_flush_events(c);
    hsrv_free(c->srv);
    intercept_free(c->icpt);
    ctl_free_handlers(c);
    if (c->dns)
        evdns_base_free(c->dns, 0);
    if (c->ev)
        ctl_flush_events(c);
    events_close(c->ev);
    json_decref(c->evq);
    if (c->evq_ev)
        event_free(c->evq_ev);
    plan_free(c->plan);
    gatectl_free(c->gate);
    pricing_free(c->prices);
    if (c->base)
        event_base_free(c->base);
}

int controller_run(const struct controller_config *cfg_in, struct err *e)
{
    struct ctl c;
    struct hsrv_config scfg;
    struct event *sigterm = NULL, *sigint = NULL;
    char ready[96];
    int rc = 0;

    memset(&c, 0, sizeof(c));
    c.cfg = *cfg_in;
    config_defaults(&c.cfg);
    if (c.cfg.plan_path == NULL || c.cfg.events_path == NULL)
        return err_set(e, ERR_INVALID, "--plan and --events are required");
    signal(SIGPIPE, SIG_IGN);

    c.plan = plan_load(c.cfg.plan_path, e);
    if (c.plan == NULL) {
        rc = e->code ? e->code : ERR_INVALID;
        goto out;
    }
    c.ceiling_usd = plan_cost_ceiling(c.plan);
    c.prices = pricing_new();
    if (c.cfg.prices_file && (rc = pricing_load_file(c.prices, c.cfg.prices_file, e)) != 0)
        goto out;
    c.gate = gatectl_new(c.cfg.policy_paths, c.cfg.npolicy_paths, e);
    if (c.gate == NULL) {
        rc = e->code ? e->code : ERR_INVALID;
        goto out;
    }

    c.base = event_base_new();
    if (c.base == NULL || event_base_priority_init(c.base, CTL_PRIORITIES) != 0) {
        rc = err_set(e, ERR_SYS, "cannot create the event loop");
        goto out;
    }
    c.dns = evdns_base_new(c.base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
    if (c.dns == NULL)
        c.dns = evdns_base_new(c.base, 0); /* no resolv.conf: numeric hosts and /etc/hosts */
    if (c.dns)
        evdns_base_load_hosts(c.dns, NULL);

    /* Routing order: the control API's prefix first, the model proxy takes the rest. */
    if ((rc = ctl_register(&c, &ctlapi_handler, e)) != 0 ||
        (rc = ctl_register(&c, &proxy_handler, e)) != 0)
        goto out;
    if ((c.icpt = intercept_new(&c, e)) == NULL) {
        rc = e->code ? e->code : ERR_SYS;
        goto out;
    }
    if ((c.cfg.egress_listen || c.cfg.egress_listen_fd >= 0) &&
        (rc = ctl_register(&c, &egress_handler, e)) != 0)
        goto out;
    if ((c.cfg.dns_listen || c.cfg.dns_listen_fd >= 0) &&
        (rc = ctl_register(&c, &dnsstub_handler, e)) != 0)
        goto out;
    if ((c.cfg.transparent_http || c.cfg.transparent_http_fd >= 0 || c.cfg.transparent_tls ||
         c.cfg.transparent_tls_fd >= 0) &&
        (rc = ctl_register(&c, &transparent_handler, e)) != 0)
        goto out;
    if (c.cfg.nhost_ports && (rc = ctl_register(&c, &hostport_handler, e)) != 0)
        goto out;

    memset(&scfg, 0, sizeof(scfg));
    scfg.max_body = c.cfg.max_body;
    scfg.max_conns = c.cfg.max_conns;
    scfg.request_timeout_ms = c.cfg.client_timeout_ms;
    scfg.idle_timeout_ms = c.cfg.client_timeout_ms;
    scfg.write_timeout_ms = c.cfg.client_timeout_ms;
    c.srv = hsrv_new(c.base, &scfg, on_request, on_reject, &c);
    if (c.srv == NULL) {
        rc = err_set(e, ERR_SYS, "cannot create the server");
        goto out;
    }
    if (c.cfg.listen_fd >= 0 && listener_in_other_netns(c.cfg.listen_fd))
        c.sandbox = "netns";
    else if (c.cfg.i_have_a_sandbox)
        c.sandbox = "declared";
    gatectl_allow_mutating(c.gate, c.sandbox != NULL);
    if (c.cfg.listen_fd >= 0)
        rc = hsrv_listen_fd(c.srv, c.cfg.listen_fd, e);
    else
        rc = hsrv_listen(c.srv, c.cfg.listen_addr, e);
    if (rc != 0)
        goto out;
    if (hsrv_address(c.srv, c.addr, sizeof(c.addr)) != 0)
        snprintf(c.addr, sizeof(c.addr), "?");

    c.ev = events_open(c.cfg.events_path, plan_run_id(c.plan), "controller", e);
    if (c.ev == NULL) {
        rc = e->code ? e->code : ERR_IO;
        goto out;
    }
    for (size_t i = 0; i < c.nhandlers; i++)
        if (c.handlers[i].h->side)
            emit_plan_loaded(&c, c.handlers[i].h->side);
    /* given a policy, or a plan with gate faults, the gate endpoint is the run's gate */
    if (gatectl_has_policy(c.gate) || (plan_injectors(c.plan) & CATALOG_INJ_GATE))
        emit_plan_loaded(&c, "gate");
    c.evq = json_array();
    c.evq_ev = event_new(c.base, -1, 0, evq_cb, &c);
    if (c.evq_ev)
        event_priority_set(c.evq_ev, CTL_PRIORITIES - 1); /* when nothing else is ready */
    hsrv_set_before_write(c.srv, before_write, &c);

    sigterm = evsignal_new(c.base, SIGTERM, on_signal, &c);
    sigint = evsignal_new(c.base, SIGINT, on_signal, &c);
    if (sigterm == NULL || sigint == NULL || evsignal_add(sigterm, NULL) != 0 ||
        evsignal_add(sigint, NULL) != 0) {
        rc = err_set(e, ERR_SYS, "cannot install signal handlers");
        goto out;
    }
    if (c.cfg.ready_file) {
        int n = snprintf(ready, sizeof(ready), "%s\n", c.addr);
        if ((rc = fs_write_file(c.cfg.ready_file, ready, (size_t)n, e)) != 0)
            goto out;
    }
    log_info("controller", "serving on %s (run %s, %zu faults, sandbox %s)", c.addr,
             plan_run_id(c.plan), plan_nfaults(c.plan), c.sandbox ? c.sandbox : "not known");

    event_base_dispatch(c.base);
    log_info("controller", "stopped; model cost $%.6f over %llu calls", c.cost_usd,
             (unsigned long long)c.model_calls);
out:
    ctl_stop_handlers(&c);
    intercept_stop(c.icpt);
    if (sigterm)
        event_free(sigterm);
    if (sigint)
        event_free(sigint);
    ctl_release(&c);
    return rc;
}
