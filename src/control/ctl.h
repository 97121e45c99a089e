/*
 * ctl: state shared by the controller's own files (controller.c, proxy.c, ctlapi.c). Internal
 * to src/control; other modules use controller.h.
 *
 * struct ctl is the core of one repetition: the loop, the server, the plan and its counters, the
 * events writer and its queue, the price table, the cost account and the abort flag, and the
 * handlers registered with it (struct ctl_handler). Everything runs on the loop's one thread.
 * The core's functions are in core.c; controller.c sets it up and registers the handlers.
 */
#ifndef FAULTLINE_CONTROL_CTL_H
#define FAULTLINE_CONTROL_CTL_H

#include <stdint.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <jansson.h>

#include "control/controller.h"
#include "control/server.h"
#include "events/events.h"
#include "codec/pricing.h"
#include "plan/plan.h"

/* Loop priorities: I/O and timers at the default (1); queued events at the lowest, so they
 * are written when no request is waiting, but never more than CTL_EVQ_MAX at a time. The
 * queue is also written before the server writes response bytes (hsrv_set_before_write),
 * so no response leaves ahead of the events that describe it. */
#define CTL_PRIORITIES 3
#define CTL_EVQ_MAX 64

struct ctl_handler;

/* A registered handler and the state its init returned. */
struct ctl_slot {
    const struct ctl_handler *h;
    void *state;
};

#define CTL_MAX_HANDLERS 8

/* The core: what every handler shares. Handler state (the proxy's upstreams and calls, ...)
 * lives in the handler, not here. */
struct ctl {
    struct controller_config cfg;
    struct event_base *base;
    struct evdns_base *dns;
    struct hsrv *srv;
    struct plan *plan;
    struct events_writer *ev;
    struct pricing_table *prices;
    char addr[80];
    int stopping;
    /* how the controller knows the agent is sandboxed (ctl_fault_allowed): "netns" (its
     * listener is in another network namespace), "declared" (--i-have-a-sandbox), or NULL:
     * it does not know, and refuses mutating faults */
    const char *sandbox;
    /* the cost account (ctl_cost_add, ctl_check_ceiling) */
    double cost_usd;
    double ceiling_usd; /* 0: none */
    int aborted;
    char abort_reason[64];
    uint64_t model_calls; /* model calls seen (ctl_next_model_call numbers their ids) */
    /* events queued by ctl_emit_soon, written by evq_ev */
    json_t *evq;
    struct event *evq_ev;
    /* the gate endpoint's policy and hold table (gatectl.h) */
    struct gatectl *gate;
    /* the handlers, in routing order (ctl_register) */
    struct ctl_slot handlers[CTL_MAX_HANDLERS];
    size_t nhandlers;
};

/*
 * A handler: one kind of request the controller serves (the model proxy, the control API; the
 * egress proxy and the abort monitor to come). Adding one is a file with its table and a
 * ctl_register call in controller.c; it keeps its own state and reaches the others only
 * through the core functions below.
 */
struct ctl_handler {
    const char *name;
    /* The target prefix it takes; NULL: any target (a last resort: register it last). */
    const char *prefix;
    /* Makes the handler's state from the core (c->cfg, c->base, c->dns, c->plan are set);
     * NULL with e set on failure (a start-up error: the controller does not serve). */
    void *(*init)(struct ctl *c, struct err *e);
    /* Answers one request, now or later (the request is the handler's until it ends it). */
    void (*handle)(void *state, struct hreq *r);
    /* Shutdown: ends what is in flight (clients cut, ends recorded). NULL: nothing to end. */
    void (*stop)(void *state);
    /* Frees the state, after stop and after the server is gone. NULL: nothing to free. */
    void (*free)(void *state);
    /* Requests in flight, for /_faultline/state. NULL: none kept. */
    size_t (*in_flight)(void *state);
    /* The body of the server's own refusal (413 and friends) of a request for this handler,
     * in the format its clients read; body holds a generic one. NULL: keep it. */
    void (*reject_body)(void *state, const struct http_head *h, int status, const char *msg,
                        struct buf *body);
    /* The injector it is ("controller-model", "controller-egress"): it records its own
     * plan_loaded at start-up, so a reader knows which side could fire the plan's faults.
     * NULL: it injects nothing (the control API). */
    const char *side;
};

/* Adds a handler after those registered (routing tries them in order) and runs its init.
 * 0, or a negative ERR_* with e set (init failed, or CTL_MAX_HANDLERS are registered). */
int ctl_register(struct ctl *c, const struct ctl_handler *h, struct err *e);
/* Hands the request to the first handler that takes its target; 404 when none does. */
void ctl_route(struct ctl *c, struct hreq *r);
/* The server refused a request: the handler that would have taken it shapes the body. */
void ctl_reject_body(struct ctl *c, const struct http_head *h, int status, const char *msg,
                     struct buf *body);
/* Shutdown: every handler's stop, in order. */
void ctl_stop_handlers(struct ctl *c);
/* Every handler's free, in reverse order; the registry is empty after. */
void ctl_free_handlers(struct ctl *c);
/* Requests in flight, summed over the handlers. */
size_t ctl_calls_in_flight(struct ctl *c);
/* The next model call's number (from 1). */
uint64_t ctl_next_model_call(struct ctl *c);
/* Adds a call's cost to the account; returns the total. */
double ctl_cost_add(struct ctl *c, double usd);
/* The safety rule (controller.h): 1 when the decided fault d may be applied: it is fail-safe,
 * or the controller knows a sandbox (c->sandbox). Otherwise 0, after a warning fault_refused
 * naming the fault and target (the caller lets the call go through unfaulted). */
int ctl_fault_allowed(struct ctl *c, const struct plan_decision *d, const char *target);
/* Once the cost passes the plan's ceiling: sets aborted and records the abort event (once). */
void ctl_check_ceiling(struct ctl *c);

/* Appends one event, built with ev_new (src/events/ev.h: its kind and the time it happened
 * are set; every field is one the events table lists, asserted here too), and logs a failure;
 * never fails the caller. ev is borrowed (the queue may keep a reference: do not change it
 * afterwards); NULL is logged and ignored. While events queued by ctl_emit_soon wait, the
 * event joins the queue behind them, so the file keeps the order of the calls. */
void ctl_emit(struct ctl *c, json_t *ev);
/* Queues the event, to be written once the loop has nothing more urgent to do (requests
 * and responses first), before the server next writes to a client, or at once when
 * CTL_EVQ_MAX wait. An event about a response is queued before the handler ends it. */
void ctl_emit_soon(struct ctl *c, json_t *ev);
/* Writes the queued events now (shutdown). */
void ctl_flush_events(struct ctl *c);
/* A warning event {code, message}. */
void ctl_warn(struct ctl *c, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Replies with a JSON body (borrowed) and status; hdrs extra header lines or NULL. */
void ctl_reply_json(struct hreq *r, int status, json_t *body, const char *hdrs);
/* Replies {"error":{"type":type,"message":msg}}. */
void ctl_reply_error(struct hreq *r, int status, const char *type, const char *msg);

/* The model proxy (proxy.c): any target (registered after the control API). */
extern const struct ctl_handler proxy_handler;
/* 1 when the model proxy has a handler for the catalog row fid (its controller-model faults). */
int proxy_fault_handled(enum catalog_fault_id fid);
/* The control API (ctlapi.c): targets under /_faultline/. */
extern const struct ctl_handler ctlapi_handler;

#endif
