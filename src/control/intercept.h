/*
 * intercept: TLS interception of the egress hosts a fault targets (egress.credential_401).
 *
 * The controller holds one struct intercept (ctl->icpt, made by intercept_new at start-up):
 * the run's CA (src/codec/tlsmint.h; its key never leaves this process) and, once a host is
 * intercepted, one upstream (src/control/upstream.h) per origin. With cfg.ca_dir set the CA
 * certificate is written there as ca.pem, and the sandbox's trust bundle (the system CAs and
 * the run's CA) as ca-bundle.pem, before the controller reports ready.
 *
 * The egress proxy (engineer egress's listener) decides per connection:
 *   intercept_wanted(ctl, host) == 1  -->  intercept_start(...)  (TLS terminated here)
 *   otherwise                         -->  a blind tunnel
 * so a matched host is intercepted from its first request and `after_calls` counts HTTP
 * requests, not connections.
 *
 * intercept_start's contract on `client`:
 *   - a plain (not TLS) bufferevent on the loop ctl->base, made with BEV_OPT_CLOSE_ON_FREE;
 *   - CONNECT: the proxy has already written "HTTP/1.1 200 ..." (it may still sit in the
 *     output buffer); transparent :443: nothing was written;
 *   - bytes already read from the socket (the start of the ClientHello, peeked or read) are
 *     left in its input buffer: the TLS filter reads them first;
 *   - its callbacks and timeouts are replaced; on success intercept owns it (frees it when the
 *     client's connection ends), and the caller must drop every reference to it;
 *   - on error (returned < 0) nothing was done to it: the caller still owns it.
 * host: the CONNECT host (the SNI must equal it), or NULL in transparent mode (the SNI names
 * the host). port: the destination port (the upstream's).
 *
 * Per connection (icon_* in intercept.c):
 *   HANDSHAKE --SNI accepted, handshake done-->      HEAD
 *   HANDSHAKE --no SNI / SNI mismatch / TLS error--> closed (alert sent; egress_request
 *                                                    with error)
 *   HEAD      --request head and body read-->        decide (plan_decide per request)
 *   decide    --credential_401 fires-->              401 written, HEAD (fault_injected,
 *                                                    egress_request faulted)
 *   decide    --Host does not match the SNI-->        421 written, HEAD
 *   decide    --no fault-->                          UPSTREAM (forwarded over verified TLS)
 *   UPSTREAM  --response relayed-->                  HEAD (egress_request), or closed
 *   any       --client EOF, error, timeout-->        closed
 */
#ifndef FAULTLINE_CONTROL_INTERCEPT_H
#define FAULTLINE_CONTROL_INTERCEPT_H

#include <event2/bufferevent.h>

#include "util/buf.h"
#include "util/err.h"

struct ctl;
struct intercept;

/* Mints the run's CA (and writes ca.pem and ca-bundle.pem under ctl->cfg.ca_dir when set).
 * Call once the core (base, dns, plan, events) is set. Caller frees with intercept_free.
 * NULL with e set: ERR_SYS (OpenSSL), ERR_IO (cannot write the files). */
struct intercept *intercept_new(struct ctl *ctl, struct err *e);
/* Shutdown: closes the intercepted connections, recording their end. NULL is a no-op. */
void intercept_stop(struct intercept *ic);
/* NULL is a no-op; after intercept_stop. */
void intercept_free(struct intercept *ic);

/* 1 when a fault the egress side intercepts for (egress.credential_401) matches host by its
 * match.host pattern: the proxy hands such a CONNECT to intercept_start. Touches no counter. */
int intercept_wanted(struct ctl *ctl, const char *host);

/* Takes over an accepted client connection and terminates TLS with the leaf for its host
 * (contract above). 0 (client is intercept's), or a negative ERR_* with e set (nothing was
 * done: ERR_UNSUPPORTED when the controller has no interception, ERR_INVALID bad host,
 * ERR_SYS OpenSSL). */
int intercept_start(struct ctl *ctl, struct bufferevent *client, const char *host, int port,
                    struct err *err);

/* The answer of egress.credential_401 for host, for the proxy's plain-HTTP requests too:
 * header lines ("Name: value\r\n": Content-Type, WWW-Authenticate) appended to hdrs and the
 * body to body; the status is 401. A GitHub-like API host (api.github.com, or a name holding
 * "github") gets GitHub's JSON {"message":"Bad credentials (...)","documentation_url":...,
 * "status":"401"} and `WWW-Authenticate: Basic realm="GitHub"`; any other host a plain-text
 * body and a Bearer invalid_token challenge. The message carries the canary (may be NULL).
 * 0, or ERR_LIMIT / ERR_NOMEM. */
int intercept_answer_401(const char *host, const char *canary, struct buf *hdrs, struct buf *body);

#endif
