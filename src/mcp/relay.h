/*
 * relay: the MCP shim's process and I/O. Starts the server as a child (its own process group,
 * stderr passed through), then moves newline-delimited JSON-RPC both ways between the client
 * (in_fd/out_fd, normally our stdin/stdout) and the child's pipes, through a struct
 * mcp_session, on one libevent loop. Every descriptor is non-blocking and each direction has
 * its own output buffer, so neither side can stall the other; a direction stops reading only
 * while its own output backlog is over a high-water mark.
 *
 * Lifecycle:
 *   client EOF   -> the client may still read: with requests pending, up to eof_wait_ms for
 *                   their answers; then the child's stdin is closed once drained; after
 *                   grace_ms the child's group gets SIGTERM, after another grace_ms SIGKILL.
 *   client output gone (EPIPE, or POLLERR on the pipe) -> nothing more is written; the session
 *                   records later results as not delivered.
 *   child exits  -> its remaining stdout is read (for up to drain_ms), pending client requests
 *                   get JSON-RPC errors, stdout is flushed, and mcp_relay_run returns the
 *                   child's status.
 *   SIGTERM, SIGINT, SIGHUP to the shim -> the child's group gets SIGTERM (SIGKILL after
 *                   grace_ms) and the shim returns 128 + the signal.
 * The server runs under a proc supervisor (proc_opts.supervise): when it exits, or when the
 * shim dies even of SIGKILL, its whole tree is killed and reaped, setsid escapees included.
 * The shim is a child subreaper too, for anything a supervisor killed on its own leaves.
 */
#ifndef FAULTLINE_MCP_RELAY_H
#define FAULTLINE_MCP_RELAY_H

#include <stddef.h>

#include "mcp/session.h"
#include "util/err.h"

struct mcp_relay_opts {
    const char *const *argv; /* the server command */
    size_t max_line;         /* longest line taken from either side; 0: 32 MiB */
    int grace_ms;            /* shutdown steps; 0: 2000 */
    int drain_ms;            /* reading the server's stdout after it exited; 0: 500 */
    int eof_wait_ms;         /* after client EOF, for pending requests' answers; 0: 5000 */
    int in_fd, out_fd;       /* the client side; both 0 means stdin and stdout */
    /* Called after each batch of work and at the end (e.g. to flush queued events); may be
     * NULL. Must not block for long. */
    void (*idle)(void *ctx);
    void *idle_ctx;
};

/* Clears o and fills in the defaults above (what `faultline mcp --help` shows). */
void mcp_relay_opts_init(struct mcp_relay_opts *o);

/* Runs the shim to the end. Returns the exit code for the process (the server's status, or
 * 128 + a signal that ended the shim), or a negative ERR_* with e set when the server could not
 * be started or the loop could not be set up (nothing is left running then). The backend's
 * emit may be called until it returns. */
int mcp_relay_run(const struct mcp_relay_opts *o, const struct mcp_session_opts *so,
                  const struct mcp_backend *b, struct err *e);

#endif
