/* history: see history.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "report/esc.h"
#include "report/history.h"
#include "util/fs.h"
#include "util/banned.h"

struct hist {
    sqlite3 *db;
    char path[1024];
};

/* Version N+1's schema is migrations[N], applied in one transaction with user_version. */
static const char *const migrations[] = {
    /* 1 */
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " recorded_at INTEGER NOT NULL," /* seconds since the epoch */
    " experiment TEXT NOT NULL, experiment_hash TEXT NOT NULL, experiment_path TEXT,"
    " repeat INTEGER, status TEXT NOT NULL, verdict TEXT NOT NULL, verdict_reason TEXT,"
    " resilience_score REAL, cost_usd REAL NOT NULL, sandbox TEXT, run_dir TEXT, report TEXT,"
    " faultline_version TEXT NOT NULL, report_json TEXT NOT NULL);"
    "CREATE INDEX runs_experiment ON runs(experiment, id);"
    "CREATE TABLE repetitions ("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, rep INTEGER NOT NULL,"
    " faulted INTEGER NOT NULL, status TEXT, outcome TEXT, cost_usd REAL, duration_ms INTEGER,"
    " canary TEXT, seed INTEGER, abort_reason TEXT, error TEXT, PRIMARY KEY (run_id, rep));"
    "CREATE TABLE probes ("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, probe TEXT NOT NULL,"
    " evaluated INTEGER, passed INTEGER, pass_rate REAL, weight REAL,"
    " PRIMARY KEY (run_id, probe));"
    "CREATE TABLE invariants ("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, invariant TEXT NOT NULL,"
    " evaluated INTEGER, passed INTEGER, failed INTEGER);"
    "CREATE TABLE outcomes ("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, class TEXT NOT NULL,"
    " count INTEGER NOT NULL, PRIMARY KEY (run_id, class));",
    /* 2: the commit the repetitions ran on, and the model tokens */
    "ALTER TABLE runs ADD COLUMN git_commit TEXT;"
    "ALTER TABLE runs ADD COLUMN input_tokens INTEGER;"
    "ALTER TABLE runs ADD COLUMN output_tokens INTEGER;"
    "ALTER TABLE repetitions ADD COLUMN input_tokens INTEGER;"
    "ALTER TABLE repetitions ADD COLUMN output_tokens INTEGER;",
};

static int db_err(struct hist *h, struct err *e, const char *what)
{
    return err_set(e, ERR_IO, "history '%s': %s: %s", h->path, what, sqlite3_errmsg(h->db));
}

int hist_default_path(char *out, size_t size)
{
    const char *env = getenv("FAULTLINE_HISTORY"), *state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    int n;

    if (env && env[0])
        n = snprintf(out, size, "%s", env);
    else if (state && state[0] == '/')
        n = snprintf(out, size, "%s/faultline/history.db", state);
    else if (home && home[0] == '/')
        n = snprintf(out, size, "%s/.local/state/faultline/history.db", home);
    else
        return ERR_NOTFOUND;
    return n < 0 || (size_t)n >= size ? ERR_LIMIT : 0;
}

int hist_version(struct hist *h)
{
    sqlite3_stmt *st;
    int v = 0;

    if (sqlite3_prepare_v2(h->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int migrate(struct hist *h, struct err *e)
{
    int v = hist_version(h);

    if (v > HIST_SCHEMA_VERSION)
        return err_set(e, ERR_IO,
                       "history '%s': schema version %d is newer than this faultline's (%d)",
                       h->path, v, HIST_SCHEMA_VERSION);
    while (v < HIST_SCHEMA_VERSION) {
        char pragma[64];
        if (sqlite3_exec(h->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
            return db_err(h, e, "cannot migrate");
        /* another writer may have migrated while this one waited for the lock */
        if (hist_version(h) != v) {
            sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
            v = hist_version(h);
            continue;
        }
        snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", v + 1);
        if (sqlite3_exec(h->db, migrations[v], NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(h->db, pragma, NULL, NULL, NULL) != SQLITE_OK) {
            db_err(h, e, "cannot migrate");
            sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
            return ERR_IO;
        }
        if (sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            return db_err(h, e, "cannot migrate");
        v++;
    }
    return 0;
}

struct hist *hist_open(const char *path, struct err *e)
{
    struct hist *h = xcalloc(1, sizeof(*h));
    char dir[1024], *slash;

    if ((size_t)snprintf(h->path, sizeof(h->path), "%s", path) >= sizeof(h->path)) {
        err_set(e, ERR_LIMIT, "history path '%.100s' is too long", path);
        goto fail;
    }
    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (fs_mkdirs(dir, e) < 0)
            goto fail;
    }
    if (sqlite3_open_v2(path, &h->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        db_err(h, e, "cannot open");
        goto fail;
    }
    sqlite3_busy_timeout(h->db, HIST_BUSY_MS);
    /* WAL: readers never block the writer; NORMAL sync is durable at each checkpoint */
    if (sqlite3_exec(h->db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     " PRAGMA foreign_keys=ON",
                     NULL, NULL, NULL) != SQLITE_OK) {
        db_err(h, e, "cannot open");
        goto fail;
    }
    if (migrate(h, e) < 0)
        goto fail;
    return h;
fail:
    hist_close(h);
    return NULL;
}

void hist_close(struct hist *h)
{
    if (h == NULL)
        return;
    sqlite3_close(h->db);
    free(h);
}

/* Binds a JSON value to parameter i: a number, a string, else NULL. */
static void bind_json(sqlite3_stmt *st, int i, const json_t *v)
{
    if (json_is_integer(v))
        sqlite3_bind_int64(st, i, (sqlite3_int64)json_integer_value(v));
    else if (json_is_number(v))
        sqlite3_bind_double(st, i, json_number_value(v));
    else if (json_is_string(v))
        sqlite3_bind_text(st, i, json_string_value(v), -1, SQLITE_TRANSIENT);
    else if (json_is_boolean(v))
        sqlite3_bind_int(st, i, json_is_true(v));
    else
        sqlite3_bind_null(st, i);
}

/* Prepares sql, binds the n values, steps it once. 0 or ERR_IO. */
static int exec_row(struct hist *h, const char *sql, const json_t *const *vals, int n,
                    struct err *e)
{
    sqlite3_stmt *st;
    int rc;

    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(h, e, "cannot record the run");
    for (int i = 0; i < n; i++)
        bind_json(st, i + 1, vals[i]);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_err(h, e, "cannot record the run");
}

int hist_record(struct hist *h, const json_t *report, const char *report_path,
                const char *version_text, long long *id, struct err *e)
{
    const json_t *x = json_object_get(report, "experiment");
    const json_t *result = json_object_get(report, "result"), *r, *v;
    json_t *tmp = json_array(), *rep_path, *now, *cost, *version, *dump, *tin, *tout;
    char *text = json_dumps(report, JSON_COMPACT | JSON_SORT_KEYS);
    double total = 0;
    long long in = 0, out = 0;
    int have_tokens = 0;
    long long run_id;
    const char *k;
    size_t i;
    int rc = ERR_IO;

    json_array_foreach(json_object_get(report, "repetitions"), i, r)
    {
        const json_t *t = json_object_get(r, "tokens");
        total += esc_num(r, "cost_usd", 0);
        if (json_is_object(t)) {
            have_tokens = 1;
            in += esc_int(t, "input", 0);
            out += esc_int(t, "output", 0);
        }
    }
    tin = have_tokens ? json_integer(in) : json_null();
    tout = have_tokens ? json_integer(out) : json_null();
    json_array_append_new(tmp, tin);
    json_array_append_new(tmp, tout);
    rep_path = json_string(report_path ? report_path : "");
    now = json_integer((json_int_t)time(NULL));
    cost = json_real(total);
    version = json_string(version_text ? version_text : "");
    dump = json_string(text ? text : "{}");
    json_array_append_new(tmp, rep_path);
    json_array_append_new(tmp, now);
    json_array_append_new(tmp, cost);
    json_array_append_new(tmp, version);
    json_array_append_new(tmp, dump);
    free(text);
    if (sqlite3_exec(h->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        db_err(h, e, "cannot record the run");
        goto done;
    }
    {
        const json_t *vals[] = {now,
                                json_object_get(x, "name"),
                                json_object_get(x, "hash"),
                                json_object_get(x, "path"),
                                json_object_get(x, "repeat"),
                                json_object_get(report, "status"),
                                json_object_get(report, "verdict"),
                                json_object_get(report, "verdict_reason"),
                                json_object_get(report, "resilience_score"),
                                cost,
                                json_object_get(report, "sandbox"),
                                json_object_get(report, "run_dir"),
                                rep_path,
                                version,
                                dump,
                                json_object_get(x, "commit"),
                                tin,
                                tout};
        if (exec_row(h,
                     "INSERT INTO runs (recorded_at, experiment, experiment_hash, "
                     "experiment_path, repeat, status, verdict, verdict_reason, resilience_score, "
                     "cost_usd, sandbox, run_dir, report, faultline_version, report_json, "
                     "git_commit, input_tokens, output_tokens) VALUES "
                     "(?, coalesce(?, ''), coalesce(?, ''), ?, ?, coalesce(?, ''), "
                     "coalesce(?, ''), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     vals, 18, e) < 0)
            goto rollback;
    }
    run_id = (long long)sqlite3_last_insert_rowid(h->db);
    json_array_append_new(tmp, json_integer(run_id));
    v = json_array_get(tmp, json_array_size(tmp) - 1);
    json_array_foreach(json_object_get(result, "repetitions"), i, r)
    {
        const json_t *f = esc_runner_rep(report, esc_int(r, "rep", -1));
        const json_t *vals[] = {v,
                                json_object_get(r, "rep"),
                                json_object_get(r, "faulted"),
                                json_object_get(r, "status"),
                                json_object_get(r, "outcome"),
                                json_object_get(f, "cost_usd"),
                                json_object_get(f, "duration_ms"),
                                json_object_get(r, "canary"),
                                json_object_get(f, "seed"),
                                json_object_get(json_object_get(f, "abort"), "reason"),
                                json_object_get(f, "error"),
                                json_object_get(json_object_get(f, "tokens"), "input"),
                                json_object_get(json_object_get(f, "tokens"), "output")};
        if (exec_row(h,
                     "INSERT OR REPLACE INTO repetitions (run_id, rep, faulted, status, outcome, "
                     "cost_usd, duration_ms, canary, seed, abort_reason, error, input_tokens, "
                     "output_tokens) VALUES (?, coalesce(?, 0), coalesce(?, 0), ?, ?, ?, ?, ?, ?, "
                     "?, ?, ?, ?)",
                     vals, 13, e) < 0)
            goto rollback;
    }
    json_array_foreach(json_object_get(result, "probes"), i, r)
    {
        const json_t *vals[] = {v,
                                json_object_get(r, "id"),
                                json_object_get(r, "evaluated"),
                                json_object_get(r, "passed"),
                                json_object_get(r, "pass_rate"),
                                json_object_get(r, "weight")};
        if (exec_row(h,
                     "INSERT OR REPLACE INTO probes (run_id, probe, evaluated, passed, pass_rate, "
                     "weight) VALUES (?, coalesce(?, ''), ?, ?, ?, ?)",
                     vals, 6, e) < 0)
            goto rollback;
    }
    json_array_foreach(json_object_get(result, "invariants"), i, r)
    {
        const json_t *vals[] = {v, json_object_get(r, "id"), json_object_get(r, "evaluated"),
                                json_object_get(r, "passed"), json_object_get(r, "failed")};
        if (exec_row(h,
                     "INSERT INTO invariants (run_id, invariant, evaluated, passed, failed) "
                     "VALUES (?, coalesce(?, ''), ?, ?, ?)",
                     vals, 5, e) < 0)
            goto rollback;
    }
    json_object_foreach((json_t *)json_object_get(result, "outcomes"), k, r)
    {
        json_t *name = json_string(k);
        const json_t *vals[] = {v, name, r};
        int w = exec_row(h,
                         "INSERT OR REPLACE INTO outcomes (run_id, class, count) VALUES (?, ?, "
                         "coalesce(?, 0))",
                         vals, 3, e);
        json_decref(name);
        if (w < 0)
            goto rollback;
    }
    if (sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        db_err(h, e, "cannot record the run");
        goto rollback;
    }
    if (id)
        *id = run_id;
    rc = 0;
    goto done;
rollback:
    sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
done:
    json_decref(tmp);
    return rc;
}

json_t *hist_list(struct hist *h, const char *experiment, int limit, struct err *e)
{
    static const char sql[] =
        "SELECT r.id, r.recorded_at, r.experiment, r.experiment_hash, r.status, r.verdict,"
        " r.resilience_score, r.cost_usd, r.repeat, r.report, r.run_dir, r.faultline_version,"
        " (SELECT group_concat(class || '=' || count, ' ') FROM outcomes o"
        "  WHERE o.run_id = r.id AND o.count > 0), r.git_commit, r.input_tokens, r.output_tokens"
        " FROM runs r WHERE ?1 IS NULL OR r.experiment = ?1 ORDER BY r.id DESC LIMIT ?2";
    static const char *const cols[] = {
        "id",       "recorded_at", "experiment",       "experiment_hash",
        "status",   "verdict",     "resilience_score", "cost_usd",
        "repeat",   "report",      "run_dir",          "faultline_version",
        "outcomes", "git_commit",  "input_tokens",     "output_tokens"};
    sqlite3_stmt *st;
    json_t *a = json_array();
    int rc;

    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_err(h, e, "cannot read");
        json_decref(a);
        return NULL;
    }
    if (experiment)
        sqlite3_bind_text(st, 1, experiment, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, limit);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = json_object();
        for (int c = 0; c < (int)(sizeof(cols) / sizeof(cols[0])); c++) {
            json_t *val;
            switch (sqlite3_column_type(st, c)) {
            case SQLITE_INTEGER:
                val = json_integer((json_int_t)sqlite3_column_int64(st, c));
                break;
            case SQLITE_FLOAT:
                val = json_real(sqlite3_column_double(st, c));
                break;
            case SQLITE_TEXT:
                val = json_string((const char *)sqlite3_column_text(st, c));
                break;
            default:
                val = json_null();
            }
            json_object_set_new(o, cols[c], val ? val : json_null());
        }
        json_array_append_new(a, o);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        db_err(h, e, "cannot read");
        json_decref(a);
        return NULL;
    }
    return a;
}

json_t *hist_report(struct hist *h, long long id, struct err *e)
{
    sqlite3_stmt *st;
    json_t *j = NULL;
    json_error_t je;
    int rc;

    if (sqlite3_prepare_v2(h->db, "SELECT report_json FROM runs WHERE id = ?", -1, &st, NULL) !=
        SQLITE_OK) {
        db_err(h, e, "cannot read");
        return NULL;
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        j = text ? json_loads(text, JSON_REJECT_DUPLICATES, &je) : NULL;
        if (j == NULL)
            err_set(e, ERR_PARSE, "history '%s': run %lld: its report is not JSON", h->path, id);
    } else if (rc == SQLITE_DONE) {
        err_set(e, ERR_NOTFOUND, "run %lld is not in the history '%s'", id, h->path);
    } else {
        db_err(h, e, "cannot read");
    }
    sqlite3_finalize(st);
    return j;
}
