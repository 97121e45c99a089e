/* Unit tests for src/model/mockscript and mock_handle: script loading and its errors, the
 * conversation view per API, rule matching, templates, and the rendered answers (checked by
 * reading them back with the wire readers, so the mock and the proxy's accounting agree). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/mock.h"
#include "model/mockscript.h"
#include "codec/sse.h"
#include "codec/wire.h"
#include "helpers.h"
#include "util/banned.h"

static struct mockscript *parse_ok(const char *y)
{
    struct err e = {0};
    struct mockscript *s = mockscript_parse(y, strlen(y), "s.yaml", &e);
    if (s == NULL)
        fail_msg("script did not load: %s", e.msg);
    return s;
}

static void expect_bad(const char *y, const char *needle)
{
    struct err e = {0};
    struct mockscript *s = mockscript_parse(y, strlen(y), "s.yaml", &e);
    if (s != NULL)
        fail_msg("script loaded but should not: %s", y);
    if (strstr(e.msg, needle) == NULL)
        fail_msg("'%s' not in '%s'", needle, e.msg);
}

static void test_load_errors(void **state)
{
    expect_bad("rules:\n  - reply: {text: hi}\n    whne: {}\n", "s.yaml:3:5: unknown key 'whne'");
    expect_bad("rules:\n  - when: {frist_turn: true}\n    reply: {}\n",
               "s.yaml:2:12: unknown condition 'frist_turn'");
    expect_bad("rules:\n  - when: {first_turn: 1}\n    reply: {}\n",
               "s.yaml:2:24: 'first_turn' must be true or false");
    expect_bad("rules:\n  - when: {text_matches: \"(\"}\n    reply: {}\n",
               "bad regular expression '('");
    expect_bad("rules:\n  - reply: {text: \"{{last_tool_reslt}}\"}\n",
               "s.yaml:2:19: unknown template '{{last_tool_reslt}}'");
    expect_bad("rules:\n  - reply: {text: \"{{match.1}}\"}\n", "needs exactly one '*_matches'");
    expect_bad("rules:\n  - reply: {error: {status: 200}}\n", "'status' must be a number in 400..599");
    expect_bad("rules:\n  - reply: {tool_calls: [{input: {}}]}\n", "needs a 'name' string");
    expect_bad("rules:\n  - reply: {tool_calls: [{name: x, input: {a: \"{{nope}}\"}}]}\n",
               "unknown template '{{nope}}'");
    expect_bad("rules:\n  - when: {api: grpc}\n    reply: {}\n", "unknown api 'grpc'");
    expect_bad("rules:\n  - when: {turn: -1}\n    reply: {}\n", "non-negative integer");
    expect_bad("rules:\n  - when: {}\n", "a rule needs a 'reply'");
    expect_bad("name: x\n", "a script needs a 'rules' list");
    expect_bad("- a\n", "a script is a mapping");
    expect_bad("rules: []\nerror_pattern: \"[\"\n", "bad regular expression");
    expect_bad("rules: []\nerror_pattern: \"a+++++++++++\"\n", "stacked repetition");
    expect_bad("rules: []\nerror_pattern: \"a{2}{3}\"\n", "stacked repetition");
    expect_bad("rules: []\nerror_pattern: \"a{1,30000}\"\n", "bound over 100");
    expect_bad("rules: []\nerror_pattern: \"(a)\\\\1\"\n", "back-references");
    expect_bad("rules: []\nerror_pattern: \"((((a{1,100}){1,100}){1,100}){1,100})\"\n",
               "nested repetitions multiply to 10000 copies (more than 1000)");
    expect_bad("rules: []\nerror_pattern: \"((((((a{1,255}){1,255}){1,255}){1,255}){1,255}){1,255})\"\n",
               "bound over 100");
    expect_bad("rules: []\nfallback: {text: \"{{match.0}}\"}\n", "the fallback has no condition");
    expect_bad("rules: [\n", "s.yaml:2:1:");
    expect_bad("a: &x 1\nrules: *x\n", "aliases");
    expect_bad("rules:\n  - reply: {usage: {output_tokens: -2}}\n", "'output_tokens' must be a count");

    struct mockscript *ok = parse_ok("rules: []\nerror_pattern: \"\\\\++|[]+*?{]+|[[:digit:]]{1,9}x?|a*b\"\n");
    mockscript_free(ok);

    struct err e = {0};
    assert_null(mockscript_load("/nonexistent/x.yaml", &e));
    assert_int_equal(e.code, ERR_IO);
}

static void test_view_anthropic(void **state)
{
    struct mockscript *s = parse_ok("rules: []\n");
    struct mockscript_view v;
    json_t *req = ut_json(
        "{\"model\":\"m1\",\"tools\":[{\"name\":\"Bash\"},{\"name\":\"Read\"}],\"messages\":["
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"reminder\"},{\"type\":"
        "\"text\",\"text\":\"do it\"}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":"
        "\"Bash\",\"input\":{\"command\":\"ls\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\","
        "\"content\":\"fine E-FAULTLINE-00112233\"}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":"
        "\"Read\",\"input\":{\"path\":\"x\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t2\","
        "\"is_error\":true,\"content\":[{\"type\":\"text\",\"text\":\"boom\"}]}]}]}");
    assert_int_equal(mockscript_view_init(&v, s, WIRE_API_ANTHROPIC_MESSAGES, req, NULL), 0);
    assert_string_equal(v.model, "m1");
    assert_int_equal(v.turn, 2);
    assert_int_equal(v.tool_results, 2);
    assert_true(v.last_result_error);
    assert_string_equal(v.last_result.data, "boom");
    assert_string_equal(v.last_user.data, "reminder\ndo it");
    assert_string_equal(v.all_results.data, "fine E-FAULTLINE-00112233\nboom");
    assert_string_equal(v.canary, "E-FAULTLINE-00112233");
    assert_int_equal(json_array_size(v.offered), 2);
    assert_string_equal(json_string_value(json_object_get(v.last_call, "name")), "Read");
    mockscript_view_release(&v);
    json_decref(req);

    req = ut_json("{\"messages\":{}}");
    struct err e = {0};
    assert_int_equal(mockscript_view_init(&v, s, WIRE_API_ANTHROPIC_MESSAGES, req, &e),
                     ERR_INVALID);
    mockscript_view_release(&v);
    json_decref(req);
    mockscript_free(s);
}

static void test_view_openai(void **state)
{
    struct mockscript *s = parse_ok("rules: []\nerror_pattern: \"code [1-9]\"\n");
    struct mockscript_view v;
    json_t *chat = ut_json(
        "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"shell\"}}],\"messages\":["
        "{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":"
        "\"function\",\"function\":{\"name\":\"shell\",\"arguments\":\"{\\\"command\\\":"
        "\\\"ls\\\"}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"exit code 2\"}"
        "]}");
    assert_int_equal(mockscript_view_init(&v, s, WIRE_API_OPENAI_CHAT, chat, NULL), 0);
    assert_int_equal(v.turn, 1);
    assert_true(v.last_result_error); /* by the script's error_pattern */
    assert_string_equal(v.last_user.data, "go");
    assert_string_equal(json_string_value(json_array_get(v.offered, 0)), "shell");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(v.last_call, "input"), "command")),
        "ls");
    mockscript_view_release(&v);
    json_decref(chat);

    json_t *resp = ut_json(
        "{\"tools\":[{\"type\":\"function\",\"name\":\"exec_command\"},{\"type\":\"web_search\"}],"
        "\"input\":[{\"type\":\"message\",\"role\":\"developer\",\"content\":\"env\"},"
        "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":"
        "\"hi\"}]},{\"type\":\"reasoning\",\"summary\":[]},{\"type\":\"function_call\",\"call_id\":"
        "\"k\",\"name\":\"exec_command\",\"arguments\":\"{\\\"cmd\\\":\\\"ls\\\"}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"k\",\"output\":\"all good\"},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
        "\"text\":\"ok\"}]},{\"type\":\"message\",\"role\":\"user\",\"content\":\"again\"}]}");
    assert_int_equal(mockscript_view_init(&v, s, WIRE_API_OPENAI_RESPONSES, resp, NULL), 0);
    assert_int_equal(v.turn, 2); /* reasoning+call is one turn, the assistant message another */
    assert_int_equal(v.tool_results, 1);
    assert_false(v.last_result_error);
    assert_string_equal(v.last_user.data, "again");
    assert_string_equal(v.user_text.data, "hi\nagain");
    assert_int_equal(json_array_size(v.offered), 2);
    assert_string_equal(json_string_value(json_array_get(v.offered, 1)), "web_search");
    mockscript_view_release(&v);
    json_decref(resp);

    json_t *str = ut_json("{\"input\":\"just text\"}");
    assert_int_equal(mockscript_view_init(&v, s, WIRE_API_OPENAI_RESPONSES, str, NULL), 0);
    assert_int_equal(v.turn, 0);
    assert_string_equal(v.last_user.data, "just text");
    mockscript_view_release(&v);
    json_decref(str);
    mockscript_free(s);
}

/* Renders the reply of script y to an Anthropic request. */
static void reply_for(const char *y, const char *req_json, struct mockscript_reply *r)
{
    struct mockscript *s = parse_ok(y);
    struct mockscript_view v;
    json_t *req = ut_json(req_json);
    assert_int_equal(mockscript_view_init(&v, s, WIRE_API_ANTHROPIC_MESSAGES, req, NULL), 0);
    mockscript_reply_init(r);
    assert_int_equal(mockscript_reply(s, &v, r), 0);
    /* rule_name borrows from the script: copy what the tests look at before freeing */
    static char name[64];
    snprintf(name, sizeof(name), "%s", r->rule_name);
    r->rule_name = name;
    mockscript_view_release(&v);
    json_decref(req);
    mockscript_free(s);
}

static const char *conv_err =
    "{\"model\":\"mx\",\"tools\":[{\"name\":\"Bash\"}],\"messages\":[{\"role\":\"user\","
    "\"content\":\"please run `make test` now\"},{\"role\":\"assistant\",\"content\":[{\"type\":"
    "\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{\"command\":\"make test\"}}]},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\","
    "\"is_error\":true,\"content\":\"Exit code 2 E-FAULTLINE-abcdef01\"}]}]}";

static void test_rules_and_templates(void **state)
{
    struct mockscript_reply r;
    const char *y =
        "rules:\n"
        "  - name: never\n"
        "    when: {first_turn: true}\n"
        "    reply: {text: no}\n"
        "  - name: not-this-api\n"
        "    when: {api: [chat, responses]}\n"
        "    reply: {text: no}\n"
        "  - name: missing-tool\n"
        "    when: {tool_offered: exec_command}\n"
        "    reply: {text: no}\n"
        "  - name: hit\n"
        "    when: {turn: 1, min_turn: 1, max_turn: 1, tool_offered: [x, Bash],\n"
        "           tool_not_offered: shell, last_tool_result_error: true,\n"
        "           text_matches: \"run `([^`]+)`\", model_contains: mx,\n"
        "           last_tool_result_contains: \"Exit code\", has_tool_result: true}\n"
        "    reply:\n"
        "      text: \"{{ turn }}|{{model}}|{{match.1}}|{{canary}}|{{last_tool_name}}|"
        "{{tool_result_count}}|{{last_tool_result}}\"\n"
        "      tool_calls: [{name: Bash, input: {command: \"echo '{{match.1}}'\", n: 3}}]\n"
        "      repeat_last_tool_call: true\n";
    reply_for(y, conv_err, &r);
    assert_int_equal(r.rule, 3);
    assert_string_equal(r.rule_name, "hit");
    assert_string_equal(r.text.data,
                        "1|mx|make test|E-FAULTLINE-abcdef01|Bash|1|Exit code 2 E-FAULTLINE-abcdef01");
    assert_int_equal(json_array_size(r.tool_calls), 2);
    json_t *c0 = json_array_get(r.tool_calls, 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(c0, "input"), "command")),
                        "echo 'make test'");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c0, "input"), "n")), 3);
    json_t *c1 = json_array_get(r.tool_calls, 1); /* the repeated last call */
    assert_string_equal(json_string_value(json_object_get(json_object_get(c1, "input"), "command")),
                        "make test");
    assert_int_equal(r.error_status, 0);
    assert_false(r.has_usage);
    mockscript_reply_release(&r);

    /* no rule, no fallback */
    reply_for("rules: [{when: {first_turn: true}, reply: {text: x}}]\n", conv_err, &r);
    assert_int_equal(r.rule, -1);
    assert_string_equal(r.text.data, "mock-model: no rule matched (turn 1)");
    mockscript_reply_release(&r);
    /* fallback with an error and usage */
    reply_for("rules: []\nfallback: {error: {status: 503, message: \"down {{turn}}\"},"
              " usage: {output_tokens: 7}}\n",
              conv_err, &r);
    assert_int_equal(r.error_status, 503);
    assert_string_equal(r.error_message.data, "down 1");
    assert_true(r.has_usage);
    assert_int_equal(r.usage_output, 7);
    assert_int_equal(r.usage_input, -1);
    mockscript_reply_release(&r);
}

static void test_echo_is_capped(void **state)
{
    struct buf req = BUF_INIT;
    struct mockscript_reply r;
    buf_adds(&req, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
                   "\"tool_use_id\":\"x\",\"content\":\"");
    for (int i = 0; i < MOCKSCRIPT_ECHO_MAX + 500; i++)
        buf_addc(&req, 'a' + i % 26);
    buf_adds(&req, "\"}]}]}");
    reply_for("rules: [{reply: {text: \"<{{last_tool_result}}>\"}}]\n", req.data, &r);
    assert_int_equal(r.text.len, MOCKSCRIPT_ECHO_MAX + 5);
    assert_memory_equal(r.text.data + r.text.len - 4, "...>", 4);
    mockscript_reply_release(&r);
    buf_release(&req);
}

static const char *script_yaml =
    "name: unit\n"
    "rules:\n"
    "  - name: call\n"
    "    when: {first_turn: true, tool_offered: shell}\n"
    "    reply: {text: \"Calling \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 now.\", tool_calls: [{name: shell, input: "
    "{command: \"echo 0123456789012345678901234567890123456789\"}}]}\n"
    "  - name: fail\n"
    "    when: {last_user_text_contains: \"fail please\"}\n"
    "    reply: {error: {status: 429, message: \"slow {{turn}}\"}}\n"
    "fallback: {text: \"hello\"}\n";

static const char *req_for(enum wire_api api, int stream)
{
    static char b[1024];
    const char *st = stream ? "true" : "false";
    switch (api) {
    case WIRE_API_ANTHROPIC_MESSAGES:
        snprintf(b, sizeof(b),
                 "{\"model\":\"claude-haiku-4-5\",\"stream\":%s,\"tools\":[{\"name\":\"shell\"}],"
                 "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                 st);
        break;
    case WIRE_API_OPENAI_CHAT:
        snprintf(b, sizeof(b),
                 "{\"model\":\"gpt-5.4\",\"stream\":%s,\"stream_options\":{\"include_usage\":true},"
                 "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"shell\"}}],"
                 "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                 st);
        break;
    default:
        snprintf(b, sizeof(b),
                 "{\"model\":\"gpt-5.5\",\"stream\":%s,\"tools\":[{\"type\":\"function\","
                 "\"name\":\"shell\"}],\"input\":\"hi\"}",
                 st);
        break;
    }
    return b;
}

static const char *path_for(enum wire_api api)
{
    return api == WIRE_API_ANTHROPIC_MESSAGES ? "/v1/messages?beta=true"
           : api == WIRE_API_OPENAI_CHAT      ? "/v1/chat/completions"
                                              : "/v1/responses";
}

/* Every API, stream or not: the wire readers see what the mock says it answered. */
static void test_answers_read_back(void **state)
{
    static const enum wire_api apis[] = {WIRE_API_ANTHROPIC_MESSAGES, WIRE_API_OPENAI_CHAT,
                                         WIRE_API_OPENAI_RESPONSES};
    struct mockscript *s = parse_ok(script_yaml);
    const char *text = "Calling \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 now.";
    const char *args = "{\"command\":\"echo 0123456789012345678901234567890123456789\"}";
    int64_t out_tokens = mockscript_tokens(strlen(text) + strlen("shell") + strlen(args));

    for (int i = 0; i < 3; i++) {
        for (int stream = 0; stream < 2; stream++) {
            struct mock_answer a;
            struct wire_result r;
            const char *body = req_for(apis[i], stream);
            size_t blen = strlen(body);
            mock_answer_init(&a);
            assert_int_equal(mock_handle(s, "POST", path_for(apis[i]), body, blen,
                                         WIRE_PROVIDER_NONE, &a),
                             0);
            assert_int_equal(a.status, 200);
            assert_int_equal(a.is_sse, stream);
            assert_int_equal(a.rule, 0);
            assert_string_equal(a.rule_name, "call");
            assert_int_equal(a.usage.input_tokens, mockscript_tokens(blen));
            assert_int_equal(a.usage.output_tokens, out_tokens);
            wire_result_init(&r);
            if (stream) {
                struct sse_parser *p = sse_parser_new(0, 0);
                struct sse_event ev;
                size_t n = 0;
                assert_string_equal(a.content_type, "text/event-stream");
                assert_int_equal(sse_parser_feed(p, a.body.data, a.body.len), 0);
                while (sse_parser_next(p, &ev, NULL) == 1) {
                    assert_int_equal(wire_result_stream_event(apis[i], &r, &ev, NULL), 0);
                    /* Anthropic and Responses events are named; chat's are not */
                    assert_true((ev.event_len > 0) == (apis[i] != WIRE_API_OPENAI_CHAT));
                    n++;
                }
                assert_int_equal(sse_parser_pending(p), 0);
                assert_true(n > 6);
                sse_parser_free(p);
            } else {
                assert_int_equal(
                    wire_result_from_body(apis[i], a.body.data, a.body.len, &r, NULL), 0);
            }
            assert_true(r.complete);
            assert_false(r.error);
            assert_string_equal(r.text.data, text);
            assert_int_equal(r.tool_calls, 1);
            assert_true(r.usage.present);
            assert_int_equal(r.usage.input_tokens, a.usage.input_tokens);
            assert_int_equal(r.usage.output_tokens, a.usage.output_tokens);
            assert_string_equal(r.model, a.model);
            /* determinism: the same request renders byte for byte the same */
            struct mock_answer b;
            mock_answer_init(&b);
            mock_handle(s, "POST", path_for(apis[i]), body, blen, WIRE_PROVIDER_NONE, &b);
            assert_int_equal(a.body.len, b.body.len);
            assert_memory_equal(a.body.data, b.body.data, a.body.len);
            mock_answer_release(&b);
            wire_result_release(&r);
            mock_answer_release(&a);
        }
    }
    mockscript_free(s);
}

/* Codex's client-side tool search: a tool call named tool_search becomes a tool_search_call
 * item (arguments an object); the namespaces a tool_search_output loads are offered as
 * NS__NAME, and a call to one becomes a function_call with that namespace. */
static const char *search_yaml =
    "rules:\n"
    "  - name: search\n"
    "    when: {first_turn: true, tool_offered: tool_search}\n"
    "    reply: {tool_calls: [{name: tool_search, input: {query: echo}}]}\n"
    "  - name: call\n"
    "    when: {tool_offered: mcp__fake__echo, has_tool_result: false}\n"
    "    reply: {tool_calls: [{name: mcp__fake__echo, input: {message: hi}}]}\n"
    "  - name: report\n"
    "    when: {has_tool_result: true}\n"
    "    reply: {text: \"said {{last_tool_result}} {{canary}}\"}\n";

#define SEARCH_TOOLS                                                                               \
    "\"tools\":[{\"type\":\"function\",\"name\":\"exec_command\"},{\"type\":\"tool_search\","      \
    "\"execution\":\"client\",\"parameters\":{}}]"
#define SEARCH_CALL                                                                                \
    "{\"type\":\"tool_search_call\",\"id\":\"ts\",\"call_id\":\"c1\",\"status\":\"completed\","    \
    "\"execution\":\"client\",\"arguments\":{\"query\":\"echo\"}},"                                \
    "{\"type\":\"tool_search_output\",\"call_id\":\"c1\",\"status\":\"completed\","                \
    "\"execution\":\"client\",\"tools\":[{\"type\":\"namespace\",\"name\":\"mcp__fake\","          \
    "\"description\":\"d\",\"tools\":[{\"type\":\"function\",\"name\":\"echo\","                   \
    "\"defer_loading\":true,\"parameters\":{}}]}]}"

static void search_answer(struct mockscript *s, const char *body, int stream, const char *rule,
                          json_t **item)
{
    struct mock_answer a;
    json_t *resp;

    mock_answer_init(&a);
    assert_int_equal(
        mock_handle(s, "POST", "/v1/responses", body, strlen(body), WIRE_PROVIDER_NONE, &a), 0);
    assert_int_equal(a.status, 200);
    assert_string_equal(a.rule_name, rule);
    if (stream) {
        /* The item comes whole in output_item.done; the completed response repeats it. */
        const char *done = strstr(a.body.data, "event: response.completed\ndata: ");
        assert_non_null(done);
        resp = ut_json(done + strlen("event: response.completed\ndata: "));
        *item = json_incref(
            json_array_get(json_object_get(json_object_get(resp, "response"), "output"), 0));
    } else {
        resp = ut_json(a.body.data);
        *item = json_incref(json_array_get(json_object_get(resp, "output"), 0));
    }
    json_decref(resp);
    mock_answer_release(&a);
}

static void test_codex_tool_search(void **state)
{
    struct mockscript *s = parse_ok(search_yaml);
    struct mockscript_view v;
    json_t *item;
    char body[4096];

    for (int stream = 0; stream < 2; stream++) {
        const char *st = stream ? "true" : "false";
        /* 1: only tool_search is offered: the mock searches. */
        snprintf(body, sizeof(body),
                 "{\"stream\":%s," SEARCH_TOOLS ",\"input\":[{\"type\":\"message\",\"role\":"
                 "\"user\",\"content\":\"use echo\"}]}",
                 st);
        search_answer(s, body, stream, "search", &item);
        assert_string_equal(json_string_value(json_object_get(item, "type")), "tool_search_call");
        assert_string_equal(json_string_value(json_object_get(item, "execution")), "client");
        assert_string_equal(json_string_value(json_object_get(item, "status")), "completed");
        assert_non_null(json_string_value(json_object_get(item, "call_id")));
        ut_assert_json(json_object_get(item, "arguments"), "{\"query\":\"echo\"}");
        json_decref(item);
        /* 2: the search loaded mcp__fake: echo is called in that namespace. */
        snprintf(body, sizeof(body),
                 "{\"stream\":%s," SEARCH_TOOLS ",\"input\":[{\"type\":\"message\",\"role\":"
                 "\"user\",\"content\":\"use echo\"}," SEARCH_CALL "]}",
                 st);
        search_answer(s, body, stream, "call", &item);
        assert_string_equal(json_string_value(json_object_get(item, "type")), "function_call");
        assert_string_equal(json_string_value(json_object_get(item, "namespace")), "mcp__fake");
        assert_string_equal(json_string_value(json_object_get(item, "name")), "echo");
        assert_string_equal(json_string_value(json_object_get(item, "arguments")),
                            "{\"message\":\"hi\"}");
        json_decref(item);
    }

    /* 3: the result comes back; the view names the namespaced call as Codex does. */
    json_t *req = ut_json(
        "{" SEARCH_TOOLS ",\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":"
        "\"use echo\"}," SEARCH_CALL ",{\"type\":\"function_call\",\"call_id\":\"c2\","
        "\"namespace\":\"mcp__fake\",\"name\":\"echo\",\"arguments\":\"{\\\"message\\\":\\\"hi\\\"}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"c2\",\"output\":[{\"type\":"
        "\"input_text\",\"text\":\"Output:\"},{\"type\":\"input_text\",\"text\":\"down "
        "E-FAULTLINE-0badc0de\"}]}]}");
    assert_int_equal(mockscript_view_init(&v, s, WIRE_API_OPENAI_RESPONSES, req, NULL), 0);
    assert_true(v.client_tool_search);
    assert_int_equal(v.turn, 2);         /* the search and the call: two answers of the model */
    assert_int_equal(v.tool_results, 1); /* a tool_search_output is not a tool result */
    assert_string_equal(json_string_value(json_object_get(v.last_call, "name")), "mcp__fake__echo");
    assert_string_equal(json_string_value(json_array_get(v.offered, 2)), "mcp__fake__echo");
    assert_string_equal(v.last_result.data, "Output:\ndown E-FAULTLINE-0badc0de");
    assert_string_equal(v.canary, "E-FAULTLINE-0badc0de");
    mockscript_view_release(&v);
    json_decref(req);

    /* A server-side tool_search (no "execution": "client") is not turned into items. */
    req = ut_json("{\"tools\":[{\"type\":\"tool_search\"}],\"input\":\"x\"}");
    assert_int_equal(mockscript_view_init(&v, s, WIRE_API_OPENAI_RESPONSES, req, NULL), 0);
    assert_false(v.client_tool_search);
    mockscript_view_release(&v);
    json_decref(req);
    mockscript_free(s);
}

static void test_routes_and_errors(void **state)
{
    struct mockscript *s = parse_ok(script_yaml);
    struct mock_answer a;
    mock_answer_init(&a);

    mock_handle(s, "HEAD", "/", NULL, 0, WIRE_PROVIDER_ANTHROPIC, &a);
    assert_int_equal(a.status, 200);
    mock_handle(s, "GET", "/v1/models", NULL, 0, WIRE_PROVIDER_OPENAI, &a);
    assert_int_equal(a.status, 200);
    assert_non_null(strstr(a.body.data, "\"id\":\"mock-model\""));

    mock_handle(s, "GET", "/v2/x", NULL, 0, WIRE_PROVIDER_OPENAI, &a);
    assert_int_equal(a.status, 404);
    assert_non_null(strstr(a.body.data, "{\"error\":{\"message\":\"no route for GET /v2/x\""));
    mock_handle(s, "GET", "/v2/x", NULL, 0, WIRE_PROVIDER_ANTHROPIC, &a);
    assert_non_null(strstr(a.body.data, "\"type\":\"not_found_error\""));

    mock_handle(s, "GET", "/v1/chat/completions", NULL, 0, WIRE_PROVIDER_ANTHROPIC, &a);
    assert_int_equal(a.status, 405);
    assert_non_null(strstr(a.body.data, "{\"error\":")); /* the path says OpenAI */

    mock_handle(s, "POST", "/v1/messages", "{\"messages\": [", 14, WIRE_PROVIDER_NONE, &a);
    assert_int_equal(a.status, 400);
    assert_non_null(strstr(a.body.data, "invalid_request_error"));
    assert_non_null(strstr(a.body.data, "invalid JSON at line 1"));
    mock_handle(s, "POST", "/v1/messages", "{\"stream\": 1}", 13, WIRE_PROVIDER_NONE, &a);
    assert_int_equal(a.status, 400);
    assert_non_null(strstr(a.body.data, "'stream' is not a boolean"));
    mock_handle(s, "POST", "/v1/responses", "{\"model\": \"m\"}", 14, WIRE_PROVIDER_NONE, &a);
    assert_int_equal(a.status, 400);
    mock_handle(s, "POST", "/v1/messages", NULL, 0, WIRE_PROVIDER_NONE, &a);
    assert_int_equal(a.status, 400);

    const char *ct = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
    mock_handle(s, "POST", "/v1/messages/count_tokens?beta=true", ct, strlen(ct),
                WIRE_PROVIDER_NONE, &a);
    assert_int_equal(a.status, 200);
    char want[64];
    snprintf(want, sizeof(want), "{\"input_tokens\":%lld}",
             (long long)mockscript_tokens(strlen(ct)));
    assert_string_equal(a.body.data, want);

    const char *f = "{\"model\":\"gpt-5.4\",\"stream\":true,\"messages\":[{\"role\":\"user\","
                    "\"content\":\"fail please\"}]}";
    mock_handle(s, "POST", "/v1/chat/completions", f, strlen(f), WIRE_PROVIDER_NONE, &a);
    assert_int_equal(a.status, 429);
    assert_false(a.is_sse);
    assert_string_equal(a.body.data, "{\"error\":{\"message\":\"slow 0\",\"type\":\"requests\","
                                     "\"param\":null,\"code\":\"rate_limit_exceeded\"}}");
    mock_answer_release(&a);
    mockscript_free(s);
}

static void test_fixtures_load(void **state)
{
    static const char *const names[] = {"resilient", "naive", "obedient", "stubborn"};
    const char *root = getenv("FAULTLINE_ROOT");
    for (int i = 0; i < 4; i++) {
        char path[4096];
        struct err e = {0};
        snprintf(path, sizeof(path), "%s/examples/models/%s.yaml", root ? root : ".", names[i]);
        struct mockscript *s = mockscript_load(path, &e);
        if (s == NULL)
            fail_msg("%s", e.msg);
        assert_string_equal(mockscript_name(s), names[i]);
        mockscript_free(s);
    }
}

/* stubborn repeats the failed call; resilient echoes the canary; naive does not. */
static void test_fixture_behaviour(void **state)
{
    const char *root = getenv("FAULTLINE_ROOT");
    static const char *const names[] = {"stubborn", "resilient", "naive"};
    for (int i = 0; i < 3; i++) {
        char path[4096];
        struct mockscript_view v;
        struct mockscript_reply r;
        snprintf(path, sizeof(path), "%s/examples/models/%s.yaml", root ? root : ".", names[i]);
        struct mockscript *s = mockscript_load(path, NULL);
        assert_non_null(s);
        json_t *req = ut_json(conv_err);
        assert_int_equal(mockscript_view_init(&v, s, WIRE_API_ANTHROPIC_MESSAGES, req, NULL), 0);
        mockscript_reply_init(&r);
        mockscript_reply(s, &v, &r);
        if (i == 0) {
            assert_int_equal(json_array_size(r.tool_calls), 1);
            assert_true(json_equal(json_array_get(r.tool_calls, 0), v.last_call));
        } else if (i == 1) {
            assert_int_equal(json_array_size(r.tool_calls), 0);
            assert_non_null(strstr(r.text.data, "FAILED"));
            assert_non_null(strstr(r.text.data, "E-FAULTLINE-abcdef01"));
        } else {
            assert_null(strstr(r.text.data, "E-FAULTLINE"));
        }
        mockscript_reply_release(&r);
        mockscript_view_release(&v);
        json_decref(req);
        mockscript_free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_errors),       cmocka_unit_test(test_view_anthropic),
        cmocka_unit_test(test_view_openai),       cmocka_unit_test(test_rules_and_templates),
        cmocka_unit_test(test_echo_is_capped),    cmocka_unit_test(test_answers_read_back),
        cmocka_unit_test(test_routes_and_errors), cmocka_unit_test(test_fixtures_load),
        cmocka_unit_test(test_fixture_behaviour), cmocka_unit_test(test_codex_tool_search),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
