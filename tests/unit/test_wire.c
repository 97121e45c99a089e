/* Unit tests for src/codec/wire: paths, request info, usage, results from bodies and streams,
 * error bodies and mid-stream errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/sse.h"
#include "codec/wire.h"
#include "util/banned.h"

static void test_api_from_path(void **state)
{
    assert_int_equal(wire_api_from_path("/v1/messages"), WIRE_API_ANTHROPIC_MESSAGES);
    assert_int_equal(wire_api_from_path("/v1/messages?beta=true"), WIRE_API_ANTHROPIC_MESSAGES);
    assert_int_equal(wire_api_from_path("/v1/messages/count_tokens?beta=true"),
                     WIRE_API_ANTHROPIC_COUNT_TOKENS);
    assert_int_equal(wire_api_from_path("/v1/chat/completions"), WIRE_API_OPENAI_CHAT);
    assert_int_equal(wire_api_from_path("/chat/completions/"), WIRE_API_OPENAI_CHAT);
    assert_int_equal(wire_api_from_path("/v1/responses"), WIRE_API_OPENAI_RESPONSES);
    assert_int_equal(wire_api_from_path("/responses#x"), WIRE_API_OPENAI_RESPONSES);
    assert_int_equal(wire_api_from_path("/v1/models"), WIRE_API_UNKNOWN);
    assert_int_equal(wire_api_from_path("/v2/messages"), WIRE_API_UNKNOWN);
    assert_int_equal(wire_api_from_path("/v1/messagesX"), WIRE_API_UNKNOWN);
    assert_int_equal(wire_api_from_path(""), WIRE_API_UNKNOWN);
    assert_int_equal(wire_api_from_path(NULL), WIRE_API_UNKNOWN);
    assert_int_equal(wire_api_provider(WIRE_API_ANTHROPIC_COUNT_TOKENS), WIRE_PROVIDER_ANTHROPIC);
    assert_int_equal(wire_api_provider(WIRE_API_OPENAI_RESPONSES), WIRE_PROVIDER_OPENAI);
    assert_int_equal(wire_api_provider(WIRE_API_UNKNOWN), WIRE_PROVIDER_NONE);
    assert_string_equal(wire_api_name(WIRE_API_OPENAI_CHAT), "openai.chat");
    assert_string_equal(wire_provider_name(WIRE_PROVIDER_ANTHROPIC), "anthropic");
}

static void test_json_parse_errors(void **state)
{
    struct err e = {0};
    assert_null(wire_json_parse("{\"a\":", 5, &e));
    assert_int_equal(e.code, ERR_PARSE);
    assert_non_null(strstr(e.msg, "line 1"));
    err_clear(&e);
    assert_null(wire_json_parse("[1]", 3, &e));
    assert_int_equal(e.code, ERR_INVALID);
    err_clear(&e);
    assert_null(wire_json_parse("{}", WIRE_BODY_MAX + 1, &e));
    assert_int_equal(e.code, ERR_LIMIT);
    json_t *j = wire_json_parse("{\"model\":\"x\"}", 13, NULL);
    assert_non_null(j);
    json_decref(j);
}

static void test_request_info(void **state)
{
    struct wire_request_info info;
    struct err e = {0};
    json_t *req = json_pack("{s:s,s:b,s:[{s:s},{s:s}],s:[{},{},{}],s:{s:b}}", "model",
                            "claude-opus-4-8", "stream", 1, "messages", "role", "user", "role",
                            "assistant", "tools", "stream_options", "include_usage", 1);
    assert_int_equal(wire_request_info(WIRE_API_ANTHROPIC_MESSAGES, req, &info, &e), 0);
    assert_string_equal(info.model, "claude-opus-4-8");
    assert_true(info.stream);
    assert_true(info.include_usage);
    assert_int_equal(info.n_messages, 2);
    assert_int_equal(info.n_tools, 3);
    json_decref(req);

    req = json_pack("{s:s,s:s}", "model", "gpt-5.5", "input", "hi");
    assert_int_equal(wire_request_info(WIRE_API_OPENAI_RESPONSES, req, &info, &e), 0);
    assert_int_equal(info.n_messages, 1);
    assert_false(info.stream);
    json_decref(req);

    req = json_pack("{s:i}", "model", 5);
    assert_int_equal(wire_request_info(WIRE_API_OPENAI_CHAT, req, &info, &e), ERR_INVALID);
    assert_non_null(strstr(e.msg, "model"));
    json_decref(req);
    err_clear(&e);
    req = json_pack("{s:s}", "stream", "yes");
    assert_int_equal(wire_request_info(WIRE_API_OPENAI_CHAT, req, &info, &e), ERR_INVALID);
    json_decref(req);
    req = json_pack("{s:{}}", "messages");
    assert_int_equal(wire_request_info(WIRE_API_OPENAI_CHAT, req, &info, NULL), ERR_INVALID);
    json_decref(req);
    req = json_pack("{s:i}", "input", 3);
    assert_int_equal(wire_request_info(WIRE_API_OPENAI_RESPONSES, req, &info, NULL),
                     ERR_INVALID);
    json_decref(req);
}

static void test_usage_normalised(void **state)
{
    struct wire_usage u;
    json_t *a = json_pack("{s:i,s:i,s:i,s:i,s:{s:i,s:i}}", "input_tokens", 12,
                          "cache_creation_input_tokens", 100, "cache_read_input_tokens", 50,
                          "output_tokens", 30, "cache_creation", "ephemeral_5m_input_tokens",
                          60, "ephemeral_1h_input_tokens", 40);
    memset(&u, 0, sizeof(u));
    assert_int_equal(wire_usage_read(WIRE_API_ANTHROPIC_MESSAGES, a, &u), 1);
    assert_int_equal(u.input_tokens, 12);
    assert_int_equal(u.cache_write_tokens, 100);
    assert_int_equal(u.cache_write_1h_tokens, 40);
    assert_int_equal(u.cache_read_tokens, 50);
    assert_int_equal(u.output_tokens, 30);
    assert_true(u.present);
    json_decref(a);

    /* OpenAI prompt_tokens include the cached ones */
    json_t *c = json_pack("{s:i,s:i,s:i,s:{s:i},s:{s:i}}", "prompt_tokens", 20,
                          "completion_tokens", 9, "total_tokens", 29, "prompt_tokens_details",
                          "cached_tokens", 8, "completion_tokens_details", "reasoning_tokens", 4);
    memset(&u, 0, sizeof(u));
    assert_int_equal(wire_usage_read(WIRE_API_OPENAI_CHAT, c, &u), 1);
    assert_int_equal(u.input_tokens, 12);
    assert_int_equal(u.cache_read_tokens, 8);
    assert_int_equal(u.output_tokens, 9);
    assert_int_equal(u.reasoning_tokens, 4);
    json_decref(c);

    json_t *r = json_pack("{s:i,s:{s:i},s:i}", "input_tokens", 20, "input_tokens_details",
                          "cached_tokens", 25, "output_tokens", 9);
    memset(&u, 0, sizeof(u));
    assert_int_equal(wire_usage_read(WIRE_API_OPENAI_RESPONSES, r, &u), 1);
    assert_int_equal(u.input_tokens, 0); /* cached clamped to the total */
    assert_int_equal(u.cache_read_tokens, 20);
    json_decref(r);

    json_t *bad = json_pack("{s:i,s:s,s:f}", "input_tokens", -3, "output_tokens", "7",
                            "cache_read_input_tokens", 1.5);
    memset(&u, 0, sizeof(u));
    assert_int_equal(wire_usage_read(WIRE_API_ANTHROPIC_MESSAGES, bad, &u), 0);
    assert_false(u.present);
    assert_int_equal(wire_usage_read(WIRE_API_ANTHROPIC_MESSAGES, NULL, &u), 0);
    json_decref(bad);

    u.input_tokens = 1;
    u.cache_write_tokens = 2;
    u.cache_read_tokens = 3;
    u.output_tokens = 4;
    u.cache_write_1h_tokens = 0;
    u.reasoning_tokens = 0;
    json_t *j = wire_usage_to_json(&u);
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"cache_read_tokens\":3,\"cache_write_tokens\":2,"
                           "\"input_tokens\":1,\"output_tokens\":4}");
    free(s);
    json_decref(j);
}

static void test_result_bodies(void **state)
{
    struct wire_result r;
    struct err e = {0};
    const char *anth = "{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"model\":"
                       "\"claude-sonnet-5\",\"content\":[{\"type\":\"text\",\"text\":\"Hel\"},"
                       "{\"type\":\"text\",\"text\":\"lo\"},{\"type\":\"tool_use\",\"id\":"
                       "\"toolu_01\",\"name\":\"f\",\"input\":{}}],\"stop_reason\":\"tool_use\","
                       "\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":0,"
                       "\"cache_read_input_tokens\":0,\"output_tokens\":30}}";
    wire_result_init(&r);
    assert_int_equal(wire_result_from_body(WIRE_API_ANTHROPIC_MESSAGES, anth, strlen(anth), &r,
                                           &e),
                     0);
    assert_string_equal(r.model, "claude-sonnet-5");
    assert_string_equal(r.id, "msg_01");
    assert_string_equal(r.stop_reason, "tool_use");
    assert_string_equal(r.text.data, "Hello");
    assert_int_equal(r.tool_calls, 1);
    assert_int_equal(r.usage.input_tokens, 12);
    assert_int_equal(r.usage.output_tokens, 30);
    assert_true(r.complete);
    assert_false(r.error);
    wire_result_release(&r);

    const char *chat = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"model\":\"gpt-5.4\","
                       "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
                       "null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","
                       "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},\"finish_reason\":"
                       "\"tool_calls\"}],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":9,"
                       "\"total_tokens\":29,\"prompt_tokens_details\":{\"cached_tokens\":5}}}";
    wire_result_init(&r);
    assert_int_equal(wire_result_from_body(WIRE_API_OPENAI_CHAT, chat, strlen(chat), &r, &e), 0);
    assert_string_equal(r.stop_reason, "tool_calls");
    assert_int_equal(r.tool_calls, 1);
    assert_int_equal(r.usage.input_tokens, 15);
    assert_int_equal(r.usage.cache_read_tokens, 5);
    wire_result_release(&r);

    const char *resp = "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\","
                       "\"model\":\"gpt-5.5\",\"output\":[{\"type\":\"message\",\"id\":\"m\","
                       "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":"
                       "\"Hi\",\"annotations\":[]}]},{\"type\":\"function_call\",\"id\":\"fc\","
                       "\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"{}\"}],\"error\":null,"
                       "\"usage\":{\"input_tokens\":20,\"input_tokens_details\":{\"cached_tokens\":"
                       "0},\"output_tokens\":9,\"total_tokens\":29}}";
    wire_result_init(&r);
    assert_int_equal(
        wire_result_from_body(WIRE_API_OPENAI_RESPONSES, resp, strlen(resp), &r, &e), 0);
    assert_string_equal(r.text.data, "Hi");
    assert_string_equal(r.stop_reason, "completed");
    assert_int_equal(r.tool_calls, 1);
    assert_int_equal(r.usage.input_tokens, 20);
    assert_false(r.error);
    wire_result_release(&r);

    const char *aerr = "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":"
                       "\"slow down\"}}";
    wire_result_init(&r);
    assert_int_equal(
        wire_result_from_body(WIRE_API_ANTHROPIC_MESSAGES, aerr, strlen(aerr), &r, &e), 0);
    assert_true(r.error);
    assert_string_equal(r.error_type, "rate_limit_error");
    assert_string_equal(r.error_message, "slow down");
    assert_false(r.usage.present);
    wire_result_release(&r);

    const char *oerr = "{\"error\":{\"message\":\"m\",\"type\":\"requests\",\"param\":null,"
                       "\"code\":\"rate_limit_exceeded\"}}";
    wire_result_init(&r);
    assert_int_equal(wire_result_from_body(WIRE_API_OPENAI_RESPONSES, oerr, strlen(oerr), &r, &e),
                     0);
    assert_true(r.error);
    assert_string_equal(r.error_type, "requests");
    wire_result_release(&r);

    wire_result_init(&r);
    assert_int_equal(wire_result_from_body(WIRE_API_OPENAI_CHAT, "nope", 4, &r, &e), ERR_PARSE);
    wire_result_release(&r);
}

/* Feeds a whole stream text through an sse parser into a wire_result. */
static void feed_stream(enum wire_api api, const char *s, struct wire_result *r)
{
    struct sse_parser *p = sse_parser_new(0, 0);
    struct sse_event ev;
    assert_int_equal(sse_parser_feed(p, s, strlen(s)), 0);
    while (sse_parser_next(p, &ev, NULL) == 1)
        assert_int_equal(wire_result_stream_event(api, r, &ev, NULL), 0);
    sse_parser_free(p);
}

static void test_stream_anthropic_cumulative(void **state)
{
    const char *s =
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
        "\"model\":\"claude-haiku-4-5-20251001\",\"usage\":{\"input_tokens\":849,"
        "\"cache_creation_input_tokens\":10,\"cache_read_input_tokens\":20,\"output_tokens\":"
        "1}}}\n\n"
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
        "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
        "event: ping\ndata: {\"type\":\"ping\"}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n"
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
        "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\",\"input\":{}}}"
        "\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
        "\"tool_use\"},\"usage\":{\"output_tokens\":20}}\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{"
        "\"input_tokens\":849,\"output_tokens\":47}}\n\n";
    struct wire_result r;
    wire_result_init(&r);
    feed_stream(WIRE_API_ANTHROPIC_MESSAGES, s, &r);
    assert_false(r.complete);
    assert_int_equal(r.usage.input_tokens, 849);
    assert_int_equal(r.usage.cache_write_tokens, 10);
    assert_int_equal(r.usage.cache_read_tokens, 20);
    assert_int_equal(r.usage.output_tokens, 47); /* the last cumulative value, not a sum */
    assert_string_equal(r.text.data, "Hello");
    assert_int_equal(r.tool_calls, 1);
    assert_string_equal(r.stop_reason, "tool_use");
    assert_string_equal(r.model, "claude-haiku-4-5-20251001");
    feed_stream(WIRE_API_ANTHROPIC_MESSAGES, "event: message_stop\ndata: {\"type\":"
                                             "\"message_stop\"}\n\n",
                &r);
    assert_true(r.complete);
    assert_int_equal(r.events, 9);
    feed_stream(WIRE_API_ANTHROPIC_MESSAGES,
                "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
                "\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
                &r);
    assert_true(r.error);
    assert_string_equal(r.error_type, "overloaded_error");
    wire_result_release(&r);
}

static void test_stream_chat_include_usage(void **state)
{
    const char *s =
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-5.4\","
        "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
        "\"finish_reason\":null}],\"usage\":null}\n\n"
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi \"},"
        "\"finish_reason\":null}],\"usage\":null}\n\n"
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":"
        "\"\"}}]},\"finish_reason\":null}],\"usage\":null}\n\n"
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}],"
        "\"usage\":null}\n\n"
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":20,"
        "\"completion_tokens\":9,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n"
        "data: [DONE]\n\n";
    struct wire_result r;
    wire_result_init(&r);
    feed_stream(WIRE_API_OPENAI_CHAT, s, &r);
    assert_true(r.complete);
    assert_string_equal(r.text.data, "Hi ");
    assert_int_equal(r.tool_calls, 1);
    assert_string_equal(r.stop_reason, "tool_calls");
    assert_int_equal(r.usage.input_tokens, 16);
    assert_int_equal(r.usage.cache_read_tokens, 4);
    assert_int_equal(r.usage.output_tokens, 9);
    feed_stream(WIRE_API_OPENAI_CHAT, "data: {\"error\":{\"message\":\"x\",\"type\":"
                                      "\"server_error\"}}\n\n",
                &r);
    assert_true(r.error);
    wire_result_release(&r);
}

static void test_stream_responses(void **state)
{
    const char *s =
        "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,"
        "\"response\":{\"id\":\"resp_1\",\"model\":\"gpt-5.5\",\"status\":\"in_progress\"}}\n\n"
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
        "\"sequence_number\":3,\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,"
        "\"delta\":\"Hi\"}\n\n"
        "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
        "\"sequence_number\":5,\"output_index\":1,\"item\":{\"type\":\"function_call\","
        "\"call_id\":\"call_1\",\"name\":\"exec_command\",\"arguments\":\"\"}}\n\n"
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":"
        "9,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"model\":\"gpt-5.5\","
        "\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":"
        "\"Hi\"}]}],\"usage\":{\"input_tokens\":30,\"input_tokens_details\":{\"cached_tokens\":"
        "10},\"output_tokens\":5}}}\n\n";
    struct wire_result r;
    wire_result_init(&r);
    feed_stream(WIRE_API_OPENAI_RESPONSES, s, &r);
    assert_true(r.complete);
    assert_string_equal(r.text.data, "Hi"); /* not doubled by the completed response */
    assert_int_equal(r.tool_calls, 1);
    assert_int_equal(r.last_sequence, 9);
    assert_int_equal(r.usage.input_tokens, 20);
    assert_int_equal(r.usage.cache_read_tokens, 10);
    assert_int_equal(r.usage.output_tokens, 5);
    assert_string_equal(r.stop_reason, "completed");
    assert_string_equal(r.id, "resp_1");
    wire_result_release(&r);

    struct sse_event ev = {0};
    ev.event = "";
    ev.data = "{not json";
    ev.data_len = 9;
    ev.has_data = 1;
    struct err e = {0};
    wire_result_init(&r);
    assert_int_equal(wire_result_stream_event(WIRE_API_OPENAI_RESPONSES, &r, &ev, &e),
                     ERR_PARSE);
    wire_result_release(&r);
}

static void test_text_cap(void **state)
{
    struct wire_result r;
    struct buf big = BUF_INIT;
    wire_result_init(&r);
    buf_adds(&big, "{\"content\":[{\"type\":\"text\",\"text\":\"");
    for (size_t i = 0; i < WIRE_TEXT_MAX + 100; i++)
        buf_addc(&big, 'x');
    buf_adds(&big, "\"}]}");
    assert_int_equal(
        wire_result_from_body(WIRE_API_ANTHROPIC_MESSAGES, big.data, big.len, &r, NULL), 0);
    assert_int_equal(r.text.len, WIRE_TEXT_MAX);
    assert_true(r.text_truncated);
    wire_result_release(&r);
    buf_release(&big);
}

static void test_error_bodies(void **state)
{
    struct buf b = BUF_INIT;
    assert_int_equal(wire_error_body(&b, WIRE_PROVIDER_ANTHROPIC, WIRE_ERR_RATE_LIMIT, "m \"q\""),
                     0);
    assert_string_equal(b.data, "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\","
                                "\"message\":\"m \\\"q\\\"\"}}");
    buf_reset(&b);
    assert_int_equal(wire_error_body(&b, WIRE_PROVIDER_OPENAI, WIRE_ERR_RATE_LIMIT, "m"), 0);
    assert_string_equal(b.data, "{\"error\":{\"message\":\"m\",\"type\":\"requests\",\"param\":"
                                "null,\"code\":\"rate_limit_exceeded\"}}");
    buf_reset(&b);
    assert_int_equal(wire_error_body(&b, WIRE_PROVIDER_OPENAI, WIRE_ERR_INVALID_REQUEST, "m"), 0);
    assert_non_null(strstr(b.data, "\"code\":null"));
    assert_int_equal(wire_error_body(&b, WIRE_PROVIDER_NONE, WIRE_ERR_API, "m"), ERR_INVALID);
    buf_release(&b);

    assert_int_equal(wire_error_status(WIRE_PROVIDER_ANTHROPIC, WIRE_ERR_OVERLOADED), 529);
    assert_int_equal(wire_error_status(WIRE_PROVIDER_OPENAI, WIRE_ERR_OVERLOADED), 503);
    assert_int_equal(wire_error_status(WIRE_PROVIDER_OPENAI, WIRE_ERR_TOO_LARGE), 413);
    assert_int_equal(wire_error_for_status(529), WIRE_ERR_OVERLOADED);
    assert_int_equal(wire_error_for_status(502), WIRE_ERR_API);
    assert_int_equal(wire_error_for_status(429), WIRE_ERR_RATE_LIMIT);
    assert_int_equal(wire_error_for_status(418), WIRE_ERR_INVALID_REQUEST);
    assert_string_equal(wire_error_type(WIRE_PROVIDER_ANTHROPIC, WIRE_ERR_API), "api_error");
    assert_string_equal(wire_error_type(WIRE_PROVIDER_OPENAI, WIRE_ERR_API), "server_error");
}

/* Each mid-stream error form, parsed back through the stream reader, is an error there too. */
static void test_stream_errors_round_trip(void **state)
{
    static const enum wire_api apis[] = {WIRE_API_ANTHROPIC_MESSAGES, WIRE_API_OPENAI_CHAT,
                                         WIRE_API_OPENAI_RESPONSES};
    for (int i = 0; i < 3; i++) {
        struct buf b = BUF_INIT;
        struct wire_result r;
        assert_int_equal(wire_stream_error(&b, apis[i], WIRE_ERR_OVERLOADED, "boom E-X", 7), 0);
        wire_result_init(&r);
        feed_stream(apis[i], b.data, &r);
        assert_true(r.error);
        assert_string_equal(r.error_message, "boom E-X");
        if (apis[i] == WIRE_API_ANTHROPIC_MESSAGES) {
            assert_memory_equal(b.data, "event: error\n", 13);
            assert_string_equal(r.error_type, "overloaded_error");
        } else if (apis[i] == WIRE_API_OPENAI_CHAT) {
            assert_memory_equal(b.data, "data: {\"error\":", 15);
        } else {
            assert_int_equal(r.last_sequence, 8);
            assert_true(r.complete); /* response.failed is terminal */
            assert_non_null(strstr(b.data, "event: response.failed\n"));
        }
        wire_result_release(&r);
        buf_release(&b);
    }
    struct buf b = BUF_INIT;
    assert_int_equal(wire_stream_error(&b, WIRE_API_ANTHROPIC_COUNT_TOKENS, WIRE_ERR_API, "m", 0),
                     ERR_INVALID);
    assert_int_equal(b.len, 0);
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_from_path),
        cmocka_unit_test(test_json_parse_errors),
        cmocka_unit_test(test_request_info),
        cmocka_unit_test(test_usage_normalised),
        cmocka_unit_test(test_result_bodies),
        cmocka_unit_test(test_stream_anthropic_cumulative),
        cmocka_unit_test(test_stream_chat_include_usage),
        cmocka_unit_test(test_stream_responses),
        cmocka_unit_test(test_text_cap),
        cmocka_unit_test(test_error_bodies),
        cmocka_unit_test(test_stream_errors_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
