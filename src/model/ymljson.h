/*
 * ymljson: a YAML document (libyaml) as a jansson value, with the source position of every
 * node kept aside so a loader can report FILE:LINE:COL for a bad value.
 *
 * Plain scalars are typed as YAML 1.2's core schema does: null (~, null, empty), booleans
 * (true/false in three casings), integers (decimal, 0x, 0o), floats; anything else and every
 * quoted or block scalar is a string ("!!str" forces a string). Mapping keys must be scalars
 * and unique. Refused with an error: aliases (no billion laughs), more than one document,
 * nesting deeper than YMLJSON_DEPTH_MAX, more than YMLJSON_NODES_MAX nodes.
 */
#ifndef FAULTLINE_MODEL_YMLJSON_H
#define FAULTLINE_MODEL_YMLJSON_H

#include <stddef.h>

#include <jansson.h>

#include "util/err.h"

#define YMLJSON_DEPTH_MAX 64
#define YMLJSON_NODES_MAX 200000

struct ymljson_marks;

/* Parses text[0..len) (one YAML document; an empty one is null). name prefixes messages
 * ("NAME:LINE:COL: ..."). Returns a new reference and, when marks is non-NULL, the position
 * table (caller frees with ymljson_marks_free), or NULL with e set (ERR_PARSE, ERR_LIMIT,
 * ERR_UNSUPPORTED for aliases). */
json_t *ymljson_parse(const char *text, size_t len, const char *name, struct ymljson_marks **marks,
                      struct err *e);
/* ymljson_marks_free(NULL) is a no-op. */
void ymljson_marks_free(struct ymljson_marks *m);
/* The 1-based line and column of a node: the value at container[key] (an object member), at
 * container[index] (key NULL, container an array), or container itself (key NULL and index
 * (size_t)-1). 1 found, 0 unknown (lines set to 0). m may be NULL. */
int ymljson_mark(const struct ymljson_marks *m, const json_t *container, const char *key,
                 size_t index, int *line, int *col);

/* The 1-based line and column of the key of object[key]. 1 found, 0 unknown. */
int ymljson_key_mark(const struct ymljson_marks *m, const json_t *object, const char *key,
                     int *line, int *col);

#endif
