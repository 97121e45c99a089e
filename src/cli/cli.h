/*
 * cli: the subcommands. Each cmd_<name>(argc, argv) lives in cmd_<name>.c, parses its flags,
 * calls module APIs, prints, and returns the exit code (docs/cli.md lists them):
 *   0 success / valid / scored
 *   1 runtime failure, cannot read input, or aborted run
 *   2 invalid input (experiment, plan, usage) or invalid run verdict
 * argv[0] is the subcommand name.
 */
#ifndef FAULTLINE_CLI_CLI_H
#define FAULTLINE_CLI_CLI_H

#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_INVALID 2

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
#undef CMD

#endif
