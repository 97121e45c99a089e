/*
 * cmd_score: `faultline score RUN_DIR [--json] [--against REPORT.json]`. Scores a run folder
 * (docs/run-folder.md, docs/scoring.md) and prints the result: canonical JSON with --json, a
 * summary otherwise. Exit code: the verdict's (0 scored, 1 aborted, 2 invalid:
 * score_exit_code); 1 when the folder cannot be read or stdout written; 64 on a usage error,
 * never a verdict's code. --against compares the regrade with a stored report instead
 * (cmd_score_against.c: 0 identical, 3 drift).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "score/score.h"
#include "util/buf.h"
#include "util/banned.h"

int cmd_score(int argc, char **argv)
{
    int json = 0, code = EXIT_FAIL, nargs, rc;
    const char *against = NULL;
    struct err e = {0};
    struct buf out = BUF_INIT;
    struct score_result *res;
    json_t *j;
    const struct opt opts[] = {
        OPT_BOOL("json", 0, &json, "print the canonical JSON result"),
        OPT_STRING("against", "REPORT.json", &against, NULL,
                   "name each figure of REPORT that the regrade changes (exit 3 if any)"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "score",
        .usage = "RUN_DIR [--json] [--against REPORT.json]",
        .about =
            "Scores a run folder: probes, invariants, outcome classes, verdict and resilience\n"
            "score. RUN_DIR is a folder (no stdin). Exit: the verdict's, 0 scored, 1 aborted,\n"
            "2 invalid; 1 when the folder cannot be read; 64 usage. --against REPORT.json:\n"
            "each figure the regrade changes (scorer drift); exit 0 none, 3 some.\n",
        .opts = opts,
        .min_args = 1,
        .max_args = 1,
        .example = "score runs/registry-down-1 --json | jq .verdict",
        .doc = "docs/scoring.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (against)
        return cmd_score_against(argv[0], against, json);
    res = score_compute(argv[0], &e);
    if (res == NULL) {
        fprintf(stderr, "faultline score: %s\n", e.msg);
        return EXIT_FAIL;
    }
    code = score_exit_code(res);
    if (json) {
        j = score_render_json(res);
        score_dump(j, &out);
        json_decref(j);
    } else {
        score_render_text(res, &out);
    }
    fwrite(out.data, 1, out.len, stdout);
    buf_release(&out);
    score_result_free(res);
    if (cli_stdout_status(cmd.name) != EXIT_OK)
        return EXIT_FAIL;
    return code;
}
