/*
 * cmd_score_against: `faultline score RUN_DIR --against REPORT.json [--json]` (called by
 * cmd_score). Regrades the run folder with today's scorer and names every figure of the stored
 * report that differs (scorer drift, src/report/compare.c compare_drift): one line each on
 * stdout, `PATH: stored VALUE, regraded VALUE`, and a summary on stderr; with --json one
 * object {"identical", "figures", "differences": [{"path", "stored", "regraded"}]}.
 * Exit: 0 identical; 3 some figure differs; 1 the folder or the report cannot be read, the
 * report is not one or of another format, or stdout cannot be written.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "report/compare.h"
#include "score/score.h"
#include "util/buf.h"
#include "util/banned.h"

/* A figure differs: distinct from the verdict codes, which --against does not give. */
#define EXIT_DRIFT 3

int cmd_score_against(const char *run_dir, const char *report, int json)
{
    struct err e = {0};
    struct buf b = BUF_INIT;
    json_t *result = NULL, *regraded = NULL, *stored = NULL, *diffs = json_array();
    json_error_t je;
    size_t n, figures = 0;
    int verdict_code, code = EXIT_FAIL;

    if ((stored = compare_read_report(report, &e)) == NULL ||
        (result = score_run(run_dir, &verdict_code, &e)) == NULL) {
        fprintf(stderr, "faultline score: %s\n", e.msg);
        goto done;
    }
    /* the regrade as the report holds it: the numbers as printed, read back */
    if (score_dump(result, &b) < 0 || (regraded = json_loadb(b.data, b.len, 0, &je)) == NULL) {
        fprintf(stderr, "faultline score: cannot render the regrade of '%s'\n", run_dir);
        goto done;
    }
    n = compare_drift(stored, regraded, diffs, &figures);
    if (json) {
        char *s;
        json_t *o = json_pack("{s:b,s:I,s:O}", "identical", n == 0, "figures", (json_int_t)figures,
                              "differences", diffs);
        s = o ? json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15)) : NULL;
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        buf_reset(&b);
        compare_drift_text(diffs, &b);
        fwrite(b.data, 1, b.len, stdout);
    }
    if (n == 0)
        fprintf(stderr, "faultline score: the regrade of '%s' matches '%s' (%zu figures)\n",
                run_dir, report, figures);
    else
        fprintf(stderr,
                "faultline score: %zu of the %zu figures of '%s' differ from the regrade of "
                "'%s' (scorer drift)\n",
                n, figures, report, run_dir);
    code = cli_stdout_status("score");
    if (code == EXIT_OK && n > 0)
        code = EXIT_DRIFT;
done:
    json_decref(diffs);
    json_decref(stored);
    json_decref(result);
    json_decref(regraded);
    buf_release(&b);
    return code;
}
