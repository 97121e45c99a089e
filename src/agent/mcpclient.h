/*
 * mcpclient: an MCP client over stdio for the reference agent: start a server, list its
 * tools, call them, stop it.
 *
 * The server command runs with `sh -c` in its own process group (src/util/proc.h), speaking
 * newline-delimited JSON-RPC (src/codec/jsonrpc.h) on its stdin/stdout; its stderr is read and
 * only its last bytes kept (for error messages). The session:
 *
 *   -> initialize {protocolVersion "2025-06-18", capabilities {}, clientInfo}   <- result
 *   -> notifications/initialized
 *   -> tools/list (following nextCursor, at most MCPCLIENT_PAGES_MAX pages)     <- tools
 *   -> tools/call {name, arguments} ... each with its own timeout; on timeout
 *      -> notifications/cancelled {requestId, reason} and the late answer is ignored
 *   close stdin, wait up to 2 s, SIGTERM the group, then SIGKILL (mcpclient_free)
 *
 * While waiting for an answer the client also answers the server's own requests (ping: {},
 * roots/list: the working directory, anything else: -32601), and notes
 * notifications/tools/list_changed (mcpclient_tools_changed) so the agent can list again.
 * Request ids are integers from 1, per this client; the server's ids are a separate space.
 */
#ifndef FAULTLINE_AGENT_MCPCLIENT_H
#define FAULTLINE_AGENT_MCPCLIENT_H

#include <signal.h>
#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

#define MCPCLIENT_PROTOCOL_VERSION "2025-06-18"
#define MCPCLIENT_LINE_MAX ((size_t)16 << 20)  /* longest message accepted from a server */
#define MCPCLIENT_TOOLS_MAX 1000               /* tools kept per server */
#define MCPCLIENT_PAGES_MAX 100                /* tools/list pages followed */
#define MCPCLIENT_RESULT_MAX ((size_t)1 << 20) /* tool result text kept */

struct mcpclient;

struct mcpclient_opts {
    const char *name;            /* the server's name in tool names: mcp__NAME__TOOL */
    const char *command;         /* run as sh -c COMMAND */
    const char *cwd;             /* NULL: the agent's */
    int timeout_ms;              /* for initialize and tools/list; > 0 */
    volatile sig_atomic_t *stop; /* when set (a signal handler), waits give up */
};

/* Starts the server, initializes the session and lists its tools. Caller frees with
 * mcpclient_free. NULL with e set: ERR_NOTFOUND/ERR_IO/ERR_SYS (cannot start), ERR_TIMEOUT,
 * ERR_PROTO (a JSON-RPC error or a malformed answer; the message has the server's stderr
 * tail when it exited). */
struct mcpclient *mcpclient_start(const struct mcpclient_opts *o, struct err *e);
/* Ends the session and the server (see the file comment). NULL is a no-op. */
void mcpclient_free(struct mcpclient *c);

const char *mcpclient_name(const struct mcpclient *c);
/* The server's name and version from initialize ("name version"), "" when none. Borrowed. */
const char *mcpclient_server_info(const struct mcpclient *c);
/* The tools as listed: an array of tool objects (borrowed, valid until the next refresh). */
const json_t *mcpclient_tools(const struct mcpclient *c);
/* 1 when the server said its tool list changed since the last listing. */
int mcpclient_tools_changed(const struct mcpclient *c);
/* Handles what the server has sent since the last call (notifications, its own requests)
 * without waiting. */
void mcpclient_poll(struct mcpclient *c);
/* Lists the tools again. 0 or an error as for mcpclient_start (the old list is kept then). */
int mcpclient_refresh_tools(struct mcpclient *c, int timeout_ms, struct err *e);

/* Calls tool with args (borrowed; NULL: {}). On 0, text holds the result as text (see
 * mcpclient_result_text) and *is_error the result's isError. Errors with e set: ERR_TIMEOUT
 * (no answer within timeout_ms; the request was cancelled), ERR_PROTO (the server answered
 * with a JSON-RPC error: "MCP error CODE: MESSAGE"), ERR_IO (the server is gone), ERR_LIMIT
 * (answer over MCPCLIENT_LINE_MAX). */
int mcpclient_call(struct mcpclient *c, const char *tool, const json_t *args, int timeout_ms,
                   struct buf *text, int *is_error, struct err *e);

/* A tools/call result (borrowed) as text for a model: text items as they are, other items
 * as a bracketed summary ("[image image/png, 1234 bytes of base64]", "[resource URI]"),
 * joined with "\n"; structuredContent when there is no content. *is_error gets isError.
 * Appends to out (up to its max). Pure. */
void mcpclient_result_text(const json_t *result, struct buf *out, int *is_error);

#endif
