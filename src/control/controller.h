/*
 * controller: the per-repetition controller daemon (`faultline proxy`).
 *
 * One libevent loop serves, on one listening socket: the model API reverse proxy (Anthropic
 * /v1/messages, OpenAI /v1/chat/completions and /v1/responses; any other path passes through
 * to the upstream the request's headers point at), with the llm.* faults, upstream retries,
 * token and cost accounting and the cost ceiling; and the control API under /_faultline/ for
 * the components inside the sandbox (docs/control-api.md). It holds the repetition's plan
 * (one place for its counters) and is the single writer of the repetition's events file.
 *
 * The safety rule: mutating faults are decided only when the controller knows the agent is
 * sandboxed: its --listen-fd listener lives in another network namespace than its own (the
 * runner made it inside the sandbox, so every client is in there), or whoever started it by
 * hand said so with i_have_a_sandbox. Otherwise each mutating decision is refused (the call
 * goes through unfaulted) and recorded as a warning fault_refused.
 */
#ifndef FAULTLINE_CONTROL_CONTROLLER_H
#define FAULTLINE_CONTROL_CONTROLLER_H

#include <stddef.h>

#include "util/err.h"

struct hostport_spec;

struct controller_config {
    const char *plan_path;          /* required */
    const char *events_path;        /* required */
    const char *listen_addr;        /* "HOST:PORT" (unless listen_fd); NULL: 127.0.0.1:0 */
    int listen_fd;                  /* inherited listening socket, -1 when none */
    const char *upstream_anthropic; /* NULL: https://api.anthropic.com */
    const char *upstream_openai;    /* NULL: https://api.openai.com */
    const char *upstream_ca;        /* extra CA file for https upstreams, or NULL */
    const char *ready_file;         /* gets "HOST:PORT\n" once serving, or NULL */
    const char *prices_file;        /* price table overrides (pricing.h format), or NULL */
    int i_have_a_sandbox;           /* declared by whoever started it by hand: the agent runs
                                       in a sandbox, mutating faults are answered */
    size_t max_body;                /* request body limit; 0: 32 MiB */
    size_t max_conns;               /* client connections; 0: 4096 */
    int retries;                    /* upstream retries after the first attempt; < 0: 2 */
    int retry_base_ms;              /* first backoff; <= 0: 500 */
    int retry_max_ms;               /* backoff cap, also the longest retry-after honoured;
                                       <= 0: 8000 */
    int connect_timeout_ms;         /* <= 0: 10000 */
    int first_byte_timeout_ms;      /* upstream response head; <= 0: 600000 */
    int idle_timeout_ms;            /* silence inside an upstream body; <= 0: 300000 */
    int client_timeout_ms;          /* request receipt, keep-alive idle, stalled reader;
                                       <= 0: 60000 */
    /* "HOST:PORT:ADDR" entries (curl's --resolve), NULL-terminated, or NULL: a connection to
     * HOST:PORT goes to ADDR instead (intercepted origins; the egress proxy) */
    const char *const *resolve;
    /* the experiment's egress.allow (egress_policy.h): host patterns, NULL-terminated; NULL:
     * every host allowed */
    const char *const *egress_allow;
    const char *ca_dir; /* gets ca.pem (the run's interception CA certificate,
                           never its key) and ca-bundle.pem (system CAs + it),
                           or NULL */
    /* the egress forward proxy (src/control/egress.h, docs/egress.md): served only when one
     * of the two is set */
    const char *egress_listen;     /* "HOST:PORT" */
    int egress_listen_fd;          /* inherited listening socket, -1 when none */
    const char *egress_ready_file; /* gets the egress proxy's "HOST:PORT\n", or NULL */
    /* the DNS stub (dnsstub.h): a UDP socket to bind ("HOST:PORT"), or an inherited bound one
     * (-1 when none); at most one of the two is set */
    const char *dns_listen;
    int dns_listen_fd;
    /* the transparent listeners (transparent.h): plain HTTP routed by Host (:80 inside the
     * sandbox) and TLS routed by SNI (:443); "HOST:PORT" to bind, or inherited (-1: none) */
    const char *transparent_http;
    int transparent_http_fd;
    const char *transparent_tls;
    int transparent_tls_fd;
    /* the experiment's egress.host_ports (hostport.h): inherited listeners inside the
     * sandbox, each relayed to the host's 127.0.0.1:PORT through the egress proxy (which must
     * then be served too); nhost_ports of them, at most HOSTPORT_MAX */
    const struct hostport_spec *host_ports;
    size_t nhost_ports;
    /* the policy files of the gate endpoint (POST /_faultline/gate), project's first; a
     * missing one is skipped; none: the built-in default policy */
    const char *const *policy_paths;
    size_t npolicy_paths;
};

/* Fills cfg with the defaults above, stated once in controller.c (the files NULL, listen_fd -1):
 * what `faultline proxy --help` shows. controller_run applies them to a field left unset. */
void controller_config_init(struct controller_config *cfg);

/*
 * Loads the plan, opens the events file, listens, writes the ready file, and serves until
 * SIGTERM or SIGINT; then stops accepting, cuts open streams, records their end and returns
 * (within a second). 0 after a clean stop; otherwise a negative ERR_* with e set before
 * serving began: ERR_INVALID (bad plan, bad upstream URL, bad price or policy file), ERR_IO (events
 * or ready file), ERR_SYS (cannot listen).
 */
int controller_run(const struct controller_config *cfg, struct err *e);

#endif
