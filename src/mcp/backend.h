/*
 * backend: where the MCP shim's decisions come from and where its events go.
 *
 *   controller  FAULTLINE_CONTROL_URL is set: each tools/call is decided by POST
 *               /_faultline/decide within a short deadline (decide_ms, default 400 ms; then
 *               the call goes through unfaulted, and a circuit breaker stops asking until a
 *               background probe finds the controller answering again); events are serialized
 *               on the relay thread into a bounded queue and posted in batches by POST
 *               /_faultline/events from a sender thread (woken by the relay's idle hook), so
 *               nothing on the relay path waits for the controller past the deadline. A plan
 *               file, when given, is only read for what is decided outside calls
 *               (mcp.annotation_lie on tools/list replies, announcing tools.listChanged).
 *   standalone  the plan is loaded in-process (plan_decide keeps the counters) and events are
 *               appended to the events file by this process. Without a plan: no faults; without
 *               an events file: no events.
 *
 * Both fill a struct mcp_backend for the session. A controller that is down, stopped or slow
 * never holds a call up for longer than the decision deadline (once; then not at all while the
 * breaker is open), and never injects: a failed decision lets the call through.
 */
#ifndef FAULTLINE_MCP_BACKEND_H
#define FAULTLINE_MCP_BACKEND_H

#include <jansson.h>

#include "mcp/session.h"
#include "util/err.h"

struct mcp_backend_ctx;

struct mcp_backend_opts {
    const char *control_url; /* non-NULL: controller mode */
    const char *plan_path;   /* may be NULL */
    const char *events_path; /* standalone only; may be NULL */
    const char *server;      /* for plan_loaded */
    int decide_ms; /* controller: decision deadline; 0: FAULTLINE_CONTROL_DECIDE_MS or 400 */
};

/* Sets up the backend and fills *b (whose ctx is the returned object). Emits plan_loaded when a
 * plan is in use. NULL with e set when the plan cannot be loaded, the events file cannot be
 * opened or the control URL is bad. Caller frees with mcp_backend_free. */
struct mcp_backend_ctx *mcp_backend_new(const struct mcp_backend_opts *o, struct mcp_backend *b,
                                        struct err *e);
/* For the relay's idle hook: standalone, writes the queued events; controller mode, wakes the
 * sender thread (never waits for it). */
void mcp_backend_flush(void *ctx);
/* Flushes and frees. Controller mode: the sender gets at most 2 s to post what is queued; what
 * it could not is logged. NULL is a no-op. */
void mcp_backend_free(struct mcp_backend_ctx *x);

#endif
