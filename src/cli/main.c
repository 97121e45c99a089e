/*
 * main: the dispatch table (git's commands[], tmux's cmd_table[]) and nothing else.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/banned.h"

#define FAULTLINE_VERSION "0.1.0"

struct command {
    const char *name;
    cmd_fn fn;
    const char *usage;
};

static const struct command commands[] = {
    {"list", cmd_list, "list [--json]                      the fault, probe and invariant catalog"},
    {"validate", cmd_validate, "validate FILE...                   check experiment files"},
    {"schema", cmd_schema,
     "schema                             JSON Schema of the experiment format"},
    {"plan", cmd_plan, "plan EXPERIMENT --rep N [--seed S] the plan repetition N would get"},
    {"proxy", cmd_proxy, "proxy --plan P --events E ...      the per-repetition controller"},
    {"mock-model", cmd_mock_model,
     "mock-model --script F [--listen A] a deterministic model server"},
    {"agent", cmd_agent, "agent --prompt TEXT ...            the reference agent"},
    {"mcp", cmd_mcp, "mcp [--plan P --events E] -- CMD   the MCP stdio shim"},
    {"score", cmd_score, "score RUN_DIR [--json]             probes, invariants and verdict"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: faultline <command> [args]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (commands[i].fn)
            fprintf(f, "  %s\n", commands[i].usage);
    fprintf(f, "\n  --version                          print the version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_INVALID;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("faultline %s\n", FAULTLINE_VERSION);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[1], commands[i].name) != 0)
            continue;
        if (commands[i].fn == NULL) {
            fprintf(stderr, "faultline: '%s' is not available in this build\n", argv[1]);
            return EXIT_FAIL;
        }
        return commands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "faultline: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return EXIT_INVALID;
}
