/*
 * cmd_world: `faultline world`, a simulated backend served as an MCP stdio server
 * (docs/world.md). Loads the world (a world file, or an experiment's `world:`) with its
 * FILE:LINE:COL diagnostics, sets up the seam (controller or standalone) as `faultline mcp`
 * does, and serves until stdin ends; the ledger is written on the report and at exit. stdout
 * carries only the MCP protocol.
 *
 *   faultline world FILE [--plan PLAN] [--events EVENTS] [--ledger PATH] [--log FILE]
 *   faultline world check FILE LEDGER [--json]
 *
 * Environment: FAULTLINE_CONTROL_URL (controller mode), FAULTLINE_PLAN, FAULTLINE_EVENTS and
 * FAULTLINE_LEDGER (defaults for --plan, --events and --ledger).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "experiment/experiment.h"
#include "score/worldcheck.h"
#include "seam/seam.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/opt.h"
#include "world/serve.h"
#include "world/world.h"
#include "util/banned.h"

static const char *nonempty(const char *s)
{
    return s && *s ? s : NULL;
}

/* The world of path (a world file or an experiment), its diagnostics on stderr; NULL with
 * *rc set (EXIT_FAIL: unreadable, EXIT_INVALID: invalid). */
static json_t *load_world(const char *path, int *rc)
{
    struct experiment_diags d = {0};
    struct buf msg = BUF_INIT;
    struct err e = {0};
    json_t *spec = experiment_world_load(path, &d, &e);

    if (d.n > 0) {
        experiment_diags_format(&d, path, &msg);
        fputs(msg.data, stderr);
    }
    if (spec == NULL) {
        if (d.n == 0)
            fprintf(stderr, "faultline world: %s\n", e.msg);
        *rc = e.code == ERR_IO ? EXIT_FAIL : EXIT_INVALID;
    }
    experiment_diags_release(&d);
    buf_release(&msg);
    return spec;
}

static int cmd_world_check(int argc, char **argv)
{
    struct worldcheck wc;
    struct err e = {0};
    int json = 0, nargs, rc = EXIT_OK;
    json_t *spec;
    const struct opt opts[] = {
        OPT_BOOL("json", 0, &json, "print the results as one JSON object"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "world check",
        .usage = "[--json] FILE LEDGER",
        .about = "Checks the invariants of the world of FILE against LEDGER (a ledger.json, or a\n"
                 "folder holding one) with the scorer's rules: each failure names the earliest\n"
                 "violating effect (or call). Exit 0 when none fails, 3 when one does.\n",
        .opts = opts,
        .min_args = 2,
        .max_args = 2,
        .example = "world check examples/worlds/payments.yaml run/rep-001/ledger.json",
        .doc = "docs/world.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    rc = EXIT_OK;
    if ((spec = load_world(argv[0], &rc)) == NULL)
        return rc;
    if (worldcheck_run(spec, argv[1], &wc, &e) < 0) {
        fprintf(stderr, "faultline world check: %s\n", e.msg);
        json_decref(spec);
        return e.code == ERR_IO ? EXIT_FAIL : EXIT_INVALID;
    }
    json_decref(spec);
    if (json) {
        json_t *a = json_array();
        for (size_t i = 0; i < wc.n; i++) {
            const struct worldcheck_item *it = &wc.items[i];
            json_t *o = json_pack("{s:s,s:s,s:s}", "id", it->id, "result",
                                  rules_result_name(it->result), "reason", it->reason);
            if (it->effect_index >= 0)
                json_object_set_new(o, "effect",
                                    json_pack("{s:I,s:s}", "index", (json_int_t)it->effect_index,
                                              "effect_id", it->effect_id));
            if (it->call_index >= 0)
                json_object_set_new(o, "call",
                                    json_pack("{s:I,s:I,s:s}", "index", (json_int_t)it->call_index,
                                              "call", (json_int_t)it->call, "tool", it->call_tool));
            json_array_append_new(a, o);
        }
        json_t *root = json_pack("{s:o,s:b,s:I}", "invariants", a, "holds", !wc.failed, "effects",
                                 (json_int_t)wc.effects);
        char *t = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
        puts(t ? t : "{}");
        free(t);
        json_decref(root);
    } else {
        for (size_t i = 0; i < wc.n; i++) {
            const struct worldcheck_item *it = &wc.items[i];
            printf("%-26s %-13s %s", it->id, rules_result_name(it->result), it->reason);
            if (it->effect_index >= 0)
                printf(" (earliest: effects[%ld] %s)", it->effect_index, it->effect_id);
            if (it->call_index >= 0)
                printf(" (earliest: calls[%ld] call %ld %s)", it->call_index, it->call,
                       it->call_tool);
            putchar('\n');
        }
    }
    rc = cli_stdout_status("world check");
    if (rc == EXIT_OK && wc.failed)
        rc = 3;
    return rc;
}

int cmd_world(int argc, char **argv)
{
    struct seam_opts bo;
    struct world_serve_opts so;
    struct seam *seam = NULL;
    struct world *w = NULL;
    struct err e = {0};
    const char *log_path = NULL, *level = log_level_name(), *ledger = getenv("FAULTLINE_LEDGER");
    json_t *spec = NULL;
    int nargs, rc;
    size_t max_line = WORLD_SERVE_LINE_MAX;

    if (argc > 1 && strcmp(argv[1], "check") == 0)
        return cmd_world_check(argc - 1, argv + 1);
    memset(&bo, 0, sizeof(bo));
    memset(&so, 0, sizeof(so));
    bo.plan_path = getenv("FAULTLINE_PLAN");
    bo.events_path = getenv("FAULTLINE_EVENTS");
    const struct opt opts[] = {
        OPT_STRING("plan", "PLAN", &bo.plan_path, "$FAULTLINE_PLAN",
                   "the repetition's plan (its effect.* faults)"),
        OPT_STRING("events", "EVENTS", &bo.events_path, "$FAULTLINE_EVENTS", "append events here"),
        OPT_STRING("ledger", "PATH", &ledger, "$FAULTLINE_LEDGER",
                   "write the ledger here (on the report and at exit)"),
        OPT_BOOL("i-have-a-sandbox", 0, &bo.i_have_a_sandbox,
                 "standalone: this runs inside a sandbox, so mutating faults may apply"),
        OPT_STRING("log", "FILE", &log_path, "stderr", "log here (never stdout)"),
        OPT_STRING("log-level", "LEVEL", &level, NULL, "error, warn, info or debug"),
        OPT_SIZE("max-line", "BYTES", &max_line, 1024, 1LL << 30,
                 "longest JSON-RPC line taken from the client"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "world",
        .usage = "[options] FILE | check FILE LEDGER",
        .about = "Serves the simulated world of FILE (a world file, or an experiment with a\n"
                 "world:) as an MCP server on stdin/stdout: its tools, NAME_context and\n"
                 "NAME_report, an effect ledger, and the plan's effect.* faults.\n",
        .opts = opts,
        .min_args = 1,
        .max_args = 1,
        .example = "world examples/worlds/payments.yaml --ledger ledger.json",
        .doc = "docs/world.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (log_path && log_open_file(log_path) < 0) {
        fprintf(stderr, "faultline world: cannot open log file '%s'\n", log_path);
        return EXIT_FAIL;
    }
    if (level && log_set_level_name(level) < 0) {
        opt_usage_error(&cmd, "--log-level: expected error, warn, info or debug");
        return EXIT_USAGE;
    }
    if ((spec = load_world(argv[0], &rc)) == NULL)
        goto done;
    if ((w = world_new(spec, &e)) == NULL) {
        fprintf(stderr, "faultline world: %s: %s\n", argv[0], e.msg);
        rc = EXIT_INVALID;
        goto done;
    }
    bo.control_url = nonempty(getenv("FAULTLINE_CONTROL_URL"));
    bo.plan_path = nonempty(bo.plan_path);
    bo.events_path = nonempty(bo.events_path);
    bo.component = "world";
    if (bo.plan_path || bo.events_path || bo.control_url) {
        if ((seam = seam_new(&bo, &e)) == NULL) {
            fprintf(stderr, "faultline world: %s\n", e.msg);
            rc = e.code == ERR_IO ? EXIT_FAIL : EXIT_INVALID;
            goto done;
        }
    }
    so.in_fd = STDIN_FILENO;
    so.out_fd = STDOUT_FILENO;
    so.max_line = max_line;
    so.ledger_path = nonempty(ledger);
    so.seam = seam;
    rc = world_serve(w, &so, &e) < 0 ? EXIT_FAIL : EXIT_OK;
    if (rc != EXIT_OK)
        fprintf(stderr, "faultline world: %s\n", e.msg);
done:
    seam_free(seam);
    world_free(w);
    json_decref(spec);
    return rc;
}
