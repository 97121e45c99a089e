/*
 * client: a small blocking HTTP/1.1 client for the controller's control API
 * (docs/control-api.md), used by the seam (seam.h) of the components inside the sandbox
 * (faultline mcp, and later gate, world and the reference agent) when FAULTLINE_CONTROL_URL is
 * set. Part of the seam layer: nothing above src/seam/ calls it directly but the gate
 * (src/gate/gate.c: one request per process, docs/architecture.md).
 *
 * One connection, kept alive between requests and re-opened when the controller closed it
 * (checked before each request, so a request is never sent twice). Every wait has a deadline:
 * connect_ms for the connection, io_ms for the whole exchange of one request. Responses are
 * read by Content-Length, chunked encoding or until close, and never past max_response bytes.
 * Only plain http:// URLs (the controller listens on 127.0.0.1 inside the sandbox's network
 * namespace). The transport is a kept connection from src/codec/httpc.h (struct httpc_conn).
 * Not thread-safe: one client per thread.
 */
#ifndef FAULTLINE_SEAM_CLIENT_H
#define FAULTLINE_SEAM_CLIENT_H

#include <stddef.h>

#include <jansson.h>

#include "plan/plan.h"
#include "util/buf.h"
#include "util/err.h"

#define SEAM_CLIENT_CONNECT_MS 2000
#define SEAM_CLIENT_IO_MS 10000
#define SEAM_CLIENT_MAX_RESPONSE (4u << 20)

struct seam_client;

/* Parses url ("http://HOST[:PORT][/PREFIX]", HOST a name, an IPv4 address or [IPv6]) without
 * connecting. NULL with e set (ERR_INVALID) for a bad or non-http URL. Caller frees with
 * seam_client_free. */
struct seam_client *seam_client_new(const char *url, struct err *e);
/* Closes the connection and frees; NULL is a no-op. */
void seam_client_free(struct seam_client *c);
/* Overrides the defaults above (values <= 0 keep the current one). */
void seam_client_set_limits(struct seam_client *c, int connect_ms, int io_ms, size_t max_response);

/* One request. path is appended to the URL's prefix; body may be NULL (no body). On 0, *status
 * is the HTTP status and resp (appended to) the body. Errors: ERR_IO (cannot connect, send or
 * receive: the message says which), ERR_TIMEOUT, ERR_PROTO (not an HTTP/1.x response),
 * ERR_LIMIT (response over max_response). After an error the connection is closed. */
int seam_client_request(struct seam_client *c, const char *method, const char *path,
                        const char *body, size_t len, int *status, struct buf *resp, struct err *e);

/* 1 when the last request started sending (the controller may have acted on it even if the
 * request then failed), 0 when it failed before (resolving, connecting): only then is sending
 * it again safe. */
int seam_client_sent(const struct seam_client *c);

/* POSTs body (borrowed, serialized compactly) and parses a JSON reply into *reply (new
 * reference; caller decrefs). A status other than 200 is ERR_PROTO with the controller's
 * error message in e; a reply that is not JSON is ERR_PROTO. */
int seam_client_post_json(struct seam_client *c, const char *path, const json_t *body,
                          json_t **reply, struct err *e);

/* POST /_faultline/decide for call (docs/control-api.md). *reply: {"inject": bool, ...}. */
int seam_client_decide(struct seam_client *c, const struct plan_call *call, json_t **reply,
                       struct err *e);
/* POST /_faultline/events with one event object or an array of at most 1000 (borrowed). */
int seam_client_post_events(struct seam_client *c, const json_t *events, struct err *e);
/* POST /_faultline/events with text, already serialized (a JSON object, or an array of at most
 * 1000): for a caller that serializes on another thread than the one sending. 0 on a 200
 * answer; otherwise as seam_client_post_json. */
int seam_client_post_events_text(struct seam_client *c, const char *text, size_t len,
                                 struct err *e);
/* GET /_faultline/health; *reply the JSON body (new reference). */
int seam_client_health(struct seam_client *c, json_t **reply, struct err *e);

#endif
