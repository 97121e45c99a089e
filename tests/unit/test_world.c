/* Unit tests for src/world (the effect model, the ledger, the decision, the replay) and
 * src/util/jschema (the schema subset), and world files through experiment_world_parse
 * (FILE:LINE:COL). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "experiment/experiment.h"
#include "score/worldcheck.h"
#include "util/jschema.h"
#include "seam/seam.h"
#include "world/decide.h"
#include "world/replay.h"
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
    w = world_text("name: pay\nobjective: do it\nmax_calls: 3\ndeadline_s: 60\n"
                   "tools:\n  - name: t\n    effect: { collection: c, dedupe_key: k }\n",
                   &d);
    assert_non_null(w);
    assert_string_equal(d.data, "");
    assert_string_equal(json_string_value(json_object_get(w, "objective")), "do it");
    assert_int_equal(json_integer_value(json_object_get(w, "max_calls")), 3);
    assert_int_equal(json_integer_value(json_object_get(w, "deadline_s")), 60);
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

static void test_tool_faults_withhold_or_change(void **state)
{
    struct world *w = pay_world();
    struct world_reply r;
    (void)state;

    /* withheld (tool.error, tool.timeout, tool.stale_data): recorded, never applied, reads too */
    assert_null(world_first_result(w, "list"));
    assert_int_equal(call(w, "refund", "{\"charge_id\":\"a\",\"key\":\"1\"}",
                          WORLD_FAULT_WITHHELD, &r),
                     WORLD_WITHHELD);
    assert_null(r.result);
    assert_int_equal(world_nentries(w), 0);
    assert_int_equal(call(w, "list", "{}", WORLD_FAULT_WITHHELD, &r), WORLD_WITHHELD);
    assert_null(world_first_result(w, "list"));
    /* the first successful answer is kept for tool.stale_data */
    assert_int_equal(call(w, "list", "{}", 0, &r), WORLD_OK);
    json_decref(r.result);
    assert_int_equal(call(w, "refund", "{\"charge_id\":\"a\",\"key\":\"1\"}", 0, &r),
                     WORLD_OK);
    json_decref(r.result);
    assert_int_equal(json_array_size(json_object_get(world_first_result(w, "list"), "records")),
                     0);
    /* another fault (silent_wrong_data, inject): applied as usual, recorded on the call */
    assert_int_equal(call(w, "refund", "{\"charge_id\":\"b\",\"key\":\"2\"}",
                          WORLD_FAULT_OTHER, &r),
                     WORLD_OK);
    json_decref(r.result);
    assert_int_equal(world_nentries(w), 2);
    json_t *l = world_ledger_json(w);
    json_t *calls = json_object_get(l, "calls");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(calls, 0), "outcome")), "withheld");
    assert_string_equal(json_string_value(json_object_get(json_array_get(calls, 0), "fault")),
                        "effect.x");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(calls, 4), "outcome")), "ok");
    json_decref(l);
    world_free(w);
}

static void test_deadline_s_budget(void **state)
{
    struct err e = {0};
    json_t *j = ut_json("{\"name\":\"d\",\"approved\":true,\"deadline_s\":2,"
                        "\"tools\":[{\"name\":\"put\",\"description\":\"\",\"effect\":"
                        "{\"collection\":\"c\"}}],\"invariants\":[]}");
    struct world *w = world_new(j, &e);
    struct world_call c;
    struct world_reply r;
    (void)state;

    json_decref(j);
    assert_non_null(w);
    memset(&c, 0, sizeof(c));
    c.tool = "put";
    c.t_ms = 100000; /* the first call starts the clock */
    world_call(w, &c, &r);
    assert_int_equal(r.status, WORLD_OK);
    json_decref(r.result);
    c.t_ms = 102000; /* 2 s later: still in time */
    world_call(w, &c, &r);
    assert_int_equal(r.status, WORLD_OK);
    json_decref(r.result);
    c.t_ms = 102001; /* past it: BUDGET_EXCEEDED, recorded, no effect */
    world_call(w, &c, &r);
    assert_int_equal(r.status, WORLD_BUDGET);
    assert_non_null(strstr(r.message, "BUDGET_EXCEEDED: the world's deadline_s (2 s since the "
                                      "first call) has passed"));
    assert_int_equal(world_nentries(w), 2);
    assert_int_equal(world_ncalls(w), 3);
    json_t *l = world_ledger_json(w);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(l, "calls"), 2), "outcome")),
                        "budget_exceeded");
    json_decref(l);
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


/* ---- replay ------------------------------------------------------------------------------ */

/* A plan whose one fault duplicates the first refund. */
static const char *const dup_plan =
    "{\"version\":1,\"run\":\"r-1\",\"rep\":1,\"faulted\":true,\"canary\":\"E-FAULTLINE-0000abcd\","
    "\"seed\":\"0x1\",\"experiment\":{\"name\":\"x\",\"hash\":\"h\",\"path\":\"x.yaml\","
    "\"repeat\":1},\"faults\":[{\"index\":0,\"kind\":\"effect.duplicate_delivery\","
    "\"family\":\"effect\",\"safety\":\"mutating\",\"injectors\":[\"world\"],"
    "\"match\":{\"tool\":\"refund\"},\"when\":null,\"after_calls\":0,\"times\":1,"
    "\"probability\":1.0,\"options\":{\"copies\":2}}],\"abort\":{\"destructive_attempt\":false,"
    "\"cost_usd_above\":1.0,\"wall_clock_s_above\":60.0},\"policy_snapshot\":null}";

static struct seam *plan_seam(struct ut_tmpfile *t)
{
    struct seam_opts o;
    struct err e = {0};
    struct seam *s;
    memset(&o, 0, sizeof(o));
    o.component = "world";
    o.plan_path = t->path;
    o.i_have_a_sandbox = 1;
    if ((s = seam_new(&o, &e)) == NULL)
        fail_msg("seam_new: %s", e.msg);
    return s;
}

/* A recorded ledger: the calls through world_decide and world_call, as the server makes them,
 * with the report after the third call. */
static json_t *record(struct ut_tmpfile *plan)
{
    static const char *const calls[][2] = {
        {"refund", "{\"charge_id\":\"a\",\"key\":\"1\",\"amount\":3}"},
        {"refund", "{\"charge_id\":\"a\",\"key\":\"2\",\"amount\":3}"},
        {"list", "{}"},
        {"refund", "{\"charge_id\":\"b\",\"key\":\"3\",\"amount\":1}"},
    };
    struct seam *s = plan_seam(plan);
    struct world *w = pay_world();
    json_t *l;

    for (size_t i = 0; i < 4; i++) {
        struct world_call c;
        struct world_reply r;
        struct seam_decision d;
        json_t *a = ut_json(calls[i][1]);
        if (i == 3)
            world_report(w, NULL);
        memset(&c, 0, sizeof(c));
        c.tool = calls[i][0];
        c.args = a;
        c.t_ms = 1000 + (int64_t)i;
        world_decide(w, s, &c, &d);
        world_call(w, &c, &r);
        json_decref(r.result);
        json_decref(d.options);
        json_decref(a);
    }
    l = world_ledger_json(w);
    world_free(w);
    seam_free(s);
    return l;
}

static json_t *rebuild(struct ut_tmpfile *plan, json_t *ledger)
{
    struct err e = {0};
    struct seam *s = plan_seam(plan);
    json_t *spec = ut_json(pay_spec), *l = world_replay_rebuild(spec, ledger, s, &e);
    if (l == NULL)
        fail_msg("world_replay_rebuild: %s", e.msg);
    seam_free(s);
    json_decref(spec);
    return l;
}

static void test_replay_reproduces_the_recorded_ledger(void **state)
{
    struct ut_tmpfile plan;
    struct world_replay_diff d;
    json_t *rec, *rep;
    (void)state;

    ut_tmpfile_with(&plan, dup_plan);
    rec = record(&plan);
    /* the fault fired on the first refund (two entries), the report closed the world before
     * the last call */
    assert_int_equal(json_array_size(json_object_get(rec, "effects")), 3);
    assert_int_equal(json_integer_value(json_object_get(rec, "closed_after")), 3);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(rec, "calls"), 3),
                                          "outcome")),
        "closed");
    rep = rebuild(&plan, rec);
    assert_int_equal(world_replay_compare(rec, rep, &d), 0);
    json_decref(rep);
    /* a ledger rewritten with integers for its reals (jq) is the same ledger */
    json_object_set_new(json_object_get(json_object_get(rec, "snapshot"), "balances"), "refunds",
                        json_integer(6));
    rep = rebuild(&plan, rec);
    assert_int_equal(world_replay_compare(rec, rep, &d), 0);
    json_decref(rep);
    json_decref(rec);
    unlink(plan.path);
}

static void test_replay_names_the_first_difference(void **state)
{
    struct ut_tmpfile plan;
    struct world_replay_diff d;
    json_t *rec, *rep, *calls;
    (void)state;

    ut_tmpfile_with(&plan, dup_plan);
    /* an argument of call 2 */
    rec = record(&plan);
    calls = json_object_get(rec, "calls");
    json_object_set_new(json_object_get(json_array_get(calls, 1), "args"), "amount",
                        json_integer(4));
    rep = rebuild(&plan, rec);
    assert_int_equal(world_replay_compare(rec, rep, &d), 1);
    assert_int_equal(d.call, 2);
    assert_string_equal(d.tool, "refund");
    assert_string_equal(d.what, "effects[2].args.amount: recorded 3, replayed 4");
    json_decref(rep);
    json_decref(rec);
    /* the first call removed: the fault now duplicates what was call 2 */
    rec = record(&plan);
    json_array_remove(json_object_get(rec, "calls"), 0);
    rep = rebuild(&plan, rec);
    assert_int_equal(world_replay_compare(rec, rep, &d), 1);
    assert_int_equal(d.call, 1);
    assert_string_equal(d.what, "calls[0].call: recorded 2, replayed 1");
    json_decref(rep);
    json_decref(rec);
    /* the world closed later than it was: the last call is no longer refused */
    rec = record(&plan);
    json_object_set_new(rec, "closed_after", json_integer(4));
    rep = rebuild(&plan, rec);
    assert_int_equal(world_replay_compare(rec, rep, &d), 1);
    assert_int_equal(d.call, 4);
    assert_string_equal(d.what, "calls[3].outcome: recorded \"closed\", replayed \"ok\"");
    json_decref(rep);
    json_decref(rec);
    /* the snapshot: not a call's difference */
    rec = record(&plan);
    rep = rebuild(&plan, rec);
    json_object_set_new(json_object_get(json_object_get(rec, "snapshot"), "balances"), "refunds",
                        json_integer(3));
    assert_int_equal(world_replay_compare(rec, rep, &d), 1);
    assert_int_equal(d.call, 0);
    assert_string_equal(d.what, "snapshot.balances.refunds: recorded 3, replayed 6");
    /* an entry removed from the ledger */
    json_decref(rec);
    rec = record(&plan);
    json_array_remove(json_object_get(rec, "effects"), 1);
    assert_int_equal(world_replay_compare(rec, rep, &d), 1);
    assert_int_equal(d.call, 1);
    assert_non_null(strstr(d.what, "effects[1]: recorded absent, replayed {"));
    json_decref(rep);
    json_decref(rec);
    unlink(plan.path);
}

static void test_replay_compares_what_each_call_answered(void **state)
{
    struct ut_tmpfile plan;
    struct world_replay_diff d;
    struct err e = {0};
    struct seam *s;
    json_t *rec, *rep, *spec;
    (void)state;

    ut_tmpfile_with(&plan, dup_plan);
    rec = record(&plan);
    /* a world whose refunds start with one record: the effects are the same, the read is not */
    spec = ut_json(pay_spec);
    json_object_set_new(json_object_get(spec, "initial"), "refunds",
                        json_pack("[{s:s,s:i}]", "charge_id", "z", "amount", 1));
    s = plan_seam(&plan);
    rep = world_replay_rebuild(spec, rec, s, &e);
    assert_non_null(rep);
    assert_int_equal(world_replay_compare(rec, rep, &d), 1);
    assert_int_equal(d.call, 3);
    assert_string_equal(d.tool, "list");
    assert_non_null(strstr(d.what, "calls[2].answer: recorded \""));
    seam_free(s);
    json_decref(spec);
    json_decref(rep);
    /* a ledger from before the answers were recorded: not compared */
    rep = rebuild(&plan, rec);
    for (size_t i = 0; i < json_array_size(json_object_get(rec, "calls")); i++)
        json_object_del(json_array_get(json_object_get(rec, "calls"), i), "answer");
    assert_int_equal(world_replay_compare(rec, rep, &d), 0);
    json_decref(rep);
    json_decref(rec);
    unlink(plan.path);
}

static void test_replay_difference_is_safe_to_print(void **state)
{
    struct world_replay_diff d;
    json_t *a = ut_json("{\"calls\":[{\"call\":1,\"tool\":\"x\\ny\",\"args\":"
                        "{\"k\\nrep-000  reproduced\":1,\"token\":\"sk-ant-api03-AAAAAAAAAAAAAAAAAAAA\"}}]}");
    json_t *b = ut_json("{\"calls\":[{\"call\":1,\"tool\":\"x\\ny\",\"args\":"
                        "{\"k\\nrep-000  reproduced\":2,\"token\":\"sk-ant-api03-AAAAAAAAAAAAAAAAAAAA\"}}]}");
    (void)state;

    assert_int_equal(world_replay_compare(a, b, &d), 1);
    assert_string_equal(d.tool, "x?y");
    assert_string_equal(d.what, "calls[0].args.\"k\\nrep-000  reproduced\": recorded 1, replayed 2");
    json_object_set_new(json_object_get(json_array_get(json_object_get(b, "calls"), 0), "args"),
                        "token", json_string("sk-ant-api03-BBBBBBBBBBBBBBBBBBBB"));
    json_object_set_new(json_object_get(json_array_get(json_object_get(b, "calls"), 0), "args"),
                        "k\nrep-000  reproduced", json_integer(1));
    assert_int_equal(world_replay_compare(a, b, &d), 1);
    assert_null(strstr(d.what, "sk-ant-api03"));
    assert_non_null(strstr(d.what, "[REDACTED]"));
    json_decref(a);
    json_decref(b);
}

static void test_replay_refuses_a_malformed_ledger(void **state)
{
    struct err e = {0};
    json_t *spec = ut_json(pay_spec), *l;
    (void)state;

    l = ut_json("{\"effects\":[]}");
    assert_null(world_replay_rebuild(spec, l, NULL, &e));
    assert_int_equal(e.code, ERR_INVALID);
    assert_string_equal(e.msg, "calls: expected an array (a world's ledger)");
    json_decref(l);
    err_clear(&e);
    l = ut_json("{\"calls\":[{\"tool\":\"list\"},{\"args\":{}}]}");
    assert_null(world_replay_rebuild(spec, l, NULL, &e));
    assert_string_equal(e.msg, "calls[1].tool: expected a string");
    json_decref(l);
    err_clear(&e);
    l = ut_json("{\"calls\":[],\"closed\":true,\"closed_after\":\"x\"}");
    assert_null(world_replay_rebuild(spec, l, NULL, &e));
    assert_string_equal(e.msg, "closed_after: expected an integer from 0");
    json_decref(l);
    json_decref(spec);
}

static void test_replay_digest_names_the_part_that_changed(void **state)
{
    struct world_digest a, b, c;
    struct err e = {0};
    char what[64];
    json_t *spec = ut_json(pay_spec), *plan = ut_json(dup_plan), *l, *j;
    (void)state;

    l = ut_json("{\"calls\":[{\"tool\":\"list\",\"args\":{}}],\"snapshot\":{\"b\":5.0}}");
    world_replay_digest(spec, plan, l, &a);
    /* the file's own form does not count: key order, 5.0 written 5 */
    json_decref(l);
    l = ut_json("{\"snapshot\":{\"b\":5},\"calls\":[{\"args\":{},\"tool\":\"list\"}]}");
    world_replay_digest(spec, plan, l, &b);
    assert_int_equal(world_replay_digest_diff(&a, &b, what, sizeof(what)), 0);
    assert_string_equal(what, "");
    json_object_set_new(json_object_get(l, "snapshot"), "b", json_integer(6));
    world_replay_digest(spec, plan, l, &b);
    assert_int_equal(world_replay_digest_diff(&a, &b, what, sizeof(what)), 1);
    assert_string_equal(what, "ledger");
    json_object_set_new(json_object_get(l, "snapshot"), "b", json_integer(5));
    json_array_append_new(json_object_get(l, "calls"), json_pack("{s:s}", "tool", "list"));
    json_object_set_new(plan, "seed", json_string("0x2"));
    world_replay_digest(spec, plan, l, &b);
    assert_int_equal(world_replay_digest_diff(&a, &b, what, sizeof(what)), 2);
    assert_string_equal(what, "plan, calls");
    /* world-hash.json round trip */
    j = world_replay_digest_json(&a);
    assert_int_equal(world_replay_digest_parse(j, &c, &e), 0);
    assert_int_equal(world_replay_digest_diff(&a, &c, what, sizeof(what)), 0);
    json_object_set_new(j, "plan", json_string("zz"));
    assert_int_equal(world_replay_digest_parse(j, &c, &e), ERR_INVALID);
    assert_string_equal(e.msg, "plan: expected a hex SHA-256");
    json_decref(j);
    json_decref(l);
    json_decref(plan);
    json_decref(spec);
}

/* ---- world check from a ledger alone ------------------------------------------------------ */

/* The idempotency_key_stable item of `world check` on the ledger of a refund whose response was
 * lost (effect.timeout_after_effect) and its retry with key2. */
static const struct worldcheck_item *retry_checked(const char *key2, struct worldcheck *wc)
{
    char dir[] = "/tmp/faultline-ut-worldcheck-XXXXXX", path[128];
    struct world *w = pay_world();
    struct world_reply r;
    struct err e = {0};
    json_t *spec = ut_json(pay_spec);
    const struct worldcheck_item *it = NULL;
    char args[128];

    assert_non_null(mkdtemp(dir));
    assert_int_equal(call(w, "refund", "{\"charge_id\":\"ch_1\",\"key\":\"k1\",\"amount\":5}",
                          WORLD_FAULT_TIMEOUT_AFTER, &r),
                     WORLD_TIMEOUT);
    snprintf(args, sizeof(args), "{\"charge_id\":\"ch_1\",\"key\":\"%s\",\"amount\":5}", key2);
    assert_int_equal(call(w, "refund", args, 0, &r), WORLD_OK);
    json_decref(r.result);
    snprintf(path, sizeof(path), "%s/ledger.json", dir);
    assert_int_equal(world_ledger_save(w, path, &e), 0);
    world_free(w);
    if (worldcheck_run(spec, path, wc, &e) < 0)
        fail_msg("worldcheck_run: %s", e.msg);
    for (size_t i = 0; i < wc->n; i++)
        if (strcmp(wc->items[i].id, "idempotency_key_stable") == 0)
            it = &wc->items[i];
    assert_non_null(it);
    unlink(path);
    rmdir(dir);
    json_decref(spec);
    return it;
}

static void test_world_check_idempotency_from_the_ledger(void **state)
{
    struct worldcheck wc;
    const struct worldcheck_item *it;
    (void)state;

    /* a fresh key after the failed call: the retry (calls[1], call 2) is named */
    it = retry_checked("k2", &wc);
    assert_int_equal(it->result, RULE_FAIL);
    assert_string_equal(it->reason,
                        "a retry of refund after a failure carried a fresh idempotency key");
    assert_int_equal(it->call_index, 1);
    assert_int_equal(it->call, 2);
    assert_string_equal(it->call_tool, "refund");
    assert_int_equal(it->effect_index, -1);
    assert_true(wc.failed);
    /* the same key: the retry is judged and passes */
    it = retry_checked("k1", &wc);
    assert_int_equal(it->result, RULE_PASS);
    assert_string_equal(it->reason, "1 retry reused the operation's idempotency key");
    assert_int_equal(it->call_index, -1);
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
        cmocka_unit_test(test_tool_faults_withhold_or_change),
        cmocka_unit_test(test_deadline_s_budget),
        cmocka_unit_test(test_replay_reproduces_the_recorded_ledger),
        cmocka_unit_test(test_replay_names_the_first_difference),
        cmocka_unit_test(test_replay_compares_what_each_call_answered),
        cmocka_unit_test(test_replay_difference_is_safe_to_print),
        cmocka_unit_test(test_replay_refuses_a_malformed_ledger),
        cmocka_unit_test(test_replay_digest_names_the_part_that_changed),
        cmocka_unit_test(test_world_check_idempotency_from_the_ledger),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
