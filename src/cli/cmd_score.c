/*
 * cmd_score: `faultline score RUN_DIR [--json]`. Scores a run folder (docs/run-folder.md,
 * docs/scoring.md) and prints the result: canonical JSON with --json, a summary otherwise.
 * Exit code: the verdict's (0 scored, 1 aborted, 2 invalid); 1 when the folder cannot be read;
 * 2 on a usage error.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "score/score.h"
#include "util/buf.h"
#include "util/banned.h"

static int usage(void)
{
    fprintf(stderr, "usage: faultline score RUN_DIR [--json]\n");
    return EXIT_INVALID;
}

int cmd_score(int argc, char **argv)
{
    const char *dir = NULL;
    int json = 0, code = EXIT_FAIL;
    struct err e = {0};
    struct buf out = BUF_INIT;
    json_t *res;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: faultline score RUN_DIR [--json]\n\n"
                   "Scores a run folder: probes, invariants, outcome classes, verdict and\n"
                   "resilience score. Exit code: 0 scored, 1 aborted, 2 invalid; 1 when the\n"
                   "folder cannot be read.\n");
            return EXIT_OK;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "faultline score: unknown option '%s'\n", argv[i]);
            return usage();
        } else if (dir == NULL) {
            dir = argv[i];
        } else {
            fprintf(stderr, "faultline score: one run folder at a time ('%s' is extra)\n", argv[i]);
            return usage();
        }
    }
    if (dir == NULL)
        return usage();
    res = score_run(dir, &code, &e);
    if (res == NULL) {
        fprintf(stderr, "faultline score: %s\n", e.msg);
        return EXIT_FAIL;
    }
    if (json)
        score_dump(res, &out);
    else
        score_render_text(res, &out);
    fwrite(out.data, 1, out.len, stdout);
    buf_release(&out);
    json_decref(res);
    return code;
}
