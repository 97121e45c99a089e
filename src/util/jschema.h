/*
 * jschema: the one JSON Schema validator, for the subset a simulated world's tools declare
 * (docs/world.md): type (a name or a list of names), properties, required, additionalProperties
 * (true or false), enum, minimum, maximum, minLength, maxLength (in code points), items (one
 * schema), pattern (POSIX extended, through util/regex_safe.h's rule, unanchored), and the
 * annotations description, title, default, examples, $schema, $comment and format (ignored).
 * Any other keyword ($ref, anyOf, oneOf, allOf, not, if, patternProperties...) is refused: a
 * schema is never half understood.
 *
 * In util (below the experiment validator, which checks a world's schemas with their FILE:LINE:
 * COL, and the world, which checks calls against them). Compiled once into a tree; checking a
 * value allocates nothing but the message. Limits: JSCHEMA_DEPTH_MAX levels of nested
 * schemas, JSCHEMA_NODES_MAX schemas in all, JSCHEMA_ENUM_MAX enum values, JSCHEMA_PROPS_MAX
 * properties per object; a checked value nested deeper than JSCHEMA_DEPTH_MAX is refused.
 */
#ifndef FAULTLINE_UTIL_JSCHEMA_H
#define FAULTLINE_UTIL_JSCHEMA_H

#include <stddef.h>

#include <jansson.h>

#define JSCHEMA_DEPTH_MAX 16
#define JSCHEMA_NODES_MAX 4096
#define JSCHEMA_ENUM_MAX 256
#define JSCHEMA_PROPS_MAX 256

struct jschema;

/* Where a schema was refused: the keys from the schema's root to the offending member
 * (borrowed from the schema passed to jschema_new), for a caller that maps them back to a
 * position in its file. */
struct jschema_where {
    const char *steps[JSCHEMA_DEPTH_MAX * 2 + 2];
    size_t nsteps;
};

/* Compiles schema (borrowed; an object). NULL when it is refused: msg (lowercase, the keyword
 * quoted: "unsupported keyword '$ref'") and *where (may be NULL) say why and where. Caller
 * frees with jschema_free. */
struct jschema *jschema_new(const json_t *schema, struct jschema_where *where, char *msg, size_t n);
void jschema_free(struct jschema *s);

/* Checks v (borrowed) against s: 0, or ERR_INVALID with the first problem in msg, its place
 * as a path ("$.amount: expected an integer, found a string"). */
int jschema_check(const struct jschema *s, const json_t *v, char *msg, size_t n);

#endif
