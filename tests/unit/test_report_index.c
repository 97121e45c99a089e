/*
 * Unit tests for src/report/index.c, the campaign index: the row builder (verdict, score,
 * outcome mix of the classes seen, cost summed over the repetitions, FLAKY), the URL encoding
 * of links, entries of a folder (reports, run folders standing for themselves or through their
 * report, one error per entry that is not a report), newest first, and hostile names escaped
 * in the HTML and Markdown index. tests/e2e/t1320-report-index.sh indexes real runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "report/index.h"
#include "report/rpt.h"
#include "util/buf.h"
#include "util/fs.h"
#include "helpers.h"
#include "util/banned.h"

static const char report_text[] =
    "{\"format\": 1, \"experiment\": {\"name\": \"exp<script>\"}, \"status\": \"complete\","
    " \"verdict\": \"scored\", \"resilience_score\": 62.5,"
    " \"repetitions\": [{\"rep\": 0, \"cost_usd\": 0.25}, {\"rep\": 1, \"cost_usd\": 0.5},"
    "                   {\"rep\": 2}],"
    " \"result\": {\"outcomes\": {\"SAFE_SUCCESS\": 1, \"SILENT_FAILURE\": 1, \"DEGRADED\": 0,"
    "                            \"HARMFUL_ACTION\": 1},"
    "   \"repetitions\": [{\"rep\": 0, \"faulted\": false, \"outcome\": \"SAFE_SUCCESS\"},"
    "                     {\"rep\": 1, \"faulted\": true, \"outcome\": \"SILENT_FAILURE\"},"
    "                     {\"rep\": 2, \"faulted\": true, \"outcome\": \"HARMFUL_ACTION\"}]}}";

static void test_row(void **state)
{
    json_t *report = ut_json(report_text), *row;

    (void)state;
    row = rpt_index_row(report, "out/r.json", "./out/r.html", 1700000000, -1);
    ut_assert_json(row, "{\"experiment\": \"exp<script>\", \"status\": \"complete\","
                        " \"verdict\": \"scored\", \"resilience_score\": 62.5, \"flaky\": true,"
                        " \"repetitions\": 3, \"outcomes\": {\"SAFE_SUCCESS\": 1,"
                        " \"SILENT_FAILURE\": 1, \"HARMFUL_ACTION\": 1}, \"cost_usd\": 0.75,"
                        " \"when\": 1700000000, \"source\": \"out/r.json\","
                        " \"link\": \"./out/r.html\", \"history_id\": null}");
    json_decref(row);
    json_decref(report);
    /* an invalid run: no score; not a report's members at all: defaults, never a crash */
    report = ut_json("{\"verdict\": \"invalid\", \"resilience_score\": null}");
    row = rpt_index_row(report, "bad\xff", NULL, 0, 7);
    ut_assert_json(row, "{\"experiment\": \"?\", \"status\": \"?\", \"verdict\": \"invalid\","
                        " \"resilience_score\": null, \"flaky\": false, \"repetitions\": 0,"
                        " \"outcomes\": {}, \"cost_usd\": 0.0, \"when\": 0,"
                        " \"source\": \"bad\xef\xbf\xbd\", \"link\": null, \"history_id\": 7}");
    json_decref(row);
    json_decref(report);
}

static void test_url(void **state)
{
    struct buf b = BUF_INIT;

    (void)state;
    assert_int_equal(rpt_index_url(&b, "./a b/javascript:x\"<>#?%()[]é-._~"), 0);
    assert_string_equal(b.data, "./a%20b/javascript%3Ax%22%3C%3E%23%3F%25%28%29%5B%5D%C3%A9-._~");
    buf_release(&b);
}

static void set_mtime(const char *path, long long t)
{
    struct timeval tv[2] = {{.tv_sec = (time_t)t}, {.tv_sec = (time_t)t}};
    assert_int_equal(utimes(path, tv), 0);
}

static void test_folder(void **state)
{
    char dir[] = "/tmp/faultline-unit-index-XXXXXX", path[512], cmd[600];
    struct rpt_index ix;
    struct buf b = BUF_INIT;
    json_t *runs;

    (void)state;
    assert_non_null(mkdtemp(dir));
    ut_put(dir, "d/old.json", report_text);
    ut_put(dir, "d/new<img onerror=x>.json", report_text);
    ut_put(dir, "d/new<img onerror=x>.html", "<p>the page</p>");
    ut_put(dir, "d/notes.json", "[1, 2]");
    ut_put(dir, "d/broken.json", "{\"format\": 1,");
    ut_put(dir, "d/README", "not an entry");
    snprintf(path, sizeof(path), "%s/d/old.json", dir);
    set_mtime(path, 1600000000);
    snprintf(path, sizeof(path), "%s/d/new<img onerror=x>.json", dir);
    set_mtime(path, 1700000000);

    snprintf(path, sizeof(path), "%s/index.html", dir);
    rpt_index_init(&ix, RPT_HTML, path);
    snprintf(path, sizeof(path), "%s/d", dir);
    assert_int_equal(rpt_index_add_path(&ix, path), 2);
    snprintf(path, sizeof(path), "%s/missing", dir);
    assert_int_equal(rpt_index_add_path(&ix, path), 0);
    assert_int_equal(json_array_size(ix.rows), 2);
    assert_int_equal(json_array_size(ix.errors), 3); /* broken.json, notes.json, missing */
    assert_non_null(
        strstr(json_string_value(json_object_get(json_array_get(ix.errors, 0), "error")),
               "broken.json:1:"));
    assert_int_equal(rpt_index_render(&ix, &b), 0);
    /* newest first; its link to the HTML next to it, relative and encoded; names escaped */
    runs = ix.rows;
    assert_string_equal(json_string_value(json_object_get(json_array_get(runs, 0), "link")),
                        "./d/new%3Cimg%20onerror%3Dx%3E.html");
    assert_string_equal(json_string_value(json_object_get(json_array_get(runs, 1), "link")),
                        "./d/old.json");
    assert_non_null(strstr(b.data, "<a href=\"./d/new%3Cimg%20onerror%3Dx%3E.html\">"));
    assert_non_null(strstr(b.data, "/d/new&lt;img onerror=x&gt;.json</a>"));
    assert_non_null(strstr(b.data, "exp&lt;script&gt;"));
    assert_null(strstr(b.data, "<script>"));
    assert_null(strstr(b.data, "<img"));
    assert_non_null(strstr(b.data, "default-src 'none'"));
    assert_true(strstr(b.data, "new&lt;img") < strstr(b.data, "old.json"));
    buf_release(&b);
    rpt_index_release(&ix);

    /* Markdown: the cells escaped, the link encoded (no space or parenthesis to break it) */
    rpt_index_init(&ix, RPT_MD, NULL);
    snprintf(path, sizeof(path), "%s/d", dir);
    assert_int_equal(rpt_index_add_path(&ix, path), 2);
    assert_int_equal(rpt_index_render(&ix, &b), 0);
    assert_non_null(strstr(b.data, "| exp&lt;script&gt; | scored (flaky) | 62.50 | "
                                   "SAFE\\_SUCCESS 1, SILENT\\_FAILURE 1, HARMFUL\\_ACTION 1 | "
                                   "0.7500 | ["));
    assert_non_null(strstr(b.data, "new%3Cimg%20onerror%3Dx%3E.md)") == NULL
                        ? strstr(b.data, "new%3Cimg%20onerror%3Dx%3E.json)")
                        : NULL);
    buf_release(&b);
    rpt_index_release(&ix);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row),
        cmocka_unit_test(test_url),
        cmocka_unit_test(test_folder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
