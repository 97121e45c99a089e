/*
 * ctl: state shared by the controller's own files (controller.c, proxy.c, ctlapi.c). Internal
 * to src/control; other modules use controller.h.
 *
 * struct ctl is the repetition: the loop, the server, the upstreams, the plan and its counters,
 * the events writer, the price table, the cost so far and the abort flag. Everything runs on
 * the loop's one thread.
 */
#ifndef FAULTLINE_CONTROL_CTL_H
#define FAULTLINE_CONTROL_CTL_H

#include <stdint.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <jansson.h>

#include "control/controller.h"
#include "control/server.h"
#include "control/upstream.h"
#include "events/events.h"
#include "codec/pricing.h"
#include "plan/plan.h"

#define CTL_MAX_SECRETS 16
/* Loop priorities: I/O and timers at the default (1); queued events at the lowest, so they
 * are written when no request is waiting, but never more than CTL_EVQ_MAX at a time. The
 * queue is also written before the server writes response bytes (hsrv_set_before_write),
 * so no response leaves ahead of the events that describe it. */
#define CTL_PRIORITIES 3
#define CTL_EVQ_MAX 64

struct pcall;

struct ctl {
    struct controller_config cfg;
    struct event_base *base;
    struct evdns_base *dns;
    struct hsrv *srv;
    struct upstream *up_anthropic, *up_openai;
    struct plan *plan;
    struct events_writer *ev;
    struct pricing_table *prices;
    char addr[80];
    int stopping;
    /* accounting */
    double cost_usd;
    double ceiling_usd; /* 0: none */
    int aborted;
    char abort_reason[64];
    uint64_t model_calls;  /* model calls seen (numbers their ids) */
    uint64_t next_pass_id; /* pass-through calls */
    /* calls in flight */
    struct pcall *calls;
    size_t ncalls;
    /* upstream keys seen, registered with the events writer for redaction */
    char *secrets[CTL_MAX_SECRETS];
    size_t nsecrets;
    /* events queued by ctl_emit_soon, written by evq_ev */
    json_t *evq;
    struct event *evq_ev;
    /* unknown model names already warned about (cost_unknown), bounded */
    char *unknown_models[16];
    size_t nunknown;
};

/* Appends one event {"kind": kind, ...fields} and logs a failure; never fails the caller.
 * fields is borrowed but gets a "kind" member (callers pass objects built for the event).
 * While events queued by ctl_emit_soon wait, the event joins the queue behind them, so the
 * file keeps the order of the calls. */
void ctl_emit(struct ctl *c, const char *kind, json_t *fields);
/* Queues the event, to be written once the loop has nothing more urgent to do (requests
 * and responses first), before the server next writes to a client, or at once when
 * CTL_EVQ_MAX wait. An event about a response is queued before the handler ends it. */
void ctl_emit_soon(struct ctl *c, const char *kind, json_t *fields);
/* Writes the queued events now (shutdown). */
void ctl_flush_events(struct ctl *c);
/* A warning event {code, message}. */
void ctl_warn(struct ctl *c, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Replies with a JSON body (borrowed) and status; hdrs extra header lines or NULL. */
void ctl_reply_json(struct hreq *r, int status, json_t *body, const char *hdrs);
/* Replies {"error":{"type":type,"message":msg}}. */
void ctl_reply_error(struct hreq *r, int status, const char *type, const char *msg);

/* The model proxy (proxy.c): handles a request for any path outside /_faultline/. */
void proxy_handle(struct ctl *c, struct hreq *r);
/* 1 when the model proxy has a handler for the catalog row fid (its controller-model faults). */
int proxy_fault_handled(enum catalog_fault_id fid);
/* Ends every call in flight (shutdown): clients are cut, upstream requests cancelled, each
 * call's end recorded. */
void proxy_stop_all(struct ctl *c);
/* The reject hook's provider-aware error body (for 413 and friends on a model API path). */
void proxy_reject_body(struct ctl *c, const struct http_head *h, int status, const char *msg,
                       struct buf *body);

/* The control API (ctlapi.c): handles a request under /_faultline/. */
void ctlapi_handle(struct ctl *c, struct hreq *r);

#endif
