/* Unit tests for src/agent/llm: requests built for each API from one conversation, tool calls
 * parsed from whole bodies and from streams (split at every byte), errors, the retry policy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/llm.h"
#include "util/buf.h"
#include "util/banned.h"

/* A conversation: prompt, a reply with text and two tool calls, their results (one error). */
static void make_conv(struct llm_conv *c)
{
    struct llm_reply r;

    llm_conv_init(c);
    llm_conv_add_user(c, "do it");
    static const char b[] =
        "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"},"
        "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"shell\","
        "\"input\":{\"command\":\"ls\"}},"
        "{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"mcp__fs__read\","
        "\"input\":{}}],\"stop_reason\":\"tool_use\"}";

    llm_reply_init(&r);
    llm_reply_from_body(LLM_API_ANTHROPIC, 200, b, strlen(b), &r);
    assert_int_equal(r.ncalls, 2);
    llm_conv_add_assistant(c, &r);
    llm_conv_add_result(c, "t1", "shell", "a b", 0);
    llm_conv_add_result(c, "t2", "mcp__fs__read", "no such file", 1);
    llm_reply_release(&r);
}

static json_t *tools(void)
{
    return json_pack("[{s:s,s:s,s:{s:s}}]", "name", "shell", "description", "Run it",
                     "input_schema", "type", "object");
}

static char *dump(const json_t *j)
{
    return json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
}

static void test_request_anthropic(void **state)
{
    struct llm_conv c;
    json_t *t = tools();
    struct llm_params p = {LLM_API_ANTHROPIC, "claude-x", "be brief", 100, 1, t};

    make_conv(&c);
    json_t *req = llm_build_request(&p, &c);
    char *s = dump(req);
    assert_string_equal(
        s, "{\"max_tokens\":100,\"messages\":[{\"content\":\"do it\",\"role\":\"user\"},"
           "{\"content\":[{\"text\":\"ok\",\"type\":\"text\"},{\"id\":\"t1\",\"input\":{\"command\":"
           "\"ls\"},\"name\":\"shell\",\"type\":\"tool_use\"},{\"id\":\"t2\",\"input\":{},\"name\":"
           "\"mcp__fs__read\",\"type\":\"tool_use\"}],\"role\":\"assistant\"},{\"content\":[{"
           "\"content\":\"a b\",\"tool_use_id\":\"t1\",\"type\":\"tool_result\"},{\"content\":\"no "
           "such file\",\"is_error\":true,\"tool_use_id\":\"t2\",\"type\":\"tool_result\"}],"
           "\"role\":\"user\"}],\"model\":\"claude-x\",\"stream\":true,\"system\":\"be brief\","
           "\"tools\":[{\"description\":\"Run it\",\"input_schema\":{\"type\":\"object\"},"
           "\"name\":\"shell\"}]}");
    free(s);
    json_decref(req);
    llm_conv_release(&c);
    json_decref(t);
}

static void test_request_chat(void **state)
{
    struct llm_conv c;
    json_t *t = tools();
    struct llm_params p = {LLM_API_CHAT, "gpt-x", "be brief", 100, 1, t};

    make_conv(&c);
    json_t *req = llm_build_request(&p, &c);
    char *s = dump(req);
    assert_string_equal(
        s, "{\"max_completion_tokens\":100,\"messages\":[{\"content\":\"be brief\",\"role\":"
           "\"system\"},{\"content\":\"do it\",\"role\":\"user\"},{\"content\":\"ok\",\"role\":"
           "\"assistant\",\"tool_calls\":[{\"function\":{\"arguments\":\"{\\\"command\\\":\\\"ls\\\""
           "}\",\"name\":\"shell\"},\"id\":\"t1\",\"type\":\"function\"},{\"function\":{"
           "\"arguments\":\"{}\",\"name\":\"mcp__fs__read\"},\"id\":\"t2\",\"type\":\"function\"}]},"
           "{\"content\":\"a b\",\"role\":\"tool\",\"tool_call_id\":\"t1\"},{\"content\":\"Error: "
           "no such file\",\"role\":\"tool\",\"tool_call_id\":\"t2\"}],\"model\":\"gpt-x\","
           "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"tools\":[{\"function\":{"
           "\"description\":\"Run it\",\"name\":\"shell\",\"parameters\":{\"type\":\"object\"}},"
           "\"type\":\"function\"}]}");
    free(s);
    json_decref(req);
    llm_conv_release(&c);
    json_decref(t);
}

static void test_request_responses(void **state)
{
    struct llm_conv c;
    json_t *t = tools();
    struct llm_params p = {LLM_API_RESPONSES, "gpt-x", "", 100, 0, t};

    make_conv(&c);
    json_t *req = llm_build_request(&p, &c);
    char *s = dump(req);
    assert_string_equal(
        s, "{\"input\":[{\"content\":\"do it\",\"role\":\"user\"},{\"content\":\"ok\",\"role\":"
           "\"assistant\"},{\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\",\"call_id\":\"t1\","
           "\"name\":\"shell\",\"type\":\"function_call\"},{\"arguments\":\"{}\",\"call_id\":\"t2\","
           "\"name\":\"mcp__fs__read\",\"type\":\"function_call\"},{\"call_id\":\"t1\",\"output\":"
           "\"a b\",\"type\":\"function_call_output\"},{\"call_id\":\"t2\",\"output\":\"Error: no "
           "such file\",\"type\":\"function_call_output\"}],\"max_output_tokens\":100,\"model\":"
           "\"gpt-x\",\"store\":false,\"tools\":[{\"description\":\"Run it\",\"name\":\"shell\","
           "\"parameters\":{\"type\":\"object\"},\"type\":\"function\"}]}");
    free(s);
    json_decref(req);
    llm_conv_release(&c);
    json_decref(t);
}

static void test_request_no_tools_no_system(void **state)
{
    struct llm_conv c;
    struct llm_params p = {LLM_API_ANTHROPIC, "m", NULL, 5, 0, NULL};

    llm_conv_init(&c);
    llm_conv_add_user(&c, "bad \xff utf8");
    json_t *req = llm_build_request(&p, &c);
    assert_null(json_object_get(req, "tools"));
    assert_null(json_object_get(req, "system"));
    assert_null(json_object_get(req, "stream"));
    const char *txt = json_string_value(
        json_object_get(json_array_get(json_object_get(req, "messages"), 0), "content"));
    assert_string_equal(txt, "bad \xef\xbf\xbd utf8");
    json_decref(req);
    llm_conv_release(&c);
}

static void body(enum llm_api api, int status, const char *b, struct llm_reply *r)
{
    llm_reply_from_body(api, status, b, strlen(b), r);
}

static void test_body_tool_calls(void **state)
{
    struct llm_reply r;

    llm_reply_init(&r);
    body(LLM_API_CHAT, 200,
         "{\"model\":\"gpt-x\",\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":null,"
         "\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"shell\","
         "\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}},{\"type\":\"function\",\"function\":{"
         "\"name\":\"x\",\"arguments\":\"{bad\"}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{"
         "\"prompt_tokens\":20,\"completion_tokens\":9}}",
         &r);
    assert_false(r.error);
    assert_int_equal(r.ncalls, 2);
    assert_string_equal(r.calls[0].id, "call_1");
    assert_string_equal(r.calls[0].name, "shell");
    assert_string_equal(json_string_value(json_object_get(r.calls[0].input, "command")), "ls");
    assert_null(r.calls[0].input_error);
    assert_string_equal(r.calls[1].id, "call_2"); /* made up */
    assert_null(r.calls[1].input);
    assert_non_null(strstr(r.calls[1].input_error, "invalid JSON arguments"));
    assert_string_equal(r.stop_reason, "tool_calls");
    assert_int_equal(r.usage.input_tokens, 20);
    assert_int_equal(r.usage.output_tokens, 9);
    assert_string_equal(r.model, "gpt-x");

    body(LLM_API_RESPONSES, 200,
         "{\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":"
         "\"output_text\",\"text\":\"Hi\"}]},{\"type\":\"function_call\",\"id\":\"fc_1\","
         "\"call_id\":\"call_9\",\"name\":\"f\",\"arguments\":\"[1]\"},{\"type\":\"function_call\","
         "\"call_id\":\"call_10\",\"name\":\"g\",\"arguments\":\"\"}]}",
         &r);
    assert_string_equal(r.text.data, "Hi");
    assert_int_equal(r.ncalls, 2);
    assert_string_equal(r.calls[0].id, "call_9");
    assert_string_equal(r.calls[0].input_error, "arguments are not a JSON object");
    assert_string_equal(r.calls[1].args, "{}");
    assert_true(json_is_object(r.calls[1].input));
    assert_string_equal(r.stop_reason, "completed");

    body(LLM_API_ANTHROPIC, 200,
         "{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"thinking\",\"thinking\":\"x\"},"
         "{\"type\":\"text\",\"text\":\"b\"}],\"stop_reason\":\"end_turn\"}",
         &r);
    assert_string_equal(r.text.data, "a\nb");
    assert_int_equal(r.ncalls, 0);
    llm_reply_release(&r);
}

static void test_body_errors(void **state)
{
    struct llm_reply r;

    llm_reply_init(&r);
    body(LLM_API_ANTHROPIC, 529,
         "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy "
         "E-FAULTLINE-01234567\"}}",
         &r);
    assert_true(r.error);
    assert_int_equal(r.status, 529);
    assert_string_equal(r.error_type, "overloaded_error");
    assert_string_equal(r.error_message.data, "busy E-FAULTLINE-01234567");

    body(LLM_API_CHAT, 429,
         "{\"error\":{\"message\":\"slow\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}",
         &r);
    assert_string_equal(r.error_type, "requests");
    assert_string_equal(r.error_message.data, "slow");

    body(LLM_API_RESPONSES, 500, "<html>\n oops</html>", &r);
    assert_true(r.error);
    assert_string_equal(r.error_message.data, "<html>  oops</html>");

    body(LLM_API_RESPONSES, 503, "", &r);
    assert_string_equal(r.error_message.data, "HTTP 503 with no error message");

    body(LLM_API_CHAT, 200, "not json", &r);
    assert_true(r.error);
    assert_string_equal(r.error_type, "invalid_response");

    body(LLM_API_CHAT, 200, "{\"error\":{\"message\":\"in a 200\"}}", &r);
    assert_true(r.error);
    assert_string_equal(r.error_message.data, "in a 200");

    body(LLM_API_RESPONSES, 200,
         "{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"m\"},"
         "\"output\":[]}",
         &r);
    assert_true(r.error);
    assert_string_equal(r.error_type, "server_error");
    llm_reply_release(&r);
}

/* ---- streams ---- */

struct sink {
    struct buf text;
};

static void on_text(const char *t, size_t n, void *arg)
{
    struct sink *s = arg;
    buf_add(&s->text, t, n);
}

/* Feeds sse to a stream reader in pieces of step bytes. */
static void stream(enum llm_api api, const char *sse, size_t step, struct llm_reply *r,
                   struct sink *s)
{
    struct llm_stream *st = llm_stream_new(api, r, on_text, s);
    size_t n = strlen(sse);
    struct err e = {0};

    buf_reset(&s->text);
    for (size_t i = 0; i < n; i += step)
        assert_int_equal(llm_stream_feed(st, sse + i, i + step > n ? n - i : step, &e), 0);
    llm_stream_finish(st);
    llm_stream_free(st);
}

static const char anthropic_sse[] =
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"content\":[],"
    "\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
    "\"text\":\"\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"Hel\"}}\n\n"
    "event: ping\ndata: {\"type\":\"ping\"}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"lo \xc3\xa9\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\","
    "\"id\":\"toolu_1\",\"name\":\"shell\",\"input\":{}}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\"{\\\"command\\\": \\\"ec\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\"ho hi\\\"}\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\","
    "\"id\":\"toolu_2\",\"name\":\"noargs\",\"input\":{}}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},"
    "\"usage\":{\"output_tokens\":47}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

static void test_stream_anthropic(void **state)
{
    struct llm_reply r;
    struct sink s = {BUF_INIT};
    size_t steps[] = {1, 2, 7, 64, sizeof(anthropic_sse)};

    llm_reply_init(&r);
    for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
        stream(LLM_API_ANTHROPIC, anthropic_sse, steps[k], &r, &s);
        assert_false(r.error);
        assert_true(r.streamed);
        assert_string_equal(s.text.data, "Hello \xc3\xa9");
        assert_string_equal(r.text.data, "Hello \xc3\xa9");
        assert_int_equal(r.ncalls, 2);
        assert_string_equal(r.calls[0].id, "toolu_1");
        assert_string_equal(r.calls[0].name, "shell");
        assert_string_equal(r.calls[0].args, "{\"command\": \"echo hi\"}");
        assert_string_equal(json_string_value(json_object_get(r.calls[0].input, "command")),
                            "echo hi");
        assert_string_equal(r.calls[1].args, "{}");
        assert_string_equal(r.stop_reason, "tool_use");
        assert_int_equal(r.usage.input_tokens, 12);
        assert_int_equal(r.usage.output_tokens, 47);
        assert_string_equal(r.model, "claude-x");
    }
    llm_reply_release(&r);
    buf_release(&s.text);
}

static void test_stream_anthropic_errors(void **state)
{
    struct llm_reply r;
    struct sink s = {BUF_INIT};
    char cut[sizeof(anthropic_sse)];

    llm_reply_init(&r);
    /* cut before message_stop */
    memcpy(cut, anthropic_sse, sizeof(anthropic_sse));
    *strstr(cut, "event: message_delta") = '\0';
    stream(LLM_API_ANTHROPIC, cut, 5, &r, &s);
    assert_true(r.error);
    assert_string_equal(r.error_type, "stream_incomplete");
    assert_non_null(strstr(r.error_message.data, "ended before its final event"));
    assert_string_equal(s.text.data, "Hello \xc3\xa9");

    stream(LLM_API_ANTHROPIC,
           "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
           "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
           "\"message\":\"Overloaded E-FAULTLINE-0000abcd\"}}\n\n",
           3, &r, &s);
    assert_true(r.error);
    assert_string_equal(r.error_type, "overloaded_error");
    assert_string_equal(r.error_message.data, "Overloaded E-FAULTLINE-0000abcd");
    llm_reply_release(&r);
    buf_release(&s.text);
}

static void test_stream_chat(void **state)
{
    static const char sse[] =
        "data: {\"object\":\"chat.completion.chunk\",\"model\":\"gpt-x\",\"choices\":[{\"index\":0,"
        "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],"
        "\"usage\":null}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Run\"},\"finish_reason\":null}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\","
        "\"type\":\"function\",\"function\":{\"name\":\"shell\",\"arguments\":\"\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
        "\"arguments\":\"{\\\"command\\\"\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_2\","
        "\"function\":{\"name\":\"other\",\"arguments\":\"{}\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
        "\"arguments\":\":\\\"ls\\\"}\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":7}}\n\n"
        "data: [DONE]\n\n";
    struct llm_reply r;
    struct sink s = {BUF_INIT};

    llm_reply_init(&r);
    for (size_t step = 1; step < 40; step += 13) {
        stream(LLM_API_CHAT, sse, step, &r, &s);
        assert_false(r.error);
        assert_string_equal(s.text.data, "Run");
        assert_int_equal(r.ncalls, 2);
        assert_string_equal(r.calls[0].id, "call_1");
        assert_string_equal(r.calls[0].args, "{\"command\":\"ls\"}");
        assert_string_equal(r.calls[1].name, "other");
        assert_string_equal(r.stop_reason, "tool_calls");
        assert_int_equal(r.usage.input_tokens, 30);
        assert_int_equal(r.usage.output_tokens, 7);
    }
    /* an error chunk */
    stream(LLM_API_CHAT,
           "data: {\"error\":{\"message\":\"bad E-FAULTLINE-11112222\",\"type\":\"server_error\"}}\n\n",
           4, &r, &s);
    assert_true(r.error);
    assert_string_equal(r.error_type, "server_error");
    assert_string_equal(r.error_message.data, "bad E-FAULTLINE-11112222");
    /* no [DONE] but a finish_reason: accepted */
    stream(LLM_API_CHAT,
           "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":"
           "\"stop\"}]}\n\n",
           100, &r, &s);
    assert_false(r.error);
    /* neither: cut */
    stream(LLM_API_CHAT, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n",
           100, &r, &s);
    assert_true(r.error);
    llm_reply_release(&r);
    buf_release(&s.text);
}

static void test_stream_responses(void **state)
{
    static const char sse[] =
        "event: response.created\n"
        "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"model\":"
        "\"gpt-x\",\"status\":\"in_progress\",\"output\":[]}}\n\n"
        "event: response.output_item.added\n"
        "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":"
        "\"message\",\"content\":[]}}\n\n"
        "event: response.output_text.delta\n"
        "data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"Hi \"}\n\n"
        "event: response.output_text.delta\n"
        "data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"there\"}\n\n"
        "event: response.output_item.added\n"
        "data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":"
        "\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"shell\","
        "\"arguments\":\"\"}}\n\n"
        "event: response.function_call_arguments.delta\n"
        "data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,"
        "\"delta\":\"{\\\"command\\\":\"}\n\n"
        "event: response.function_call_arguments.delta\n"
        "data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,"
        "\"delta\":\"\\\"pwd\\\"}\"}\n\n";
    static const char tail_done[] =
        "event: response.completed\n"
        "data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\","
        "\"output\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":3}}}\n\n";
    static const char tail_full[] =
        "event: response.completed\n"
        "data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\","
        "\"output\":[{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"shell\","
        "\"arguments\":\"{\\\"command\\\":\\\"final\\\"}\"}]}}\n\n";
    struct llm_reply r;
    struct sink s = {BUF_INIT};
    struct buf all = BUF_INIT;

    llm_reply_init(&r);
    buf_adds(&all, sse);
    buf_adds(&all, tail_done);
    stream(LLM_API_RESPONSES, all.data, 3, &r, &s);
    assert_false(r.error);
    assert_string_equal(s.text.data, "Hi there");
    assert_int_equal(r.ncalls, 1);
    assert_string_equal(r.calls[0].id, "call_1");
    assert_string_equal(r.calls[0].args, "{\"command\":\"pwd\"}");
    assert_string_equal(r.stop_reason, "completed");
    assert_int_equal(r.usage.output_tokens, 3);

    /* response.completed with output is authoritative */
    buf_reset(&all);
    buf_adds(&all, sse);
    buf_adds(&all, tail_full);
    stream(LLM_API_RESPONSES, all.data, 50, &r, &s);
    assert_int_equal(r.ncalls, 1);
    assert_string_equal(r.calls[0].args, "{\"command\":\"final\"}");
    assert_string_equal(r.text.data, "Hi there"); /* no text in output: the streamed one stays */

    /* an error event, then response.failed */
    stream(LLM_API_RESPONSES,
           "event: error\ndata: {\"type\":\"error\",\"code\":\"server_is_overloaded\",\"message\":"
           "\"busy E-FAULTLINE-aaaabbbb\",\"param\":null,\"sequence_number\":3}\n\n"
           "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":"
           "\"failed\",\"error\":{\"code\":\"server_is_overloaded\",\"message\":\"busy\"}}}\n\n",
           7, &r, &s);
    assert_true(r.error);
    assert_string_equal(r.error_type, "server_is_overloaded");
    assert_string_equal(r.error_message.data, "busy E-FAULTLINE-aaaabbbb");

    /* cut: no terminal event */
    stream(LLM_API_RESPONSES, sse, 1000, &r, &s);
    assert_true(r.error);
    assert_string_equal(r.error_type, "stream_incomplete");
    buf_release(&all);
    llm_reply_release(&r);
    buf_release(&s.text);
}

static void test_stream_broken_framing(void **state)
{
    struct llm_reply r;
    struct err e = {0};

    llm_reply_init(&r);
    struct llm_stream *st = llm_stream_new(LLM_API_ANTHROPIC, &r, NULL, NULL);
    assert_int_equal(llm_stream_feed(st, "data: \xff\xfe\n\n", 10, &e), ERR_PARSE);
    llm_stream_finish(st);
    assert_true(r.error);
    llm_stream_free(st);
    llm_reply_release(&r);
}

/* ---- retries ---- */

static void test_retry_policy(void **state)
{
    struct llm_reply r;

    llm_reply_init(&r);
    assert_true(llm_retryable(&r, ERR_IO));
    assert_true(llm_retryable(&r, ERR_TIMEOUT));
    assert_false(llm_retryable(&r, ERR_INVALID));
    assert_false(llm_retryable(&r, ERR_LIMIT));
    assert_false(llm_retryable(&r, ERR_SYS));
    assert_false(llm_retryable(&r, 0)); /* no error */

    int yes[] = {408, 409, 429, 500, 502, 503, 529};
    int no[] = {400, 401, 403, 404, 413, 422};
    r.error = 1;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        r.status = yes[i];
        assert_true(llm_retryable(&r, 0));
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        r.status = no[i];
        assert_false(llm_retryable(&r, 0));
    }
    r.status = 200; /* an error inside a stream */
    assert_false(llm_retryable(&r, 0));
    r.status = 400;
    r.should_retry = 1;
    assert_true(llm_retryable(&r, 0));
    r.status = 503;
    r.should_retry = 0;
    assert_false(llm_retryable(&r, 0));
    r.should_retry = -1;
    r.status = 429;
    snprintf(r.error_type, sizeof(r.error_type), "insufficient_quota");
    assert_false(llm_retryable(&r, 0));

    /* delays */
    assert_int_equal(llm_retry_delay_ms(NULL, 1, 60000), 500);
    assert_int_equal(llm_retry_delay_ms(NULL, 2, 60000), 1000);
    assert_int_equal(llm_retry_delay_ms(NULL, 5, 60000), 8000);
    assert_int_equal(llm_retry_delay_ms(NULL, 9, 60000), 8000);
    assert_int_equal(llm_retry_delay_ms(NULL, 3, 700), 700);
    r.retry_after_ms = 5000;
    assert_int_equal(llm_retry_delay_ms(&r, 1, 60000), 5000);
    assert_int_equal(llm_retry_delay_ms(&r, 1, 2000), 2000);
    r.retry_after_ms = 0;
    assert_int_equal(llm_retry_delay_ms(&r, 3, 60000), 0);
    llm_reply_release(&r);

    assert_int_equal(llm_parse_retry_after("5", 0), 5000);
    assert_int_equal(llm_parse_retry_after("1.5", 0), 1500);
    assert_int_equal(llm_parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", 40), 60000);
    assert_int_equal(llm_parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", 500), 0);
    assert_int_equal(llm_parse_retry_after("soon", 0), LLM_NO_RETRY_AFTER);
    assert_int_equal(llm_parse_retry_after("-3", 0), LLM_NO_RETRY_AFTER);
    assert_int_equal(llm_parse_retry_after(NULL, 0), LLM_NO_RETRY_AFTER);
}

static void test_names_and_endpoints(void **state)
{
    enum llm_api a;
    struct llm_endpoint ep;
    struct err e = {0};

    assert_int_equal(llm_api_parse("openai", &a), 0);
    assert_int_equal(a, LLM_API_CHAT);
    assert_int_equal(llm_api_parse("responses", &a), 0);
    assert_int_equal(a, LLM_API_RESPONSES);
    assert_int_equal(llm_api_parse("gemini", &a), ERR_INVALID);
    assert_string_equal(llm_api_name(LLM_API_ANTHROPIC), "anthropic");

    assert_int_equal(llm_endpoint_init(&ep, LLM_API_ANTHROPIC, "http://127.0.0.1:9/", &e), 0);
    assert_string_equal(ep.target, "/v1/messages");
    assert_int_equal(llm_endpoint_init(&ep, LLM_API_CHAT, NULL, &e), 0);
    assert_string_equal(ep.target, "/v1/chat/completions");
    assert_true(ep.url.tls);
    assert_string_equal(ep.url.host, "api.openai.com");
    assert_int_equal(llm_endpoint_init(&ep, LLM_API_RESPONSES, "http://h:8080/proxy/v1", &e), 0);
    assert_string_equal(ep.target, "/proxy/v1/responses");
    assert_int_equal(llm_endpoint_init(&ep, LLM_API_RESPONSES, "ftp://x", &e), ERR_INVALID);
}

static void test_text_json(void **state)
{
    json_t *j = llm_text_json("a\xc3\x28z\xed\xa0\x80", 7);
    assert_string_equal(json_string_value(j), "a\xef\xbf\xbd(z\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    json_decref(j);
    j = llm_text_json("ok \xe2\x9c\x93", 6);
    assert_string_equal(json_string_value(j), "ok \xe2\x9c\x93");
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_anthropic),
        cmocka_unit_test(test_request_chat),
        cmocka_unit_test(test_request_responses),
        cmocka_unit_test(test_request_no_tools_no_system),
        cmocka_unit_test(test_body_tool_calls),
        cmocka_unit_test(test_body_errors),
        cmocka_unit_test(test_stream_anthropic),
        cmocka_unit_test(test_stream_anthropic_errors),
        cmocka_unit_test(test_stream_chat),
        cmocka_unit_test(test_stream_responses),
        cmocka_unit_test(test_stream_broken_framing),
        cmocka_unit_test(test_retry_policy),
        cmocka_unit_test(test_names_and_endpoints),
        cmocka_unit_test(test_text_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
