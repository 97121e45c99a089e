/*
 * serve: see serve.h. world_serve reads stdin into a jsonrpc framer and hands each line to
 * world_serve_line, which classifies it and dispatches requests through methods[]; replies
 * are appended to one buffer and written after each read, with the seam flushed after them.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec/jsonrpc.h"
#include "codec/toolres.h"
#include "events/ev.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "world/decide.h"
#include "world/serve.h"
#include "util/banned.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define LATEST_VERSION "2025-06-18"

static const char *const known_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
                                             "2025-11-25", "2026-07-28", NULL};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

struct req {
    struct world *w;
    const struct world_serve_opts *o;
    json_t *id;     /* borrowed */
    json_t *params; /* borrowed, may be NULL */
    int stateless;
};

static json_t *finish(const struct req *r, json_t *result)
{
    if (r->stateless && json_is_object(result) && !json_object_get(result, "resultType"))
        json_object_set_new(result, "resultType", json_string("complete"));
    return jsonrpc_make_result(r->id, result);
}

static json_t *m_initialize(struct req *r)
{
    const char *want = json_string_value(json_object_get(r->params, "protocolVersion"));
    const char *v = LATEST_VERSION;
    for (const char *const *k = known_versions; want && *k; k++)
        if (strcmp(*k, want) == 0)
            v = *k;
    return finish(r, json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s},s:s}", "protocolVersion", v,
                               "capabilities", "tools", "listChanged", 0, "serverInfo", "name",
                               world_name(r->w), "version", "faultline-world", "instructions",
                               "A simulated backend: call the context tool first, the report tool "
                               "last."));
}

static json_t *m_ping(struct req *r)
{
    return finish(r, json_object());
}

static json_t *m_tools_list(struct req *r)
{
    return finish(r, json_pack("{s:o}", "tools", world_tools_json(r->w)));
}

static json_t *text_result(json_t *structured, const char *text, int is_error)
{
    json_t *res = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text,
                            "isError", is_error);
    if (structured && json_is_object(structured))
        json_object_set(res, "structuredContent", structured);
    return res;
}

/* A success result showing v (stolen) as text and, when an object, as structuredContent. */
static json_t *structured_result(json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_t *res = text_result(v, s ? s : "{}", 0);
    free(s);
    json_decref(v);
    return res;
}

/* structured_result of a world call's answer (stolen), whose text the world dumped already
 * (world_reply.text: the same compact dump with sorted keys), so it is not dumped again. */
static json_t *answer_result(json_t *v, const char *text, size_t len)
{
    json_t *res;
    if (text == NULL)
        return structured_result(v);
    res = json_pack("{s:[{s:s,s:s%}],s:b}", "content", "type", "text", "text", text, len, "isError",
                    0);
    if (json_is_object(v))
        json_object_set(res, "structuredContent", v);
    json_decref(v);
    return res;
}

static void save_ledger(struct req *r)
{
    struct err e = {0};
    if (r->o->ledger_path && world_ledger_save(r->w, r->o->ledger_path, &e) < 0)
        log_error("world", "%s", e.msg);
}

static void emit_effects(struct req *r, size_t from)
{
    struct seam *s = r->o->seam;
    for (size_t i = from; s && seam_records(s) && i < world_nentries(r->w); i++) {
        const struct world_entry *en = world_entry(r->w, i);
        json_t *ev = ev_new(EVKIND_EFFECT);
        ev_set_str(ev, "tool", en->tool);
        ev_set_str(ev, "collection", en->collection);
        ev_set_str(ev, "effect_id", en->id);
        ev_set_str(ev, "business_key", en->business_key);
        ev_set_str(ev, "dedupe_key", en->dedupe_key);
        ev_set_bool(ev, "approved", en->approved);
        ev_set_bool(ev, "deduplicated", en->deduplicated);
        ev_set_bool(ev, "faulted", en->fault != NULL);
        seam_emit(s, ev);
        json_decref(ev);
    }
}

static void emit_tool_call(struct req *r, const char *tool, json_t *args, const char *idt)
{
    struct seam *s = r->o->seam;
    if (s == NULL || !seam_records(s))
        return;
    json_t *ev = ev_new(EVKIND_TOOL_CALL);
    ev_set_str(ev, "tool", tool);
    ev_set_str(ev, "server", world_name(r->w));
    ev_set_str(ev, "id", idt);
    if (json_is_object(args))
        ev_set_ref(ev, "args", args);
    seam_emit(s, ev);
    json_decref(ev);
}

static void emit_tool_result(struct req *r, const char *tool, const char *idt, int ok,
                             const char *error, json_t *result, int64_t t0, int faulted)
{
    struct seam *s = r->o->seam;
    if (s == NULL || !seam_records(s))
        return;
    json_t *ev = ev_new(EVKIND_TOOL_RESULT);
    ev_set_str(ev, "tool", tool);
    ev_set_str(ev, "server", world_name(r->w));
    ev_set_str(ev, "id", idt);
    ev_set_bool(ev, "ok", ok);
    if (!ok && error)
        ev_set_str(ev, "error", error);
    if (result)
        ev_set_ref(ev, "result", json_object_get(result, "content"));
    ev_set_int(ev, "duration_ms", (long long)((time_mono_ns() / 1000000) - t0));
    if (faulted)
        ev_set_bool(ev, "faulted", 1);
    seam_emit(s, ev);
    json_decref(ev);
}

static void emit_fault(struct req *r, const struct seam_decision *d, const char *tool,
                       json_t *detail)
{
    struct seam *s = r->o->seam;
    char target[512];
    const char *canary = seam_canary(s);

    snprintf(target, sizeof(target), "mcp__%s__%s", world_name(r->w), tool);
    json_t *ev = ev_new(EVKIND_FAULT_INJECTED);
    ev_set_str(ev, "fault", d->kind);
    ev_set_int(ev, "fault_index", (long long)d->fault_index);
    ev_set_int(ev, "call_index", (long long)d->call_index);
    ev_set_str(ev, "target", target);
    ev_set_str(ev, "canary", canary ? canary : "");
    ev_set_str(ev, "component", "world");
    ev_set(ev, "detail", detail);
    seam_emit(s, ev);
    json_decref(ev);
}

static long long opt_int(const json_t *opts, const char *k, long long def)
{
    json_t *v = json_object_get(opts, k);
    return json_is_integer(v) ? (long long)json_integer_value(v) : def;
}

static void sleep_ms(long long ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR && !stop_signal)
        ;
}

static const char *opt_str(const json_t *opts, const char *k, const char *def)
{
    const char *v = json_string_value(json_object_get(opts, k));
    return v ? v : def;
}

/* A tool.* fault that answers instead of the world (WORLD_FAULT_WITHHELD): tool.error,
 * tool.timeout, tool.stale_data, answered as the shim answers them (codec/toolres.h). Emits
 * fault_injected and tool_result; returns the reply. */
static json_t *answer_withheld(struct req *r, const struct seam_decision *d, const char *tool,
                               const char *idt, int64_t t0)
{
    const char *canary = r->o->seam ? seam_canary(r->o->seam) : NULL;
    struct buf t = BUF_INIT;
    json_t *res, *msg, *fixed;

    if (strcmp(d->kind, "tool.timeout") == 0) {
        long long ms = opt_int(d->options, "timeout_ms", 30000);
        emit_fault(r, d, tool,
                   json_pack("{s:I,s:s}", "timeout_ms", (json_int_t)ms, "reply", "error"));
        sleep_ms(ms);
        toolres_canary_text(&t, "Request timed out", canary);
        emit_tool_result(r, tool, idt, 0, t.data, NULL, t0, 1);
        msg = jsonrpc_make_error(r->id, JSONRPC_REQUEST_TIMEOUT, t.data, NULL);
        buf_release(&t);
        return msg;
    }
    if (strcmp(d->kind, "tool.stale_data") == 0) {
        const char *source = "option";
        fixed = json_object_get(d->options, "result");
        if (fixed != NULL && !json_is_null(fixed) && json_is_string(fixed)) {
            res = toolres_text_result(json_string_value(fixed), 0, 0);
        } else if (fixed != NULL && !json_is_null(fixed)) {
            char *dump = json_dumps(fixed, JSON_COMPACT | JSON_ENCODE_ANY);
            res = toolres_text_result(dump ? dump : "", 0, 0);
            free(dump);
            if (json_is_object(fixed))
                json_object_set(res, "structuredContent", fixed);
        } else {
            /* world_decide injects only when the tool has answered before */
            const json_t *first = world_first_result(r->w, tool);
            res = structured_result(first ? json_deep_copy(first) : json_object());
            source = "first_result";
        }
        emit_fault(r, d, tool, json_pack("{s:s}", "source", source));
        emit_tool_result(r, tool, idt, 1, NULL, res, t0, 1);
        return finish(r, res);
    }
    /* tool.error */
    toolres_canary_text(&t, opt_str(d->options, "message", "tool failed (injected fault)"), canary);
    res = toolres_text_result(t.data, 1, 0);
    emit_fault(r, d, tool, json_object());
    emit_tool_result(r, tool, idt, 0, t.data, res, t0, 1);
    buf_release(&t);
    return finish(r, res);
}

/* A tool.* fault that changes the world's answer (WORLD_FAULT_OTHER) res in place, as the shim
 * changes a server's: returns the fault_injected detail (new reference). */
static json_t *alter_answer(const struct seam_decision *d, json_t *res)
{
    if (strcmp(d->kind, "tool.silent_wrong_data") == 0) {
        const char *mode = opt_str(d->options, "mode", "numbers_offset");
        enum toolres_wrong_mode m = strcmp(mode, "text") == 0            ? TOOLRES_WRONG_TEXT
                                    : strcmp(mode, "numbers_scale") == 0 ? TOOLRES_WRONG_SCALE
                                                                         : TOOLRES_WRONG_OFFSET;
        json_t *by = json_object_get(d->options, "by");
        size_t n = toolres_wrong_data(res, m, json_is_number(by) ? json_number_value(by) : 1,
                                      json_string_value(json_object_get(d->options, "find")),
                                      opt_str(d->options, "replace_with", ""));
        return json_pack("{s:s,s:I}", "mode", mode, "values_changed", (json_int_t)n);
    }
    /* inject.tool_result */
    const char *pos = opt_str(d->options, "position", "append");
    enum toolres_sc_change sc;
    toolres_inject(res, opt_str(d->options, "payload", ""),
                   strcmp(pos, "prepend") == 0   ? TOOLRES_INJECT_PREPEND
                   : strcmp(pos, "replace") == 0 ? TOOLRES_INJECT_REPLACE
                                                 : TOOLRES_INJECT_APPEND,
                   &sc);
    return json_pack("{s:s,s:s}", "position", pos, "structured_content", toolres_sc_name(sc));
}

static json_t *m_tools_call(struct req *r)
{
    const char *tool = json_string_value(json_object_get(r->params, "name"));
    json_t *args = json_object_get(r->params, "arguments");
    struct world_call c;
    struct world_reply rep;
    struct seam_decision d;
    char idt[128];
    int64_t t0 = time_mono_ns() / 1000000;
    json_t *res, *msg;
    char *ids;

    if (tool == NULL)
        return jsonrpc_make_error(r->id, JSONRPC_INVALID_PARAMS, "tools/call needs a name", NULL);
    ids = json_dumps(r->id, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(idt, sizeof(idt), "%s", ids ? ids : "");
    free(ids);
    if (json_is_string(r->id))
        snprintf(idt, sizeof(idt), "%s", json_string_value(r->id));
    emit_tool_call(r, tool, args, idt);

    char ctx[96], rpt[96];
    snprintf(ctx, sizeof(ctx), "%s_context", world_name(r->w));
    snprintf(rpt, sizeof(rpt), "%s_report", world_name(r->w));
    if (strcmp(tool, ctx) == 0 || strcmp(tool, rpt) == 0) {
        if (strcmp(tool, rpt) == 0) {
            world_report(r->w, json_is_object(args) ? args : NULL);
            save_ledger(r);
            res = structured_result(json_pack("{s:s,s:I}", "status", "closed", "effects",
                                              (json_int_t)world_nentries(r->w)));
        } else {
            res = structured_result(world_context_json(r->w));
        }
        emit_tool_result(r, tool, idt, 1, NULL, res, t0, 0);
        return finish(r, res);
    }

    memset(&c, 0, sizeof(c));
    c.tool = tool;
    c.args = args;
    c.t_ms = time_now_ms();
    world_decide(r->w, r->o->seam, &c, &d);
    world_call(r->w, &c, &rep);
    if (rep.status == WORLD_WITHHELD) {
        msg = answer_withheld(r, &d, tool, idt, t0);
        json_decref(d.options);
        return msg;
    }
    res = rep.status == WORLD_OK ? answer_result(rep.result, rep.text, rep.text_len) : NULL;
    if (res && c.mode == WORLD_FAULT_OTHER) {
        /* a read's answer shares its records with the world's state: change a copy */
        json_t *own = json_deep_copy(res);
        json_decref(res);
        res = own;
    }
    if (d.inject) {
        json_t *detail;
        if (c.mode == WORLD_FAULT_OTHER) /* what changed; nothing when the call failed */
            detail = res ? alter_answer(&d, res) : json_pack("{s:b}", "applied", 0);
        else if (c.mode == WORLD_FAULT_DUPLICATE)
            detail = json_pack("{s:i}", "copies", c.copies);
        else
            detail = json_pack("{s:I}", "delay_ms", (json_int_t)opt_int(d.options, "delay_ms", 0));
        json_object_set_new(detail, "effects",
                            json_integer((json_int_t)(world_nentries(r->w) - rep.first_entry)));
        emit_fault(r, &d, tool, detail);
    }
    emit_effects(r, rep.first_entry);

    switch (rep.status) {
    case WORLD_OK:
        /* a duplicate delivery answers with the first copy's true result: like the shim's
         * tool.duplicate_delivery, that answer is not a faulted one */
        emit_tool_result(r, tool, idt, 1, NULL, res, t0,
                         d.inject && c.mode != WORLD_FAULT_DUPLICATE);
        msg = finish(r, res);
        break;
    case WORLD_NO_TOOL:
        emit_tool_result(r, tool, idt, 0, rep.message, NULL, t0, 0);
        msg = jsonrpc_make_error(r->id, JSONRPC_INVALID_PARAMS, rep.message, NULL);
        break;
    case WORLD_TIMEOUT: {
        struct buf t = BUF_INIT;
        const char *canary = r->o->seam ? seam_canary(r->o->seam) : NULL;
        sleep_ms(opt_int(d.options, "delay_ms", 0));
        toolres_canary_text(&t, "Request timed out", canary);
        emit_tool_result(r, tool, idt, 0, t.data, NULL, t0, 1);
        msg = jsonrpc_make_error(r->id, JSONRPC_REQUEST_TIMEOUT, t.data, NULL);
        buf_release(&t);
        break;
    }
    default:
        res = text_result(NULL, rep.message, 1);
        emit_tool_result(r, tool, idt, 0, rep.message, res, t0, d.inject);
        msg = finish(r, res);
        break;
    }
    json_decref(d.options);
    return msg;
}

static const struct {
    const char *name;
    json_t *(*fn)(struct req *r);
} methods[] = {
    {"initialize", m_initialize}, {"server/discover", m_initialize}, {"ping", m_ping},
    {"tools/list", m_tools_list}, {"tools/call", m_tools_call},
};

/* The reply to one classified message (new reference), or NULL when none is due. */
static json_t *handle(struct world *w, const struct world_serve_opts *o, struct jsonrpc_msg *m)
{
    struct req r;

    if (m->kind == JSONRPC_NOT_JSON)
        return jsonrpc_make_error(NULL, JSONRPC_PARSE_ERROR, "not JSON", NULL);
    if (m->kind != JSONRPC_REQUEST) {
        if (m->kind == JSONRPC_NOT_RPC)
            return jsonrpc_make_error(NULL, JSONRPC_INVALID_REQUEST, "not a JSON-RPC message",
                                      NULL);
        return NULL; /* notifications, responses: nothing to answer */
    }
    memset(&r, 0, sizeof(r));
    r.w = w;
    r.o = o;
    r.id = m->id;
    r.params = json_is_object(m->params) ? m->params : NULL;
    r.stateless = json_object_get(json_object_get(r.params, "_meta"), META_VERSION) != NULL;
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strcmp(methods[i].name, m->method) == 0)
            return methods[i].fn(&r);
    return jsonrpc_make_error(m->id, JSONRPC_METHOD_NOT_FOUND, "method not found", NULL);
}

void world_serve_line(struct world *w, const struct world_serve_opts *o, const char *line,
                      size_t len, struct buf *out)
{
    struct jsonrpc_msg m;
    json_t *reply = NULL;

    if (jsonrpc_parse(line, len, &m) == JSONRPC_EMPTY) {
        jsonrpc_msg_release(&m);
        return;
    }
    if (m.kind == JSONRPC_BATCH) {
        json_t *replies = json_array();
        for (size_t i = 0; i < json_array_size(m.root); i++) {
            struct jsonrpc_msg e;
            jsonrpc_classify(json_array_get(m.root, i), &e);
            json_t *one = handle(w, o, &e);
            if (one)
                json_array_append_new(replies, one);
            jsonrpc_msg_release(&e);
        }
        if (json_array_size(replies) > 0)
            reply = json_incref(replies);
        json_decref(replies);
    } else {
        reply = handle(w, o, &m);
    }
    if (reply && jsonrpc_write(out, reply) < 0)
        log_warn("world", "a reply is over the output limit; dropped");
    json_decref(reply);
    jsonrpc_msg_release(&m);
}

int world_serve(struct world *w, const struct world_serve_opts *o, struct err *e)
{
    struct jsonrpc_framer f;
    struct buf out = BUF_INIT;
    struct sigaction sa;
    int rc = 0, eof = 0;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL); /* no SA_RESTART: a blocked read returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    jsonrpc_framer_init(&f, o->max_line ? o->max_line : WORLD_SERVE_LINE_MAX);
    while (!eof && !stop_signal) {
        char *p = jsonrpc_framer_reserve(&f, 65536);
        ssize_t n = read(o->in_fd, p, 65536);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            eof = 1;
            jsonrpc_framer_commit(&f, 0);
        } else {
            jsonrpc_framer_commit(&f, (size_t)n);
        }
        for (;;) {
            const char *line;
            size_t len;
            enum jsonrpc_frame fr = jsonrpc_framer_next(&f, &line, &len);
            if (fr == JSONRPC_FRAME_NONE)
                break;
            if (fr == JSONRPC_FRAME_TOO_LONG) {
                json_t *id = jsonrpc_skim_id(&f.skim);
                json_t *msg = jsonrpc_make_error(id, JSONRPC_INVALID_REQUEST,
                                                 "message over the line limit", NULL);
                jsonrpc_write(&out, msg);
                json_decref(msg);
                json_decref(id);
                continue;
            }
            world_serve_line(w, o, line, len, &out);
        }
        if (out.len > 0) {
            if (fs_write_all(o->out_fd, out.data, out.len) < 0) {
                rc = err_set(e, ERR_IO, "cannot write to stdout");
                break;
            }
            buf_reset(&out);
        }
        if (o->seam)
            seam_flush(o->seam);
    }
    if (stop_signal)
        log_info("world", "stopped by signal %d", (int)stop_signal);
    if (o->ledger_path && world_ledger_save(w, o->ledger_path, e) < 0 && rc == 0)
        rc = e->code;
    jsonrpc_framer_release(&f);
    buf_release(&out);
    return rc;
}
