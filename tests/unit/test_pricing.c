/* Unit tests for src/codec/pricing: lookup tolerance, cost formula, tiers, override files, and
 * that docs/pricing.md holds exactly the generated table (FAULTLINE_UPDATE_DOCS=1 rewrites it). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/pricing.h"
#include "util/fs.h"
#include "util/banned.h"

static void assert_close(double a, double b)
{
    if (fabs(a - b) > 1e-12 * (1 + fabs(b)))
        fail_msg("%.15g != %.15g", a, b);
}

static const char *lookup(const struct pricing_table *t, const char *model, int *known)
{
    const struct pricing_entry *en;
    *known = pricing_lookup(t, model, &en);
    return en->model;
}

static void test_lookup_tolerance(void **state)
{
    struct pricing_table *t = pricing_new();
    int k;
    assert_string_equal(lookup(t, "claude-haiku-4-5", &k), "claude-haiku-4-5");
    assert_true(k);
    assert_string_equal(lookup(t, "claude-haiku-4-5-20251001", &k), "claude-haiku-4-5");
    assert_true(k);
    assert_string_equal(lookup(t, "claude-sonnet-4-20250514", &k), "claude-sonnet-4");
    assert_string_equal(lookup(t, "claude-opus-4-8[1m]", &k), "claude-opus-4-8");
    assert_string_equal(lookup(t, "anthropic/claude-opus-4-6", &k), "claude-opus-4-6");
    assert_string_equal(lookup(t, "claude-sonnet-4-5@20250929", &k), "claude-sonnet-4-5");
    assert_string_equal(lookup(t, "gpt-5.4-mini-2026-03-17", &k), "gpt-5.4-mini");
    assert_string_equal(lookup(t, "openai/gpt-5-codex", &k), "gpt-5-codex");
    assert_string_equal(lookup(t, "gpt-5.5-pro", &k), "gpt-5.5-pro");
    assert_true(k);
    /* "gpt-5.3" must not fall back to "gpt-5": '.' is not a separator */
    assert_string_equal(lookup(t, "gpt-5.3", &k), "default");
    assert_false(k);
    assert_string_equal(lookup(t, "claude-3-5-sonnet-20241022", &k), "default");
    assert_false(k);
    assert_string_equal(lookup(t, "", &k), "default");
    assert_false(k);
    assert_string_equal(lookup(t, NULL, &k), "default");
    assert_false(k);
    pricing_free(t);
}

static void test_cost_formula(void **state)
{
    struct pricing_table *t = pricing_new();
    struct wire_usage u = {0};
    int known = -1;

    u.input_tokens = 1000;
    u.cache_write_tokens = 2000;
    u.cache_write_1h_tokens = 500;
    u.cache_read_tokens = 10000;
    u.output_tokens = 300;
    /* 1000*1 + 1500*1.25 + 500*2 + 10000*0.1 + 300*5 = 6375 per 1M */
    assert_close(pricing_cost(t, "claude-haiku-4-5-20251001", &u, &known), 0.006375);
    assert_true(known);

    memset(&u, 0, sizeof(u));
    u.input_tokens = 1000;
    u.cache_read_tokens = 4000;
    u.output_tokens = 100;
    assert_close(pricing_cost(t, "gpt-5.4", &u, NULL), 0.005);
    /* unknown: default rates 15/75 */
    assert_close(pricing_cost(t, "mystery-1", &u, &known), (1000 * 15 + 4000 * 1.5 + 100 * 75) /
                                                              1e6);
    assert_false(known);
    memset(&u, 0, sizeof(u));
    assert_close(pricing_cost(t, "gpt-5.4", &u, NULL), 0);
    pricing_free(t);
}

static void test_long_context_tier(void **state)
{
    struct pricing_table *t = pricing_new();
    struct wire_usage u = {0};
    u.input_tokens = 60000;
    u.cache_read_tokens = 40000; /* prompt = 100000: not over the tier */
    u.output_tokens = 1000;
    assert_close(pricing_cost(t, "claude-haiku-5-5", &u, NULL),
                 (60000 * 0.10 + 40000 * 0.01 + 1000 * 0.50) / 1e6);
    u.input_tokens = 60001; /* over: every token at the tier's rates */
    assert_close(pricing_cost(t, "claude-haiku-5-5", &u, NULL),
                 (60001 * 0.50 + 40000 * 0.05 + 1000 * 2.50) / 1e6);
    pricing_free(t);
}

static void test_override_yaml(void **state)
{
    const char *y = "# prices\n"
                    "models:\n"
                    "  my-model: {input: 1, output: 5, cache_read: 0.1}\n"
                    "  gpt-5.4:\n"
                    "    input: 2\n"
                    "    output: 10\n"
                    "  tiered: {input: 1, output: 1, tier_above: 10, tier: {input: 2, output: 2}}\n"
                    "default: {input: 20, output: 100}\n";
    struct pricing_table *t = pricing_new();
    size_t n0 = pricing_count(t);
    struct err e = {0};
    struct wire_usage u = {0};
    int k;

    assert_int_equal(pricing_load_text(t, y, strlen(y), "p.yaml", 0, &e), 0);
    assert_int_equal(pricing_count(t), n0 + 2);
    assert_string_equal(lookup(t, "my-model-20250101", &k), "my-model");
    u.input_tokens = 1000000;
    u.cache_read_tokens = 1000000;
    u.cache_write_tokens = 1000000;
    u.output_tokens = 1000000;
    /* cache_write defaults to input */
    assert_close(pricing_cost(t, "my-model", &u, NULL), 1 + 1 + 0.1 + 5);
    assert_close(pricing_cost(t, "gpt-5.4", &u, NULL), 2 + 2 + 2 + 10);
    assert_close(pricing_cost(t, "nobody", &u, &k), 20 + 20 + 20 + 100);
    assert_false(k);
    assert_close(pricing_cost(t, "tiered", &u, NULL), 2 * 3 + 2);
    const struct pricing_entry *en;
    pricing_lookup(t, "gpt-5.4", &en);
    assert_string_equal(en->provider, "openai"); /* kept from the built-in row */
    pricing_free(t);
}

static void test_override_json(void **state)
{
    const char *j = "{\"models\": {\"x\": {\"input\": 3, \"output\": 4}}}";
    struct pricing_table *t = pricing_new();
    struct err e = {0};
    struct wire_usage u = {0};
    assert_int_equal(pricing_load_text(t, j, strlen(j), "p.json", 1, &e), 0);
    u.output_tokens = 1000000;
    assert_close(pricing_cost(t, "x", &u, NULL), 4);
    pricing_free(t);
}

static void expect_error(const char *text, int is_json, int code, const char *needle)
{
    struct pricing_table *t = pricing_new();
    size_t n0 = pricing_count(t);
    struct err e = {0};
    assert_int_equal(pricing_load_text(t, text, strlen(text), "f.yaml", is_json, &e), code);
    if (strstr(e.msg, needle) == NULL)
        fail_msg("'%s' not in '%s'", needle, e.msg);
    assert_int_equal(pricing_count(t), n0); /* unchanged on error */
    pricing_free(t);
}

static void test_override_errors(void **state)
{
    expect_error("models:\n  a: {input: 1}\n  b: {input: -1}\n", 0, ERR_INVALID,
                 "f.yaml:3:14: 'input' of 'b'");
    expect_error("models:\n  a: {inptu: 1}\n", 0, ERR_INVALID, "f.yaml:2:7: unknown key 'inptu'");
    expect_error("modles: {}\n", 0, ERR_INVALID, "f.yaml:1:1: unknown key 'modles'");
    expect_error("models: [1]\n", 0, ERR_INVALID, "f.yaml:1:9: 'models' must map");
    expect_error("models:\n  a: 3\n", 0, ERR_INVALID, "f.yaml:2:6: prices of 'a'");
    expect_error("models: {a: {input: 1, tier: {input: 2}}}\n", 0, ERR_INVALID, "no 'tier_above'");
    expect_error("models: {a: {input: \"x\"}}\n", 0, ERR_INVALID, "'input' of 'a'");
    expect_error("models:\n  a: [\n", 0, ERR_PARSE, "f.yaml:");
    expect_error("{\"models\": ", 1, ERR_PARSE, "f.yaml:1:");
    expect_error("- 1\n", 0, ERR_INVALID, "a price file is a mapping");
    expect_error("models: &a {}\ndefault: *a\n", 0, ERR_UNSUPPORTED, "aliases");

    struct pricing_table *t = pricing_new();
    struct err e = {0};
    assert_int_equal(pricing_load_file(t, "/nonexistent/prices.yaml", &e), ERR_IO);
    pricing_free(t);
}

static void test_docs_match_table(void **state)
{
    const char *root = getenv("FAULTLINE_ROOT");
    char path[4096];
    struct buf doc = BUF_INIT, table = BUF_INIT;
    struct err e = {0};
    static const char begin[] = "<!-- BEGIN pricing table (generated by tests/unit/test_pricing.c) -->\n";
    static const char end[] = "<!-- END pricing table -->";
    struct pricing_table *t = pricing_new();

    snprintf(path, sizeof(path), "%s/docs/pricing.md", root ? root : ".");
    assert_int_equal(pricing_markdown(t, &table), 0);
    if (fs_read_file(path, 1 << 20, &doc, &e) < 0)
        fail_msg("%s", e.msg);
    char *b = strstr(doc.data, begin);
    char *x = b ? strstr(b, end) : NULL;
    if (b == NULL || x == NULL)
        fail_msg("%s lacks the pricing table markers", path);
    b += strlen(begin);
    if (getenv("FAULTLINE_UPDATE_DOCS")) {
        struct buf out = BUF_INIT;
        buf_add(&out, doc.data, (size_t)(b - doc.data));
        buf_add(&out, table.data, table.len);
        buf_adds(&out, x);
        assert_int_equal(fs_write_file(path, out.data, out.len, &e), 0);
        buf_release(&out);
    } else if ((size_t)(x - b) != table.len || memcmp(b, table.data, table.len) != 0) {
        fail_msg("docs/pricing.md differs from the built-in table; run "
                 "FAULTLINE_UPDATE_DOCS=1 build/rel/tests/test_pricing");
    }
    buf_release(&doc);
    buf_release(&table);
    pricing_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_tolerance),  cmocka_unit_test(test_cost_formula),
        cmocka_unit_test(test_long_context_tier), cmocka_unit_test(test_override_yaml),
        cmocka_unit_test(test_override_json),     cmocka_unit_test(test_override_errors),
        cmocka_unit_test(test_docs_match_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
