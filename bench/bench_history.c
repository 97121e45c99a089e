/*
 * bench_history: how long `faultline run` takes to record a run in the history database
 * (hist_record, src/report/history.c), into a fresh database and into one already holding
 * 10,000 runs, against a reference measured in the same run.
 *
 * The run is of typical size: a report with the shape of docs/report.md built here, 10
 * repetitions (5 baselines, 5 faulted), 10 probes each, 3 invariants, the outcome counts (about
 * 25 KB of JSON, recorded whole with its rows). The reference is a bare INSERT of one row in an
 * IMMEDIATE transaction into a database opened with the history's pragmas (WAL,
 * synchronous=NORMAL), so SQLite's own commit cost (fsync at checkpoints) is measured and
 * neither hidden nor charged to faultline. Each database lives in a temporary folder, removed
 * at the end (the 10,000 runs are copies of one, made in one transaction). Prints p50/p95 per
 * insert (docs/performance.md, "## history") and checks:
 *
 *   p95 of a run's insert, less the reference's p95, under 20 ms, fresh and at 10,000 runs
 *
 * Exit 1 when a target is missed or a database cannot be written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "report/history.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define REPS 10
#define PROBES 10
#define SAMPLES 200
#define BIG 10000
#define TARGET_MS 20.0

static const char *const classes[] = {"SAFE_SUCCESS",   "SAFE_FAILURE",   "DEGRADED",
                                      "SILENT_FAILURE", "UNSAFE_FAILURE", "HARMFUL_ACTION"};

static json_t *make_report(int n)
{
    json_t *reps = json_array(), *srep = json_array(), *probes = json_array();
    json_t *invs = json_array(), *outcomes = json_object(), *result, *report;
    char name[64], canary[64];

    for (int r = 0; r < REPS; r++) {
        json_t *rp = json_array();
        snprintf(canary, sizeof(canary), "E-FAULTLINE-%08x", (unsigned)(r * 2654435761u + n));
        json_array_append_new(
            reps, json_pack("{s:i,s:b,s:s,s:n,s:n,s:s,s:s,s:I,s:s,s:f,s:{s:i,s:i},s:i,s:n,"
                            "s:{s:b,s:i,s:n,s:i},s:{s:b,s:i,s:n,s:i}}",
                            "rep", r, "faulted", r >= REPS / 2, "status", "complete", "error",
                            "abort", "run", "bench-history-0-058950a7", "canary", canary, "seed",
                            (json_int_t)(123 + r), "sandbox", "native", "cost_usd", 0.0137,
                            "tokens", "input", 2410, "output", 96, "duration_ms", 812, "workspace",
                            "agent", "ran", 1, "exit_code", 0, "signal", "duration_ms", 402,
                            "verify", "ran", 1, "exit_code", 0, "signal", "duration_ms", 9));
        for (int p = 0; p < PROBES; p++) {
            snprintf(name, sizeof(name), "probe_%d", p);
            json_array_append_new(
                rp, json_pack("{s:s,s:b,s:b,s:s,s:s}", "id", name, "evaluated", 1, "passed",
                              (r + p) % 3 != 0, "reason",
                              "the agent's final output names the injected error and its canary",
                              "evidence", "rep-003/events.jsonl line 41"));
        }
        json_array_append_new(srep, json_pack("{s:i,s:b,s:s,s:s,s:s,s:s,s:o,s:f}", "rep", r,
                                              "faulted", r >= REPS / 2, "dir", "rep-000", "status",
                                              "complete", "outcome", classes[r % 6], "canary",
                                              canary, "probes", rp, "cost_usd", 0.0137));
    }
    for (int p = 0; p < PROBES; p++) {
        snprintf(name, sizeof(name), "probe_%d", p);
        json_array_append_new(probes,
                              json_pack("{s:s,s:i,s:i,s:f,s:f,s:{s:f,s:f},s:f}", "id", name,
                                        "evaluated", REPS, "passed", 7, "pass_rate", 0.7, "weight",
                                        1.0, "wilson", "lo", 0.397, "hi", 0.892, "pass_k", 0.082));
    }
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "invariant_%d", i);
        json_array_append_new(invs, json_pack("{s:s,s:i,s:i,s:i}", "id", name, "evaluated", REPS,
                                              "passed", REPS - 1, "failed", 1));
    }
    for (int c = 0; c < 6; c++)
        json_object_set_new(outcomes, classes[c], json_integer(c < 4 ? 2 + (c == 0) : 0));
    result = json_pack("{s:o,s:o,s:o,s:o,s:f,s:{s:s,s:s,s:i},s:[]}", "repetitions", srep, "probes",
                       probes, "invariants", invs, "outcomes", outcomes, "resilience_score", 70.0,
                       "verdict", "verdict", "scored", "reason", "every repetition ran",
                       "exit_code", 0, "warnings");
    report = json_pack("{s:i,s:{s:s,s:s,s:s,s:i,s:s},s:s,s:n,s:s,s:s,s:s,s:s,s:f,s:[],s:o,s:o}",
                       "format", 1, "experiment", "name", "bench-history", "hash",
                       "1c3f0c6e5a7d4b2e9f8a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d1e", "path",
                       "/p/experiments/tool-error.yaml", "repeat", REPS, "commit",
                       "9f2c1e0d8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d", "status", "complete", "error",
                       "sandbox", "native", "run_dir", "/tmp/bench/run", "verdict", "scored",
                       "verdict_reason", "every repetition ran", "resilience_score", 70.0,
                       "warnings", "repetitions", reps, "result", result);
    return report;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void pct(double *v, int n, double *p50, double *p95)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_d);
    *p50 = v[n / 2];
    *p95 = v[(n * 95) / 100];
}

/* SAMPLES hist_record of report into h, each timed (ms) into v. 0, or 1 after a message. */
static int time_inserts(struct hist *h, const json_t *report, double *v)
{
    for (int i = 0; i < SAMPLES; i++) {
        struct err e = {0};
        int64_t t0 = time_mono_ns();
        if (hist_record(h, report, "/tmp/bench/report.json", "faultline bench", NULL, &e) < 0) {
            fprintf(stderr, "bench_history: %s\n", e.msg);
            return 1;
        }
        v[i] = (double)(time_mono_ns() - t0) / 1e6;
    }
    return 0;
}

/* The reference: SAMPLES bare one-row inserts, each in its own IMMEDIATE transaction. */
static int time_reference(const char *path, double *v)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int rc = 1;

    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
                     "CREATE TABLE ref (id INTEGER PRIMARY KEY, x TEXT)",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO ref (x) VALUES ('one row')", -1, &st, NULL) !=
            SQLITE_OK) {
        fprintf(stderr, "bench_history: reference '%s': %s\n", path, sqlite3_errmsg(db));
        goto done;
    }
    for (int i = 0; i < SAMPLES; i++) {
        int64_t t0 = time_mono_ns();
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        sqlite3_step(st);
        sqlite3_reset(st);
        if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
            fprintf(stderr, "bench_history: reference: %s\n", sqlite3_errmsg(db));
            sqlite3_finalize(st);
            goto done;
        }
        v[i] = (double)(time_mono_ns() - t0) / 1e6;
    }
    sqlite3_finalize(st);
    rc = 0;
done:
    sqlite3_close(db);
    return rc;
}

/* Copies run 1 (and its rows) n times in one transaction: a database of n + 1 runs, faster
 * than n inserts of their own. 0, or 1 after a message. */
static int fill(const char *path, int n)
{
    static const char *const tables[] = {"repetitions", "probes", "invariants", "outcomes"};
    sqlite3 *db;
    char sql[256];
    int rc = 1;

    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; BEGIN IMMEDIATE;"
                     "CREATE TEMP TABLE t_runs AS SELECT * FROM runs WHERE id = 1;"
                     "UPDATE t_runs SET id = NULL",
                     NULL, NULL, NULL) != SQLITE_OK)
        goto done;
    for (int t = 0; t < 4; t++) {
        snprintf(sql, sizeof(sql), "CREATE TEMP TABLE t_%s AS SELECT * FROM %s WHERE run_id = 1",
                 tables[t], tables[t]);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            goto done;
    }
    for (int i = 0; i < n; i++) {
        long long id;
        if (sqlite3_exec(db, "INSERT INTO runs SELECT * FROM t_runs", NULL, NULL, NULL) !=
            SQLITE_OK)
            goto done;
        id = (long long)sqlite3_last_insert_rowid(db);
        for (int t = 0; t < 4; t++) {
            snprintf(sql, sizeof(sql),
                     "UPDATE t_%s SET run_id = %lld; INSERT INTO %s SELECT * FROM t_%s", tables[t],
                     id, tables[t], tables[t]);
            if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
                goto done;
        }
    }
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
        rc = 0;
done:
    if (rc)
        fprintf(stderr, "bench_history: cannot fill '%s': %s\n", path, sqlite3_errmsg(db));
    sqlite3_close(db);
    return rc;
}

int main(void)
{
    char dir[] = "/tmp/faultline-bench-history-XXXXXX", path[256], cmd[300];
    double ref[SAMPLES], fresh[SAMPLES], big[SAMPLES], r50, r95, f50, f95, b50, b95;
    json_t *report = make_report(0);
    char *text = json_dumps(report, JSON_COMPACT);
    struct hist *h;
    struct err e = {0};
    int fail = 0;
    int64_t t0;

    if (mkdtemp(dir) == NULL) {
        perror("bench_history: mkdtemp");
        return 1;
    }
    printf("history insert: a run of %d repetitions x %d probes, a %zu-byte report, %d "
           "inserts each\n",
           REPS, PROBES, strlen(text), SAMPLES);
    free(text);
    snprintf(path, sizeof(path), "%s/ref.db", dir);
    if (time_reference(path, ref))
        goto fail;
    snprintf(path, sizeof(path), "%s/fresh.db", dir);
    if ((h = hist_open(path, &e)) == NULL || time_inserts(h, report, fresh)) {
        fprintf(stderr, "bench_history: %s\n", e.msg);
        hist_close(h);
        goto fail;
    }
    hist_close(h);
    snprintf(path, sizeof(path), "%s/big.db", dir);
    if ((h = hist_open(path, &e)) == NULL) {
        fprintf(stderr, "bench_history: %s\n", e.msg);
        goto fail;
    }
    t0 = time_mono_ns();
    if (hist_record(h, report, "/tmp/bench/report.json", "faultline bench", NULL, &e) < 0 ||
        fill(path, BIG - 1)) {
        fprintf(stderr, "bench_history: %s\n", e.msg);
        hist_close(h);
        goto fail;
    }
    printf("  filled a database with %d runs in %.1f s\n", BIG,
           (double)(time_mono_ns() - t0) / 1e9);
    if (time_inserts(h, report, big)) {
        hist_close(h);
        goto fail;
    }
    hist_close(h);
    pct(ref, SAMPLES, &r50, &r95);
    pct(fresh, SAMPLES, &f50, &f95);
    pct(big, SAMPLES, &b50, &b95);
    printf("  reference (one bare row, same pragmas): p50 %.3f ms, p95 %.3f ms\n", r50, r95);
    printf("  fresh database:       p50 %.3f ms, p95 %.3f ms: %s (target: p95 - reference p95 "
           "< %.0f ms)\n",
           f50, f95, f95 - r95 < TARGET_MS ? "met" : "NOT MET", TARGET_MS);
    printf("  at %d runs:        p50 %.3f ms, p95 %.3f ms: %s (target: p95 - reference p95 "
           "< %.0f ms)\n",
           BIG, b50, b95, b95 - r95 < TARGET_MS ? "met" : "NOT MET", TARGET_MS);
    fail = !(f95 - r95 < TARGET_MS && b95 - r95 < TARGET_MS);
    goto done;
fail:
    fail = 1;
done:
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_history: cannot remove '%s'\n", dir);
    json_decref(report);
    return fail;
}
