/*
 * toolres: the pure JSON transformations of a tool's result behind the tool.* faults
 * (docs/mcp-shim.md, docs/world.md), shared by the MCP shim (src/mcp/alter.h) and the world
 * (src/world/serve.c), so a fault changes a result the same way in both.
 *
 * Each function changes an MCP tools/call result in place, or builds one, and returns what it
 * did so the caller can report it. Nothing here does I/O, keeps state or knows about plans. A
 * result here is the `result` member of a JSON-RPC response to tools/call:
 * {"content": [...], "structuredContent": {...}, "isError": bool, ...}.
 */
#ifndef FAULTLINE_CODEC_TOOLRES_H
#define FAULTLINE_CODEC_TOOLRES_H

#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"

/* "MESSAGE [CANARY]" (or MESSAGE alone when canary is NULL or empty) appended to out. */
void toolres_canary_text(struct buf *out, const char *message, const char *canary);

/* A result holding one text item (new reference). stateless: adds "resultType": "complete"
 * (the 2026-07-28 revision requires it on every result). */
json_t *toolres_text_result(const char *text, int is_error, int stateless);

/* How a fault that changed content changed structuredContent, so that a client showing its
 * model structuredContent (Claude Code, Codex) sees the same change as one showing content. */
enum toolres_sc_change {
    TOOLRES_SC_ABSENT,       /* the result had no structuredContent */
    TOOLRES_SC_MIRROR,       /* its strings that equal a content text changed the same way */
    TOOLRES_SC_FIRST_STRING, /* no such string: its first string (depth first) changed */
    TOOLRES_SC_REMOVED,      /* removed (no mirror to carry the change) */
    TOOLRES_SC_UNCHANGED     /* no string at all: only content carries the change */
};
/* "absent", "mirror", "first_string", "removed", "unchanged" (the fault_injected detail). */
const char *toolres_sc_name(enum toolres_sc_change c);

/* tool.omission. truncate 0: the result loses all content; truncate 1: the text items are cut
 * so that at most keep_bytes bytes of text remain in total (at a UTF-8 boundary), every item
 * after the cut is dropped. The strings of structuredContent that mirror a text item (are equal
 * to its text) become what is left of that item ("" when dropped); a structuredContent with no
 * such string is removed. Returns the number of bytes of text removed. */
size_t toolres_omit(json_t *result, int truncate, size_t keep_bytes);

enum toolres_wrong_mode { TOOLRES_WRONG_OFFSET, TOOLRES_WRONG_SCALE, TOOLRES_WRONG_TEXT };

/* tool.silent_wrong_data. OFFSET/SCALE: every number in the result gets `by` added / is
 * multiplied by `by`: JSON numbers in structuredContent, and number tokens in text items and in
 * string values (a token is an optionally signed decimal that is not part of a word, a date, a
 * time or a version: "ch_123", "2024-01-05", "10:30", "1.2.3" are left alone). TEXT: every
 * occurrence of find (non-empty) in text items and string values becomes replace_with. The
 * change is deterministic. Returns the number of values changed. */
size_t toolres_wrong_data(json_t *result, enum toolres_wrong_mode mode, double by, const char *find,
                          const char *replace_with);
/* The number rewriting on one string, exposed for tests: appends s with its number tokens
 * changed to out; returns how many were changed. */
size_t toolres_numbers_in_text(const char *s, size_t n, enum toolres_wrong_mode mode, double by,
                               struct buf *out);

enum toolres_inject_pos { TOOLRES_INJECT_APPEND, TOOLRES_INJECT_PREPEND, TOOLRES_INJECT_REPLACE };

/* inject.tool_result: a text item holding payload is added at the end / the start of the
 * content, or replaces all of it. structuredContent carries the payload too: each of its strings
 * that mirrors a content text item (is equal to its text) becomes "TEXT\nPAYLOAD" /
 * "PAYLOAD\nTEXT" / PAYLOAD; without such a string, append and prepend change its first string
 * (depth first) and replace removes it. *sc_change (may be NULL) says which happened. 0, or
 * ERR_INVALID when result is not an object. */
int toolres_inject(json_t *result, const char *payload, enum toolres_inject_pos pos,
                   enum toolres_sc_change *sc_change);

enum toolres_violate_mode {
    TOOLRES_VIOLATE_WRONG_TYPE,
    TOOLRES_VIOLATE_MISSING_REQUIRED,
    TOOLRES_VIOLATE_EXTRA
};

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
const char *toolres_violate(json_t *result, const json_t *output_schema,
                            enum toolres_violate_mode mode, const char *canary);

enum toolres_malformed_mode {
    TOOLRES_MALFORMED_INVALID_JSON,
    TOOLRES_MALFORMED_MISSING_CONTENT,
    TOOLRES_MALFORMED_WRONG_TYPE
};

/* tool.malformed_response: appends to out the line (with '\n') that replaces the reply to
 * request id, built from the real result (borrowed). INVALID_JSON: a reply cut inside a string,
 * never valid JSON; MISSING_CONTENT: a result with no content member; WRONG_TYPE: content is a
 * string (the real text and the canary), not a list. */
void toolres_malformed(struct buf *out, const json_t *id, const json_t *result,
                       enum toolres_malformed_mode mode, const char *canary);

/* Text of a result: its text items joined by "\n" (at most max bytes), into out. */
void toolres_result_text(const json_t *result, struct buf *out, size_t max);
/* The same text, read from a line the session did not parse (JSONRPC_F_SCANNED): result is the
 * result's place in line (a struct jsonrpc_span of codec/jsonrpc.h), no tree built. */
struct jsonrpc_span;
void toolres_result_text_scan(const char *line, const struct jsonrpc_span *result, struct buf *out,
                              size_t max);

#endif
