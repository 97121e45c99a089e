/*
 * cmd_init: `faultline init [--agent claude-code|codex|reference] [--fault ID] [--dir DIR]`
 * writes a commented experiment and its mock-model script (src/run/init.h) into the project,
 * never replacing a file, and says how to run it.
 *
 * Exit codes (exitcodes.c): 0 written; 1 a file exists or cannot be written; 2 a fault or
 * agent init does not write experiments for; 64 usage.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "run/init.h"
#include "util/buf.h"
#include "util/banned.h"

int cmd_init(int argc, char **argv)
{
    const char *agent = "reference", *fault = "llm.rate_limit", *dir = "faultline";
    struct buf written = BUF_INIT;
    struct err e = {0};
    enum init_agent a;
    int nargs, rc;
    const struct opt opts[] = {
        OPT_STRING("agent", "claude-code|codex|reference", &agent, NULL,
                   "the agent the experiment runs"),
        OPT_STRING("fault", "ID", &fault, NULL,
                   "the fault to inject (faultline list; llm.*, tool.*, mcp.* or inject.*)"),
        OPT_STRING("dir", "DIR", &dir, NULL, "where to write the two files"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "init",
        .usage = "[--agent claude-code|codex|reference] [--fault ID] [--dir DIR]",
        .about = "Writes DIR/ID.yaml, an experiment running the agent with the fault, and\n"
                 "DIR/ID.model.yaml, the mock-model script it runs against (offline, no key);\n"
                 "never replaces a file. Then: faultline run DIR/ID.yaml\n",
        .opts = opts,
        .min_args = 0,
        .max_args = 0,
        .example = "init --agent claude-code --fault tool.error",
        .doc = "docs/run.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (init_agent_from_name(agent, &a) != 0) {
        opt_usage_error(&cmd, "--agent: expected claude-code, codex or reference");
        return EXIT_USAGE;
    }
    rc = init_write(dir, a, fault, &written, &e);
    if (rc != 0) {
        fprintf(stderr, "faultline init: %s\n", e.msg);
        buf_release(&written);
        return rc == ERR_IO || strstr(e.msg, "exists already") ? EXIT_FAIL : EXIT_INVALID;
    }
    printf("wrote:\n%s", written.data);
    printf("run it (offline, in the sandbox): faultline run %s/%s.yaml\n", dir, fault);
    buf_release(&written);
    return cli_stdout_status(EXIT_OK);
}
