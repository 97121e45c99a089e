/*
 * session: the MCP shim's protocol logic, without I/O. It sees every line from the client (the
 * agent) and from the server, tracks request ids per direction, records tool calls and results
 * as events, asks for a fault decision on each tools/call and applies the fault, and writes what
 * each side must receive into two output buffers that its host (relay.c, or a unit test) drains.
 *
 * Transparency: a line no fault touches is copied to the other side byte for byte (the line and
 * its '\n'); a message is re-serialized only when a fault changes it. Lines that are not
 * JSON-RPC from the client are forwarded (the server answers them); from the server they are
 * dropped, since the client must only ever see protocol messages. A message that jansson
 * refuses but JSON.parse accepts (jsonrpc_parse_lax) is relayed as it is and tracked from the
 * lax scan; a fault that would have to change it answers the request with an error instead. Every
 * anomaly becomes a `warning` event (and a log line), rate-limited per code.
 *
 * Time: the host supplies a monotonic clock and one-shot timers keyed by a token; the session
 * calls set_timer/cancel_timer and the host calls mcp_session_timer when one fires. The session
 * never blocks and never calls back into the host from mcp_session_free.
 *
 * Faults and their exact behaviour: docs/mcp-shim.md.
 */
#ifndef FAULTLINE_MCP_SESSION_H
#define FAULTLINE_MCP_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "codec/jsonrpc.h"
#include "experiment/catalog.h"
#include "plan/plan.h"
#include "seam/seam.h"
#include "util/buf.h"

/* Where decisions come from and where events go: a seam (src/seam/seam.h, through
 * src/mcp/backend.c), or a test's fakes. */
struct mcp_backend {
    void *ctx;
    /* Decides for one tools/call. 0 with *out filled, or a negative code: the call then goes
     * through unfaulted and the session emits a warning. */
    int (*decide)(void *ctx, const struct plan_call *call, struct seam_decision *out);
    /* Records one event. The session builds ev for this call and drops its reference after
     * it: the backend may add fields to it (t, src) and keep a reference. NULL: no events are
     * recorded, and the session does not build them. */
    void (*emit)(void *ctx, json_t *ev);
    /* The repetition's canary (borrowed), or NULL while unknown. */
    const char *(*canary)(void *ctx);
    /* Optional (may be NULL): the plan's faults array (docs/plan.md; borrowed), or NULL when
     * the plan is not known here. Used for faults applied to tools/list replies rather than to
     * calls (mcp.annotation_lie) and to announce listChanged when a plan may change the tool
     * set. */
    json_t *(*plan_faults)(void *ctx);
    /* Optional: plan_select for list-time faults (1 inject, 0 not). */
    int (*select)(void *ctx, size_t fault_index, const char *key, uint64_t index,
                  double probability);
    /* Optional: 1 when mutating faults may apply now (the safety rule: seam_mutating_allowed),
     * asked at each one; NULL: the session's refuse_mutating option says. */
    int (*mutating_allowed)(void *ctx);
    /* 1: emit takes raw values (events_raw_new, events.h) at the top level of an event, so a
     * large tools/call argument or result is recorded from its text, no tree built. 0: every
     * event is a plain tree. */
    int raw_events;
    /* 1: decide never reads the call's arguments (no plan fault has `when`), so a tools/call
     * whose line no fault changes is relayed without parsing them. 0: they are parsed. */
    int args_unused;
};

/* What the session needs from the process that runs it. */
struct mcp_host {
    void *ctx;
    int64_t (*now_ms)(void *ctx); /* monotonic milliseconds */
    /* One-shot timer: call mcp_session_timer(s, token) after delay_ms (>= 0). */
    void (*set_timer)(void *ctx, uint64_t token, int64_t delay_ms);
    void (*cancel_timer)(void *ctx, uint64_t token);
};

struct mcp_session_opts {
    const char *server;      /* server name for matching and events; NULL: serverInfo.name */
    int refuse_mutating;     /* 1: mutating faults are refused (no sandbox known), when the
                                backend has no mutating_allowed */
    size_t max_pending;      /* tracked requests per direction; 0: 10000 */
    size_t max_result_event; /* bytes of result JSON kept in a tool_result event; 0: 16 KiB */
    size_t warn_limit;       /* warning events per code, then only counted; 0: 20 */
};

struct mcp_session;

/* b and h are copied; their ctx pointers must outlive the session. Caller frees with
 * mcp_session_free. */
struct mcp_session *mcp_session_new(const struct mcp_session_opts *o, const struct mcp_backend *b,
                                    const struct mcp_host *h);
/* Frees everything; emits nothing and calls no host function. NULL is a no-op. */
void mcp_session_free(struct mcp_session *s);

/* The faults this shim has a handler for (docs/architecture.md, "How a fault flows"): writes
 * the catalog ids of the first max of them into ids (catalog order) and returns how many there
 * are. Every one is a catalog row injected by mcp, and every such row has one
 * (tests/unit/test_mcp_session.c checks both). */
size_t mcp_session_fault_ids(enum catalog_fault_id *ids, size_t max);

/* Bytes to write to the server's stdin / to the client. The host writes from the front and
 * calls buf_consume; the session only appends. */
struct buf *mcp_session_to_server(struct mcp_session *s);
struct buf *mcp_session_to_client(struct mcp_session *s);

/* One line (without its '\n') from the client / from the server. */
void mcp_session_client_line(struct mcp_session *s, const char *line, size_t len);
void mcp_session_server_line(struct mcp_session *s, const char *line, size_t len);
/* A line over the framer's limit was dropped (len bytes; sk: what the skim saw). A request
 * from the client gets a JSON-RPC error; a reply from the server to a pending request turns
 * into a JSON-RPC error for the client. */
void mcp_session_client_too_long(struct mcp_session *s, uint64_t len,
                                 const struct jsonrpc_skim *sk);
void mcp_session_server_too_long(struct mcp_session *s, uint64_t len,
                                 const struct jsonrpc_skim *sk);

/* The client closed its input (stdin EOF), leaving partial bytes of an unterminated line
 * (0 for none). Pending calls stay: the client may still read their answers. */
void mcp_session_client_eof(struct mcp_session *s, uint64_t partial);
/* The client's output is gone (EPIPE): nothing more is written to the client; held and delayed
 * calls are dropped (they were never forwarded) and every tool_result from now on carries
 * "delivered": false. */
void mcp_session_client_gone(struct mcp_session *s);
/* The server's stdout ended, leaving partial bytes (0: none). */
void mcp_session_server_eof(struct mcp_session *s, uint64_t partial);
/* The server stopped reading its stdin (EPIPE): requests still to come are answered with a
 * JSON-RPC error at once. */
void mcp_session_server_input_closed(struct mcp_session *s);
/* The server is gone (how: "exited with status 1"...): every client request still pending
 * (forwarded, held or delayed) gets a JSON-RPC error (-32000) now, and later ones at once. */
void mcp_session_server_exited(struct mcp_session *s, const char *how);

/* A timer set through mcp_host.set_timer fired. Unknown tokens are ignored. */
void mcp_session_timer(struct mcp_session *s, uint64_t token);

/* Client requests not yet answered (including held and delayed ones). */
size_t mcp_session_pending(const struct mcp_session *s);
/* Emits a warning event with the counts of warnings that were suppressed by the rate limit.
 * Call once at the end. */
void mcp_session_finish(struct mcp_session *s);

/* The server name in use (borrowed; "mcp" until known). */
const char *mcp_session_server_name(const struct mcp_session *s);

#endif
