/*
 * events view: read an event line without building a jansson tree.
 *
 * events_next (events.h) parses each line with jansson, which costs about 5 us a line here
 * (docs/performance.md): fine for scoring a file once, too slow for a monitor following a busy
 * file. A view validates the line in one pass (the same JSON jansson accepts: RFC 8259, UTF-8,
 * no raw control characters, integers within int64, no NUL in keys, depth <= 2048) and indexes
 * its top-level fields as slices of the line; the accessors then read single fields (kind,
 * cost_usd, tier...) and only what is asked for is converted. A line is a well-formed event
 * under the same rule as events_next: a JSON object whose (last) "kind" is a string.
 *
 * A view borrows the line: it is valid until the next events_next_* call on the reader (or as
 * long as the buffer given to events_view_parse). Duplicate keys: the last one wins, as in
 * jansson.
 */
#ifndef FAULTLINE_EVENTS_VIEW_H
#define FAULTLINE_EVENTS_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "events/events.h"

#define EVENTS_VIEW_FIELDS 64
#define EVENTS_VIEW_KIND_MAX 256

struct events_view_field {
    const char *key, *val; /* key: the raw string body (between the quotes); val: the raw value */
    uint32_t key_len, val_len;
    int key_escaped; /* key has backslash escapes */
};

struct events_view {
    const char *line; /* borrowed */
    size_t len;
    const char *kind; /* the unescaped kind (NUL-terminated when it had escapes, else a slice) */
    size_t kind_len;
    size_t nfields; /* indexed top-level fields (the first EVENTS_VIEW_FIELDS) */
    int overflow;   /* more fields than indexed: lookups also walk the line */
    struct events_view_field f[EVENTS_VIEW_FIELDS];
    char kind_buf[EVENTS_VIEW_KIND_MAX + 1];
};

/* Validates line[0..len) and indexes it into v. 0, or ERR_PARSE when it is not a JSON object
 * with a string kind. */
int events_view_parse(struct events_view *v, const char *line, size_t len);
/* Next well-formed event line as a view: 1, 0 at end, ERR_IO. Malformed lines are skipped and
 * counted (events_reader_malformed), blank lines skipped, as events_next does. */
int events_next_view(struct events_reader *r, struct events_view *v);

/* The raw JSON text of a top-level field (borrowed, not NUL-terminated); NULL when absent. */
const char *events_view_raw(const struct events_view *v, const char *key, size_t *len);
/* 1 when field key is a string equal to s (after unescaping). */
int events_view_is(const struct events_view *v, const char *key, const char *s);
/* The unescaped string of field key into out (NUL-terminated when size > 0); *len (may be
 * NULL) gets its full length. 0; ERR_NOTFOUND when absent or not a string; ERR_LIMIT when it
 * did not fit (out holds a prefix, possibly cut inside a UTF-8 sequence). */
int events_view_string(const struct events_view *v, const char *key, char *out, size_t size,
                       size_t *len);
/* Integer field (no fraction or exponent). 0 or ERR_NOTFOUND (absent or not an integer). */
int events_view_int(const struct events_view *v, const char *key, long long *out);
/* The time the event happened, as events_time_us (events.h) reads it: t_us, else t * 1000
 * (older writers), EVENTS_NO_TIME when neither is a non-negative integer. Readers order events by
 * it, ties by seq (docs/events.md, "Order"). */
int64_t events_view_time_us(const struct events_view *v);
/* Any number field as a double. 0 or ERR_NOTFOUND. */
int events_view_number(const struct events_view *v, const char *key, double *out);
/* Boolean field. 0 or ERR_NOTFOUND. */
int events_view_bool(const struct events_view *v, const char *key, int *out);
/* A field as a jansson value (new reference, caller decrefs); NULL when absent. */
json_t *events_view_get(const struct events_view *v, const char *key);
/* The whole event (new reference). */
json_t *events_view_json(const struct events_view *v);

/* 0 when p[0..n) is one JSON text of any type (surrounding whitespace allowed) that
 * json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL) accepts, checked by the view's scanner
 * without building a tree; else ERR_PARSE. For a caller that relays or records a text as it is
 * and must know that a parser would take it (events_raw_new, jsonrpc_parse_scan). */
int events_json_check(const char *p, size_t n);
/* Decodes s[0..n), the body of a JSON string (between its quotes) of a text events_json_check
 * accepted, into out: at most size - 1 bytes and a NUL when size > 0. Returns the full decoded
 * length (which may be more than it wrote). */
size_t events_json_unescape(const char *s, size_t n, char *out, size_t size);

#endif
