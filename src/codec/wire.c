/*
 * wire: provider wire formats (see wire.h for the usage table and the stream rules).
 *
 * Everything here is a pure function of its JSON input; nothing does I/O. Readers are
 * tolerant: a field of the wrong type is skipped, not an error (the response came from a
 * provider we do not control, and accounting must not break the call); request checks are
 * stricter, because a bad request deserves a 400 before it costs anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/wire.h"
#include "util/text.h"
#include "util/banned.h"

enum wire_api wire_api_from_path(const char *path)
{
    char p[256];
    size_t n;

    if (path == NULL)
        return WIRE_API_UNKNOWN;
    n = strcspn(path, "?#");
    if (n >= sizeof(p))
        return WIRE_API_UNKNOWN;
    memcpy(p, path, n);
    p[n] = '\0';
    if (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    const char *s = p;
    if (strncmp(s, "/v1/", 4) == 0)
        s += 3;
    if (strcmp(s, "/messages") == 0)
        return WIRE_API_ANTHROPIC_MESSAGES;
    if (strcmp(s, "/messages/count_tokens") == 0)
        return WIRE_API_ANTHROPIC_COUNT_TOKENS;
    if (strcmp(s, "/chat/completions") == 0)
        return WIRE_API_OPENAI_CHAT;
    if (strcmp(s, "/responses") == 0)
        return WIRE_API_OPENAI_RESPONSES;
    return WIRE_API_UNKNOWN;
}

enum wire_provider wire_api_provider(enum wire_api api)
{
    switch (api) {
    case WIRE_API_ANTHROPIC_MESSAGES:
    case WIRE_API_ANTHROPIC_COUNT_TOKENS:
        return WIRE_PROVIDER_ANTHROPIC;
    case WIRE_API_OPENAI_CHAT:
    case WIRE_API_OPENAI_RESPONSES:
        return WIRE_PROVIDER_OPENAI;
    default:
        return WIRE_PROVIDER_NONE;
    }
}

const char *wire_api_name(enum wire_api api)
{
    switch (api) {
    case WIRE_API_ANTHROPIC_MESSAGES:
        return "anthropic.messages";
    case WIRE_API_ANTHROPIC_COUNT_TOKENS:
        return "anthropic.count_tokens";
    case WIRE_API_OPENAI_CHAT:
        return "openai.chat";
    case WIRE_API_OPENAI_RESPONSES:
        return "openai.responses";
    default:
        return "unknown";
    }
}

const char *wire_provider_name(enum wire_provider p)
{
    switch (p) {
    case WIRE_PROVIDER_ANTHROPIC:
        return "anthropic";
    case WIRE_PROVIDER_OPENAI:
        return "openai";
    default:
        return "none";
    }
}

json_t *wire_json_parse(const char *body, size_t len, struct err *e)
{
    json_error_t je;
    json_t *j;

    if (len > WIRE_BODY_MAX) {
        err_set(e, ERR_LIMIT, "body of %zu bytes is over the limit of %zu", len, WIRE_BODY_MAX);
        return NULL;
    }
    j = json_loadb(body, len, 0, &je);
    if (j == NULL) {
        err_set(e, ERR_PARSE, "invalid JSON at line %d column %d: %s", je.line, je.column,
                JE_TEXT(je));
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        err_set(e, ERR_INVALID, "body is not a JSON object");
        return NULL;
    }
    return j;
}

int wire_request_info(enum wire_api api, const json_t *req, struct wire_request_info *info,
                      struct err *e)
{
    const json_t *v;

    memset(info, 0, sizeof(*info));
    info->model = "";
    if (!json_is_object(req))
        return err_set(e, ERR_INVALID, "request is not a JSON object");
    v = json_object_get(req, "model");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v))
            return err_set(e, ERR_INVALID, "'model' is not a string");
        info->model = json_string_value(v);
    }
    v = json_object_get(req, "stream");
    if (v && !json_is_null(v)) {
        if (!json_is_boolean(v))
            return err_set(e, ERR_INVALID, "'stream' is not a boolean");
        info->stream = json_is_true(v);
    }
    v = json_object_get(req, "stream_options");
    if (json_is_object(v))
        info->include_usage = json_is_true(json_object_get(v, "include_usage"));
    if (api == WIRE_API_OPENAI_RESPONSES) {
        v = json_object_get(req, "input");
        if (json_is_string(v))
            info->n_messages = 1;
        else if (json_is_array(v))
            info->n_messages = json_array_size(v);
        else if (v && !json_is_null(v))
            return err_set(e, ERR_INVALID, "'input' is neither a string nor an array");
    } else {
        v = json_object_get(req, "messages");
        if (json_is_array(v))
            info->n_messages = json_array_size(v);
        else if (v && !json_is_null(v))
            return err_set(e, ERR_INVALID, "'messages' is not an array");
    }
    v = json_object_get(req, "tools");
    if (json_is_array(v))
        info->n_tools = json_array_size(v);
    else if (v && !json_is_null(v))
        return err_set(e, ERR_INVALID, "'tools' is not an array");
    return 0;
}

/* A non-negative integer count at o[key]: 1 and *out set, or 0. */
static int get_count(const json_t *o, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = json_integer_value(v);
        return 1;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d >= 0 && d < 9.0e15 && d == (double)(int64_t)d) {
            *out = (int64_t)d;
            return 1;
        }
    }
    return 0;
}

int wire_usage_read(enum wire_api api, const json_t *usage, struct wire_usage *u)
{
    int64_t v;
    int got = 0;

    if (!json_is_object(usage))
        return 0;
    if (wire_api_provider(api) == WIRE_PROVIDER_ANTHROPIC) {
        if (get_count(usage, "input_tokens", &v))
            u->input_tokens = v, got = 1;
        if (get_count(usage, "cache_creation_input_tokens", &v))
            u->cache_write_tokens = v, got = 1;
        if (get_count(usage, "cache_read_input_tokens", &v))
            u->cache_read_tokens = v, got = 1;
        if (get_count(usage, "output_tokens", &v))
            u->output_tokens = v, got = 1;
        const json_t *cc = json_object_get(usage, "cache_creation");
        if (get_count(cc, "ephemeral_1h_input_tokens", &v))
            u->cache_write_1h_tokens = v, got = 1;
        const json_t *od = json_object_get(usage, "output_tokens_details");
        if (get_count(od, "thinking_tokens", &v))
            u->reasoning_tokens = v, got = 1;
    } else if (wire_api_provider(api) == WIRE_PROVIDER_OPENAI) {
        const char *in_key = "input_tokens", *out_key = "output_tokens";
        const char *in_det = "input_tokens_details", *out_det = "output_tokens_details";
        if (api == WIRE_API_OPENAI_CHAT ||
            (json_object_get(usage, "prompt_tokens") && !json_object_get(usage, "input_tokens"))) {
            in_key = "prompt_tokens";
            out_key = "completion_tokens";
            in_det = "prompt_tokens_details";
            out_det = "completion_tokens_details";
        }
        int64_t total = 0, cached = 0;
        int have_total = get_count(usage, in_key, &total);
        get_count(json_object_get(usage, in_det), "cached_tokens", &cached);
        if (have_total) {
            if (cached > total)
                cached = total;
            u->input_tokens = total - cached;
            u->cache_read_tokens = cached;
            u->cache_write_tokens = 0;
            u->cache_write_1h_tokens = 0;
            got = 1;
        }
        if (get_count(usage, out_key, &v))
            u->output_tokens = v, got = 1;
        if (get_count(json_object_get(usage, out_det), "reasoning_tokens", &v))
            u->reasoning_tokens = v, got = 1;
    }
    if (u->cache_write_1h_tokens > u->cache_write_tokens)
        u->cache_write_1h_tokens = u->cache_write_tokens;
    if (got)
        u->present = 1;
    return got;
}

json_t *wire_usage_to_json(const struct wire_usage *u)
{
    json_t *j =
        json_pack("{s:I,s:I,s:I,s:I}", "input_tokens", (json_int_t)u->input_tokens,
                  "cache_write_tokens", (json_int_t)u->cache_write_tokens, "cache_read_tokens",
                  (json_int_t)u->cache_read_tokens, "output_tokens", (json_int_t)u->output_tokens);
    if (u->cache_write_1h_tokens)
        json_object_set_new(j, "cache_write_1h_tokens",
                            json_integer((json_int_t)u->cache_write_1h_tokens));
    if (u->reasoning_tokens)
        json_object_set_new(j, "reasoning_tokens", json_integer((json_int_t)u->reasoning_tokens));
    return j;
}

void wire_result_init(struct wire_result *r)
{
    memset(r, 0, sizeof(*r));
    buf_init(&r->text, 0);
    r->last_sequence = -1;
}

void wire_result_release(struct wire_result *r)
{
    buf_release(&r->text);
    wire_result_init(r);
}

static void copy_str(char *dst, size_t size, const json_t *v)
{
    if (json_is_string(v))
        snprintf(dst, size, "%s", json_string_value(v));
}

static void add_text(struct wire_result *r, const char *s, size_t n)
{
    if (r->text_truncated)
        return;
    if (r->text.len + n > WIRE_TEXT_MAX) {
        n = WIRE_TEXT_MAX - r->text.len;
        r->text_truncated = 1;
    }
    buf_add(&r->text, s, n);
}

static void add_text_json(struct wire_result *r, const json_t *v)
{
    if (json_is_string(v))
        add_text(r, json_string_value(v), json_string_length(v));
}

/* Records an error object: Anthropic {"type":T,"message":M}, OpenAI {"message","type","code"}. */
static void set_error(struct wire_result *r, const json_t *err)
{
    r->error = 1;
    if (json_is_string(err)) {
        copy_str(r->error_message, sizeof(r->error_message), err);
        return;
    }
    const json_t *t = json_object_get(err, "type");
    if (!json_is_string(t) || json_string_value(t)[0] == '\0')
        t = json_object_get(err, "code");
    copy_str(r->error_type, sizeof(r->error_type), t);
    copy_str(r->error_message, sizeof(r->error_message), json_object_get(err, "message"));
}

static void read_anthropic_message(struct wire_result *r, const json_t *m)
{
    const json_t *content = json_object_get(m, "content");
    size_t i;
    const json_t *b;

    copy_str(r->id, sizeof(r->id), json_object_get(m, "id"));
    copy_str(r->model, sizeof(r->model), json_object_get(m, "model"));
    copy_str(r->stop_reason, sizeof(r->stop_reason), json_object_get(m, "stop_reason"));
    json_array_foreach(content, i, b)
    {
        const char *t = json_string_value(json_object_get(b, "type"));
        if (t == NULL)
            continue;
        if (strcmp(t, "text") == 0)
            add_text_json(r, json_object_get(b, "text"));
        else if (strcmp(t, "tool_use") == 0 || strcmp(t, "server_tool_use") == 0)
            r->tool_calls++;
    }
    wire_usage_read(WIRE_API_ANTHROPIC_MESSAGES, json_object_get(m, "usage"), &r->usage);
}

static void read_chat_completion(struct wire_result *r, const json_t *c)
{
    const json_t *choices = json_object_get(c, "choices");
    const json_t *ch0 = json_array_get(choices, 0);
    const json_t *msg = json_object_get(ch0, "message");
    size_t i;
    const json_t *p;

    copy_str(r->id, sizeof(r->id), json_object_get(c, "id"));
    copy_str(r->model, sizeof(r->model), json_object_get(c, "model"));
    copy_str(r->stop_reason, sizeof(r->stop_reason), json_object_get(ch0, "finish_reason"));
    const json_t *content = json_object_get(msg, "content");
    if (json_is_string(content))
        add_text_json(r, content);
    json_array_foreach(content, i, p) add_text_json(r, json_object_get(p, "text"));
    r->tool_calls += json_array_size(json_object_get(msg, "tool_calls"));
    wire_usage_read(WIRE_API_OPENAI_CHAT, json_object_get(c, "usage"), &r->usage);
}

static int is_call_item(const char *t)
{
    size_t n = strlen(t);
    return n >= 5 && strcmp(t + n - 5, "_call") == 0;
}

static void read_response(struct wire_result *r, const json_t *resp, int with_output)
{
    const json_t *output = json_object_get(resp, "output");
    size_t i, k;
    const json_t *item, *part;

    copy_str(r->id, sizeof(r->id), json_object_get(resp, "id"));
    copy_str(r->model, sizeof(r->model), json_object_get(resp, "model"));
    copy_str(r->stop_reason, sizeof(r->stop_reason), json_object_get(resp, "status"));
    if (with_output) {
        json_array_foreach(output, i, item)
        {
            const char *t = json_string_value(json_object_get(item, "type"));
            if (t == NULL)
                continue;
            if (strcmp(t, "message") == 0) {
                json_array_foreach(json_object_get(item, "content"), k, part)
                {
                    const char *pt = json_string_value(json_object_get(part, "type"));
                    if (pt && strcmp(pt, "output_text") == 0)
                        add_text_json(r, json_object_get(part, "text"));
                }
            } else if (is_call_item(t)) {
                r->tool_calls++;
            }
        }
    }
    const json_t *err = json_object_get(resp, "error");
    if (json_is_object(err))
        set_error(r, err);
    wire_usage_read(WIRE_API_OPENAI_RESPONSES, json_object_get(resp, "usage"), &r->usage);
}

int wire_result_from_json(enum wire_api api, const json_t *body, struct wire_result *r,
                          struct err *e)
{
    if (!json_is_object(body))
        return err_set(e, ERR_INVALID, "response is not a JSON object");
    r->complete = 1;
    const json_t *err = json_object_get(body, "error");
    if (err && !json_is_null(err) && api != WIRE_API_OPENAI_RESPONSES) {
        set_error(r, err);
        return 0;
    }
    switch (api) {
    case WIRE_API_ANTHROPIC_MESSAGES:
        read_anthropic_message(r, body);
        break;
    case WIRE_API_OPENAI_CHAT:
        read_chat_completion(r, body);
        break;
    case WIRE_API_OPENAI_RESPONSES:
        if (json_is_object(err) && !json_object_get(body, "object")) {
            set_error(r, err); /* a plain {"error": {...}} body */
            break;
        }
        read_response(r, body, 1);
        break;
    default:
        break; /* count_tokens and unknown APIs cost nothing */
    }
    return 0;
}

int wire_result_from_body(enum wire_api api, const char *body, size_t len, struct wire_result *r,
                          struct err *e)
{
    json_t *j = wire_json_parse(body, len, e);
    if (j == NULL)
        return e ? e->code : ERR_PARSE;
    int rc = wire_result_from_json(api, j, r, e);
    json_decref(j);
    return rc;
}

static const char *str_or(const json_t *v, const char *dflt)
{
    const char *s = json_string_value(v);
    return s ? s : dflt;
}

static void stream_anthropic(struct wire_result *r, const char *type, const json_t *d)
{
    if (strcmp(type, "message_start") == 0) {
        const json_t *m = json_object_get(d, "message");
        copy_str(r->id, sizeof(r->id), json_object_get(m, "id"));
        copy_str(r->model, sizeof(r->model), json_object_get(m, "model"));
        wire_usage_read(WIRE_API_ANTHROPIC_MESSAGES, json_object_get(m, "usage"), &r->usage);
    } else if (strcmp(type, "content_block_start") == 0) {
        const json_t *b = json_object_get(d, "content_block");
        const char *bt = str_or(json_object_get(b, "type"), "");
        if (strcmp(bt, "text") == 0)
            add_text_json(r, json_object_get(b, "text"));
        else if (strcmp(bt, "tool_use") == 0 || strcmp(bt, "server_tool_use") == 0)
            r->tool_calls++;
    } else if (strcmp(type, "content_block_delta") == 0) {
        const json_t *delta = json_object_get(d, "delta");
        if (strcmp(str_or(json_object_get(delta, "type"), ""), "text_delta") == 0)
            add_text_json(r, json_object_get(delta, "text"));
    } else if (strcmp(type, "message_delta") == 0) {
        copy_str(r->stop_reason, sizeof(r->stop_reason),
                 json_object_get(json_object_get(d, "delta"), "stop_reason"));
        wire_usage_read(WIRE_API_ANTHROPIC_MESSAGES, json_object_get(d, "usage"), &r->usage);
    } else if (strcmp(type, "message_stop") == 0) {
        r->complete = 1;
    } else if (strcmp(type, "error") == 0) {
        set_error(r, json_object_get(d, "error"));
    }
}

static void stream_chat(struct wire_result *r, const json_t *d)
{
    const json_t *err = json_object_get(d, "error");
    size_t i, k;
    const json_t *ch, *tc;

    if (err && !json_is_null(err)) {
        set_error(r, err);
        return;
    }
    copy_str(r->id, sizeof(r->id), json_object_get(d, "id"));
    copy_str(r->model, sizeof(r->model), json_object_get(d, "model"));
    json_array_foreach(json_object_get(d, "choices"), i, ch)
    {
        const json_t *delta = json_object_get(ch, "delta");
        add_text_json(r, json_object_get(delta, "content"));
        json_array_foreach(json_object_get(delta, "tool_calls"), k, tc)
        {
            if (json_is_string(json_object_get(tc, "id")))
                r->tool_calls++;
        }
        copy_str(r->stop_reason, sizeof(r->stop_reason), json_object_get(ch, "finish_reason"));
    }
    wire_usage_read(WIRE_API_OPENAI_CHAT, json_object_get(d, "usage"), &r->usage);
}

static void stream_responses(struct wire_result *r, const char *type, const json_t *d)
{
    int64_t seq;
    if (get_count(d, "sequence_number", &seq) && seq > r->last_sequence)
        r->last_sequence = seq;
    if (strcmp(type, "response.created") == 0 || strcmp(type, "response.in_progress") == 0 ||
        strcmp(type, "response.queued") == 0) {
        read_response(r, json_object_get(d, "response"), 0);
    } else if (strcmp(type, "response.output_text.delta") == 0) {
        add_text_json(r, json_object_get(d, "delta"));
    } else if (strcmp(type, "response.output_item.added") == 0) {
        const char *it = str_or(json_object_get(json_object_get(d, "item"), "type"), "");
        if (is_call_item(it))
            r->tool_calls++;
    } else if (strcmp(type, "response.completed") == 0 ||
               strcmp(type, "response.incomplete") == 0 || strcmp(type, "response.failed") == 0 ||
               strcmp(type, "response.done") == 0) {
        read_response(r, json_object_get(d, "response"), 0);
        r->complete = 1;
        if (strcmp(type, "response.failed") == 0)
            r->error = 1;
    } else if (strcmp(type, "error") == 0) {
        const json_t *err = json_object_get(d, "error");
        set_error(r, json_is_object(err) ? err : d);
        if (!json_is_object(err) && r->error_type[0] == '\0')
            copy_str(r->error_type, sizeof(r->error_type), json_object_get(d, "code"));
    }
}

int wire_result_stream_event(enum wire_api api, struct wire_result *r, const struct sse_event *ev,
                             struct err *e)
{
    json_error_t je;

    if (!ev->has_data)
        return 0;
    r->events++;
    if (strcmp(ev->data, "[DONE]") == 0) {
        r->complete = 1;
        return 0;
    }
    json_t *d = json_loadb(ev->data, ev->data_len, 0, &je);
    if (d == NULL)
        return err_set(e, ERR_PARSE, "stream event %zu: invalid JSON: %s", r->events, JE_TEXT(je));
    const char *type = str_or(json_object_get(d, "type"), ev->event);
    if (ev->event_len > 0 && strcmp(ev->event, "error") == 0)
        type = "error";
    switch (api) {
    case WIRE_API_ANTHROPIC_MESSAGES:
        stream_anthropic(r, type, d);
        break;
    case WIRE_API_OPENAI_CHAT:
        stream_chat(r, d);
        break;
    case WIRE_API_OPENAI_RESPONSES:
        stream_responses(r, type, d);
        break;
    default:
        break;
    }
    json_decref(d);
    return 0;
}

/* Error kinds: default status, Anthropic type, OpenAI type and code. */
static const struct {
    int status;
    const char *a_type;
    const char *o_type;
    const char *o_code;
} error_rows[] = {
    [WIRE_ERR_INVALID_REQUEST] = {400, "invalid_request_error", "invalid_request_error", NULL},
    [WIRE_ERR_AUTHENTICATION] = {401, "authentication_error", "invalid_request_error",
                                 "invalid_api_key"},
    [WIRE_ERR_PERMISSION] = {403, "permission_error", "permission_error", NULL},
    [WIRE_ERR_NOT_FOUND] = {404, "not_found_error", "invalid_request_error", "not_found"},
    [WIRE_ERR_TOO_LARGE] = {413, "request_too_large", "invalid_request_error", "request_too_large"},
    [WIRE_ERR_RATE_LIMIT] = {429, "rate_limit_error", "requests", "rate_limit_exceeded"},
    [WIRE_ERR_API] = {500, "api_error", "server_error", "server_error"},
    [WIRE_ERR_OVERLOADED] = {529, "overloaded_error", "server_error", "server_is_overloaded"},
};

static unsigned kind_index(enum wire_error kind)
{
    unsigned k = (unsigned)kind;
    return k < sizeof(error_rows) / sizeof(error_rows[0]) ? k : WIRE_ERR_API;
}

int wire_error_status(enum wire_provider p, enum wire_error kind)
{
    unsigned k = kind_index(kind);
    if (k == WIRE_ERR_OVERLOADED && p == WIRE_PROVIDER_OPENAI)
        return 503;
    return error_rows[k].status;
}

enum wire_error wire_error_for_status(int status)
{
    switch (status) {
    case 400:
        return WIRE_ERR_INVALID_REQUEST;
    case 401:
        return WIRE_ERR_AUTHENTICATION;
    case 403:
        return WIRE_ERR_PERMISSION;
    case 404:
        return WIRE_ERR_NOT_FOUND;
    case 413:
        return WIRE_ERR_TOO_LARGE;
    case 429:
        return WIRE_ERR_RATE_LIMIT;
    case 503:
    case 529:
        return WIRE_ERR_OVERLOADED;
    default:
        return status >= 500 ? WIRE_ERR_API : WIRE_ERR_INVALID_REQUEST;
    }
}

const char *wire_error_type(enum wire_provider p, enum wire_error kind)
{
    unsigned k = kind_index(kind);
    return p == WIRE_PROVIDER_OPENAI ? error_rows[k].o_type : error_rows[k].a_type;
}

static json_t *openai_error_object(enum wire_error kind, const char *message)
{
    unsigned k = kind_index(kind);
    json_t *code = error_rows[k].o_code ? json_string(error_rows[k].o_code) : json_null();
    return json_pack("{s:s,s:s,s:n,s:o}", "message", message ? message : "", "type",
                     error_rows[k].o_type, "param", "code", code);
}

json_t *wire_error_json(enum wire_provider p, enum wire_error kind, const char *message)
{
    unsigned k = kind_index(kind);
    if (message == NULL)
        message = "";
    if (p == WIRE_PROVIDER_ANTHROPIC)
        return json_pack("{s:s,s:{s:s,s:s}}", "type", "error", "error", "type",
                         error_rows[k].a_type, "message", message);
    if (p == WIRE_PROVIDER_OPENAI)
        return json_pack("{s:o}", "error", openai_error_object(kind, message));
    return NULL;
}

static int add_json(struct buf *out, const json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    if (s == NULL)
        return ERR_INVALID;
    int rc = buf_adds(out, s);
    free(s);
    return rc;
}

int wire_error_body(struct buf *out, enum wire_provider p, enum wire_error kind,
                    const char *message)
{
    json_t *j = wire_error_json(p, kind, message);
    if (j == NULL)
        return ERR_INVALID;
    int rc = add_json(out, j);
    json_decref(j);
    return rc;
}

int wire_stream_error(struct buf *out, enum wire_api api, enum wire_error kind, const char *message,
                      int64_t sequence_number)
{
    size_t mark = out->len;
    unsigned k = kind_index(kind);
    json_t *j = NULL;
    int rc;

    if (message == NULL)
        message = "";
    switch (api) {
    case WIRE_API_ANTHROPIC_MESSAGES:
        j = wire_error_json(WIRE_PROVIDER_ANTHROPIC, kind, message);
        rc = sse_write_json(out, "error", j);
        break;
    case WIRE_API_OPENAI_CHAT:
        j = wire_error_json(WIRE_PROVIDER_OPENAI, kind, message);
        rc = sse_write_json(out, NULL, j);
        break;
    case WIRE_API_OPENAI_RESPONSES: {
        const char *code = error_rows[k].o_code ? error_rows[k].o_code : error_rows[k].o_type;
        j = json_pack("{s:s,s:s,s:s,s:n,s:I}", "type", "error", "code", code, "message", message,
                      "param", "sequence_number", (json_int_t)sequence_number);
        rc = sse_write_json(out, "error", j);
        json_decref(j);
        j = json_pack("{s:s,s:{s:s,s:s,s:s,s:{s:s,s:s},s:[],s:n},s:I}", "type", "response.failed",
                      "response", "object", "response", "status", "failed", "id", "resp_failed",
                      "error", "code", code, "message", message, "output", "usage",
                      "sequence_number", (json_int_t)sequence_number + 1);
        if (rc == 0)
            rc = sse_write_json(out, "response.failed", j);
        break;
    }
    default:
        return ERR_INVALID;
    }
    json_decref(j);
    if (rc < 0)
        buf_truncate(out, mark);
    return rc;
}
