/*
 * utf8: the one UTF-8 checker and cutter (RFC 3629: no overlong forms, no surrogates, nothing
 * past U+10FFFF), used by the SSE parser, the events view, the events writer's line cutter, the
 * mock model's stream pieces, and anything that must turn arbitrary bytes (a file name, a
 * request path) into a valid JSON string.
 */
#ifndef FAULTLINE_UTIL_UTF8_H
#define FAULTLINE_UTIL_UTF8_H

#include <stddef.h>

struct buf;

/* Length (1..4) of the valid UTF-8 sequence at s[0..n), or 0 when it is invalid, truncated,
 * or n == 0. A NUL byte is a valid sequence of length 1. Borrowed input; no allocation. */
size_t utf8_seq(const void *s, size_t n);

/* 1 when all of s[0..n) is valid UTF-8, else 0. */
int utf8_valid(const void *s, size_t n);

/* The largest k' <= k that does not split a UTF-8 sequence of s[0..n): n when k >= n, else k
 * moved back over continuation bytes (0 when s[0..k] are all continuation bytes). */
size_t utf8_boundary(const void *s, size_t n, size_t k);

/* Writes the UTF-8 form of the code point cp (at most U+10FFFF; the caller has checked it, as
 * a JSON decoder does a \u escape or a surrogate pair) into out, which has room for 4 bytes.
 * Returns its length, 1 to 4. The one encoder of the JSON readers (events view, score scan). */
size_t utf8_put(unsigned long cp, char *out);

/* Appends s[0..n) to out with every byte that is not part of a valid sequence replaced by
 * U+FFFD. Returns 0 or out's error (ERR_LIMIT past its max). */
int utf8_sanitize(const void *s, size_t n, struct buf *out);

#endif
