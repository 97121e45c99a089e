/*
 * alter: the pure JSON transformations behind the MCP faults (docs/mcp-shim.md).
 *
 * Each function changes an MCP value (a tools/call result, a tool definition from tools/list,
 * call arguments) in place, or builds one, and returns what it did so the caller can report it.
 * Nothing here does I/O, keeps state or knows about plans: the session (session.c) decides when
 * to call them. A result here is the `result` member of a JSON-RPC response to tools/call:
 * {"content": [...], "structuredContent": {...}, "isError": bool, ...}.
 */
#ifndef FAULTLINE_MCP_ALTER_H
#define FAULTLINE_MCP_ALTER_H

#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"

/* "MESSAGE [CANARY]" (or MESSAGE alone when canary is NULL or empty) appended to out. */
void mcp_alter_canary_text(struct buf *out, const char *message, const char *canary);

/* A result holding one text item (new reference). stateless: adds "resultType": "complete"
 * (the 2026-07-28 revision requires it on every result). */
json_t *mcp_alter_text_result(const char *text, int is_error, int stateless);

/* How a fault that changed content changed structuredContent, so that a client showing its
 * model structuredContent (Claude Code, Codex) sees the same change as one showing content. */
enum mcp_sc_change {
    MCP_SC_ABSENT,       /* the result had no structuredContent */
    MCP_SC_MIRROR,       /* its strings that equal a content text changed the same way */
    MCP_SC_FIRST_STRING, /* no such string: its first string (depth first) changed */
    MCP_SC_REMOVED,      /* removed (no mirror to carry the change) */
    MCP_SC_UNCHANGED     /* no string at all: only content carries the change */
};
/* "absent", "mirror", "first_string", "removed", "unchanged" (the fault_injected detail). */
const char *mcp_alter_sc_name(enum mcp_sc_change c);

/* tool.omission. truncate 0: the result loses all content; truncate 1: the text items are cut
 * so that at most keep_bytes bytes of text remain in total (at a UTF-8 boundary), every item
 * after the cut is dropped. The strings of structuredContent that mirror a text item (are equal
 * to its text) become what is left of that item ("" when dropped); a structuredContent with no
 * such string is removed. Returns the number of bytes of text removed. */
size_t mcp_alter_omit(json_t *result, int truncate, size_t keep_bytes);

enum mcp_wrong_mode { MCP_WRONG_OFFSET, MCP_WRONG_SCALE, MCP_WRONG_TEXT };

/* tool.silent_wrong_data. OFFSET/SCALE: every number in the result gets `by` added / is
 * multiplied by `by`: JSON numbers in structuredContent, and number tokens in text items and in
 * string values (a token is an optionally signed decimal that is not part of a word, a date, a
 * time or a version: "ch_123", "2024-01-05", "10:30", "1.2.3" are left alone). TEXT: every
 * occurrence of find (non-empty) in text items and string values becomes replace_with. The
 * change is deterministic. Returns the number of values changed. */
size_t mcp_alter_wrong_data(json_t *result, enum mcp_wrong_mode mode, double by, const char *find,
                            const char *replace_with);
/* The number rewriting on one string, exposed for tests: appends s with its number tokens
 * changed to out; returns how many were changed. */
size_t mcp_alter_numbers_in_text(const char *s, size_t n, enum mcp_wrong_mode mode, double by,
                                 struct buf *out);

enum mcp_inject_pos { MCP_INJECT_APPEND, MCP_INJECT_PREPEND, MCP_INJECT_REPLACE };

/* inject.tool_result: a text item holding payload is added at the end / the start of the
 * content, or replaces all of it. structuredContent carries the payload too: each of its strings
 * that mirrors a content text item (is equal to its text) becomes "TEXT\nPAYLOAD" /
 * "PAYLOAD\nTEXT" / PAYLOAD; without such a string, append and prepend change its first string
 * (depth first) and replace removes it. *sc_change (may be NULL) says which happened. 0, or
 * ERR_INVALID when result is not an object. */
int mcp_alter_inject(json_t *result, const char *payload, enum mcp_inject_pos pos,
                     enum mcp_sc_change *sc_change);

enum mcp_violate_mode { MCP_VIOLATE_WRONG_TYPE, MCP_VIOLATE_MISSING_REQUIRED, MCP_VIOLATE_EXTRA };

/* mcp.schema_violating_output: makes structuredContent break output_schema (borrowed, may be
 * NULL). WRONG_TYPE: the first declared property present (else the first key) gets a value of
 * another JSON type; MISSING_REQUIRED: the first required property present is removed (else
 * the first key); EXTRA: a property "faultline_undeclared" holding canary is added (and, when
 * the schema forbids additional properties, that is the violation). A result without an object
 * structuredContent gets one that breaks the schema: a string for WRONG_TYPE, {} for
 * MISSING_REQUIRED. A content text item that was the JSON of the old structuredContent (the
 * SDKs' mirror) becomes the JSON of the new one, so clients showing content see the violation
 * too. Returns the name of the property touched (borrowed from a static string or the schema;
 * "" when the whole value was replaced). */
const char *mcp_alter_violate(json_t *result, const json_t *output_schema,
                              enum mcp_violate_mode mode, const char *canary);

enum mcp_malformed_mode {
    MCP_MALFORMED_INVALID_JSON,
    MCP_MALFORMED_MISSING_CONTENT,
    MCP_MALFORMED_WRONG_TYPE
};

/* tool.malformed_response: appends to out the line (with '\n') that replaces the reply to
 * request id, built from the real result (borrowed). INVALID_JSON: a reply cut inside a string,
 * never valid JSON; MISSING_CONTENT: a result with no content member; WRONG_TYPE: content is a
 * string (the real text and the canary), not a list. */
void mcp_alter_malformed(struct buf *out, const json_t *id, const json_t *result,
                         enum mcp_malformed_mode mode, const char *canary);

/* Text of a result: its text items joined by "\n" (at most max bytes), into out. */
void mcp_alter_result_text(const json_t *result, struct buf *out, size_t max);
/* The same text, read from a line the session did not parse (JSONRPC_F_SCANNED): result is the
 * result's place in line (a struct jsonrpc_span of codec/jsonrpc.h), no tree built. */
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
