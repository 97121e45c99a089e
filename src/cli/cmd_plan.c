/*
 * cmd_plan: `faultline plan EXPERIMENT --rep N [--seed S]` prints the plan
 * repetition N would get (docs/plan.md): load and validate the experiment,
 * plan_build, plan_dump to stdout. The output is deterministic: the same file,
 * --rep and --seed give the same bytes.
 *
 * EXPERIMENT "-" reads standard input. Exit codes (exitcodes.c): 0 printed; 1 the
 * file cannot be read or stdout written; 2 an invalid experiment (its diagnostics on
 * stderr, FILE:LINE:COL) or a repetition past the experiment's; 64 usage.
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

int cmd_plan(int argc, char **argv)
{
    const char *path, *name;
    struct experiment_diags diags = {0};
    struct buf msgs = BUF_INIT;
    struct experiment *x = NULL;
    struct plan *p = NULL;
    struct err e = {0};
    uint64_t seed = 0;
    int rep = -1, seed_given = 0, nargs, rc;
    char *text;
    const struct opt opts[] = {
        OPT_INT("rep", "N", &rep, 0, INT_MAX,
                "repetition index (required): 0..repeat-1 are baselines, repeat..2*repeat-1 "
                "faulted"),
        OPT_U64("seed", "S", &seed, &seed_given,
                "base seed (decimal or 0x-hex), overrides the experiment's seed"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "plan",
        .usage = "EXPERIMENT --rep N [--seed S]",
        .about = "Prints the plan repetition N of EXPERIMENT would get (- reads the experiment\n"
                 "from stdin). The output is deterministic: the same file, --rep and --seed give\n"
                 "the same bytes.\n",
        .opts = opts,
        .min_args = 1,
        .max_args = 1,
        .example = "plan examples/registry-down.yaml --rep 3 --seed 0x5eed",
        .doc = "docs/plan.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (rep < 0) {
        opt_usage_error(&cmd, "--rep N is required");
        return EXIT_USAGE;
    }
    path = argv[0];
    name = strcmp(path, "-") == 0 ? EXPERIMENT_STDIN_NAME : path;
    rc = EXIT_INVALID;
    x = experiment_load(path, &diags, &e);
    experiment_diags_format(&diags, name, &msgs);
    fputs(msgs.data, stderr);
    if (x == NULL) {
        if (e.code == ERR_IO) {
            fprintf(stderr, "faultline plan: %s\n", e.msg);
            rc = EXIT_FAIL;
        } else if (diags.nerrors == 0) {
            fprintf(stderr, "faultline plan: %s: %s\n", name, e.msg[0] ? e.msg : "invalid");
        }
        goto out;
    }
    p = plan_build(x, rep, seed_given, seed, NULL, NULL, &e);
    if (p == NULL) {
        fprintf(stderr, "faultline plan: %s: %s\n", name, e.msg);
        goto out;
    }
    text = plan_dump(p);
    fputs(text, stdout);
    free(text);
    rc = cli_stdout_status(cmd.name);
out:
    plan_free(p);
    experiment_free(x);
    experiment_diags_release(&diags);
    buf_release(&msgs);
    return rc;
}
