/*
 * cmd_mcp: `faultline mcp`, the MCP stdio shim. Parses flags and the environment, sets up the
 * seam (controller or standalone) and runs the relay; the process exits with the server's
 * status. stdout carries only the MCP protocol: every message of ours goes to stderr or --log.
 *
 *   faultline mcp [--name SERVER] [--plan PLAN] [--events EVENTS] [--log FILE]
 *                 [--log-level LEVEL] [--max-line BYTES] [--grace-ms MS] [--eof-wait-ms MS]
 *                 -- COMMAND [ARGS...]
 *
 * Environment: FAULTLINE_CONTROL_URL (controller mode), FAULTLINE_PLAN and FAULTLINE_EVENTS
 * (defaults for --plan and --events). Mutating faults apply only where a sandbox is known: the
 * controller's word in controller mode, --i-have-a-sandbox standalone (seam_mutating_allowed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "mcp/backend.h"
#include "mcp/relay.h"
#include "seam/seam.h"
#include "util/log.h"
#include "util/opt.h"
#include "util/banned.h"

int cmd_mcp(int argc, char **argv)
{
    struct seam_opts bo;
    struct mcp_relay_opts ro;
    struct mcp_session_opts so;
    struct mcp_backend b;
    struct seam *seam;
    struct err e = {0};
    const char *name = NULL, *log_path = NULL, *level = log_level_name();
    int nargs, rc;

    memset(&bo, 0, sizeof(bo));
    mcp_relay_opts_init(&ro); /* the defaults the table shows */
    memset(&so, 0, sizeof(so));
    bo.plan_path = getenv("FAULTLINE_PLAN");
    bo.events_path = getenv("FAULTLINE_EVENTS");
    const struct opt opts[] = {
        OPT_STRING("name", "SERVER", &name, NULL, "the server's name in events and tool matches"),
        OPT_STRING("plan", "PLAN", &bo.plan_path, "$FAULTLINE_PLAN", "the repetition's plan"),
        OPT_STRING("events", "EVENTS", &bo.events_path, "$FAULTLINE_EVENTS", "append events here"),
        OPT_BOOL("i-have-a-sandbox", 0, &bo.i_have_a_sandbox,
                 "standalone: this runs inside a sandbox, so mutating faults may apply"),
        OPT_STRING("log", "FILE", &log_path, "stderr", "log here (never stdout)"),
        OPT_STRING("log-level", "LEVEL", &level, NULL, "error, warn, info or debug"),
        OPT_SIZE("max-line", "BYTES", &ro.max_line, 1024, 1LL << 30,
                 "longest JSON-RPC line taken from either side"),
        OPT_INT("grace-ms", "MS", &ro.grace_ms, 1, 600000,
                "shutdown steps: stdin closed, then SIGTERM, then SIGKILL"),
        OPT_INT("eof-wait-ms", "MS", &ro.eof_wait_ms, 1, 600000,
                "after the client's EOF, how long pending requests may wait for answers"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "mcp",
        .usage = "[options] -- COMMAND [ARGS...]",
        .about =
            "Starts COMMAND (an MCP server speaking stdio) and relays JSON-RPC between it and\n"
            "this process's stdin/stdout, injecting the plan's tool.*, mcp.* and inject.*\n"
            "faults. With FAULTLINE_CONTROL_URL set, decisions and events go to the\n"
            "controller. Everything after -- is the server's, its flags too.\n",
        .opts = opts,
        .min_args = 1,
        .max_args = -1,
        .example =
            "mcp --name fs --plan plan.json -- npx -y @modelcontextprotocol/server-filesystem .",
        .doc = "docs/mcp-shim.md",
        .flags = OPT_ARGS_AFTER_DASHDASH,
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (log_path && log_open_file(log_path) < 0) {
        fprintf(stderr, "faultline mcp: cannot open log file '%s'\n", log_path);
        return EXIT_FAIL;
    }
    if (level && log_set_level_name(level) < 0) {
        opt_usage_error(&cmd, "--log-level: expected error, warn, info or debug");
        return EXIT_USAGE;
    }
    bo.control_url = getenv("FAULTLINE_CONTROL_URL");
    if (bo.control_url && *bo.control_url == '\0')
        bo.control_url = NULL;
    if (bo.plan_path && *bo.plan_path == '\0')
        bo.plan_path = NULL;
    if (bo.events_path && *bo.events_path == '\0')
        bo.events_path = NULL;
    if (bo.control_url && bo.events_path)
        log_info("mcp", "FAULTLINE_CONTROL_URL is set: events go to the controller, not '%s'",
                 bo.events_path);
    bo.component = "mcp";
    seam = seam_new(&bo, &e);
    if (seam == NULL) {
        fprintf(stderr, "faultline mcp: %s\n", e.msg);
        return e.code == ERR_IO ? EXIT_FAIL : EXIT_INVALID;
    }
    mcp_backend_init(&b, seam);
    so.server = name;
    if (bo.control_url && bo.i_have_a_sandbox)
        log_info("mcp", "--i-have-a-sandbox is ignored under a controller: it knows its sandbox");
    ro.argv = (const char *const *)argv; /* opt_parse moved COMMAND [ARGS...] to argv[0..) */
    ro.idle = mcp_backend_flush;
    ro.idle_ctx = seam;
    rc = mcp_relay_run(&ro, &so, &b, &e);
    seam_end(seam, name, rc < 0);
    seam_free(seam);
    if (rc < 0) {
        fprintf(stderr, "faultline mcp: %s\n", e.msg);
        return EXIT_FAIL;
    }
    return rc;
}
