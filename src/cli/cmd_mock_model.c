/*
 * cmd_mock_model: `faultline mock-model`, the deterministic model server (src/model/mock.h).
 *
 *   faultline mock-model --script FILE [--listen 127.0.0.1:PORT | --listen-fd N]
 *                        [--ready-file F] [--record F] [--max-body BYTES]
 *                        [--log F] [--log-level L] [--check]
 *
 * Prints the bound address ("127.0.0.1:PORT") on stdout once serving, and stops cleanly on
 * SIGTERM or SIGINT. --check only loads the script. Exit: 0 stopped cleanly (or the script is
 * valid), 1 runtime failure (cannot bind, cannot write), 2 invalid script, 64 usage.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "model/mock.h"
#include "util/log.h"
#include "util/banned.h"

static void print_ready(const char *addr, void *arg)
{
    printf("%s\n", addr);
    fflush(stdout);
}

int cmd_mock_model(int argc, char **argv)
{
    const char *script = NULL, *log_file = NULL, *level = NULL;
    struct mock_server_opts o;
    int check = 0, nargs, rc;
    struct err e = {0};

    memset(&o, 0, sizeof(o));
    o.listen_fd = -1;
    o.max_body = WIRE_BODY_MAX;
    const struct opt opts[] = {
        OPT_STRING("script", "FILE", &script, NULL, "the script to serve (required)"),
        OPT_STRING("listen", "ADDR", &o.listen, "127.0.0.1:0",
                   "127.0.0.1:PORT, localhost:PORT or [::1]:PORT (PORT 0 picks one)"),
        OPT_INT("listen-fd", "N", &o.listen_fd, 0, 1 << 20,
                "serve on this inherited listening socket instead"),
        OPT_STRING("ready-file", "F", &o.ready_file, NULL, "write the bound address here"),
        OPT_STRING("record", "F", &o.record, NULL,
                   "append one JSON line per request here (no headers or bodies)"),
        OPT_SIZE("max-body", "BYTES", &o.max_body, 1, (long long)WIRE_BODY_MAX,
                 "request body limit"),
        OPT_STRING("log", "F", &log_file, "stderr", "log here"),
        OPT_STRING("log-level", "LEVEL", &level, "warn", "error, warn, info or debug"),
        OPT_BOOL("check", 0, &check, "only load and check the script"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "mock-model",
        .usage = "--script FILE [--listen ADDR | --listen-fd N] [options]",
        .about =
            "A deterministic model server (Anthropic, OpenAI chat and responses APIs) playing\n"
            "a script. Prints the bound address on stdout once serving; stops cleanly on\n"
            "SIGTERM or SIGINT.\n",
        .opts = opts,
        .max_args = 0,
        .example = "mock-model --script script.yaml --listen 127.0.0.1:8089",
        .doc = "docs/mock-model.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (script == NULL) {
        opt_usage_error(&cmd, "--script FILE is required");
        return EXIT_USAGE;
    }
    if (o.listen && o.listen_fd >= 0) {
        opt_usage_error(&cmd, "give --listen or --listen-fd, not both");
        return EXIT_USAGE;
    }
    if (level && log_set_level_name(level) < 0) {
        opt_usage_error(&cmd, "--log-level: expected error, warn, info or debug");
        return EXIT_USAGE;
    }
    if (log_file && log_open_file(log_file) < 0) {
        fprintf(stderr, "faultline mock-model: cannot open log file '%s'\n", log_file);
        return EXIT_FAIL;
    }
    struct mockscript *s = mockscript_load(script, &e);
    if (s == NULL) {
        fprintf(stderr, "faultline mock-model: %s\n", e.msg);
        return e.code == ERR_IO ? EXIT_FAIL : EXIT_INVALID;
    }
    if (check) {
        printf("%s: ok\n", script);
        mockscript_free(s);
        return EXIT_OK;
    }
    o.on_ready = print_ready;
    rc = mock_serve(s, &o, &e);
    mockscript_free(s);
    if (rc < 0) {
        fprintf(stderr, "faultline mock-model: %s\n", e.msg);
        return rc == ERR_INVALID ? EXIT_INVALID : EXIT_FAIL;
    }
    return EXIT_OK;
}
