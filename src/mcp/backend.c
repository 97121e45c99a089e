/*
 * backend: see backend.h.
 *
 * Both modes queue events (a JSON array) and write them in mcp_backend_flush, which the relay
 * calls once it has written what the client and the server were waiting for, so recording stays
 * off the round trip; events get "t" when queued, so their time is when the shim saw them.
 * Controller mode posts the queue in one request (adding "src"); a post that failed before
 * sending keeps the queue for the next flush, one that failed after sending started drops its
 * batch (the controller may have recorded it: a second copy would show calls twice); past
 * QUEUE_MAX events the oldest are dropped; drops are counted (a warning says how many). Standalone
 * mode appends them through the events writer (one write(2) a line).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/client.h"
#include "events/events.h"
#include "experiment/catalog.h"
#include "mcp/backend.h"
#include "plan/plan.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/num.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define QUEUE_MAX 10000
#define POST_MAX 1000
#define PLAN_FILE_MAX (16u << 20)

struct mcp_backend_ctx {
    /* standalone */
    struct plan *plan;
    struct events_writer *ew;
    /* controller */
    struct control_client *cc;
    json_t *queue;
    size_t dropped;
    int post_failures;
    char *canary;
    /* both: the plan's JSON when known (for list-time faults) */
    json_t *plan_json;
    uint64_t seed;
};

/* ---- standalone ---- */

static int sa_decide(void *ctx, const struct plan_call *call, struct mcp_decision *out)
{
    struct mcp_backend_ctx *x = ctx;
    struct plan_decision d;

    memset(out, 0, sizeof(*out));
    if (x->plan == NULL)
        return 0;
    if (plan_decide(x->plan, call, &d) < 0)
        return ERR_INVALID;
    out->inject = d.inject;
    if (!d.inject)
        return 0;
    out->fault_index = d.fault_index;
    snprintf(out->kind, sizeof(out->kind), "%s", d.kind ? d.kind : "");
    out->options = json_incref(d.options);
    out->call_index = d.call_index;
    out->safety = plan_fault_mutating(x->plan, d.fault_index);
    return 0;
}

/* Standalone events are stamped now and written from the idle hook, after the relay has sent
 * what it had for the client and the server: writing them is off the round trip. */
static void sa_emit(void *ctx, json_t *ev)
{
    struct mcp_backend_ctx *x = ctx;

    /* The session hands over ev and never touches it again (session.h): stamp it, keep it. */
    if (!json_is_integer(json_object_get(ev, "t")))
        json_object_set_new(ev, "t", json_integer(time_now_ms()));
    json_array_append(x->queue, ev);
    if (json_array_size(x->queue) >= POST_MAX)
        mcp_backend_flush(x);
}

static void sa_flush(struct mcp_backend_ctx *x)
{
    size_t i;
    json_t *ev;

    json_array_foreach(x->queue, i, ev)
    {
        if (events_append(x->ew, ev) < 0)
            log_warn("mcp", "cannot append an event to the events file");
    }
    json_array_clear(x->queue);
}

static const char *sa_canary(void *ctx)
{
    struct mcp_backend_ctx *x = ctx;
    return x->plan ? plan_canary(x->plan) : NULL;
}

/* ---- controller ---- */

static int ct_decide(void *ctx, const struct plan_call *call, struct mcp_decision *out)
{
    struct mcp_backend_ctx *x = ctx;
    struct err e = {0};
    json_t *reply = NULL, *v;
    const char *kind, *can;

    memset(out, 0, sizeof(*out));
    if (control_client_decide(x->cc, call, &reply, &e) < 0) {
        log_warn("mcp", "decide: %s", e.msg);
        return e.code ? e.code : ERR_IO;
    }
    can = json_string_value(json_object_get(reply, "canary"));
    if (can && (x->canary == NULL || strcmp(x->canary, can) != 0)) {
        free(x->canary);
        x->canary = xstrdup(can);
    }
    out->inject = json_is_true(json_object_get(reply, "inject"));
    if (out->inject) {
        kind = json_string_value(json_object_get(reply, "kind"));
        if (kind == NULL) {
            json_decref(reply);
            log_warn("mcp", "decide: the controller said inject without a kind");
            return ERR_PROTO;
        }
        snprintf(out->kind, sizeof(out->kind), "%s", kind);
        v = json_object_get(reply, "fault_index");
        out->fault_index = json_is_integer(v) ? (size_t)json_integer_value(v) : 0;
        v = json_object_get(reply, "call_index");
        out->call_index = json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
        v = json_object_get(reply, "options");
        out->options = json_is_object(v) ? json_incref(v) : NULL;
        out->safety = -1;
    }
    json_decref(reply);
    return 0;
}

static void ct_emit(void *ctx, json_t *ev)
{
    struct mcp_backend_ctx *x = ctx;

    /* The session hands over ev and never touches it again (session.h): stamp it, keep it. */
    if (!json_is_integer(json_object_get(ev, "t")))
        json_object_set_new(ev, "t", json_integer(time_now_ms()));
    if (json_object_get(ev, "src") == NULL)
        json_object_set_new(ev, "src", json_string("mcp"));
    if (json_array_size(x->queue) >= QUEUE_MAX) {
        json_array_remove(x->queue, 0);
        x->dropped++;
    }
    json_array_append(x->queue, ev);
    if (json_array_size(x->queue) >= POST_MAX)
        mcp_backend_flush(x);
}

/* Removes the batch just posted (the first min(n, POST_MAX) of n queued events). */
static void shift_queue(struct mcp_backend_ctx *x, size_t n)
{
    json_t *rest;

    if (n <= POST_MAX) {
        json_array_clear(x->queue);
        return;
    }
    rest = json_array();
    for (size_t i = POST_MAX; i < n; i++)
        json_array_append(rest, json_array_get(x->queue, i));
    json_decref(x->queue);
    x->queue = rest;
}

static const char *ct_canary(void *ctx)
{
    struct mcp_backend_ctx *x = ctx;
    return x->canary;
}

void mcp_backend_flush(void *ctx)
{
    struct mcp_backend_ctx *x = ctx;
    struct err e = {0};

    if (x == NULL)
        return;
    if (x->ew) {
        sa_flush(x);
        return;
    }
    if (x->cc == NULL)
        return;
    if (x->dropped) {
        char msg[128];
        snprintf(
            msg, sizeof(msg),
            "%zu events were dropped: the controller did not take them (or did not confirm it)",
            x->dropped);
        json_array_insert_new(x->queue, 0,
                              json_pack("{s:s, s:I, s:s, s:s, s:s}", "kind", "warning", "t",
                                        (json_int_t)time_now_ms(), "src", "mcp", "code",
                                        "events_dropped", "message", msg));
        x->dropped = 0;
    }
    while (json_array_size(x->queue) > 0) {
        size_t n = json_array_size(x->queue);
        json_t *batch;
        if (n <= POST_MAX) {
            batch = json_incref(x->queue);
        } else {
            batch = json_array();
            for (size_t i = 0; i < POST_MAX; i++)
                json_array_append(batch, json_array_get(x->queue, i));
        }
        if (control_client_post_events(x->cc, batch, &e) < 0) {
            if (x->post_failures++ < 5)
                log_warn("mcp", "cannot send events to the controller: %s", e.msg);
            json_decref(batch);
            if (!control_client_sent(x->cc))
                return; /* never reached the controller: kept for the next flush */
            /* The controller may have appended them: sending them again could record a call
             * twice (a false duplicate for scoring), so they are counted as dropped. */
            x->dropped += n <= POST_MAX ? n : POST_MAX;
            shift_queue(x, n);
            return;
        }
        x->post_failures = 0;
        shift_queue(x, n);
        json_decref(batch);
    }
}

/* ---- both ---- */

static json_t *bk_plan_faults(void *ctx)
{
    struct mcp_backend_ctx *x = ctx;
    return json_object_get(x->plan_json, "faults");
}

static int bk_select(void *ctx, size_t fault_index, const char *key, uint64_t index,
                     double probability)
{
    struct mcp_backend_ctx *x = ctx;
    return plan_select(x->seed, fault_index, key, index, probability);
}

static void emit_plan_loaded(struct mcp_backend_ctx *x, const struct mcp_backend *b,
                             const char *path)
{
    json_t *ev = json_pack("{s:s, s:s, s:s}", "kind", "plan_loaded", "component", "mcp", "plan",
                           path ? path : "");
    json_t *faults = json_object_get(x->plan_json, "faults");
    json_t *inj = json_array();
    size_t i;
    json_t *f;

    json_object_set(ev, "faulted",
                    json_object_get(x->plan_json, "faulted")
                        ? json_object_get(x->plan_json, "faulted")
                        : json_boolean(json_array_size(faults) > 0));
    json_object_set_new(ev, "faults", json_integer((json_int_t)json_array_size(faults)));
    json_array_foreach(faults, i, f)
    {
        size_t j;
        json_t *name;
        json_array_foreach(json_object_get(f, "injectors"), j, name)
        {
            int seen = 0;
            size_t k;
            json_t *have;
            json_array_foreach(inj, k, have) seen |= json_equal(have, name);
            if (!seen)
                json_array_append(inj, name);
        }
    }
    json_object_set_new(ev, "injectors", inj);
    if (json_object_get(x->plan_json, "canary"))
        json_object_set(ev, "canary", json_object_get(x->plan_json, "canary"));
    if (json_object_get(json_object_get(x->plan_json, "experiment"), "hash"))
        json_object_set(ev, "experiment",
                        json_object_get(json_object_get(x->plan_json, "experiment"), "hash"));
    b->emit(b->ctx, ev);
    json_decref(ev);
}

/* Reads a plan file's JSON without the engine (controller mode: the counters live in the
 * controller; the file only tells what is decided outside calls). */
static json_t *read_plan_json(const char *path, struct err *e)
{
    struct buf text = BUF_INIT;
    json_error_t je;
    json_t *j = NULL;

    if (fs_read_file(path, PLAN_FILE_MAX, &text, e) < 0)
        goto out;
    j = json_loadb(text.data, text.len, 0, &je);
    if (j == NULL)
        err_set(e, ERR_PARSE, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    else if (!json_is_array(json_object_get(j, "faults"))) {
        err_set(e, ERR_INVALID, "%s: no faults array", path);
        json_decref(j);
        j = NULL;
    }
out:
    buf_release(&text);
    return j;
}

static uint64_t seed_of(const json_t *plan)
{
    json_t *s = json_object_get(plan, "seed");
    uint64_t v = 0;

    if (json_is_integer(s))
        return (uint64_t)json_integer_value(s);
    if (json_is_string(s) && num_parse_u64(json_string_value(s), &v) == 0)
        return v;
    return 0;
}

struct mcp_backend_ctx *mcp_backend_new(const struct mcp_backend_opts *o, struct mcp_backend *b,
                                        struct err *e)
{
    struct mcp_backend_ctx *x = xcalloc(1, sizeof(*x));

    memset(b, 0, sizeof(*b));
    b->ctx = x;
    b->plan_faults = bk_plan_faults;
    b->select = bk_select;
    if (o->control_url) {
        json_t *health = NULL;
        x->cc = control_client_new(o->control_url, e);
        if (x->cc == NULL)
            goto fail;
        x->queue = json_array();
        b->decide = ct_decide;
        b->emit = ct_emit;
        b->canary = ct_canary;
        if (o->plan_path) {
            x->plan_json = read_plan_json(o->plan_path, e);
            if (x->plan_json == NULL)
                goto fail;
            x->seed = seed_of(x->plan_json);
            if (json_is_string(json_object_get(x->plan_json, "canary")))
                x->canary = xstrdup(json_string_value(json_object_get(x->plan_json, "canary")));
        }
        if (control_client_health(x->cc, &health, e) < 0) {
            /* Not fatal: the relay must work even when the controller is late or gone. */
            log_warn("mcp", "controller health check: %s", e->msg);
            err_clear(e);
        } else {
            emit_plan_loaded(x, b, o->plan_path ? o->plan_path : o->control_url);
        }
        json_decref(health);
        return x;
    }
    b->decide = sa_decide;
    b->emit = sa_emit;
    b->canary = sa_canary;
    if (o->plan_path) {
        x->plan = plan_load(o->plan_path, e);
        if (x->plan == NULL)
            goto fail;
        x->plan_json = plan_to_json(x->plan);
        x->seed = plan_seed(x->plan);
    }
    if (o->events_path) {
        x->queue = json_array();
        x->ew =
            events_open(o->events_path, x->plan ? plan_run_id(x->plan) : "standalone", "mcp", e);
        if (x->ew == NULL)
            goto fail;
    }
    if (x->ew == NULL)
        b->emit = NULL; /* no events file: the session builds no events at all */
    if (x->plan && b->emit)
        emit_plan_loaded(x, b, o->plan_path);
    return x;
fail:
    mcp_backend_free(x);
    memset(b, 0, sizeof(*b));
    return NULL;
}

void mcp_backend_free(struct mcp_backend_ctx *x)
{
    if (x == NULL)
        return;
    mcp_backend_flush(x);
    if (x->cc && x->queue && json_array_size(x->queue) > 0)
        log_warn("mcp", "%zu events could not be sent to the controller",
                 json_array_size(x->queue));
    json_decref(x->queue);
    control_client_free(x->cc);
    events_close(x->ew);
    plan_free(x->plan);
    json_decref(x->plan_json);
    free(x->canary);
    free(x);
}
