/*
 * serve: a world (world.h) served as an MCP server over stdio (`faultline world`,
 * docs/world.md). One client, one thread, blocking reads of newline-delimited JSON-RPC
 * (codec/jsonrpc.h framing, a line limit), one reply line per request, in order.
 *
 *   initialize, server/discover  -> the server's info and tools capability (the client's
 *                                   protocol version when it is one this knows, else the
 *                                   newest); a request carrying
 *                                   _meta["io.modelcontextprotocol/protocolVersion"] is the
 *                                   stateless 2026-07-28 revision: its results carry
 *                                   "resultType": "complete"
 *   ping                         -> {}
 *   tools/list                   -> the world's tools, NAME_context, NAME_report
 *   tools/call                   -> world_call after the plan's decision (seam_decide): the
 *                                   effect.* faults change the call; tool_call, fault_injected,
 *                                   effect and tool_result events go to the seam
 *   NAME_context                 -> world_context_json
 *   NAME_report                  -> world_report; the ledger is written
 *   notifications                -> ignored; a batch gets a batch of replies
 *   other requests               -> -32601
 *
 * A tool error the world decides (invalid arguments, IDEMPOTENCY_CONFLICT, a closed world, a
 * spent budget) is a result with isError; an unknown tool is -32602; an effect.timeout_* fault
 * is the JSON-RPC error -32001 "Request timed out [CANARY]" after the fault's delay_ms, the same
 * for before and after the effect. The ledger is written (atomically) on the report and when
 * the input ends or SIGTERM / SIGINT arrives.
 */
#ifndef FAULTLINE_WORLD_SERVE_H
#define FAULTLINE_WORLD_SERVE_H

#include <stddef.h>

#include "seam/seam.h"
#include "util/err.h"
#include "world/world.h"

#define WORLD_SERVE_LINE_MAX ((size_t)1 << 20)

struct world_serve_opts {
    int in_fd, out_fd;
    size_t max_line;         /* 0: WORLD_SERVE_LINE_MAX */
    const char *ledger_path; /* NULL: no ledger file */
    struct seam *seam;       /* decisions and events; NULL: no faults, no events */
};

/* Serves w until the input ends or a stop signal. 0, or ERR_IO (stdout could not be written,
 * or the ledger could not be saved: e says which). Not callable from a callback. */
int world_serve(struct world *w, const struct world_serve_opts *o, struct err *e);

/* Handles one JSON-RPC line (for tests, fuzzers and the benchmark): the reply lines are
 * appended to out (nothing for a notification). */
void world_serve_line(struct world *w, const struct world_serve_opts *o, const char *line,
                      size_t len, struct buf *out);

#endif
