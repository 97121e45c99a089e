/*
 * llm: requests, replies and one HTTP exchange with a model API (see llm.h for the neutral
 * conversation form and how each API renders it).
 *
 * Reading a stream: bytes from the HTTP layer go into an SSE parser (src/codec/sse.h); each
 * event goes both to wire_result_stream_event (usage, terminal event) and to the per-API
 * handler below, which hands text deltas to the caller at once and assembles tool calls:
 *
 *   API        text                         tool call pieces, keyed by          ends at
 *   anthropic  content_block_delta          content_block_start (id, name),     message_stop
 *              text_delta                   input_json_delta: block index
 *   chat       choices[0].delta.content     delta.tool_calls[]: their "index"   [DONE]
 *   responses  response.output_text.delta   output_item.added/.done,            response.
 *                                           function_call_arguments.*:          completed /
 *                                           output_index (completed wins)       incomplete /
 *                                                                               failed
 *
 * A stream that stops before its terminal event is an error ("stream ended before ..."),
 * as is an error event; both keep the whole provider message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "agent/llm.h"
#include "codec/sse.h"
#include "util/num.h"
#include "util/text.h"
#include "util/banned.h"

const char *llm_api_name(enum llm_api api)
{
    switch (api) {
    case LLM_API_ANTHROPIC:
        return "anthropic";
    case LLM_API_CHAT:
        return "openai";
    case LLM_API_RESPONSES:
        return "responses";
    }
    return "?";
}

int llm_api_parse(const char *s, enum llm_api *out)
{
    if (s == NULL)
        return ERR_INVALID;
    if (strcmp(s, "anthropic") == 0)
        *out = LLM_API_ANTHROPIC;
    else if (strcmp(s, "openai") == 0 || strcmp(s, "chat") == 0 || strcmp(s, "openai-chat") == 0)
        *out = LLM_API_CHAT;
    else if (strcmp(s, "responses") == 0 || strcmp(s, "openai-responses") == 0)
        *out = LLM_API_RESPONSES;
    else
        return ERR_INVALID;
    return 0;
}

enum wire_api llm_wire_api(enum llm_api api)
{
    switch (api) {
    case LLM_API_ANTHROPIC:
        return WIRE_API_ANTHROPIC_MESSAGES;
    case LLM_API_CHAT:
        return WIRE_API_OPENAI_CHAT;
    case LLM_API_RESPONSES:
        return WIRE_API_OPENAI_RESPONSES;
    }
    return WIRE_API_UNKNOWN;
}

/* ---- text ---- */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k;
    unsigned min;
    unsigned cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        k = 2, min = 0x80, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        k = 3, min = 0x800, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        k = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return k;
}

json_t *llm_text_json(const char *s, size_t n)
{
    json_t *j;
    struct buf b = BUF_INIT;

    if (s == NULL)
        return json_string("");
    j = json_stringn(s, n);
    if (j)
        return j;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len((const unsigned char *)s + i, n - i);
        if (k == 0) {
            buf_add(&b, "\xef\xbf\xbd", 3);
            i++;
        } else {
            buf_add(&b, s + i, k);
            i += k;
        }
    }
    j = json_stringn(b.data, b.len);
    buf_release(&b);
    return j ? j : json_string("");
}

static json_t *jtext(const char *s)
{
    return llm_text_json(s, s ? strlen(s) : 0);
}

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* ---- conversation ---- */

void llm_conv_init(struct llm_conv *c)
{
    c->items = json_array();
}

void llm_conv_release(struct llm_conv *c)
{
    json_decref(c->items);
    c->items = NULL;
}

void llm_conv_add_user(struct llm_conv *c, const char *text)
{
    json_t *o = json_object();
    json_object_set_new(o, "role", json_string("user"));
    json_object_set_new(o, "text", jtext(text));
    json_array_append_new(c->items, o);
}

void llm_conv_add_assistant(struct llm_conv *c, const struct llm_reply *r)
{
    json_t *o = json_object(), *calls = json_array();

    json_object_set_new(o, "role", json_string("assistant"));
    json_object_set_new(o, "text", llm_text_json(r->text.data, r->text.len));
    for (size_t i = 0; i < r->ncalls; i++) {
        const struct llm_call *k = &r->calls[i];
        json_t *call = json_object();
        json_object_set_new(call, "id", jtext(k->id));
        json_object_set_new(call, "name", jtext(k->name));
        json_object_set_new(call, "input", k->input ? json_deep_copy(k->input) : json_object());
        json_object_set_new(call, "arguments", jtext(k->args));
        json_array_append_new(calls, call);
    }
    json_object_set_new(o, "calls", calls);
    json_array_append_new(c->items, o);
}

void llm_conv_add_result(struct llm_conv *c, const char *call_id, const char *name,
                         const char *content, int is_error)
{
    size_t n = json_array_size(c->items);
    json_t *last = n ? json_array_get(c->items, n - 1) : NULL, *res;

    if (last == NULL || strcmp(jstr(last, "role"), "tool") != 0) {
        last = json_object();
        json_object_set_new(last, "role", json_string("tool"));
        json_object_set_new(last, "results", json_array());
        json_array_append_new(c->items, last);
    }
    res = json_object();
    json_object_set_new(res, "id", jtext(call_id));
    json_object_set_new(res, "name", jtext(name));
    json_object_set_new(res, "content", jtext(content));
    json_object_set_new(res, "is_error", json_boolean(is_error));
    json_array_append_new(json_object_get(last, "results"), res);
}

/* ---- requests ---- */

static json_t *openai_result_text(const json_t *res)
{
    const char *content = jstr(res, "content");
    if (!json_is_true(json_object_get(res, "is_error")))
        return json_string(content);
    struct buf b = BUF_INIT;
    buf_addf(&b, "Error: %s", content);
    json_t *j = jtext(b.data);
    buf_release(&b);
    return j;
}

static json_t *tools_for(enum llm_api api, const json_t *tools)
{
    json_t *out = json_array(), *t;
    size_t i;

    json_array_foreach(tools, i, t)
    {
        json_t *o = json_object(), *desc = json_object_get(t, "description");
        json_t *schema = json_object_get(t, "input_schema");
        json_t *fn;
        if (!json_is_object(schema))
            schema = NULL;
        switch (api) {
        case LLM_API_ANTHROPIC:
            json_object_set(o, "name", json_object_get(t, "name"));
            if (json_is_string(desc))
                json_object_set(o, "description", desc);
            json_object_set_new(o, "input_schema",
                                schema ? json_incref(schema)
                                       : json_pack("{s:s}", "type", "object"));
            break;
        case LLM_API_CHAT:
            fn = json_object();
            json_object_set(fn, "name", json_object_get(t, "name"));
            if (json_is_string(desc))
                json_object_set(fn, "description", desc);
            json_object_set_new(fn, "parameters",
                                schema ? json_incref(schema)
                                       : json_pack("{s:s}", "type", "object"));
            json_object_set_new(o, "type", json_string("function"));
            json_object_set_new(o, "function", fn);
            break;
        case LLM_API_RESPONSES:
            json_object_set_new(o, "type", json_string("function"));
            json_object_set(o, "name", json_object_get(t, "name"));
            if (json_is_string(desc))
                json_object_set(o, "description", desc);
            json_object_set_new(o, "parameters",
                                schema ? json_incref(schema)
                                       : json_pack("{s:s}", "type", "object"));
            break;
        }
        json_array_append_new(out, o);
    }
    return out;
}

static void anthropic_messages(const json_t *items, json_t *msgs)
{
    size_t i, j;
    json_t *it, *x;

    json_array_foreach(items, i, it)
    {
        const char *role = jstr(it, "role");
        json_t *m = json_object(), *content;
        if (strcmp(role, "user") == 0) {
            json_object_set_new(m, "role", json_string("user"));
            json_object_set(m, "content", json_object_get(it, "text"));
        } else if (strcmp(role, "assistant") == 0) {
            content = json_array();
            if (*jstr(it, "text"))
                json_array_append_new(content, json_pack("{s:s,s:O}", "type", "text", "text",
                                                         json_object_get(it, "text")));
            json_array_foreach(json_object_get(it, "calls"), j, x)
            {
                json_array_append_new(content, json_pack("{s:s,s:O,s:O,s:O}", "type", "tool_use",
                                                         "id", json_object_get(x, "id"), "name",
                                                         json_object_get(x, "name"), "input",
                                                         json_object_get(x, "input")));
            }
            if (json_array_size(content) == 0)
                json_array_append_new(
                    content, json_pack("{s:s,s:s}", "type", "text", "text", "(no content)"));
            json_object_set_new(m, "role", json_string("assistant"));
            json_object_set_new(m, "content", content);
        } else {
            content = json_array();
            json_array_foreach(json_object_get(it, "results"), j, x)
            {
                json_t *b =
                    json_pack("{s:s,s:O,s:O}", "type", "tool_result", "tool_use_id",
                              json_object_get(x, "id"), "content", json_object_get(x, "content"));
                if (json_is_true(json_object_get(x, "is_error")))
                    json_object_set_new(b, "is_error", json_true());
                json_array_append_new(content, b);
            }
            json_object_set_new(m, "role", json_string("user"));
            json_object_set_new(m, "content", content);
        }
        json_array_append_new(msgs, m);
    }
}

static void chat_messages(const json_t *items, json_t *msgs)
{
    size_t i, j;
    json_t *it, *x;

    json_array_foreach(items, i, it)
    {
        const char *role = jstr(it, "role");
        if (strcmp(role, "user") == 0) {
            json_array_append_new(msgs, json_pack("{s:s,s:O}", "role", "user", "content",
                                                  json_object_get(it, "text")));
        } else if (strcmp(role, "assistant") == 0) {
            json_t *m = json_object(), *calls = json_array();
            json_object_set_new(m, "role", json_string("assistant"));
            json_object_set(m, "content",
                            *jstr(it, "text") ? json_object_get(it, "text") : json_null());
            json_array_foreach(json_object_get(it, "calls"), j, x)
            {
                json_array_append_new(calls,
                                      json_pack("{s:O,s:s,s:{s:O,s:O}}", "id",
                                                json_object_get(x, "id"), "type", "function",
                                                "function", "name", json_object_get(x, "name"),
                                                "arguments", json_object_get(x, "arguments")));
            }
            if (json_array_size(calls))
                json_object_set_new(m, "tool_calls", calls);
            else
                json_decref(calls);
            json_array_append_new(msgs, m);
        } else {
            json_array_foreach(json_object_get(it, "results"), j, x)
            {
                json_array_append_new(msgs, json_pack("{s:s,s:O,s:o}", "role", "tool",
                                                      "tool_call_id", json_object_get(x, "id"),
                                                      "content", openai_result_text(x)));
            }
        }
    }
}

static void responses_input(const json_t *items, json_t *input)
{
    size_t i, j;
    json_t *it, *x;

    json_array_foreach(items, i, it)
    {
        const char *role = jstr(it, "role");
        if (strcmp(role, "user") == 0) {
            json_array_append_new(input, json_pack("{s:s,s:O}", "role", "user", "content",
                                                   json_object_get(it, "text")));
        } else if (strcmp(role, "assistant") == 0) {
            if (*jstr(it, "text"))
                json_array_append_new(input, json_pack("{s:s,s:O}", "role", "assistant", "content",
                                                       json_object_get(it, "text")));
            json_array_foreach(json_object_get(it, "calls"), j, x)
            {
                json_array_append_new(input, json_pack("{s:s,s:O,s:O,s:O}", "type", "function_call",
                                                       "call_id", json_object_get(x, "id"), "name",
                                                       json_object_get(x, "name"), "arguments",
                                                       json_object_get(x, "arguments")));
            }
        } else {
            json_array_foreach(json_object_get(it, "results"), j, x)
            {
                json_array_append_new(
                    input, json_pack("{s:s,s:O,s:o}", "type", "function_call_output", "call_id",
                                     json_object_get(x, "id"), "output", openai_result_text(x)));
            }
        }
    }
}

json_t *llm_build_request(const struct llm_params *p, const struct llm_conv *c)
{
    json_t *req = json_object(), *list = json_array();
    int has_tools = p->tools && json_array_size(p->tools) > 0;
    int has_system = p->system && *p->system;

    json_object_set_new(req, "model", jtext(p->model ? p->model : ""));
    switch (p->api) {
    case LLM_API_ANTHROPIC:
        json_object_set_new(req, "max_tokens", json_integer(p->max_tokens));
        if (has_system)
            json_object_set_new(req, "system", jtext(p->system));
        anthropic_messages(c->items, list);
        json_object_set_new(req, "messages", list);
        break;
    case LLM_API_CHAT:
        if (has_system)
            json_array_append_new(
                list, json_pack("{s:s,s:o}", "role", "system", "content", jtext(p->system)));
        chat_messages(c->items, list);
        json_object_set_new(req, "messages", list);
        json_object_set_new(req, "max_completion_tokens", json_integer(p->max_tokens));
        break;
    case LLM_API_RESPONSES:
        if (has_system)
            json_object_set_new(req, "instructions", jtext(p->system));
        responses_input(c->items, list);
        json_object_set_new(req, "input", list);
        json_object_set_new(req, "max_output_tokens", json_integer(p->max_tokens));
        json_object_set_new(req, "store", json_false());
        break;
    }
    if (has_tools)
        json_object_set_new(req, "tools", tools_for(p->api, p->tools));
    if (p->stream) {
        json_object_set_new(req, "stream", json_true());
        if (p->api == LLM_API_CHAT)
            json_object_set_new(req, "stream_options", json_pack("{s:b}", "include_usage", 1));
    }
    return req;
}

/* ---- replies ---- */

void llm_reply_init(struct llm_reply *r)
{
    memset(r, 0, sizeof(*r));
    buf_init(&r->text, LLM_TEXT_MAX);
    buf_init(&r->error_message, LLM_ERROR_MAX);
    r->retry_after_ms = LLM_NO_RETRY_AFTER;
    r->should_retry = LLM_SHOULD_RETRY_ABSENT;
}

static void free_calls(struct llm_reply *r)
{
    for (size_t i = 0; i < r->ncalls; i++) {
        free(r->calls[i].id);
        free(r->calls[i].name);
        free(r->calls[i].args);
        free(r->calls[i].input_error);
        json_decref(r->calls[i].input);
    }
    free(r->calls);
    r->calls = NULL;
    r->ncalls = 0;
}

void llm_reply_release(struct llm_reply *r)
{
    free_calls(r);
    buf_release(&r->text);
    buf_release(&r->error_message);
}

void llm_reply_reset(struct llm_reply *r)
{
    llm_reply_release(r);
    llm_reply_init(r);
}

static void add_text(struct llm_reply *r, const char *s, size_t n)
{
    if (r->text_truncated)
        return;
    if (buf_add(&r->text, s, n) < 0) {
        size_t room = r->text.max - r->text.len;
        buf_add(&r->text, s, room);
        r->text_truncated = 1;
    }
}

static void set_error_msg(struct llm_reply *r, const char *type, const char *msg, size_t n)
{
    r->error = 1;
    if (type && *type && r->error_type[0] == '\0')
        snprintf(r->error_type, sizeof(r->error_type), "%s", type);
    if (r->error_message.len == 0 && msg) {
        if (n > LLM_ERROR_MAX)
            n = LLM_ERROR_MAX;
        buf_add(&r->error_message, msg, n);
    }
}

/* An error object: Anthropic {"type","message"}, OpenAI {"message","type","code"}, Responses
 * {"code","message"}, or a bare string. */
static void set_error_json(struct llm_reply *r, const json_t *err)
{
    const char *type, *msg;

    if (json_is_string(err)) {
        msg = json_string_value(err);
        set_error_msg(r, "", msg, strlen(msg));
        return;
    }
    type = json_string_value(json_object_get(err, "type"));
    if (type == NULL || *type == '\0' || strcmp(type, "error") == 0) /* Responses: code */
        type = json_string_value(json_object_get(err, "code"));
    msg = json_string_value(json_object_get(err, "message"));
    if (msg) {
        set_error_msg(r, type, msg, strlen(msg));
    } else {
        char *d = json_dumps(err, JSON_COMPACT);
        set_error_msg(r, type, d ? d : "(no message)", d ? strlen(d) : 12);
        free(d);
    }
}

static void add_call(struct llm_reply *r, const char *id, const char *name, const char *args,
                     size_t args_len)
{
    struct llm_call *k;
    json_error_t je;
    size_t i = 0;

    if (r->ncalls >= LLM_CALLS_MAX) {
        r->calls_dropped++;
        return;
    }
    r->calls = xrealloc(r->calls, (r->ncalls + 1) * sizeof(*r->calls));
    k = &r->calls[r->ncalls];
    memset(k, 0, sizeof(*k));
    if (id && *id) {
        k->id = xstrdup(id);
    } else {
        char tmp[32];
        snprintf(tmp, sizeof(tmp), "call_%zu", r->ncalls + 1);
        k->id = xstrdup(tmp);
    }
    k->name = xstrdup(name ? name : "");
    while (args && i < args_len && strchr(" \t\r\n", args[i]))
        i++;
    if (args == NULL || i == args_len) {
        k->args = xstrdup("{}");
        k->input = json_object();
    } else {
        k->args = xstrndup(args, args_len);
        k->input = json_loadb(args, args_len, JSON_REJECT_DUPLICATES, &je);
        if (k->input == NULL) {
            char tmp[300];
            snprintf(tmp, sizeof(tmp), "invalid JSON arguments at column %d: %s", je.column,
                     JE_TEXT(je));
            k->input_error = xstrdup(tmp);
        } else if (!json_is_object(k->input)) {
            json_decref(k->input);
            k->input = NULL;
            k->input_error = xstrdup("arguments are not a JSON object");
        }
    }
    if (*k->name == '\0' && k->input_error == NULL)
        k->input_error = xstrdup("tool call without a name");
    r->ncalls++;
}

static void add_call_json(struct llm_reply *r, const char *id, const char *name,
                          const json_t *input)
{
    char *d = json_is_object(input) ? json_dumps(input, JSON_COMPACT) : NULL;
    add_call(r, id, name, d ? d : "{}", d ? strlen(d) : 2);
    free(d);
}

static void copy_to(char *dst, size_t n, const char *s)
{
    snprintf(dst, n, "%s", s ? s : "");
}

static void parse_anthropic(const json_t *j, struct llm_reply *r)
{
    size_t i;
    json_t *b;

    json_array_foreach(json_object_get(j, "content"), i, b)
    {
        const char *t = jstr(b, "type");
        if (strcmp(t, "text") == 0) {
            const char *s = jstr(b, "text");
            if (r->text.len > 0 && *s)
                add_text(r, "\n", 1);
            add_text(r, s, strlen(s));
        } else if (strcmp(t, "tool_use") == 0) {
            add_call_json(r, jstr(b, "id"), jstr(b, "name"), json_object_get(b, "input"));
        }
    }
    copy_to(r->stop_reason, sizeof(r->stop_reason), jstr(j, "stop_reason"));
}

/* Chat message content: a string, or an array of {"type":"text","text"} parts. */
static void add_chat_content(struct llm_reply *r, const json_t *content)
{
    size_t i;
    json_t *p;

    if (json_is_string(content)) {
        add_text(r, json_string_value(content), json_string_length(content));
        return;
    }
    json_array_foreach(content, i, p)
    {
        const char *s = jstr(p, "text");
        add_text(r, s, strlen(s));
    }
}

static void parse_chat(const json_t *j, struct llm_reply *r)
{
    json_t *choice = json_array_get(json_object_get(j, "choices"), 0);
    json_t *msg = json_object_get(choice, "message"), *tc;
    size_t i;

    add_chat_content(r, json_object_get(msg, "content"));
    json_array_foreach(json_object_get(msg, "tool_calls"), i, tc)
    {
        json_t *fn = json_object_get(tc, "function");
        const char *args = jstr(fn, "arguments");
        add_call(r, jstr(tc, "id"), jstr(fn, "name"), args, strlen(args));
    }
    copy_to(r->stop_reason, sizeof(r->stop_reason), jstr(choice, "finish_reason"));
}

/* Responses output[] items into r (text of message items, function calls). */
static void parse_responses_output(const json_t *output, struct llm_reply *r)
{
    size_t i, k;
    json_t *it, *c;

    json_array_foreach(output, i, it)
    {
        const char *t = jstr(it, "type");
        if (strcmp(t, "message") == 0) {
            int first = 1;
            json_array_foreach(json_object_get(it, "content"), k, c)
            {
                const char *ct = jstr(c, "type");
                const char *s = strcmp(ct, "refusal") == 0 ? jstr(c, "refusal") : jstr(c, "text");
                if (first && r->text.len > 0 && *s)
                    add_text(r, "\n", 1);
                first = 0;
                add_text(r, s, strlen(s));
            }
        } else if (strcmp(t, "function_call") == 0) {
            const char *id = jstr(it, "call_id"), *args = jstr(it, "arguments");
            add_call(r, *id ? id : jstr(it, "id"), jstr(it, "name"), args, strlen(args));
        }
    }
}

static void parse_responses(const json_t *j, struct llm_reply *r)
{
    json_t *err = json_object_get(j, "error");

    parse_responses_output(json_object_get(j, "output"), r);
    copy_to(r->stop_reason, sizeof(r->stop_reason), jstr(j, "status"));
    if (strcmp(r->stop_reason, "failed") == 0 || json_is_object(err)) {
        if (json_is_object(err))
            set_error_json(r, err);
        else
            set_error_msg(r, "failed", "the response failed", 19);
    }
}

static void usage_from(enum llm_api api, const json_t *j, struct llm_reply *r)
{
    struct wire_result wr;

    wire_result_init(&wr);
    if (wire_result_from_json(llm_wire_api(api), j, &wr, NULL) == 0) {
        if (wr.usage.present)
            r->usage = wr.usage;
        if (wr.model[0])
            copy_to(r->model, sizeof(r->model), wr.model);
    }
    wire_result_release(&wr);
}

/* A printable excerpt of a non-JSON body for an error message. */
static void body_excerpt(struct llm_reply *r, const char *body, size_t len)
{
    struct buf b = BUF_INIT;
    size_t n = len < 1000 ? len : 1000;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)body[i];
        buf_addc(&b, c < 0x20 || c == 0x7f ? ' ' : (char)c);
    }
    if (len > n)
        buf_adds(&b, "...");
    set_error_msg(r, "", b.data, b.len);
    buf_release(&b);
}

void llm_reply_from_body(enum llm_api api, int status, const char *body, size_t len,
                         struct llm_reply *r)
{
    json_error_t je;
    json_t *j = NULL, *err;
    char tmp[64];

    llm_reply_reset(r);
    r->status = status;
    if (len > 0 && len <= WIRE_BODY_MAX)
        j = json_loadb(body, len, 0, &je);
    err = json_is_object(j) ? json_object_get(j, "error") : NULL;
    if (status < 200 || status > 299) {
        if (err && !json_is_null(err))
            set_error_json(r, err);
        else if (len > 0)
            body_excerpt(r, body, len);
        snprintf(tmp, sizeof(tmp), "HTTP %d with no error message", status);
        set_error_msg(r, "", tmp, strlen(tmp));
        json_decref(j);
        return;
    }
    if (!json_is_object(j)) {
        r->error = 1;
        snprintf(r->error_type, sizeof(r->error_type), "invalid_response");
        if (len == 0)
            set_error_msg(r, NULL, "empty response body", 19);
        else
            body_excerpt(r, body, len);
        json_decref(j);
        return;
    }
    if (err && !json_is_null(err)) {
        set_error_json(r, err);
        json_decref(j);
        return;
    }
    switch (api) {
    case LLM_API_ANTHROPIC:
        parse_anthropic(j, r);
        break;
    case LLM_API_CHAT:
        parse_chat(j, r);
        break;
    case LLM_API_RESPONSES:
        parse_responses(j, r);
        break;
    }
    usage_from(api, j, r);
    json_decref(j);
}

/* ---- streams ---- */

struct pending {
    long long key;
    struct buf id, name, args;
    int args_final; /* the args came whole (.done events): deltas no longer append */
};

struct llm_stream {
    enum llm_api api;
    struct llm_reply *r;
    llm_text_fn on_text;
    void *arg;
    struct sse_parser *sse;
    struct wire_result wr;
    struct pending *pend;
    size_t npend;
    int terminal;    /* the API's final event was seen */
    int calls_final; /* Responses: calls came from response.completed */
    size_t bad_events;
};

struct llm_stream *llm_stream_new(enum llm_api api, struct llm_reply *r, llm_text_fn on_text,
                                  void *arg)
{
    struct llm_stream *s = xcalloc(1, sizeof(*s));

    s->api = api;
    s->r = r;
    s->on_text = on_text;
    s->arg = arg;
    s->sse = sse_parser_new(0, 0);
    wire_result_init(&s->wr);
    llm_reply_reset(r);
    r->streamed = 1;
    return s;
}

static void free_pending(struct llm_stream *s)
{
    for (size_t i = 0; i < s->npend; i++) {
        buf_release(&s->pend[i].id);
        buf_release(&s->pend[i].name);
        buf_release(&s->pend[i].args);
    }
    free(s->pend);
    s->pend = NULL;
    s->npend = 0;
}

void llm_stream_free(struct llm_stream *s)
{
    if (s == NULL)
        return;
    free_pending(s);
    sse_parser_free(s->sse);
    wire_result_release(&s->wr);
    free(s);
}

static void emit(struct llm_stream *s, const char *t, size_t n)
{
    if (n == 0)
        return;
    add_text(s->r, t, n);
    if (s->on_text)
        s->on_text(t, n, s->arg);
}

static struct pending *pending_at(struct llm_stream *s, long long key)
{
    for (size_t i = 0; i < s->npend; i++)
        if (s->pend[i].key == key)
            return &s->pend[i];
    if (s->npend >= LLM_CALLS_MAX) {
        s->r->calls_dropped++;
        return NULL;
    }
    s->pend = xrealloc(s->pend, (s->npend + 1) * sizeof(*s->pend));
    struct pending *p = &s->pend[s->npend++];
    p->key = key;
    p->args_final = 0;
    buf_init(&p->id, 256);
    buf_init(&p->name, 256);
    buf_init(&p->args, LLM_RESPONSE_MAX);
    return p;
}

static void set_buf(struct buf *b, const char *s)
{
    buf_reset(b);
    buf_adds(b, s);
}

static long long jint(const json_t *o, const char *key, long long dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

static void on_anthropic(struct llm_stream *s, const char *type, const json_t *d)
{
    struct pending *p;

    if (strcmp(type, "content_block_start") == 0) {
        const json_t *b = json_object_get(d, "content_block");
        const char *bt = jstr(b, "type");
        if (strcmp(bt, "text") == 0) {
            const char *t = jstr(b, "text");
            if (s->r->text.len > 0)
                emit(s, "\n", 1);
            emit(s, t, strlen(t));
        } else if (strcmp(bt, "tool_use") == 0) {
            if ((p = pending_at(s, jint(d, "index", 0))) == NULL)
                return;
            set_buf(&p->id, jstr(b, "id"));
            set_buf(&p->name, jstr(b, "name"));
            json_t *in = json_object_get(b, "input");
            if (json_is_object(in) && json_object_size(in) > 0) {
                char *dump = json_dumps(in, JSON_COMPACT);
                if (dump)
                    set_buf(&p->args, dump);
                free(dump);
                p->args_final = 1; /* deltas, if any, restate it */
            }
        }
    } else if (strcmp(type, "content_block_delta") == 0) {
        const json_t *delta = json_object_get(d, "delta");
        const char *dt = jstr(delta, "type");
        if (strcmp(dt, "text_delta") == 0) {
            const char *t = jstr(delta, "text");
            emit(s, t, strlen(t));
        } else if (strcmp(dt, "input_json_delta") == 0) {
            if ((p = pending_at(s, jint(d, "index", 0))) == NULL)
                return;
            if (p->args_final) {
                buf_reset(&p->args);
                p->args_final = 0;
            }
            buf_adds(&p->args, jstr(delta, "partial_json"));
        }
    } else if (strcmp(type, "message_start") == 0) {
        copy_to(s->r->model, sizeof(s->r->model), jstr(json_object_get(d, "message"), "model"));
    } else if (strcmp(type, "message_delta") == 0) {
        const char *sr = jstr(json_object_get(d, "delta"), "stop_reason");
        if (*sr)
            copy_to(s->r->stop_reason, sizeof(s->r->stop_reason), sr);
    } else if (strcmp(type, "message_stop") == 0) {
        s->terminal = 1;
    } else if (strcmp(type, "error") == 0) {
        json_t *err = json_object_get(d, "error");
        set_error_json(s->r, err ? err : d);
    }
}

static void on_chat(struct llm_stream *s, const json_t *d)
{
    json_t *err = json_object_get(d, "error"), *choice, *delta, *tc;
    size_t i;

    if (err && !json_is_null(err)) {
        set_error_json(s->r, err);
        return;
    }
    if (*jstr(d, "model"))
        copy_to(s->r->model, sizeof(s->r->model), jstr(d, "model"));
    choice = json_array_get(json_object_get(d, "choices"), 0);
    if (choice == NULL)
        return;
    delta = json_object_get(choice, "delta");
    json_t *content = json_object_get(delta, "content");
    if (json_is_string(content))
        emit(s, json_string_value(content), json_string_length(content));
    json_array_foreach(json_object_get(delta, "tool_calls"), i, tc)
    {
        struct pending *p = pending_at(s, jint(tc, "index", (long long)i));
        json_t *fn = json_object_get(tc, "function");
        if (p == NULL)
            continue;
        if (*jstr(tc, "id"))
            set_buf(&p->id, jstr(tc, "id"));
        if (*jstr(fn, "name") && p->name.len == 0)
            set_buf(&p->name, jstr(fn, "name"));
        buf_adds(&p->args, jstr(fn, "arguments"));
    }
    if (*jstr(choice, "finish_reason"))
        copy_to(s->r->stop_reason, sizeof(s->r->stop_reason), jstr(choice, "finish_reason"));
}

static void on_responses(struct llm_stream *s, const char *type, const json_t *d)
{
    struct pending *p;
    const json_t *item = json_object_get(d, "item");

    if (strcmp(type, "response.output_text.delta") == 0) {
        const char *t = jstr(d, "delta");
        emit(s, t, strlen(t));
    } else if (strcmp(type, "response.output_item.added") == 0 ||
               strcmp(type, "response.output_item.done") == 0) {
        const char *it = jstr(item, "type");
        int done = strcmp(type, "response.output_item.done") == 0;
        if (strcmp(it, "message") == 0 && !done && s->r->text.len > 0) {
            emit(s, "\n", 1);
        } else if (strcmp(it, "function_call") == 0) {
            if ((p = pending_at(s, jint(d, "output_index", 0))) == NULL)
                return;
            const char *id = jstr(item, "call_id");
            set_buf(&p->id, *id ? id : jstr(item, "id"));
            set_buf(&p->name, jstr(item, "name"));
            if (done || *jstr(item, "arguments")) {
                set_buf(&p->args, jstr(item, "arguments"));
                p->args_final = done;
            }
        }
    } else if (strcmp(type, "response.function_call_arguments.delta") == 0) {
        if ((p = pending_at(s, jint(d, "output_index", 0))) != NULL && !p->args_final)
            buf_adds(&p->args, jstr(d, "delta"));
    } else if (strcmp(type, "response.function_call_arguments.done") == 0) {
        if ((p = pending_at(s, jint(d, "output_index", 0))) != NULL) {
            set_buf(&p->args, jstr(d, "arguments"));
            p->args_final = 1;
        }
    } else if (strcmp(type, "response.created") == 0 || strcmp(type, "response.in_progress") == 0) {
        copy_to(s->r->model, sizeof(s->r->model), jstr(json_object_get(d, "response"), "model"));
    } else if (strcmp(type, "response.completed") == 0 ||
               strcmp(type, "response.incomplete") == 0 || strcmp(type, "response.failed") == 0 ||
               strcmp(type, "response.done") == 0) {
        const json_t *resp = json_object_get(d, "response");
        const json_t *output = json_object_get(resp, "output");
        s->terminal = 1;
        copy_to(s->r->stop_reason, sizeof(s->r->stop_reason), jstr(resp, "status"));
        if (json_array_size(output) > 0) {
            struct llm_reply tmp;
            llm_reply_init(&tmp);
            parse_responses_output(output, &tmp);
            if (tmp.text.len > 0) {
                buf_reset(&s->r->text);
                s->r->text_truncated = 0;
                add_text(s->r, tmp.text.data, tmp.text.len);
            }
            if (tmp.ncalls > 0) {
                free_calls(s->r);
                s->r->calls = tmp.calls;
                s->r->ncalls = tmp.ncalls;
                s->r->calls_dropped = tmp.calls_dropped;
                tmp.calls = NULL;
                tmp.ncalls = 0;
                s->calls_final = 1;
            }
            llm_reply_release(&tmp);
        }
        if (strcmp(type, "response.failed") == 0) {
            json_t *err = json_object_get(resp, "error");
            if (json_is_object(err))
                set_error_json(s->r, err);
            else
                set_error_msg(s->r, "failed", "the response failed", 19);
        }
    } else if (strcmp(type, "error") == 0) {
        json_t *err = json_object_get(d, "error");
        set_error_json(s->r, json_is_object(err) ? err : d);
    }
}

static void on_event(struct llm_stream *s, const struct sse_event *ev)
{
    json_t *d;
    json_error_t je;
    const char *type;

    wire_result_stream_event(llm_wire_api(s->api), &s->wr, ev, NULL);
    if (!ev->has_data)
        return;
    if (s->api == LLM_API_CHAT && strcmp(ev->data, "[DONE]") == 0) {
        s->terminal = 1;
        return;
    }
    d = json_loadb(ev->data, ev->data_len, 0, &je);
    if (!json_is_object(d)) {
        s->bad_events++;
        json_decref(d);
        return;
    }
    type = jstr(d, "type");
    if (*type == '\0' || (ev->event_len > 0 && strcmp(ev->event, "error") == 0))
        type = ev->event_len > 0 ? ev->event : "";
    switch (s->api) {
    case LLM_API_ANTHROPIC:
        on_anthropic(s, type, d);
        break;
    case LLM_API_CHAT:
        on_chat(s, d);
        break;
    case LLM_API_RESPONSES:
        on_responses(s, type, d);
        break;
    }
    json_decref(d);
}

int llm_stream_feed(struct llm_stream *s, const char *data, size_t n, struct err *e)
{
    struct sse_event ev;
    int rc = sse_parser_feed(s->sse, data, n);

    if (rc < 0)
        return err_set(e, rc, "event stream: input too large");
    while ((rc = sse_parser_next(s->sse, &ev, e)) == 1)
        on_event(s, &ev);
    return rc < 0 ? rc : 0;
}

void llm_stream_finish(struct llm_stream *s)
{
    struct llm_reply *r = s->r;

    if (!s->calls_final)
        for (size_t i = 0; i < s->npend; i++)
            add_call(r, s->pend[i].id.data, s->pend[i].name.data, s->pend[i].args.data,
                     s->pend[i].args.len);
    free_pending(s);
    if (s->wr.usage.present)
        r->usage = s->wr.usage;
    if (r->model[0] == '\0' && s->wr.model[0])
        copy_to(r->model, sizeof(r->model), s->wr.model);
    if (r->error || s->terminal)
        return;
    if (s->api == LLM_API_CHAT && r->stop_reason[0]) /* a server that sends no [DONE] */
        return;
    char tmp[160];
    snprintf(tmp, sizeof(tmp), "the event stream ended before its final event (%zu events read)",
             s->wr.events);
    set_error_msg(r, "stream_incomplete", tmp, strlen(tmp));
}

/* ---- exchange ---- */

const char *llm_default_base(enum llm_api api)
{
    return api == LLM_API_ANTHROPIC ? "https://api.anthropic.com" : "https://api.openai.com/v1";
}

int llm_endpoint_init(struct llm_endpoint *ep, enum llm_api api, const char *base_url,
                      struct err *e)
{
    static const char *const suffix[] = {"/v1/messages", "/chat/completions", "/responses"};
    int rc;

    memset(ep, 0, sizeof(*ep));
    ep->api = api;
    if ((rc = url_parse(base_url ? base_url : llm_default_base(api), &ep->url, e)) < 0)
        return rc;
    snprintf(ep->target, sizeof(ep->target), "%s%s", ep->url.path, suffix[api]);
    ep->connect_timeout_ms = 10000;
    ep->idle_timeout_ms = 300000;
    ep->total_timeout_ms = 900000;
    return 0;
}

struct xchg {
    enum llm_api api;
    struct llm_reply *r;
    struct llm_stream *stream;
    struct buf body;
    int mode; /* 0 undecided, 1 event stream, 2 whole body */
    llm_text_fn on_text;
    void *arg;
    struct err *e;
};

static int on_body(const struct httpc_parser *p, const char *d, size_t n, void *arg)
{
    struct xchg *x = arg;

    if (x->mode == 0) {
        char ct[128];
        httpc_parser_header(p, "content-type", ct, sizeof(ct));
        if (p->status >= 200 && p->status <= 299 && strcasestr(ct, "text/event-stream")) {
            x->mode = 1;
            x->stream = llm_stream_new(x->api, x->r, x->on_text, x->arg);
        } else {
            x->mode = 2;
        }
    }
    if (x->mode == 1)
        return llm_stream_feed(x->stream, d, n, x->e);
    if (buf_add(&x->body, d, n) < 0)
        return err_set(x->e, ERR_LIMIT, "response body over %zu bytes", x->body.max);
    return 0;
}

static void read_retry_headers(const struct httpc_parser *p, struct llm_reply *r)
{
    char v[128];
    double ms;

    r->retry_after_ms = LLM_NO_RETRY_AFTER;
    if (httpc_parser_header(p, "retry-after-ms", v, sizeof(v)) &&
        num_parse_double(v, 0, 1e9, &ms) == 0)
        r->retry_after_ms = (int64_t)ms;
    else if (httpc_parser_header(p, "retry-after", v, sizeof(v)))
        r->retry_after_ms = llm_parse_retry_after(v, (int64_t)time(NULL));
    r->should_retry = LLM_SHOULD_RETRY_ABSENT;
    if (httpc_parser_header(p, "x-should-retry", v, sizeof(v)))
        r->should_retry = strcasecmp(v, "true") == 0    ? 1
                          : strcasecmp(v, "false") == 0 ? 0
                                                        : LLM_SHOULD_RETRY_ABSENT;
}

int llm_exchange(const struct llm_endpoint *ep, const json_t *req, llm_text_fn on_text, void *arg,
                 struct llm_reply *r, struct err *e)
{
    struct xchg x;
    struct httpc_call hc;
    struct httpc_parser p;
    struct buf auth = BUF_INIT;
    const char *headers[8];
    size_t nh = 0;
    char *body;
    int rc, stream = json_is_true(json_object_get(req, "stream"));
    uint64_t max = ep->max_response ? ep->max_response : LLM_RESPONSE_MAX;

    llm_reply_reset(r);
    if (ep->api_key && strpbrk(ep->api_key, "\r\n"))
        return err_set(e, ERR_INVALID, "the API key contains a line break");
    body = json_dumps(req, JSON_COMPACT);
    if (body == NULL)
        return err_set(e, ERR_INVALID, "cannot encode the request");
    if (strlen(body) > WIRE_BODY_MAX) {
        free(body);
        return err_set(e, ERR_LIMIT, "request of over %zu bytes", WIRE_BODY_MAX);
    }
    headers[nh++] = "Content-Type: application/json";
    headers[nh++] = stream ? "Accept: text/event-stream" : "Accept: application/json";
    headers[nh++] = "User-Agent: faultline-agent/0.1";
    if (ep->api == LLM_API_ANTHROPIC)
        headers[nh++] = "anthropic-version: 2023-06-01";
    if (ep->api_key && *ep->api_key) {
        if (ep->api == LLM_API_ANTHROPIC && !ep->bearer)
            buf_addf(&auth, "x-api-key: %s", ep->api_key);
        else
            buf_addf(&auth, "Authorization: Bearer %s", ep->api_key);
        headers[nh++] = auth.data;
    }
    headers[nh] = NULL;

    memset(&x, 0, sizeof(x));
    x.api = ep->api;
    x.r = r;
    x.on_text = on_text;
    x.arg = arg;
    x.e = e;
    buf_init(&x.body, (size_t)max);

    memset(&hc, 0, sizeof(hc));
    hc.url = &ep->url;
    hc.tls = ep->tls;
    hc.method = "POST";
    hc.target = ep->target;
    hc.headers = headers;
    hc.body = body;
    hc.body_len = strlen(body);
    hc.connect_timeout_ms = ep->connect_timeout_ms;
    hc.idle_timeout_ms = ep->idle_timeout_ms;
    hc.total_timeout_ms = ep->total_timeout_ms;
    hc.max_body = max;
    hc.on_body = on_body;
    hc.arg = &x;
    hc.stop = ep->stop;

    rc = httpc_call_run(&hc, &p, e);
    if (rc < 0) {
        if (x.mode == 1 && x.stream) {
            /* part of a stream was read (and perhaps shown): report it as a failed answer,
             * not as a transport error, so that it is not retried and shown twice */
            llm_stream_finish(x.stream);
            if (!r->error || r->error_message.len == 0 ||
                strcmp(r->error_type, "stream_incomplete") == 0) {
                r->error = 1;
                buf_reset(&r->error_message);
                buf_addf(&r->error_message, "the event stream broke: %s", e->msg);
                snprintf(r->error_type, sizeof(r->error_type), "stream_incomplete");
            }
            r->status = p.status;
            read_retry_headers(&p, r);
            rc = 0;
        }
        goto out;
    }
    if (x.mode == 1) {
        llm_stream_finish(x.stream);
    } else {
        llm_reply_from_body(ep->api, p.status, x.body.data, x.body.len, r);
    }
    r->status = p.status;
    read_retry_headers(&p, r);
out:
    llm_stream_free(x.stream);
    httpc_parser_release(&p);
    buf_release(&x.body);
    /* the key must not linger in freed memory longer than needed */
    if (auth.len)
        memset(auth.data, 0, auth.len);
    buf_release(&auth);
    free(body);
    return rc;
}

/* ---- retries ---- */

int llm_retryable(const struct llm_reply *r, int transport_rc)
{
    if (transport_rc < 0)
        return transport_rc == ERR_IO || transport_rc == ERR_TIMEOUT || transport_rc == ERR_PROTO;
    if (r == NULL || !r->error)
        return 0;
    if (r->status >= 200 && r->status <= 299)
        return 0;
    if (strcmp(r->error_type, "insufficient_quota") == 0 ||
        strstr(r->error_message.data, "enforced_spend_limit") != NULL)
        return 0;
    if (r->should_retry >= 0)
        return r->should_retry;
    return r->status == 408 || r->status == 409 || r->status == 429 || r->status >= 500;
}

int64_t llm_retry_delay_ms(const struct llm_reply *r, int attempt, int64_t max_ms)
{
    int64_t d;

    if (r && r->retry_after_ms >= 0) {
        d = r->retry_after_ms;
    } else {
        d = 500;
        for (int i = 1; i < attempt && d < 8000; i++)
            d *= 2;
        if (d > 8000)
            d = 8000;
    }
    return d > max_ms ? max_ms : d;
}

int64_t llm_parse_retry_after(const char *v, int64_t now_s)
{
    double s;
    struct tm tm;

    if (v == NULL)
        return LLM_NO_RETRY_AFTER;
    if (num_parse_double(v, 0, 1e7, &s) == 0)
        return (int64_t)(s * 1000.0);
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (end == NULL || *end != '\0')
        return LLM_NO_RETRY_AFTER;
    int64_t at = (int64_t)timegm(&tm);
    return at <= now_s ? 0 : (at - now_s) * 1000;
}
