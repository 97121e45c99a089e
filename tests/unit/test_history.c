/*
 * Unit tests for src/report/history.c: the schema made and versioned on open, a newer schema
 * refused, a run recorded and listed back (newest first, by experiment, limited), a corrupt
 * file refused with its path, the default path's order (FAULTLINE_HISTORY, XDG_STATE_HOME,
 * HOME), and 8 processes writing at once with no row lost (WAL, busy timeout).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "report/history.h"
#include "util/buf.h"
#include "util/fs.h"
#include "helpers.h"
#include "util/banned.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/faultline-hist-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    struct err e = {0};
    (void)state;
    fs_remove_tree(dir, &e);
    return 0;
}

static json_t *report(const char *name, double score)
{
    json_t *j = ut_json("{\"format\": 1, \"experiment\": {\"name\": \"x\", \"hash\": \"h\", "
                        "\"path\": \"/p/x.yaml\", \"repeat\": 1}, \"status\": \"complete\", "
                        "\"error\": null, \"sandbox\": \"native\", \"run_dir\": \"/r\", "
                        "\"verdict\": \"scored\", \"verdict_reason\": \"every repetition ran\", "
                        "\"warnings\": [], \"repetitions\": [{\"rep\": 0, \"faulted\": false, "
                        "\"status\": \"complete\", \"cost_usd\": 0.25, \"seed\": 7, "
                        "\"duration_ms\": 10}, {\"rep\": 1, \"faulted\": true, \"status\": "
                        "\"complete\", \"cost_usd\": 0.5, \"abort\": {\"reason\": "
                        "\"cost_usd_above\"}}], \"result\": {\"repetitions\": [{\"rep\": 0, "
                        "\"faulted\": false, \"status\": \"complete\", \"outcome\": "
                        "\"SAFE_SUCCESS\"}, {\"rep\": 1, \"faulted\": true, \"status\": "
                        "\"complete\", \"outcome\": \"DEGRADED\"}], \"probes\": [{\"id\": "
                        "\"task_success\", \"evaluated\": 1, \"passed\": 1, \"pass_rate\": 1.0, "
                        "\"weight\": 1.0}], \"invariants\": [{\"id\": \"terminated\", "
                        "\"evaluated\": 2, \"passed\": 2, \"failed\": 0}], \"outcomes\": "
                        "{\"SAFE_SUCCESS\": 1, \"DEGRADED\": 1, \"HARMFUL_ACTION\": 0}}}");
    json_object_set_new(json_object_get(j, "experiment"), "name", json_string(name));
    json_object_set_new(j, "resilience_score", json_real(score));
    return j;
}

static void test_record_and_list(void **state)
{
    char path[128];
    struct err e = {0};
    struct hist *h;
    json_t *a = report("alpha", 50), *b = report("beta", 75), *runs;
    long long id1 = 0, id2 = 0, id3 = 0;

    (void)state;
    snprintf(path, sizeof(path), "%s/sub/dir/history.db", dir); /* folders made */
    h = hist_open(path, &e);
    assert_non_null(h);
    assert_int_equal(hist_version(h), HIST_SCHEMA_VERSION);
    assert_int_equal(hist_record(h, a, "/o/a.json", "9.9", &id1, &e), 0);
    assert_int_equal(hist_record(h, b, "/o/b.json", "9.9", &id2, &e), 0);
    assert_int_equal(hist_record(h, a, "/o/c.json", "9.9", &id3, &e), 0);
    assert_true(id1 < id2 && id2 < id3);
    runs = hist_list(h, NULL, 10, &e);
    assert_non_null(runs);
    assert_int_equal(json_array_size(runs), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 0), "id")), id3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(runs, 0), "report")),
                        "/o/c.json");
    assert_string_equal(json_string_value(json_object_get(json_array_get(runs, 0), "outcomes")),
                        "DEGRADED=1 SAFE_SUCCESS=1");
    assert_true(json_number_value(json_object_get(json_array_get(runs, 1), "cost_usd")) == 0.75);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(runs, 1), "faultline_version")), "9.9");
    json_decref(runs);
    runs = hist_list(h, "alpha", 1, &e);
    assert_int_equal(json_array_size(runs), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 0), "id")), id3);
    json_decref(runs);
    hist_close(h);

    /* the rows of the other tables, read with SQLite itself */
    {
        sqlite3 *db;
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db,
                                            "SELECT (SELECT count(*) FROM repetitions), (SELECT "
                                            "count(*) FROM probes), (SELECT count(*) FROM "
                                            "invariants), (SELECT abort_reason FROM repetitions "
                                            "WHERE run_id = 1 AND rep = 1), (SELECT seed FROM "
                                            "repetitions WHERE run_id = 1 AND rep = 0)",
                                            -1, &st, NULL),
                         SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), 6);
        assert_int_equal(sqlite3_column_int(st, 1), 3);
        assert_int_equal(sqlite3_column_int(st, 2), 3);
        assert_string_equal((const char *)sqlite3_column_text(st, 3), "cost_usd_above");
        assert_int_equal(sqlite3_column_int(st, 4), 7);
        sqlite3_finalize(st);
        /* a newer schema than this faultline's is refused */
        assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
    }
    e = (struct err){0};
    assert_null(hist_open(path, &e));
    {
        char want[96];
        snprintf(want, sizeof(want), "schema version 99 is newer than this faultline's (%d)",
                 HIST_SCHEMA_VERSION);
        assert_non_null(strstr(e.msg, want));
    }
    json_decref(a);
    json_decref(b);
}

/* A database a faultline of schema 1 wrote (a fixture of that schema, one run) is migrated on
 * open: its run keeps its figures, with no commit or tokens; a new run records both. */
static void test_migrate_from_1(void **state)
{
    char path[128];
    struct err e = {0};
    struct hist *h;
    sqlite3 *db;
    json_t *r, *list;
    long long id;

    (void)state;
    snprintf(path, sizeof(path), "%s/v1.db", dir);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, recorded_at INTEGER "
                     "NOT NULL, experiment TEXT NOT NULL, experiment_hash TEXT NOT NULL, "
                     "experiment_path TEXT, repeat INTEGER, status TEXT NOT NULL, verdict TEXT NOT "
                     "NULL, verdict_reason TEXT, resilience_score REAL, cost_usd REAL NOT NULL, "
                     "sandbox TEXT, run_dir TEXT, report TEXT, faultline_version TEXT NOT NULL, "
                     "report_json TEXT NOT NULL);"
                     "CREATE TABLE repetitions (run_id INTEGER NOT NULL, rep INTEGER NOT NULL, "
                     "faulted INTEGER NOT NULL, status TEXT, outcome TEXT, cost_usd REAL, "
                     "duration_ms INTEGER, canary TEXT, seed INTEGER, abort_reason TEXT, error "
                     "TEXT, PRIMARY KEY (run_id, rep));"
                     "CREATE TABLE probes (run_id INTEGER NOT NULL, probe TEXT NOT NULL, evaluated "
                     "INTEGER, passed INTEGER, pass_rate REAL, weight REAL, PRIMARY KEY (run_id, "
                     "probe));"
                     "CREATE TABLE invariants (run_id INTEGER NOT NULL, invariant TEXT NOT NULL, "
                     "evaluated INTEGER, passed INTEGER, failed INTEGER);"
                     "CREATE TABLE outcomes (run_id INTEGER NOT NULL, class TEXT NOT NULL, count "
                     "INTEGER NOT NULL, PRIMARY KEY (run_id, class));"
                     "INSERT INTO runs (recorded_at, experiment, experiment_hash, status, verdict, "
                     "cost_usd, faultline_version, report_json) VALUES (1, 'old', 'h', "
                     "'complete', 'scored', 0.5, '0.0.9', '{}');"
                     "PRAGMA user_version = 1;",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);

    h = hist_open(path, &e);
    assert_non_null(h);
    assert_int_equal(hist_version(h), HIST_SCHEMA_VERSION);
    r = report("new", 90);
    json_object_set_new(json_object_get(r, "experiment"), "commit", json_string("abc123"));
    json_object_set_new(json_array_get(json_object_get(r, "repetitions"), 0), "tokens",
                        ut_json("{\"input\": 100, \"output\": 20}"));
    json_object_set_new(json_array_get(json_object_get(r, "repetitions"), 1), "tokens",
                        ut_json("{\"input\": 5, \"output\": 1}"));
    assert_int_equal(hist_record(h, r, "/o/new.json", "9.9", &id, &e), 0);
    list = hist_list(h, NULL, 10, &e);
    assert_non_null(list);
    assert_int_equal(json_array_size(list), 2);
    ut_assert_json(json_object_get(json_array_get(list, 0), "git_commit"), "\"abc123\"");
    ut_assert_json(json_object_get(json_array_get(list, 0), "input_tokens"), "105");
    ut_assert_json(json_object_get(json_array_get(list, 0), "output_tokens"), "21");
    ut_assert_json(json_object_get(json_array_get(list, 1), "experiment"), "\"old\"");
    ut_assert_json(json_object_get(json_array_get(list, 1), "git_commit"), "null");
    ut_assert_json(json_object_get(json_array_get(list, 1), "input_tokens"), "null");
    json_decref(list);
    json_decref(r);
    hist_close(h);
}

static void test_corrupt(void **state)
{
    char path[128];
    struct err e = {0};
    struct buf junk = BUF_INIT;

    (void)state;
    snprintf(path, sizeof(path), "%s/corrupt.db", dir);
    for (int i = 0; i < 512; i++)
        buf_adds(&junk, "not a database ");
    assert_int_equal(fs_write_file(path, junk.data, junk.len, &e), 0);
    assert_null(hist_open(path, &e));
    assert_int_equal(e.code, ERR_IO);
    assert_non_null(strstr(e.msg, "corrupt.db': cannot open: file is not a database"));
    buf_release(&junk);
}

static void test_default_path(void **state)
{
    char p[256];

    (void)state;
    setenv("FAULTLINE_HISTORY", "/h/x.db", 1);
    setenv("XDG_STATE_HOME", "/state", 1);
    setenv("HOME", "/home/u", 1);
    assert_int_equal(hist_default_path(p, sizeof(p)), 0);
    assert_string_equal(p, "/h/x.db");
    unsetenv("FAULTLINE_HISTORY");
    assert_int_equal(hist_default_path(p, sizeof(p)), 0);
    assert_string_equal(p, "/state/faultline/history.db");
    setenv("XDG_STATE_HOME", "relative", 1); /* not absolute: ignored, as the spec says */
    assert_int_equal(hist_default_path(p, sizeof(p)), 0);
    assert_string_equal(p, "/home/u/.local/state/faultline/history.db");
    unsetenv("XDG_STATE_HOME");
    unsetenv("HOME");
    assert_int_equal(hist_default_path(p, sizeof(p)), ERR_NOTFOUND);
    setenv("HOME", "/home/u", 1);
    assert_int_equal(hist_default_path(p, 8), ERR_LIMIT);
}

#define WRITERS 8
#define EACH 20

static void test_parallel_writers(void **state)
{
    char path[128];
    struct err e = {0};
    pid_t pids[WRITERS];
    struct hist *h;
    json_t *runs;

    (void)state;
    snprintf(path, sizeof(path), "%s/parallel.db", dir);
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            char name[32];
            int bad = 0;
            snprintf(name, sizeof(name), "writer-%d", w);
            /* each opens the database itself, the first ones racing to make the schema */
            struct hist *c = hist_open(path, &e);
            json_t *r = report(name, w);
            for (int i = 0; c && i < EACH; i++)
                if (hist_record(c, r, "/o/r.json", "t", NULL, &e) < 0) {
                    fprintf(stderr, "writer %d: %s\n", w, e.msg);
                    bad = 1;
                }
            json_decref(r);
            hist_close(c);
            _exit(c == NULL || bad);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status = 0;
        assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    h = hist_open(path, &e);
    assert_non_null(h);
    runs = hist_list(h, NULL, HIST_LIMIT_MAX, &e);
    assert_int_equal(json_array_size(runs), WRITERS * EACH);
    json_decref(runs);
    for (int w = 0; w < WRITERS; w++) {
        char name[32];
        snprintf(name, sizeof(name), "writer-%d", w);
        runs = hist_list(h, name, HIST_LIMIT_MAX, &e);
        assert_int_equal(json_array_size(runs), EACH);
        json_decref(runs);
    }
    hist_close(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_and_list),
        cmocka_unit_test(test_migrate_from_1),
        cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_default_path),
        cmocka_unit_test(test_parallel_writers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
