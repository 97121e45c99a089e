/*
 * format: the tables that describe the experiment file's structure (which keys each mapping
 * takes, their types, ranges, patterns, defaults and docs). The validator (experiment.c) and
 * the JSON Schema (schema.c) both read them; the fault options, probes and abort conditions
 * come from the catalog instead (catalog.h). docs/experiment-format.md describes the same keys
 * (a unit test checks that it names every one).
 *
 * Patterns are anchored POSIX extended regular expressions written in the subset that JSON
 * Schema (ECMA 262) reads the same way.
 */
#ifndef FAULTLINE_EXPERIMENT_FORMAT_H
#define FAULTLINE_EXPERIMENT_FORMAT_H

#include <stddef.h>

enum format_type {
    FORMAT_STRING,
    FORMAT_INT,
    FORMAT_NUMBER,
    FORMAT_BOOL,
    FORMAT_ENUM,
    FORMAT_STRING_LIST,
    FORMAT_MAP,    /* a mapping whose keys are described by another section */
    FORMAT_LIST,   /* a list whose items are described by another section */
    FORMAT_DICT,   /* a mapping from names (matching pattern) to items of another section */
    FORMAT_ANY,    /* any value, kept as JSON */
    FORMAT_SPECIAL /* checked by code named after the key (seed, model, abort, ...) */
};

struct format_key {
    const char *name;
    enum format_type type;
    int required;
    double min, max;           /* INT/NUMBER: the value; STRING: its length in bytes; lists and
                                  mappings: their number of items; min > max: unbounded */
    int min_exclusive;         /* NUMBER: the value must be above min */
    const char *pattern;       /* STRING and STRING_LIST items: anchored ERE, or NULL */
    const char *pattern_doc;   /* the pattern in words, for messages */
    const char *const *values; /* ENUM */
    const char *def;           /* default as text (docs and schema), NULL when none */
    const char *section;       /* MAP, LIST: the section describing the items, or NULL */
    const char *doc;
};

struct format_section {
    const char *name;              /* "experiment", "fault", "match", ... */
    const struct format_key *keys; /* terminated by a row with name == NULL */
    const char *doc;
};

/* The section named name, or NULL. */
const struct format_section *format_section_find(const char *name);
/* Every section; *n set to their number. */
const struct format_section *format_sections(size_t *n);
/* The key named name in sec, or NULL. */
const struct format_key *format_key_find(const struct format_section *sec, const char *name);

#endif
