/*
 * ydoc: a YAML document as a small tree of typed nodes with line/column marks, built from
 * libyaml's event API with hard limits, for the experiment parser.
 *
 * Scalars are typed by the YAML 1.2 core schema (plain null, true/false, integers, floats;
 * quoted and block scalars are strings; !!str, !!int, !!float, !!bool, !!null honoured; other
 * tags rejected). Aliases are expanded into copies, counting every copied node against the
 * node limit, so an alias bomb fails fast with a clear message; an alias to an anchor that is
 * not complete (a recursive alias) is an error. Mapping keys must be scalars; a duplicate key
 * is recorded as a problem (not fatal) and the later occurrence is dropped from the tree.
 */
#ifndef FAULTLINE_EXPERIMENT_YDOC_H
#define FAULTLINE_EXPERIMENT_YDOC_H

#include <stddef.h>

#include <jansson.h>

enum ynode_type { YNODE_NULL, YNODE_BOOL, YNODE_INT, YNODE_REAL, YNODE_STR, YNODE_SEQ, YNODE_MAP };

struct ynode {
    enum ynode_type type;
    int line, col;        /* 1-based */
    char *str;            /* STR: the value; other scalars: the source text; NULL for collections */
    size_t len;           /* bytes of str */
    long long i;          /* INT */
    double d;             /* REAL (and INT, as a double) */
    int b;                /* BOOL */
    size_t n;             /* SEQ: items; MAP: pairs */
    struct ynode **items; /* SEQ: the items; MAP: the values */
    struct ynode **keys;  /* MAP: the keys (YNODE_STR nodes holding the key text) */
    size_t size;          /* nodes in this subtree, itself included */
};

struct ydoc_limits {
    size_t max_nodes; /* after alias expansion */
    int max_depth;    /* nesting of collections */
};
#define YDOC_LIMITS_DEFAULT                                                                        \
    {                                                                                              \
        50000, 64                                                                                  \
    }

/* A problem found while building: fatal ones stop parsing, others (duplicate keys) do not. */
struct ydoc_problem {
    int line, col;
    char msg[200];
};

struct ydoc {
    struct ynode *root;            /* NULL for an empty document */
    struct ydoc_problem *problems; /* non-fatal problems, in file order */
    size_t nproblems;
};

/*
 * Parses text[0..len) (one document; a second one is an error). Returns 0 and fills doc
 * (caller releases with ydoc_release, also on error), or ERR_PARSE / ERR_LIMIT with the
 * position and message of the fatal problem in *fatal. Never reads past len; embedded NULs and
 * invalid UTF-8 are errors.
 */
int ydoc_parse(const char *text, size_t len, const struct ydoc_limits *lim, struct ydoc *doc,
               struct ydoc_problem *fatal);
void ydoc_release(struct ydoc *doc);

/* The value of key in a MAP node, or NULL (borrowed). */
const struct ynode *ynode_get(const struct ynode *map, const char *key);
/* The key node of key in a MAP node, or NULL (borrowed). */
const struct ynode *ynode_key(const struct ynode *map, const char *key);
/* "null", "boolean", "integer", "number", "string", "list", "mapping". */
const char *ynode_type_name(enum ynode_type t);
/* The node as JSON (new reference). Sets *bad to the first node JSON cannot hold (a
 * non-finite number) and returns NULL then. */
json_t *ynode_to_json(const struct ynode *n, const struct ynode **bad);

#endif
