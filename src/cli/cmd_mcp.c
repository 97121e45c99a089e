/*
 * cmd_mcp: `faultline mcp`, the MCP stdio shim. Parses flags and the environment, sets up the
 * backend (controller or standalone) and runs the relay; the process exits with the server's
 * status. stdout carries only the MCP protocol: every message of ours goes to stderr or --log.
 *
 *   faultline mcp [--name SERVER] [--plan PLAN] [--events EVENTS] [--log FILE]
 *                 [--log-level LEVEL] [--max-line BYTES] [--grace-ms MS] [--eof-wait-ms MS]
 *                 -- COMMAND [ARGS...]
 *
 * Environment: FAULTLINE_CONTROL_URL (controller mode), FAULTLINE_PLAN and FAULTLINE_EVENTS
 * (defaults for --plan and --events), FAULTLINE_SANDBOX (set inside a sandbox; without it,
 * mutating faults are refused).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "mcp/backend.h"
#include "mcp/relay.h"
#include "util/log.h"
#include "util/num.h"
#include "util/banned.h"

static void mcp_usage(FILE *f)
{
    fprintf(f,
            "usage: faultline mcp [--name SERVER] [--plan PLAN] [--events EVENTS] [--log FILE]\n"
            "                     [--log-level error|warn|info|debug] [--max-line BYTES]\n"
            "                     [--grace-ms MS] [--eof-wait-ms MS] -- COMMAND [ARGS...]\n"
            "\n"
            "Starts COMMAND (an MCP server speaking stdio) and relays JSON-RPC between it and\n"
            "this process's stdin/stdout, injecting the plan's tool.*, mcp.* and inject.* faults.\n"
            "With FAULTLINE_CONTROL_URL set, decisions and events go to the controller.\n");
}

static int need_arg(int argc, char **argv, int i)
{
    if (i + 1 >= argc) {
        fprintf(stderr, "faultline mcp: %s needs a value\n", argv[i]);
        return 0;
    }
    return 1;
}

int cmd_mcp(int argc, char **argv)
{
    struct mcp_backend_opts bo;
    struct mcp_relay_opts ro;
    struct mcp_session_opts so;
    struct mcp_backend b;
    struct mcp_backend_ctx *bx;
    struct err e = {0};
    const char *name = NULL, *log_path = NULL, *level = NULL;
    long long v;
    int i, rc;

    memset(&bo, 0, sizeof(bo));
    memset(&ro, 0, sizeof(ro));
    memset(&so, 0, sizeof(so));
    bo.plan_path = getenv("FAULTLINE_PLAN");
    bo.events_path = getenv("FAULTLINE_EVENTS");
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            mcp_usage(stdout);
            return EXIT_OK;
        }
        if (strcmp(a, "--name") == 0 || strcmp(a, "--plan") == 0 || strcmp(a, "--events") == 0 ||
            strcmp(a, "--log") == 0 || strcmp(a, "--log-level") == 0 ||
            strcmp(a, "--max-line") == 0 || strcmp(a, "--grace-ms") == 0 ||
            strcmp(a, "--eof-wait-ms") == 0) {
            if (!need_arg(argc, argv, i))
                return EXIT_INVALID;
            const char *val = argv[++i];
            if (strcmp(a, "--name") == 0)
                name = val;
            else if (strcmp(a, "--plan") == 0)
                bo.plan_path = val;
            else if (strcmp(a, "--events") == 0)
                bo.events_path = val;
            else if (strcmp(a, "--log") == 0)
                log_path = val;
            else if (strcmp(a, "--log-level") == 0)
                level = val;
            else if (strcmp(a, "--max-line") == 0) {
                if (num_parse_ll(val, 1024, 1LL << 30, &v) < 0) {
                    fprintf(stderr,
                            "faultline mcp: --max-line '%s': a number of bytes from 1024 "
                            "to 1073741824\n",
                            val);
                    return EXIT_INVALID;
                }
                ro.max_line = (size_t)v;
            } else {
                if (num_parse_ll(val, 1, 600000, &v) < 0) {
                    fprintf(stderr, "faultline mcp: %s '%s': 1 to 600000\n", a, val);
                    return EXIT_INVALID;
                }
                if (strcmp(a, "--grace-ms") == 0)
                    ro.grace_ms = (int)v;
                else
                    ro.eof_wait_ms = (int)v;
            }
            continue;
        }
        fprintf(stderr, "faultline mcp: unknown option '%s' (the server command goes after --)\n",
                a);
        mcp_usage(stderr);
        return EXIT_INVALID;
    }
    if (i >= argc) {
        fprintf(stderr, "faultline mcp: no server command (give it after --)\n");
        mcp_usage(stderr);
        return EXIT_INVALID;
    }
    if (log_path && log_open_file(log_path) < 0) {
        fprintf(stderr, "faultline mcp: cannot open log file '%s'\n", log_path);
        return EXIT_FAIL;
    }
    if (level && log_set_level_name(level) < 0) {
        fprintf(stderr, "faultline mcp: --log-level '%s': error, warn, info or debug\n", level);
        return EXIT_INVALID;
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
    bo.server = name;
    bx = mcp_backend_new(&bo, &b, &e);
    if (bx == NULL) {
        fprintf(stderr, "faultline mcp: %s\n", e.msg);
        return e.code == ERR_IO ? EXIT_FAIL : EXIT_INVALID;
    }
    so.server = name;
    /* The controller runs only in sandboxed runs; standalone, only FAULTLINE_SANDBOX says so. */
    so.refuse_mutating = bo.control_url == NULL && (getenv("FAULTLINE_SANDBOX") == NULL ||
                                                    *getenv("FAULTLINE_SANDBOX") == '\0');
    ro.argv = (const char *const *)(argv + i);
    ro.idle = mcp_backend_flush;
    ro.idle_ctx = bx;
    rc = mcp_relay_run(&ro, &so, &b, &e);
    mcp_backend_free(bx);
    if (rc < 0) {
        fprintf(stderr, "faultline mcp: %s\n", e.msg);
        return EXIT_FAIL;
    }
    return rc;
}
