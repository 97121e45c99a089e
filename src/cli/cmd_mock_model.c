/*
 * cmd_mock_model: `faultline mock-model`, the deterministic model server (src/model/mock.h).
 *
 *   faultline mock-model --script FILE [--listen 127.0.0.1:PORT | --listen-fd N]
 *                        [--ready-file F] [--record F] [--max-body BYTES]
 *                        [--log F] [--log-level L] [--check]
 *
 * Prints the bound address ("127.0.0.1:PORT") on stdout once serving, and stops cleanly on
 * SIGTERM or SIGINT. --check only loads the script. Exit: 0 stopped cleanly (or the script is
 * valid), 1 runtime failure (cannot bind, cannot write), 2 usage or invalid script.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "model/mock.h"
#include "util/log.h"
#include "util/num.h"
#include "util/banned.h"

static void usage(FILE *f)
{
    fprintf(
        f, "usage: faultline mock-model --script FILE [--listen 127.0.0.1:PORT | --listen-fd N]\n"
           "                            [--ready-file F] [--record F] [--max-body BYTES]\n"
           "                            [--log F] [--log-level error|warn|info|debug] [--check]\n");
}

static void print_ready(const char *addr, void *arg)
{
    printf("%s\n", addr);
    fflush(stdout);
}

int cmd_mock_model(int argc, char **argv)
{
    const char *script = NULL, *log_file = NULL, *level = NULL;
    struct mock_server_opts o;
    int check = 0;
    struct err e = {0};

    memset(&o, 0, sizeof(o));
    o.listen_fd = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n;
        if (strcmp(a, "--check") == 0) {
            check = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return EXIT_OK;
        }
        if (v == NULL) {
            fprintf(stderr, "faultline mock-model: '%s' needs a value or is unknown\n", a);
            usage(stderr);
            return EXIT_INVALID;
        }
        i++;
        if (strcmp(a, "--script") == 0) {
            script = v;
        } else if (strcmp(a, "--listen") == 0) {
            o.listen = v;
        } else if (strcmp(a, "--listen-fd") == 0) {
            if (num_parse_ll(v, 0, 1 << 20, &n) < 0) {
                fprintf(stderr, "faultline mock-model: bad --listen-fd '%s'\n", v);
                return EXIT_INVALID;
            }
            o.listen_fd = (int)n;
        } else if (strcmp(a, "--ready-file") == 0) {
            o.ready_file = v;
        } else if (strcmp(a, "--record") == 0) {
            o.record = v;
        } else if (strcmp(a, "--max-body") == 0) {
            if (num_parse_ll(v, 1, (long long)WIRE_BODY_MAX, &n) < 0) {
                fprintf(stderr, "faultline mock-model: bad --max-body '%s' (1..%zu)\n", v,
                        WIRE_BODY_MAX);
                return EXIT_INVALID;
            }
            o.max_body = (size_t)n;
        } else if (strcmp(a, "--log") == 0) {
            log_file = v;
        } else if (strcmp(a, "--log-level") == 0) {
            level = v;
        } else {
            fprintf(stderr, "faultline mock-model: unknown option '%s'\n", a);
            usage(stderr);
            return EXIT_INVALID;
        }
    }
    if (script == NULL) {
        fprintf(stderr, "faultline mock-model: --script FILE is required\n");
        usage(stderr);
        return EXIT_INVALID;
    }
    if (o.listen && o.listen_fd >= 0) {
        fprintf(stderr, "faultline mock-model: give --listen or --listen-fd, not both\n");
        return EXIT_INVALID;
    }
    if (level && log_set_level_name(level) < 0) {
        fprintf(stderr, "faultline mock-model: bad --log-level '%s'\n", level);
        return EXIT_INVALID;
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
    int rc = mock_serve(s, &o, &e);
    mockscript_free(s);
    if (rc < 0) {
        fprintf(stderr, "faultline mock-model: %s\n", e.msg);
        return rc == ERR_INVALID ? EXIT_INVALID : EXIT_FAIL;
    }
    return EXIT_OK;
}
