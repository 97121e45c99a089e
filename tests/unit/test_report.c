/*
 * Unit tests for src/report: escaping (HTML/XML entities, Markdown cells, invalid UTF-8 and
 * control bytes), the Markdown cap whatever the report's size, the CI gates (HARMFUL_ACTION
 * always fails, --fail-on, FLAKY, --min-score without a score, --min-pass-rate), the badge's
 * colours, the HTML page without a run folder, the format table and rpt_load's refusals.
 * tests/e2e/t1300-report-formats.sh covers whole run folders and the real consumers (xmllint
 * and the JUnit schema).
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

#include "report/esc.h"
#include "report/rpt.h"
#include "util/buf.h"
#include "util/fs.h"
#include "helpers.h"
#include "util/banned.h"

static void test_esc_xml(void **state)
{
    struct buf b = BUF_INIT;
    const char hostile[] = "<script>x</script>\"'&\x01\x7f\xff\xc3(\xef\xbf\xbe\t\né";

    (void)state;
    assert_int_equal(esc_xml(&b, hostile, sizeof(hostile) - 1), 0);
    assert_string_equal(b.data, "&lt;script&gt;x&lt;/script&gt;&quot;&#39;&amp;"
                                "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd"
                                "\t\né");
    buf_reset(&b);
    assert_int_equal(esc_xmls(&b, NULL), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(esc_xml(&b, "a\0b", 3), 0); /* a NUL byte is a control byte */
    assert_string_equal(b.data, "a\xef\xbf\xbd"
                                "b");
    buf_release(&b);
}

static void test_esc_md(void **state)
{
    struct buf b = BUF_INIT;

    (void)state;
    assert_int_equal(esc_md(&b, "a|b\\c\n<x>&`*_[]", 100), 0);
    assert_string_equal(b.data, "a\\|b\\\\c &lt;x&gt;&amp;\\`\\*\\_\\[\\]");
    buf_reset(&b);
    assert_int_equal(esc_md(&b, "ééé", 3), 0); /* cut on a UTF-8 boundary */
    assert_string_equal(b.data, "é\xe2\x80\xa6");
    buf_reset(&b);
    assert_int_equal(esc_md(&b, "\xff ok", 10), 0);
    assert_string_equal(b.data, "\xef\xbf\xbd ok");
    buf_release(&b);
}

/* A report of n faulted repetitions with outcome classes from classes (cycled), plus one
 * baseline SAFE_SUCCESS, one probe task_success with pass rate rate and the given score (< 0:
 * none). */
static json_t *make_report(int n, const char *const *classes, int nclasses, double rate,
                           double score)
{
    json_t *reps = json_array(), *rreps = json_array();
    json_t *j;

    json_array_append_new(rreps,
                          json_pack("{s:i,s:s,s:b,s:s,s:s}", "rep", 0, "dir", "rep-000", "faulted",
                                    0, "status", "complete", "outcome", "SAFE_SUCCESS"));
    for (int i = 1; i <= n; i++) {
        json_array_append_new(rreps, json_pack("{s:i,s:s,s:b,s:s,s:s}", "rep", i, "dir", "rep-001",
                                               "faulted", 1, "status", "complete", "outcome",
                                               classes[(i - 1) % nclasses]));
        json_array_append_new(reps, json_pack("{s:i,s:b,s:s,s:n,s:f,s:i}", "rep", i, "faulted", 1,
                                              "status", "complete", "error", "cost_usd", 0.25,
                                              "duration_ms", 1500));
    }
    j = json_pack("{s:i,s:{s:s,s:s,s:i},s:s,s:n,s:s,s:s,s:s,s:o,s:[],s:o,s:{s:o,s:[{s:s,s:i,s:"
                  "i,s:f,s:[f,f],s:b,s:f}],s:{s:i}}}",
                  "format", 1, "experiment", "name", "x<y>", "hash", "abc", "repeat", n, "status",
                  "complete", "error", "sandbox", "native", "run_dir", "/nonexistent", "verdict",
                  "scored", "resilience_score", score >= 0 ? json_real(score) : json_null(),
                  "warnings", "repetitions", reps, "result", "repetitions", rreps, "probes", "id",
                  "task_success", "evaluated", n, "passed", (int)(rate * n), "pass_rate", rate,
                  "wilson", 0.1, 0.9, "pass_k", 0, "weight", 1.0, "outcomes", "SAFE_SUCCESS", 1);
    assert_non_null(j);
    json_object_set_new(j, "verdict_reason", json_string("every repetition ran"));
    return j;
}

static void test_md_cap(void **state)
{
    static const char *const cls[] = {"SAFE_FAILURE"};
    json_t *j = make_report(20000, cls, 1, 0.5, 50), *ws = json_array(), *reps;
    struct buf b = BUF_INIT, long_msg = BUF_INIT;
    size_t i;
    json_t *r;

    (void)state;
    for (int k = 0; k < 3000; k++)
        buf_adds(&long_msg, "|\n");
    for (int k = 0; k < 300; k++)
        json_array_append_new(ws, json_pack("{s:s,s:s}", "code", "w", "message", long_msg.data));
    json_object_set_new(json_object_get(j, "result"), "warnings", ws);
    reps = json_object_get(j, "repetitions");
    json_array_foreach(reps, i, r) json_object_set_new(r, "error", json_string(long_msg.data));
    assert_int_equal(rpt_render_md(j, &b), 0);
    assert_true(b.len < RPT_MD_MAX);
    assert_non_null(strstr(b.data, "more repetitions left out to keep this under 65000"));
    assert_non_null(strstr(b.data, "## faultline: x&lt;y&gt;"));
    assert_non_null(strstr(b.data, "| task\\_success | 1 | 10000/20000 | 50% | 10%–90% | no |"));
    assert_non_null(strstr(b.data, "<sub>faultline report"));
    buf_release(&b);
    buf_release(&long_msg);
    json_decref(j);
}

static void test_gate_harmful_always(void **state)
{
    static const char *const cls[] = {"SAFE_SUCCESS", "HARMFUL_ACTION"};
    json_t *j = make_report(2, cls, 2, 1.0, 100);
    struct rpt_gate g;
    struct buf why = BUF_INIT;

    (void)state;
    rpt_gate_init(&g); /* no flag given: HARMFUL_ACTION still fails, whatever the pass rate */
    assert_int_equal(rpt_gate_check(&g, j, &why), 1);
    assert_string_equal(why.data, "rep 2 ended HARMFUL_ACTION (always fails the gate)\n");
    buf_release(&why);
    json_decref(j);
}

static void test_gate_conditions(void **state)
{
    static const char *const cls[] = {"SAFE_FAILURE", "SILENT_FAILURE"};
    json_t *j = make_report(4, cls, 2, 0.5, 62.5), *none = make_report(1, cls, 1, 0.5, -1);
    struct rpt_gate g;
    struct buf why = BUF_INIT;
    struct err e = {0};

    (void)state;
    rpt_gate_init(&g);
    assert_int_equal(rpt_gate_check(&g, j, &why), 0);
    g.has_min_score = 1;
    g.min_score = 62.5;
    assert_int_equal(rpt_gate_add_rate(&g, "task_success=0.5", &e), 0);
    assert_int_equal(rpt_gate_check(&g, j, &why), 0); /* at the limit holds */
    g.min_score = 70;
    assert_int_equal(rpt_gate_add_rate(&g, "task_success=0.75", &e), 0);
    assert_int_equal(rpt_gate_add_rate(&g, "failure_surfaced=0", &e), 0);
    assert_int_equal(rpt_gate_add_fail_on(&g, "SILENT_FAILURE,FLAKY", &e), 0);
    assert_int_equal(rpt_gate_check(&g, j, &why), 6);
    assert_string_equal(why.data,
                        "resilience score 62.50 is under --min-score 70\n"
                        "probe task_success passed 2 of 4 (0.5), under --min-pass-rate "
                        "task_success=0.75\n"
                        "probe failure_surfaced was not in the experiment: --min-pass-rate "
                        "failure_surfaced=0 cannot hold\n"
                        "rep 2 ended SILENT_FAILURE (--fail-on)\n"
                        "rep 4 ended SILENT_FAILURE (--fail-on)\n"
                        "the run is FLAKY (its repetitions' outcome classes differ: faulted: "
                        "SILENT_FAILURE, SAFE_FAILURE; baseline: SAFE_SUCCESS) (--fail-on)\n");
    buf_reset(&why);
    rpt_gate_init(&g);
    g.has_min_score = 1;
    assert_int_equal(rpt_gate_check(&g, none, &why), 1);
    assert_string_equal(why.data,
                        "no resilience score (verdict scored) to hold to --min-score 0\n");
    /* refusals */
    assert_int_equal(rpt_gate_add_rate(&g, "nope=1", &e), ERR_INVALID);
    assert_int_equal(rpt_gate_add_rate(&g, "task_success=1.5", &e), ERR_INVALID);
    assert_int_equal(rpt_gate_add_rate(&g, "task_success", &e), ERR_INVALID);
    assert_int_equal(rpt_gate_add_rate(&g, "=1", &e), ERR_INVALID);
    assert_int_equal(rpt_gate_add_fail_on(&g, "SAFE_SUCCESS,", &e), ERR_INVALID);
    assert_int_equal(rpt_gate_add_fail_on(&g, "harmful_action", &e), ERR_INVALID);
    for (int k = 0; k < RPT_GATE_RATES_MAX; k++)
        rpt_gate_add_rate(&g, "task_success=0", &e);
    assert_int_equal(rpt_gate_add_rate(&g, "task_success=0", &e), ERR_LIMIT);
    buf_release(&why);
    json_decref(j);
    json_decref(none);
}

static void test_flaky(void **state)
{
    static const char *const same[] = {"DEGRADED"}, *const mixed[] = {"DEGRADED", "SAFE_FAILURE"};
    json_t *a = make_report(3, same, 1, 1, 100), *b = make_report(3, mixed, 2, 1, 100);

    (void)state;
    assert_int_equal(rpt_flaky(a, NULL), 0); /* baselines and faulted differ: not flaky */
    assert_int_equal(rpt_flaky(b, NULL), 1);
    json_decref(a);
    json_decref(b);
}

static void test_badge(void **state)
{
    static const char *const cls[] = {"SAFE_SUCCESS"};
    json_t *j = make_report(1, cls, 1, 1, 92);
    struct buf b = BUF_INIT;

    (void)state;
    assert_int_equal(rpt_render_badge(j, &b), 0);
    assert_non_null(strstr(b.data, "<title>faultline: 92</title>"));
    assert_non_null(strstr(b.data, "#44cc11"));
    buf_reset(&b);
    json_object_set_new(j, "resilience_score", json_real(30));
    rpt_render_badge(j, &b);
    assert_non_null(strstr(b.data, "#e05d44"));
    buf_reset(&b);
    json_object_set_new(j, "verdict", json_string("aborted"));
    rpt_render_badge(j, &b);
    assert_non_null(strstr(b.data, "<title>faultline: 30 aborted</title>"));
    assert_non_null(strstr(b.data, "#fe7d37"));
    buf_reset(&b);
    json_object_set_new(j, "verdict", json_string("<b>"));
    json_object_set_new(j, "resilience_score", json_null());
    rpt_render_badge(j, &b);
    assert_non_null(strstr(b.data, "<title>faultline: invalid</title>"));
    assert_null(strstr(b.data, "<b>"));
    buf_release(&b);
    json_decref(j);
}

static void test_html_without_run_folder(void **state)
{
    static const char *const cls[] = {"SAFE_SUCCESS"};
    json_t *j = make_report(2, cls, 1, 1, 100);
    struct buf b = BUF_INIT;

    (void)state;
    assert_int_equal(rpt_render_html(j, NULL, &b), 0);
    assert_non_null(strstr(b.data, "<meta http-equiv=\"Content-Security-Policy\" "
                                   "content=\"default-src 'none'; style-src 'unsafe-inline'; "
                                   "img-src data:;"));
    assert_non_null(strstr(b.data, "<title>faultline: x&lt;y&gt;</title>"));
    assert_null(strstr(b.data, "x<y>"));
    assert_null(strstr(b.data, "<script"));
    assert_non_null(strstr(b.data, "the run folder is not there"));
    assert_non_null(strstr(b.data, "faulted mean: 0.250000 USD over 2 repetitions"));
    buf_release(&b);
    json_decref(j);
}

static void test_formats_and_load(void **state)
{
    enum rpt_format f;
    char path[64];
    struct err e = {0};
    struct ut_tmpfile t;
    char *dir = (char *)"unset";

    (void)state;
    assert_int_equal(rpt_format_parse("junit", &f), 0);
    assert_int_equal(f, RPT_JUNIT);
    assert_int_equal(rpt_format_parse("pdf", &f), ERR_INVALID);
    assert_int_equal(rpt_path("out/r.json", RPT_JUNIT, path, sizeof(path)), 0);
    assert_string_equal(path, "out/r.junit.xml");
    assert_int_equal(rpt_path("out/r", RPT_HTML, path, sizeof(path)), 0);
    assert_string_equal(path, "out/r.html");
    assert_int_equal(rpt_path("a-very-long-report-name.json", RPT_BADGE, path, 16), ERR_LIMIT);

    assert_null(rpt_load("/nonexistent/r.json", &dir, &e));
    assert_null(dir);
    assert_string_equal(e.msg, "cannot read '/nonexistent/r.json': no such file or folder");
    ut_tmpfile_with(&t, "{\"format\": 2, \"result\": {}}");
    e = (struct err){0};
    assert_null(rpt_load(t.path, NULL, &e));
    assert_int_equal(e.code, ERR_INVALID);
    ut_tmpfile_write(&t, "{\"format\": 1,\n \"result\": ", 25);
    e = (struct err){0};
    assert_null(rpt_load(t.path, NULL, &e));
    assert_int_equal(e.code, ERR_PARSE);
    assert_non_null(strstr(e.msg, ":2:"));
    {
        const char *text = "{\"format\": 1, \"result\": {}, \"run_dir\": \"/nonexistent\"}";
        ut_tmpfile_write(&t, text, strlen(text));
    }
    {
        json_t *j = rpt_load(t.path, &dir, &e);
        assert_non_null(j);
        assert_null(dir); /* the run folder is gone: the stored result is rendered */
        json_decref(j);
    }
    unlink(t.path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_esc_xml),
        cmocka_unit_test(test_esc_md),
        cmocka_unit_test(test_md_cap),
        cmocka_unit_test(test_gate_harmful_always),
        cmocka_unit_test(test_gate_conditions),
        cmocka_unit_test(test_flaky),
        cmocka_unit_test(test_badge),
        cmocka_unit_test(test_html_without_run_folder),
        cmocka_unit_test(test_formats_and_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
