/*
 * cmd_plan: `faultline plan EXPERIMENT --rep N [--seed S]` prints the plan
 * repetition N would get (docs/plan.md): load and validate the experiment,
 * plan_build, plan_dump to stdout. The output is deterministic: the same file,
 * --rep and --seed give the same bytes.
 *
 * Exit codes (cli.h): 0 printed; 1 the file cannot be read; 2 usage, an invalid
 * experiment (its diagnostics on stderr, FILE:LINE:COL) or a repetition out of
 * range.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "experiment/experiment.h"
#include "plan/plan.h"
#include "util/num.h"
#include "util/banned.h"

static int usage(FILE *f, int code)
{
    fprintf(f, "usage: faultline plan EXPERIMENT --rep N [--seed S]\n"
               "  --rep N    repetition index: 0..repeat-1 are baselines (no faults),\n"
               "             repeat..2*repeat-1 faulted\n"
               "  --seed S   base seed (decimal or 0x-hex), overrides the experiment's "
               "seed\n");
    return code;
}

int cmd_plan(int argc, char **argv)
{
    const char *path = NULL, *rep_arg = NULL, *seed_arg = NULL;
    struct experiment_diags diags = {0};
    struct buf msgs = BUF_INIT;
    struct experiment *x = NULL;
    struct plan *p = NULL;
    struct err e = {0};
    uint64_t seed = 0;
    long long rep;
    int rc = EXIT_INVALID;
    char *text;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return usage(stdout, EXIT_OK);
        if (strcmp(argv[i], "--rep") == 0 || strcmp(argv[i], "--seed") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "faultline plan: %s needs a value\n", argv[i]);
                return usage(stderr, EXIT_INVALID);
            }
            if (argv[i][2] == 'r')
                rep_arg = argv[++i];
            else
                seed_arg = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "faultline plan: unknown option '%s'\n", argv[i]);
            return usage(stderr, EXIT_INVALID);
        } else if (path == NULL) {
            path = argv[i];
        } else {
            fprintf(stderr, "faultline plan: one experiment at a time ('%s')\n", argv[i]);
            return usage(stderr, EXIT_INVALID);
        }
    }
    if (path == NULL || rep_arg == NULL)
        return usage(stderr, EXIT_INVALID);
    if (num_parse_ll(rep_arg, 0, INT_MAX, &rep) < 0) {
        fprintf(stderr, "faultline plan: --rep: expected a repetition index >= 0, got '%s'\n",
                rep_arg);
        return EXIT_INVALID;
    }
    if (seed_arg && num_parse_u64(seed_arg, &seed) < 0) {
        fprintf(stderr,
                "faultline plan: --seed: expected a decimal or 0x-hex 64-bit integer, "
                "got '%s'\n",
                seed_arg);
        return EXIT_INVALID;
    }

    x = experiment_load(path, &diags, &e);
    experiment_diags_format(&diags, path, &msgs);
    fputs(msgs.data, stderr);
    if (x == NULL) {
        if (e.code == ERR_IO) {
            fprintf(stderr, "faultline plan: %s\n", e.msg);
            rc = EXIT_FAIL;
        } else if (diags.nerrors == 0) {
            fprintf(stderr, "faultline plan: %s: %s\n", path, e.msg[0] ? e.msg : "invalid");
        }
        goto out;
    }
    p = plan_build(x, (int)rep, seed_arg != NULL, seed, NULL, NULL, &e);
    if (p == NULL) {
        fprintf(stderr, "faultline plan: %s: %s\n", path, e.msg);
        goto out;
    }
    text = plan_dump(p);
    fputs(text, stdout);
    free(text);
    rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
out:
    plan_free(p);
    experiment_free(x);
    experiment_diags_release(&diags);
    buf_release(&msgs);
    return rc;
}
