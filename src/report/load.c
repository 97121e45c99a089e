/*
 * load: rpt_load (rpt.h), the report of `faultline report`'s argument.
 *
 *   a report file  read (RPT_REPORT_MAX), checked to be a report (format, result); when its
 *                  run_dir still holds a run.json, the folder is scored again and the result,
 *                  verdict, score and warnings replaced: an old run renders with today's scorer
 *   a run folder   scored (score_run); the runner's facts are its rep.json files, the
 *                  experiment and status the result's, the rest of what only the runner knew
 *                  (error, sandbox) null or "unknown"
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/esc.h"
#include "report/rpt.h"
#include "score/score.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

#define REP_JSON_MAX (1 << 20)

/* Sets the top-level copies of result's figures (as report_build does). */
static void set_result(json_t *report, json_t *result)
{
    json_t *v = json_object_get(result, "verdict");

    json_object_set(report, "verdict", json_object_get(v, "verdict"));
    json_object_set(report, "verdict_reason", json_object_get(v, "reason"));
    json_object_set(report, "resilience_score", json_object_get(result, "resilience_score"));
    json_object_set(report, "warnings", json_object_get(result, "warnings"));
    json_object_set(report, "result", result);
}

static json_t *read_json(const char *path, size_t max, struct err *e)
{
    struct buf b = BUF_INIT;
    json_error_t je;
    json_t *j = NULL;

    if (fs_read_file(path, max, &b, e) < 0)
        goto done;
    j = json_loadb(b.data, b.len, JSON_REJECT_DUPLICATES, &je);
    if (j == NULL)
        err_set(e, ERR_PARSE, "%s:%d:%d: %s", path, je.line, je.column, je.text);
done:
    buf_release(&b);
    return j;
}

static json_t *from_dir(const char *dir, struct err *e)
{
    int code;
    json_t *result = score_run(dir, &code, e), *report, *reps, *r, *x;
    size_t i;

    if (result == NULL)
        return NULL;
    report = json_object();
    reps = json_array();
    json_array_foreach(json_object_get(result, "repetitions"), i, r)
    {
        char path[4096];
        struct err re = {0};
        json_t *j = NULL;
        const char *d = esc_str(r, "dir", NULL);

        if (d && (size_t)snprintf(path, sizeof(path), "%s/%s/rep.json", dir, d) < sizeof(path))
            j = read_json(path, REP_JSON_MAX, &re);
        if (!json_is_object(j)) {
            json_decref(j);
            /* a folder without the runner's facts (hand-made, older): the scorer's */
            j = json_pack("{s:I,s:b,s:s,s:n}", "rep", (json_int_t)esc_int(r, "rep", (long long)i),
                          "faulted", json_is_true(json_object_get(r, "faulted")), "status",
                          esc_str(r, "status", "error"), "error");
            if (esc_has_num(r, "cost_usd"))
                json_object_set(j, "cost_usd", json_object_get(r, "cost_usd"));
            if (esc_str(r, "canary", NULL))
                json_object_set(j, "canary", json_object_get(r, "canary"));
        }
        json_array_append_new(reps, j);
    }
    x = json_deep_copy(json_object_get(result, "experiment"));
    json_object_set_new(report, "format", json_integer(1));
    json_object_set_new(report, "experiment", x ? x : json_object());
    json_object_set(report, "status", json_object_get(result, "status"));
    json_object_set_new(report, "error", json_null());
    json_object_set_new(report, "sandbox", json_string("unknown"));
    json_object_set_new(report, "run_dir", json_string(dir));
    json_object_set_new(report, "repetitions", reps);
    set_result(report, result);
    json_decref(result);
    return report;
}

json_t *rpt_load(const char *path, char **run_dir, struct err *e)
{
    struct stat st;
    json_t *report;
    const char *dir;
    char runjson[4096];

    if (run_dir)
        *run_dir = NULL;
    if (stat(path, &st) < 0) {
        err_set(e, ERR_NOTFOUND, "cannot read '%s': no such file or folder", path);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        report = from_dir(path, e);
        if (report && run_dir)
            *run_dir = xstrdup(path);
        return report;
    }
    report = read_json(path, RPT_REPORT_MAX, e);
    if (report == NULL)
        return NULL;
    if (!json_is_object(report) || esc_int(report, "format", 0) != 1 ||
        !json_is_object(json_object_get(report, "result"))) {
        json_decref(report);
        err_set(e, ERR_INVALID, "'%s' is not a faultline report (format 1 with a result)", path);
        return NULL;
    }
    dir = esc_str(report, "run_dir", NULL);
    if (dir && (size_t)snprintf(runjson, sizeof(runjson), "%s/run.json", dir) < sizeof(runjson) &&
        stat(runjson, &st) == 0) {
        struct err se = {0};
        int code;
        json_t *result = score_run(dir, &code, &se);
        if (result) {
            set_result(report, result);
            json_decref(result);
        }
        if (run_dir)
            *run_dir = xstrdup(dir);
    }
    return report;
}
