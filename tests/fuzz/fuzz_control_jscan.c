/*
 * fuzz_control_jscan: differential target for the proxy's request scan (control/jscan.h). The
 * input is a request body; for each wire API, when jscan_request answers (returns 0, i.e. is
 * sure), jansson must accept the same body as the proxy's slow path does (wire_json_parse:
 * json_loadb with no flags, an object), wire_request_info must succeed, and the model, stream,
 * include_usage, message and tool counts jscan reported must equal both wire_request_info's and
 * what this file reads from the jansson tree itself. The reported model must be a slice of the
 * body. When jscan falls back nothing is asserted: the slow path is authoritative. Any
 * disagreement aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "control/jscan.h"
#include "codec/wire.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

/* The facts read straight from the tree, by the rules jscan.h states. */
static void from_tree(enum wire_api api, json_t *j, struct jscan_info *t)
{
    json_t *v;

    memset(t, 0, sizeof(*t));
    v = json_object_get(j, "model");
    if (json_is_string(v)) {
        t->model = json_string_value(v);
        t->model_len = json_string_length(v);
    } else {
        CHECK(v == NULL || json_is_null(v));
    }
    v = json_object_get(j, "stream");
    CHECK(v == NULL || json_is_null(v) || json_is_boolean(v));
    t->stream = json_is_true(v);
    v = json_object_get(j, "stream_options");
    t->include_usage = json_is_object(v) && json_is_true(json_object_get(v, "include_usage"));
    v = json_object_get(j, api == WIRE_API_OPENAI_RESPONSES ? "input" : "messages");
    if (json_is_array(v))
        t->n_messages = json_array_size(v);
    else if (api == WIRE_API_OPENAI_RESPONSES && json_is_string(v))
        t->n_messages = 1;
    else
        CHECK(v == NULL || json_is_null(v));
    v = json_object_get(j, "tools");
    if (json_is_array(v))
        t->n_tools = json_array_size(v);
    else
        CHECK(v == NULL || json_is_null(v));
}

static void check_api(enum wire_api api, const char *body, size_t len)
{
    struct jscan_info ji, t;
    struct wire_request_info wi;
    struct err e = {0};
    json_error_t je;
    json_t *j;

    if (jscan_request(api, body, len, &ji) != 0)
        return;
    j = json_loadb(body, len, 0, &je);
    CHECK(j != NULL);         /* jscan accepted what jansson refuses */
    CHECK(json_is_object(j)); /* or what is not an object */
    CHECK(wire_request_info(api, j, &wi, &e) == 0);
    from_tree(api, j, &t);

    if (ji.model != NULL) {
        CHECK(ji.model >= body && ji.model + ji.model_len <= body + len);
        CHECK(t.model != NULL && t.model_len == ji.model_len);
        CHECK(memcmp(t.model, ji.model, ji.model_len) == 0);
    } else {
        CHECK(t.model == NULL && ji.model_len == 0);
    }
    CHECK(strlen(wi.model) == ji.model_len);
    CHECK(memcmp(wi.model, t.model ? t.model : "", ji.model_len) == 0);
    CHECK(ji.stream == t.stream && ji.stream == wi.stream);
    CHECK(ji.include_usage == t.include_usage && ji.include_usage == wi.include_usage);
    CHECK(ji.n_messages == t.n_messages && ji.n_messages == wi.n_messages);
    CHECK(ji.n_tools == t.n_tools && ji.n_tools == wi.n_tools);
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum wire_api apis[] = {WIRE_API_ANTHROPIC_MESSAGES, WIRE_API_OPENAI_CHAT,
                                         WIRE_API_OPENAI_RESPONSES};

    for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++)
        check_api(apis[i], (const char *)data, size);
    return 0;
}
