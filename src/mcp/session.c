/*
 * session: see session.h; the fault behaviours are specified in docs/mcp-shim.md.
 *
 * Every client request is a struct call, kept in the client->server id map (c2s) until the
 * server answers it, and in a list of live calls (for timers, cancellation and the end). The
 * shim's own copies of a call (tool.duplicate_delivery, tool.concurrent_duplicate) are calls
 * too, with ids "faultline-dup-N" in the same map; their replies are swallowed. Server requests
 * are kept in the server->client map (s2c) until the client answers.
 *
 * A call's states and the function that takes each edge:
 *
 *   from        event                          to           function
 *   (new)       tools/call, no fault            FORWARDED    handle_tool_call
 *   (new)       request-side fault answers      (freed)      answer_* + call_free
 *   (new)       tool.timeout                    HELD         start_fault
 *   (new)       tool.latency                    DELAYED      start_fault
 *   HELD        timer (reply: error)            (freed)      on_timer
 *   HELD        notifications/cancelled         (freed)      on_client_cancel
 *   DELAYED     timer                           FORWARDED    on_timer
 *   FORWARDED   server reply                    (freed)      on_server_reply
 *   FORWARDED   reply under timeout_after_commit WAIT_TIMEOUT on_tool_reply
 *   WAIT_TIMEOUT timer                          (freed)      on_timer
 *   any         server exited                   (freed)      mcp_session_server_exited
 *   HELD/DELAYED/WAIT_TIMEOUT client output gone (freed)     mcp_session_client_gone
 *
 * What each state holds: a DELAYED call keeps its line (raw) and a TIMER_FORWARD timer; a
 * HELD one at most a TIMER_TIMEOUT_REPLY timer (none with reply: none); a WAIT_TIMEOUT one
 * was taken out of c2s by the reply and has its TIMER_COMMIT_ERROR timer; a FORWARDED one no
 * timer. The session's flags: client_gone frees every HELD, DELAYED and WAIT_TIMEOUT call
 * (later requests still take those states: the client's input may outlive its output);
 * server_gone frees every call (a request in a client batch is still tracked afterwards, as
 * FORWARDED) and no timer runs after it. assert_session_state checks these, and the counts
 * (pending_client, the timers, the c2s map), as each entry point returns.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/ev.h"
#include "events/events.h"
#include "experiment/catalog.h"
#include "mcp/alter.h"
#include "mcp/session.h"
#include "util/log.h"
#include "util/text.h"
#include "util/banned.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"
#define STALE_MAX_BYTES (1u << 20)

struct fault_handler;
static const struct fault_handler *handler_of(const char *kind);

/* The safety rule's warning fault_refused (docs/mcp-shim.md). */
#define REFUSED_FMT                                                                                \
    "mutating fault '%s' refused: no sandbox is known here (a standalone shim needs "              \
    "--i-have-a-sandbox; under a controller, the controller knows its sandbox or not); the call "  \
    "goes through unfaulted"

static int fault_is_mutating(const char *id)
{
    const struct catalog_fault *f = catalog_fault_find(id);
    return f == NULL || f->safety == CATALOG_MUTATING; /* unknown: treat as mutating */
}

enum call_state { CALL_NEW = 0, CALL_FORWARDED, CALL_HELD, CALL_DELAYED, CALL_WAIT_TIMEOUT };

enum timer_what { TIMER_TIMEOUT_REPLY = 1, TIMER_FORWARD, TIMER_COMMIT_ERROR };

struct call {
    struct call *prev, *next; /* the live list */
    json_t *id;               /* our copy of the request id */
    char *method;
    char *tool;     /* tools/call: params.name */
    json_t *args;   /* tools/call: params.arguments (reference) */
    json_t *params; /* the request's params (reference), for duplicates */
    char *raw;      /* the line to forward later (DELAYED), with its '\n' */
    size_t rawlen;
    int64_t t0;
    enum call_state state;
    int in_map;      /* still in c2s */
    int stateless;   /* the request carried 2026-07-28 _meta */
    int listen;      /* subscriptions/listen asking for toolsListChanged */
    int cancelled;   /* the client cancelled it */
    int dup;         /* a shim-made copy: its copy number (2, 3...), else 0 */
    int opaque;      /* the request was JSON that jansson cannot hold (params unknown) */
    size_t rawbytes; /* opaque: the request's length, for the tool_call event */
    int copies_left; /* tool.duplicate_delivery: copies still to send after this reply */
    int gap_ms;
    struct seam_decision fault;     /* fault.inject: a fault rides on this call */
    const struct fault_handler *fh; /* fault.inject: the handler of fault.kind */
    uint64_t timer;                 /* token, 0 = none */
    int timer_what;
    json_t *server_result; /* timeout_after_commit: what the server answered (for events) */
};

struct timer_ent {
    uint64_t token;
    struct call *c;
};

struct warn_count {
    char code[40];
    size_t n;
};

struct mcp_session {
    struct mcp_session_opts o;
    struct mcp_backend b;
    struct mcp_host h;
    char *server;
    int server_named;
    struct buf to_server, to_client;
    struct jsonrpc_idmap c2s, s2c;
    struct call *calls;
    struct timer_ent *timers;
    size_t ntimers, atimers;
    uint64_t next_token, dup_seq, tool_calls, pending_client;
    int server_gone, server_input_closed, client_gone, stateless, client_saw_list_changed;
    char gone_how[128];
    json_t *tools;     /* name -> the server's own definition */
    json_t *removed;   /* name -> true (mcp.toolset_change) */
    json_t *redefined; /* name -> fields (mcp.toolset_change) */
    json_t *drift;     /* name -> {old: new} (mcp.schema_drift) */
    json_t *stale;     /* name -> first result (tool.stale_data) */
    struct {
        uint64_t seen, altered;
    } listc[PLAN_FAULTS_MAX];
    struct warn_count warns[48];
    size_t nwarns;
    size_t check_skipped; /* assert_session_state: entry points since the last full walk */
};

/* The safety rule: the backend's word, asked at each mutating fault (a controller's may
 * change: seam.h), else the session's option. */
static int refuses_mutating(struct mcp_session *s)
{
    if (s->b.mutating_allowed)
        return !s->b.mutating_allowed(s->b.ctx);
    return s->o.refuse_mutating;
}

#ifndef NDEBUG
/* The invariants of one call (sqlite's assert_pager_state). Returns 1 for assert(). */
static int assert_call_state(struct mcp_session *s, const struct call *c)
{
    assert(c->state != CALL_NEW);
    assert(!c->in_map || jsonrpc_idmap_get(&s->c2s, c->id) == c);
    assert(c->timer == 0 ||
           (c->timer_what >= TIMER_TIMEOUT_REPLY && c->timer_what <= TIMER_COMMIT_ERROR));
    switch (c->state) {
    case CALL_DELAYED:
        assert(c->raw != NULL && c->timer != 0 && c->timer_what == TIMER_FORWARD);
        break;
    case CALL_HELD:
        assert(c->timer == 0 || c->timer_what == TIMER_TIMEOUT_REPLY);
        break;
    case CALL_WAIT_TIMEOUT:
        assert(!c->in_map && c->timer != 0 && c->timer_what == TIMER_COMMIT_ERROR);
        break;
    default:
        assert(c->timer == 0 && c->raw == NULL);
        break;
    }
    /* After the server is gone only the requests of a client batch are tracked. */
    assert(!s->server_gone || (c->state == CALL_FORWARDED && c->timer == 0 && !c->dup));
    return 1;
}

/* Live calls up to which assert_session_state walks them at every entry point; past it, the
 * walk's map lookups per entry point on average. */
#define CHECK_EVERY_MAX 16
#define CHECK_LOOKUPS 4

/* The invariants of the session: its calls, the counts, the timers and the c2s map. The walk
 * costs a map lookup per live call: with more than CHECK_EVERY_MAX calls live it runs at one
 * entry point in live / CHECK_LOOKUPS, so a client with hundreds of calls in flight pays a
 * bounded cost per line for it, not one that grows with them (an invariant broken then is
 * still caught, a few lines later). */
static int assert_session_state(struct mcp_session *s)
{
    size_t ncalls = 0, nclient = 0, ntimed = 0, nmapped = 0;
    size_t live = jsonrpc_idmap_count(&s->c2s);

    if (live > CHECK_EVERY_MAX && ++s->check_skipped < live / CHECK_LOOKUPS)
        return 1;
    s->check_skipped = 0;
    for (const struct call *c = s->calls; c; c = c->next) {
        assert(c->prev == NULL ? s->calls == c : c->prev->next == c);
        assert(assert_call_state(s, c));
        ncalls++;
        nclient += !c->dup;
        ntimed += c->timer != 0;
        nmapped += c->in_map;
    }
    assert(s->pending_client == nclient);
    assert(s->ntimers == ntimed && s->ntimers <= s->atimers);
    for (size_t i = 0; i < s->ntimers; i++)
        assert(s->timers[i].c->timer == s->timers[i].token && s->timers[i].token != 0);
    assert(jsonrpc_idmap_count(&s->c2s) == nmapped);
    assert(!s->server_gone || s->ntimers == 0);
    assert(s->nwarns <= sizeof(s->warns) / sizeof(s->warns[0]));
    (void)ncalls;
    return 1;
}
#endif

/* ---- small helpers ---- */

static int64_t now_ms(struct mcp_session *s)
{
    return s->h.now_ms(s->h.ctx);
}

static const char *canary(struct mcp_session *s)
{
    const char *c = s->b.canary ? s->b.canary(s->b.ctx) : NULL;
    return c ? c : "";
}

const char *mcp_session_server_name(const struct mcp_session *s)
{
    return s->server ? s->server : "mcp";
}

static void id_text(const json_t *id, char *out, size_t n)
{
    if (json_is_integer(id))
        snprintf(out, n, "%lld", (long long)json_integer_value(id));
    else if (json_is_string(id))
        snprintf(out, n, "%s", json_string_value(id));
    else if (json_is_real(id))
        snprintf(out, n, "%.17g", json_real_value(id));
    else
        snprintf(out, n, "null");
}

static void emit(struct mcp_session *s, json_t *ev)
{
    if (ev == NULL) {
        log_error("mcp", "an event could not be built (a bug: please report it)");
        return;
    }
    if (s->b.emit)
        s->b.emit(s->b.ctx, ev);
    json_decref(ev);
}

/* Makes s (NUL-terminated) valid UTF-8 without control characters, in place: every byte that
 * does not start a valid sequence, and every control, becomes '?'. Messages quote input. */
static void sanitize_utf8(char *s)
{
    unsigned char *p = (unsigned char *)s;

    while (*p) {
        size_t n = *p < 0x80         ? 1
                   : (*p >> 5) == 6  ? 2
                   : (*p >> 4) == 14 ? 3
                   : (*p >> 3) == 30 ? 4
                                     : 0;
        size_t i;
        int ok = n > 0;
        for (i = 1; ok && i < n; i++)
            ok = (p[i] & 0xC0) == 0x80;
        if (ok && n == 2 && *p < 0xC2)
            ok = 0; /* overlong */
        if (ok && n == 3 && ((*p == 0xE0 && p[1] < 0xA0) || (*p == 0xED && p[1] >= 0xA0)))
            ok = 0; /* overlong, surrogate */
        if (ok && n == 4 &&
            ((*p == 0xF0 && p[1] < 0x90) || *p > 0xF4 || (*p == 0xF4 && p[1] >= 0x90)))
            ok = 0;
        if (!ok || (n == 1 && (*p < 0x20 || *p == 0x7f))) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

static const char *dir_name(int from_client)
{
    return from_client ? "client_to_server" : "server_to_client";
}

static void warn(struct mcp_session *s, const char *code, int from_client, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void warn(struct mcp_session *s, const char *code, int from_client, const char *fmt, ...)
{
    struct warn_count *w = NULL;
    char msg[512];
    va_list ap;
    json_t *ev;

    for (size_t i = 0; i < s->nwarns; i++)
        if (strcmp(s->warns[i].code, code) == 0)
            w = &s->warns[i];
    if (w == NULL && s->nwarns < sizeof(s->warns) / sizeof(s->warns[0])) {
        w = &s->warns[s->nwarns++];
        snprintf(w->code, sizeof(w->code), "%s", code);
        w->n = 0;
    }
    if (w && ++w->n > s->o.warn_limit)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sanitize_utf8(msg);
    ev = ev_new(EVKIND_WARNING);
    ev_set_str(ev, "code", code);
    ev_set_str(ev, "message", msg);
    ev_set_str(ev, "direction", from_client < 0 ? "none" : dir_name(from_client));
    /* Messages quote input (a bad line's start): credentials in it are redacted before the
     * message reaches the log, as the events writer does for the event. */
    events_redact(ev);
    log_warn("mcp", "%s: %s (%s)", code, json_string_value(json_object_get(ev, "message")),
             from_client < 0 ? "shim" : dir_name(from_client));
    emit(s, ev);
}

/* A printable excerpt of a bad line for messages: at most 60 bytes, controls as '?'. */
static void excerpt(const char *line, size_t len, char *out, size_t n)
{
    size_t k = 0;

    for (size_t i = 0; i < len && k + 4 < n && i < 60; i++)
        out[k++] = ((unsigned char)line[i] < 32 || line[i] == 127) ? '?' : line[i];
    if (len > 60 && k + 4 < n) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
}

static void write_line(struct buf *out, const char *line, size_t len)
{
    buf_add(out, line, len);
    buf_addc(out, '\n');
}

static json_t *opt(const struct call *c, const char *name)
{
    return json_object_get(c->fault.options, name);
}

/* Options are read through the catalog (catalog_option_*): the plan loader fills in the
 * catalog's defaults, and a value of the wrong type or out of range (a hand-broken plan) reads
 * as the catalog's default too. No default is restated here. */
static long long opt_int(const struct call *c, const char *name)
{
    long long v = 0;
    catalog_option_int(catalog_fault_find(c->fault.kind), c->fault.options, name, &v);
    return v;
}

static double opt_num(const struct call *c, const char *name)
{
    double v = 0;
    catalog_option_number(catalog_fault_find(c->fault.kind), c->fault.options, name, &v);
    return v;
}

/* "" for a string option with no value and no default (inject.tool_result's payload). */
static const char *opt_str(const struct call *c, const char *name)
{
    const char *v =
        catalog_option_string(catalog_fault_find(c->fault.kind), c->fault.options, name);
    return v ? v : "";
}

static int opt_bool(const struct call *c, const char *name)
{
    return catalog_option_bool(catalog_fault_find(c->fault.kind), c->fault.options, name);
}

static int opt_is(const struct call *c, const char *name, const char *value)
{
    return strcmp(opt_str(c, name), value) == 0;
}

/* ---- calls and timers ---- */

static struct call *call_new(struct mcp_session *s, const json_t *id, const char *method)
{
    struct call *c = xcalloc(1, sizeof(*c));
    c->id = json_deep_copy(id);
    c->method = xstrdup(method ? method : "");
    c->t0 = now_ms(s);
    c->next = s->calls;
    if (s->calls)
        s->calls->prev = c;
    s->calls = c;
    return c;
}

static void timer_cancel(struct mcp_session *s, struct call *c, int notify_host)
{
    if (c->timer == 0)
        return;
    for (size_t i = 0; i < s->ntimers; i++) {
        if (s->timers[i].token == c->timer) {
            s->timers[i] = s->timers[--s->ntimers];
            break;
        }
    }
    if (notify_host)
        s->h.cancel_timer(s->h.ctx, c->timer);
    c->timer = 0;
}

static void timer_set(struct mcp_session *s, struct call *c, int what, int64_t ms)
{
    timer_cancel(s, c, 1);
    if (s->ntimers == s->atimers) {
        s->atimers = s->atimers ? s->atimers * 2 : 8;
        s->timers = xrealloc(s->timers, s->atimers * sizeof(*s->timers));
    }
    c->timer = ++s->next_token;
    c->timer_what = what;
    s->timers[s->ntimers].token = c->timer;
    s->timers[s->ntimers].c = c;
    s->ntimers++;
    s->h.set_timer(s->h.ctx, c->timer, ms < 0 ? 0 : ms);
}

static void call_release(struct call *c)
{
    json_decref(c->id);
    json_decref(c->args);
    json_decref(c->params);
    json_decref(c->fault.options);
    json_decref(c->server_result);
    free(c->method);
    free(c->tool);
    free(c->raw);
    free(c);
}

/* Unlinks c (from the list, the map, its timer) and frees it. notify_host 0 from
 * mcp_session_free, which must not call the host. */
static void call_free_ex(struct mcp_session *s, struct call *c, int notify_host)
{
    if (c->in_map) {
        jsonrpc_idmap_take(&s->c2s, c->id);
        c->in_map = 0;
    }
    timer_cancel(s, c, notify_host);
    if (!c->dup && s->pending_client > 0)
        s->pending_client--;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    call_release(c);
}

static void call_free(struct mcp_session *s, struct call *c)
{
    call_free_ex(s, c, 1);
}

/* ---- events ---- */

static void target_name(struct mcp_session *s, const char *tool, char *out, size_t n)
{
    snprintf(out, n, "mcp__%s__%s", mcp_session_server_name(s), tool ? tool : "");
}

/* raw: the arguments' text in the line when the request was not parsed (JSONRPC_F_SCANNED),
 * else NULL. */
static void emit_tool_call(struct mcp_session *s, struct call *c, const char *raw, size_t rawlen)
{
    char idt[128];
    json_t *ev;

    if (s->b.emit == NULL)
        return; /* nobody records events: do not build them */
    id_text(c->id, idt, sizeof(idt));
    ev = ev_new(EVKIND_TOOL_CALL);
    ev_set_str(ev, "tool", c->tool ? c->tool : "");
    ev_set_str(ev, "server", mcp_session_server_name(s));
    ev_set_str(ev, "id", idt);
    if (raw) /* an object (the caller checked), recorded from its text */
        ev_set_raw_checked(ev, "args", raw, rawlen); /* a slice of a checked line */
    else if (json_is_object(c->args)) /* arguments that are not an object are not recorded */
        ev_set_ref(ev, "args", c->args);
    else if (c->opaque)
        ev_set(ev, "args",
               json_pack("{s:b, s:I}", "unparsed", 1, "bytes", (json_int_t)c->rawbytes));
    emit(s, ev);
}

/* result: the result member the client saw (or NULL); raw (or NULL): instead, its text in
 * the line, a result without isError: true no longer than max_result_event (recorded as it
 * is, no tree); error: the error message when not ok. */
static void emit_tool_result_ex(struct mcp_session *s, struct call *c, const json_t *result,
                                const char *raw, size_t rawlen, const char *error, int faulted,
                                json_t *extra)
{
    char idt[128];
    json_t *ev;
    int ok = error == NULL && !json_is_true(json_object_get(result, "isError"));

    if (s->b.emit == NULL) {
        json_decref(extra);
        return;
    }
    id_text(c->id, idt, sizeof(idt));
    ev = ev_new(EVKIND_TOOL_RESULT);
    ev_set_str(ev, "tool", c->tool ? c->tool : "");
    ev_set_str(ev, "server", mcp_session_server_name(s));
    ev_set_str(ev, "id", idt);
    ev_set_bool(ev, "ok", ok);
    ev_set_int(ev, "duration_ms", now_ms(s) - c->t0);
    if (error)
        ev_set_str(ev, "error", error);
    if (!ok && error == NULL) {
        struct buf t = BUF_INIT;
        mcp_alter_result_text(result, &t, 1024);
        ev_set_strn(ev, "error", t.data, t.len);
        buf_release(&t);
    }
    if (raw) {
        ev_set_raw_checked(ev, "result", raw, rawlen); /* a slice of a checked line */
    } else if (result) {
        size_t n = json_dumpb(result, NULL, 0, JSON_COMPACT); /* the size, nothing allocated */
        if (n <= s->o.max_result_event) {
            ev_set_ref(ev, "result", (json_t *)result);
        } else {
            struct buf t = BUF_INIT;
            mcp_alter_result_text(result, &t, 1024);
            ev_set(ev, "result",
                   json_pack("{s:b, s:I, s:s%}", "truncated", 1, "bytes", (json_int_t)n, "text",
                             t.data, t.len));
            buf_release(&t);
        }
    }
    if (faulted)
        ev_set_bool(ev, "faulted", 1);
    if (s->client_gone && !c->dup)
        ev_set_bool(ev, "delivered", 0); /* nothing reaches the client now */
    ev_update(ev, extra);
    json_decref(extra);
    emit(s, ev);
}

static void emit_tool_result(struct mcp_session *s, struct call *c, const json_t *result,
                             const char *error, int faulted, json_t *extra)
{
    emit_tool_result_ex(s, c, result, NULL, 0, error, faulted, extra);
}

/* A fault_injected event of the shim (detail stolen). */
static json_t *fault_event(const char *fault, uint64_t fault_index, uint64_t call_index,
                           const char *target, const char *canary, json_t *detail)
{
    json_t *ev = ev_new(EVKIND_FAULT_INJECTED);

    ev_set_str(ev, "fault", fault);
    ev_set_int(ev, "fault_index", (long long)fault_index);
    ev_set_int(ev, "call_index", (long long)call_index);
    ev_set_str(ev, "target", target);
    ev_set_str(ev, "canary", canary);
    ev_set_str(ev, "component", "mcp");
    ev_set(ev, "detail", detail);
    return ev;
}

static void emit_fault(struct mcp_session *s, struct call *c, json_t *detail)
{
    char target[512];

    if (s->b.emit == NULL) {
        json_decref(detail);
        return;
    }
    target_name(s, c->tool, target, sizeof(target));
    emit(s, fault_event(c->fault.kind, c->fault.fault_index, c->fault.call_index, target, canary(s),
                        detail ? detail : json_object()));
}

/* ---- answering the client ---- */

static void answer_result(struct mcp_session *s, struct call *c, json_t *result)
{
    json_t *msg;

    if (c->stateless && json_is_object(result) && !json_object_get(result, "resultType"))
        json_object_set_new(result, "resultType", json_string("complete"));
    msg = jsonrpc_make_result(c->id, json_incref(result));
    jsonrpc_write(&s->to_client, msg);
    json_decref(msg);
}

static void answer_error(struct mcp_session *s, struct call *c, int code, const char *message)
{
    json_t *msg = jsonrpc_make_error(c->id, code, message, NULL);
    jsonrpc_write(&s->to_client, msg);
    json_decref(msg);
}

/* An injected isError (or success-shaped) result with message + canary; records and frees. */
static void answer_text_fault(struct mcp_session *s, struct call *c, const char *message,
                              int is_error, json_t *detail)
{
    struct buf t = BUF_INIT;
    json_t *r;

    mcp_alter_canary_text(&t, message, canary(s));
    r = mcp_alter_text_result(t.data, is_error, c->stateless);
    answer_result(s, c, r);
    emit_fault(s, c, detail);
    emit_tool_result(s, c, r, NULL, 1, NULL);
    json_decref(r);
    buf_release(&t);
    call_free(s, c);
}

static void answer_error_fault(struct mcp_session *s, struct call *c, int code, const char *message,
                               json_t *detail, int report)
{
    struct buf t = BUF_INIT;

    mcp_alter_canary_text(&t, message, canary(s));
    answer_error(s, c, code, t.data);
    if (report)
        emit_fault(s, c, detail);
    else
        json_decref(detail);
    emit_tool_result(s, c, NULL, t.data, 1, NULL);
    buf_release(&t);
    call_free(s, c);
}

/* ---- lines read by the scan: jansson cannot hold them (JSONRPC_F_OPAQUE), or no fault
 * changes them and no tree was built (JSONRPC_F_SCANNED, the relay's fast path) ---- */

/* 1 when m has no tree: its members are read from the line (opaque_get, opaque_type). */
static int scanned(const struct jsonrpc_msg *m)
{
    return (m->flags & (JSONRPC_F_OPAQUE | JSONRPC_F_SCANNED)) != 0;
}

/* The scalar at sp.k1.k2 of an opaque line (k1, k2 may be NULL), as a new reference, or NULL
 * when absent or not one jansson can hold. */
static json_t *opaque_get(const char *line, const struct jsonrpc_span *sp, const char *k1,
                          const char *k2)
{
    const char *keys[3] = {k1, k1 ? k2 : NULL, NULL};
    struct jsonrpc_span v;

    if (sp->type == 0 || !jsonrpc_lax_path(line, sp, keys, &v))
        return NULL;
    return jsonrpc_lax_value(line, &v);
}

/* The type of the value at sp.k1.k2 ('t' true...; 0 when absent). */
static char opaque_type(const char *line, const struct jsonrpc_span *sp, const char *k1,
                        const char *k2)
{
    const char *keys[3] = {k1, k2, NULL};
    struct jsonrpc_span v;

    if (sp->type == 0 || !jsonrpc_lax_path(line, sp, keys, &v))
        return 0;
    return v.type;
}

/* What jansson said of an opaque line, without the text it quotes ("near '...'"). */
static void opaque_why(const struct jsonrpc_msg *m, char *out, size_t n)
{
    text_parse_error(m->why, out, n);
    sanitize_utf8(out);
}

/* The tool_result fields for an opaque reply: a note in place of the result, and the isError
 * the scan can still see. A new reference. */
static json_t *opaque_result(const struct jsonrpc_msg *m, const char *line, size_t len)
{
    char why[200];
    json_t *x;

    opaque_why(m, why, sizeof(why));
    x = json_pack("{s:{s:b, s:I, s:s}}", "result", "unparsed", 1, "bytes", (json_int_t)len, "why",
                  why);
    if (m->kind == JSONRPC_RESPONSE && opaque_type(line, &m->lax.result, "isError", NULL) == 't') {
        json_object_set_new(x, "ok", json_false());
        json_object_set_new(x, "error",
                            json_string("the tool reported isError (the reply could not be "
                                        "parsed for its text)"));
    }
    return x;
}

/* A fault (kind; report: a fault_injected event too) must change a message the shim cannot
 * parse: the client's request gets a JSON-RPC error with the canary instead, never silence. */
static void refuse_unparsed(struct mcp_session *s, struct call *c, const char *kind,
                            int from_client, int report)
{
    struct buf t = BUF_INIT;

    warn(s, "fault_unparsed", from_client,
         "%s on '%s': the %s is JSON that the shim cannot parse, so the fault cannot change it; "
         "the client gets a JSON-RPC error",
         kind, c->tool ? c->tool : "", from_client ? "request" : "server's reply");
    buf_addf(&t, "faultline could not apply %s: the %s is JSON that the MCP shim cannot parse",
             kind, from_client ? "request" : "MCP server's reply");
    answer_error_fault(
        s, c, JSONRPC_INTERNAL_ERROR, t.data,
        report ? json_pack("{s:b, s:s}", "unparsed", 1, "applied_as", "error") : NULL, report);
    buf_release(&t);
}

/* ---- list changes (mcp.toolset_change, mcp.schema_drift) ---- */

/* Sends notifications/tools/list_changed the way the session's protocol era allows. Returns
 * how many were sent. */
static int notify_list_changed(struct mcp_session *s)
{
    json_t *msg;
    int n = 0;

    if (s->client_gone)
        return 0;
    if (!s->stateless) {
        if (!s->client_saw_list_changed)
            warn(s, "list_changed_undeclared", 0,
                 "sending notifications/tools/list_changed although the client was not told "
                 "tools.listChanged (the plan was not known when the handshake passed)");
        msg = jsonrpc_make_notification("notifications/tools/list_changed", NULL);
        jsonrpc_write(&s->to_client, msg);
        json_decref(msg);
        return 1;
    }
    /* 2026-07-28: only inside an open subscriptions/listen asking for tool list changes. */
    for (struct call *c = s->calls; c; c = c->next) {
        if (!c->listen || c->dup)
            continue;
        msg = jsonrpc_make_notification("notifications/tools/list_changed",
                                        json_pack("{s:{s:O}}", "_meta", META_SUBSCRIPTION, c->id));
        jsonrpc_write(&s->to_client, msg);
        json_decref(msg);
        n++;
    }
    return n;
}

static int pattern_match(const char *pattern, const char *name)
{
    size_t pl, nl;

    if (pattern == NULL)
        return 1;
    if (name == NULL)
        return 0;
    if (pattern[0] != '*')
        return strcmp(pattern, name) == 0;
    pl = strlen(pattern + 1);
    nl = strlen(name);
    return nl >= pl && strcmp(name + nl - pl, pattern + 1) == 0;
}

/* match.tool against a tool of this server, with MCP name equivalence (docs/plan.md). */
static int tool_matches(struct mcp_session *s, const char *pattern, const char *tool)
{
    char full[512];

    if (pattern == NULL)
        return 1;
    if (pattern_match(pattern, tool))
        return 1;
    target_name(s, tool, full, sizeof(full));
    return pattern_match(pattern, full);
}

/* The plan's faults (borrowed; NULL when the backend does not know the plan). */
static json_t *plan_faults(struct mcp_session *s)
{
    return s->b.plan_faults ? s->b.plan_faults(s->b.ctx) : NULL;
}

/* The catalog row of a plan fault f, or NULL for a kind the catalog does not know. */
static const struct catalog_fault *fault_def(const json_t *f)
{
    return catalog_fault_find(json_string_value(json_object_get(f, "kind")));
}

static int fault_for_mcp(const json_t *f)
{
    json_t *inj = json_object_get(f, "injectors");
    size_t i;
    json_t *v;

    if (inj == NULL)
        return 1;
    json_array_foreach(inj, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), "mcp") == 0)
            return 1;
    }
    return 0;
}

static int fault_server_matches(struct mcp_session *s, const json_t *f)
{
    json_t *m = json_object_get(f, "match");
    return pattern_match(json_string_value(json_object_get(m, "server")),
                         mcp_session_server_name(s));
}

/* A plan fault's options with the catalog's defaults filled (a plan read as it was written,
 * by the controller-backed shim, may omit them); new reference. */
static json_t *fault_options(const struct catalog_fault *def, const json_t *f)
{
    json_t *o = json_object_get(f, "options");
    json_t *copy = json_is_object(o) ? json_deep_copy(o) : json_object();

    catalog_fill_defaults(def, copy);
    return copy;
}

/* 1 when the plan (if known here) may change this server's tool list and notify: it holds a
 * fault of this shim whose notify option is true (mcp.toolset_change, mcp.schema_drift). */
static int plan_may_notify(struct mcp_session *s)
{
    json_t *faults = plan_faults(s);
    size_t i;
    json_t *f;

    json_array_foreach(faults, i, f)
    {
        const struct catalog_fault *def = fault_def(f);
        json_t *opts;
        int notify;

        if (handler_of(def ? def->id : NULL) == NULL || !fault_for_mcp(f) ||
            !fault_server_matches(s, f))
            continue;
        opts = fault_options(def, f);
        notify = json_is_true(json_object_get(opts, "notify"));
        json_decref(opts);
        if (notify)
            return 1;
    }
    return 0;
}

/* ---- requests from the client ---- */

static int is_stateless_request(const json_t *params)
{
    return json_object_get(json_object_get(params, "_meta"), META_VERSION) != NULL;
}

static void forward_raw(struct mcp_session *s, const char *line, size_t len)
{
    write_line(&s->to_server, line, len);
}

static void forward_json(struct mcp_session *s, const json_t *msg)
{
    jsonrpc_write(&s->to_server, msg);
}

/* Forwards c (a tools/call) with its arguments replaced by args (stolen). */
static void forward_with_args(struct mcp_session *s, struct call *c, json_t *root, json_t *args)
{
    json_t *params = json_object_get(root, "params");
    json_object_set_new(params, "arguments", args);
    forward_json(s, root);
    c->state = CALL_FORWARDED;
}

static json_t *list_of(const json_t *v)
{
    if (json_is_string(v))
        return json_pack("[O]", v);
    return json_is_array(v) ? json_incref((json_t *)v) : json_array();
}

/* Builds the copy number `dup` of call orig's request and sends it now or after gap_ms. */
static void send_duplicate(struct mcp_session *s, const char *tool, const json_t *params, int dup,
                           int copies_left, int gap_ms, const struct seam_decision *d,
                           int stateless)
{
    char idbuf[64];
    json_t *id, *p, *req;
    struct call *c;
    char *line;

    snprintf(idbuf, sizeof(idbuf), "faultline-dup-%llu", (unsigned long long)++s->dup_seq);
    id = json_string(idbuf);
    c = call_new(s, id, "tools/call");
    c->tool = tool ? xstrdup(tool) : NULL;
    c->dup = dup;
    c->copies_left = copies_left;
    c->gap_ms = gap_ms;
    c->stateless = stateless;
    c->fault = *d;
    c->fault.options = json_incref(d->options);
    c->fh = handler_of(d->kind);
    p = json_deep_copy(params);
    /* A progress token belongs to the client's request: the copy must not reuse it. */
    json_object_del(json_object_get(p, "_meta"), "progressToken");
    c->params = json_incref(p);
    c->args = json_incref(json_object_get(p, "arguments"));
    req = jsonrpc_make_request(id, "tools/call", p);
    line = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    json_decref(id);
    if (line == NULL || jsonrpc_idmap_put(&s->c2s, c->id, c) < 0) {
        warn(s, "duplicate_not_sent", -1, "could not track the copy of a '%s' call", tool);
        free(line);
        call_free(s, c);
        return;
    }
    c->in_map = 1;
    if (gap_ms > 0) {
        c->raw = line;
        c->rawlen = strlen(line);
        c->state = CALL_DELAYED;
        timer_set(s, c, TIMER_FORWARD, gap_ms);
    } else {
        write_line(&s->to_server, line, strlen(line));
        c->state = CALL_FORWARDED;
        free(line);
    }
}

static void start_toolset_change(struct mcp_session *s, struct call *c)
{
    json_t *remove = list_of(opt(c, "remove"));
    json_t *redefine = opt(c, "redefine");
    json_t *detail = json_object();
    size_t i;
    json_t *v;
    const char *k;
    int notified = 0;

    json_array_foreach(remove, i, v)
    {
        if (json_is_string(v))
            json_object_set_new(s->removed, json_string_value(v), json_true());
    }
    json_object_foreach(redefine, k, v)
    {
        if (json_is_object(v))
            json_object_set(s->redefined, k, v);
    }
    if (opt_bool(c, "notify"))
        notified = notify_list_changed(s);
    json_object_set_new(detail, "remove", remove);
    if (json_is_object(redefine))
        json_object_set_new(detail, "redefine", json_pack("[]"));
    json_object_foreach(redefine, k, v)
    {
        json_array_append_new(json_object_get(detail, "redefine"), json_string(k));
    }
    json_object_set_new(detail, "notified", json_integer(notified));
    emit_fault(s, c, detail);
}

static void drift_reject(struct mcp_session *s, struct call *c, const char *old,
                         const json_t *rename, int report)
{
    struct buf t = BUF_INIT;
    json_t *detail = report ? json_pack("{s:O}", "rename", rename) : NULL;

    buf_addf(&t,
             "Invalid params for tool '%s': unknown parameter '%s' (the tool's input schema "
             "changed: expected '%s')",
             c->tool, old, json_string_value(json_object_get(rename, old)));
    answer_error_fault(s, c, JSONRPC_INVALID_PARAMS, t.data, detail, report);
    buf_release(&t);
}

/* ---- per-fault handlers ----
 *
 * One struct fault_handler per fault the shim injects, in handlers[] indexed by the catalog
 * row (enum catalog_fault_id): handler_of() finds it from the decision's kind through the
 * catalog, so no table here restates the ids. The options hold the catalog's defaults (the plan
 * loader fills them, docs/plan.md), so handlers read them without fallbacks.
 *   on_call   the call is decided: answer it, hold it, delay it or forward it (NULL: forwarded
 *             as is, and the fault applies to the reply);
 *   on_reply  the server's reply, whatever it is (result, error, unparsed): it is consumed;
 *   alter     the reply's result object is changed in place; returns 1 when it changed;
 *   on_list   a tools/list tool (fires CATALOG_FIRES_ON_LIST): changed in place, 1 when it was.
 * A handler with none of these is no handler (the fault is not one the shim injects). */
struct reply {
    struct jsonrpc_msg *m;
    const char *line;
    size_t len;
    json_t *result;     /* the result (a response's, maybe not an object), else NULL */
    const char *errmsg; /* an error's message, else NULL */
    int opaque;         /* the reply is JSON jansson cannot hold: result is NULL */
};

enum {
    FH_NEEDS_ARGS = 1 << 0, /* rewrites the arguments: an unparsed request is refused */
    FH_COPIES = 1 << 1      /* copies the request: not applied to an unparsed one */
};

struct fault_handler {
    void (*on_call)(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m, const char *line,
                    size_t len);
    void (*on_reply)(struct mcp_session *s, struct call *c, const struct reply *r);
    int (*alter)(struct mcp_session *s, struct call *c, json_t *result);
    int (*on_list)(json_t *tool, const json_t *options);
    unsigned flags;
};

static void call_tool_error(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                            const char *line, size_t len)
{
    answer_text_fault(s, c, opt_str(c, "message"), 1, NULL);
}

static void call_transient_error(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                                 const char *line, size_t len)
{
    struct buf t = BUF_INIT;
    long long ms = opt_int(c, "retry_after_ms");

    buf_adds(&t, opt_str(c, "message"));
    if (ms > 0)
        buf_addf(&t, " (retry after %lld ms)", ms);
    answer_text_fault(s, c, t.data, 1,
                      ms > 0 ? json_pack("{s:I}", "retry_after_ms", (json_int_t)ms) : NULL);
    buf_release(&t);
}

static void call_rate_limit(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                            const char *line, size_t len)
{
    struct buf t = BUF_INIT;
    long long sec = opt_int(c, "retry_after_s");

    buf_addf(&t, "429 Too Many Requests: rate limit exceeded, retry after %lld s", sec);
    answer_text_fault(s, c, t.data, 1, json_pack("{s:I}", "retry_after_s", (json_int_t)sec));
    buf_release(&t);
}

/* The plan decided it is due (from_call, docs/plan.md). */
static void call_auth_expiry(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                             const char *line, size_t len)
{
    answer_text_fault(s, c, opt_str(c, "message"), 1,
                      json_pack("{s:I, s:I}", "from_call", (json_int_t)opt_int(c, "from_call"),
                                "session_call", (json_int_t)s->tool_calls));
}

/* The plan decided this call fails (pattern, fail_every): as tool.error, with its message. */
static void call_partial_failure(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                                 const char *line, size_t len)
{
    answer_text_fault(s, c, opt_str(c, "message"), 1, NULL);
}

/* The faults whose option `mode` picks between a JSON-RPC error (error_mode, with code) and a
 * text result (any other mode, reported as text_mode; an isError result when text_is_error). */
static void answer_by_mode(struct mcp_session *s, struct call *c, const char *error_mode, int code,
                           const char *text_mode, int text_is_error)
{
    if (opt_is(c, "mode", error_mode))
        answer_error_fault(s, c, code, opt_str(c, "message"),
                           json_pack("{s:s}", "mode", error_mode), 1);
    else
        answer_text_fault(s, c, opt_str(c, "message"), text_is_error,
                          json_pack("{s:s}", "mode", text_mode));
}

static void call_wrong_channel(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                               const char *line, size_t len)
{
    answer_by_mode(s, c, "protocol_error", JSONRPC_INTERNAL_ERROR, "success_text", 0);
}

static void call_capability_downgrade(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                                      const char *line, size_t len)
{
    answer_by_mode(s, c, "method_not_found", JSONRPC_METHOD_NOT_FOUND, "unsupported", 1);
}

static void call_stale_data(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                            const char *line, size_t len)
{
    json_t *fixed = opt(c, "result"), *r;
    const char *source = "option";

    if (fixed != NULL && !json_is_null(fixed)) {
        if (json_is_string(fixed)) {
            r = mcp_alter_text_result(json_string_value(fixed), 0, c->stateless);
        } else {
            char *d = json_dumps(fixed, JSON_COMPACT | JSON_ENCODE_ANY);
            r = mcp_alter_text_result(d ? d : "", 0, c->stateless);
            free(d);
            /* An object is also the structuredContent (which the text mirrors), so clients that
             * show structuredContent (Claude Code, Codex) see the same stale value. */
            if (json_is_object(fixed))
                json_object_set(r, "structuredContent", fixed);
        }
    } else if (json_object_get(s->stale, c->tool)) {
        r = json_deep_copy(json_object_get(s->stale, c->tool));
        source = "first_result";
    } else {
        warn(s, "fault_not_applied", 1,
             "tool.stale_data on '%s': no earlier result to return; the call goes through",
             c->tool);
        c->fault.inject = 0;
        forward_raw(s, line, len);
        c->state = CALL_FORWARDED;
        return;
    }
    answer_result(s, c, r);
    emit_fault(s, c, json_pack("{s:s}", "source", source));
    emit_tool_result(s, c, r, NULL, 1, NULL);
    json_decref(r);
    call_free(s, c);
}

static void call_timeout(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                         const char *line, size_t len)
{
    int reply_error = !opt_is(c, "reply", "none");
    long long ms = opt_int(c, "timeout_ms");

    c->state = CALL_HELD;
    emit_fault(s, c,
               json_pack("{s:I, s:s}", "timeout_ms", (json_int_t)ms, "reply",
                         reply_error ? "error" : "none"));
    if (reply_error)
        timer_set(s, c, TIMER_TIMEOUT_REPLY, ms);
}

static void call_latency(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                         const char *line, size_t len)
{
    long long ms = opt_int(c, "delay_ms");

    c->raw = xmalloc(len + 1);
    memcpy(c->raw, line, len);
    c->raw[len] = '\n';
    c->rawlen = len + 1;
    c->state = CALL_DELAYED;
    emit_fault(s, c, json_pack("{s:I}", "delay_ms", (json_int_t)ms));
    timer_set(s, c, TIMER_FORWARD, ms);
}

static void call_toolset_change(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                                const char *line, size_t len)
{
    start_toolset_change(s, c);
    if (json_object_get(s->removed, c->tool)) {
        struct buf u = BUF_INIT;
        json_t *r;
        buf_addf(&u, "Unknown tool: %s", c->tool);
        mcp_alter_canary_text(&u, "", canary(s));
        r = mcp_alter_text_result(u.data, 1, c->stateless);
        answer_result(s, c, r);
        emit_tool_result(s, c, r, NULL, 1, NULL);
        json_decref(r);
        buf_release(&u);
        call_free(s, c);
    } else {
        forward_raw(s, line, len);
        c->state = CALL_FORWARDED;
    }
}

static void call_schema_drift(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                              const char *line, size_t len)
{
    json_t *rename = opt(c, "rename");
    json_t *def = json_object_get(s->tools, c->tool);
    const char *old;
    json_t *back = NULL;

    if (json_object_size(rename) > 0)
        json_incref(rename);
    else
        rename = def ? mcp_alter_default_rename(def) : NULL;
    if (rename == NULL) {
        warn(s, "fault_not_applied", 1,
             "mcp.schema_drift on '%s': the tool's parameters are not known (no tools/list "
             "reply named it); the call goes through",
             c->tool);
        c->fault.inject = 0;
        forward_raw(s, line, len);
        c->state = CALL_FORWARDED;
        return;
    }
    json_object_set_new(s->drift, c->tool, rename);
    if (opt_bool(c, "notify"))
        notify_list_changed(s);
    old = mcp_alter_check_args(c->args, rename, &back);
    if (old) {
        drift_reject(s, c, old, rename, 1);
    } else {
        emit_fault(s, c, json_pack("{s:O}", "rename", rename));
        forward_with_args(s, c, m->root, back ? back : json_object());
    }
}

static void call_concurrent_duplicate(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                                      const char *line, size_t len)
{
    int gap = (int)opt_int(c, "gap_ms");

    forward_raw(s, line, len);
    c->state = CALL_FORWARDED;
    emit_fault(s, c, json_pack("{s:i, s:i}", "copies", 2, "gap_ms", gap));
    send_duplicate(s, c->tool, c->params, 2, 0, gap, &c->fault, c->stateless);
}

static void send_commit_timeout(struct mcp_session *s, struct call *c)
{
    struct buf t = BUF_INIT;

    mcp_alter_canary_text(&t, "Request timed out", canary(s));
    if (!s->client_gone)
        answer_error(s, c, JSONRPC_REQUEST_TIMEOUT, t.data);
    emit_tool_result(s, c, NULL, t.data, 1, NULL);
    buf_release(&t);
    call_free(s, c);
}

static void reply_timeout_after_commit(struct mcp_session *s, struct call *c, const struct reply *r)
{
    long long ms = opt_int(c, "timeout_ms");
    int ok = r->m->kind == JSONRPC_RESPONSE;

    if (r->opaque)
        emit_fault(s, c,
                   json_pack("{s:I, s:b, s:{s:b, s:I}}", "timeout_ms", (json_int_t)ms, "server_ok",
                             ok && opaque_type(r->line, &r->m->lax.result, "isError", NULL) != 't',
                             "server_result", "unparsed", 1, "bytes", (json_int_t)r->len));
    else
        emit_fault(s, c,
                   json_pack("{s:I, s:b, s:O?}", "timeout_ms", (json_int_t)ms, "server_ok",
                             ok && !json_is_true(json_object_get(r->result, "isError")),
                             "server_result", r->result));
    if (ms <= 0) {
        send_commit_timeout(s, c);
        return;
    }
    c->state = CALL_WAIT_TIMEOUT;
    timer_set(s, c, TIMER_COMMIT_ERROR, ms);
}

static void reply_malformed(struct mcp_session *s, struct call *c, const struct reply *r)
{
    enum mcp_malformed_mode mode = opt_is(c, "mode", "invalid_json") ? MCP_MALFORMED_INVALID_JSON
                                   : opt_is(c, "mode", "wrong_type")
                                       ? MCP_MALFORMED_WRONG_TYPE
                                       : MCP_MALFORMED_MISSING_CONTENT;

    mcp_alter_malformed(&s->to_client, c->id, r->result, mode, canary(s));
    if (r->opaque)
        emit_fault(
            s, c, json_pack("{s:s, s:b}", "mode", opt_str(c, "mode"), "server_result_unparsed", 1));
    else
        emit_fault(s, c, json_pack("{s:s}", "mode", opt_str(c, "mode")));
    emit_tool_result(s, c, NULL, "malformed reply (injected)", 1, NULL);
    call_free(s, c);
}

static void reply_duplicate(struct mcp_session *s, struct call *c, const struct reply *r)
{
    int copies = (int)opt_int(c, "copies");
    int gap = (int)opt_int(c, "gap_ms");

    write_line(&s->to_client, r->line, r->len);
    emit_fault(s, c, json_pack("{s:i, s:i}", "copies", copies, "gap_ms", gap));
    emit_tool_result(s, c, r->result, r->errmsg, 0,
                     r->opaque ? opaque_result(r->m, r->line, r->len) : NULL);
    if (copies > 1 && !s->server_gone)
        send_duplicate(s, c->tool, c->params, 2, copies - 2, gap, &c->fault, c->stateless);
    call_free(s, c);
}

static int alter_omission(struct mcp_session *s, struct call *c, json_t *result)
{
    int truncate = opt_is(c, "mode", "truncate");
    size_t removed = mcp_alter_omit(result, truncate, (size_t)opt_int(c, "keep_bytes"));

    emit_fault(s, c,
               json_pack("{s:s, s:I}", "mode", truncate ? "truncate" : "empty", "bytes_removed",
                         (json_int_t)removed));
    return 1;
}

static int alter_wrong_data(struct mcp_session *s, struct call *c, json_t *result)
{
    enum mcp_wrong_mode mode = opt_is(c, "mode", "text")            ? MCP_WRONG_TEXT
                               : opt_is(c, "mode", "numbers_scale") ? MCP_WRONG_SCALE
                                                                    : MCP_WRONG_OFFSET;
    /* find has no default: absent (NULL) outside mode text */
    size_t n = mcp_alter_wrong_data(result, mode, opt_num(c, "by"),
                                    json_string_value(opt(c, "find")), opt_str(c, "replace_with"));

    emit_fault(
        s, c, json_pack("{s:s, s:I}", "mode", opt_str(c, "mode"), "values_changed", (json_int_t)n));
    return n > 0;
}

static int alter_violating_output(struct mcp_session *s, struct call *c, json_t *result)
{
    json_t *def = json_object_get(s->tools, c->tool);
    enum mcp_violate_mode mode = opt_is(c, "mode", "missing_required")
                                     ? MCP_VIOLATE_MISSING_REQUIRED
                                 : opt_is(c, "mode", "extra_field") ? MCP_VIOLATE_EXTRA
                                                                    : MCP_VIOLATE_WRONG_TYPE;
    const char *prop =
        mcp_alter_violate(result, json_object_get(def, "outputSchema"), mode, canary(s));

    emit_fault(s, c,
               json_pack("{s:s, s:s, s:b}", "mode", opt_str(c, "mode"), "property", prop,
                         "output_schema_known", json_object_get(def, "outputSchema") != NULL));
    return 1;
}

static int alter_inject_result(struct mcp_session *s, struct call *c, json_t *result)
{
    enum mcp_inject_pos pos = opt_is(c, "position", "prepend")   ? MCP_INJECT_PREPEND
                              : opt_is(c, "position", "replace") ? MCP_INJECT_REPLACE
                                                                 : MCP_INJECT_APPEND;

    enum mcp_sc_change sc = MCP_SC_ABSENT;

    mcp_alter_inject(result, opt_str(c, "payload"), pos, &sc);
    if (sc == MCP_SC_UNCHANGED)
        warn(
            s, "fault_partly_visible", 0,
            "inject.tool_result on '%s': the result's structuredContent holds no string to carry "
            "the payload; a client that shows its model structuredContent (Claude Code, Codex) does "
            "not see it",
            c->tool ? c->tool : "");
    emit_fault(s, c,
               json_pack("{s:s, s:s}", "position", opt_str(c, "position"), "structured_content",
                         mcp_alter_sc_name(sc)));
    return 1;
}

/* mcp.annotation_lie on one tool of a tools/list reply: its annotations option. */
static int list_annotation_lie(json_t *tool, const json_t *options)
{
    json_t *ann = json_object_get(options, "annotations");
    return json_is_object(ann) && mcp_alter_annotations(tool, ann);
}

static const struct fault_handler handlers[CATALOG_F_COUNT] = {
    [CATALOG_F_TOOL_ERROR] = {.on_call = call_tool_error},
    [CATALOG_F_TOOL_LATENCY] = {.on_call = call_latency},
    [CATALOG_F_TOOL_TIMEOUT] = {.on_call = call_timeout},
    [CATALOG_F_TOOL_TIMEOUT_AFTER_COMMIT] = {.on_reply = reply_timeout_after_commit},
    [CATALOG_F_TOOL_OMISSION] = {.alter = alter_omission},
    [CATALOG_F_TOOL_SILENT_WRONG_DATA] = {.alter = alter_wrong_data},
    [CATALOG_F_TOOL_PARTIAL_FAILURE] = {.on_call = call_partial_failure},
    [CATALOG_F_TOOL_TRANSIENT_ERROR] = {.on_call = call_transient_error},
    [CATALOG_F_TOOL_RATE_LIMIT] = {.on_call = call_rate_limit},
    [CATALOG_F_TOOL_MALFORMED_RESPONSE] = {.on_reply = reply_malformed},
    [CATALOG_F_TOOL_AUTH_EXPIRY] = {.on_call = call_auth_expiry},
    [CATALOG_F_TOOL_WRONG_ERROR_CHANNEL] = {.on_call = call_wrong_channel},
    [CATALOG_F_TOOL_STALE_DATA] = {.on_call = call_stale_data},
    [CATALOG_F_TOOL_DUPLICATE_DELIVERY] = {.on_reply = reply_duplicate, .flags = FH_COPIES},
    [CATALOG_F_TOOL_CONCURRENT_DUPLICATE] = {.on_call = call_concurrent_duplicate,
                                             .flags = FH_COPIES},
    [CATALOG_F_MCP_TOOLSET_CHANGE] = {.on_call = call_toolset_change},
    [CATALOG_F_MCP_SCHEMA_DRIFT] = {.on_call = call_schema_drift, .flags = FH_NEEDS_ARGS},
    [CATALOG_F_MCP_SCHEMA_VIOLATING_OUTPUT] = {.alter = alter_violating_output},
    [CATALOG_F_MCP_ANNOTATION_LIE] = {.on_list = list_annotation_lie},
    [CATALOG_F_MCP_CAPABILITY_DOWNGRADE] = {.on_call = call_capability_downgrade},
    [CATALOG_F_INJECT_TOOL_RESULT] = {.alter = alter_inject_result},
};

static int handler_empty(const struct fault_handler *h)
{
    return !h->on_call && !h->on_reply && !h->alter && !h->on_list;
}

static const struct fault_handler *handler_of_row(const struct catalog_fault *def)
{
    if (def == NULL || !(def->injectors & CATALOG_INJ_MCP) || (unsigned)def->fid >= CATALOG_F_COUNT)
        return NULL;
    return handler_empty(&handlers[def->fid]) ? NULL : &handlers[def->fid];
}

static const struct fault_handler *handler_of(const char *kind)
{
    return handler_of_row(catalog_fault_find(kind));
}

size_t mcp_session_fault_ids(enum catalog_fault_id *ids, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < CATALOG_F_COUNT; i++) {
        if (handler_empty(&handlers[i]))
            continue;
        if (n < max)
            ids[n] = (enum catalog_fault_id)i;
        n++;
    }
    return n;
}

/* Handles a call whose decision says inject; c->fault and c->fh are set. */
static void start_fault(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                        const char *line, size_t len)
{
    if (c->fh->on_call) {
        c->fh->on_call(s, c, m, line, len);
        return;
    }
    if (c->fh->on_list) /* it alters tools/list replies, never a call */
        c->fault.inject = 0;
    forward_raw(s, line, len); /* the fault, if any, applies to the reply (on_tool_reply) */
    c->state = CALL_FORWARDED;
}

/* 1 when a tools/call read by the scan (F_SCANNED) can be relayed without a tree: the
 * decision does not read its arguments, its event can record them from their text (or no
 * event is recorded), and no earlier fault renamed the tool's arguments. */
static int call_stays_scanned(struct mcp_session *s, const struct jsonrpc_msg *m, const char *line)
{
    json_t *name;
    int ok;

    if (!(m->flags & JSONRPC_F_SCANNED) || !s->b.args_unused || (s->b.emit && !s->b.raw_events) ||
        m->lax.params.type != 'o')
        return 0;
    if (json_object_size(s->drift) == 0)
        return 1;
    name = opaque_get(line, &m->lax.params, "name", NULL);
    ok = !json_is_string(name) || json_object_get(s->drift, json_string_value(name)) == NULL;
    json_decref(name);
    return ok;
}

static void handle_tool_call(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                             const char *line, size_t len)
{
    json_t *params;
    json_t *opaque_name = NULL;
    const char *name;
    struct plan_call pc;
    struct seam_decision d;
    json_t *rename;
    struct jsonrpc_span args = {0, 0, 0};
    int fast;

    fast = call_stays_scanned(s, m, line);
    if (!fast)
        jsonrpc_msg_tree(m, line, len);
    params = m->params;
    if (fast) {
        /* No tree: the name and the arguments' place from the scan; parsed only when a fault
         * is decided for the call. */
        opaque_name = opaque_get(line, &m->lax.params, "name", NULL);
        name = json_string_value(opaque_name);
        if (!jsonrpc_lax_member(line, &m->lax.params, "arguments", &args) || args.type != 'o')
            args.type = 0;
    } else if (m->flags & JSONRPC_F_OPAQUE) {
        /* No tree: the name from the scan; the arguments stay unknown (NULL). */
        opaque_name = opaque_get(line, &m->lax.params, "name", NULL);
        name = json_string_value(opaque_name);
        c->opaque = 1;
        c->rawbytes = len;
    } else {
        name = json_string_value(json_object_get(params, "name"));
    }
    c->tool = name ? xstrdup(name) : NULL;
    name = c->tool;
    json_decref(opaque_name);
    c->params = json_incref(params);
    c->args = json_incref(json_object_get(params, "arguments"));
    s->tool_calls++;
    emit_tool_call(s, c, args.type ? line + args.off : NULL, args.len);
    c->state = CALL_FORWARDED;
    if (name == NULL) {
        forward_raw(s, line, len);
        return;
    }
    /* Consequences of faults injected earlier in the session. */
    if (json_object_get(s->removed, name)) {
        struct buf t = BUF_INIT;
        json_t *r;
        buf_addf(&t, "Unknown tool: %s", name);
        mcp_alter_canary_text(&t, "", canary(s));
        r = mcp_alter_text_result(t.data, 1, c->stateless);
        answer_result(s, c, r);
        emit_tool_result(s, c, r, NULL, 1, json_pack("{s:s}", "fault", "mcp.toolset_change"));
        json_decref(r);
        buf_release(&t);
        call_free(s, c);
        return;
    }
    rename = json_object_get(s->drift, name);
    if (rename && c->opaque) {
        refuse_unparsed(s, c, "mcp.schema_drift", 1, 0);
        return;
    }
    if (rename) {
        json_t *back = NULL;
        const char *old = mcp_alter_check_args(c->args, rename, &back);
        if (old) {
            drift_reject(s, c, old, rename, 0);
            return;
        }
        forward_with_args(s, c, m->root, back ? back : json_object());
        return;
    }
    memset(&pc, 0, sizeof(pc));
    pc.component = CATALOG_INJ_MCP;
    pc.tool = name;
    pc.server = mcp_session_server_name(s);
    pc.args = c->args;
    pc.session_call = s->tool_calls;
    memset(&d, 0, sizeof(d));
    if (s->b.decide(s->b.ctx, &pc, &d) < 0) {
        warn(s, "decide_failed", 1, "no fault decision for '%s' (the call goes through)", name);
        json_decref(d.options);
        forward_raw(s, line, len);
        return;
    }
    if (!d.inject) {
        json_decref(d.options);
        forward_raw(s, line, len);
        return;
    }
    if (fast) {
        /* A fault: it works on the tree (the decision did not need it) */
        jsonrpc_msg_tree(m, line, len);
        json_decref(c->params);
        json_decref(c->args);
        c->params = json_incref(m->params);
        c->args = json_incref(json_object_get(m->params, "arguments"));
    }
    c->fault = d;
    c->fh = handler_of(d.kind);
    if (c->fh == NULL) {
        warn(s, "fault_unsupported", 1, "fault '%s' is not one the MCP shim injects", d.kind);
        c->fault.inject = 0;
        forward_raw(s, line, len);
        return;
    }
    if (refuses_mutating(s) && (d.safety > 0 || (d.safety < 0 && fault_is_mutating(d.kind)))) {
        warn(s, "fault_refused", 1, REFUSED_FMT, d.kind);
        c->fault.inject = 0;
        forward_raw(s, line, len);
        return;
    }
    if (c->opaque && (c->fh->flags & FH_NEEDS_ARGS)) {
        refuse_unparsed(s, c, d.kind, 1, 1);
        return;
    }
    if (c->opaque && (c->fh->flags & FH_COPIES)) {
        warn(s, "fault_not_applied", 1,
             "%s on '%s': the request is JSON that the shim cannot parse, so no copy can be "
             "made; the call goes through",
             d.kind, name);
        c->fault.inject = 0;
        forward_raw(s, line, len);
        return;
    }
    start_fault(s, c, m, line, len);
}

static void handle_client_request(struct mcp_session *s, struct jsonrpc_msg *m, const char *line,
                                  size_t len)
{
    struct call *c;
    int rc;

    if (s->server_gone || s->server_input_closed) {
        struct buf t = BUF_INIT;
        json_t *msg;
        buf_addf(&t, "MCP server is not running (%s)",
                 s->server_gone ? s->gone_how : "it closed its input");
        msg = jsonrpc_make_error(m->id, JSONRPC_CONNECTION_CLOSED, t.data, NULL);
        jsonrpc_write(&s->to_client, msg);
        json_decref(msg);
        buf_release(&t);
        return;
    }
    c = call_new(s, m->id, m->method);
    s->pending_client++;
    if (is_stateless_request(m->params) ||
        (scanned(m) && opaque_type(line, &m->lax.params, "_meta", META_VERSION)))
        s->stateless = c->stateless = 1;
    rc = jsonrpc_idmap_put(&s->c2s, m->id, c);
    if (rc == ERR_INVALID) {
        char idt[128];
        id_text(m->id, idt, sizeof(idt));
        warn(s, "jsonrpc_duplicate_id", 1, "request id %s is already in flight ('%s')", idt,
             m->method);
    } else if (rc == ERR_LIMIT) {
        warn(s, "jsonrpc_pending_limit", 1, "more than %zu requests in flight; not tracked",
             s->o.max_pending);
    }
    if (rc < 0) {
        forward_raw(s, line, len);
        call_free(s, c);
        return;
    }
    c->in_map = 1;
    if (strcmp(m->method, "tools/call") == 0) {
        handle_tool_call(s, c, m, line, len);
        return;
    }
    if (strcmp(m->method, "subscriptions/listen") == 0)
        c->listen = json_is_true(json_object_get(json_object_get(m->params, "notifications"),
                                                 "toolsListChanged")) ||
                    (scanned(m) &&
                     opaque_type(line, &m->lax.params, "notifications", "toolsListChanged") == 't');
    forward_raw(s, line, len);
    c->state = CALL_FORWARDED;
}

static struct call *find_waiting(struct mcp_session *s, const json_t *id)
{
    for (struct call *c = s->calls; c; c = c->next)
        if (!c->dup && !c->in_map && json_equal(c->id, id))
            return c;
    return NULL;
}

static void handle_client_notification(struct mcp_session *s, struct jsonrpc_msg *m,
                                       const char *line, size_t len)
{
    json_t *own = scanned(m) ? opaque_get(line, &m->lax.params, "requestId", NULL) : NULL;

    if (strcmp(m->method, "notifications/cancelled") == 0) {
        json_t *rid = own ? own : json_object_get(m->params, "requestId");
        struct call *c = rid ? jsonrpc_idmap_get(&s->c2s, rid) : NULL;
        if (c == NULL && rid)
            c = find_waiting(s, rid);
        if (c && c->dup)
            c = NULL;
        if (c &&
            (c->state == CALL_HELD || c->state == CALL_DELAYED || c->state == CALL_WAIT_TIMEOUT)) {
            /* The server never saw it (or already answered it): the cancel ends here. */
            if (strcmp(c->method, "tools/call") == 0)
                emit_tool_result(s, c, NULL, "cancelled by the client", c->fault.inject, NULL);
            call_free(s, c);
            json_decref(own);
            return;
        }
        if (c)
            c->cancelled = 1;
    }
    json_decref(own);
    if (s->server_gone || s->server_input_closed)
        return;
    forward_raw(s, line, len);
}

static void handle_client_response(struct mcp_session *s, struct jsonrpc_msg *m, const char *line,
                                   size_t len)
{
    char *method = m->id ? jsonrpc_idmap_take(&s->s2c, m->id) : NULL;

    if (method == NULL) {
        char idt[128];
        id_text(m->id, idt, sizeof(idt));
        warn(s, "jsonrpc_unknown_id", 1, "%s for id %s, which the server never asked",
             jsonrpc_kind_name(m->kind), idt);
    }
    free(method);
    if (s->server_gone || s->server_input_closed)
        return;
    forward_raw(s, line, len);
}

static void soft_flags(struct mcp_session *s, const struct jsonrpc_msg *m, int from_client)
{
    if (m->flags & JSONRPC_F_NO_VERSION)
        warn(s, "jsonrpc_no_version", from_client, "a %s without \"jsonrpc\": \"2.0\"",
             jsonrpc_kind_name(m->kind));
    if ((m->flags & JSONRPC_F_NULL_ID) && m->kind == JSONRPC_REQUEST)
        warn(s, "jsonrpc_null_id", from_client, "a request ('%s') with a null id", m->method);
    if (m->flags & JSONRPC_F_BAD_PARAMS)
        warn(s, "jsonrpc_bad_params", from_client, "params of '%s' are neither object nor array",
             m->method);
    if (m->flags & JSONRPC_F_BAD_ERROR)
        warn(s, "jsonrpc_bad_error", from_client,
             "an error object without an integer code and a string message");
}

static void track_batch(struct mcp_session *s, json_t *arr, int from_client);

/* A client batch after the server is gone (or its input closed): every request in it is
 * answered at once with an error, in one batch reply, as a single request is
 * (handle_client_request); nothing is tracked, so nothing stays pending. */
static void answer_batch_closed(struct mcp_session *s, json_t *arr)
{
    json_t *out = json_array(), *v;
    struct buf t = BUF_INIT;
    size_t i;

    buf_addf(&t, "MCP server is not running (%s)",
             s->server_gone ? s->gone_how : "it closed its input");
    json_array_foreach(arr, i, v)
    {
        struct jsonrpc_msg m;
        memset(&m, 0, sizeof(m));
        if (jsonrpc_classify(v, &m) == JSONRPC_REQUEST)
            json_array_append_new(
                out, jsonrpc_make_error(m.id, JSONRPC_CONNECTION_CLOSED, t.data, NULL));
    }
    if (json_array_size(out) > 0 && !s->client_gone)
        jsonrpc_write(&s->to_client, out);
    json_decref(out);
    buf_release(&t);
}

/* Reports a line jansson refused but JSON.parse accepts (JSONRPC_F_OPAQUE). Returns 1 when it
 * was relayed here: a message whose id even the scan cannot turn into a value is relayed as
 * is, untracked. */
static int opaque_line(struct mcp_session *s, const struct jsonrpc_msg *m, const char *line,
                       size_t len, int from_client)
{
    char why[200];

    if (!(m->flags & JSONRPC_F_OPAQUE) || m->kind == JSONRPC_NOT_RPC)
        return 0;
    opaque_why(m, why, sizeof(why));
    warn(s, "jsonrpc_unparsed", from_client,
         "a %s of %zu bytes that jansson cannot parse (%s) but JSON.parse accepts: relayed as "
         "is, read by a scan",
         jsonrpc_kind_name(m->kind), len, why);
    if (!(m->flags & JSONRPC_F_OPAQUE_ID))
        return 0;
    warn(s, "jsonrpc_id_unparsed", from_client, "a %s whose id cannot be read: relayed untracked",
         jsonrpc_kind_name(m->kind));
    if (from_client && !s->server_gone && !s->server_input_closed)
        forward_raw(s, line, len);
    else if (!from_client && !s->client_gone)
        write_line(&s->to_client, line, len);
    return 1;
}

/* ---- replies from the server ---- */

static void rewrite_or_raw(struct mcp_session *s, int changed, const json_t *root, const char *line,
                           size_t len)
{
    if (changed)
        jsonrpc_write(&s->to_client, root);
    else
        write_line(&s->to_client, line, len);
}

static void on_capabilities_reply(struct mcp_session *s, struct jsonrpc_msg *m, const char *line,
                                  size_t len)
{
    json_t *result = m->result;
    json_t *caps = json_object_get(result, "capabilities");
    json_t *tools = json_object_get(caps, "tools");
    const char *name =
        json_string_value(json_object_get(json_object_get(result, "serverInfo"), "name"));
    int changed = 0;

    if (!s->server_named && name && *name) {
        free(s->server);
        s->server = xstrdup(name);
    }
    s->client_saw_list_changed = json_is_true(json_object_get(tools, "listChanged"));
    if (!s->client_saw_list_changed && json_is_object(caps) && plan_may_notify(s)) {
        if (!json_is_object(tools)) {
            tools = json_object();
            json_object_set_new(caps, "tools", tools);
        }
        json_object_set_new(tools, "listChanged", json_true());
        s->client_saw_list_changed = 1;
        changed = 1;
        log_info("mcp", "announcing tools.listChanged to the client: the plan may change the "
                        "tool list");
    }
    rewrite_or_raw(s, changed, m->root, line, len);
}

static void apply_annotation_lies(struct mcp_session *s, json_t *tools, int *changed)
{
    json_t *faults = plan_faults(s);
    size_t i;
    json_t *f;

    json_array_foreach(faults, i, f)
    {
        const struct catalog_fault *def = fault_def(f);
        const struct fault_handler *h = handler_of(def ? def->id : NULL);
        json_t *match = json_object_get(f, "match");
        json_t *idx = json_object_get(f, "index");
        size_t fi = json_is_integer(idx) ? (size_t)json_integer_value(idx) : i;
        json_t *times = json_object_get(f, "times");
        json_t *prob = json_object_get(f, "probability");
        json_t *opts;
        uint64_t k;
        json_t *names;
        size_t j;
        json_t *tool;

        if (h == NULL || h->on_list == NULL || def->fires != CATALOG_FIRES_ON_LIST ||
            !fault_for_mcp(f) || !fault_server_matches(s, f) || fi >= PLAN_FAULTS_MAX)
            continue;
        k = s->listc[fi].seen++;
        if ((json_int_t)k < json_integer_value(json_object_get(f, "after_calls")))
            continue;
        if (json_is_integer(times) && json_integer_value(times) >= 0 &&
            s->listc[fi].altered >= (uint64_t)json_integer_value(times))
            continue;
        if (json_is_number(prob) && s->b.select &&
            !s->b.select(s->b.ctx, fi, mcp_session_server_name(s), k, json_number_value(prob)))
            continue;
        if (refuses_mutating(s) &&
            !(json_is_string(json_object_get(f, "safety")) &&
              strcmp(json_string_value(json_object_get(f, "safety")), "fail-safe") == 0)) {
            warn(s, "fault_refused", 0, REFUSED_FMT, def->id);
            continue;
        }
        names = json_array();
        opts = fault_options(def, f);
        json_array_foreach(tools, j, tool)
        {
            const char *tn = json_string_value(json_object_get(tool, "name"));
            if (tn && tool_matches(s, json_string_value(json_object_get(match, "tool")), tn) &&
                h->on_list(tool, opts))
                json_array_append_new(names, json_string(tn));
        }
        json_decref(opts);
        if (json_array_size(names) > 0) {
            char target[512];
            s->listc[fi].altered++;
            *changed = 1;
            target_name(s, json_string_value(json_array_get(names, 0)), target, sizeof(target));
            emit(s,
                 fault_event(def->id, fi, k, target, canary(s),
                             json_pack("{s:o, s:I}", "tools", names, "list_reply", (json_int_t)k)));
        } else {
            json_decref(names);
        }
    }
}

static void on_tools_list_reply(struct mcp_session *s, struct jsonrpc_msg *m, const char *line,
                                size_t len)
{
    json_t *tools = json_object_get(m->result, "tools");
    int changed = 0;
    size_t i;

    for (i = 0; i < json_array_size(tools); i++) {
        json_t *t = json_array_get(tools, i);
        const char *name = json_string_value(json_object_get(t, "name"));
        if (name && json_object_size(s->tools) < 10000)
            json_object_set_new(s->tools, name, json_deep_copy(t));
    }
    for (i = 0; i < json_array_size(tools);) {
        json_t *t = json_array_get(tools, i);
        const char *name = json_string_value(json_object_get(t, "name"));
        json_t *fields, *rename;
        if (name && json_object_get(s->removed, name)) {
            json_array_remove(tools, i);
            changed = 1;
            continue;
        }
        fields = name ? json_object_get(s->redefined, name) : NULL;
        if (fields && mcp_alter_redefine(t, fields))
            changed = 1;
        rename = name ? json_object_get(s->drift, name) : NULL;
        if (rename && mcp_alter_rename_schema(t, rename))
            changed = 1;
        i++;
    }
    if (json_is_array(tools))
        apply_annotation_lies(s, tools, &changed);
    rewrite_or_raw(s, changed, m->root, line, len);
}

static void cache_first_result(struct mcp_session *s, struct call *c, const json_t *result)
{
    if (c->tool == NULL || json_object_get(s->stale, c->tool) || !json_is_object(result) ||
        json_is_true(json_object_get(result, "isError")) || json_object_size(s->stale) >= 256)
        return;
    if (json_dumpb(result, NULL, 0, JSON_COMPACT) <= STALE_MAX_BYTES)
        json_object_set_new(s->stale, c->tool, json_deep_copy(result));
}

/* A tools/call reply. Without a fault (or with one applied to the request) it is relayed; a
 * handler's on_reply takes any reply; its alter changes a result object. A reply jansson cannot
 * hold (opaque) is relayed as is unless a fault must change it: on_reply handlers only drop,
 * replace or copy it and apply as usual, alter handlers answer with an error instead. */
/* The fast path of a tools/call reply read by the scan (F_SCANNED) with no fault on the call:
 * relayed from its bytes and recorded from its text (over max_result_event: its text
 * excerpt, read by the scan). 1 when done; 0 when it needs the tree (an isError result, whose
 * text the event quotes; a result that is not an object). */
static int tool_reply_scanned(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                              const char *line, size_t len)
{
    const struct jsonrpc_span *r = &m->lax.result;

    if (m->kind == JSONRPC_ERROR) {
        json_t *msg = opaque_get(line, &m->lax.error, "message", NULL);
        const char *errmsg = json_string_value(msg);
        write_line(&s->to_client, line, len);
        emit_tool_result(s, c, NULL, errmsg ? errmsg : "JSON-RPC error", 0, NULL);
        json_decref(msg);
        call_free(s, c);
        return 1;
    }
    if (m->kind != JSONRPC_RESPONSE || r->type != 'o' || (s->b.emit && !s->b.raw_events) ||
        opaque_type(line, r, "isError", NULL) == 't')
        return 0;
    if (c->tool && json_object_get(s->stale, c->tool) == NULL && json_object_size(s->stale) < 256) {
        /* the first result of each tool is kept (tool.stale_data): parsed once a tool */
        json_t *t = json_loadb(line + r->off, r->len, JSON_ALLOW_NUL, NULL);
        cache_first_result(s, c, t);
        json_decref(t);
    }
    write_line(&s->to_client, line, len);
    if (s->b.emit && r->len > s->o.max_result_event) {
        /* too big to record whole: its text excerpt, as emit_tool_result cuts a tree */
        struct buf t = BUF_INIT;
        mcp_alter_result_text_scan(line, r, &t, 1024);
        emit_tool_result_ex(s, c, NULL, NULL, 0, NULL, 0,
                            json_pack("{s:{s:b, s:I, s:s%}}", "result", "truncated", 1, "bytes",
                                      (json_int_t)r->len, "text", t.data, t.len));
        buf_release(&t);
    } else {
        emit_tool_result_ex(s, c, NULL, line + r->off, r->len, NULL, 0, NULL);
    }
    call_free(s, c);
    return 1;
}

static void on_tool_reply(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                          const char *line, size_t len)
{
    const struct fault_handler *h = c->fault.inject ? c->fh : NULL;
    struct reply r = {m,    line,
                      len,  m->kind == JSONRPC_RESPONSE ? m->result : NULL,
                      NULL, (m->flags & JSONRPC_F_OPAQUE) != 0};
    json_t *opmsg = NULL;
    int changed = 0;

    if (m->flags & JSONRPC_F_SCANNED) {
        if (h == NULL && tool_reply_scanned(s, c, m, line, len))
            return;
        jsonrpc_msg_tree(m, line, len);
        r.result = m->kind == JSONRPC_RESPONSE ? m->result : NULL;
        r.opaque = (m->flags & JSONRPC_F_OPAQUE) != 0;
    }
    if (m->kind == JSONRPC_ERROR)
        r.errmsg = json_string_value(json_object_get(m->error, "message"));
    if (r.opaque && m->kind == JSONRPC_ERROR) {
        opmsg = opaque_get(line, &m->lax.error, "message", NULL);
        r.errmsg = json_string_value(opmsg);
    }
    if (m->kind == JSONRPC_ERROR && r.errmsg == NULL)
        r.errmsg = "JSON-RPC error";
    if (r.opaque)
        r.result = NULL;
    cache_first_result(s, c, r.result);
    if (h && h->on_reply) {
        h->on_reply(s, c, &r);
        goto out;
    }
    if (r.opaque) {
        if (h && h->alter && m->kind == JSONRPC_RESPONSE) {
            refuse_unparsed(s, c, c->fault.kind, 0, 1);
            goto out;
        }
        if (h && h->alter && m->kind == JSONRPC_ERROR)
            warn(s, "fault_not_applied", 0,
                 "%s on '%s': the server answered with an error, not a result; passed through",
                 c->fault.kind, c->tool);
        write_line(&s->to_client, line, len);
        emit_tool_result(s, c, NULL, r.errmsg, 0, opaque_result(m, line, len));
        call_free(s, c);
        goto out;
    }
    if (h == NULL) {
        write_line(&s->to_client, line, len);
        emit_tool_result(s, c, r.result, r.errmsg, 0, NULL);
        call_free(s, c);
        goto out;
    }
    if (!json_is_object(r.result)) {
        warn(s, "fault_not_applied", 0,
             "%s on '%s': the server answered with an error, not a result; passed through",
             c->fault.kind, c->tool);
        write_line(&s->to_client, line, len);
        emit_tool_result(s, c, r.result, r.errmsg, 0, NULL);
        call_free(s, c);
        goto out;
    }
    if (h->alter)
        changed = h->alter(s, c, r.result);
    rewrite_or_raw(s, changed, m->root, line, len);
    emit_tool_result(s, c, r.result, NULL, changed, NULL);
    call_free(s, c);
out:
    json_decref(opmsg);
}

/* 1 when the plan holds a fault that alters this server's tools/list replies
 * (mcp.annotation_lie). */
static int plan_has_list_fault(struct mcp_session *s)
{
    json_t *faults = plan_faults(s);
    size_t i;
    json_t *f;

    json_array_foreach(faults, i, f)
    {
        const struct fault_handler *h = handler_of(json_string_value(json_object_get(f, "kind")));
        if (h && h->on_list && fault_for_mcp(f) && fault_server_matches(s, f))
            return 1;
    }
    return 0;
}

/* A result jansson cannot hold for a request other than tools/call. The handshake reply is
 * read by the scan (the server's name, tools.listChanged) and relayed as is; a tools/list
 * reply that earlier faults must change gets an error instead. */
static void on_opaque_reply(struct mcp_session *s, struct call *c, struct jsonrpc_msg *m,
                            const char *line, size_t len)
{
    const struct jsonrpc_span *r = &m->lax.result;

    if (strcmp(c->method, "initialize") == 0 || strcmp(c->method, "server/discover") == 0) {
        json_t *name = opaque_get(line, r, "serverInfo", "name");
        const char *keys[] = {"capabilities", "tools", "listChanged", NULL};
        struct jsonrpc_span lc;
        if (!s->server_named && json_string_length(name) > 0) {
            free(s->server);
            s->server = xstrdup(json_string_value(name));
        }
        json_decref(name);
        s->client_saw_list_changed = jsonrpc_lax_path(line, r, keys, &lc) && lc.type == 't';
        if (!s->client_saw_list_changed && plan_may_notify(s))
            warn(s, "fault_unparsed", 0,
                 "the %s reply is JSON that the shim cannot parse: tools.listChanged is not "
                 "announced to the client",
                 c->method);
    } else if (strcmp(c->method, "tools/list") == 0) {
        if (json_object_size(s->removed) + json_object_size(s->redefined) +
                json_object_size(s->drift) >
            0) {
            struct buf t = BUF_INIT;
            warn(s, "fault_unparsed", 0,
                 "a tools/list reply that earlier faults must change is JSON that the shim "
                 "cannot parse; the client gets a JSON-RPC error");
            mcp_alter_canary_text(&t,
                                  "faultline could not apply the tool list changes of earlier "
                                  "faults: the MCP server's tools/list reply is JSON that the "
                                  "MCP shim cannot parse",
                                  canary(s));
            if (!s->client_gone)
                answer_error(s, c, JSONRPC_INTERNAL_ERROR, t.data);
            buf_release(&t);
            return;
        }
        if (plan_has_list_fault(s))
            warn(s, "fault_not_applied", 0,
                 "mcp.annotation_lie: the tools/list reply is JSON that the shim cannot parse; "
                 "passed through unchanged");
    }
    write_line(&s->to_client, line, len);
}

static void on_server_reply(struct mcp_session *s, struct jsonrpc_msg *m, const char *line,
                            size_t len)
{
    struct call *c = m->id ? jsonrpc_idmap_take(&s->c2s, m->id) : NULL;

    if (c == NULL) {
        char idt[128];
        id_text(m->id, idt, sizeof(idt));
        warn(s, "jsonrpc_unknown_id", 0, "%s for id %s, which the client never asked",
             jsonrpc_kind_name(m->kind), idt);
        if (!s->client_gone)
            write_line(&s->to_client, line, len);
        return;
    }
    c->in_map = 0;
    if ((m->flags & JSONRPC_F_SCANNED) && strcmp(c->method, "tools/call") != 0 &&
        (strcmp(c->method, "initialize") == 0 || strcmp(c->method, "server/discover") == 0 ||
         strcmp(c->method, "tools/list") == 0))
        jsonrpc_msg_tree(m, line, len); /* the handshake and the tool list are read as trees */
    if (c->dup)
        jsonrpc_msg_tree(m, line, len);
    if (c->dup) {
        /* The shim's own copy: the client never asked for it. */
        json_t *x = (m->flags & JSONRPC_F_OPAQUE) ? opaque_result(m, line, len) : json_object();
        json_object_set_new(x, "copy", json_integer(c->dup));
        emit_tool_result(s, c, m->result,
                         m->kind == JSONRPC_ERROR
                             ? json_string_value(json_object_get(m->error, "message"))
                             : NULL,
                         1, x);
        if (c->copies_left > 0 && !s->server_gone)
            send_duplicate(s, c->tool, c->params, c->dup + 1, c->copies_left - 1, c->gap_ms,
                           &c->fault, c->stateless);
        call_free(s, c);
        return;
    }
    if (c->cancelled || c->state != CALL_FORWARDED) {
        write_line(&s->to_client, line, len);
        call_free(s, c);
        return;
    }
    if (m->kind == JSONRPC_RESPONSE && (m->flags & JSONRPC_F_OPAQUE) &&
        strcmp(c->method, "tools/call") != 0) {
        on_opaque_reply(s, c, m, line, len);
        call_free(s, c);
        return;
    }
    if (m->kind == JSONRPC_RESPONSE && json_is_object(m->result) &&
        (strcmp(c->method, "initialize") == 0 || strcmp(c->method, "server/discover") == 0)) {
        on_capabilities_reply(s, m, line, len);
        call_free(s, c);
        return;
    }
    if (m->kind == JSONRPC_RESPONSE && json_is_object(m->result) &&
        strcmp(c->method, "tools/list") == 0) {
        on_tools_list_reply(s, m, line, len);
        call_free(s, c);
        return;
    }
    if (strcmp(c->method, "tools/call") == 0) {
        on_tool_reply(s, c, m, line, len);
        return;
    }
    write_line(&s->to_client, line, len);
    call_free(s, c);
}

static void on_server_request(struct mcp_session *s, struct jsonrpc_msg *m, const char *line,
                              size_t len)
{
    char *method = xstrdup(m->method);
    int rc = jsonrpc_idmap_put(&s->s2c, m->id, method);

    if (rc < 0) {
        free(method);
        char idt[128];
        id_text(m->id, idt, sizeof(idt));
        warn(s, rc == ERR_LIMIT ? "jsonrpc_pending_limit" : "jsonrpc_duplicate_id", 0,
             "server request id %s ('%s') not tracked", idt, m->method);
    }
    write_line(&s->to_client, line, len);
}

static void on_server_notification(struct mcp_session *s, struct jsonrpc_msg *m, const char *line,
                                   size_t len)
{
    if (strcmp(m->method, "notifications/cancelled") == 0) {
        json_t *own = scanned(m) ? opaque_get(line, &m->lax.params, "requestId", NULL) : NULL;
        json_t *rid = own ? own : json_object_get(m->params, "requestId");
        if (rid)
            free(jsonrpc_idmap_take(&s->s2c, rid));
        json_decref(own);
    }
    write_line(&s->to_client, line, len);
}

/* What differs between the two directions of mcp_session_line: who sent the line and what
 * handles each kind of message from it. */
struct line_side {
    int from_client;
    void (*request)(struct mcp_session *s, struct jsonrpc_msg *m, const char *line, size_t len);
    void (*notification)(struct mcp_session *s, struct jsonrpc_msg *m, const char *line,
                         size_t len);
    void (*response)(struct mcp_session *s, struct jsonrpc_msg *m, const char *line, size_t len);
};

static const struct line_side client_side = {1, handle_client_request, handle_client_notification,
                                             handle_client_response};
static const struct line_side server_side = {0, on_server_request, on_server_notification,
                                             on_server_reply};

/* A line that is not a JSON-RPC message (empty, not JSON, JSON of another shape): warned; the
 * client's go to the server (the server decides), the server's are dropped (the client only
 * gets protocol messages). */
static void junk_line(struct mcp_session *s, const struct jsonrpc_msg *m, const char *line,
                      size_t len, int from_client)
{
    char ex[80];

    switch (m->kind) {
    case JSONRPC_EMPTY:
        if (from_client) {
            warn(s, "jsonrpc_empty_line", 1, "an empty line");
            forward_raw(s, line, len);
        } else {
            warn(s, "jsonrpc_empty_line", 0, "an empty line (dropped)");
        }
        return;
    case JSONRPC_NOT_JSON:
        excerpt(line, len, ex, sizeof(ex));
        /* the parser's reason first, the excerpt after other words: "invalid token: 'x'" would
         * read as a credential assignment to the redaction of the log and the events */
        if (from_client)
            warn(s, "jsonrpc_not_json", 1,
                 "a line of %zu bytes that is not JSON (%s), starting '%s'", len, m->why, ex);
        else
            warn(s, "jsonrpc_not_json", 0,
                 "a line of %zu bytes that is not JSON (%s; dropped: the client only gets protocol "
                 "messages), starting '%s'",
                 len, m->why, ex);
        break;
    default: /* JSONRPC_NOT_RPC */
        if (from_client)
            warn(s, "jsonrpc_invalid", 1, "JSON that is not a JSON-RPC message: %s", m->why);
        else
            warn(s, "jsonrpc_invalid", 0, "JSON that is not a JSON-RPC message (dropped): %s",
                 m->why);
        break;
    }
    if (from_client && !s->server_gone)
        forward_raw(s, line, len);
}

/* A batch: relayed as is, its requests and replies tracked (track_batch); a client's batch
 * while the server is gone or closed is answered as a single request would be. */
static void batch_line(struct mcp_session *s, const struct jsonrpc_msg *m, const char *line,
                       size_t len, int from_client)
{
    if (m->root == NULL)
        warn(s, "jsonrpc_batch", from_client,
             "a batch jansson cannot parse (relayed as is, untracked)");
    else
        warn(s, "jsonrpc_batch", from_client, "a batch of %zu messages (relayed as is, no faults)",
             json_array_size(m->root));
    if (!from_client) {
        track_batch(s, m->root, 0);
        write_line(&s->to_client, line, len);
        return;
    }
    if (m->root != NULL && (s->server_gone || s->server_input_closed)) {
        answer_batch_closed(s, m->root); /* as a single request would be, never pending */
        return;
    }
    track_batch(s, m->root, 1);
    if (!s->server_gone)
        forward_raw(s, line, len);
}

/* One whole line from either side: the one dispatch of both directions. */
static void session_line(struct mcp_session *s, const char *line, size_t len,
                         const struct line_side *side)
{
    struct jsonrpc_msg m;

    /* No tree unless a handler asks for it (jsonrpc_msg_tree): see docs/mcp-shim.md */
    if (jsonrpc_parse_scan(line, len, &m) != JSONRPC_NOT_JSON &&
        opaque_line(s, &m, line, len, side->from_client)) {
        jsonrpc_msg_release(&m);
        assert(assert_session_state(s));
        return;
    }
    switch (m.kind) {
    case JSONRPC_EMPTY:
    case JSONRPC_NOT_JSON:
    case JSONRPC_NOT_RPC:
        junk_line(s, &m, line, len, side->from_client);
        break;
    case JSONRPC_BATCH:
        batch_line(s, &m, line, len, side->from_client);
        break;
    case JSONRPC_REQUEST:
        soft_flags(s, &m, side->from_client);
        side->request(s, &m, line, len);
        break;
    case JSONRPC_NOTIFICATION:
        soft_flags(s, &m, side->from_client);
        side->notification(s, &m, line, len);
        break;
    case JSONRPC_RESPONSE:
    case JSONRPC_ERROR:
        soft_flags(s, &m, side->from_client);
        side->response(s, &m, line, len);
        break;
    }
    jsonrpc_msg_release(&m);
    assert(assert_session_state(s));
}

void mcp_session_client_line(struct mcp_session *s, const char *line, size_t len)
{
    session_line(s, line, len, &client_side);
}

void mcp_session_server_line(struct mcp_session *s, const char *line, size_t len)
{
    session_line(s, line, len, &server_side);
}

/* Batches are relayed whole; their requests and replies are tracked so ids stay consistent,
 * and tools/call results in them are recorded, but no fault applies inside a batch. */
static void track_batch(struct mcp_session *s, json_t *arr, int from_client)
{
    size_t i;
    json_t *v;

    json_array_foreach(arr, i, v)
    {
        struct jsonrpc_msg m;
        memset(&m, 0, sizeof(m));
        switch (jsonrpc_classify(v, &m)) {
        case JSONRPC_REQUEST:
            if (from_client) {
                struct call *c = call_new(s, m.id, m.method);
                s->pending_client++;
                if (jsonrpc_idmap_put(&s->c2s, m.id, c) < 0) {
                    call_free(s, c);
                    break;
                }
                c->in_map = 1;
                c->state = CALL_FORWARDED;
                if (strcmp(m.method, "tools/call") == 0) {
                    const char *name = json_string_value(json_object_get(m.params, "name"));
                    c->tool = name ? xstrdup(name) : NULL;
                    c->args = json_incref(json_object_get(m.params, "arguments"));
                    s->tool_calls++;
                    emit_tool_call(s, c, NULL, 0);
                }
            } else {
                char *method = xstrdup(m.method);
                if (jsonrpc_idmap_put(&s->s2c, m.id, method) < 0)
                    free(method); /* untracked */
            }
            break;
        case JSONRPC_RESPONSE:
        case JSONRPC_ERROR:
            if (from_client) {
                free(m.id ? jsonrpc_idmap_take(&s->s2c, m.id) : NULL);
            } else {
                struct call *c = m.id ? jsonrpc_idmap_take(&s->c2s, m.id) : NULL;
                if (c) {
                    c->in_map = 0;
                    if (strcmp(c->method, "tools/call") == 0 && !c->dup)
                        emit_tool_result(
                            s, c, m.result,
                            m.kind == JSONRPC_ERROR
                                ? json_string_value(json_object_get(m.error, "message"))
                                : NULL,
                            0, NULL);
                    call_free(s, c);
                }
            }
            break;
        default:
            break;
        }
    }
}

/* ---- over-long lines, ends and timers ---- */

void mcp_session_client_too_long(struct mcp_session *s, uint64_t len, const struct jsonrpc_skim *sk)
{
    json_t *id = jsonrpc_skim_id(sk);

    warn(s, "jsonrpc_line_too_long", 1, "a line of %llu bytes over the limit was dropped%s",
         (unsigned long long)len, id && sk->has_method ? "; the request gets an error" : "");
    if (id && sk->has_method && !s->client_gone) {
        struct buf t = BUF_INIT;
        json_t *msg;
        buf_addf(&t, "request of %llu bytes exceeds the MCP shim's line limit",
                 (unsigned long long)len);
        msg = jsonrpc_make_error(id, JSONRPC_INVALID_REQUEST, t.data, NULL);
        jsonrpc_write(&s->to_client, msg);
        json_decref(msg);
        buf_release(&t);
    }
    json_decref(id);
    assert(assert_session_state(s));
}

void mcp_session_server_too_long(struct mcp_session *s, uint64_t len, const struct jsonrpc_skim *sk)
{
    json_t *id = jsonrpc_skim_id(sk);
    struct buf t = BUF_INIT;

    warn(s, "jsonrpc_line_too_long", 0, "a line of %llu bytes over the limit was dropped",
         (unsigned long long)len);
    if (id && sk->has_method) {
        /* A server request the client will never see: refuse it on the client's behalf. */
        json_t *msg;
        free(jsonrpc_idmap_take(&s->s2c, id));
        buf_addf(&t, "request of %llu bytes exceeds the MCP shim's line limit",
                 (unsigned long long)len);
        msg = jsonrpc_make_error(id, JSONRPC_INVALID_REQUEST, t.data, NULL);
        if (!s->server_gone && !s->server_input_closed)
            jsonrpc_write(&s->to_server, msg);
        json_decref(msg);
    } else if (id && (sk->has_result || sk->has_error)) {
        struct call *c = jsonrpc_idmap_take(&s->c2s, id);
        if (c) {
            c->in_map = 0;
            buf_addf(&t, "the MCP server's reply (%llu bytes) exceeds the MCP shim's line limit",
                     (unsigned long long)len);
            if (!c->dup && !c->cancelled && !s->client_gone)
                answer_error(s, c, JSONRPC_INTERNAL_ERROR, t.data);
            if (strcmp(c->method, "tools/call") == 0 && !c->dup)
                emit_tool_result(s, c, NULL, t.data, 0, NULL);
            call_free(s, c);
        }
    }
    json_decref(id);
    buf_release(&t);
    assert(assert_session_state(s));
}

/* The end of one side's output, partial bytes of an unfinished line dropped: warned when any. */
static void side_eof(struct mcp_session *s, int from_client, uint64_t partial)
{
    if (partial)
        warn(s, "jsonrpc_partial_line", from_client,
             "%s in the middle of a line (%llu bytes dropped)",
             from_client ? "the client closed its output" : "the server's output ended",
             (unsigned long long)partial);
    assert(assert_session_state(s));
}

void mcp_session_client_eof(struct mcp_session *s, uint64_t partial)
{
    side_eof(s, 1, partial);
}

void mcp_session_client_gone(struct mcp_session *s)
{
    struct call *c, *next;

    if (s->client_gone)
        return;
    s->client_gone = 1;
    for (c = s->calls; c; c = next) {
        next = c->next;
        if (c->state == CALL_HELD || c->state == CALL_DELAYED || c->state == CALL_WAIT_TIMEOUT) {
            if (strcmp(c->method, "tools/call") == 0 && !c->dup)
                emit_tool_result(s, c, NULL, "the client closed the connection", c->fault.inject,
                                 NULL);
            call_free(s, c);
        }
    }
    assert(assert_session_state(s));
}

void mcp_session_server_eof(struct mcp_session *s, uint64_t partial)
{
    side_eof(s, 0, partial);
}

void mcp_session_server_input_closed(struct mcp_session *s)
{
    if (!s->server_input_closed)
        warn(s, "server_input_closed", 1, "the MCP server stopped reading its input");
    s->server_input_closed = 1;
    buf_reset(&s->to_server);
    assert(assert_session_state(s));
}

void mcp_session_server_exited(struct mcp_session *s, const char *how)
{
    struct call *c, *next;
    char msg[256];

    if (s->server_gone)
        return;
    s->server_gone = 1;
    snprintf(s->gone_how, sizeof(s->gone_how), "%s", how ? how : "exited");
    snprintf(msg, sizeof(msg), "MCP server %s before answering", s->gone_how);
    buf_reset(&s->to_server);
    for (c = s->calls; c; c = next) {
        next = c->next;
        if (!c->dup && !c->cancelled && !s->client_gone)
            answer_error(s, c, JSONRPC_CONNECTION_CLOSED, msg);
        if (!c->dup && strcmp(c->method, "tools/call") == 0)
            emit_tool_result(s, c, NULL, msg, c->fault.inject, NULL);
        call_free(s, c);
    }
    assert(assert_session_state(s));
}

void mcp_session_timer(struct mcp_session *s, uint64_t token)
{
    struct call *c = NULL;

    for (size_t i = 0; i < s->ntimers; i++) {
        if (s->timers[i].token == token) {
            c = s->timers[i].c;
            s->timers[i] = s->timers[--s->ntimers];
            break;
        }
    }
    if (c == NULL)
        return;
    c->timer = 0;
    switch (c->timer_what) {
    case TIMER_TIMEOUT_REPLY: {
        struct buf t = BUF_INIT;
        buf_addf(&t, "Request timed out after %lld ms", (long long)opt_int(c, "timeout_ms"));
        mcp_alter_canary_text(&t, "", canary(s));
        if (!s->client_gone)
            answer_error(s, c, JSONRPC_REQUEST_TIMEOUT, t.data);
        emit_tool_result(s, c, NULL, t.data, 1, NULL);
        buf_release(&t);
        call_free(s, c);
        break;
    }
    case TIMER_FORWARD:
        if (s->server_gone || s->server_input_closed) {
            if (!c->dup && !s->client_gone)
                answer_error(s, c, JSONRPC_CONNECTION_CLOSED, "MCP server is not running");
            call_free(s, c);
            break;
        }
        buf_add(&s->to_server, c->raw, c->rawlen);
        if (c->dup)
            buf_addc(&s->to_server, '\n');
        free(c->raw);
        c->raw = NULL;
        c->state = CALL_FORWARDED;
        break;
    case TIMER_COMMIT_ERROR:
        send_commit_timeout(s, c);
        break;
    }
    assert(assert_session_state(s));
}

/* ---- lifecycle ---- */

struct mcp_session *mcp_session_new(const struct mcp_session_opts *o, const struct mcp_backend *b,
                                    const struct mcp_host *h)
{
    struct mcp_session *s = xcalloc(1, sizeof(*s));

    s->o = *o;
    if (s->o.max_pending == 0)
        s->o.max_pending = 10000;
    if (s->o.max_result_event == 0)
        s->o.max_result_event = 16 * 1024;
    if (s->o.warn_limit == 0)
        s->o.warn_limit = 20;
    s->b = *b;
    s->h = *h;
    s->server_named = o->server != NULL && *o->server;
    s->server = s->server_named ? xstrdup(o->server) : NULL;
    s->o.server = NULL;
    buf_init(&s->to_server, 0);
    buf_init(&s->to_client, 0);
    jsonrpc_idmap_init(&s->c2s, s->o.max_pending);
    jsonrpc_idmap_init(&s->s2c, s->o.max_pending);
    s->tools = json_object();
    s->removed = json_object();
    s->redefined = json_object();
    s->drift = json_object();
    s->stale = json_object();
    return s;
}

struct buf *mcp_session_to_server(struct mcp_session *s)
{
    return &s->to_server;
}

struct buf *mcp_session_to_client(struct mcp_session *s)
{
    return &s->to_client;
}

size_t mcp_session_pending(const struct mcp_session *s)
{
    return s->pending_client;
}

void mcp_session_finish(struct mcp_session *s)
{
    json_t *counts = json_object();

    for (size_t i = 0; i < s->nwarns; i++)
        if (s->warns[i].n > s->o.warn_limit)
            json_object_set_new(counts, s->warns[i].code,
                                json_integer((json_int_t)(s->warns[i].n - s->o.warn_limit)));
    if (json_object_size(counts) > 0) {
        log_warn("mcp", "some warnings were only counted (over %zu of a kind)", s->o.warn_limit);
        json_t *ev = ev_new(EVKIND_WARNING);
        ev_set_str(ev, "code", "warnings_suppressed");
        ev_set_str(ev, "message", "warnings over the per-kind limit were only counted");
        ev_set(ev, "counts", counts);
        emit(s, ev);
    } else {
        json_decref(counts);
    }
}

static void free_str(void *p)
{
    free(p);
}

void mcp_session_free(struct mcp_session *s)
{
    if (s == NULL)
        return;
    while (s->calls)
        call_free_ex(s, s->calls, 0);
    jsonrpc_idmap_release(&s->c2s, NULL);
    jsonrpc_idmap_release(&s->s2c, free_str);
    buf_release(&s->to_server);
    buf_release(&s->to_client);
    json_decref(s->tools);
    json_decref(s->removed);
    json_decref(s->redefined);
    json_decref(s->drift);
    json_decref(s->stale);
    free(s->timers);
    free(s->server);
    free(s);
}
