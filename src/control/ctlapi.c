/*
 * ctlapi: the control API under /_faultline/ (docs/control-api.md), for the components inside
 * the sandbox: health, decide (the one place that holds the repetition's fault counters, and
 * where the safety rule refuses mutating faults when no sandbox is known: ctl_fault_allowed),
 * events (appended to the one events file, seq assigned here), and state (cost, counters,
 * abort flag), and gate (gatectl.c: the policy and the gate faults on one tool call). Every body
 * is JSON; every error is {"error":{"type","message"}}.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "control/ctl.h"
#include "control/gatectl.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/text.h"
#include "util/banned.h"

#define API_BODY_MAX ((size_t)1 << 20)
#define API_EVENTS_MAX 1000
#define API_SRC_MAX 64
#define API_T_FUTURE_MS (60 * 60 * 1000) /* a posted t may be at most an hour ahead */

static void api_health(struct ctl *ctl, struct hreq *r)
{
    json_t *j = json_pack("{s:b,s:s,s:b,s:b}", "ok", 1, "run", plan_run_id(ctl->plan),
                          "plan_loaded", 1, "mutating_faults", ctl->sandbox != NULL);
    ctl_reply_json(r, 200, j, NULL);
    json_decref(j);
}

static json_t *counters_json(struct ctl *ctl)
{
    json_t *a = json_array();

    for (size_t i = 0; i < plan_nfaults(ctl->plan); i++) {
        uint64_t matched = 0, injected = 0;
        plan_fault_counters(ctl->plan, i, &matched, &injected);
        json_array_append_new(a, json_pack("{s:I,s:s,s:I,s:I}", "fault_index", (json_int_t)i,
                                           "kind", plan_fault_kind(ctl->plan, i), "matched",
                                           (json_int_t)matched, "injected", (json_int_t)injected));
    }
    return a;
}

static void api_state(struct ctl *ctl, struct hreq *r)
{
    json_t *j =
        json_pack("{s:s,s:f,s:b,s:o,s:I,s:o,s:I}", "run", plan_run_id(ctl->plan), "cost_usd",
                  ctl->cost_usd, "aborted", ctl->aborted, "abort_reason",
                  ctl->aborted ? json_string(ctl->abort_reason) : json_null(), "model_calls",
                  (json_int_t)ctl->model_calls, "counters", counters_json(ctl), "calls_in_flight",
                  (json_int_t)ctl_calls_in_flight(ctl));

    if (j)
        json_object_set_new(j, "cost_ceiling_usd",
                            ctl->ceiling_usd > 0 ? json_real(ctl->ceiling_usd) : json_null());
    ctl_reply_json(r, 200, j, NULL);
    json_decref(j);
}

/* Parses the request body as JSON; replies 400/413 and returns NULL when it is not. */
static json_t *api_body(struct hreq *r)
{
    size_t len;
    const char *body = hreq_body(r, &len);
    json_error_t je;
    json_t *j;
    char msg[300];

    if (len > API_BODY_MAX) {
        ctl_reply_error(r, 413, "request_too_large", "control API bodies are limited to 1 MiB");
        return NULL;
    }
    j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (j == NULL) {
        snprintf(msg, sizeof(msg), "invalid JSON at line %d column %d: %s", je.line, je.column,
                 JE_TEXT(je));
        ctl_reply_error(r, 400, "invalid_request_error", msg);
    }
    return j;
}

/* A string member, or NULL when absent or null; *bad set when present with another type. */
static const char *opt_string(json_t *o, const char *name, int *bad)
{
    json_t *v = json_object_get(o, name);

    if (v == NULL || json_is_null(v))
        return NULL;
    if (!json_is_string(v)) {
        *bad = 1;
        return NULL;
    }
    return json_string_value(v);
}

static void api_decide(struct ctl *ctl, struct hreq *r)
{
    json_t *j = api_body(r);
    struct plan_call call;
    struct plan_decision d;
    const char *comp;
    int bad = 0;
    json_t *out, *sc;
    char key[256];

    if (j == NULL)
        return;
    memset(&call, 0, sizeof(call));
    comp = json_is_object(j) ? opt_string(j, "component", &bad) : NULL;
    if (!json_is_object(j) || comp == NULL || (call.component = plan_injector_parse(comp)) == 0) {
        ctl_reply_error(r, 400, "invalid_request_error",
                        "decide needs {\"component\": one of controller-model, "
                        "controller-egress, mcp, gate, world, ...}");
        goto done;
    }
    call.tool = opt_string(j, "tool", &bad);
    call.server = opt_string(j, "server", &bad);
    call.host = opt_string(j, "host", &bad);
    call.model = opt_string(j, "model", &bad);
    call.args = json_object_get(j, "args");
    if (call.args && json_is_null(call.args))
        call.args = NULL;
    if (bad) {
        ctl_reply_error(r, 400, "invalid_request_error",
                        "tool, server, host and model must be strings or null");
        goto done;
    }
    sc = json_object_get(j, "session_call");
    if (sc != NULL && !json_is_null(sc) && (!json_is_integer(sc) || json_integer_value(sc) < 0)) {
        ctl_reply_error(r, 400, "invalid_request_error",
                        "session_call must be an integer >= 0 or null");
        goto done;
    }
    call.session_call = json_is_integer(sc) ? (uint64_t)json_integer_value(sc) : 0;
    if (plan_decide(ctl->plan, &call, &d) != 0) {
        ctl_reply_error(r, 400, "invalid_request_error", "the plan cannot decide this call");
        goto done;
    }
    if (d.inject)
        plan_call_key(&call, key, sizeof(key));
    if (d.inject && !ctl_fault_allowed(ctl, &d, key)) {
        /* the safety rule: no sandbox known, so a mutating fault is not answered */
        out = json_pack("{s:b,s:s,s:s}", "inject", 0, "canary", plan_canary(ctl->plan), "refused",
                        d.kind);
    } else if (d.inject) {
        out =
            json_pack("{s:b,s:I,s:s,s:O,s:I,s:s,s:s}", "inject", 1, "fault_index",
                      (json_int_t)d.fault_index, "kind", d.kind, "options", d.options, "call_index",
                      (json_int_t)d.call_index, "canary", plan_canary(ctl->plan), "target", key);
        log_info("ctlapi", "decide: %s injects %s into %s", comp, d.kind, key);
    } else {
        out = json_pack("{s:b,s:s}", "inject", 0, "canary", plan_canary(ctl->plan));
    }
    /* every answer repeats the controller's word on mutating faults (health's): a component
     * that decides some faults itself follows the latest */
    if (out)
        json_object_set_new(out, "mutating_faults", json_boolean(ctl->sandbox != NULL));
    ctl_reply_json(r, 200, out, NULL);
    json_decref(out);
done:
    json_decref(j);
}

/* Checks event i of a POST /_faultline/events batch; 0, or ERR_INVALID with the reason in msg. What
 * comes through the API is what a process inside the sandbox claims: it may not speak as the
 * controller or the runner (they write their own events), nor date itself before the epoch or
 * far ahead (docs/control-api.md, "Threat model"). */
static int api_event_check(json_t *ev, size_t i, int64_t now, char *msg, size_t n)
{
    json_t *src, *t;

    if (!json_is_object(ev) || !json_is_string(json_object_get(ev, "kind")) ||
        json_string_length(json_object_get(ev, "kind")) == 0) {
        snprintf(msg, n, "event %zu is not an object with a string kind", i);
        return ERR_INVALID;
    }
    src = json_object_get(ev, "src");
    if (src && !json_is_null(src)) {
        const char *v = json_string_value(src);
        if (v == NULL || json_string_length(src) == 0 || json_string_length(src) > API_SRC_MAX) {
            snprintf(msg, n, "event %zu: src must be a non-empty string of at most %d bytes", i,
                     API_SRC_MAX);
            return ERR_INVALID;
        }
        if (strcasecmp(v, "controller") == 0 || strcasecmp(v, "runner") == 0) {
            snprintf(msg, n,
                     "event %zu: src '%s' is reserved: the %s writes its own events, they are "
                     "not posted",
                     i, strcasecmp(v, "runner") == 0 ? "runner" : "controller",
                     strcasecmp(v, "runner") == 0 ? "runner" : "controller");
            return ERR_INVALID;
        }
    }
    t = json_object_get(ev, "t");
    if (t && !json_is_null(t)) {
        if (!json_is_integer(t) || json_integer_value(t) < 0) {
            snprintf(msg, n, "event %zu: t must be an integer >= 0 (milliseconds since the epoch)",
                     i);
            return ERR_INVALID;
        }
        if (json_integer_value(t) > now + API_T_FUTURE_MS) {
            snprintf(msg, n, "event %zu: t is more than an hour in the future", i);
            return ERR_INVALID;
        }
    }
    t = json_object_get(ev, "t_us");
    if (t && !json_is_null(t)) {
        if (!json_is_integer(t) || json_integer_value(t) < 0) {
            snprintf(msg, n,
                     "event %zu: t_us must be an integer >= 0 (microseconds since the epoch)", i);
            return ERR_INVALID;
        }
        if (json_integer_value(t) / 1000 > now + API_T_FUTURE_MS) {
            snprintf(msg, n, "event %zu: t_us is more than an hour in the future", i);
            return ERR_INVALID;
        }
    }
    return 0;
}

static void api_events(struct ctl *ctl, struct hreq *r)
{
    json_t *j = api_body(r), *list, *ev, *out;
    size_t i, n = 0;
    int64_t now;

    if (j == NULL)
        return;
    if (json_is_array(j)) {
        list = j;
        json_incref(list);
    } else {
        list = json_array();
        json_array_append(list, j);
    }
    if (json_array_size(list) > API_EVENTS_MAX) {
        ctl_reply_error(r, 413, "request_too_large", "at most 1000 events per request");
        goto done;
    }
    now = time_now_ms();
    json_array_foreach(list, i, ev)
    {
        char msg[160];
        if (api_event_check(ev, i, now, msg, sizeof(msg)) != 0) {
            /* All or nothing: a batch with one refused event appends none. */
            log_info("ctlapi", "refused posted events: %s", msg);
            ctl_reply_error(r, 400, "invalid_request_error", msg);
            goto done;
        }
    }
    ctl_flush_events(ctl); /* the controller's own events first: the file keeps call order */
    json_array_foreach(list, i, ev)
    {
        json_t *copy = json_copy(ev);
        if (copy == NULL)
            continue;
        json_object_del(copy, "seq"); /* the controller orders the file */
        json_object_del(copy, "run");
        if (!json_is_string(json_object_get(copy, "src")))
            json_object_set_new(copy, "src", json_string("agent"));
        if (json_is_null(json_object_get(copy, "t")))
            json_object_del(copy, "t"); /* stamped by the writer */
        if (json_is_null(json_object_get(copy, "t_us")))
            json_object_del(copy, "t_us");
        else if (json_is_integer(json_object_get(copy, "t_us")))
            json_object_del(copy, "t"); /* one time: t is t_us's, not a second claim */
        /* Marks what was posted rather than observed by the controller (the scorer trusts
         * the latter); set last, so a posted "via" cannot hide it. */
        json_object_set_new(copy, "via", json_string("control_api"));
        if (events_append(ctl->ev, copy) == 0)
            n++;
        else
            log_error("ctlapi", "cannot append an event to '%s'", ctl->cfg.events_path);
        json_decref(copy);
    }
    out = json_pack("{s:I}", "appended", (json_int_t)n);
    ctl_reply_json(r, 200, out, NULL);
    json_decref(out);
done:
    json_decref(list);
    json_decref(j);
}

/* POST /_faultline/gate: gatectl.c decides (the policy, the hold table, the gate faults). */
static void api_gate(struct ctl *ctl, struct hreq *r)
{
    json_t *j = api_body(r);

    if (j == NULL)
        return;
    gatectl_serve(ctl->gate, ctl, r, j);
    json_decref(j);
}

static void ctlapi_handle(void *state, struct hreq *r)
{
    struct ctl *ctl = state;
    const char *target = hreq_target(r);
    const char *method = hreq_method(r);
    size_t plen = strcspn(target, "?");
    static const struct {
        const char *path, *method;
        void (*fn)(struct ctl *, struct hreq *);
    } routes[] = {
        {"/_faultline/health", "GET", api_health},  {"/_faultline/state", "GET", api_state},
        {"/_faultline/decide", "POST", api_decide}, {"/_faultline/events", "POST", api_events},
        {"/_faultline/gate", "POST", api_gate},
    };

    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        if (strlen(routes[i].path) != plen || strncmp(routes[i].path, target, plen) != 0)
            continue;
        if (strcmp(method, routes[i].method) != 0 &&
            !(strcmp(method, "HEAD") == 0 && strcmp(routes[i].method, "GET") == 0)) {
            char msg[96];
            snprintf(msg, sizeof(msg), "%s takes %s", routes[i].path, routes[i].method);
            ctl_reply_error(r, 405, "invalid_request_error", msg);
            return;
        }
        routes[i].fn(ctl, r);
        return;
    }
    ctl_reply_error(r, 404, "not_found_error", "no such control API endpoint");
}

/* No state of its own: the plan, the events file and the account are the core's. */
static void *ctlapi_init(struct ctl *c, struct err *e)
{
    return c;
}

const struct ctl_handler ctlapi_handler = {
    .name = "control API",
    .prefix = "/_faultline/",
    .init = ctlapi_init,
    .handle = ctlapi_handle,
};
