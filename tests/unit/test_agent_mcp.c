/* Unit tests for src/agent/mcpclient (result text, a scripted server: paging, JSON-RPC errors,
 * a server that dies) and the agent's tool naming and step-line text (src/agent/agent.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent.h"
#include "agent/mcpclient.h"
#include "util/buf.h"
#include "util/banned.h"

static void result_text(const char *json, const char *want, int want_error)
{
    json_t *r = json_loads(json, 0, NULL);
    struct buf b = BUF_INIT;
    int is_error = -1;

    assert_non_null(r);
    mcpclient_result_text(r, &b, &is_error);
    assert_string_equal(b.data, want);
    assert_int_equal(is_error, want_error);
    buf_release(&b);
    json_decref(r);
}

static void test_result_text(void **state)
{
    result_text("{\"content\":[{\"type\":\"text\",\"text\":\"72F\"}],\"isError\":false}", "72F", 0);
    result_text("{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}],"
                "\"isError\":true}",
                "a\nb", 1);
    result_text("{\"content\":[{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"},"
                "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///x\",\"text\":\"body\"}},"
                "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///b\",\"blob\":\"AA\"}},"
                "{\"type\":\"resource_link\",\"uri\":\"file:///l\"},{\"type\":\"audio\"},"
                "{\"type\":\"weird\"},{}]}",
                "[image image/png, 4 bytes of base64]\nbody\n[resource file:///b]\n"
                "[resource link file:///l]\n[audio ?, 0 bytes of base64]\n[weird content]\n"
                "[content item without a type]",
                0);
    result_text("{\"content\":[],\"structuredContent\":{\"t\":22.5}}", "{\"t\":22.5}", 0);
    result_text("{}", "", 0);
}

static void test_tool_names(void **state)
{
    char n[AGENT_NAME_MAX + 1];

    agent_mcp_tool_name("fs", "read_file", n, sizeof(n));
    assert_string_equal(n, "mcp__fs__read_file");
    agent_mcp_tool_name("everything", "get-sum", n, sizeof(n));
    assert_string_equal(n, "mcp__everything__get-sum");
    agent_mcp_tool_name("s", "a.b/c d\xc3\xa9", n, sizeof(n));
    assert_string_equal(n, "mcp__s__a_b_c_d__");
    agent_mcp_tool_name("server", "a_very_long_tool_name_that_goes_on_and_on_and_on_forever_x",
                        n, sizeof(n));
    assert_int_equal(strlen(n), AGENT_NAME_MAX);
    assert_int_equal(strncmp(n, "mcp__server__a_very_long", 24), 0);
}

static void test_line_text(void **state)
{
    struct buf b = BUF_INIT;

    agent_line_text(&b, "a\nb\tc\x01", 6, 100);
    assert_string_equal(b.data, "a b c ");
    buf_reset(&b);
    agent_line_text(&b, "abcdef", 6, 3);
    assert_string_equal(b.data, "abc...");
    buf_reset(&b);
    /* never cuts inside a UTF-8 sequence: "é" is 2 bytes at offset 2 */
    agent_line_text(&b, "ab\xc3\xa9z", 5, 3);
    assert_string_equal(b.data, "ab...");
    buf_release(&b);
}

/* A server written in sh: answers initialize, two pages of tools/list, then a JSON-RPC error
 * for tools/call, then exits with a message on stderr. Ids are the client's: 1, 2, 3, 4. */
static const char scripted[] =
    "read l; case \"$l\" in *'\"initialize\"'*'2025-06-18'*) ;; *) exit 9;; esac; "
    "echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\","
    "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"sh\",\"version\":\"0\"}}}'; "
    "read l; read l; "
    "echo '{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}'; "
    "echo '{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"a\"},{\"x\":1}],"
    "\"nextCursor\":\"p2\"}}'; "
    "read l; case \"$l\" in *'\"cursor\":\"p2\"'*) ;; *) exit 8;; esac; "
    "echo '{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[{\"name\":\"b\"}]}}'; "
    "read l; echo '{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32602,"
    "\"message\":\"Unknown tool: zz\"}}'; "
    "read l; echo 'going away' >&2; exit 5";

static void test_scripted_server(void **state)
{
    struct mcpclient_opts o = {.name = "sh", .command = scripted, .timeout_ms = 5000};
    struct err e = {0};
    struct buf text = BUF_INIT;
    int is_error;
    struct mcpclient *c = mcpclient_start(&o, &e);

    if (c == NULL)
        fail_msg("start: %s", e.msg);
    assert_string_equal(mcpclient_name(c), "sh");
    assert_string_equal(mcpclient_server_info(c), "sh 0");
    const json_t *tools = mcpclient_tools(c);
    assert_int_equal(json_array_size(tools), 2); /* the nameless one is skipped */
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 1), "name")), "b");

    assert_int_equal(mcpclient_call(c, "zz", NULL, 2000, &text, &is_error, &e), ERR_PROTO);
    assert_string_equal(e.msg, "MCP error -32602: Unknown tool: zz");

    err_clear(&e);
    assert_int_equal(mcpclient_call(c, "a", NULL, 2000, &text, &is_error, &e), ERR_IO);
    assert_non_null(strstr(e.msg, "closed its output (exited with status 5; stderr: going away)"));
    mcpclient_free(c);
    buf_release(&text);

    /* a command that does not speak MCP at all */
    struct mcpclient_opts o2 = {.name = "x", .command = "echo hello; sleep 5", .timeout_ms = 500};
    err_clear(&e);
    assert_null(mcpclient_start(&o2, &e));
    assert_int_equal(e.code, ERR_TIMEOUT);
    assert_non_null(strstr(e.msg, "no answer to initialize within 500 ms"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_text),
        cmocka_unit_test(test_tool_names),
        cmocka_unit_test(test_line_text),
        cmocka_unit_test(test_scripted_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
