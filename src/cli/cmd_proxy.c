/*
 * cmd_proxy: `faultline proxy`, the per-repetition controller (src/control/controller.h).
 * Parses flags into a struct controller_config and runs it until SIGTERM.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "control/controller.h"
#include "util/log.h"
#include "util/num.h"
#include "util/banned.h"

static void proxy_usage(FILE *f)
{
    fprintf(f,
            "usage: faultline proxy --plan PLAN.json --events EVENTS.jsonl [options]\n"
            "\n"
            "  --listen HOST:PORT          address to serve on (default 127.0.0.1:0)\n"
            "  --listen-fd N               serve on an inherited listening socket instead\n"
            "  --ready-file F              write the bound HOST:PORT here once serving\n"
            "  --upstream-anthropic URL    default https://api.anthropic.com\n"
            "  --upstream-openai URL       default https://api.openai.com\n"
            "  --upstream-ca FILE          extra CA certificate (PEM) for https upstreams\n"
            "  --prices FILE               price table overrides (JSON or YAML)\n"
            "  --sandboxed                 the agent is sandboxed: allow mutating faults\n"
            "  --max-body BYTES            request body limit (default 33554432)\n"
            "  --max-conns N               client connections (default 4096; at the limit the one\n"
            "                              longest waiting for its request head is dropped)\n"
            "  --retries N                 upstream retries on 429/5xx/connection errors (2)\n"
            "  --retry-base-ms MS          first backoff, doubled each retry (500)\n"
            "  --retry-max-ms MS           backoff cap and longest retry-after honoured (8000)\n"
            "  --connect-timeout-ms MS     upstream connect and TLS handshake (10000)\n"
            "  --first-byte-timeout-ms MS  upstream response head (600000)\n"
            "  --idle-timeout-ms MS        silence inside an upstream body (300000)\n"
            "  --client-timeout-ms MS      client request, keep-alive and stalled reads (60000)\n"
            "  --log FILE                  log here instead of stderr\n"
            "  --log-level LEVEL           error, warn, info, debug (default warn)\n");
}

static int int_flag(const char *name, const char *v, long long min, long long max, long long *out)
{
    if (v == NULL || num_parse_ll(v, min, max, out) != 0) {
        fprintf(stderr, "faultline proxy: %s wants an integer in %lld..%lld\n", name, min, max);
        return -1;
    }
    return 0;
}

int cmd_proxy(int argc, char **argv)
{
    struct controller_config cfg;
    struct err e = {0};
    long long v;
    int rc;

    controller_config_init(&cfg);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            proxy_usage(stdout);
            return EXIT_OK;
        }
        if (strcmp(a, "--sandboxed") == 0) {
            cfg.sandboxed = 1;
            continue;
        }
        if (val == NULL) {
            fprintf(stderr, "faultline proxy: '%s' needs a value (or is unknown)\n", a);
            return EXIT_INVALID;
        }
        i++;
        if (strcmp(a, "--plan") == 0)
            cfg.plan_path = val;
        else if (strcmp(a, "--events") == 0)
            cfg.events_path = val;
        else if (strcmp(a, "--listen") == 0)
            cfg.listen_addr = val;
        else if (strcmp(a, "--ready-file") == 0)
            cfg.ready_file = val;
        else if (strcmp(a, "--upstream-anthropic") == 0)
            cfg.upstream_anthropic = val;
        else if (strcmp(a, "--upstream-openai") == 0)
            cfg.upstream_openai = val;
        else if (strcmp(a, "--upstream-ca") == 0)
            cfg.upstream_ca = val;
        else if (strcmp(a, "--prices") == 0)
            cfg.prices_file = val;
        else if (strcmp(a, "--log") == 0) {
            if (log_open_file(val) != 0) {
                fprintf(stderr, "faultline proxy: cannot open log file '%s'\n", val);
                return EXIT_FAIL;
            }
        } else if (strcmp(a, "--log-level") == 0) {
            if (log_set_level_name(val) != 0) {
                fprintf(stderr, "faultline proxy: unknown log level '%s'\n", val);
                return EXIT_INVALID;
            }
        } else {
            long long min = 0, max = 0;
            int *ip = NULL;
            size_t *zp = NULL;
            if (strcmp(a, "--listen-fd") == 0)
                ip = &cfg.listen_fd, max = 65535;
            else if (strcmp(a, "--max-body") == 0)
                zp = &cfg.max_body, min = 1, max = (long long)1 << 32;
            else if (strcmp(a, "--max-conns") == 0)
                zp = &cfg.max_conns, min = 1, max = 1000000;
            else if (strcmp(a, "--retries") == 0)
                ip = &cfg.retries, max = 20;
            else if (strcmp(a, "--retry-base-ms") == 0)
                ip = &cfg.retry_base_ms, min = 1, max = 600000;
            else if (strcmp(a, "--retry-max-ms") == 0)
                ip = &cfg.retry_max_ms, min = 1, max = 3600000;
            else if (strcmp(a, "--connect-timeout-ms") == 0)
                ip = &cfg.connect_timeout_ms, min = 1, max = 3600000;
            else if (strcmp(a, "--first-byte-timeout-ms") == 0)
                ip = &cfg.first_byte_timeout_ms, min = 1, max = 86400000;
            else if (strcmp(a, "--idle-timeout-ms") == 0)
                ip = &cfg.idle_timeout_ms, min = 1, max = 86400000;
            else if (strcmp(a, "--client-timeout-ms") == 0)
                ip = &cfg.client_timeout_ms, min = 1, max = 86400000;
            else {
                fprintf(stderr, "faultline proxy: unknown option '%s'\n", a);
                proxy_usage(stderr);
                return EXIT_INVALID;
            }
            if (int_flag(a, val, min, max, &v) != 0)
                return EXIT_INVALID;
            if (ip)
                *ip = (int)v;
            else
                *zp = (size_t)v;
        }
    }
    if (cfg.plan_path == NULL || cfg.events_path == NULL) {
        fprintf(stderr, "faultline proxy: --plan and --events are required\n");
        proxy_usage(stderr);
        return EXIT_INVALID;
    }
    rc = controller_run(&cfg, &e);
    if (rc != 0) {
        fprintf(stderr, "faultline proxy: %s\n", e.msg[0] ? e.msg : err_name(rc));
        return rc == ERR_INVALID || rc == ERR_PARSE ? EXIT_INVALID : EXIT_FAIL;
    }
    return EXIT_OK;
}
