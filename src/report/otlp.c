/*
 * otlp: the run as OpenTelemetry traces, OTLP/JSON (an ExportTraceServiceRequest), for the
 * trace viewers people already use (docs/report.md, "OTLP"). Read from each repetition's
 * events.jsonl (at most RPT_EVENTS_MAX events, OTLP_SPANS_MAX spans):
 *
 *   one trace per repetition (traceId: 16 bytes from the repetition's run id), a root span
 *   "faultline repetition N" (kind INTERNAL) over its first to its last event;
 *   a span per model call, model_request to the model_response of the same id (kind CLIENT,
 *   GenAI conventions: "chat MODEL", gen_ai.operation.name, gen_ai.provider.name,
 *   gen_ai.request.model, gen_ai.response.model, gen_ai.usage.input_tokens / output_tokens,
 *   http.response.status_code);
 *   a span per tool call, tool_call to its tool_result (MCP conventions: "tools/call TOOL",
 *   mcp.method.name, gen_ai.tool.name, gen_ai.operation.name execute_tool);
 *   each injected fault a span event "faultline.fault_injected" (fault, canary, target) on the
 *   call it hit (the model call of its id, else the latest tool call of its target), else on
 *   the root; that span gets status ERROR and error.type (the HTTP status of a failed model
 *   call, else the fault's id); a failed tool call is error.type tool_error; an abort is an
 *   event on the root.
 *
 * Span ids are derived from the run id and the event's seq, so the same run folder gives the
 * same file. Times are the events' t_us in nanoseconds. Strings that are not UTF-8 are
 * sanitized (U+FFFD).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events/events.h"
#include "events/view.h"
#include "report/esc.h"
#include "report/rpt.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/utf8.h"
#include "util/banned.h"

#define OTLP_SPANS_MAX 100000 /* per repetition; past it calls are counted, not drawn */
#define OTLP_KIND_INTERNAL 1
#define OTLP_KIND_CLIENT 3
#define OTLP_STATUS_ERROR 2

enum span_kind { SPAN_MODEL, SPAN_TOOL };

struct span {
    enum span_kind kind;
    char id[96];   /* the event's id (model_request / tool_call) */
    char tool[96]; /* tool calls: the tool, for a fault that names only its target */
    int open;
    int errored;
    json_t *j;
};

struct trace {
    char trace_id[33], root_id[17];
    const char *run;
    struct span *s;
    size_t n, alloc, dropped;
    json_t *root_events;
    int64_t t0, t1;
};

/* A valid UTF-8 JSON string of s[0..n) (sanitized). */
static json_t *str_n(const char *s, size_t n)
{
    struct buf b = BUF_INIT;
    json_t *j;

    utf8_sanitize(s, n, &b);
    j = json_stringn(b.data, b.len);
    buf_release(&b);
    return j ? j : json_string("");
}

static json_t *attr(const char *key, const char *type, json_t *v)
{
    return json_pack("{s:s,s:{s:o}}", "key", key, "value", type, v);
}

static void add_str(json_t *attrs, const char *key, const char *s)
{
    json_array_append_new(attrs, attr(key, "stringValue", str_n(s, strlen(s))));
}

/* An integer attribute as a JSON number, as OpenTelemetry's own JSON encoder writes it (the
 * protobuf JSON mapping also takes a string). */
static void add_int(json_t *attrs, const char *key, long long v)
{
    json_array_append_new(attrs, attr(key, "intValue", json_integer(v)));
}

static void add_bool(json_t *attrs, const char *key, int v)
{
    json_array_append_new(attrs, attr(key, "boolValue", json_boolean(v)));
}

static json_t *nanos(int64_t us)
{
    char t[32];
    snprintf(t, sizeof(t), "%lld", (long long)us * 1000);
    return json_string(t);
}

/* nbytes (8 or 16) of ids as lowercase hex, from the run id, a tag and a number. */
static void hex_id(char *out, size_t nbytes, const char *run, const char *tag, long long n)
{
    char key[512];
    int len = snprintf(key, sizeof(key), "%.300s/%s/%lld", run, tag, n);
    for (size_t k = 0; k < nbytes / 8; k++) {
        uint64_t h = hash64(key, (size_t)len, 0x6f746c70u + k); /* "otlp" */
        if (h == 0)
            h = 1; /* an all-zero id is invalid */
        snprintf(out + 16 * k, 17, "%016llx", (unsigned long long)h);
    }
}

static const char *provider_of(const char *api)
{
    return strncmp(api, "anthropic", 9) == 0 ? "anthropic"
           : strncmp(api, "openai", 6) == 0  ? "openai"
                                             : api;
}

static void vstr(const struct events_view *v, const char *key, char *out, size_t size)
{
    out[0] = '\0';
    if (events_view_string(v, key, out, size, NULL) == ERR_NOTFOUND)
        out[0] = '\0';
}

static struct span *span_new(struct trace *tr, enum span_kind kind, const struct events_view *v,
                             int64_t us)
{
    char name[256], sid[17], model[128], api[64], tool[96], server[96], src[32];
    long long seq = 0;
    struct span *s;
    json_t *attrs = json_array();

    if (tr->n >= OTLP_SPANS_MAX) {
        tr->dropped++;
        json_decref(attrs);
        return NULL;
    }
    if (tr->n == tr->alloc) {
        tr->alloc = tr->alloc ? 2 * tr->alloc : 64;
        tr->s = xrealloc(tr->s, tr->alloc * sizeof(*tr->s));
    }
    s = &tr->s[tr->n++];
    memset(s, 0, sizeof(*s));
    s->kind = kind;
    s->open = 1;
    vstr(v, "id", s->id, sizeof(s->id));
    events_view_int(v, "seq", &seq);
    hex_id(sid, 8, tr->run, "span", seq);
    if (kind == SPAN_MODEL) {
        vstr(v, "model", model, sizeof(model));
        vstr(v, "api", api, sizeof(api));
        snprintf(name, sizeof(name), "chat %s", model);
        add_str(attrs, "gen_ai.operation.name", "chat");
        add_str(attrs, "gen_ai.provider.name", provider_of(api));
        add_str(attrs, "gen_ai.request.model", model);
        add_str(attrs, "faultline.api", api);
    } else {
        vstr(v, "tool", tool, sizeof(tool));
        vstr(v, "server", server, sizeof(server));
        vstr(v, "src", src, sizeof(src));
        snprintf(s->tool, sizeof(s->tool), "%s", tool);
        snprintf(name, sizeof(name), "tools/call %s", tool);
        add_str(attrs, "mcp.method.name", "tools/call");
        add_str(attrs, "gen_ai.operation.name", "execute_tool");
        add_str(attrs, "gen_ai.tool.name", tool);
        if (server[0])
            add_str(attrs, "faultline.mcp.server", server);
        add_str(attrs, "faultline.seen_by", src);
    }
    s->j = json_pack("{s:s,s:s,s:s,s:o,s:i,s:o,s:o,s:o,s:[]}", "traceId", tr->trace_id, "spanId",
                     sid, "parentSpanId", tr->root_id, "name", str_n(name, strlen(name)), "kind",
                     OTLP_KIND_CLIENT, "startTimeUnixNano", nanos(us), "endTimeUnixNano", nanos(us),
                     "attributes", attrs, "events");
    return s;
}

/* The latest span of kind whose id (or, for a tool without an id, tool) matches. */
static struct span *span_find(struct trace *tr, enum span_kind kind, const char *id,
                              const char *tool, int open_only)
{
    for (size_t i = tr->n; i-- > 0;) {
        struct span *s = &tr->s[i];
        if (s->kind != kind || (open_only && !s->open))
            continue;
        if (id[0] ? strcmp(s->id, id) == 0 : (tool && strcmp(s->tool, tool) == 0))
            return s;
    }
    return NULL;
}

static void span_error(struct span *s, const char *type, const char *message)
{
    if (s->errored)
        return;
    s->errored = 1;
    add_str(json_object_get(s->j, "attributes"), "error.type", type);
    json_object_set_new(s->j, "status",
                        json_pack("{s:i,s:o}", "code", OTLP_STATUS_ERROR, "message",
                                  str_n(message, strlen(message))));
}

static void span_end(struct span *s, const struct events_view *v, int64_t us)
{
    json_t *attrs = json_object_get(s->j, "attributes"), *usage;
    char model[128], err[256], status[24];
    long long code = 0;
    int ok = 1, faulted = 0;

    s->open = 0;
    json_object_set_new(s->j, "endTimeUnixNano", nanos(us));
    events_view_bool(v, "faulted", &faulted);
    if (faulted)
        add_bool(attrs, "faultline.faulted", 1);
    vstr(v, "error", err, sizeof(err));
    if (s->kind == SPAN_MODEL) {
        vstr(v, "model", model, sizeof(model));
        add_str(attrs, "gen_ai.response.model", model);
        if ((usage = events_view_get(v, "usage")) != NULL) {
            add_int(attrs, "gen_ai.usage.input_tokens", esc_int(usage, "input_tokens", 0));
            add_int(attrs, "gen_ai.usage.output_tokens", esc_int(usage, "output_tokens", 0));
            json_decref(usage);
        }
        if (events_view_int(v, "status", &code) == 0) {
            add_int(attrs, "http.response.status_code", code);
            if (code >= 400) {
                snprintf(status, sizeof(status), "%lld", code);
                span_error(s, status, err[0] ? err : status);
            }
        }
    } else {
        events_view_bool(v, "ok", &ok);
        if (!ok)
            span_error(s, "tool_error", err[0] ? err : "the tool call failed");
    }
}

/* A fault_injected event: a span event on the call it hit (or the root). */
static void fault_event(struct trace *tr, const struct events_view *v, int64_t us)
{
    char fault[96], canary[64], target[256], id[96], comp[32];
    const char *tool;
    struct span *s = NULL;
    json_t *attrs = json_array(), *ev;

    vstr(v, "fault", fault, sizeof(fault));
    vstr(v, "canary", canary, sizeof(canary));
    vstr(v, "target", target, sizeof(target));
    vstr(v, "id", id, sizeof(id));
    vstr(v, "component", comp, sizeof(comp));
    add_str(attrs, "faultline.fault", fault);
    add_str(attrs, "faultline.canary", canary);
    add_str(attrs, "faultline.target", target);
    add_str(attrs, "faultline.component", comp);
    ev = json_pack("{s:o,s:s,s:o}", "timeUnixNano", nanos(us), "name", "faultline.fault_injected",
                   "attributes", attrs);
    if (id[0] && strcmp(comp, "controller-model") == 0)
        s = span_find(tr, SPAN_MODEL, id, NULL, 0);
    if (s == NULL &&
        (strcmp(comp, "mcp") == 0 || strcmp(comp, "world") == 0 || strcmp(comp, "gate") == 0)) {
        /* the canonical target mcp__SERVER__TOOL names the tool after its last "__" */
        tool = target;
        for (const char *p = strstr(target, "__"); p; p = strstr(p + 2, "__"))
            tool = p + 2;
        s = span_find(tr, SPAN_TOOL, "", tool, 1);
        if (s == NULL)
            s = span_find(tr, SPAN_TOOL, "", target, 1);
    }
    if (s == NULL) {
        json_array_append_new(tr->root_events, ev);
        return;
    }
    json_array_append_new(json_object_get(s->j, "events"), ev);
    span_error(s, fault, canary[0] ? canary : fault);
}

static void read_events(struct trace *tr, const char *run_dir, const char *dir)
{
    struct events_view *v = xmalloc(sizeof(*v));
    struct events_reader *r;
    struct err e = {0};
    char rel[64], id[96], tool[96], reason[128];
    const char *line;
    size_t len, nread = 0;
    int fd;

    snprintf(rel, sizeof(rel), "%.40s/events.jsonl", dir);
    if ((fd = fs_open_beneath(run_dir, rel, &e)) < 0)
        goto done;
    r = events_reader_fdopen(fd);
    while (events_next_line(r, &line, &len) == 1 && nread++ < RPT_EVENTS_MAX) {
        int64_t us;
        struct span *s;
        if (events_view_parse(v, line, len) != 0 || (us = events_view_time_us(v)) == EVENTS_NO_TIME)
            continue;
        if (tr->t0 == 0 || us < tr->t0)
            tr->t0 = us;
        if (us > tr->t1)
            tr->t1 = us;
        if (events_view_is(v, "kind", "model_request")) {
            span_new(tr, SPAN_MODEL, v, us);
        } else if (events_view_is(v, "kind", "tool_call")) {
            span_new(tr, SPAN_TOOL, v, us);
        } else if (events_view_is(v, "kind", "model_response")) {
            vstr(v, "id", id, sizeof(id));
            if ((s = span_find(tr, SPAN_MODEL, id, NULL, 1)) != NULL)
                span_end(s, v, us);
        } else if (events_view_is(v, "kind", "tool_result")) {
            vstr(v, "id", id, sizeof(id));
            vstr(v, "tool", tool, sizeof(tool));
            if ((s = span_find(tr, SPAN_TOOL, id, tool, 1)) != NULL)
                span_end(s, v, us);
        } else if (events_view_is(v, "kind", "fault_injected")) {
            fault_event(tr, v, us);
        } else if (events_view_is(v, "kind", "abort")) {
            json_t *attrs = json_array();
            vstr(v, "reason", reason, sizeof(reason));
            add_str(attrs, "faultline.abort.reason", reason);
            json_array_append_new(tr->root_events,
                                  json_pack("{s:o,s:s,s:o}", "timeUnixNano", nanos(us), "name",
                                            "faultline.abort", "attributes", attrs));
        }
    }
    events_reader_free(r);
done:
    free(v);
}

/* The spans of one repetition r (result.repetitions[]), the root first, appended to spans. */
static void rep_spans(const json_t *report, const json_t *r, const char *run_dir, json_t *spans)
{
    const char *dir = esc_str(r, "dir", "");
    const json_t *f = esc_runner_rep(report, esc_int(r, "rep", -1));
    struct trace tr = {.run = esc_str(f, "run", esc_str(r, "run", dir))};
    char name[64];
    json_t *attrs = json_array(), *root;

    hex_id(tr.trace_id, 16, tr.run, "trace", 0);
    hex_id(tr.root_id, 8, tr.run, "root", 0);
    tr.root_events = json_array();
    if (run_dir && dir[0] && !strchr(dir, '/') && !strstr(dir, ".."))
        read_events(&tr, run_dir, dir);
    add_str(attrs, "faultline.run", tr.run);
    add_int(attrs, "faultline.rep", esc_int(r, "rep", 0));
    add_bool(attrs, "faultline.faulted", json_is_true(json_object_get(r, "faulted")));
    add_str(attrs, "faultline.outcome", esc_str(r, "outcome", ""));
    add_str(attrs, "faultline.canary", esc_str(r, "canary", ""));
    if (tr.dropped)
        add_int(attrs, "faultline.spans_dropped", (long long)tr.dropped);
    snprintf(name, sizeof(name), "faultline repetition %lld", esc_int(r, "rep", 0));
    root =
        json_pack("{s:s,s:s,s:s,s:i,s:o,s:o,s:o,s:o}", "traceId", tr.trace_id, "spanId", tr.root_id,
                  "name", name, "kind", OTLP_KIND_INTERNAL, "startTimeUnixNano", nanos(tr.t0),
                  "endTimeUnixNano", nanos(tr.t1), "attributes", attrs, "events", tr.root_events);
    json_array_append_new(spans, root);
    for (size_t i = 0; i < tr.n; i++) {
        if (tr.s[i].open) { /* never ended: it lasts to the repetition's last event */
            json_object_set_new(tr.s[i].j, "endTimeUnixNano", nanos(tr.t1));
            add_bool(json_object_get(tr.s[i].j, "attributes"), "faultline.unfinished", 1);
        }
        json_array_append_new(spans, tr.s[i].j);
    }
    free(tr.s);
}

int rpt_render_otlp(const json_t *report, const char *run_dir, struct buf *out)
{
    const json_t *reps = json_object_get(json_object_get(report, "result"), "repetitions"), *r;
    json_t *spans = json_array(), *res = json_array(), *doc;
    const json_t *x = json_object_get(report, "experiment");
    size_t i;
    char *s;
    int rc;

    add_str(res, "service.name", "faultline");
    add_str(res, "faultline.experiment", esc_str(x, "name", ""));
    add_str(res, "faultline.verdict", esc_str(report, "verdict", ""));
    json_array_foreach(reps, i, r) rep_spans(report, r, run_dir, spans);
    doc = json_pack("{s:[{s:{s:o},s:[{s:{s:s},s:o}]}]}", "resourceSpans", "resource", "attributes",
                    res, "scopeSpans", "scope", "name", "faultline", "spans", spans);
    s = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    rc = s ? buf_adds(out, s) : ERR_NOMEM;
    if (rc == 0)
        rc = buf_addc(out, '\n');
    free(s);
    json_decref(doc);
    return rc;
}
