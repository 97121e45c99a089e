/*
 * main: the dispatch table (git's commands[], tmux's cmd_table[]) and nothing else.
 * `faultline help CMD` runs `faultline CMD --help` (one text for both); the hidden
 * `faultline help --exit-codes` prints docs/cli.md's exit-code table (exitcodes.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/text.h"
#include "util/banned.h"

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
    {"run", cmd_run, "run EXPERIMENT [--out REPORT.json]   the main job: repetitions, verdict"},
    {"score", cmd_score, "score RUN_DIR [--json]             probes, invariants and verdict"},
    {"init", cmd_init,
     "init [--agent A] [--fault ID]       write a first experiment and mock script"},
    {"sandbox", cmd_sandbox, "sandbox check | exec -- COMMAND    the native sandbox, by hand"},
    {"history", cmd_history,
     "history [--json] [--experiment NAME] the runs recorded, newest first"},
    {"report", cmd_report,
     "report REPORT.json|RUN_DIR [--format F]  html, md, junit, badge, otlp, json"},
    {"gate", cmd_gate, "gate claude-code | codex | cursor  a harness's pre-tool hook (stdin)"},
    {"world", cmd_world, "world FILE [--plan P --ledger L]    a simulated world as an MCP server"},
    {"connect", cmd_connect,
     "connect [HARNESS|all] [--dry-run]   write the project's hook settings"},
    {"compare", cmd_compare, "compare A B [--max-score-drop N]    two runs side by side, a gate"},
    {"replay", cmd_replay, "replay RUN_DIR [--rep N]           rebuild each world from its calls"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: faultline <command> [args]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (commands[i].fn)
            fprintf(f, "  %s\n", commands[i].usage);
    fprintf(f, "\n  --version                          print the version\n"
               "  help COMMAND                       that command's help (= COMMAND --help)\n"
               "\nexit codes: docs/cli.md\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "help") == 0 && argc == 3 && strcmp(argv[2], "--exit-codes") == 0) {
        cli_exit_codes_markdown(stdout);
        return cli_stdout_status("help");
    }
    if (strcmp(argv[1], "help") == 0 && argc >= 3) {
        static char help_flag[] = "--help";
        static char *hargv[4];
        if (argc > 3) {
            fprintf(stderr, "faultline help: one command at a time\n");
            return EXIT_USAGE;
        }
        hargv[0] = argv[0];
        hargv[1] = argv[2];
        hargv[2] = help_flag;
        argv = hargv;
        argc = 3;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("faultline %s\n", FAULTLINE_VERSION);
        return cli_stdout_status(argv[1]);
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return cli_stdout_status(argv[1]);
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
    const char *names[sizeof(commands) / sizeof(commands[0])];
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        names[i] = commands[i].name;
    const char *s = text_suggest(argv[1], names, sizeof(names) / sizeof(names[0]));
    if (s)
        fprintf(stderr, "faultline: unknown command '%s' (did you mean '%s'?)\n", argv[1], s);
    else
        fprintf(stderr, "faultline: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
