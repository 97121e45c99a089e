/*
 * Unit tests for src/report/compare.c: the figures of two reports with their change (a probe
 * only one side has, no score, a cost from zero, the cost multiplier), the regression gate's
 * edges (a budget met exactly holds, a missing score fails), the drift walk (numbers by value,
 * arrays by id or index, a figure one side lacks, a type that changed), compare_load's
 * refusals (no such file, a run id without a database, another format, not a report) and the
 * tables' escaping of hostile run strings. tests/e2e/t1310 and t1311 drive the real binary on
 * real runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "report/compare.h"
#include "util/buf.h"
#include "util/fs.h"
#include "helpers.h"
#include "util/banned.h"

/* A report of experiment name with score (a negative one: none), probe rates and costs. */
static json_t *report(const char *name, const char *hash, double score, const char *probes,
                      const char *reps)
{
    char text[4096];

    snprintf(text, sizeof(text),
             "{\"format\": 1, \"experiment\": {\"name\": \"%s\", \"hash\": \"%s\"},"
             " \"verdict\": \"scored\", \"status\": \"complete\", \"repetitions\": %s,"
             " \"result\": {\"resilience_score\": %s, \"probes\": %s,"
             " \"outcomes\": {\"SAFE_SUCCESS\": 1, \"SILENT_FAILURE\": 0}}}",
             name, hash, reps, score < 0 ? "null" : "SCORE", probes);
    if (score >= 0) {
        char num[32], *p = strstr(text, "SCORE");
        snprintf(num, sizeof(num), "%g", score);
        memmove(p + strlen(num), p + 5, strlen(p + 5) + 1);
        memcpy(p, num, strlen(num));
    }
    return ut_json(text);
}

static const char two_reps[] = "[{\"rep\": 0, \"faulted\": false, \"status\": \"complete\","
                               " \"cost_usd\": 0.1}, {\"rep\": 1, \"faulted\": true, \"status\":"
                               " \"complete\", \"cost_usd\": 0.3}]";

static void side(struct compare_side *s, json_t *r, const char *label)
{
    memset(s, 0, sizeof(*s));
    s->report = r;
    snprintf(s->label, sizeof(s->label), "%s", label);
}

static double num(const json_t *cmp, const char *path)
{
    json_t *v = (json_t *)cmp;
    char key[64];
    const char *p = path;

    while (*p) {
        size_t n = strcspn(p, ".");
        snprintf(key, sizeof(key), "%.*s", (int)n, p);
        v = json_is_array(v) ? json_array_get(v, (size_t)strtol(key, NULL, 10))
                             : json_object_get(v, key);
        p += n + (p[n] == '.');
    }
    if (!json_is_number(v))
        fail_msg("%s is not a number", path);
    return json_number_value(v);
}

static void test_build(void **state)
{
    struct compare_side a, b;
    json_t *cmp;

    side(&a, report("x", "h1", 80, "[{\"id\": \"p1\", \"evaluated\": 2, \"passed\": 2,"
                                   " \"pass_rate\": 1.0}, {\"id\": \"onlya\", \"evaluated\": 1,"
                                   " \"passed\": 0, \"pass_rate\": 0.0}]",
                    two_reps),
         "A");
    side(&b, report("x", "h1", 60.5, "[{\"id\": \"onlyb\", \"evaluated\": 0, \"passed\": 0},"
                                     " {\"id\": \"p1\", \"evaluated\": 2, \"passed\": 1,"
                                     " \"pass_rate\": 0.5}]",
                    "[{\"rep\": 0, \"faulted\": false, \"cost_usd\": 0.2}, {\"rep\": 1,"
                    " \"faulted\": true, \"cost_usd\": 0.2}, {\"rep\": 2, \"faulted\": true,"
                    " \"status\": \"skipped\"}]"),
         "B");
    cmp = compare_build(&a, &b);
    assert_true(json_is_true(json_object_get(cmp, "same_experiment")));
    assert_int_equal(json_array_size(json_object_get(cmp, "warnings")), 0);
    assert_true(num(cmp, "resilience_score.change") == -19.5);
    /* A's probes in order, then B's own; a probe one side lacks is null there */
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(cmp, "probes"), 2), "id")),
                        "onlyb");
    assert_true(num(cmp, "probes.0.pass_rate.change") == -0.5);
    assert_true(json_is_null(
        json_object_get(json_object_get(json_array_get(json_object_get(cmp, "probes"), 1),
                                        "pass_rate"),
                        "b")));
    /* evaluated 0: no rate, but the counts are there */
    assert_true(json_is_null(json_object_get(
        json_object_get(json_array_get(json_object_get(cmp, "probes"), 2), "pass_rate"), "b")));
    assert_true(num(cmp, "probes.2.evaluated.b") == 0);
    /* cost: 0.4 to 0.4; multiplier 3x to 1x (the skipped repetition left out) */
    assert_true(num(cmp, "cost_usd.change_pct") == 0);
    assert_true(num(cmp, "cost_multiplier.a") == 3);
    assert_true(num(cmp, "cost_multiplier.b") == 1);
    assert_true(num(cmp, "outcomes.SILENT_FAILURE.change") == 0);
    assert_true(num(cmp, "outcomes.HARMFUL_ACTION.a") == 0);
    /* no run folder: no tokens */
    assert_true(json_is_null(json_object_get(json_object_get(json_object_get(cmp, "tokens"),
                                                             "input"),
                                             "a")));
    json_decref(cmp);
    compare_side_release(&a);
    compare_side_release(&b);
}

static void test_warnings(void **state)
{
    struct compare_side a, b, c;
    json_t *cmp;

    side(&a, report("x", "h1", 80, "[]", "[]"), "A");
    side(&b, report("y", "h1", 80, "[]", "[]"), "B");
    side(&c, report("x", "h2", 80, "[]", "[]"), "C");
    cmp = compare_build(&a, &b);
    assert_string_equal(json_string_value(json_array_get(json_object_get(cmp, "warnings"), 0)),
                        "comparing runs of different experiments: 'x' (A) and 'y' (B)");
    assert_true(json_is_false(json_object_get(cmp, "same_experiment")));
    json_decref(cmp);
    cmp = compare_build(&a, &c);
    assert_string_equal(json_string_value(json_array_get(json_object_get(cmp, "warnings"), 0)),
                        "experiment 'x' changed between the runs: hash h1 (A), h2 (B)");
    json_decref(cmp);
    compare_side_release(&a);
    compare_side_release(&b);
    compare_side_release(&c);
}

/* The gate over A (score sa, cost ca) and B; its failures' count, the lines in why. */
static int gate(double sa, double sb, const char *ra, const char *rb, struct compare_gate g,
                struct buf *why)
{
    struct compare_side a, b;
    json_t *cmp;
    int n;

    side(&a, report("x", "h", sa, "[]", ra), "A");
    side(&b, report("x", "h", sb, "[]", rb), "B");
    cmp = compare_build(&a, &b);
    buf_reset(why);
    n = compare_check(cmp, &g, why);
    json_decref(cmp);
    compare_side_release(&a);
    compare_side_release(&b);
    return n;
}

static void test_gate(void **state)
{
    struct buf why = BUF_INIT;
    struct compare_gate none = {0}, drop = {.has_score_drop = 1, .max_score_drop = 10};
    struct compare_gate cost = {.has_cost_increase = 1, .max_cost_increase = 50};
    const char *c1 = "[{\"rep\": 0, \"cost_usd\": 1.0}]", *c15 = "[{\"rep\": 0, \"cost_usd\": 1.5}]";
    const char *c2 = "[{\"rep\": 0, \"cost_usd\": 2.0}]", *c0 = "[{\"rep\": 0, \"cost_usd\": 0}]";

    assert_int_equal(gate(100, 0, c1, c2, none, &why), 0);
    /* a drop of exactly the budget holds; past it fails */
    assert_int_equal(gate(80, 70, c1, c1, drop, &why), 0);
    assert_int_equal(gate(80, 69.99, c1, c1, drop, &why), 1);
    assert_string_equal(
        why.data,
        "resilience score dropped 10.01 points (80.00 to 69.99), over --max-score-drop 10\n");
    assert_int_equal(gate(50, 100, c1, c1, drop, &why), 0);
    /* no score on a side: the budget cannot hold */
    assert_int_equal(gate(80, -1, c1, c1, drop, &why), 1);
    assert_non_null(strstr(why.data, "B: none"));
    assert_int_equal(gate(-1, 80, c1, c1, drop, &why), 1);
    /* cost: +50% holds, +100% fails, from 0 fails, 0 to 0 holds, a fall holds */
    assert_int_equal(gate(1, 1, c1, c15, cost, &why), 0);
    assert_int_equal(gate(1, 1, c1, c2, cost, &why), 1);
    assert_string_equal(why.data, "cost rose 100.00% (1.000000 to 2.000000 USD), over "
                                  "--max-cost-increase 50%\n");
    assert_int_equal(gate(1, 1, c0, c1, cost, &why), 1);
    assert_string_equal(why.data,
                        "cost rose from 0 to 1.000000 USD, over --max-cost-increase 50%\n");
    assert_int_equal(gate(1, 1, c0, c0, cost, &why), 0);
    assert_int_equal(gate(1, 1, c2, c1, cost, &why), 0);
    buf_release(&why);
}

static size_t drift(const char *stored, const char *result, json_t **diffs, size_t *figures)
{
    json_t *s = ut_json(stored), *r = ut_json(result);
    size_t n;

    *diffs = json_array();
    n = compare_drift(s, r, *diffs, figures);
    json_decref(s);
    json_decref(r);
    return n;
}

static const char *diff_path(const json_t *diffs, size_t i)
{
    return json_string_value(json_object_get(json_array_get(diffs, i), "path"));
}

static void test_drift(void **state)
{
    json_t *diffs;
    size_t figures;
    struct buf b = BUF_INIT;
    const char *result = "{\"resilience_score\": 100.0, \"verdict\": {\"verdict\": \"scored\","
                         " \"reason\": \"r\"}, \"warnings\": [],"
                         " \"probes\": [{\"id\": \"a\", \"pass_rate\": 1.0},"
                         " {\"id\": \"b\", \"pass_rate\": 0.5}], \"reps\": [1, 2]}";

    /* identical, numbers by value (100 is 100.0) */
    assert_int_equal(drift("{\"resilience_score\": 100, \"verdict\": \"scored\","
                           " \"verdict_reason\": \"r\", \"warnings\": [], \"result\": {"
                           "\"resilience_score\": 100, \"verdict\": {\"verdict\": \"scored\","
                           " \"reason\": \"r\"}, \"warnings\": [], \"probes\": [{\"id\": \"b\","
                           " \"pass_rate\": 0.5}, {\"id\": \"a\", \"pass_rate\": 1}], \"reps\":"
                           " [1, 2]}}",
                           result, &diffs, &figures),
                     0);
    assert_int_equal(figures, 12);
    json_decref(diffs);
    /* a rate, a figure only the regrade has, an index past the stored array, a type change */
    assert_int_equal(drift("{\"resilience_score\": 100, \"verdict\": \"scored\","
                           " \"verdict_reason\": \"r\", \"warnings\": [], \"result\": {"
                           "\"resilience_score\": 100, \"verdict\": {\"verdict\": \"scored\","
                           " \"reason\": \"r\"}, \"warnings\": {}, \"probes\": [{\"id\": \"a\","
                           " \"pass_rate\": 0.9}], \"reps\": [1]}}",
                           result, &diffs, &figures),
                     4);
    assert_string_equal(diff_path(diffs, 0), "result.warnings");
    assert_string_equal(diff_path(diffs, 1), "result.probes[a].pass_rate");
    assert_string_equal(diff_path(diffs, 2), "result.probes[b]");
    assert_string_equal(diff_path(diffs, 3), "result.reps[1]");
    compare_drift_text(diffs, &b);
    assert_string_equal(b.data, "result.warnings: stored {}, regraded []\n"
                                "result.probes[a].pass_rate: stored 0.9, regraded 1.0\n"
                                "result.probes[b]: stored absent, regraded "
                                "{\"id\":\"b\",\"pass_rate\":0.5}\n"
                                "result.reps[1]: stored absent, regraded 2\n");
    json_decref(diffs);
    /* ids that repeat: by index; a missing stored result: every top figure */
    assert_int_equal(drift("{\"result\": {\"probes\": [{\"id\": \"a\"}, {\"id\": \"a\"}]}}",
                           "{\"probes\": [{\"id\": \"a\"}, {\"id\": \"b\"}]}", &diffs, &figures),
                     5);
    assert_string_equal(diff_path(diffs, 4), "result.probes[1].id");
    json_decref(diffs);
    buf_release(&b);
}

static void test_load_errors(void **state)
{
    struct compare_side s;
    struct err e = {0};
    char dir[] = "/tmp/test_compare.XXXXXX", path[256], db[256];

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/nope.json", dir);
    assert_int_equal(compare_load(path, NULL, &s, &e), ERR_NOTFOUND);
    assert_non_null(strstr(e.msg, "no such file or folder"));
    err_clear(&e);
    assert_int_equal(compare_load("12", NULL, &s, &e), ERR_NOTFOUND);
    assert_string_equal(e.msg, "run 12: no history database (set --history)");
    err_clear(&e);
    snprintf(db, sizeof(db), "%s/h.db", dir);
    assert_int_equal(compare_load("12", db, &s, &e), ERR_NOTFOUND);
    assert_non_null(strstr(e.msg, "there is no database"));
    assert_int_equal(access(db, F_OK), -1); /* not created */
    err_clear(&e);
    snprintf(path, sizeof(path), "%s/r.json", dir);
    ut_put(dir, "r.json", "{\"format\": 7, \"result\": {}}");
    assert_int_equal(compare_load(path, NULL, &s, &e), ERR_INVALID);
    assert_non_null(strstr(e.msg, "is a report of format 7; this faultline reads format 1"));
    err_clear(&e);
    ut_put(dir, "r.json", "{\"format\": 1, \"result\": []}");
    assert_int_equal(compare_load(path, NULL, &s, &e), ERR_INVALID);
    assert_non_null(strstr(e.msg, "is not a faultline report"));
    err_clear(&e);
    ut_put(dir, "r.json", "{\"format\": 1,\n \"result\": {}, \"format\": 1}");
    assert_int_equal(compare_load(path, NULL, &s, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "r.json:2:"));
    err_clear(&e);
    /* a report whose run folder is gone: loaded, no tokens */
    ut_put(dir, "r.json", "{\"format\": 1, \"result\": {}, \"run_dir\": \"/nonexistent/x\"}");
    assert_int_equal(compare_load(path, NULL, &s, &e), 0);
    assert_int_equal(s.has_tokens, 0);
    assert_null(s.run_dir);
    compare_side_release(&s);
    unlink(path);
    rmdir(dir);
}

static void test_render_hostile(void **state)
{
    struct compare_side a, b;
    struct buf out = BUF_INIT;
    json_t *cmp;

    side(&a, report("x\\u001b[31m|<b>", "h", 80, "[]", "[]"), "a\nb");
    side(&b, report("x", "h", 80, "[]", "[]"), "B");
    cmp = compare_build(&a, &b);
    compare_render_text(cmp, &out);
    assert_null(strchr(out.data, '\x1b'));
    assert_non_null(strstr(out.data, "A  a?b: x?[31m|<b> (scored, complete)\n"));
    buf_reset(&out);
    compare_render_md(cmp, &out);
    assert_non_null(strstr(out.data, "- A: a b: x \\[31m\\|&lt;b&gt; (scored, complete)\n"));
    assert_null(strstr(out.data, "<b>"));
    json_decref(cmp);
    buf_release(&out);
    compare_side_release(&a);
    compare_side_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build),       cmocka_unit_test(test_warnings),
        cmocka_unit_test(test_gate),        cmocka_unit_test(test_drift),
        cmocka_unit_test(test_load_errors), cmocka_unit_test(test_render_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
