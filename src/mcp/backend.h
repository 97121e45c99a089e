/*
 * backend: the MCP session's struct mcp_backend (session.h) on a seam (src/seam/seam.h). The
 * shim gets its decisions and sends its events through the one seam client every boundary
 * component uses, standalone or through a controller; this file only adapts the seam's calls
 * to the session's callback table (which unit tests and the fuzzer fill with fakes).
 */
#ifndef FAULTLINE_MCP_BACKEND_H
#define FAULTLINE_MCP_BACKEND_H

#include "mcp/session.h"
#include "seam/seam.h"

/* Fills *b with callbacks on s (borrowed: it must outlive every session b is given to). emit
 * is NULL when the seam records nothing, so the session builds no events. */
void mcp_backend_init(struct mcp_backend *b, struct seam *s);
/* For the relay's idle hook (ctx: the seam): seam_flush. */
void mcp_backend_flush(void *ctx);

#endif
