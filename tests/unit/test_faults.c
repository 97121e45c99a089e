/* Unit tests for src/control/faults: context_trim on each API (pairing kept valid),
 * model_degrade, and the canary-carrying error bodies and stream cuts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "control/faults.h"
#include "codec/sse.h"
#include "codec/wire.h"
#include "helpers.h"
#include "util/banned.h"

/* An agent loop: prompt, then two tool rounds. */
static const char anth_conv[] =
    "{\"model\":\"claude-opus-4-8\",\"system\":\"be brief\",\"messages\":["
    "{\"role\":\"user\",\"content\":\"run it\"},"
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\","
    "\"input\":{}}]},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":"
    "\"one\"}]},"
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"again\"},{\"type\":"
    "\"tool_use\",\"id\":\"t2\",\"name\":\"Bash\",\"input\":{}}]},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t2\",\"content\":"
    "[{\"type\":\"text\",\"text\":\"two\"},{\"type\":\"text\",\"text\":\"lines\"}],\"is_error\":"
    "true}]}]}";

static void test_trim_anthropic(void **state)
{
    struct faults_trim t;
    struct err e = {0};
    json_t *req = ut_json(anth_conv);

    /* Dropping 1 (the prompt) leaves an assistant first: it goes too, and t1's result is
     * orphaned, so it becomes text. */
    assert_int_equal(faults_context_trim(WIRE_API_ANTHROPIC_MESSAGES, req, 1, 0, &t, &e), 0);
    assert_int_equal(t.dropped, 2);
    assert_int_equal(t.converted, 1);
    assert_false(t.dropped_system);
    ut_assert_json(json_object_get(req, "messages"),
                   "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
                   "\"[result of an earlier tool call] one\"}]},"
                   "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"again\"},"
                   "{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"Bash\",\"input\":{}}]},"
                   "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
                   "\"t2\",\"content\":[{\"type\":\"text\",\"text\":\"two\"},{\"type\":\"text\","
                   "\"text\":\"lines\"}],\"is_error\":true}]}]");
    assert_string_equal(json_string_value(json_object_get(req, "system")), "be brief");
    json_decref(req);

    /* Dropping "everything" keeps the last message; its orphan result becomes text. */
    req = ut_json(anth_conv);
    assert_int_equal(faults_context_trim(WIRE_API_ANTHROPIC_MESSAGES, req, 100, 1, &t, &e), 0);
    assert_int_equal(t.dropped, 4);
    assert_int_equal(t.converted, 1);
    assert_true(t.dropped_system);
    assert_null(json_object_get(req, "system"));
    ut_assert_json(json_object_get(req, "messages"),
                   "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
                   "\"[result of an earlier tool call] two\\nlines\"}]}]");
    json_decref(req);

    /* Nothing to do: counts stay zero and the request is unchanged. */
    req = ut_json(anth_conv);
    json_t *orig = json_deep_copy(req);
    assert_int_equal(faults_context_trim(WIRE_API_ANTHROPIC_MESSAGES, req, 0, 0, &t, &e), 0);
    assert_int_equal(t.dropped + t.converted + (size_t)t.dropped_system, 0);
    assert_true(json_equal(req, orig));
    json_decref(orig);
    json_decref(req);
}

static void test_trim_anthropic_system_role_entries(void **state)
{
    /* Claude Code may put a "role":"system" entry in messages: not counted, dropped by
     * drop_system only. */
    json_t *req =
        ut_json("{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\","
                "\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"},{\"role\":"
                "\"user\",\"content\":\"c\"}]}");
    struct faults_trim t;
    assert_int_equal(faults_context_trim(WIRE_API_ANTHROPIC_MESSAGES, req, 1, 0, &t, NULL), 0);
    assert_int_equal(t.dropped, 2);
    ut_assert_json(
        json_object_get(req, "messages"),
        "[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"c\"}]");
    assert_int_equal(faults_context_trim(WIRE_API_ANTHROPIC_MESSAGES, req, 0, 1, &t, NULL), 0);
    assert_true(t.dropped_system);
    ut_assert_json(json_object_get(req, "messages"), "[{\"role\":\"user\",\"content\":\"c\"}]");
    json_decref(req);
}

static void test_trim_chat(void **state)
{
    json_t *req = ut_json(
        "{\"messages\":[{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"user\",\"content\":"
        "\"go\"},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":"
        "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}},{\"id\":\"c2\",\"type\":"
        "\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\","
        "\"tool_call_id\":\"c1\",\"content\":\"r1\"},{\"role\":\"tool\",\"tool_call_id\":\"c2\","
        "\"content\":[{\"type\":\"text\",\"text\":\"r2\"}]},{\"role\":\"developer\",\"content\":"
        "\"dev\"}]}");
    struct faults_trim t;
    assert_int_equal(faults_context_trim(WIRE_API_OPENAI_CHAT, req, 2, 1, &t, NULL), 0);
    assert_int_equal(t.dropped, 2);
    assert_int_equal(t.converted, 2);
    assert_true(t.dropped_system);
    ut_assert_json(json_object_get(req, "messages"),
                   "[{\"role\":\"user\",\"content\":\"[result of an earlier tool call] r1\"},"
                   "{\"role\":\"user\",\"content\":\"[result of an earlier tool call] r2\"}]");
    json_decref(req);
}

static void test_trim_responses(void **state)
{
    json_t *req =
        ut_json("{\"instructions\":\"ins\",\"input\":[{\"type\":\"message\",\"role\":\"developer\","
                "\"content\":\"env\"},{\"type\":\"message\",\"role\":\"user\",\"content\":\"go\"},"
                "{\"type\":\"reasoning\",\"encrypted_content\":\"x\"},{\"type\":\"function_call\","
                "\"call_id\":\"k1\",\"name\":\"exec_command\",\"arguments\":\"{}\"},{\"type\":"
                "\"function_call_output\",\"call_id\":\"k1\",\"output\":\"done\"},{\"type\":"
                "\"custom_tool_call\",\"call_id\":\"k2\",\"name\":\"apply_patch\",\"input\":\"p\"},"
                "{\"type\":\"custom_tool_call_output\",\"call_id\":\"k2\",\"output\":\"ok\"}]}");
    struct faults_trim t;
    assert_int_equal(faults_context_trim(WIRE_API_OPENAI_RESPONSES, req, 3, 0, &t, NULL), 0);
    assert_int_equal(t.dropped, 3);
    assert_int_equal(t.converted, 1);
    assert_false(t.dropped_system);
    ut_assert_json(json_object_get(req, "input"),
                   "[{\"type\":\"message\",\"role\":\"developer\",\"content\":\"env\"},"
                   "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
                   "\"text\":\"[result of an earlier tool call] done\"}]},"
                   "{\"type\":\"custom_tool_call\",\"call_id\":\"k2\",\"name\":\"apply_patch\","
                   "\"input\":\"p\"},{\"type\":\"custom_tool_call_output\",\"call_id\":\"k2\","
                   "\"output\":\"ok\"}]");
    assert_int_equal(faults_context_trim(WIRE_API_OPENAI_RESPONSES, req, 0, 1, &t, NULL), 0);
    assert_true(t.dropped_system);
    assert_null(json_object_get(req, "instructions"));
    assert_int_equal(json_array_size(json_object_get(req, "input")), 3);
    json_decref(req);

    /* a string input: only the instructions can go */
    req = ut_json("{\"instructions\":\"i\",\"input\":\"hi\"}");
    assert_int_equal(faults_context_trim(WIRE_API_OPENAI_RESPONSES, req, 5, 1, &t, NULL), 0);
    assert_int_equal(t.dropped, 0);
    assert_true(t.dropped_system);
    ut_assert_json(req, "{\"input\":\"hi\"}");
    json_decref(req);
}

static void test_trim_errors(void **state)
{
    struct err e = {0};
    json_t *req = ut_json("{\"messages\":{}}");
    json_t *orig = json_deep_copy(req);
    assert_int_equal(faults_context_trim(WIRE_API_ANTHROPIC_MESSAGES, req, 1, 1, NULL, &e),
                     ERR_INVALID);
    assert_non_null(strstr(e.msg, "not an array"));
    assert_true(json_equal(req, orig));
    assert_int_equal(faults_context_trim(WIRE_API_ANTHROPIC_COUNT_TOKENS, req, 1, 1, NULL, NULL),
                     ERR_INVALID);
    json_t *arr = json_array();
    assert_int_equal(faults_context_trim(WIRE_API_OPENAI_CHAT, arr, 1, 1, NULL, NULL),
                     ERR_INVALID);
    json_decref(arr);
    json_decref(orig);
    json_decref(req);
}

static void test_model_degrade(void **state)
{
    json_t *req = ut_json("{\"model\":\"claude-opus-4-8\",\"x\":1}");
    char from[8];
    struct err e = {0};
    assert_int_equal(faults_model_degrade(req, "claude-haiku-4-5", from, sizeof(from), &e), 0);
    assert_string_equal(from, "claude-"); /* cut to the buffer */
    ut_assert_json(req, "{\"model\":\"claude-haiku-4-5\",\"x\":1}");
    assert_int_equal(faults_model_degrade(req, "", NULL, 0, &e), ERR_INVALID);
    json_decref(req);
    req = ut_json("{}");
    char from2[32];
    assert_int_equal(faults_model_degrade(req, "m", from2, sizeof(from2), NULL), 0);
    assert_string_equal(from2, "");
    json_decref(req);
}

static void test_error_bodies_carry_canary(void **state)
{
    struct faults_error fe;
    const char *canary = "E-FAULTLINE-1a2b3c4d";
    faults_error_init(&fe);

    assert_int_equal(faults_rate_limit(WIRE_API_ANTHROPIC_MESSAGES, canary, 7, &fe), 0);
    assert_int_equal(fe.status, 429);
    assert_int_equal(fe.retry_after_s, 7);
    json_t *j = ut_json(fe.body.data);
    assert_string_equal(json_string_value(json_object_get(j, "type")), "error");
    json_t *err = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(err, "type")), "rate_limit_error");
    assert_string_equal(json_string_value(json_object_get(err, "message")),
                        "faultline injected llm.rate_limit: rate limit exceeded, retry after 7 s "
                        "[E-FAULTLINE-1a2b3c4d]");
    json_decref(j);

    assert_int_equal(faults_rate_limit(WIRE_API_OPENAI_CHAT, canary, -5, &fe), 0);
    assert_int_equal(fe.retry_after_s, 0);
    j = ut_json(fe.body.data);
    err = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(err, "code")), "rate_limit_exceeded");
    assert_non_null(strstr(json_string_value(json_object_get(err, "message")), canary));
    json_decref(j);

    assert_int_equal(faults_upstream_5xx(WIRE_API_ANTHROPIC_MESSAGES, 529, canary, &fe), 0);
    assert_int_equal(fe.status, 529);
    assert_int_equal(fe.retry_after_s, -1);
    assert_non_null(strstr(fe.body.data, "overloaded_error"));
    assert_non_null(strstr(fe.body.data, canary));
    assert_int_equal(faults_upstream_5xx(WIRE_API_OPENAI_RESPONSES, 502, canary, &fe), 0);
    assert_int_equal(fe.status, 502);
    assert_non_null(strstr(fe.body.data, "server_error"));
    assert_non_null(strstr(fe.body.data, "HTTP 502"));
    assert_int_equal(faults_upstream_5xx(WIRE_API_OPENAI_CHAT, 404, canary, &fe), ERR_INVALID);
    assert_int_equal(faults_rate_limit(WIRE_API_UNKNOWN, canary, 1, &fe), ERR_INVALID);
    assert_int_equal(faults_upstream_5xx(WIRE_API_OPENAI_CHAT, 500, NULL, &fe), 0);
    assert_null(strstr(fe.body.data, "["));
    faults_error_release(&fe);
}

static void test_stream_cut(void **state)
{
    static const enum wire_api apis[] = {WIRE_API_ANTHROPIC_MESSAGES, WIRE_API_OPENAI_CHAT,
                                         WIRE_API_OPENAI_RESPONSES};
    for (int i = 0; i < 3; i++) {
        struct buf b = BUF_INIT;
        struct sse_parser *p = sse_parser_new(0, 0);
        struct sse_event ev;
        struct wire_result r;
        assert_int_equal(faults_stream_cut(&b, apis[i], 503, "E-FAULTLINE-00000001", 4), 0);
        wire_result_init(&r);
        assert_int_equal(sse_parser_feed(p, b.data, b.len), 0);
        while (sse_parser_next(p, &ev, NULL) == 1)
            wire_result_stream_event(apis[i], &r, &ev, NULL);
        assert_true(r.error);
        assert_non_null(strstr(r.error_message, "E-FAULTLINE-00000001"));
        assert_non_null(strstr(r.error_message, "stream was cut"));
        wire_result_release(&r);
        sse_parser_free(p);
        buf_release(&b);
    }
    struct buf b = BUF_INIT;
    assert_int_equal(faults_stream_cut(&b, WIRE_API_OPENAI_CHAT, 200, "c", 0), ERR_INVALID);
    assert_int_equal(faults_message(&b, "k", NULL, NULL), 0);
    assert_string_equal(b.data, "faultline injected k");
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trim_anthropic),
        cmocka_unit_test(test_trim_anthropic_system_role_entries),
        cmocka_unit_test(test_trim_chat),
        cmocka_unit_test(test_trim_responses),
        cmocka_unit_test(test_trim_errors),
        cmocka_unit_test(test_model_degrade),
        cmocka_unit_test(test_error_bodies_carry_canary),
        cmocka_unit_test(test_stream_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
