/*
 * proxy: the model API reverse proxy of the controller, a handler of its core (ctl.h): it takes
 * every target the handlers registered before it (the control API) leave, and keeps its own
 * state (struct proxy: the upstreams, the calls in flight, the keys seen); the cost and the
 * model call numbers are the core's account.
 *
 * One struct pcall per proxied request joins the client side (struct hreq, server.h) to the
 * upstream side (struct ureq, upstream.h). A model call (POST to /v1/messages,
 * /v1/chat/completions or /v1/responses) is parsed to learn its model and whether it streams,
 * recorded (model_request), checked against the cost ceiling, and offered to the plan
 * (plan_decide with the controller-model injector); a pass-through request (any other path,
 * count_tokens) is only forwarded. The body goes upstream byte for byte unless a fault changed
 * it (llm.context_trim, llm.model_degrade re-serialise it). The response is forwarded as it
 * arrives (SSE piece by piece, never buffered whole) while a copy is fed to the usage readers
 * of src/model (wire.h): the SSE parser for streams, a bounded accumulator for whole bodies.
 * At the end the call is priced, added to the running cost, recorded (model_response), and
 * the cost ceiling checked.
 *
 * A call's life (pc_* functions):
 *   proxy_handle --refused (ceiling) or injected error--> pc_reply_error -> pc_finish
 *   proxy_handle --llm.latency--> timer --> pc_send
 *   proxy_handle --> pc_send --> on_head --retryable status, retries left--> timer --> pc_send
 *                                on_head --> response started --> on_body* --> on_done -> pc_finish
 *                                on_error --before the head, retries left--> timer --> pc_send
 *                                on_error --before the head--> 502/504 -> pc_finish
 *                                on_error --mid-body--> client cut -> pc_finish
 *   on_body (stream cut fault) --N events forwarded--> client cut -> pc_finish
 *   client gone (on_close) --> upstream cancelled -> pc_finish
 * Upstream retries (429, 5xx, connection errors, with backoff) never apply to a fault the
 * proxy injected itself: the agent meets an injected failure as it would one whose retries
 * were spent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "control/ctl.h"
#include "events/ev.h"
#include "control/jscan.h"
#include "experiment/catalog.h"
#include "control/faults.h"
#include "control/upstream.h"
#include "codec/sse.h"
#include "codec/wire.h"
#include "util/log.h"
#include "util/num.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define PAUSE_AT (256 * 1024)      /* client output pending before upstream reads pause */
#define ACC_MAX ((size_t)16 << 20) /* whole response bodies kept for accounting */
#define TEXT_EVENT_MAX 4096        /* assistant text kept in a model_response event */
/* Request bodies parsed into a tree (the scan's fallback, the faults that rewrite a body):
 * jansson takes about a second over 30 MiB, the whole loop's time. Larger bodies the scan
 * refuses are forwarded unread (model_request says so); larger bodies are not rewritten. */
#define TREE_MAX ((size_t)4 << 20)

#define PROXY_MAX_SECRETS 16
#define PROXY_MAX_UNKNOWN 16

/* The proxy's state (its handler's): the upstreams, the calls in flight, what it remembers. */
struct proxy {
    struct ctl *ctl;
    struct upstream *up_anthropic, *up_openai;
    struct pcall *calls;
    size_t ncalls;
    uint64_t next_pass_id; /* pass-through calls (model calls are numbered by the core) */
    /* upstream keys seen, registered with the events writer for redaction */
    char *secrets[PROXY_MAX_SECRETS];
    size_t nsecrets;
    /* unknown model names already warned about (cost_unknown), bounded */
    char *unknown_models[PROXY_MAX_UNKNOWN];
    size_t nunknown;
};

struct pcall {
    struct ctl *ctl;
    struct proxy *px;
    struct pcall *prev, *next;
    struct hreq *r;
    struct ureq *q;
    struct upstream *up;
    struct event *timer; /* latency or retry backoff */
    enum wire_api api;
    enum wire_provider prov;
    int model_call; /* a generation call: faults, accounting, events */
    int stream;
    char id[32];
    char model[WIRE_MODEL_MAX]; /* the model forwarded */
    char method[16];
    struct buf target; /* upstream request target */
    struct buf uhdrs;  /* header lines for upstream */
    struct buf newbody;
    const char *body; /* what goes upstream: the client's body, or newbody */
    size_t body_len;
    int attempt;
    int64_t t0;
    /* the fault injected into this call */
    int faulted; /* a controller-model fault was applied to this call */
    size_t fault_index;
    uint64_t call_index;
    long cut_after; /* llm.upstream_5xx stream cut: events to forward, -1 when none */
    int cut_status;
    /* response */
    int status;
    int started; /* client response started */
    int is_sse;
    int paused;
    struct sse_parser *sse;
    int sse_broken;
    struct wire_result res;
    int res_init;
    struct buf acc; /* whole body, for accounting */
    int acc_over;
    size_t events_fwd;
    struct buf held; /* stream cut: the last complete event, not forwarded yet */
    int has_held;
};

static void pc_send(struct pcall *pc);
static void pc_finish(struct pcall *pc, const char *error);

static const char *api_event_name(enum wire_api api)
{
    switch (api) {
    case WIRE_API_ANTHROPIC_MESSAGES:
        return "anthropic-messages";
    case WIRE_API_ANTHROPIC_COUNT_TOKENS:
        return "anthropic-count-tokens";
    case WIRE_API_OPENAI_CHAT:
        return "openai-chat";
    case WIRE_API_OPENAI_RESPONSES:
        return "openai-responses";
    default:
        return "other";
    }
}

/* ---- call lifetime ---- */

static struct pcall *pc_new(struct proxy *px, struct hreq *r)
{
    struct pcall *pc = xcalloc(1, sizeof(*pc));

    pc->ctl = px->ctl;
    pc->px = px;
    pc->r = r;
    pc->cut_after = -1;
    pc->t0 = time_mono_ns();
    buf_init(&pc->target, 0);
    buf_init(&pc->uhdrs, 0);
    buf_init(&pc->newbody, 0);
    buf_init(&pc->acc, ACC_MAX);
    buf_init(&pc->held, 0);
    pc->next = px->calls;
    if (px->calls)
        px->calls->prev = pc;
    px->calls = pc;
    px->ncalls++;
    return pc;
}

static void pc_free(struct pcall *pc)
{
    struct proxy *px = pc->px;

    if (pc->prev)
        pc->prev->next = pc->next;
    else
        px->calls = pc->next;
    if (pc->next)
        pc->next->prev = pc->prev;
    px->ncalls--;
    if (pc->timer)
        event_free(pc->timer);
    sse_parser_free(pc->sse);
    if (pc->res_init)
        wire_result_release(&pc->res);
    buf_release(&pc->target);
    buf_release(&pc->uhdrs);
    buf_release(&pc->newbody);
    buf_release(&pc->acc);
    buf_release(&pc->held);
    free(pc);
}

static void pc_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    pc_send(arg);
}

static void pc_later(struct pcall *pc, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    if (pc->timer == NULL)
        pc->timer = evtimer_new(pc->ctl->base, pc_timer_cb, pc);
    evtimer_add(pc->timer, &tv);
}

/* ---- requests ---- */

/* Keys the agent sends upstream are registered with the events writer, so that no event can
 * carry them, whatever field they turn up in. */
static void note_secret(struct proxy *px, const char *value)
{
    if (value == NULL || strlen(value) < 8)
        return;
    for (size_t i = 0; i < px->nsecrets; i++)
        if (strcmp(px->secrets[i], value) == 0)
            return;
    if (px->nsecrets == PROXY_MAX_SECRETS)
        return;
    px->secrets[px->nsecrets++] = xstrdup(value);
    events_add_secret(px->ctl->ev, value);
}

static void note_secrets(struct proxy *px, struct hreq *r)
{
    const char *auth = hreq_header(r, "authorization");

    note_secret(px, hreq_header(r, "x-api-key"));
    note_secret(px, hreq_header(r, "api-key"));
    if (auth) {
        const char *sp = strchr(auth, ' ');
        note_secret(px, sp ? sp + 1 : auth);
    }
}

/* The upstream for a request: by API, else by the headers a provider's SDK sends. */
static struct upstream *pick_upstream(struct proxy *px, enum wire_api api, struct hreq *r)
{
    enum wire_provider p = wire_api_provider(api);

    if (p == WIRE_PROVIDER_OPENAI)
        return px->up_openai;
    if (p == WIRE_PROVIDER_ANTHROPIC)
        return px->up_anthropic;
    if (hreq_header(r, "anthropic-version") || hreq_header(r, "x-api-key"))
        return px->up_anthropic;
    if (hreq_header(r, "authorization") || hreq_header(r, "openai-organization"))
        return px->up_openai;
    return px->up_anthropic;
}

/* The upstream target: the origin's prefix, then the client's target, except that a prefix
 * the target already starts with is not doubled (OpenAI base URLs end in /v1). */
static void build_target(struct pcall *pc, const char *target)
{
    const char *prefix = upstream_prefix(pc->up);
    size_t pl = strlen(prefix);

    if (pl && strncmp(target, prefix, pl) == 0 &&
        (target[pl] == '/' || target[pl] == '?' || target[pl] == '\0'))
        buf_adds(&pc->target, target);
    else {
        buf_adds(&pc->target, prefix);
        buf_adds(&pc->target, target);
    }
}

/* Appends "Name: value\r\n" (no printf: this runs for every header of every call). */
static void add_field(struct buf *b, const struct http_field *f)
{
    buf_adds(b, f->name);
    buf_add(b, ": ", 2);
    buf_adds(b, f->value);
    buf_add(b, "\r\n", 2);
}

/* Copies the client's header fields for upstream, without hop-by-hop fields, those the
 * Connection field names, and Accept-Encoding (the proxy reads the body, so it asks for it
 * uncompressed). Keys and unknown fields go through untouched. */
static void build_headers(struct pcall *pc, const struct http_head *h)
{
    const char *conn = http_head_get(h, "connection");

    for (size_t i = 0; i < h->nfields; i++) {
        const struct http_field *f = &h->fields[i];
        if (http_is_hop_field(f->name) || strcasecmp(f->name, "accept-encoding") == 0 ||
            (conn && http_list_has(conn, f->name)))
            continue;
        add_field(&pc->uhdrs, f);
    }
}

/* Response header fields for the client: the upstream's, without hop-by-hop fields. */
static void response_headers(const struct http_head *h, struct buf *out)
{
    const char *conn = http_head_get(h, "connection");

    for (size_t i = 0; i < h->nfields; i++) {
        const struct http_field *f = &h->fields[i];
        if (http_is_hop_field(f->name) || (conn && http_list_has(conn, f->name)))
            continue;
        add_field(out, f);
    }
}

/* ---- events ---- */

static json_t *usage_json(const struct wire_usage *u)
{
    return json_pack("{s:I,s:I,s:I,s:I}", "input_tokens", (json_int_t)u->input_tokens,
                     "output_tokens", (json_int_t)u->output_tokens, "cache_creation_input_tokens",
                     (json_int_t)u->cache_write_tokens, "cache_read_input_tokens",
                     (json_int_t)u->cache_read_tokens);
}

/* A prefix of s of at most max bytes that does not end inside a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

static void emit_fault(struct pcall *pc, json_t *detail)
{
    struct ctl *ctl = pc->ctl;
    json_t *f = ev_new(EVKIND_FAULT_INJECTED);

    ev_set_str(f, "fault", plan_fault_kind(ctl->plan, pc->fault_index));
    ev_set_int(f, "fault_index", (long long)pc->fault_index);
    ev_set_int(f, "call_index", (long long)pc->call_index);
    ev_set_str(f, "target", pc->model);
    ev_set_str(f, "canary", plan_canary(ctl->plan));
    ev_set_str(f, "component", "controller-model");
    ev_set_str(f, "id", pc->id);
    ev_set_ref(f, "detail", detail);
    ctl_emit(ctl, f);
    json_decref(f);
}

/* ---- replies the proxy makes itself ---- */

static void reply_body(struct pcall *pc, int status, const char *extra_hdrs, const struct buf *b)
{
    struct buf h = BUF_INIT;

    buf_adds(&h, "Content-Type: application/json\r\n");
    if (extra_hdrs)
        buf_adds(&h, extra_hdrs);
    pc->status = status;
    if (pc->r) {
        hreq_start(pc->r, status, h.data, h.len, (int64_t)b->len);
        hreq_write(pc->r, b->data, b->len);
        hreq_end(pc->r);
        pc->r = NULL;
    }
    buf_release(&h);
}

/* The proxy's own error (upstream unreachable, over the ceiling): the provider's format. */
static void reply_wire_error(struct pcall *pc, int status, enum wire_error kind, const char *msg)
{
    struct buf b = BUF_INIT;
    enum wire_provider p = pc->prov != WIRE_PROVIDER_NONE ? pc->prov
                           : pc->up == pc->px->up_openai  ? WIRE_PROVIDER_OPENAI
                                                          : WIRE_PROVIDER_ANTHROPIC;

    wire_error_body(&b, p, kind, msg);
    reply_body(pc, status, NULL, &b);
    buf_release(&b);
}

#define PROXY_REFUSAL_MARKER "FAULTLINE-REFUSED cost_usd_above"

static void refuse_over_ceiling(struct pcall *pc)
{
    struct ctl *ctl = pc->ctl;
    char msg[256];
    json_t *j;
    char *text;
    struct buf b = BUF_INIT;

    /* A refusal of faultline's own, not an injected fault: it carries its own marker, never
     * the canary, so an agent echoing it is not counted as surfacing a fault (issue 11). */
    snprintf(msg, sizeof(msg),
             "faultline: the cost ceiling of $%g was passed ($%.4f spent); model calls are "
             "refused [" PROXY_REFUSAL_MARKER "]",
             ctl->ceiling_usd, ctl->cost_usd);
    if (pc->prov == WIRE_PROVIDER_OPENAI) {
        /* OpenAI's spent-quota error: 429 insufficient_quota, not to be retried. */
        j = json_pack("{s:{s:s,s:s,s:n,s:s}}", "error", "message", msg, "type",
                      "insufficient_quota", "param", "code", "insufficient_quota");
        text = json_dumps(j, JSON_COMPACT);
        buf_adds(&b, text ? text : "{}");
        reply_body(pc, 429, "x-should-retry: false\r\n", &b);
    } else {
        /* Anthropic answers an exhausted credit balance with a 400 invalid_request_error. */
        j = json_pack("{s:s,s:{s:s,s:s}}", "type", "error", "error", "type",
                      "invalid_request_error", "message", msg);
        text = json_dumps(j, JSON_COMPACT);
        buf_adds(&b, text ? text : "{}");
        reply_body(pc, 400, "x-should-retry: false\r\n", &b);
    }
    free(text);
    json_decref(j);
    buf_release(&b);
    pc_finish(pc, "refused: cost ceiling passed");
}

/* ---- faults ---- */

/* An int option of the decided fault, through the catalog: the plan's value when valid, else
 * the catalog's default; none only when the option has neither (no default in the catalog). */
static long opt_int(const char *kind, json_t *opts, const char *name, long none)
{
    long long v;
    return catalog_option_int(catalog_fault_find(kind), opts, name, &v) ? (long)v : none;
}

/* Serialises the transformed request as the body to send. */
static void use_new_body(struct pcall *pc, json_t *req)
{
    char *text = json_dumps(req, JSON_COMPACT);

    if (text == NULL)
        return;
    buf_reset(&pc->newbody);
    buf_adds(&pc->newbody, text);
    free(text);
    pc->body = pc->newbody.data;
    pc->body_len = pc->newbody.len;
}

/* The request as a tree, for the faults that rewrite it (parsed on first use). */
static json_t *request_tree(struct pcall *pc, json_t **req, struct err *e)
{
    if (*req != NULL)
        return *req;
    if (pc->body_len > TREE_MAX) {
        err_set(e, ERR_LIMIT, "request body of %zu bytes is over the %zu-byte rewrite limit",
                pc->body_len, TREE_MAX);
        return NULL;
    }
    *req = wire_json_parse(pc->body, pc->body_len, e);
    return *req;
}

/* ---- the controller-model faults: one handler per catalog row (docs/architecture.md) ----
 *
 * Each gets the decided fault (its row, options and indices already recorded in pc) and
 * returns what apply_fault returns: 1 when the call was answered here, 2 when it goes upstream
 * after a delay, 0 when it goes upstream now. */
typedef int (*llm_fault_fn)(struct pcall *pc, const struct plan_decision *d, json_t **reqp);

static int llm_rate_limit(struct pcall *pc, const struct plan_decision *d, json_t **reqp)
{
    struct faults_error fe;
    char hdr[64];
    json_t *detail;

    faults_error_init(&fe);
    faults_rate_limit(pc->api, plan_canary(pc->ctl->plan),
                      (int)opt_int(d->kind, d->options, "retry_after_s", 0), &fe);
    snprintf(hdr, sizeof(hdr), "retry-after: %d\r\n", fe.retry_after_s);
    detail = json_pack("{s:i,s:i}", "status", 429, "retry_after_s", fe.retry_after_s);
    emit_fault(pc, detail);
    reply_body(pc, 429, hdr, &fe.body);
    json_decref(detail);
    faults_error_release(&fe);
    pc_finish(pc, "injected llm.rate_limit");
    return 1;
}

static int llm_upstream_5xx(struct pcall *pc, const struct plan_decision *d, json_t **reqp)
{
    int status = (int)opt_int(d->kind, d->options, "status", 0); /* one of the catalog's */
    long cut = opt_int(d->kind, d->options, "stream_cut_after_chunks", -1); /* -1: not set */
    struct faults_error fe;
    json_t *detail;

    pc->cut_status = status;
    if (cut >= 0 && pc->stream) {
        pc->cut_after = cut; /* fault_injected is recorded when the cut happens */
        return 0;
    }
    faults_error_init(&fe);
    faults_upstream_5xx(pc->api, status, plan_canary(pc->ctl->plan), &fe);
    detail = json_pack("{s:i}", "status", status);
    emit_fault(pc, detail);
    reply_body(pc, status, NULL, &fe.body);
    json_decref(detail);
    faults_error_release(&fe);
    pc_finish(pc, "injected llm.upstream_5xx");
    return 1;
}

static int llm_context_trim(struct pcall *pc, const struct plan_decision *d, json_t **reqp)
{
    struct faults_trim t = {0};
    struct err e = {0};
    json_t *req = request_tree(pc, reqp, &e), *detail;

    if (req == NULL ||
        faults_context_trim(
            pc->api, req, (size_t)opt_int(d->kind, d->options, "drop_oldest", 0),
            catalog_option_bool(catalog_fault_find(d->kind), d->options, "drop_system"), &t,
            &e) != 0) {
        ctl_warn(pc->ctl, "fault_not_applied", "llm.context_trim on %s: %s", pc->id,
                 e.msg[0] ? e.msg : "request not readable");
        return 0;
    }
    use_new_body(pc, req);
    detail = json_pack("{s:I,s:I,s:b}", "dropped", (json_int_t)t.dropped, "converted",
                       (json_int_t)t.converted, "dropped_system", t.dropped_system);
    emit_fault(pc, detail);
    json_decref(detail);
    return 0;
}

static int llm_model_degrade(struct pcall *pc, const struct plan_decision *d, json_t **reqp)
{
    const char *to = json_string_value(json_object_get(d->options, "to_model"));
    char from[WIRE_MODEL_MAX];
    struct err e = {0};
    json_t *req = request_tree(pc, reqp, &e), *detail;

    if (req == NULL || faults_model_degrade(req, to, from, sizeof(from), &e) != 0) {
        ctl_warn(pc->ctl, "fault_not_applied", "llm.model_degrade on %s: %s", pc->id,
                 e.msg[0] ? e.msg : "request not readable");
        return 0;
    }
    use_new_body(pc, req);
    detail = json_pack("{s:s,s:s}", "from", from, "to", to);
    emit_fault(pc, detail);
    json_decref(detail);
    snprintf(pc->model, sizeof(pc->model), "%s", to);
    return 0;
}

static int llm_latency(struct pcall *pc, const struct plan_decision *d, json_t **reqp)
{
    long ms = opt_int(d->kind, d->options, "delay_ms", 0);
    json_t *detail;

    if (ms < 0)
        ms = 0;
    if (ms > 600000)
        ms = 600000;
    detail = json_pack("{s:I}", "delay_ms", (json_int_t)ms);
    emit_fault(pc, detail);
    json_decref(detail);
    pc_later(pc, (int)ms);
    return 2;
}

/* Indexed by the catalog row; a row the controller injects without an entry here is caught by
 * proxy_fault_handled's test (tests/unit/test_control.c). */
static const llm_fault_fn llm_faults[CATALOG_F_COUNT] = {
    [CATALOG_F_LLM_RATE_LIMIT] = llm_rate_limit,
    [CATALOG_F_LLM_UPSTREAM_5XX] = llm_upstream_5xx,
    [CATALOG_F_LLM_CONTEXT_TRIM] = llm_context_trim,
    [CATALOG_F_LLM_MODEL_DEGRADE] = llm_model_degrade,
    [CATALOG_F_LLM_LATENCY] = llm_latency,
};

int proxy_fault_handled(enum catalog_fault_id fid)
{
    return (unsigned)fid < CATALOG_F_COUNT && llm_faults[fid] != NULL;
}

/* Asks the plan about this call and applies what it says (the handler of the fault's catalog
 * row). Returns 1 when the call was answered here (an injected error), 2 when it goes upstream
 * after a delay, 0 when it goes upstream now. *req is the parsed request, or NULL until a fault
 * needs it (then parsed, and the caller frees it). */
static int apply_fault(struct pcall *pc, json_t **reqp)
{
    struct ctl *ctl = pc->ctl;
    struct plan_call call = {.component = CATALOG_INJ_CONTROLLER_MODEL,
                             .model = pc->model[0] ? pc->model : NULL};
    struct plan_decision d;
    const struct catalog_fault *row;

    if (!(plan_injectors(ctl->plan) & CATALOG_INJ_CONTROLLER_MODEL))
        return 0;
    if (plan_decide(ctl->plan, &call, &d) != 0 || !d.inject ||
        !ctl_fault_allowed(ctl, &d, call.model))
        return 0;
    pc->fault_index = d.fault_index;
    pc->call_index = d.call_index;
    row = catalog_fault_find(d.kind);
    if (row == NULL || !proxy_fault_handled(row->fid)) {
        ctl_warn(ctl, "fault_not_applied", "the controller does not inject '%s' (fault %zu)",
                 d.kind, d.fault_index);
        return 0;
    }
    pc->faulted = 1;
    return llm_faults[row->fid](pc, &d, reqp);
}

/* ---- the response ---- */

/* retry_delay's "do not retry": below every delay, not an error code. */
#define RETRY_NONE (-1)

/* The wait in ms before the next attempt of pc (after a 429 / 5xx head h, or no head), or
 * RETRY_NONE: no attempts left, shutting down, or the origin asks for a longer wait. */
static int retry_delay(struct pcall *pc, const struct http_head *h)
{
    const struct controller_config *cfg = &pc->ctl->cfg;
    long long ms = (long long)cfg->retry_base_ms << (pc->attempt < 20 ? pc->attempt : 20);

    if (pc->attempt >= cfg->retries || pc->ctl->stopping)
        return RETRY_NONE;
    if (ms > cfg->retry_max_ms)
        ms = cfg->retry_max_ms;
    if (h) {
        const char *ra_ms = http_head_get(h, "retry-after-ms");
        const char *ra = http_head_get(h, "retry-after");
        long long v;
        if (ra_ms && num_parse_ll(ra_ms, 0, 86400000, &v) == 0)
            ms = v;
        else if (ra && num_parse_ll(ra, 0, 86400, &v) == 0)
            ms = v * 1000;
        if (ms > cfg->retry_max_ms)
            return RETRY_NONE; /* the origin asks for a longer wait than we hold a call: pass it on
                                */
    }
    return (int)ms;
}

static void pc_account_event(struct pcall *pc, const struct sse_event *ev)
{
    struct err e = {0};

    if (!pc->model_call || !ev->has_data)
        return;
    /* Keep no more assistant text than the event can carry: a long stream must not hold
     * (up to WIRE_TEXT_MAX) bytes per call for nothing. */
    if (pc->res.text.len >= TEXT_EVENT_MAX)
        pc->res.text_truncated = 1;
    if (wire_result_stream_event(pc->api, &pc->res, ev, &e) != 0 && !pc->sse_broken) {
        pc->sse_broken = 1;
        ctl_warn(pc->ctl, "malformed_stream", "%s: upstream stream event unreadable: %s", pc->id,
                 e.msg);
    }
}

/* Feeds a piece of a stream to the parser (accounting only; the bytes are forwarded raw). */
static void pc_feed_stream(struct pcall *pc, const void *p, size_t n)
{
    struct sse_event ev;
    struct err e = {0};
    int rc;

    if (pc->sse == NULL || pc->sse_broken)
        return;
    if (sse_parser_feed(pc->sse, p, n) != 0)
        goto broken;
    while ((rc = sse_parser_next(pc->sse, &ev, &e)) == 1)
        pc_account_event(pc, &ev);
    if (rc == 0)
        return;
broken:
    pc->sse_broken = 1;
    ctl_warn(pc->ctl, "malformed_stream", "%s: upstream stream unreadable: %s", pc->id,
             e.msg[0] ? e.msg : "too large");
}

/* llm.upstream_5xx stream cut: the client gets what was forwarded, a comment naming the
 * fault and the canary (SSE readers skip comments), then the connection closes mid-body. */
static void pc_cut(struct pcall *pc)
{
    struct ctl *ctl = pc->ctl;
    char note[256];
    json_t *detail;

    snprintf(note, sizeof(note),
             ": faultline injected llm.upstream_5xx: stream cut after %zu events [%s]\n\n",
             pc->events_fwd, plan_canary(ctl->plan));
    detail = json_pack("{s:I,s:I}", "stream_cut_after_chunks", (json_int_t)pc->cut_after,
                       "events_forwarded", (json_int_t)pc->events_fwd);
    emit_fault(pc, detail);
    json_decref(detail);
    if (pc->r) {
        hreq_write(pc->r, note, strlen(note));
        hreq_abort(pc->r);
        pc->r = NULL;
    }
    if (pc->q) {
        ureq_cancel(pc->q);
        pc->q = NULL;
    }
    pc->cut_after = -1;
    pc_finish(pc, "stream cut by injected llm.upstream_5xx");
}

/* Stream cut mode: forwards whole events, one behind, and cuts after cut_after of them. */
static void pc_cut_feed(struct pcall *pc, const void *p, size_t n)
{
    struct sse_event ev;
    struct err e = {0};
    int rc;

    if (sse_parser_feed(pc->sse, p, n) != 0) {
        pc_cut(pc);
        return;
    }
    while ((rc = sse_parser_next(pc->sse, &ev, &e)) == 1) {
        pc_account_event(pc, &ev);
        if (!ev.has_data) {
            if (pc->r)
                hreq_write(pc->r, ev.raw, ev.raw_len);
            continue;
        }
        if (pc->has_held) {
            if (pc->r)
                hreq_write(pc->r, pc->held.data, pc->held.len);
            pc->events_fwd++;
        }
        buf_reset(&pc->held);
        buf_add(&pc->held, ev.raw, ev.raw_len);
        pc->has_held = 1;
        if ((long)pc->events_fwd >= pc->cut_after) {
            pc_cut(pc);
            return;
        }
    }
    if (rc < 0)
        pc_cut(pc);
}

static void on_head(struct ureq *q, const struct http_head *h, void *arg)
{
    struct pcall *pc = arg;
    struct buf hdrs = BUF_INIT;
    const char *ct = http_head_get(h, "content-type");
    int64_t cl = h->framing == HTTP_BODY_LENGTH ? (int64_t)h->content_length : -1;
    int delay;

    if ((h->status == 429 || h->status >= 500) && (delay = retry_delay(pc, h)) != RETRY_NONE) {
        log_info("proxy", "%s: upstream answered %d; retry %d in %d ms", pc->id, h->status,
                 pc->attempt + 1, delay);
        ureq_cancel(q);
        pc->q = NULL;
        pc->attempt++;
        pc_later(pc, delay);
        return;
    }
    pc->status = h->status;
    pc->is_sse = ct && strncasecmp(ct, "text/event-stream", 17) == 0;
    if (pc->cut_after >= 0 && (!pc->is_sse || h->status >= 300)) {
        /* Nothing to cut: fail the call with the fault's status instead. */
        struct faults_error fe;
        json_t *detail = json_pack("{s:i}", "status", pc->cut_status);
        ureq_cancel(q);
        pc->q = NULL;
        faults_error_init(&fe);
        faults_upstream_5xx(pc->api, pc->cut_status, plan_canary(pc->ctl->plan), &fe);
        emit_fault(pc, detail);
        json_decref(detail);
        pc->cut_after = -1;
        reply_body(pc, pc->cut_status, NULL, &fe.body);
        faults_error_release(&fe);
        pc_finish(pc, "injected llm.upstream_5xx");
        return;
    }
    if (pc->model_call && (pc->is_sse || pc->cut_after >= 0))
        pc->sse = sse_parser_new(0, 0);
    response_headers(h, &hdrs);
    if (pc->cut_after >= 0)
        cl = -1;
    if (pc->r) {
        hreq_start(pc->r, h->status, hdrs.data, hdrs.len, cl);
        pc->started = 1;
    }
    buf_release(&hdrs);
    if (pc->cut_after == 0)
        pc_cut(pc);
}

static void on_body(struct ureq *q, struct evbuffer *data, void *arg)
{
    struct pcall *pc = arg;
    size_t n = evbuffer_get_length(data);
    const char *p = n ? (const char *)evbuffer_pullup(data, -1) : "";

    if (pc->cut_after >= 0) {
        pc_cut_feed(pc, p, n);
        evbuffer_drain(data, n);
        return;
    }
    if (pc->model_call) {
        if (pc->is_sse) {
            pc_feed_stream(pc, p, n);
        } else if (!pc->acc_over && buf_add(&pc->acc, p, n) != 0) {
            pc->acc_over = 1;
            ctl_warn(pc->ctl, "response_too_large",
                     "%s: response body over %zu bytes is "
                     "forwarded but not accounted",
                     pc->id, (size_t)ACC_MAX);
        }
    }
    if (pc->r == NULL) {
        evbuffer_drain(data, n);
        return;
    }
    hreq_write_buffer(pc->r, data);
    if (hreq_pending(pc->r) > PAUSE_AT && !pc->paused) {
        pc->paused = 1;
        ureq_pause(q, 1);
        hreq_want_drain(pc->r);
    }
}

static void on_done(struct ureq *q, void *arg)
{
    struct pcall *pc = arg;
    struct err e = {0};

    pc->q = NULL;
    if (pc->cut_after >= 0) {
        /* The stream ended before the cut point: the last event stays withheld. */
        pc_cut(pc);
        return;
    }
    if (pc->r) {
        hreq_end(pc->r); /* the agent first; accounting and events after */
        pc->r = NULL;
    }
    if (pc->model_call && !pc->is_sse && pc->acc.len > 0 && !pc->acc_over &&
        wire_result_from_body(pc->api, pc->acc.data, pc->acc.len, &pc->res, &e) != 0)
        log_info("proxy", "%s: response body not readable for accounting: %s", pc->id, e.msg);
    pc_finish(pc, NULL);
}

static void on_error(struct ureq *q, int code, int got_head, const char *msg, void *arg)
{
    struct pcall *pc = arg;
    int delay;
    char text[400];

    pc->q = NULL;
    if (!got_head && (delay = retry_delay(pc, NULL)) != RETRY_NONE) {
        log_info("proxy", "%s: %s; retry %d in %d ms", pc->id, msg, pc->attempt + 1, delay);
        pc->attempt++;
        pc_later(pc, delay);
        return;
    }
    log_warn("proxy", "%s: upstream failed: %s", pc->id, msg);
    if (!got_head || !pc->started) {
        snprintf(text, sizeof(text), "faultline: upstream failed: %s", msg);
        reply_wire_error(pc, code == UPSTREAM_ETIMEOUT ? 504 : 502, WIRE_ERR_API, text);
        if (!pc->model_call)
            ctl_warn(pc->ctl, "upstream_error", "%s %s: %s", pc->method, pc->target.data, msg);
    } else if (pc->r) {
        hreq_abort(pc->r); /* mid-body: the client sees the stream cut, as it was */
        pc->r = NULL;
    }
    pc_finish(pc, msg);
}

static const struct ureq_callbacks upstream_cbs = {on_head, on_body, on_done, on_error};

static void pc_send(struct pcall *pc)
{
    if (pc->r == NULL) {
        pc_finish(pc, "client disconnected");
        return;
    }
    pc->q = upstream_send(pc->up, pc->method, pc->target.data, pc->uhdrs.data, pc->uhdrs.len,
                          pc->body, pc->body_len, &upstream_cbs, pc);
}

/* ---- the client side ---- */

static void on_client_close(struct hreq *r, void *arg)
{
    struct pcall *pc = arg;

    pc->r = NULL;
    if (pc->q) {
        ureq_cancel(pc->q);
        pc->q = NULL;
    }
    if (pc->timer)
        evtimer_del(pc->timer);
    pc_finish(pc, "client disconnected");
}

static void on_client_drain(struct hreq *r, void *arg)
{
    struct pcall *pc = arg;

    if (pc->paused && pc->q) {
        pc->paused = 0;
        ureq_pause(pc->q, 0);
    }
}

/* ---- the end of a call ---- */

static void warn_unknown_model(struct proxy *px, const char *model)
{
    for (size_t i = 0; i < px->nunknown; i++)
        if (strcmp(px->unknown_models[i], model) == 0)
            return;
    if (px->nunknown < PROXY_MAX_UNKNOWN)
        px->unknown_models[px->nunknown++] = xstrdup(model);
    ctl_warn(px->ctl, "cost_unknown",
             "no price for model '%s': priced at the default (highest) "
             "rates",
             model);
}

static void pc_finish(struct pcall *pc, const char *error)
{
    struct ctl *ctl = pc->ctl;
    double cost = 0, total;
    const char *model;
    json_t *ev;

    if (pc->q) {
        ureq_cancel(pc->q);
        pc->q = NULL;
    }
    if (pc->r) {
        hreq_abort(pc->r);
        pc->r = NULL;
    }
    if (!pc->model_call) {
        pc_free(pc);
        return;
    }
    model = pc->res.model[0] ? pc->res.model : pc->model;
    if (pc->res.usage.present) {
        int known = 1;
        cost = pricing_cost(ctl->prices, model, &pc->res.usage, &known);
        if (!known)
            warn_unknown_model(pc->px, model);
    }
    total = ctl_cost_add(ctl, cost);
    ev = ev_new(EVKIND_MODEL_RESPONSE);
    ev_set_str(ev, "id", pc->id);
    ev_set_str(ev, "model", model);
    ev_set_int(ev, "status", pc->status);
    ev_set_bool(ev, "stream", pc->stream);
    ev_set(ev, "usage", usage_json(&pc->res.usage));
    ev_set_num(ev, "cost_usd", cost);
    ev_set_num(ev, "cost_total_usd", total);
    ev_set_int(ev, "duration_ms", (time_mono_ns() - pc->t0) / 1000000);
    ev_set_bool(ev, "faulted", pc->faulted);
    ev_set_int(ev, "retries", pc->attempt);
    if (pc->res.stop_reason[0])
        ev_set_str(ev, "stop_reason", pc->res.stop_reason);
    if (pc->res.text.len)
        ev_set_strn(ev, "text", pc->res.text.data,
                    utf8_cut(pc->res.text.data, pc->res.text.len, TEXT_EVENT_MAX));
    if (pc->res.tool_calls)
        ev_set_int(ev, "tool_calls", (long long)pc->res.tool_calls);
    if (error)
        ev_set_str(ev, "error", error);
    else if (pc->res.error)
        ev_set_str(ev, "error", pc->res.error_message);
    if (pc->is_sse && pc->sse && sse_parser_pending(pc->sse) > 0 && !error)
        ev_set_bool(ev, "incomplete_stream", 1);
    ctl_emit_soon(ctl, ev); /* the cost above is already counted */
    json_decref(ev);
    ctl_check_ceiling(ctl);
    pc_free(pc);
}

/* ---- entry points ---- */

/*
 * The fired faults (the plan's counters: the controller decides for every component) whose
 * marker is in the request body the agent sent: what its model received next (issue 11). The
 * marker is the payload for inject.*, else the canary for a fault that shows one (catalog
 * column canary). A payload is looked for by its longest run of characters JSON never escapes,
 * at most MARKER_MAX bytes; one memmem per fault with a marker, and none before a fault fired.
 * Returns an array of fault indexes (new reference), NULL when no fault has fired.
 */
#define MARKER_MAX 64

static json_t *fault_markers(const struct plan *p, const char *body, size_t n)
{
    const char *canary = plan_canary(p);
    json_t *seen = NULL;
    int has_canary = -1;

    if (body == NULL) { /* no body at all */
        body = "";
        n = 0;
    }

    for (size_t i = 0; i < plan_nfaults(p); i++) {
        const struct catalog_fault *def = catalog_fault_find(plan_fault_kind(p, i));
        uint64_t matched, injected;
        const char *m = NULL;
        size_t mlen = 0;

        plan_fault_counters(p, i, &matched, &injected);
        if (injected == 0 || def == NULL)
            continue;
        if (seen == NULL)
            seen = json_array();
        if (strcmp(def->family, "inject") == 0) {
            const char *pl =
                json_string_value(json_object_get(plan_fault_options(p, i), "payload"));
            for (size_t k = 0, run = 0; pl && pl[k]; k++) {
                unsigned char c = (unsigned char)pl[k];
                run = c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '/' ? run + 1 : 0;
                if (run > mlen && run <= MARKER_MAX) {
                    mlen = run;
                    m = pl + k + 1 - run;
                }
            }
            if (m && memmem(body, n, m, mlen))
                json_array_append_new(seen, json_integer((json_int_t)i));
        } else if (def->canary != CATALOG_CANARY_NONE && canary && canary[0]) {
            if (has_canary < 0)
                has_canary = memmem(body, n, canary, strlen(canary)) != NULL;
            if (has_canary)
                json_array_append_new(seen, json_integer((json_int_t)i));
        }
    }
    return seen;
}

static void proxy_handle(void *state, struct hreq *r)
{
    struct proxy *px = state;
    struct ctl *ctl = px->ctl;
    const char *target = hreq_target(r);
    const char *method = hreq_method(r);
    struct pcall *pc;
    json_t *req = NULL;
    size_t blen;
    const char *body = hreq_body(r, &blen);
    int rc;

    if (target[0] != '/') {
        ctl_reply_error(r, 400, "invalid_request_error",
                        "the controller takes origin-form targets only (a path)");
        return;
    }
    note_secrets(px, r);
    pc = pc_new(px, r);
    pc->api = wire_api_from_path(target);
    pc->prov = wire_api_provider(pc->api);
    pc->up = pick_upstream(px, pc->api, r);
    snprintf(pc->method, sizeof(pc->method), "%s", method);
    pc->model_call = strcmp(method, "POST") == 0 && pc->api != WIRE_API_UNKNOWN &&
                     pc->api != WIRE_API_ANTHROPIC_COUNT_TOKENS;
    pc->body = body;
    pc->body_len = blen;
    build_target(pc, target);
    build_headers(pc, hreq_head(r));
    hreq_set_callbacks(r, on_client_close, on_client_drain, pc);

    if (pc->model_call) {
        struct wire_request_info info;
        struct jscan_info ji;
        struct err e = {0};
        int valid = 1, unread = 0;
        json_t *ev;

        wire_result_init(&pc->res);
        pc->res_init = 1;
        snprintf(pc->id, sizeof(pc->id), "m%llu", (unsigned long long)ctl_next_model_call(ctl));
        memset(&info, 0, sizeof(info));
        info.model = "";
        if (jscan_request(pc->api, body, blen, &ji) == 0) {
            /* the fast path: no tree unless a fault rewrites the body */
            size_t n = utf8_cut(ji.model ? ji.model : "", ji.model_len, sizeof(pc->model) - 1);
            memcpy(pc->model, ji.model ? ji.model : "", n);
            pc->model[n] = '\0';
            pc->stream = ji.stream;
            info.n_messages = ji.n_messages;
            info.n_tools = ji.n_tools;
        } else if (blen > TREE_MAX) {
            unread = 1; /* too large to parse on the loop: the upstream judges it */
        } else if ((req = wire_json_parse(body, blen, &e)) != NULL &&
                   wire_request_info(pc->api, req, &info, &e) == 0) {
            size_t n = utf8_cut(info.model, strlen(info.model), sizeof(pc->model) - 1);
            memcpy(pc->model, info.model, n);
            pc->model[n] = '\0';
            pc->stream = info.stream;
        } else {
            valid = 0;
        }
        ev = ev_new(EVKIND_MODEL_REQUEST);
        ev_set_str(ev, "id", pc->id);
        ev_set_str(ev, "api", api_event_name(pc->api));
        ev_set_str(ev, "model", pc->model);
        ev_set_bool(ev, "stream", pc->stream);
        ev_set_str(ev, "path", target);
        ev_set_int(ev, "messages", (long long)info.n_messages);
        ev_set_int(ev, "tools", (long long)info.n_tools);
        if (!valid)
            ev_set_bool(ev, "malformed", 1);
        if (unread)
            ev_set_bool(ev, "unread", 1);
        {
            json_t *markers = fault_markers(ctl->plan, body, blen);
            if (markers)
                ev_set(ev, "fault_markers", markers);
        }
        /* Written just after the request goes upstream, not before: the event is the record,
         * the call is what the agent waits for. Events keep their order (ctl.h). */
        ctl_emit_soon(ctl, ev);
        json_decref(ev);
        if (!valid) {
            /* Forwarded as sent: the upstream's answer is the truth about it. */
            ctl_warn(ctl, "malformed_request", "%s: %s; forwarded unchanged", pc->id, e.msg);
        }
        if (ctl->aborted) {
            json_decref(req);
            refuse_over_ceiling(pc);
            return;
        }
        if (unread)
            ctl_warn(ctl, "request_not_read",
                     "%s: body of %zu bytes is not plain enough for the scan and over the %zu-byte "
                     "parse limit; forwarded unread",
                     pc->id, blen, TREE_MAX);
        if (valid) {
            rc = apply_fault(pc, &req);
            json_decref(req);
            if (rc != 0)
                return; /* answered here (1), or forwarded after the latency timer (2) */
        } else {
            json_decref(req);
        }
    } else {
        snprintf(pc->id, sizeof(pc->id), "p%llu", (unsigned long long)++px->next_pass_id);
    }
    pc_send(pc);
}

/* ---- the handler ---- */

static void *proxy_init(struct ctl *c, struct err *e)
{
    struct proxy *px = xcalloc(1, sizeof(*px));
    struct upstream_config ucfg;

    px->ctl = c;
    memset(&ucfg, 0, sizeof(ucfg));
    ucfg.connect_timeout_ms = c->cfg.connect_timeout_ms;
    ucfg.first_byte_timeout_ms = c->cfg.first_byte_timeout_ms;
    ucfg.idle_timeout_ms = c->cfg.idle_timeout_ms;
    ucfg.ca_file = c->cfg.upstream_ca;
    px->up_anthropic = upstream_new(c->base, c->dns, c->cfg.upstream_anthropic, &ucfg, e);
    if (px->up_anthropic == NULL)
        goto fail;
    px->up_openai = upstream_new(c->base, c->dns, c->cfg.upstream_openai, &ucfg, e);
    if (px->up_openai == NULL)
        goto fail;
    return px;
fail:
    upstream_free(px->up_anthropic);
    free(px);
    return NULL;
}

/* Ends every call in flight (shutdown): clients are cut, upstream requests cancelled, each
 * call's end recorded. */
static void proxy_stop_all(void *state)
{
    struct proxy *px = state;

    while (px->calls) {
        struct pcall *pc = px->calls;
        if (pc->timer)
            evtimer_del(pc->timer);
        pc_finish(pc, "controller stopped");
    }
}

static void proxy_free(void *state)
{
    struct proxy *px = state;

    upstream_free(px->up_anthropic);
    upstream_free(px->up_openai);
    for (size_t i = 0; i < px->nsecrets; i++)
        free(px->secrets[i]);
    for (size_t i = 0; i < px->nunknown; i++)
        free(px->unknown_models[i]);
    free(px);
}

static size_t proxy_in_flight(void *state)
{
    return ((struct proxy *)state)->ncalls;
}

/* The reject hook's provider-aware error body (for 413 and friends on a model API path). */
static void proxy_reject_body(void *state, const struct http_head *h, int status, const char *msg,
                              struct buf *body)
{
    enum wire_api api = h ? wire_api_from_path(h->target) : WIRE_API_UNKNOWN;
    enum wire_provider p = wire_api_provider(api);

    if (p == WIRE_PROVIDER_NONE)
        return;
    buf_reset(body);
    wire_error_body(body, p, wire_error_for_status(status), msg);
}

const struct ctl_handler proxy_handler = {
    .name = "model proxy",
    .side = "controller-model",
    .prefix = NULL,
    .init = proxy_init,
    .handle = proxy_handle,
    .stop = proxy_stop_all,
    .free = proxy_free,
    .in_flight = proxy_in_flight,
    .reject_body = proxy_reject_body,
};
