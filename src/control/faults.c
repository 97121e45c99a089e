/*
 * faults: the llm.* transforms (see faults.h for what each does to which API).
 *
 * context_trim works in three passes over the conversation array (messages[] or input[]):
 * drop_system removes system entries (and the top-level system prompt / instructions); the
 * drop_oldest pass removes the oldest non-system entries but never the last; the repair pass
 * makes tool pairing valid again (drop leading assistant turns for Anthropic, then turn every
 * tool result whose call is gone into plain user text). Everything is checked before anything
 * is changed, so a request is either trimmed or left untouched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/faults.h"
#include "util/banned.h"

#define ORPHAN_PREFIX "[result of an earlier tool call] "

static int is_system_role(const json_t *entry)
{
    const char *role = json_string_value(json_object_get(entry, "role"));
    return role && (strcmp(role, "system") == 0 || strcmp(role, "developer") == 0);
}

static int has_role(const json_t *entry, const char *role)
{
    const char *r = json_string_value(json_object_get(entry, "role"));
    return r && strcmp(r, role) == 0;
}

/* Text of a tool result's content: a string, or the "text" of each part, joined by "\n". */
static void content_text(const json_t *content, struct buf *out)
{
    size_t i, start = out->len;
    const json_t *part;

    if (json_is_string(content)) {
        buf_add(out, json_string_value(content), json_string_length(content));
        return;
    }
    json_array_foreach(content, i, part)
    {
        const json_t *t = json_object_get(part, "text");
        if (!json_is_string(t))
            continue;
        if (out->len > start)
            buf_addc(out, '\n');
        buf_add(out, json_string_value(t), json_string_length(t));
    }
}

static json_t *orphan_text(const json_t *content)
{
    struct buf b = BUF_INIT;
    buf_adds(&b, ORPHAN_PREFIX);
    content_text(content, &b);
    json_t *s = json_stringn(b.data, b.len);
    buf_release(&b);
    return s ? s : json_string(ORPHAN_PREFIX);
}

/* A set of ids as a JSON object used as a set (keys only). */
static void id_add(json_t *set, const json_t *id)
{
    if (json_is_string(id))
        json_object_set_new(set, json_string_value(id), json_true());
}

static int id_has(const json_t *set, const json_t *id)
{
    return json_is_string(id) && json_object_get(set, json_string_value(id)) != NULL;
}

static int is_suffix(const char *s, const char *suffix)
{
    size_t n = s ? strlen(s) : 0, k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void repair_anthropic(json_t *msgs, struct faults_trim *t)
{
    size_t i, k;
    json_t *m, *b;
    json_t *ids = json_object();

    /* A conversation starts with a user turn: drop leading assistant messages (not the last). */
    for (;;) {
        size_t first = (size_t)-1;
        json_array_foreach(msgs, i, m)
        {
            if (!is_system_role(m)) {
                first = i;
                break;
            }
        }
        if (first == (size_t)-1 || first + 1 >= json_array_size(msgs) ||
            !has_role(json_array_get(msgs, first), "assistant"))
            break;
        json_array_remove(msgs, first);
        t->dropped++;
    }
    json_array_foreach(msgs, i, m)
    {
        if (!has_role(m, "assistant"))
            continue;
        json_array_foreach(json_object_get(m, "content"), k, b)
        {
            const char *bt = json_string_value(json_object_get(b, "type"));
            if (bt && (strcmp(bt, "tool_use") == 0 || strcmp(bt, "server_tool_use") == 0))
                id_add(ids, json_object_get(b, "id"));
        }
    }
    json_array_foreach(msgs, i, m)
    {
        json_t *content = json_object_get(m, "content");
        if (!has_role(m, "user") || !json_is_array(content))
            continue;
        json_array_foreach(content, k, b)
        {
            const char *bt = json_string_value(json_object_get(b, "type"));
            if (bt == NULL || strcmp(bt, "tool_result") != 0 ||
                id_has(ids, json_object_get(b, "tool_use_id")))
                continue;
            json_t *text = json_pack("{s:s,s:o}", "type", "text", "text",
                                     orphan_text(json_object_get(b, "content")));
            json_array_set_new(content, k, text);
            t->converted++;
        }
    }
    json_decref(ids);
}

static void repair_chat(json_t *msgs, struct faults_trim *t)
{
    size_t i, k;
    json_t *m, *tc;
    json_t *ids = json_object();

    json_array_foreach(msgs, i, m)
    {
        if (!has_role(m, "assistant"))
            continue;
        json_array_foreach(json_object_get(m, "tool_calls"), k, tc)
            id_add(ids, json_object_get(tc, "id"));
    }
    json_array_foreach(msgs, i, m)
    {
        if (!has_role(m, "tool") || id_has(ids, json_object_get(m, "tool_call_id")))
            continue;
        json_t *user = json_pack("{s:s,s:o}", "role", "user", "content",
                                 orphan_text(json_object_get(m, "content")));
        json_array_set_new(msgs, i, user);
        t->converted++;
    }
    json_decref(ids);
}

static void repair_responses(json_t *items, struct faults_trim *t)
{
    size_t i;
    json_t *it;
    json_t *ids = json_object();

    json_array_foreach(items, i, it)
    {
        if (is_suffix(json_string_value(json_object_get(it, "type")), "_call"))
            id_add(ids, json_object_get(it, "call_id"));
    }
    json_array_foreach(items, i, it)
    {
        if (!is_suffix(json_string_value(json_object_get(it, "type")), "_call_output") ||
            id_has(ids, json_object_get(it, "call_id")))
            continue;
        json_t *user =
            json_pack("{s:s,s:s,s:[{s:s,s:o}]}", "type", "message", "role", "user", "content",
                      "type", "input_text", "text", orphan_text(json_object_get(it, "output")));
        json_array_set_new(items, i, user);
        t->converted++;
    }
    json_decref(ids);
}

int faults_context_trim(enum wire_api api, json_t *req, size_t drop_oldest, int drop_system,
                        struct faults_trim *out, struct err *e)
{
    struct faults_trim t = {0, 0, 0};
    const char *key;
    json_t *arr;

    if (out)
        memset(out, 0, sizeof(*out));
    if (api != WIRE_API_ANTHROPIC_MESSAGES && api != WIRE_API_OPENAI_CHAT &&
        api != WIRE_API_OPENAI_RESPONSES)
        return err_set(e, ERR_INVALID, "context_trim: not a conversation API (%s)",
                       wire_api_name(api));
    if (!json_is_object(req))
        return err_set(e, ERR_INVALID, "context_trim: request is not a JSON object");
    key = api == WIRE_API_OPENAI_RESPONSES ? "input" : "messages";
    arr = json_object_get(req, key);
    if (arr && !json_is_array(arr) &&
        !(api == WIRE_API_OPENAI_RESPONSES && (json_is_string(arr) || json_is_null(arr))))
        return err_set(e, ERR_INVALID, "context_trim: '%s' is not an array", key);
    if (!json_is_array(arr))
        arr = NULL;

    if (drop_system) {
        const char *top = api == WIRE_API_ANTHROPIC_MESSAGES ? "system"
                          : api == WIRE_API_OPENAI_RESPONSES ? "instructions"
                                                             : NULL;
        json_t *v = top ? json_object_get(req, top) : NULL;
        if (v && !json_is_null(v)) {
            json_object_del(req, top);
            t.dropped_system = 1;
        }
        for (size_t i = 0; arr && i < json_array_size(arr);) {
            if (is_system_role(json_array_get(arr, i))) {
                json_array_remove(arr, i);
                t.dropped_system = 1;
            } else {
                i++;
            }
        }
    }
    if (arr && drop_oldest > 0) {
        size_t others = 0;
        for (size_t i = 0; i < json_array_size(arr); i++)
            others += !is_system_role(json_array_get(arr, i));
        size_t n = others > 0 && drop_oldest > others - 1 ? others - 1 : drop_oldest;
        for (size_t i = 0; n > 0 && i < json_array_size(arr);) {
            if (is_system_role(json_array_get(arr, i))) {
                i++;
                continue;
            }
            json_array_remove(arr, i);
            t.dropped++;
            n--;
        }
        if (t.dropped > 0) {
            if (api == WIRE_API_ANTHROPIC_MESSAGES)
                repair_anthropic(arr, &t);
            else if (api == WIRE_API_OPENAI_CHAT)
                repair_chat(arr, &t);
            else
                repair_responses(arr, &t);
        }
    }
    if (out)
        *out = t;
    return 0;
}

int faults_model_degrade(json_t *req, const char *to_model, char *from, size_t from_size,
                         struct err *e)
{
    if (!json_is_object(req))
        return err_set(e, ERR_INVALID, "model_degrade: request is not a JSON object");
    if (to_model == NULL || to_model[0] == '\0')
        return err_set(e, ERR_INVALID, "model_degrade: to_model is empty");
    if (from && from_size > 0) {
        const char *old = json_string_value(json_object_get(req, "model"));
        snprintf(from, from_size, "%s", old ? old : "");
    }
    json_object_set_new(req, "model", json_string(to_model));
    return 0;
}

void faults_error_init(struct faults_error *fe)
{
    fe->status = 0;
    fe->retry_after_s = -1;
    buf_init(&fe->body, 0);
}

void faults_error_release(struct faults_error *fe)
{
    buf_release(&fe->body);
    faults_error_init(fe);
}

int faults_message(struct buf *out, const char *kind, const char *detail, const char *canary)
{
    size_t mark = out->len;
    int rc = buf_adds(out, "faultline injected");
    if (rc == 0 && kind && kind[0])
        rc = buf_addf(out, " %s", kind);
    if (rc == 0 && detail && detail[0])
        rc = buf_addf(out, ": %s", detail);
    if (rc == 0 && canary && canary[0])
        rc = buf_addf(out, " [%s]", canary);
    if (rc < 0)
        buf_truncate(out, mark);
    return rc;
}

static int error_response(enum wire_api api, int status, const char *kind, const char *detail,
                          const char *canary, struct faults_error *out)
{
    enum wire_provider p = wire_api_provider(api);
    struct buf msg = BUF_INIT;
    int rc;

    buf_reset(&out->body);
    out->status = status;
    out->retry_after_s = -1;
    if (p == WIRE_PROVIDER_NONE)
        return ERR_INVALID;
    rc = faults_message(&msg, kind, detail, canary);
    if (rc == 0)
        rc = wire_error_body(&out->body, p, wire_error_for_status(status), msg.data);
    buf_release(&msg);
    return rc;
}

int faults_rate_limit(enum wire_api api, const char *canary, int retry_after_s,
                      struct faults_error *out)
{
    char detail[96];
    if (retry_after_s < 0)
        retry_after_s = 0;
    if (retry_after_s > 86400)
        retry_after_s = 86400;
    snprintf(detail, sizeof(detail), "rate limit exceeded, retry after %d s", retry_after_s);
    int rc = error_response(api, 429, "llm.rate_limit", detail, canary, out);
    if (rc == 0)
        out->retry_after_s = retry_after_s;
    return rc;
}

static const char *status_text(int status)
{
    switch (status) {
    case 500:
        return "internal server error";
    case 502:
        return "bad gateway";
    case 503:
        return "service unavailable";
    case 504:
        return "gateway timeout";
    case 529:
        return "overloaded";
    default:
        return "server error";
    }
}

int faults_upstream_5xx(enum wire_api api, int status, const char *canary, struct faults_error *out)
{
    char detail[96];
    if (status < 500 || status > 599) {
        buf_reset(&out->body);
        return ERR_INVALID;
    }
    snprintf(detail, sizeof(detail), "the model API failed with HTTP %d (%s)", status,
             status_text(status));
    return error_response(api, status, "llm.upstream_5xx", detail, canary, out);
}

int faults_stream_cut(struct buf *out, enum wire_api api, int status, const char *canary,
                      int64_t sequence_number)
{
    char detail[112];
    struct buf msg = BUF_INIT;
    int rc;

    if (status < 500 || status > 599)
        return ERR_INVALID;
    snprintf(detail, sizeof(detail), "the model stream was cut: HTTP %d (%s)", status,
             status_text(status));
    rc = faults_message(&msg, "llm.upstream_5xx", detail, canary);
    if (rc == 0)
        rc = wire_stream_error(out, api, wire_error_for_status(status), msg.data, sequence_number);
    buf_release(&msg);
    return rc;
}
