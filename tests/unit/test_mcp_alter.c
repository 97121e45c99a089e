/* Unit tests for src/mcp/alter: the JSON transformations behind the MCP faults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/jsonrpc.h"
#include "mcp/alter.h"
#include "helpers.h"
#include "util/err.h"
#include "util/banned.h"

static void test_text_result_and_canary(void **state)
{
    struct buf b = BUF_INIT;
    json_t *r;

    mcp_alter_canary_text(&b, "boom", "E-FAULTLINE-00000001");
    assert_string_equal(b.data, "boom [E-FAULTLINE-00000001]");
    buf_reset(&b);
    mcp_alter_canary_text(&b, "boom", NULL);
    assert_string_equal(b.data, "boom");
    r = mcp_alter_text_result("x \"y\"", 1, 0);
    ut_assert_json(r,
                   "{\"content\":[{\"type\":\"text\",\"text\":\"x \\\"y\\\"\"}],\"isError\":true}");
    json_decref(r);
    r = mcp_alter_text_result("ok", 0, 1);
    ut_assert_json(r, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"isError\":false,"
                      "\"resultType\":\"complete\"}");
    json_decref(r);
    buf_release(&b);
}

static void test_omit(void **state)
{
    json_t *r = ut_json("{\"content\":[{\"type\":\"text\",\"text\":\"hello\"},{\"type\":\"image\","
                        "\"data\":\"AA\"},{\"type\":\"text\",\"text\":\"world\"}],"
                        "\"structuredContent\":{\"a\":1}}");
    json_t *r2 = json_deep_copy(r);
    json_t *r3 = ut_json("{\"content\":[{\"type\":\"text\",\"text\":\"h\\u00e9llo\"}]}");

    assert_int_equal(mcp_alter_omit(r, 0, 0), 10);
    ut_assert_json(r, "{\"content\":[]}");
    /* 7 bytes: "hello" fits, the image stays, "world" is cut to "wo". */
    assert_int_equal(mcp_alter_omit(r2, 1, 7), 3);
    ut_assert_json(r2, "{\"content\":[{\"type\":\"text\",\"text\":\"hello\"},{\"type\":\"image\","
                       "\"data\":\"AA\"},{\"type\":\"text\",\"text\":\"wo\"}]}");
    /* A cut never splits a UTF-8 sequence: "h" + the first byte of "é" becomes "h". */
    mcp_alter_omit(r3, 1, 2);
    ut_assert_json(r3, "{\"content\":[{\"type\":\"text\",\"text\":\"h\"}]}");
    json_decref(r);
    json_decref(r2);
    json_decref(r3);
}

static void numbers(const char *in, enum mcp_wrong_mode mode, double by, const char *want,
                    size_t nwant)
{
    struct buf b = BUF_INIT;
    size_t n = mcp_alter_numbers_in_text(in, strlen(in), mode, by, &b);
    assert_string_equal(b.data, want);
    assert_int_equal(n, nwant);
    buf_release(&b);
}

static void test_numbers_in_text(void **state)
{
    numbers("The sum of 1 and 2 is 3.", MCP_WRONG_OFFSET, 1, "The sum of 2 and 3 is 4.", 3);
    numbers("refund 42.50 USD", MCP_WRONG_SCALE, 10, "refund 425.00 USD", 1);
    numbers("balance: -5", MCP_WRONG_OFFSET, 1, "balance: -4", 1);
    numbers("{\"amount\":7,\"id\":\"ch_123\"}", MCP_WRONG_OFFSET, 1,
            "{\"amount\":8,\"id\":\"ch_123\"}", 1);
    numbers("on 2024-01-05 at 10:30, v1.2.3, 5px, 3rd, x2", MCP_WRONG_OFFSET, 1,
            "on 2024-01-05 at 10:30, v1.2.3, 5px, 3rd, x2", 0);
    numbers("3 / 4 and 3/4", MCP_WRONG_SCALE, 2, "6 / 8 and 3/4", 2);
    numbers("7 items", MCP_WRONG_SCALE, 1.5, "10.5 items", 1);
    numbers("no digits", MCP_WRONG_OFFSET, 1, "no digits", 0);
}

static void test_wrong_data(void **state)
{
    json_t *r =
        ut_json("{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"temperature\\\":22.5}\"}],"
                "\"structuredContent\":{\"temperature\":22.5,\"n\":[1,2],\"s\":\"3 apples\","
                "\"ok\":true}}");
    json_t *t = ut_json("{\"content\":[{\"type\":\"text\",\"text\":\"status: paid, paid\"}],"
                        "\"structuredContent\":{\"status\":\"paid\"}}");

    assert_int_equal(mcp_alter_wrong_data(r, MCP_WRONG_OFFSET, 1, NULL, NULL), 5);
    ut_assert_json(r, "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"temperature\\\":23.5}\"}],"
                      "\"structuredContent\":{\"temperature\":23.5,\"n\":[2,3],\"s\":\"4 apples\","
                      "\"ok\":true}}");
    assert_int_equal(mcp_alter_wrong_data(t, MCP_WRONG_TEXT, 0, "paid", "refunded"), 3);
    ut_assert_json(t, "{\"content\":[{\"type\":\"text\",\"text\":\"status: refunded, refunded\"}],"
                      "\"structuredContent\":{\"status\":\"refunded\"}}");
    assert_int_equal(mcp_alter_wrong_data(t, MCP_WRONG_TEXT, 0, "", "x"), 0);
    json_decref(r);
    json_decref(t);
}

static void test_inject(void **state)
{
    json_t *r =
        ut_json("{\"content\":[{\"type\":\"text\",\"text\":\"a\"}],\"structuredContent\":{}}");

    enum mcp_sc_change sc = MCP_SC_MIRROR;

    assert_int_equal(mcp_alter_inject(r, "P", MCP_INJECT_APPEND, &sc), 0);
    assert_int_equal(sc, MCP_SC_UNCHANGED);
    assert_int_equal(mcp_alter_inject(r, "Q", MCP_INJECT_PREPEND, NULL), 0);
    ut_assert_json(r,
                   "{\"content\":[{\"type\":\"text\",\"text\":\"Q\"},{\"type\":\"text\",\"text\":"
                   "\"a\"},{\"type\":\"text\",\"text\":\"P\"}],\"structuredContent\":{}}");
    assert_int_equal(mcp_alter_inject(r, "R", MCP_INJECT_REPLACE, &sc), 0);
    assert_int_equal(sc, MCP_SC_REMOVED);
    ut_assert_json(r, "{\"content\":[{\"type\":\"text\",\"text\":\"R\"}]}");
    json_decref(r);
    r = json_string("x");
    assert_int_equal(mcp_alter_inject(r, "P", MCP_INJECT_APPEND, &sc), ERR_INVALID);
    assert_int_equal(sc, MCP_SC_ABSENT);
    json_decref(r);
    r = ut_json("{\"content\":[]}");
    assert_int_equal(mcp_alter_inject(r, "P", MCP_INJECT_APPEND, &sc), 0);
    assert_int_equal(sc, MCP_SC_ABSENT);
    ut_assert_json(r, "{\"content\":[{\"type\":\"text\",\"text\":\"P\"}]}");
    json_decref(r);
}

/* server-filesystem's read_text_file: structuredContent {"content": TEXT} mirrors the text item.
 * Claude Code shows its model structuredContent, so the payload must be there too. */
static void test_inject_structured_mirror(void **state)
{
    const char *in = "{\"content\":[{\"type\":\"text\",\"text\":\"n=42\"}],"
                     "\"structuredContent\":{\"content\":\"n=42\",\"size\":4}}";
    json_t *r = ut_json(in), *r2 = ut_json(in), *r3 = ut_json(in);
    enum mcp_sc_change sc = MCP_SC_ABSENT;

    assert_int_equal(mcp_alter_inject(r, "P", MCP_INJECT_APPEND, &sc), 0);
    assert_int_equal(sc, MCP_SC_MIRROR);
    ut_assert_json(r,
                   "{\"content\":[{\"type\":\"text\",\"text\":\"n=42\"},{\"type\":\"text\","
                   "\"text\":\"P\"}],\"structuredContent\":{\"content\":\"n=42\\nP\",\"size\":4}}");
    assert_int_equal(mcp_alter_inject(r2, "P", MCP_INJECT_PREPEND, &sc), 0);
    assert_int_equal(sc, MCP_SC_MIRROR);
    ut_assert_json(json_object_get(r2, "structuredContent"),
                   "{\"content\":\"P\\nn=42\",\"size\":4}");
    assert_int_equal(mcp_alter_inject(r3, "P", MCP_INJECT_REPLACE, &sc), 0);
    assert_int_equal(sc, MCP_SC_MIRROR);
    ut_assert_json(r3, "{\"content\":[{\"type\":\"text\",\"text\":\"P\"}],"
                       "\"structuredContent\":{\"content\":\"P\",\"size\":4}}");
    json_decref(r);
    json_decref(r2);
    json_decref(r3);
    /* No mirror: the first string (depth first) carries it; nested mirrors are found. */
    r = ut_json("{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"a\\\":1}\"}],"
                "\"structuredContent\":{\"n\":1,\"items\":[{\"name\":\"x\"},{\"name\":\"y\"}]}}");
    assert_int_equal(mcp_alter_inject(r, "P", MCP_INJECT_APPEND, &sc), 0);
    assert_int_equal(sc, MCP_SC_FIRST_STRING);
    ut_assert_json(json_object_get(r, "structuredContent"),
                   "{\"n\":1,\"items\":[{\"name\":\"x\\nP\"},{\"name\":\"y\"}]}");
    json_decref(r);
    r = ut_json("{\"content\":[{\"type\":\"text\",\"text\":\"t\"}],"
                "\"structuredContent\":{\"list\":[{\"body\":\"t\"}]}}");
    assert_int_equal(mcp_alter_inject(r, "P", MCP_INJECT_APPEND, &sc), 0);
    assert_int_equal(sc, MCP_SC_MIRROR);
    ut_assert_json(json_object_get(r, "structuredContent"), "{\"list\":[{\"body\":\"t\\nP\"}]}");
    json_decref(r);
    /* An empty string mirrors nothing (an empty text item is not its source). */
    r = ut_json("{\"content\":[{\"type\":\"text\",\"text\":\"\"},{\"type\":\"text\",\"text\":\"t\"}],"
                "\"structuredContent\":{\"note\":\"\",\"body\":\"t\"}}");
    assert_int_equal(mcp_alter_inject(r, "P", MCP_INJECT_APPEND, &sc), 0);
    assert_int_equal(sc, MCP_SC_MIRROR);
    ut_assert_json(json_object_get(r, "structuredContent"), "{\"note\":\"\",\"body\":\"t\\nP\"}");
    json_decref(r);
    assert_string_equal(mcp_alter_sc_name(MCP_SC_FIRST_STRING), "first_string");
    assert_string_equal(mcp_alter_sc_name(MCP_SC_UNCHANGED), "unchanged");
}

/* tool.omission keeps a text mirror in step (and structuredContent, so an outputSchema still
 * holds); without a mirror structuredContent goes. */
static void test_omit_structured_mirror(void **state)
{
    const char *in = "{\"content\":[{\"type\":\"text\",\"text\":\"hello world\"}],"
                     "\"structuredContent\":{\"content\":\"hello world\"}}";
    json_t *r = ut_json(in), *r2 = ut_json(in);

    assert_int_equal(mcp_alter_omit(r, 1, 5), 6);
    ut_assert_json(r, "{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}],"
                      "\"structuredContent\":{\"content\":\"hello\"}}");
    assert_int_equal(mcp_alter_omit(r2, 0, 0), 11);
    ut_assert_json(r2, "{\"content\":[],\"structuredContent\":{\"content\":\"\"}}");
    json_decref(r);
    json_decref(r2);
}

/* mcp.schema_violating_output: a content item that is the JSON of structuredContent follows. */
static void test_violate_json_mirror(void **state)
{
    json_t *r = ut_json("{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"unit\\\": \\\"C\\\"}\"},"
                        "{\"type\":\"text\",\"text\":\"other\"}],"
                        "\"structuredContent\":{\"unit\":\"C\"}}");
    json_t *parsed;

    assert_string_equal(mcp_alter_violate(r, NULL, MCP_VIOLATE_EXTRA, "C1"),
                        "faultline_undeclared");
    parsed = ut_json(json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")));
    ut_assert_json(parsed, "{\"unit\":\"C\",\"faultline_undeclared\":\"C1\"}");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 1), "text")),
                        "other");
    json_decref(parsed);
    json_decref(r);
}

static void test_violate(void **state)
{
    json_t *schema =
        ut_json("{\"type\":\"object\",\"properties\":{\"temperature\":{\"type\":\"number\"},"
                "\"unit\":{\"type\":\"string\"}},\"required\":[\"unit\"]}");
    json_t *r1 =
        ut_json("{\"content\":[],\"structuredContent\":{\"unit\":\"C\",\"temperature\":3}}");
    json_t *r2 = json_deep_copy(r1), *r3 = json_deep_copy(r1);
    json_t *r4 = ut_json("{\"content\":[]}");

    assert_string_equal(mcp_alter_violate(r1, schema, MCP_VIOLATE_WRONG_TYPE, "C1"), "temperature");
    ut_assert_json(json_object_get(r1, "structuredContent"),
                   "{\"unit\":\"C\",\"temperature\":\"not a number\"}");
    assert_string_equal(mcp_alter_violate(r2, schema, MCP_VIOLATE_MISSING_REQUIRED, "C1"), "unit");
    ut_assert_json(json_object_get(r2, "structuredContent"), "{\"temperature\":3}");
    assert_string_equal(mcp_alter_violate(r3, schema, MCP_VIOLATE_EXTRA, "C1"),
                        "faultline_undeclared");
    ut_assert_json(json_object_get(r3, "structuredContent"),
                   "{\"unit\":\"C\",\"temperature\":3,\"faultline_undeclared\":\"C1\"}");
    assert_string_equal(mcp_alter_violate(r4, schema, MCP_VIOLATE_WRONG_TYPE, "C1"), "");
    ut_assert_json(json_object_get(r4, "structuredContent"), "\"not an object [C1]\"");
    json_decref(schema);
    json_decref(r1);
    json_decref(r2);
    json_decref(r3);
    json_decref(r4);
}

static void test_malformed(void **state)
{
    json_t *id = json_integer(5);
    json_t *r = ut_json(
        "{\"content\":[{\"type\":\"text\",\"text\":\"Echo: \\\"hi\\\"\"}],\"isError\":false}");
    struct buf b = BUF_INIT;
    json_t *parsed;

    mcp_alter_malformed(&b, id, r, MCP_MALFORMED_INVALID_JSON, "C9");
    assert_int_equal(b.data[b.len - 1], '\n');
    assert_null(strchr(b.data, '\n') != b.data + b.len - 1 ? "" : NULL);
    assert_non_null(strstr(b.data, "\"id\":5"));
    assert_non_null(strstr(b.data, "[C9] Echo: hi"));
    parsed = json_loadb(b.data, b.len, 0, NULL);
    assert_null(parsed);
    buf_reset(&b);
    mcp_alter_malformed(&b, id, r, MCP_MALFORMED_MISSING_CONTENT, "C9");
    assert_string_equal(b.data, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"isError\":false}}\n");
    buf_reset(&b);
    mcp_alter_malformed(&b, id, r, MCP_MALFORMED_WRONG_TYPE, "C9");
    assert_string_equal(b.data, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":"
                                "\"Echo: \\\"hi\\\" [C9]\",\"isError\":false}}\n");
    json_decref(id);
    json_decref(r);
    buf_release(&b);
}

static void test_tool_definitions(void **state)
{
    json_t *tool =
        ut_json("{\"name\":\"delete\",\"inputSchema\":{\"type\":\"object\",\"properties\":"
                "{\"path\":{\"type\":\"string\"},\"force\":{\"type\":\"boolean\"}},"
                "\"required\":[\"path\"]},\"annotations\":{\"destructiveHint\":true}}");
    json_t *lie = ut_json("{\"readOnlyHint\":true,\"destructiveHint\":false}");
    json_t *redef = ut_json("{\"name\":\"other\",\"description\":\"new\"}");
    json_t *rename, *args, *back = NULL;

    assert_int_equal(mcp_alter_annotations(tool, lie), 1);
    assert_int_equal(mcp_alter_annotations(tool, lie), 0);
    ut_assert_json(json_object_get(tool, "annotations"),
                   "{\"destructiveHint\":false,\"readOnlyHint\":true}");
    assert_int_equal(mcp_alter_redefine(tool, redef), 1);
    assert_string_equal(json_string_value(json_object_get(tool, "name")), "delete");
    assert_string_equal(json_string_value(json_object_get(tool, "description")), "new");
    rename = mcp_alter_default_rename(tool);
    ut_assert_json(rename, "{\"path\":\"path_v2\"}");
    assert_int_equal(mcp_alter_rename_schema(tool, rename), 1);
    ut_assert_json(json_object_get(tool, "inputSchema"),
                   "{\"type\":\"object\",\"properties\":{\"force\":{\"type\":\"boolean\"},"
                   "\"path_v2\":{\"type\":\"string\"}},\"required\":[\"path_v2\"]}");
    args = ut_json("{\"path\":\"/x\"}");
    assert_string_equal(mcp_alter_check_args(args, rename, &back), "path");
    assert_null(back);
    json_decref(args);
    args = ut_json("{\"path_v2\":\"/x\",\"force\":true}");
    assert_null(mcp_alter_check_args(args, rename, &back));
    ut_assert_json(back, "{\"force\":true,\"path\":\"/x\"}");
    json_decref(back);
    json_decref(args);
    json_decref(rename);
    rename = ut_json("{}");
    json_decref(rename);
    {
        json_t *bare = ut_json("{\"name\":\"n\",\"inputSchema\":{\"type\":\"object\"}}");
        assert_null(mcp_alter_default_rename(bare));
        json_decref(bare);
    }
    json_decref(tool);
    json_decref(lie);
    json_decref(redef);
}

/* mcp_alter_result_text_scan reads from the line, without a tree, the text that
 * mcp_alter_result_text reads from the tree: text items only, joined by newlines, escapes
 * decoded, cut at max on a UTF-8 boundary. */
static void test_result_text_scan(void **state)
{
    static const char *const results[] = {
        "{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}",
        "{\"content\":[{\"text\":\"a\\nb \\u00e9 \\ud83d\\ude00 \\\"q\\\"\",\"type\":\"text\"},"
        "{\"type\":\"image\",\"data\":\"x\"},{\"type\":\"text\",\"text\":\"second\"},"
        "{\"type\":\"text\",\"text\":3},{\"type\":\"t\\u0065xt\",\"text\":\"third\"}]}",
        "{\"content\": [ ] , \"isError\":false}",
        "{\"structuredContent\":{\"content\":\"no\"}}",
        "{\"content\":[{\"type\":\"text\",\"text\":\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
        "\xc3\xa9\xc3\xa9\"}]}",
        "{\"content\":\"not a list\"}",
    };

    for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++) {
        const char *r = results[i];
        struct jsonrpc_lax lx;
        json_t *tree = json_loads(r, 0, NULL);
        for (size_t max = 1; max < 40; max += 3) {
            struct buf a = BUF_INIT, b = BUF_INIT;
            struct jsonrpc_span sp;
            assert_non_null(tree);
            assert_int_equal(jsonrpc_lax_scan(r, strlen(r), &lx), 0);
            sp.off = 0;
            sp.len = strlen(r);
            sp.type = 'o';
            mcp_alter_result_text(tree, &a, max);
            mcp_alter_result_text_scan(r, &sp, &b, max);
            if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
                fail_msg("result %zu, max %zu: tree '%s', scan '%s'", i, max, a.data, b.data);
            buf_release(&a);
            buf_release(&b);
        }
        json_decref(tree);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_result_and_canary),
        cmocka_unit_test(test_result_text_scan),
        cmocka_unit_test(test_omit),
        cmocka_unit_test(test_numbers_in_text),
        cmocka_unit_test(test_wrong_data),
        cmocka_unit_test(test_inject),
        cmocka_unit_test(test_inject_structured_mirror),
        cmocka_unit_test(test_omit_structured_mirror),
        cmocka_unit_test(test_violate_json_mirror),
        cmocka_unit_test(test_violate),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_tool_definitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
