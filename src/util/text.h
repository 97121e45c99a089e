/*
 * text: small helpers for user text in messages and line-oriented input.
 */
#ifndef FAULTLINE_UTIL_TEXT_H
#define FAULTLINE_UTIL_TEXT_H

#include <stddef.h>

#include "util/buf.h"

/* Size of the buffer text_shown writes into. */
#define TEXT_SHOWN_SIZE 48

/* A user string s[0..len) for a message: credentials replaced by "[REDACTED]" (util/redact.h,
 * run on the whole string first), then at most 40 bytes (cut at a UTF-8 boundary, then
 * "..."), control bytes (< 32, 127) as '?'. Writes into out and returns it. */
const char *text_shown(const char *s, size_t len, char out[TEXT_SHOWN_SIZE]);

/* A parser's message (jansson's json_error_t.text, or one like it) without the piece of input
 * it quotes (" near '...'" and what follows): that piece is cut where redaction can no longer
 * recognise a secret, so no message shows it. Writes at most cap bytes into out (NUL-terminated)
 * and returns out. */
const char *text_parse_error(const char *msg, char *out, size_t cap);
/* text_parse_error of a json_error_t je into a buffer that lives until the end of the full
 * expression that uses it (a compound literal): for a message argument. */
#define JE_TEXT(je) text_parse_error((je).text, (char[160]){0}, 160)

/* Appends s (NULL: nothing) to b as a Markdown table cell: '|' escaped, newlines as spaces. The
 * one cell writer of the generated docs (faults, events). */
void text_md_cell(struct buf *b, const char *s);

/* 1 when s[0..n) holds only spaces, tabs and carriage returns (or nothing). */
int text_blank(const char *s, size_t n);

/* The candidate closest to word (optimal string alignment distance) within a distance that
 * grows with word's length (1 up to 3 bytes, 2 up to 6, else 3), or NULL: the one
 * "did you mean" of experiment keys and command-line options. Borrowed from cands. */
const char *text_suggest(const char *word, const char *const *cands, size_t n);

#endif
