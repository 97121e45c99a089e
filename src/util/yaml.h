/*
 * yaml: the one YAML reader. A document becomes a small tree of typed nodes with line/column
 * marks (struct ynode), built from libyaml's event API under hard limits; a JSON view with the
 * same marks kept aside serves loaders that work on jansson values. Used by the experiment
 * validator (the tree), mock-model scripts and price files (the JSON view).
 *
 * Scalars are typed by the YAML 1.2 core schema (plain null, true/false, integers, floats;
 * quoted and block scalars are strings; !!str, !!int, !!float, !!bool, !!null honoured; other
 * tags rejected). Aliases are expanded into copies, counting every copied node against the
 * node limit, so an alias bomb fails fast with a clear message; an alias to an anchor that is
 * not complete (a recursive alias) is an error; a caller may refuse aliases outright
 * (no_aliases). Mapping keys must be scalars; a duplicate key is recorded as a problem (not
 * fatal) and the later occurrence is dropped from the tree; the JSON view makes it fatal.
 *
 * Two prefixes, one per object: ydoc_ for a document, ynode_ for a node. Not yaml_: that is
 * libyaml's namespace.
 */
#ifndef FAULTLINE_UTIL_YAML_H
#define FAULTLINE_UTIL_YAML_H

#include <stddef.h>

#include <jansson.h>

#include "util/err.h"

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

/* Limits and wording for one kind of file. A zero field takes its default, so
 * `{.kind = "a price file"}` is a complete set. */
struct ydoc_limits {
    size_t max_nodes;       /* after alias expansion, keys included; default YDOC_NODES_MAX */
    int max_depth;          /* nesting of collections; default YDOC_DEPTH_MAX */
    int no_aliases;         /* refuse any alias (ERR_UNSUPPORTED) instead of expanding it */
    size_t max_alias_bytes; /* text bytes (scalars and keys) all alias copies may add; default
                               the larger of 8 x the input length and YDOC_ALIAS_BYTES_MIN */
    const char *kind; /* what the file is, for messages: "an experiment file"; default "the file" */
};
#define YDOC_NODES_MAX 50000
#define YDOC_DEPTH_MAX 64
#define YDOC_ANCHORS_MAX 1000
#define YDOC_ALIAS_BYTES_MIN (4u << 20)

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
 * Parses text[0..len) (one document; a second one is an error). lim may be NULL (defaults).
 * Returns 0 and fills doc (caller releases with ydoc_release, also on error), or ERR_PARSE /
 * ERR_LIMIT / ERR_UNSUPPORTED (an alias under no_aliases) / ERR_NOMEM with the position and
 * message of the fatal problem in *fatal. Never reads past len; embedded NULs and invalid
 * UTF-8 are errors.
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

/* --- the JSON view --- */

/* Where each value of a JSON view came from (the document tree it was built from). */
struct ydoc_marks;

/*
 * Parses text[0..len) with ydoc_parse under lim and returns it as JSON (a new reference; an
 * empty document is null). Stricter than the tree: the first duplicate key is an error, and so
 * is a value JSON cannot hold (a non-finite number). name starts every message:
 * "NAME:LINE:COL: ...". When marks is non-NULL, *marks gets the positions (caller frees with
 * ydoc_marks_free, after the last lookup: the table compares the view's pointers). NULL with
 * e set: ERR_PARSE, ERR_LIMIT, ERR_UNSUPPORTED (an alias under no_aliases), ERR_NOMEM.
 */
json_t *ydoc_parse_json(const char *text, size_t len, const char *name,
                        const struct ydoc_limits *lim, struct ydoc_marks **marks, struct err *e);
/* ydoc_marks_free(NULL) is a no-op. */
void ydoc_marks_free(struct ydoc_marks *m);
/*
 * The 1-based line and column in the source of: the key of container[key] (at_key), the value
 * of container[key], or container itself (key NULL). container is a value of the view m was
 * made with (borrowed). 1 found, 0 unknown (line and col set to 0), as when m is NULL. Only
 * null, true and false are shared values in jansson: the position of such a value is that of
 * its first occurrence.
 */
int ydoc_json_mark(const struct ydoc_marks *m, const json_t *container, const char *key, int at_key,
                   int *line, int *col);
/*
 * Sets e to "NAME:LINE:COL: msg" at the place ydoc_json_mark finds, or "NAME: msg" when it
 * finds none (m NULL: a JSON file), and returns code.
 */
int ydoc_json_err(struct err *e, int code, const char *name, const struct ydoc_marks *m,
                  const json_t *container, const char *key, int at_key, const char *msg);

#endif
