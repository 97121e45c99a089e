/*
 * mock: the mock model server (see mock.h for routes, usage and determinism).
 *
 * mock_handle routes a request and renders the answer into one buffer. Conversation requests
 * go: parse JSON -> wire_request_info -> mockscript view -> mockscript reply -> usage -> the
 * wire rendering for (API, stream). Streams are rendered whole (the reply is known at once)
 * as SSE text, one event per "\n\n"-terminated block; mock_serve sends them as one HTTP chunk
 * per event, so clients see a real chunked event stream:
 *
 *   Anthropic:  message_start, ping, per block content_block_start / _delta... / _stop,
 *               message_delta (stop_reason, cumulative usage), message_stop
 *   chat:       role chunk, content chunks, tool_call chunks (id+name first, then argument
 *               pieces), finish chunk, [usage chunk with include_usage], data: [DONE]
 *   Responses:  response.created, response.in_progress, per item output_item.added,
 *               (content_part.added, output_text.delta..., output_text.done, content_part.done
 *               | function_call_arguments.delta..., .done), output_item.done,
 *               response.completed; every event has a sequence_number from 0
 *
 * Text is cut into pieces of at most PIECE bytes on UTF-8 boundaries, tool arguments into
 * pieces of ARG_PIECE bytes, so clients must reassemble them as they do with real streams.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

#include "model/mock.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/num.h"
#include "util/utf8.h"
#include "util/redact.h"
#include "util/banned.h"

#define PIECE 24
#define ARG_PIECE 32

void mock_answer_init(struct mock_answer *a)
{
    memset(a, 0, sizeof(*a));
    buf_init(&a->body, 0);
    a->rule = -2;
    a->content_type = "application/json";
}

void mock_answer_release(struct mock_answer *a)
{
    buf_release(&a->body);
    mock_answer_init(a);
}

static void set_json(struct mock_answer *a, int status, json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    buf_reset(&a->body);
    buf_adds(&a->body, s ? s : "{}");
    free(s);
    json_decref(j);
    a->status = status;
    a->content_type = "application/json";
    a->is_sse = 0;
}

static void set_error(struct mock_answer *a, enum wire_provider p, int status, const char *msg)
{
    if (p == WIRE_PROVIDER_NONE)
        p = WIRE_PROVIDER_ANTHROPIC;
    set_json(a, status, wire_error_json(p, wire_error_for_status(status), msg));
}

/* --- rendering helpers --- */

/* Length of the next piece of s[0..n): at most max bytes, not cutting a UTF-8 sequence (max
 * when s[0..max] are all continuation bytes, so the loop always advances). */
static size_t piece_len(const char *s, size_t n, size_t max)
{
    size_t k = utf8_boundary(s, n, max);
    return k > 0 ? k : max;
}

static void sse(struct mock_answer *a, const char *event, json_t *j)
{
    sse_write_json(&a->body, event, j);
    json_decref(j);
}

struct call {
    const char *name;
    char *args; /* compact JSON of the input */
    char id[48];
    char item_id[48];
};

struct render {
    const struct mockscript_reply *reply;
    const char *model;
    char msg_id[48];
    struct call *calls;
    size_t ncalls;
    int64_t in, cw, cr, out; /* usage: uncached input, cache write, cache read, output */
};

static json_t *anthropic_usage(const struct render *r, int64_t out)
{
    return json_pack("{s:I,s:I,s:I,s:I}", "input_tokens", (json_int_t)r->in,
                     "cache_creation_input_tokens", (json_int_t)r->cw, "cache_read_input_tokens",
                     (json_int_t)r->cr, "output_tokens", (json_int_t)out);
}

static json_t *chat_usage(const struct render *r)
{
    return json_pack("{s:I,s:I,s:I,s:{s:I},s:{s:i}}", "prompt_tokens", (json_int_t)(r->in + r->cr),
                     "completion_tokens", (json_int_t)r->out, "total_tokens",
                     (json_int_t)(r->in + r->cr + r->out), "prompt_tokens_details", "cached_tokens",
                     (json_int_t)r->cr, "completion_tokens_details", "reasoning_tokens", 0);
}

static json_t *responses_usage(const struct render *r)
{
    return json_pack("{s:I,s:{s:I},s:I,s:{s:i},s:I}", "input_tokens", (json_int_t)(r->in + r->cr),
                     "input_tokens_details", "cached_tokens", (json_int_t)r->cr, "output_tokens",
                     (json_int_t)r->out, "output_tokens_details", "reasoning_tokens", 0,
                     "total_tokens", (json_int_t)(r->in + r->cr + r->out));
}

static json_t *call_input(const struct call *c)
{
    json_t *j = json_loads(c->args, 0, NULL);
    return j ? j : json_object();
}

/* --- Anthropic --- */

static void anthropic_body(struct mock_answer *a, const struct render *r)
{
    json_t *content = json_array();
    if (r->reply->text.len > 0)
        json_array_append_new(content, json_pack("{s:s,s:s%}", "type", "text", "text",
                                                 r->reply->text.data, r->reply->text.len));
    for (size_t i = 0; i < r->ncalls; i++)
        json_array_append_new(content, json_pack("{s:s,s:s,s:s,s:o}", "type", "tool_use", "id",
                                                 r->calls[i].id, "name", r->calls[i].name, "input",
                                                 call_input(&r->calls[i])));
    set_json(a, 200,
             json_pack("{s:s,s:s,s:s,s:s,s:o,s:s,s:n,s:o}", "id", r->msg_id, "type", "message",
                       "role", "assistant", "model", r->model, "content", content, "stop_reason",
                       r->ncalls ? "tool_use" : "end_turn", "stop_sequence", "usage",
                       anthropic_usage(r, r->out)));
}

static void anthropic_stream(struct mock_answer *a, const struct render *r)
{
    const char *t = r->reply->text.data;
    size_t n = r->reply->text.len, idx = 0;

    sse(a, "message_start",
        json_pack("{s:s,s:{s:s,s:s,s:s,s:s,s:[],s:n,s:n,s:o}}", "type", "message_start", "message",
                  "id", r->msg_id, "type", "message", "role", "assistant", "model", r->model,
                  "content", "stop_reason", "stop_sequence", "usage", anthropic_usage(r, 1)));
    sse(a, "ping", json_pack("{s:s}", "type", "ping"));
    if (n > 0) {
        sse(a, "content_block_start",
            json_pack("{s:s,s:I,s:{s:s,s:s}}", "type", "content_block_start", "index",
                      (json_int_t)idx, "content_block", "type", "text", "text", ""));
        for (size_t off = 0; off < n;) {
            size_t k = piece_len(t + off, n - off, PIECE);
            sse(a, "content_block_delta",
                json_pack("{s:s,s:I,s:{s:s,s:s%}}", "type", "content_block_delta", "index",
                          (json_int_t)idx, "delta", "type", "text_delta", "text", t + off, k));
            off += k;
        }
        sse(a, "content_block_stop",
            json_pack("{s:s,s:I}", "type", "content_block_stop", "index", (json_int_t)idx));
        idx++;
    }
    for (size_t i = 0; i < r->ncalls; i++, idx++) {
        const struct call *c = &r->calls[i];
        size_t an = strlen(c->args);
        sse(a, "content_block_start",
            json_pack("{s:s,s:I,s:{s:s,s:s,s:s,s:{}}}", "type", "content_block_start", "index",
                      (json_int_t)idx, "content_block", "type", "tool_use", "id", c->id, "name",
                      c->name, "input"));
        for (size_t off = 0; off < an;) {
            size_t k = an - off < ARG_PIECE ? an - off : ARG_PIECE;
            sse(a, "content_block_delta",
                json_pack("{s:s,s:I,s:{s:s,s:s%}}", "type", "content_block_delta", "index",
                          (json_int_t)idx, "delta", "type", "input_json_delta", "partial_json",
                          c->args + off, k));
            off += k;
        }
        sse(a, "content_block_stop",
            json_pack("{s:s,s:I}", "type", "content_block_stop", "index", (json_int_t)idx));
    }
    sse(a, "message_delta",
        json_pack("{s:s,s:{s:s,s:n},s:o}", "type", "message_delta", "delta", "stop_reason",
                  r->ncalls ? "tool_use" : "end_turn", "stop_sequence", "usage",
                  anthropic_usage(r, r->out)));
    sse(a, "message_stop", json_pack("{s:s}", "type", "message_stop"));
}

/* --- OpenAI chat --- */

static void chat_body(struct mock_answer *a, const struct render *r)
{
    json_t *msg = json_pack("{s:s,s:n}", "role", "assistant", "refusal");
    json_object_set_new(msg, "content",
                        r->reply->text.len ? json_stringn(r->reply->text.data, r->reply->text.len)
                                           : json_null());
    if (r->ncalls) {
        json_t *tcs = json_array();
        for (size_t i = 0; i < r->ncalls; i++)
            json_array_append_new(tcs, json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", r->calls[i].id,
                                                 "type", "function", "function", "name",
                                                 r->calls[i].name, "arguments", r->calls[i].args));
        json_object_set_new(msg, "tool_calls", tcs);
    }
    set_json(a, 200,
             json_pack("{s:s,s:s,s:i,s:s,s:[{s:i,s:o,s:n,s:s}],s:o}", "id", r->msg_id, "object",
                       "chat.completion", "created", MOCK_CREATED, "model", r->model, "choices",
                       "index", 0, "message", msg, "logprobs", "finish_reason",
                       r->ncalls ? "tool_calls" : "stop", "usage", chat_usage(r)));
}

static void chat_chunk(struct mock_answer *a, const struct render *r, json_t *delta,
                       const char *finish, int include_usage)
{
    json_t *ch = json_pack("{s:i,s:o,s:n}", "index", 0, "delta", delta, "logprobs");
    json_object_set_new(ch, "finish_reason", finish ? json_string(finish) : json_null());
    json_t *j =
        json_pack("{s:s,s:s,s:i,s:s,s:[o]}", "id", r->msg_id, "object", "chat.completion.chunk",
                  "created", MOCK_CREATED, "model", r->model, "choices", ch);
    if (include_usage)
        json_object_set_new(j, "usage", json_null());
    sse(a, NULL, j);
}

static void chat_stream(struct mock_answer *a, const struct render *r, int include_usage)
{
    const char *t = r->reply->text.data;
    size_t n = r->reply->text.len;

    chat_chunk(a, r, json_pack("{s:s,s:s}", "role", "assistant", "content", ""), NULL,
               include_usage);
    for (size_t off = 0; off < n;) {
        size_t k = piece_len(t + off, n - off, PIECE);
        chat_chunk(a, r, json_pack("{s:s%}", "content", t + off, k), NULL, include_usage);
        off += k;
    }
    for (size_t i = 0; i < r->ncalls; i++) {
        const struct call *c = &r->calls[i];
        size_t an = strlen(c->args);
        chat_chunk(a, r,
                   json_pack("{s:[{s:I,s:s,s:s,s:{s:s,s:s}}]}", "tool_calls", "index",
                             (json_int_t)i, "id", c->id, "type", "function", "function", "name",
                             c->name, "arguments", ""),
                   NULL, include_usage);
        for (size_t off = 0; off < an;) {
            size_t k = an - off < ARG_PIECE ? an - off : ARG_PIECE;
            chat_chunk(a, r,
                       json_pack("{s:[{s:I,s:{s:s%}}]}", "tool_calls", "index", (json_int_t)i,
                                 "function", "arguments", c->args + off, k),
                       NULL, include_usage);
            off += k;
        }
    }
    chat_chunk(a, r, json_object(), r->ncalls ? "tool_calls" : "stop", include_usage);
    if (include_usage)
        sse(a, NULL,
            json_pack("{s:s,s:s,s:i,s:s,s:[],s:o}", "id", r->msg_id, "object",
                      "chat.completion.chunk", "created", MOCK_CREATED, "model", r->model,
                      "choices", "usage", chat_usage(r)));
    sse_write(&a->body, NULL, "[DONE]", 6);
}

/* --- OpenAI Responses --- */

static json_t *resp_message_item(const struct render *r, const char *status, int with_text)
{
    json_t *content = json_array();
    if (with_text)
        json_array_append_new(content,
                              json_pack("{s:s,s:s%,s:[]}", "type", "output_text", "text",
                                        r->reply->text.data, r->reply->text.len, "annotations"));
    return json_pack("{s:s,s:s,s:s,s:s,s:o}", "type", "message", "id", r->msg_id, "status", status,
                     "role", "assistant", "content", content);
}

static json_t *resp_call_item(const struct call *c, const char *status, int with_args)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "type", "function_call", "id", c->item_id,
                     "call_id", c->id, "name", c->name, "arguments", with_args ? c->args : "",
                     "status", status);
}

static json_t *resp_object(const struct render *r, const char *status, int complete)
{
    json_t *output = json_array();
    if (complete) {
        if (r->reply->text.len > 0)
            json_array_append_new(output, resp_message_item(r, "completed", 1));
        for (size_t i = 0; i < r->ncalls; i++)
            json_array_append_new(output, resp_call_item(&r->calls[i], "completed", 1));
    }
    json_t *j = json_pack("{s:s,s:s,s:i,s:s,s:n,s:n,s:s,s:o,s:b,s:s,s:[]}", "id", r->msg_id,
                          "object", "response", "created_at", MOCK_CREATED, "status", status,
                          "error", "incomplete_details", "model", r->model, "output", output,
                          "parallel_tool_calls", 1, "tool_choice", "auto", "tools");
    json_object_set_new(j, "usage", complete ? responses_usage(r) : json_null());
    return j;
}

/* Sends {"type": type, "sequence_number": n, ...fields of j} (j is consumed). */
static void resp_event(struct mock_answer *a, int64_t *seq, const char *type, json_t *j)
{
    json_t *ev = json_pack("{s:s,s:I}", "type", type, "sequence_number", (json_int_t)(*seq)++);
    json_object_update(ev, j);
    json_decref(j);
    sse(a, type, ev);
}

static void responses_stream(struct mock_answer *a, const struct render *r)
{
    int64_t seq = 0;
    size_t oi = 0;
    const char *t = r->reply->text.data;
    size_t n = r->reply->text.len;

    resp_event(a, &seq, "response.created",
               json_pack("{s:o}", "response", resp_object(r, "in_progress", 0)));
    resp_event(a, &seq, "response.in_progress",
               json_pack("{s:o}", "response", resp_object(r, "in_progress", 0)));
    if (n > 0) {
        resp_event(a, &seq, "response.output_item.added",
                   json_pack("{s:I,s:o}", "output_index", (json_int_t)oi, "item",
                             resp_message_item(r, "in_progress", 0)));
        resp_event(a, &seq, "response.content_part.added",
                   json_pack("{s:s,s:I,s:i,s:{s:s,s:s,s:[]}}", "item_id", r->msg_id, "output_index",
                             (json_int_t)oi, "content_index", 0, "part", "type", "output_text",
                             "text", "", "annotations"));
        for (size_t off = 0; off < n;) {
            size_t k = piece_len(t + off, n - off, PIECE);
            resp_event(a, &seq, "response.output_text.delta",
                       json_pack("{s:s,s:I,s:i,s:s%,s:[]}", "item_id", r->msg_id, "output_index",
                                 (json_int_t)oi, "content_index", 0, "delta", t + off, k,
                                 "logprobs"));
            off += k;
        }
        resp_event(a, &seq, "response.output_text.done",
                   json_pack("{s:s,s:I,s:i,s:s%,s:[]}", "item_id", r->msg_id, "output_index",
                             (json_int_t)oi, "content_index", 0, "text", t, n, "logprobs"));
        resp_event(a, &seq, "response.content_part.done",
                   json_pack("{s:s,s:I,s:i,s:{s:s,s:s%,s:[]}}", "item_id", r->msg_id,
                             "output_index", (json_int_t)oi, "content_index", 0, "part", "type",
                             "output_text", "text", t, n, "annotations"));
        resp_event(a, &seq, "response.output_item.done",
                   json_pack("{s:I,s:o}", "output_index", (json_int_t)oi, "item",
                             resp_message_item(r, "completed", 1)));
        oi++;
    }
    for (size_t i = 0; i < r->ncalls; i++, oi++) {
        const struct call *c = &r->calls[i];
        size_t an = strlen(c->args);
        resp_event(a, &seq, "response.output_item.added",
                   json_pack("{s:I,s:o}", "output_index", (json_int_t)oi, "item",
                             resp_call_item(c, "in_progress", 0)));
        for (size_t off = 0; off < an;) {
            size_t k = an - off < ARG_PIECE ? an - off : ARG_PIECE;
            resp_event(a, &seq, "response.function_call_arguments.delta",
                       json_pack("{s:s,s:I,s:s%}", "item_id", c->item_id, "output_index",
                                 (json_int_t)oi, "delta", c->args + off, k));
            off += k;
        }
        resp_event(a, &seq, "response.function_call_arguments.done",
                   json_pack("{s:s,s:I,s:s}", "item_id", c->item_id, "output_index", (json_int_t)oi,
                             "arguments", c->args));
        resp_event(a, &seq, "response.output_item.done",
                   json_pack("{s:I,s:o}", "output_index", (json_int_t)oi, "item",
                             resp_call_item(c, "completed", 1)));
    }
    resp_event(a, &seq, "response.completed",
               json_pack("{s:o}", "response", resp_object(r, "completed", 1)));
}

/* --- routing --- */

static int is_root(const char *path)
{
    return path[0] == '/' && (path[1] == '\0' || path[1] == '?');
}

static int is_models(const char *path)
{
    size_t n = strcspn(path, "?");
    return (n == 10 && strncmp(path, "/v1/models", 10) == 0) ||
           (n == 7 && strncmp(path, "/models", 7) == 0);
}

static void conversation(const struct mockscript *s, enum wire_api api, const char *body,
                         size_t len, struct mock_answer *a)
{
    enum wire_provider p = wire_api_provider(api);
    struct err e = {0};
    struct wire_request_info info;
    struct mockscript_view v;
    struct mockscript_reply reply;
    struct render r;
    json_t *req = wire_json_parse(body ? body : "", len, &e);

    memset(&r, 0, sizeof(r));
    if (req == NULL) {
        set_error(a, p, e.code == ERR_LIMIT ? 413 : 400, e.msg);
        return;
    }
    if (wire_request_info(api, req, &info, &e) < 0) {
        set_error(a, p, 400, e.msg);
        json_decref(req);
        return;
    }
    a->stream = info.stream;
    if (api == WIRE_API_ANTHROPIC_COUNT_TOKENS) {
        int64_t n = mockscript_tokens(len);
        a->usage.input_tokens = n;
        set_json(a, 200, json_pack("{s:I}", "input_tokens", (json_int_t)n));
        json_decref(req);
        return;
    }
    if (mockscript_view_init(&v, s, api, req, &e) < 0) {
        set_error(a, p, 400, e.msg);
        mockscript_view_release(&v);
        json_decref(req);
        return;
    }
    mockscript_reply_init(&reply);
    mockscript_reply(s, &v, &reply);
    a->rule = reply.rule;
    snprintf(a->rule_name, sizeof(a->rule_name), "%s", reply.rule_name);
    a->turn = v.turn;
    r.reply = &reply;
    r.model = mockscript_model(s);
    if (r.model == NULL)
        r.model = info.model[0] ? info.model : MOCK_DEFAULT_MODEL;
    snprintf(a->model, sizeof(a->model), "%s", r.model);
    if (reply.error_status > 0) {
        set_error(a, p, reply.error_status, reply.error_message.data);
        goto out;
    }

    uint64_t h = hash64(body, len, 0x6d6f636b);
    size_t out_bytes = reply.text.len;
    r.ncalls = json_array_size(reply.tool_calls);
    r.calls = xcalloc(r.ncalls + 1, sizeof(*r.calls));
    for (size_t i = 0; i < r.ncalls; i++) {
        json_t *c = json_array_get(reply.tool_calls, i);
        r.calls[i].name = json_string_value(json_object_get(c, "name"));
        r.calls[i].args = json_dumps(json_object_get(c, "input"), JSON_COMPACT);
        if (r.calls[i].args == NULL)
            r.calls[i].args = xstrdup("{}");
        out_bytes += strlen(r.calls[i].name) + strlen(r.calls[i].args);
        uint64_t ch = hash_mix64(h + i + 1);
        if (p == WIRE_PROVIDER_ANTHROPIC)
            snprintf(r.calls[i].id, sizeof(r.calls[i].id), "toolu_mock_%016llx",
                     (unsigned long long)ch);
        else
            snprintf(r.calls[i].id, sizeof(r.calls[i].id), "call_mock_%016llx",
                     (unsigned long long)ch);
        snprintf(r.calls[i].item_id, sizeof(r.calls[i].item_id), "fc_mock_%016llx",
                 (unsigned long long)ch);
    }
    snprintf(r.msg_id, sizeof(r.msg_id), "%s_mock_%016llx",
             api == WIRE_API_ANTHROPIC_MESSAGES ? "msg"
             : api == WIRE_API_OPENAI_CHAT      ? "chatcmpl"
                                                : "resp",
             (unsigned long long)h);
    r.in = reply.usage_input >= 0 ? reply.usage_input : mockscript_tokens(len);
    r.cw = reply.usage_cache_write >= 0 ? reply.usage_cache_write : 0;
    r.cr = reply.usage_cache_read >= 0 ? reply.usage_cache_read : 0;
    r.out = reply.usage_output >= 0 ? reply.usage_output : mockscript_tokens(out_bytes);
    a->usage.input_tokens = r.in;
    a->usage.cache_write_tokens = p == WIRE_PROVIDER_ANTHROPIC ? r.cw : 0;
    a->usage.cache_read_tokens = r.cr;
    a->usage.output_tokens = r.out;
    a->usage.present = 1;
    a->tool_calls = r.ncalls;

    buf_reset(&a->body);
    a->status = 200;
    if (info.stream) {
        a->is_sse = 1;
        a->content_type = "text/event-stream";
        if (api == WIRE_API_ANTHROPIC_MESSAGES)
            anthropic_stream(a, &r);
        else if (api == WIRE_API_OPENAI_CHAT)
            chat_stream(a, &r, info.include_usage);
        else
            responses_stream(a, &r);
    } else if (api == WIRE_API_ANTHROPIC_MESSAGES) {
        anthropic_body(a, &r);
    } else if (api == WIRE_API_OPENAI_CHAT) {
        chat_body(a, &r);
    } else {
        set_json(a, 200, resp_object(&r, "completed", 1));
    }
out:
    for (size_t i = 0; i < r.ncalls; i++)
        free(r.calls[i].args);
    free(r.calls);
    mockscript_reply_release(&reply);
    mockscript_view_release(&v);
    json_decref(req);
}

/* The request path for a message or a JSON record: at most max bytes (not cutting a UTF-8
 * sequence), bytes that are not UTF-8 replaced by U+FFFD, so jansson takes it. */
static void path_text(const char *path, size_t max, struct buf *out)
{
    struct buf r = BUF_INIT;
    redact_text(NULL, path, strlen(path), &r); /* a "?key=..." never shown */
    buf_reset(out);
    utf8_sanitize(r.data, r.len > max ? utf8_boundary(r.data, r.len, max) : r.len, out);
    buf_release(&r);
}

int mock_handle(const struct mockscript *s, const char *method, const char *path, const char *body,
                size_t len, enum wire_provider hint, struct mock_answer *a)
{
    enum wire_api api = wire_api_from_path(path);
    char msg[300];
    struct buf shown = BUF_INIT;

    mock_answer_release(a);
    a->api = api;
    if (api != WIRE_API_UNKNOWN) {
        if (strcmp(method, "POST") != 0) {
            path_text(path, 100, &shown);
            snprintf(msg, sizeof(msg), "method %.16s not allowed on %s (use POST)", method,
                     shown.data);
            buf_release(&shown);
            set_error(a, wire_api_provider(api), 405, msg);
            a->status = 405;
            return 0;
        }
        conversation(s, api, body, len, a);
        return 0;
    }
    if (is_root(path) && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)) {
        set_json(a, 200,
                 json_pack("{s:b,s:s,s:s}", "ok", 1, "service", "faultline mock-model", "script",
                           mockscript_name(s)));
        return 0;
    }
    if (is_models(path) && strcmp(method, "GET") == 0) {
        const char *m = mockscript_model(s) ? mockscript_model(s) : MOCK_DEFAULT_MODEL;
        set_json(a, 200,
                 json_pack("{s:s,s:[{s:s,s:s,s:s,s:s,s:i,s:s}],s:b}", "object", "list", "data",
                           "id", m, "object", "model", "type", "model", "display_name", m,
                           "created", MOCK_CREATED, "owned_by", "faultline", "has_more", 0));
        return 0;
    }
    path_text(path, 160, &shown);
    snprintf(msg, sizeof(msg), "no route for %.16s %s", method, shown.data);
    buf_release(&shown);
    set_error(a, hint, 404, msg);
    return 0;
}

/* --- the server --- */

struct server {
    const struct mockscript *script;
    struct event_base *base;
    struct evhttp *http;
    int record_fd;
    uint64_t seq;
};

static const char *method_name(enum evhttp_cmd_type t)
{
    switch (t) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    default:
        return "OTHER";
    }
}

static void record(struct server *sv, const char *method, const char *path,
                   const struct mock_answer *a, const char *body, size_t len)
{
    if (sv->record_fd < 0)
        return;
    json_t *tools = json_array();
    json_t *req = a->api != WIRE_API_UNKNOWN && len > 0 ? json_loadb(body, len, 0, NULL) : NULL;
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(req, "tools"), i, t)
    {
        json_t *n = json_object_get(t, "name");
        if (!json_is_string(n))
            n = json_object_get(json_object_get(t, "function"), "name");
        if (!json_is_string(n))
            n = json_object_get(t, "type");
        if (json_is_string(n))
            json_array_append(tools, n);
    }
    struct buf shown = BUF_INIT;
    path_text(path, 8192, &shown);
    json_t *line = json_pack("{s:I,s:s,s:s,s:s,s:i,s:b,s:s,s:I,s:i,s:s,s:o,s:I,s:o}", "seq",
                             (json_int_t)sv->seq, "method", method, "path", shown.data, "api",
                             wire_api_name(a->api), "status", a->status, "stream", a->stream,
                             "model", a->model, "turn", (json_int_t)a->turn, "rule", a->rule,
                             "rule_name", a->rule_name, "usage", wire_usage_to_json(&a->usage),
                             "tool_calls", (json_int_t)a->tool_calls, "tools", tools);
    json_decref(req);
    buf_release(&shown);
    char *s = line ? json_dumps(line, JSON_COMPACT) : NULL;
    json_decref(line);
    if (s == NULL)
        log_warn("mock", "cannot record request %llu as JSON", (unsigned long long)sv->seq);
    if (s) {
        struct buf b = BUF_INIT;
        buf_adds(&b, s);
        buf_addc(&b, '\n');
        if (fs_write_all(sv->record_fd, b.data, b.len) < 0)
            log_warn("mock", "cannot append to the record file: %s", strerror(errno));
        buf_release(&b);
        free(s);
    }
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct server *sv = arg;
    const char *method = method_name(evhttp_request_get_command(req));
    const char *path = evhttp_request_get_uri(req);
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
    struct evkeyvalq *hdr = evhttp_request_get_input_headers(req);
    enum wire_provider hint =
        evhttp_find_header(hdr, "x-api-key") || evhttp_find_header(hdr, "anthropic-version")
            ? WIRE_PROVIDER_ANTHROPIC
            : WIRE_PROVIDER_OPENAI;
    struct mock_answer a;
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    char rid[40];

    sv->seq++;
    mock_answer_init(&a);
    mock_handle(sv->script, method, path ? path : "/", body, len, hint, &a);
    snprintf(rid, sizeof(rid), "req_mock_%llu", (unsigned long long)sv->seq);
    evhttp_add_header(out, "content-type", a.content_type);
    evhttp_add_header(
        out, wire_api_provider(a.api) == WIRE_PROVIDER_OPENAI ? "x-request-id" : "request-id", rid);
    /* the log and the record show the path redacted: "?key=..." is how some clients send
     * their API key */
    struct buf shown = BUF_INIT;
    redact_text(NULL, path ? path : "/", strlen(path ? path : "/"), &shown);
    log_info("mock", "%s %s -> %d (%s, turn %zu, rule %d%s%s%s)", method, shown.data, a.status,
             wire_api_name(a.api), a.turn, a.rule, a.rule_name[0] ? " '" : "", a.rule_name,
             a.rule_name[0] ? "'" : "");
    record(sv, method, shown.data, &a, body, len);
    buf_release(&shown);

    if (!a.is_sse) {
        struct evbuffer *ob = evbuffer_new();
        if (strcmp(method, "HEAD") != 0)
            evbuffer_add(ob, a.body.data, a.body.len);
        evhttp_send_reply(req, a.status, a.status == 200 ? "OK" : "Error", ob);
        evbuffer_free(ob);
        mock_answer_release(&a);
        return;
    }
    evhttp_add_header(out, "cache-control", "no-cache");
    evhttp_send_reply_start(req, a.status, "OK");
    struct evbuffer *ob = evbuffer_new();
    const char *p = a.body.data, *end = a.body.data + a.body.len;
    while (p < end) {
        const char *q = strstr(p, "\n\n");
        size_t n = q ? (size_t)(q + 2 - p) : (size_t)(end - p);
        evbuffer_add(ob, p, n);
        evhttp_send_reply_chunk(req, ob); /* drains ob into the connection's output */
        p += n;
    }
    evbuffer_free(ob);
    evhttp_send_reply_end(req);
    mock_answer_release(&a);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct server *sv = arg;
    log_info("mock", "signal %d: stopping", (int)sig);
    event_base_loopexit(sv->base, NULL);
}

/* Splits "HOST:PORT" / "[::1]:PORT"; refuses non-loopback hosts. */
static int parse_listen(const char *s, char *host, size_t hsize, int *port, struct err *e)
{
    const char *colon;
    long long p;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (rb == NULL || rb[1] != ':')
            return err_set(e, ERR_INVALID, "bad listen address '%s' (HOST:PORT)", s);
        snprintf(host, hsize, "%.*s", (int)(rb - s - 1), s + 1);
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL)
            return err_set(e, ERR_INVALID, "bad listen address '%s' (HOST:PORT)", s);
        snprintf(host, hsize, "%.*s", (int)(colon - s), s);
    }
    if (num_parse_ll(colon + 1, 0, 65535, &p) < 0)
        return err_set(e, ERR_INVALID, "bad port in listen address '%s'", s);
    *port = (int)p;
    if (strcmp(host, "localhost") == 0)
        snprintf(host, hsize, "127.0.0.1");
    struct in_addr a4;
    /* a literal loopback address only: "127.x.example.com" must not resolve to anything */
    if (strcmp(host, "::1") != 0 &&
        !(inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127))
        return err_set(e, ERR_INVALID, "refusing to listen on '%s': the mock binds loopback only",
                       host);
    return 0;
}

/* The bound address of fd as HOST:PORT in out. Returns 0, ERR_SYS, or ERR_UNSUPPORTED for a
 * socket that is neither IPv4 nor IPv6 (errno set for both). */
static int sock_addr(int fd, char *out, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char ip[INET6_ADDRSTRLEN];
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        return ERR_SYS;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
        snprintf(out, size, "%s:%d", ip, ntohs(sin->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
        snprintf(out, size, "[%s]:%d", ip, ntohs(sin6->sin6_port));
    } else {
        errno = EAFNOSUPPORT;
        return ERR_UNSUPPORTED;
    }
    return 0;
}

int mock_serve(const struct mockscript *s, const struct mock_server_opts *o, struct err *e)
{
    struct server sv;
    struct event *sigterm = NULL, *sigint = NULL;
    char addr[80];
    int rc = 0, fd;

    memset(&sv, 0, sizeof(sv));
    sv.script = s;
    sv.record_fd = -1;
    signal(SIGPIPE, SIG_IGN);
    sv.base = event_base_new();
    sv.http = sv.base ? evhttp_new(sv.base) : NULL;
    if (sv.http == NULL) {
        rc = err_set(e, ERR_SYS, "cannot create the event loop");
        goto out;
    }
    evhttp_set_max_body_size(sv.http, (ev_ssize_t)(o->max_body ? o->max_body : WIRE_BODY_MAX));
    evhttp_set_max_headers_size(sv.http, 256 * 1024);
    evhttp_set_timeout(sv.http, 120);
    evhttp_set_allowed_methods(sv.http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_gencb(sv.http, on_request, &sv);

    if (o->listen_fd >= 0) {
        fd = o->listen_fd;
        if (sock_addr(fd, addr, sizeof(addr)) < 0 || evutil_make_socket_nonblocking(fd) < 0 ||
            evhttp_accept_socket_with_handle(sv.http, fd) == NULL) {
            rc = err_set(e, ERR_SYS, "cannot serve on descriptor %d: %s", fd, strerror(errno));
            goto out;
        }
    } else {
        char host[64];
        int port = 0;
        struct evhttp_bound_socket *bs;
        if ((rc = parse_listen(o->listen ? o->listen : "127.0.0.1:0", host, sizeof(host), &port,
                               e)) < 0)
            goto out;
        bs = evhttp_bind_socket_with_handle(sv.http, host, (ev_uint16_t)port);
        if (bs == NULL) {
            rc = err_set(e, ERR_SYS, "cannot listen on %s:%d: %s", host, port, strerror(errno));
            goto out;
        }
        fd = evhttp_bound_socket_get_fd(bs);
        if (sock_addr(fd, addr, sizeof(addr)) < 0) {
            rc = err_set(e, ERR_SYS, "cannot read the bound address: %s", strerror(errno));
            goto out;
        }
    }
    if (o->record) {
        sv.record_fd = open(o->record, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (sv.record_fd < 0) {
            rc = err_set(e, ERR_IO, "cannot open '%s': %s", o->record, strerror(errno));
            goto out;
        }
    }
    sigterm = evsignal_new(sv.base, SIGTERM, on_signal, &sv);
    sigint = evsignal_new(sv.base, SIGINT, on_signal, &sv);
    if (sigterm == NULL || sigint == NULL || evsignal_add(sigterm, NULL) < 0 ||
        evsignal_add(sigint, NULL) < 0) {
        rc = err_set(e, ERR_SYS, "cannot install signal handlers");
        goto out;
    }
    if (o->ready_file) {
        struct buf b = BUF_INIT;
        buf_addf(&b, "%s\n", addr);
        rc = fs_write_file(o->ready_file, b.data, b.len, e);
        buf_release(&b);
        if (rc < 0)
            goto out;
    }
    log_info("mock", "serving script '%s' on %s", mockscript_name(s), addr);
    if (o->on_ready)
        o->on_ready(addr, o->arg);
    if (event_base_dispatch(sv.base) < 0)
        rc = err_set(e, ERR_SYS, "event loop failed");
out:
    if (sigterm)
        event_free(sigterm);
    if (sigint)
        event_free(sigint);
    if (sv.http)
        evhttp_free(sv.http);
    if (sv.base)
        event_base_free(sv.base);
    if (sv.record_fd >= 0)
        close(sv.record_fd);
    return rc;
}
