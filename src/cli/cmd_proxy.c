/*
 * cmd_proxy: `faultline proxy`, the per-repetition controller (src/control/controller.h).
 * Parses flags into a struct controller_config and runs it until SIGTERM.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "control/controller.h"
#include "control/egress.h"
#include "control/egress_policy.h"
#include "control/hostport.h"
#include "util/log.h"
#include "util/banned.h"

int cli_opt_resolve(const struct opt *op, const char *v, struct err *e)
{
    struct cli_resolve_list *l = op->value;
    struct egress_resolve r;

    if (l->n >= EGRESS_RESOLVE_MAX)
        return err_set(e, ERR_INVALID, "--resolve: at most %d entries", EGRESS_RESOLVE_MAX);
    if (egress_resolve_parse(v, &r, e) != 0)
        return ERR_INVALID;
    l->spec[l->n++] = v;
    l->spec[l->n] = NULL;
    return 0;
}

/* --egress-allow HOST[,HOST...], repeatable (the experiment's egress.allow, egress_policy.h):
 * the patterns copied out of the arguments, host[] pointing at them */
struct allow_list {
    char pat[EGRESS_ALLOW_MAX][EGRESS_ALLOW_PATTERN_MAX + 1];
    const char *host[EGRESS_ALLOW_MAX + 1];
    size_t n;
};

static int on_egress_allow(const struct opt *op, const char *v, struct err *e)
{
    struct allow_list *l = op->value;
    char one[EGRESS_ALLOW_PATTERN_MAX + 2];

    for (;;) {
        size_t n = strcspn(v, ",");
        if (l->n >= EGRESS_ALLOW_MAX)
            return err_set(e, ERR_INVALID, "--egress-allow: at most %d hosts", EGRESS_ALLOW_MAX);
        if (n > EGRESS_ALLOW_PATTERN_MAX)
            n = EGRESS_ALLOW_PATTERN_MAX + 1; /* too long: egress_policy_pattern says so */
        memcpy(one, v, n);
        one[n] = '\0';
        if (egress_policy_pattern(one, l->pat[l->n], e) != 0)
            return ERR_INVALID;
        l->host[l->n] = l->pat[l->n];
        l->n++;
        l->host[l->n] = NULL;
        v += strcspn(v, ",");
        if (*v == '\0')
            return 0;
        v++;
    }
}

/* --host-port-fd FD:PORT[,FD:PORT...], repeatable (the experiment's egress.host_ports) */
struct host_port_flags {
    struct hostport_spec v[HOSTPORT_MAX];
    size_t n;
};

static int on_host_port_fd(const struct opt *op, const char *v, struct err *e)
{
    struct host_port_flags *f = op->value;

    return hostport_parse(v, f->v, HOSTPORT_MAX, &f->n, e);
}

#define PROXY_POLICIES_MAX 8

struct policy_flags {
    const char *paths[PROXY_POLICIES_MAX];
    size_t n;
};

static int on_policy(const struct opt *op, const char *v, struct err *e)
{
    struct policy_flags *f = op->value;

    if (f->n == PROXY_POLICIES_MAX)
        return err_set(e, ERR_INVALID, "--policy: at most %d files", PROXY_POLICIES_MAX);
    f->paths[f->n++] = v;
    return 0;
}

int cmd_proxy(int argc, char **argv)
{
    struct policy_flags pf = {.n = 0};
    struct controller_config cfg;
    struct err e = {0};
    struct cli_resolve_list resolve = {{NULL}, 0};
    struct allow_list allow = {.n = 0};
    struct host_port_flags hports = {.n = 0};
    const char *log_file = NULL, *level = log_level_name();
    int nargs, rc;

    controller_config_init(&cfg);
    /* the defaults shown are the values controller_config_init set: written once, there */
    const struct opt opts[] = {
        OPT_STRING("plan", "PLAN.json", &cfg.plan_path, NULL, "the repetition's plan (required)"),
        OPT_STRING("events", "EVENTS.jsonl", &cfg.events_path, NULL,
                   "append events here (required)"),
        OPT_STRING("listen", "HOST:PORT", &cfg.listen_addr, NULL, "address to serve on"),
        OPT_INT("listen-fd", "N", &cfg.listen_fd, 0, 65535,
                "serve on an inherited listening socket instead"),
        OPT_STRING("ready-file", "F", &cfg.ready_file, NULL, "write the bound HOST:PORT here"),
        OPT_STRING("upstream-anthropic", "URL", &cfg.upstream_anthropic, NULL, "the Anthropic API"),
        OPT_STRING("upstream-openai", "URL", &cfg.upstream_openai, NULL, "the OpenAI API"),
        OPT_STRING("upstream-ca", "FILE", &cfg.upstream_ca, NULL,
                   "extra CA certificate (PEM) for https upstreams"),
        OPT_STRING("ca-dir", "DIR", &cfg.ca_dir, NULL,
                   "write the run's interception CA certificate (ca.pem) and the trust bundle "
                   "(ca-bundle.pem) here"),
        OPT_STRING("prices", "FILE", &cfg.prices_file, NULL, "price table overrides (JSON/YAML)"),
        OPT_CALL("policy", "FILE", on_policy, &pf,
                 "a gate policy file for POST /_faultline/gate (repeatable: the project's "
                 "first; a missing one is skipped)"),
        OPT_BOOL("i-have-a-sandbox", 0, &cfg.i_have_a_sandbox,
                 "started by hand for a sandboxed agent: answer mutating faults (a --listen-fd "
                 "listener in another network namespace needs no flag)"),
        OPT_SIZE("max-body", "BYTES", &cfg.max_body, 1, (long long)1 << 32, "request body limit"),
        OPT_SIZE("max-conns", "N", &cfg.max_conns, 1, 1000000,
                 "client connections (at the limit, the one longest waiting for its request "
                 "head is dropped)"),
        OPT_INT("retries", "N", &cfg.retries, 0, 20,
                "upstream retries on 429/5xx/connection errors"),
        OPT_INT("retry-base-ms", "MS", &cfg.retry_base_ms, 1, 600000,
                "first backoff, doubled each retry"),
        OPT_INT("retry-max-ms", "MS", &cfg.retry_max_ms, 1, 3600000,
                "backoff cap and longest retry-after honoured"),
        OPT_INT("connect-timeout-ms", "MS", &cfg.connect_timeout_ms, 1, 3600000,
                "upstream connect and TLS handshake"),
        OPT_INT("first-byte-timeout-ms", "MS", &cfg.first_byte_timeout_ms, 1, 86400000,
                "upstream response head"),
        OPT_INT("idle-timeout-ms", "MS", &cfg.idle_timeout_ms, 1, 86400000,
                "silence inside an upstream body"),
        OPT_INT("client-timeout-ms", "MS", &cfg.client_timeout_ms, 1, 86400000,
                "client request, keep-alive and stalled reads"),
        OPT_STRING("egress-listen", "HOST:PORT", &cfg.egress_listen, NULL,
                   "serve the egress forward proxy (HTTP_PROXY) here"),
        OPT_INT("egress-listen-fd", "N", &cfg.egress_listen_fd, 0, 65535,
                "serve the egress proxy on an inherited listening socket instead"),
        OPT_STRING("egress-ready-file", "F", &cfg.egress_ready_file, NULL,
                   "write the egress proxy's bound HOST:PORT here"),
        OPT_STRING("dns-listen", "HOST:PORT", &cfg.dns_listen, NULL,
                   "serve the DNS stub (UDP) here"),
        OPT_INT("dns-listen-fd", "N", &cfg.dns_listen_fd, 0, 65535,
                "serve the DNS stub on an inherited bound UDP socket instead"),
        OPT_STRING("transparent-http", "HOST:PORT", &cfg.transparent_http, NULL,
                   "serve plain HTTP routed by its Host field here (the sandbox's :80)"),
        OPT_INT("transparent-http-fd", "N", &cfg.transparent_http_fd, 0, 65535,
                "the same on an inherited listening socket"),
        OPT_STRING("transparent-tls", "HOST:PORT", &cfg.transparent_tls, NULL,
                   "serve TLS routed by its SNI here (the sandbox's :443)"),
        OPT_INT("transparent-tls-fd", "N", &cfg.transparent_tls_fd, 0, 65535,
                "the same on an inherited listening socket"),
        OPT_CALL("resolve", "HOST:PORT:ADDR", cli_opt_resolve, &resolve,
                 "egress to HOST:PORT goes to ADDR, which may then be loopback or private "
                 "(curl's --resolve; repeatable; PORT * for any)"),
        OPT_CALL("egress-allow", "HOST[,HOST...]", on_egress_allow, &allow,
                 "the egress proxy refuses (403) every host but these (repeatable; * followed "
                 "by a suffix matches by suffix; none: every host allowed)"),
        OPT_CALL("host-port-fd", "FD:PORT[,FD:PORT...]", on_host_port_fd, &hports,
                 "relay each inherited listening socket FD to the host's 127.0.0.1:PORT "
                 "through the egress proxy (the experiment's egress.host_ports; repeatable)"),
        OPT_STRING("log", "FILE", &log_file, "stderr", "log here"),
        OPT_STRING("log-level", "LEVEL", &level, NULL, "error, warn, info or debug"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "proxy",
        .usage = "--plan PLAN.json --events EVENTS.jsonl [options]",
        .about = "The per-repetition controller: a model API proxy injecting the plan's llm.*\n"
                 "faults, the control API for the MCP shim and hooks, and the events file.\n"
                 "Runs until SIGTERM or SIGINT.\n",
        .opts = opts,
        .max_args = 0,
        .example = "proxy --plan plan.json --events events.jsonl --ready-file addr",
        .doc = "docs/control-api.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (cfg.plan_path == NULL || cfg.events_path == NULL) {
        opt_usage_error(&cmd, "--plan and --events are required");
        return EXIT_USAGE;
    }
    if (level && log_set_level_name(level) != 0) {
        opt_usage_error(&cmd, "--log-level: expected error, warn, info or debug");
        return EXIT_USAGE;
    }
    if (log_file && log_open_file(log_file) != 0) {
        fprintf(stderr, "faultline proxy: cannot open log file '%s'\n", log_file);
        return EXIT_FAIL;
    }
    cfg.resolve = resolve.n ? resolve.spec : NULL;
    cfg.egress_allow = allow.n ? allow.host : NULL;
    cfg.host_ports = hports.v;
    cfg.nhost_ports = hports.n;
    cfg.policy_paths = pf.paths;
    cfg.npolicy_paths = pf.n;
    rc = controller_run(&cfg, &e);
    if (rc != 0) {
        fprintf(stderr, "faultline proxy: %s\n", e.msg[0] ? e.msg : err_name(rc));
        return rc == ERR_INVALID || rc == ERR_PARSE ? EXIT_INVALID : EXIT_FAIL;
    }
    return EXIT_OK;
}
