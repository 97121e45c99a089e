/*
 * alter: the pure JSON transformations behind the MCP faults (docs/mcp-shim.md).
 *
 * Each function changes an MCP value (a tools/call result, a tool definition from tools/list,
 * call arguments) in place, or builds one, and returns what it did so the caller can report it.
 * What changes a result is codec/toolres.h (shared with the world), named here as the shim
 * names it; what changes tool definitions and arguments is here. Nothing here does I/O, keeps state
 * or knows about plans: the session (session.c) decides when to call them. A result here is the
 * `result` member of a JSON-RPC response to tools/call:
 * {"content": [...], "structuredContent": {...}, "isError": bool, ...}.
 */
#ifndef FAULTLINE_MCP_ALTER_H
#define FAULTLINE_MCP_ALTER_H

#include <stddef.h>

#include <jansson.h>

#include "codec/toolres.h"
#include "util/buf.h"

/* ---- results: the shim's names for codec/toolres.h, which documents them (the world changes
 * its results by the same code); the enums take toolres's values ---- */

void mcp_alter_canary_text(struct buf *out, const char *message, const char *canary);
json_t *mcp_alter_text_result(const char *text, int is_error, int stateless);

enum mcp_sc_change {
    MCP_SC_ABSENT = TOOLRES_SC_ABSENT,
    MCP_SC_MIRROR = TOOLRES_SC_MIRROR,
    MCP_SC_FIRST_STRING = TOOLRES_SC_FIRST_STRING,
    MCP_SC_REMOVED = TOOLRES_SC_REMOVED,
    MCP_SC_UNCHANGED = TOOLRES_SC_UNCHANGED
};
const char *mcp_alter_sc_name(enum mcp_sc_change c);

size_t mcp_alter_omit(json_t *result, int truncate, size_t keep_bytes);

enum mcp_wrong_mode {
    MCP_WRONG_OFFSET = TOOLRES_WRONG_OFFSET,
    MCP_WRONG_SCALE = TOOLRES_WRONG_SCALE,
    MCP_WRONG_TEXT = TOOLRES_WRONG_TEXT
};
size_t mcp_alter_wrong_data(json_t *result, enum mcp_wrong_mode mode, double by, const char *find,
                            const char *replace_with);
size_t mcp_alter_numbers_in_text(const char *s, size_t n, enum mcp_wrong_mode mode, double by,
                                 struct buf *out);

enum mcp_inject_pos {
    MCP_INJECT_APPEND = TOOLRES_INJECT_APPEND,
    MCP_INJECT_PREPEND = TOOLRES_INJECT_PREPEND,
    MCP_INJECT_REPLACE = TOOLRES_INJECT_REPLACE
};
int mcp_alter_inject(json_t *result, const char *payload, enum mcp_inject_pos pos,
                     enum mcp_sc_change *sc_change);

enum mcp_violate_mode {
    MCP_VIOLATE_WRONG_TYPE = TOOLRES_VIOLATE_WRONG_TYPE,
    MCP_VIOLATE_MISSING_REQUIRED = TOOLRES_VIOLATE_MISSING_REQUIRED,
    MCP_VIOLATE_EXTRA = TOOLRES_VIOLATE_EXTRA
};
const char *mcp_alter_violate(json_t *result, const json_t *output_schema,
                              enum mcp_violate_mode mode, const char *canary);

enum mcp_malformed_mode {
    MCP_MALFORMED_INVALID_JSON = TOOLRES_MALFORMED_INVALID_JSON,
    MCP_MALFORMED_MISSING_CONTENT = TOOLRES_MALFORMED_MISSING_CONTENT,
    MCP_MALFORMED_WRONG_TYPE = TOOLRES_MALFORMED_WRONG_TYPE
};
void mcp_alter_malformed(struct buf *out, const json_t *id, const json_t *result,
                         enum mcp_malformed_mode mode, const char *canary);

void mcp_alter_result_text(const json_t *result, struct buf *out, size_t max);
struct jsonrpc_span;
void mcp_alter_result_text_scan(const char *line, const struct jsonrpc_span *result,
                                struct buf *out, size_t max);

/* ---- tool definitions (tools/list) and arguments ---- */

/* mcp.annotation_lie: merges the members of annotations (borrowed) over tool.annotations
 * (created when absent). Returns 1 when the tool changed. */
int mcp_alter_annotations(json_t *tool, const json_t *annotations);
/* mcp.toolset_change redefine: each member of fields (borrowed) replaces the tool's member of
 * that name ("name" itself is kept). Returns 1 when the tool changed. */
int mcp_alter_redefine(json_t *tool, const json_t *fields);
/* The default schema_drift rename of a tool: {first required parameter: NAME_v2}, else the
 * first declared property; NULL when the tool declares no parameters. New reference. */
json_t *mcp_alter_default_rename(const json_t *tool);
/* Renames inputSchema.properties and inputSchema.required of tool after rename (old -> new,
 * borrowed). Returns how many properties were renamed. */
int mcp_alter_rename_schema(json_t *tool, const json_t *rename);
/* For calls to a drifted tool. Returns the first old name present in args (borrowed from
 * rename), or NULL; in that case, when reverse_into is non-NULL, it receives a copy of args with
 * every new name renamed back to its old name (new reference), for the server that still speaks
 * the old schema. */
const char *mcp_alter_check_args(const json_t *args, const json_t *rename, json_t **reverse_into);

#endif
