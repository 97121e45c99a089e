/*
 * redact: finds credentials in text and replaces them with "[REDACTED]". One engine for the
 * events writer (every string of every event), error messages that quote input (text_shown)
 * and the mock model's log and record. The rules are in docs/events.md ("Redaction").
 */
#ifndef FAULTLINE_UTIL_REDACT_H
#define FAULTLINE_UTIL_REDACT_H

#include <stddef.h>

#include "util/buf.h"

#define REDACT_MARK "[REDACTED]"
#define REDACT_LITS_MAX 1024 /* registered literal secrets per set */
#define REDACT_LIT_MIN 8     /* shorter literals are ignored (too likely in ordinary text) */
#define REDACT_LIT_MAX 4096  /* longer literals are refused */

/* A set of literal secrets (e.g. upstream API keys): looked up by a hash of their first
 * REDACT_LIT_MIN bytes, so the cost per byte scanned does not grow with their number. */
struct redact_lits;

/* Caller frees with redact_lits_free (NULL is a no-op). */
struct redact_lits *redact_lits_new(void);
void redact_lits_free(struct redact_lits *l);
/* Adds a copy of value. Values shorter than REDACT_LIT_MIN and duplicates are ignored (0).
 * 0 or ERR_LIMIT (more than REDACT_LITS_MAX, or longer than REDACT_LIT_MAX). */
int redact_lits_add(struct redact_lits *l, const char *value);

/* 1 when a field, header or variable name s[0..n) is secret-like (api key, token, password,
 * authorization, cookie...). */
int redact_is_secret_name(const char *s, size_t n);

/* Scans s[0..n) for credentials: literals of l (may be NULL) and the built-in formats. Returns
 * how many it found. With out NULL it stops at the first (a cheap "is there any?"); else it
 * appends s to out with each credential replaced by REDACT_MARK. */
size_t redact_text(const struct redact_lits *l, const char *s, size_t n, struct buf *out);

#endif
