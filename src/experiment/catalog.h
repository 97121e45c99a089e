/*
 * catalog: the one static table of faults, probes, invariants and abort conditions.
 *
 * `faultline list`, `validate`, `schema` and docs/faults.md are all generated from these
 * tables; nothing restates them by hand. Rows are never removed (ids are a public contract).
 */
#ifndef FAULTLINE_EXPERIMENT_CATALOG_H
#define FAULTLINE_EXPERIMENT_CATALOG_H

#include <stddef.h>

/* Which component injects a fault (a bit set: some faults have several injectors). */
enum catalog_injector {
    CATALOG_INJ_CONTROLLER_MODEL = 1 << 0,  /* faultline proxy, model API side */
    CATALOG_INJ_CONTROLLER_EGRESS = 1 << 1, /* faultline proxy, egress side */
    CATALOG_INJ_MCP = 1 << 2,               /* faultline mcp, the stdio shim */
    CATALOG_INJ_GATE = 1 << 3,              /* faultline gate, hook gates */
    CATALOG_INJ_WORLD = 1 << 4              /* faultline world, simulated backends */
};

enum catalog_safety { CATALOG_FAIL_SAFE, CATALOG_MUTATING };

enum catalog_opt_type {
    CATALOG_OPT_INT,
    CATALOG_OPT_NUMBER,
    CATALOG_OPT_STRING,
    CATALOG_OPT_BOOL,
    CATALOG_OPT_ENUM,        /* a string from values[] */
    CATALOG_OPT_STRING_LIST, /* a list of strings */
    CATALOG_OPT_JSON         /* any YAML value, kept as JSON */
};

struct catalog_option {
    const char *name;
    enum catalog_opt_type type;
    const char *def;            /* default as text, NULL when none */
    double min, max;            /* inclusive range for INT/NUMBER (min > max: unbounded) */
    const char *const *values;  /* NULL-terminated, for ENUM (and INT choice lists) */
    int required;
    const char *doc;
};

struct catalog_fault {
    const char *id;       /* "family.name" */
    const char *family;   /* "llm", "egress", "tool", "mcp", "inject", "permission", "effect" */
    unsigned injectors;   /* enum catalog_injector bits */
    enum catalog_safety safety;
    const struct catalog_option *options; /* terminated by a row with name == NULL */
    const char *effect;   /* one line */
    const char *origin;   /* seed and its name there, e.g. "002: timeout" */
    int requires_host;    /* match.host is mandatory (egress.*) */
};

/* Returns the row for id, or NULL. */
const struct catalog_fault *catalog_fault_find(const char *id);
/* The whole table; *n set to its length. */
const struct catalog_fault *catalog_faults(size_t *n);
/* The injector name ("controller-model", ...) of one bit. */
const char *catalog_injector_name(unsigned bit);

#endif
