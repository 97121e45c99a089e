/*
 * jscan: typed slices of JSON text that is already valid, decoded only on demand.
 *
 * The events reader's view (src/events/view.h) validates each event line, exactly as jansson
 * would, and hands out its top-level fields as raw slices. Scoring needs a little more than the
 * top level: the arguments of a tool call, the detail of a fault, every string and number of a
 * tool result. jscan types such a slice (jscan_val_of), reads the members of an object
 * (jscan_object_of, jscan_get: the last duplicate wins, as in jansson), iterates containers,
 * decodes strings (escapes and surrogate pairs to UTF-8) and numbers, and walks every scalar
 * (jscan_walk), all without allocating. It never validates: give it only text the view
 * accepted (tests/fuzz/fuzz_score_jscan.c checks what it reads against jansson on any such
 * text).
 */
#ifndef FAULTLINE_SCORE_JSCAN_H
#define FAULTLINE_SCORE_JSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

enum jscan_type {
    JSCAN_NONE = 0, /* absent member */
    JSCAN_NULL,
    JSCAN_FALSE,
    JSCAN_TRUE,
    JSCAN_INT,  /* a number without fraction or exponent (fits in int64) */
    JSCAN_REAL, /* a number with a fraction or an exponent */
    JSCAN_STRING,
    JSCAN_OBJECT,
    JSCAN_ARRAY
};

/* A value: a slice of the scanned text. For a string, p/n cover the characters between the
 * quotes, still escaped, and escaped says whether any backslash occurs in them. For any other
 * type, p/n cover the value's whole text (brackets included). */
struct jscan_val {
    enum jscan_type type;
    int escaped;
    const char *p;
    size_t n;
};

struct jscan_member {
    struct jscan_val key; /* always JSCAN_STRING */
    struct jscan_val val;
};

/* Members kept in a struct jscan_obj; an object with more is still handled (jscan_get then
 * walks the text for the rest). */
#define JSCAN_MEMBERS 40

/* An object and its top-level members, as slices of its text. */
struct jscan_obj {
    const char *p; /* the object's text, '{' to '}' */
    size_t n;
    size_t count; /* members stored in m[] */
    size_t total; /* members in the object (> count when some were not stored) */
    struct jscan_member m[JSCAN_MEMBERS];
};

/* Types the raw value text raw[0..n) (surrounding whitespace ignored) into out; JSCAN_NONE
 * when it is empty. */
void jscan_val_of(const char *raw, size_t n, struct jscan_val *out);
/* Fills o with the top-level members of object v. Returns 0, or ERR_INVALID when v is not an
 * object. */
int jscan_object_of(struct jscan_obj *o, const struct jscan_val *v);

/* The value of the last member named key (jansson's "last duplicate wins") into *out: 1 when
 * found, 0 when absent (out->type is then JSCAN_NONE). Keys written with escapes are compared
 * decoded. */
int jscan_get(const struct jscan_obj *o, const char *key, struct jscan_val *out);

/* 1 when v is a string equal to s (decoded), else 0. */
int jscan_str_eq(const struct jscan_val *v, const char *s);
/* Decodes string v into out (cap bytes with the NUL). Returns the decoded length, ERR_INVALID
 * when v is not a string, or ERR_LIMIT when it does not fit (out then holds ""). */
long jscan_str_copy(const struct jscan_val *v, char *out, size_t cap);
/* Number value of v (INT or REAL) into *out: 0, or ERR_INVALID when v is not a
 * number. */
int jscan_number(const struct jscan_val *v, double *out);
/* Integer value of v into *out: 0, or ERR_INVALID when v is not a
 * JSCAN_INT. */
int jscan_int(const struct jscan_val *v, int64_t *out);
/* jscan_bool's answer for anything but true or false (or no value): not an error code. */
#define JSCAN_NOT_BOOL (-1)

/* 1 for JSCAN_TRUE, 0 for JSCAN_FALSE, JSCAN_NOT_BOOL for anything else. */
int jscan_bool(const struct jscan_val *v);

/* Iterates the elements of an array or the members of an object. */
struct jscan_iter {
    const char *p, *end;
    int is_object;
};
/* Starts iterating container v; an iterator over a non-container yields nothing. */
void jscan_iter_init(struct jscan_iter *it, const struct jscan_val *v);
/* Next element: 1 with *val set (and *key for an object member, when key is non-NULL), 0 at
 * the end. */
int jscan_iter_next(struct jscan_iter *it, struct jscan_val *key, struct jscan_val *val);

/* Calls fn on every string (decoded, in chunks: a long string may arrive as several calls
 * with more = 1 on all but the last) and every number token (more = 0, raw text) anywhere
 * inside v, keys included, in text order. Stops early when fn returns nonzero. */
typedef int (*jscan_scalar_fn)(void *ctx, enum jscan_type type, const char *p, size_t n, int more);
void jscan_walk(const struct jscan_val *v, jscan_scalar_fn fn, void *ctx);

#endif
