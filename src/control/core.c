/*
 * core: the controller's shared core (ctl.h): the events file and its queue, JSON replies, the
 * handler registry and routing, and the cost account. Handlers reach each other only through
 * these functions.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl.h"
#include "events/ev.h"
#include "util/log.h"
#include "util/banned.h"

/* ---- events ---- */

static void append_now(struct ctl *c, json_t *ev)
{
    if (events_append(c->ev, ev) != 0)
        log_error("controller", "cannot append a '%s' event to '%s'",
                  json_string_value(json_object_get(ev, "kind")), c->cfg.events_path);
}

void ctl_flush_events(struct ctl *c)
{
    size_t i;
    json_t *ev;

    if (c->evq == NULL || json_array_size(c->evq) == 0)
        return;
    events_hold(c->ev); /* one write(2) for the lot */
    json_array_foreach(c->evq, i, ev) append_now(c, ev);
    json_array_clear(c->evq);
    if (events_release(c->ev) != 0)
        log_error("controller", "cannot append events to '%s'", c->cfg.events_path);
}

/* The checks every event of the controller's own passes (ev.h); 0 when it may be written. */
static int own_event(json_t *ev)
{
    if (ev == NULL) {
        log_error("controller", "an event could not be built");
        return ERR_NOMEM;
    }
    ev_assert_listed(ev);
    events_stamp(ev); /* built by ev_new: already stamped when it happened */
    return 0;
}

void ctl_emit(struct ctl *c, json_t *ev)
{
    if (own_event(ev) < 0)
        return;
    if (c->evq && json_array_size(c->evq) > 0)
        json_array_append(c->evq, ev);
    else
        append_now(c, ev);
}

void ctl_emit_soon(struct ctl *c, json_t *ev)
{
    if (own_event(ev) < 0)
        return;
    if (c->evq == NULL || c->evq_ev == NULL) {
        append_now(c, ev);
        return;
    }
    json_array_append(c->evq, ev);
    if (json_array_size(c->evq) >= CTL_EVQ_MAX)
        ctl_flush_events(c); /* a busy loop never idles: bound what waits */
    else if (json_array_size(c->evq) == 1)
        event_active(c->evq_ev, EV_TIMEOUT, 1);
}

void ctl_warn(struct ctl *c, const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    json_t *j;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_warn("controller", "%s: %s", code, msg);
    j = ev_new(EVKIND_WARNING);
    ev_set_str(j, "code", code);
    ev_set_str(j, "message", msg);
    ctl_emit(c, j);
    json_decref(j);
}

int ctl_fault_allowed(struct ctl *c, const struct plan_decision *d, const char *target)
{
    char msg[512];
    json_t *j;

    if (!d->inject || c->sandbox || !plan_fault_mutating(c->plan, d->fault_index))
        return 1;
    snprintf(msg, sizeof(msg),
             "mutating fault '%s' (fault %zu) refused on '%s': this controller does not know "
             "that the agent is sandboxed (its listener is in its own network namespace and it "
             "was not started with --i-have-a-sandbox); the call goes through unfaulted",
             d->kind, d->fault_index, target && *target ? target : "?");
    log_warn("controller", "fault_refused: %s", msg);
    j = ev_new(EVKIND_WARNING);
    ev_set_str(j, "code", "fault_refused");
    ev_set_str(j, "message", msg);
    ev_set_str(j, "fault", d->kind);
    ev_set_int(j, "fault_index", (long long)d->fault_index);
    ctl_emit(c, j);
    json_decref(j);
    return 0;
}

void ctl_reply_json(struct hreq *r, int status, json_t *body, const char *hdrs)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct buf h = BUF_INIT;

    buf_adds(&h, "Content-Type: application/json\r\nCache-Control: no-store\r\n");
    if (hdrs)
        buf_adds(&h, hdrs);
    if (text == NULL) {
        hreq_reply(r, 500, h.data, "{\"error\":{\"type\":\"api_error\",\"message\":\"internal\"}}",
                   51);
    } else {
        hreq_reply(r, status, h.data, text, strlen(text));
    }
    free(text);
    buf_release(&h);
}

void ctl_reply_error(struct hreq *r, int status, const char *type, const char *msg)
{
    json_t *j = json_pack("{s:{s:s,s:s}}", "error", "type", type, "message", msg);
    ctl_reply_json(r, status, j, NULL);
    json_decref(j);
}

/* ---- handlers ---- */

int ctl_register(struct ctl *c, const struct ctl_handler *h, struct err *e)
{
    void *state;

    if (c->nhandlers == CTL_MAX_HANDLERS)
        return err_set(e, ERR_INVALID, "controller: more than %d handlers", CTL_MAX_HANDLERS);
    state = h->init(c, e);
    if (state == NULL)
        return e->code ? e->code : err_set(e, ERR_SYS, "controller: cannot start %s", h->name);
    c->handlers[c->nhandlers].h = h;
    c->handlers[c->nhandlers].state = state;
    c->nhandlers++;
    return 0;
}

static struct ctl_slot *slot_for(struct ctl *c, const char *target)
{
    for (size_t i = 0; i < c->nhandlers; i++) {
        const char *p = c->handlers[i].h->prefix;
        if (c->handlers[i].h->handle == NULL)
            continue; /* its own listener */
        if (p == NULL || strncmp(target, p, strlen(p)) == 0)
            return &c->handlers[i];
    }
    return NULL;
}

void ctl_route(struct ctl *c, struct hreq *r)
{
    struct ctl_slot *s = slot_for(c, hreq_target(r));

    if (s == NULL) {
        ctl_reply_error(r, 404, "not_found_error", "no handler for this path");
        return;
    }
    s->h->handle(s->state, r);
}

void ctl_reject_body(struct ctl *c, const struct http_head *h, int status, const char *msg,
                     struct buf *body)
{
    struct ctl_slot *s = h && h->target ? slot_for(c, h->target) : NULL;

    if (s && s->h->reject_body)
        s->h->reject_body(s->state, h, status, msg, body);
}

void ctl_stop_handlers(struct ctl *c)
{
    for (size_t i = 0; i < c->nhandlers; i++)
        if (c->handlers[i].h->stop)
            c->handlers[i].h->stop(c->handlers[i].state);
}

void ctl_free_handlers(struct ctl *c)
{
    while (c->nhandlers > 0) {
        struct ctl_slot *s = &c->handlers[--c->nhandlers];
        if (s->h->free)
            s->h->free(s->state);
    }
}

size_t ctl_calls_in_flight(struct ctl *c)
{
    size_t n = 0;

    for (size_t i = 0; i < c->nhandlers; i++)
        if (c->handlers[i].h->in_flight)
            n += c->handlers[i].h->in_flight(c->handlers[i].state);
    return n;
}

/* ---- the cost account ---- */

uint64_t ctl_next_model_call(struct ctl *c)
{
    return ++c->model_calls;
}

double ctl_cost_add(struct ctl *c, double usd)
{
    c->cost_usd += usd;
    return c->cost_usd;
}

void ctl_check_ceiling(struct ctl *c)
{
    char detail[160];
    json_t *ev;

    if (c->ceiling_usd <= 0 || c->cost_usd <= c->ceiling_usd || c->aborted)
        return;
    c->aborted = 1;
    snprintf(c->abort_reason, sizeof(c->abort_reason), "cost_usd_above");
    snprintf(detail, sizeof(detail), "summed model cost $%.4f passed the ceiling $%g", c->cost_usd,
             c->ceiling_usd);
    ev = ev_new(EVKIND_ABORT);
    ev_set_str(ev, "reason", "cost_usd_above");
    ev_set_num(ev, "value", c->cost_usd);
    ev_set_num(ev, "limit", c->ceiling_usd);
    ev_set_str(ev, "detail", detail);
    ctl_emit(c, ev);
    json_decref(ev);
    log_warn("proxy", "%s; further model calls are refused", detail);
}
