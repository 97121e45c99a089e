/*
 * text: small helpers for user text in messages and line-oriented input.
 */
#ifndef FAULTLINE_UTIL_TEXT_H
#define FAULTLINE_UTIL_TEXT_H

#include <stddef.h>

/* Size of the buffer text_shown writes into. */
#define TEXT_SHOWN_SIZE 48

/* A user string s[0..len) for a message: credentials replaced by "[REDACTED]" (util/redact.h,
 * run on the whole string first), then at most 40 bytes (cut at a UTF-8 boundary, then
 * "..."), control bytes (< 32, 127) as '?'. Writes into out and returns it. */
const char *text_shown(const char *s, size_t len, char out[TEXT_SHOWN_SIZE]);

/* 1 when s[0..n) holds only spaces, tabs and carriage returns (or nothing). */
int text_blank(const char *s, size_t n);

/* The candidate closest to word (optimal string alignment distance) within a distance that
 * grows with word's length (1 up to 3 bytes, 2 up to 6, else 3), or NULL: the one
 * "did you mean" of experiment keys and command-line options. Borrowed from cands. */
const char *text_suggest(const char *word, const char *const *cands, size_t n);

#endif
