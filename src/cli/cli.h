/*
 * cli: the subcommands. Each cmd_<name>(argc, argv) lives in cmd_<name>.c, parses its flags,
 * calls module APIs, prints, and returns the exit code. Flags go through util/opt.h; the exit
 * codes, per command, are the table in exitcodes.c (docs/cli.md is generated from it):
 *   0 success / valid / scored
 *   1 runtime failure, cannot read input or write stdout, or aborted run
 *   2 invalid input (experiment, plan, script) or invalid run verdict
 *   64 usage error (EX_USAGE), in every command: never a verdict
 * argv[0] is the subcommand name.
 */
#ifndef FAULTLINE_CLI_CLI_H
#define FAULTLINE_CLI_CLI_H

/* The program's version (--version, the history's runs). */
#define FAULTLINE_VERSION "0.1.0"

#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_INVALID 2
#define EXIT_USAGE 64

#include <stdio.h>

#include "control/egress.h"
#include "util/opt.h"

/* exitcodes.c: the exit-code table as docs/cli.md's markdown. */
void cli_exit_codes_markdown(FILE *f);
/* After printing: EXIT_OK, or EXIT_FAIL with a message when stdout could not be written (a
 * full disk: an earlier write may have failed, so the error flag is checked, not only fflush). */
int cli_stdout_status(const char *cmd);

/* --resolve HOST:PORT:ADDR, repeatable, of `proxy` and `run`: each entry checked when it is
 * parsed (a bad one is a usage error), at most EGRESS_RESOLVE_MAX; spec NULL-terminated. */
struct cli_resolve_list {
    const char *spec[EGRESS_RESOLVE_MAX + 1];
    size_t n;
};
int cli_opt_resolve(const struct opt *op, const char *v, struct err *e);

/* cli_parse's "parsed: go on" (below every exit code). */
#define CLI_PARSED (-1)

/* opt_parse with every command's outcome: CLI_PARSED (go on), else the exit code to return at
 * once: EXIT_OK after the help on stdout (EXIT_FAIL when stdout cannot be written), EXIT_USAGE
 * after the usage error on stderr. */
static inline int cli_parse(const struct opt_cmd *c, int argc, char **argv, int *nargs)
{
    struct err e = {0};
    int rc = opt_parse(c, argc, argv, nargs, &e);
    if (rc == OPT_HELP) {
        opt_help(c, stdout);
        return cli_stdout_status(c->name);
    }
    if (rc < 0) {
        opt_usage_error(c, e.msg);
        return EXIT_USAGE;
    }
    return CLI_PARSED;
}

typedef int (*cmd_fn)(int argc, char **argv);

/* Declared weak so that the table names every subcommand while modules land one by one; an
 * entry whose function is not linked is reported as unavailable, never silently skipped. */
#define CMD(name) int cmd_##name(int argc, char **argv) __attribute__((weak))
CMD(list);
CMD(validate);
CMD(schema);
CMD(plan);
CMD(proxy);
CMD(mock_model);
CMD(agent);
CMD(mcp);
CMD(score);
CMD(run);
CMD(sandbox);
CMD(init);
CMD(report);
CMD(history);
CMD(gate);
/* `faultline gate explain` (src/cli/cmd_gate_explain.c), dispatched by cmd_gate */
CMD(gate_explain);
CMD(world);
CMD(connect);
CMD(compare);
CMD(replay);
#undef CMD

/* `faultline score RUN_DIR --against REPORT.json` (src/cli/cmd_score_against.c), called by
 * cmd_score: 0 identical, 3 a figure differs, 1 unreadable. */
int cmd_score_against(const char *run_dir, const char *report, int json);

#endif
