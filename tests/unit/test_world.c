/* Unit tests for src/world (the effect model, the ledger) and src/util/jschema (the schema
 * subset), and world files through experiment_world_parse (FILE:LINE:COL). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "experiment/experiment.h"
#include "util/jschema.h"
#include "world/world.h"
#include "helpers.h"
#include "util/banned.h"

/* ---- jschema ------------------------------------------------------------------------------ */

static struct jschema *schema_of(const char *text, char *msg, size_t n)
{
    json_t *j = ut_json(text);
    struct jschema *s = jschema_new(j, NULL, msg, n);
    json_decref(j);
    return s;
}

static int check_text(const struct jschema *s, const char *value, char *msg, size_t n)
{
    json_t *v = ut_json(value);
    int rc = jschema_check(s, v, msg, n);
    json_decref(v);
    return rc;
}

static void test_jschema_checks_the_subset(void **state)
{
    char msg[256];
    struct jschema *s =
        schema_of("{\"type\":\"object\",\"required\":[\"id\",\"n\"],\"additionalProperties\":false,"
                  "\"properties\":{\"id\":{\"type\":\"string\",\"minLength\":2,\"maxLength\":4,"
                  "\"pattern\":\"^a\"},\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":9},"
                  "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]}},"
                  "\"f\":{\"type\":[\"number\",\"null\"]}}}",
                  msg, sizeof(msg));
    (void)state;
    assert_non_null(s);
    assert_int_equal(
        check_text(s, "{\"id\":\"ab\",\"n\":3,\"tags\":[\"x\"],\"f\":1.5}", msg, sizeof(msg)), 0);
    assert_int_equal(check_text(s, "{\"id\":\"ab\",\"n\":3.0,\"f\":null}", msg, sizeof(msg)), 0);
    assert_int_equal(check_text(s, "{\"id\":\"ab\"}", msg, sizeof(msg)), ERR_INVALID);
    assert_string_equal(msg, "$: 'n' is required");
    assert_int_equal(check_text(s, "{\"id\":\"ab\",\"n\":\"3\"}", msg, sizeof(msg)), ERR_INVALID);
    assert_string_equal(msg, "$.n: expected integer, found a string");
    assert_int_equal(check_text(s, "{\"id\":\"ab\",\"n\":10}", msg, sizeof(msg)), ERR_INVALID);
    assert_string_equal(msg, "$.n: above the maximum 9");
    assert_int_equal(check_text(s, "{\"id\":\"ab\",\"n\":0}", msg, sizeof(msg)), ERR_INVALID);
    assert_int_equal(check_text(s, "{\"id\":\"abcde\",\"n\":1}", msg, sizeof(msg)), ERR_INVALID);
    assert_string_equal(msg, "$.id: longer than 4 characters");
    /* code points, not bytes */
    assert_int_equal(check_text(s, "{\"id\":\"a\\u00e9\\u00e9\",\"n\":1}", msg, sizeof(msg)), 0);
    assert_int_equal(check_text(s, "{\"id\":\"ba\",\"n\":1}", msg, sizeof(msg)), ERR_INVALID);
    assert_string_equal(msg, "$.id: does not match the pattern");
    assert_int_equal(
        check_text(s, "{\"id\":\"ab\",\"n\":1,\"tags\":[\"x\",\"z\"]}", msg, sizeof(msg)),
        ERR_INVALID);
    assert_string_equal(msg, "$.tags[1]: not one of the allowed values");
    assert_int_equal(check_text(s, "{\"id\":\"ab\",\"n\":1,\"other\":1}", msg, sizeof(msg)),
                     ERR_INVALID);
    assert_string_equal(msg, "$: 'other' is not allowed (additionalProperties is false)");
    assert_int_equal(check_text(s, "{\"id\":\"ab\",\"n\":1,\"f\":\"x\"}", msg, sizeof(msg)),
                     ERR_INVALID);
    assert_string_equal(msg, "$.f: expected null or number, found a string");
    assert_int_equal(check_text(s, "[1]", msg, sizeof(msg)), ERR_INVALID);
    jschema_free(s);
}

static void test_jschema_refuses_what_it_does_not_support(void **state)
{
    char msg[256];
    struct jschema_where w;
    json_t *j;
    (void)state;

    assert_null(schema_of("{\"$ref\":\"#\"}", msg, sizeof(msg)));
    assert_non_null(strstr(msg, "unsupported keyword '$ref'"));
    assert_null(schema_of("{\"anyOf\":[{}]}", msg, sizeof(msg)));
    assert_non_null(strstr(msg, "'anyOf'"));
    assert_null(schema_of("{\"type\":\"strin\"}", msg, sizeof(msg)));
    assert_null(schema_of("{\"additionalProperties\":{\"type\":\"string\"}}", msg, sizeof(msg)));
    /* the one safe-regex rule */
    assert_null(schema_of("{\"pattern\":\"(a{1,100}){1,100}\"}", msg, sizeof(msg)));
    assert_non_null(strstr(msg, "regular expression refused"));
    assert_null(schema_of("{\"pattern\":\"(a)\\\\1\"}", msg, sizeof(msg)));
    /* a huge enum */
    struct buf b = BUF_INIT;
    buf_adds(&b, "{\"enum\":[");
    for (int i = 0; i <= JSCHEMA_ENUM_MAX; i++)
        buf_addf(&b, "%s%d", i ? "," : "", i);
    buf_adds(&b, "]}");
    assert_null(schema_of(b.data, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "more than 256 values"));
    /* deep nesting */
    buf_reset(&b);
    for (int i = 0; i < 40; i++)
        buf_adds(&b, "{\"items\":");
    buf_adds(&b, "{}");
    for (int i = 0; i < 40; i++)
        buf_adds(&b, "}");
    assert_null(schema_of(b.data, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "nest more than"));
    buf_release(&b);
    /* where: the keys down to the refused keyword */
    j = ut_json("{\"properties\":{\"a\":{\"not\":{}}}}");
    assert_null(jschema_new(j, &w, msg, sizeof(msg)));
    assert_int_equal(w.nsteps, 3);
    assert_string_equal(w.steps[0], "properties");
    assert_string_equal(w.steps[1], "a");
    assert_string_equal(w.steps[2], "not");
    json_decref(j);
}

/* ---- world files -------------------------------------------------------------------------- */

static json_t *world_text(const char *text, struct buf *diags)
{
    struct experiment_diags d = {0};
    struct err e = {0};
    json_t *w = experiment_world_parse("w.yaml", text, strlen(text), &d, &e);
    experiment_diags_format(&d, "w.yaml", diags);
    experiment_diags_release(&d);
    return w;
}

static void test_world_file_diagnostics(void **state)
{
    struct buf d = BUF_INIT;
    json_t *w;
    (void)state;

    w = world_text("name: pay\n"
                   "tools:\n"
                   "  - name: refund\n"
                   "    input_schema:\n"
                   "      type: object\n"
                   "      properties:\n"
                   "        id: { $ref: '#/x' }\n",
                   &d);
    assert_null(w);
    assert_non_null(strstr(
        d.data, "w.yaml:7:15: error: world.tools[0].input_schema: unsupported keyword '$ref'"));
    buf_reset(&d);
    w = world_text("name: pay\ntools:\n  - name: t\n    efect: {}\n", &d);
    assert_null(w);
    assert_non_null(strstr(d.data, "w.yaml:4:5: error: unknown key 'efect'"));
    buf_reset(&d);
    w = world_text("name: pay\ntools:\n  - name: t\n    effect: { collection: c, op: update }\n",
                   &d);
    assert_null(w);
    assert_non_null(strstr(d.data, "op: update needs business_key"));
    buf_reset(&d);
    w = world_text("name: pay\ninitial: { c: [1] }\ntools:\n  - name: t\n", &d);
    assert_null(w);
    assert_non_null(strstr(d.data, "w.yaml:2:16: error: world.initial.c[0]: expected a mapping"));
    buf_reset(&d);
    w = world_text("name: pay\nobjective: do it\nmax_calls: 3\n"
                   "tools:\n  - name: t\n    effect: { collection: c, dedupe_key: k }\n",
                   &d);
    assert_non_null(w);
    assert_string_equal(d.data, "");
    assert_string_equal(json_string_value(json_object_get(w, "objective")), "do it");
    assert_int_equal(json_integer_value(json_object_get(w, "max_calls")), 3);
    json_decref(w);
    buf_release(&d);
}

/* ---- the effect model ---------------------------------------------------------------------- */

static const char *const pay_spec =
    "{\"name\":\"pay\",\"approved\":true,\"max_calls\":20,"
    "\"initial\":{\"charges\":[{\"charge_id\":\"ch_1\",\"amount\":5}]},"
    "\"tools\":["
    "{\"name\":\"refund\",\"description\":\"\",\"input_schema\":{\"type\":\"object\","
    "\"required\":[\"charge_id\",\"key\"],\"properties\":{\"amount\":{\"type\":\"integer\"}}},"
    "\"effect\":{\"collection\":\"refunds\",\"business_key\":\"charge_id\",\"dedupe_key\":"
    "\"key\",\"balance\":\"amount\"},\"result\":{\"status\":\"refunded\"}},"
    "{\"name\":\"relabel\",\"description\":\"\",\"effect\":{\"collection\":\"refunds\","
    "\"business_key\":\"charge_id\",\"op\":\"update\"}},"
    "{\"name\":\"cancel\",\"description\":\"\",\"effect\":{\"collection\":\"refunds\","
    "\"business_key\":\"charge_id\",\"op\":\"delete\"}},"
    "{\"name\":\"list\",\"description\":\"\",\"reads\":\"refunds\"}],"
    "\"invariants\":[]}";

static struct world *pay_world(void)
{
    struct err e = {0};
    json_t *j = ut_json(pay_spec);
    struct world *w = world_new(j, &e);
    json_decref(j);
    if (w == NULL)
        fail_msg("world_new: %s", e.msg);
    return w;
}

static enum world_status call(struct world *w, const char *tool, const char *args,
                              enum world_fault_mode mode, struct world_reply *r)
{
    struct world_call c;
    json_t *a = ut_json(args);
    memset(&c, 0, sizeof(c));
    c.tool = tool;
    c.args = a;
    c.mode = mode;
    c.copies = 2;
    c.fault = mode ? "effect.x" : NULL;
    world_call(w, &c, r);
    json_decref(a);
    return r->status;
}

static void test_dedupe_key_makes_a_repeat_a_noop(void **state)
{
    struct world *w = pay_world();
    struct world_reply r;
    (void)state;

    assert_int_equal(
        call(w, "refund", "{\"charge_id\":\"ch_1\",\"key\":\"k\",\"amount\":5}", 0, &r), WORLD_OK);
    ut_assert_json(r.result, "{\"status\":\"refunded\",\"effect_id\":\"refunds-1\"}");
    json_decref(r.result);
    assert_int_equal(
        call(w, "refund", "{\"charge_id\":\"ch_1\",\"key\":\"k\",\"amount\":5}", 0, &r), WORLD_OK);
    ut_assert_json(r.result, "{\"status\":\"refunded\",\"effect_id\":\"refunds-1\"}");
    json_decref(r.result);
    assert_int_equal(world_nentries(w), 2);
    assert_int_equal(world_entry(w, 1)->deduplicated, 1);
    assert_string_equal(world_entry(w, 1)->id, "refunds-1");
    /* the same key with other arguments */
    assert_int_equal(
        call(w, "refund", "{\"charge_id\":\"ch_1\",\"key\":\"k\",\"amount\":6}", 0, &r),
        WORLD_CONFLICT);
    assert_non_null(strstr(r.message, "IDEMPOTENCY_CONFLICT: key 'k'"));
    assert_int_equal(world_nentries(w), 2);
    /* the state: one refund, the balance */
    json_t *snap = world_snapshot_json(w);
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(snap, "collections"), "refunds")), 1);
    assert_true(json_real_value(json_object_get(json_object_get(snap, "balances"), "refunds")) ==
                5);
    json_decref(snap);
    world_free(w);
}

static void test_invalid_arguments_record_no_effect(void **state)
{
    struct world *w = pay_world();
    struct world_reply r;
    (void)state;

    assert_int_equal(call(w, "refund", "{\"charge_id\":\"ch_1\"}", 0, &r), WORLD_INVALID_ARGS);
    assert_string_equal(r.message, "INVALID_ARGUMENTS: $: 'key' is required");
    assert_int_equal(call(w, "refund", "[]", 0, &r), WORLD_INVALID_ARGS);
    assert_int_equal(call(w, "nope", "{}", 0, &r), WORLD_NO_TOOL);
    assert_int_equal(world_nentries(w), 0);
    assert_int_equal(world_ncalls(w), 3);
    world_free(w);
}

static void test_effect_faults(void **state)
{
    struct world *w = pay_world();
    struct world_reply r, r2;
    (void)state;

    /* before: no effect; after: the effect, then the same error */
    assert_int_equal(
        call(w, "refund", "{\"charge_id\":\"a\",\"key\":\"1\"}", WORLD_FAULT_TIMEOUT_BEFORE, &r),
        WORLD_TIMEOUT);
    assert_int_equal(world_nentries(w), 0);
    assert_int_equal(
        call(w, "refund", "{\"charge_id\":\"a\",\"key\":\"1\"}", WORLD_FAULT_TIMEOUT_AFTER, &r2),
        WORLD_TIMEOUT);
    assert_string_equal(r.message, r2.message);
    assert_null(r2.result);
    assert_int_equal(world_nentries(w), 1);
    assert_string_equal(world_entry(w, 0)->fault, "effect.x");
    /* duplicate delivery: a second effect unless the dedupe key holds */
    assert_int_equal(
        call(w, "refund", "{\"charge_id\":\"b\",\"key\":\"2\"}", WORLD_FAULT_DUPLICATE, &r),
        WORLD_OK);
    json_decref(r.result);
    assert_int_equal(world_nentries(w), 3);
    assert_int_equal(world_entry(w, 2)->deduplicated, 1);
    assert_int_equal(
        call(w, "relabel", "{\"charge_id\":\"b\",\"note\":\"x\"}", WORLD_FAULT_DUPLICATE, &r),
        WORLD_OK);
    json_decref(r.result);
    assert_int_equal(world_nentries(w), 5);
    assert_int_equal(world_entry(w, 4)->deduplicated, 0);
    world_free(w);
}

static void test_update_delete_read_report_budget(void **state)
{
    struct world *w = pay_world();
    struct world_reply r;
    (void)state;

    assert_int_equal(call(w, "relabel", "{\"charge_id\":\"zz\"}", 0, &r), WORLD_NOT_FOUND);
    assert_int_equal(call(w, "refund", "{\"charge_id\":\"c\",\"key\":\"3\",\"amount\":2}", 0, &r),
                     WORLD_OK);
    json_decref(r.result);
    assert_int_equal(call(w, "relabel", "{\"charge_id\":\"c\",\"amount\":7}", 0, &r), WORLD_OK);
    json_decref(r.result);
    assert_int_equal(call(w, "list", "{}", 0, &r), WORLD_OK);
    assert_true(json_real_value(json_object_get(r.result, "balance")) == 7);
    json_decref(r.result);
    assert_int_equal(call(w, "cancel", "{\"charge_id\":\"c\"}", 0, &r), WORLD_OK);
    json_decref(r.result);
    assert_int_equal(call(w, "list", "{}", 0, &r), WORLD_OK);
    assert_int_equal(json_array_size(json_object_get(r.result, "records")), 0);
    json_decref(r.result);
    /* the report closes the world to effects; reads go on */
    world_report(w, NULL);
    assert_int_equal(call(w, "refund", "{\"charge_id\":\"d\",\"key\":\"4\"}", 0, &r), WORLD_CLOSED);
    assert_int_equal(call(w, "list", "{}", 0, &r), WORLD_OK);
    json_decref(r.result);
    /* the budget: 20 calls */
    while (world_ncalls(w) < 20) {
        call(w, "list", "{}", 0, &r);
        json_decref(r.result);
    }
    assert_int_equal(call(w, "list", "{}", 0, &r), WORLD_BUDGET);
    /* the ledger as the scorer reads it */
    json_t *l = world_ledger_json(w);
    json_t *e0 = json_array_get(json_object_get(l, "effects"), 0);
    assert_string_equal(json_string_value(json_object_get(e0, "tool")), "refund");
    assert_string_equal(json_string_value(json_object_get(e0, "collection")), "refunds");
    assert_string_equal(json_string_value(json_object_get(e0, "business_key")), "c");
    assert_string_equal(json_string_value(json_object_get(e0, "dedupe_key")), "3");
    assert_true(json_is_true(json_object_get(e0, "approved")));
    assert_true(json_is_false(json_object_get(e0, "deduplicated")));
    assert_true(json_is_true(json_object_get(l, "closed")));
    assert_int_equal(json_array_size(json_object_get(l, "calls")), 21);
    json_decref(l);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jschema_checks_the_subset),
        cmocka_unit_test(test_jschema_refuses_what_it_does_not_support),
        cmocka_unit_test(test_world_file_diagnostics),
        cmocka_unit_test(test_dedupe_key_makes_a_repeat_a_noop),
        cmocka_unit_test(test_invalid_arguments_record_no_effect),
        cmocka_unit_test(test_effect_faults),
        cmocka_unit_test(test_update_delete_read_report_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
