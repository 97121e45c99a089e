/*
 * catalog: the one static table of faults, probes, invariants and abort conditions.
 *
 * `faultline list`, `validate`, `schema` and docs/faults.md are all generated from these
 * tables; nothing restates them by hand. Rows are never removed (ids are a public contract).
 *
 * Every fault id is "family.name". The injectors of a row are exact: a component injects a
 * fault only when its bit is set in the row (src/plan reads them to decide who may inject).
 * Option values in a plan are JSON of the option's type; an option with no default that the
 * experiment does not set is absent from the plan's options object.
 */
#ifndef FAULTLINE_EXPERIMENT_CATALOG_H
#define FAULTLINE_EXPERIMENT_CATALOG_H

#include <stddef.h>

#include <jansson.h>

#include "events/kinds.h"

/* Which component injects a fault (a bit set: some faults have several injectors): the
 * injecting components of the one component enum (enum evkind_src, events/kinds.h), which
 * also names them. */
enum catalog_injector {
    CATALOG_INJ_CONTROLLER_MODEL = EVKIND_SRC_CONTROLLER_MODEL,
    CATALOG_INJ_CONTROLLER_EGRESS = EVKIND_SRC_CONTROLLER_EGRESS,
    CATALOG_INJ_MCP = EVKIND_SRC_MCP,
    CATALOG_INJ_GATE = EVKIND_SRC_GATE,
    CATALOG_INJ_WORLD = EVKIND_SRC_WORLD
};
#define CATALOG_INJ_ALL 0x1fu

enum catalog_safety { CATALOG_FAIL_SAFE, CATALOG_MUTATING };

enum catalog_opt_type {
    CATALOG_OPT_INT,
    CATALOG_OPT_NUMBER,
    CATALOG_OPT_STRING,
    CATALOG_OPT_BOOL,
    CATALOG_OPT_ENUM,        /* a string from values[] */
    CATALOG_OPT_STRING_LIST, /* a list of strings */
    CATALOG_OPT_JSON,        /* any YAML value, kept as JSON */
    CATALOG_OPT_OBJECT       /* a mapping, kept as a JSON object */
};

/* Limits on option values taken from an experiment file. */
#define CATALOG_STRING_MAX 65536 /* bytes of one string option */
#define CATALOG_LIST_MAX 256     /* items of one STRING_LIST option */

struct catalog_option {
    const char *name;
    enum catalog_opt_type type;
    const char *def;           /* default as text (JSON text for JSON/OBJECT), NULL when none */
    double min, max;           /* inclusive range for INT/NUMBER (min > max: unbounded) */
    const char *const *values; /* NULL-terminated, for ENUM (and INT choice lists) */
    int required;
    const char *doc;
};

/* One name per fault row, in the table's order (catalog_faults()[CATALOG_F_X].fid ==
 * CATALOG_F_X). Injectors dispatch on it: a component keeps a table of handlers indexed by
 * these values, never a table of its own from id strings (docs/architecture.md). Appended only,
 * like the rows. */
enum catalog_fault_id {
    CATALOG_F_LLM_RATE_LIMIT,
    CATALOG_F_LLM_UPSTREAM_5XX,
    CATALOG_F_LLM_CONTEXT_TRIM,
    CATALOG_F_LLM_MODEL_DEGRADE,
    CATALOG_F_LLM_LATENCY,
    CATALOG_F_EGRESS_DNS_FAIL,
    CATALOG_F_EGRESS_CREDENTIAL_401,
    CATALOG_F_TOOL_ERROR,
    CATALOG_F_TOOL_LATENCY,
    CATALOG_F_TOOL_TIMEOUT,
    CATALOG_F_TOOL_TIMEOUT_AFTER_COMMIT,
    CATALOG_F_TOOL_OMISSION,
    CATALOG_F_TOOL_SILENT_WRONG_DATA,
    CATALOG_F_TOOL_PARTIAL_FAILURE,
    CATALOG_F_TOOL_TRANSIENT_ERROR,
    CATALOG_F_TOOL_RATE_LIMIT,
    CATALOG_F_TOOL_MALFORMED_RESPONSE,
    CATALOG_F_TOOL_AUTH_EXPIRY,
    CATALOG_F_TOOL_WRONG_ERROR_CHANNEL,
    CATALOG_F_TOOL_STALE_DATA,
    CATALOG_F_TOOL_DUPLICATE_DELIVERY,
    CATALOG_F_TOOL_CONCURRENT_DUPLICATE,
    CATALOG_F_MCP_TOOLSET_CHANGE,
    CATALOG_F_MCP_SCHEMA_DRIFT,
    CATALOG_F_MCP_SCHEMA_VIOLATING_OUTPUT,
    CATALOG_F_MCP_ANNOTATION_LIE,
    CATALOG_F_MCP_CAPABILITY_DOWNGRADE,
    CATALOG_F_PERMISSION_DENY_OR_DELAY,
    CATALOG_F_INJECT_TOOL_RESULT,
    CATALOG_F_EFFECT_TIMEOUT_BEFORE_EFFECT,
    CATALOG_F_EFFECT_TIMEOUT_AFTER_EFFECT,
    CATALOG_F_EFFECT_DUPLICATE_DELIVERY,
    CATALOG_F_COUNT
};

/* Which of its matching calls a fault fires on, before after_calls/times/probability are
 * spent (src/plan applies it; docs/plan.md). */
enum catalog_fires {
    CATALOG_FIRES_EACH = 0,  /* every matching call */
    CATALOG_FIRES_EVERY_NTH, /* option pattern (S/F letters by call index), else fail_every */
    CATALOG_FIRES_FROM_CALL, /* from session call option from_call on */
    CATALOG_FIRES_ON_LIST    /* never on a call: it alters tools/list replies (the shim counts) */
};

/* Whether a fault shows the agent faultline's canary (docs/scoring.md: failure_surfaced is not
 * evaluated in a repetition whose fired faults all show none). */
enum catalog_canary {
    CATALOG_CANARY_SHOWN = 0, /* what the agent gets carries it (an error message, a marker) */
    CATALOG_CANARY_NONE,      /* the fault changes what the agent sees with no error: none */
    CATALOG_CANARY_DEPENDS    /* only on some calls (canary_when says which); the MCP shim's
                               * tool_result then carries it */
};

struct catalog_fault {
    enum catalog_fault_id fid;
    const char *id;     /* "family.name" */
    const char *family; /* "llm", "egress", "tool", "mcp", "inject", "permission", "effect" */
    unsigned injectors; /* enum catalog_injector bits */
    enum catalog_safety safety;
    const struct catalog_option *options; /* terminated by a row with name == NULL */
    const char *effect;                   /* one line */
    const char *origin;                   /* seed and its name there, e.g. "002: timeout" */
    int requires_host;                    /* match.host is mandatory (egress.*) */
    /* Added after the first contract; read-only like the rest. */
    int requires_tool;      /* match.tool is mandatory (effect.*: the world tool it targets) */
    const char *note;       /* NULL, or how it relates to other rows (docs only) */
    const char *constraint; /* NULL, or a rule across options, in words (docs only) */
    /* NULL, or a check across options (the object holds every given option and the defaults);
     * returns 0, or ERR_INVALID with a message (lowercase, no period) in msg. */
    int (*check)(const json_t *options, char *msg, size_t msglen);
    enum catalog_fires fires;
    enum catalog_canary canary;
    const char *canary_when; /* NULL, or when the canary is shown (DEPENDS) or not (docs) */
};

/* Match keys (bits) that a call seen by an injector carries. */
enum catalog_match_key {
    CATALOG_MATCH_TOOL = 1 << 0,
    CATALOG_MATCH_HOST = 1 << 1,
    CATALOG_MATCH_MODEL = 1 << 2,
    CATALOG_MATCH_SERVER = 1 << 3
};

/* Returns the row for id, or NULL. */
const struct catalog_fault *catalog_fault_find(const char *id);
/* The whole table; *n set to its length. */
const struct catalog_fault *catalog_faults(size_t *n);
/* The injector name ("controller-model", ...) of one bit; NULL for anything else. */
const char *catalog_injector_name(unsigned bit);
/* The bit of an injector name, 0 when unknown. */
unsigned catalog_injector_from_name(const char *name);
/* 1 when a match pattern (fault `match.tool` etc.) matches name: exact, or a leading '*'
 * matches by suffix ("*.npmjs.org", "*" matches anything); case-sensitive. 0 for NULL. The one
 * definition: the validator and src/plan both use it. */
int catalog_match_pattern(const char *pattern, const char *name);
/* Match keys meaningful for a set of injectors: model for controller-model, host for
 * controller-egress, tool and server for mcp, tool for gate and world. */
unsigned catalog_match_keys(unsigned injectors);
/* "tool", "host", "model", "server" for one enum catalog_match_key bit; NULL otherwise. */
const char *catalog_match_key_name(unsigned bit);
/* 1 when the fault's injectors see tool calls with arguments (mcp, gate, world): only those
 * faults accept `when`. */
int catalog_fault_sees_args(const struct catalog_fault *f);
/* The option named name of fault f, or NULL. */
const struct catalog_option *catalog_option_find(const struct catalog_fault *f, const char *name);
/* "int", "number", "string", "bool", "enum", "string list", "json", "object". */
const char *catalog_opt_type_name(enum catalog_opt_type t);
/* "fail-safe" or "mutating". */
const char *catalog_safety_name(enum catalog_safety s);
/* "yes", "no" or "depends". */
const char *catalog_canary_name(enum catalog_canary c);
/* The default of o as JSON (new reference), NULL when o is NULL or has none. */
json_t *catalog_option_default(const struct catalog_option *o);
/* Sets in options (a JSON object, modified) every option of f that has a default and is
 * absent, so that injectors read options without fallbacks. Options already there are left
 * as they are, whatever their type. No-op when options is not an object. */
void catalog_fill_defaults(const struct catalog_fault *f, json_t *options);
/* Checks one option value v (borrowed; NULL: absent) against its row o: type, range, the list of
 * values, string and list limits, as a valid experiment gives them. 0 when valid; else ERR_INVALID
 * (ERR_LIMIT for a size) with "expected ..." in msg (lowercase, no period, without the option's
 * name: the caller says where). The one value check of plan options: injectors read through it
 * (catalog_option_int ...) and plan_load refuses what it refuses. */
int catalog_option_check(const struct catalog_option *o, const json_t *v, char *msg, size_t len);
/* Why catalog_option_check refused a value, for callers that word it themselves (the
 * experiment validator names the YAML it read, at its FILE:LINE:COL). */
enum catalog_refusal {
    CATALOG_REFUSED_TYPE = 1,   /* not of the option's JSON type (or absent) */
    CATALOG_REFUSED_RANGE,      /* a number outside [min, max] */
    CATALOG_REFUSED_VALUES,     /* not one of the option's values (ENUM, INT choices) */
    CATALOG_REFUSED_EMPTY,      /* the empty string for a required STRING */
    CATALOG_REFUSED_LONG,       /* a STRING over CATALOG_STRING_MAX bytes */
    CATALOG_REFUSED_COUNT,      /* a STRING_LIST of more than CATALOG_LIST_MAX items */
    CATALOG_REFUSED_ITEM_TYPE,  /* a STRING_LIST item that is not a string */
    CATALOG_REFUSED_ITEM_EMPTY, /* an empty STRING_LIST item */
    CATALOG_REFUSED_ITEM_LONG,  /* a STRING_LIST item over 4096 bytes */
    CATALOG_REFUSED_ITEM_TWICE  /* a STRING_LIST item equal to an earlier one */
};
#define CATALOG_LIST_ITEM_MAX 4096 /* bytes of one STRING_LIST item */
/* catalog_option_check, also calling fn(why, item, arg) for each reason it refuses v: every bad
 * item of a STRING_LIST (item is its index; an item not a string, empty or too long is not
 * also compared with the others), else the one reason (item 0). Returns what
 * catalog_option_check returns, msg its message (for the first reason). fn may be NULL. */
int catalog_option_check_each(const struct catalog_option *o, const json_t *v,
                              void (*fn)(enum catalog_refusal why, size_t item, void *arg),
                              void *arg, char *msg, size_t len);
/* Reading one option of fault f from a plan's options (borrowed; NULL reads as empty): the value
 * when it is of the option's type, within its range and one of its values (catalog_option_check),
 * else the option's catalog default. What injectors read instead of restating defaults.
 * catalog_option_int: 1 with *out set, 0 when the option has no valid value and no default
 * (*out untouched); also for NUMBER options (truncated). catalog_option_number: likewise.
 * catalog_option_string: STRING and ENUM options; borrowed (from options or the catalog), NULL
 * when neither. catalog_option_bool: 1 or 0 (0 when neither). Unknown f or name: as no default. */
int catalog_option_int(const struct catalog_fault *f, const json_t *options, const char *name,
                       long long *out);
int catalog_option_number(const struct catalog_fault *f, const json_t *options, const char *name,
                          double *out);
const char *catalog_option_string(const struct catalog_fault *f, const json_t *options,
                                  const char *name);
int catalog_option_bool(const struct catalog_fault *f, const json_t *options, const char *name);
/* The row of fid, or NULL when fid is not one (out of range). */
const struct catalog_fault *catalog_fault_of(enum catalog_fault_id fid);

/* Probes (seed 000): evaluated per faulted repetition by `faultline score`. */
struct catalog_probe {
    const char *id;
    int takes_value;                  /* 1: `value` is required; 0: `value` is an error */
    enum catalog_opt_type value_type; /* CATALOG_OPT_INT or CATALOG_OPT_NUMBER */
    double value_min, value_max;      /* range of value */
    int value_min_exclusive;          /* value must be > value_min */
    const char *value_doc;            /* what value means; NULL when takes_value is 0 */
    const char *passes_when;
    const char *not_evaluated_when; /* NULL: always evaluated */
    const char *origin;
};

/* Invariants (seeds 002 and 004): checked by `faultline score` over events and world ledgers.
 * world_declared: the experiment's world declares it, with params (seed 004); otherwise it is
 * evaluated whenever its evidence exists (seed 002). */
struct catalog_invariant {
    const char *id;
    const char *checks;
    const char *origin;
    int world_declared;
    const char *params; /* NULL, or the world.invariants keys it takes, in words */
    const char *note;   /* NULL, or how it relates to a probe or abort condition */
};

/* Abort conditions (seed 000): the runner stops the sandbox when one is met. */
struct catalog_abort {
    const char *id;
    int takes_value; /* `- id: value` (1) or the bare `- id` (0) */
    enum catalog_opt_type value_type;
    double value_min, value_max;
    int value_min_exclusive;
    int required; /* every experiment must list it (cost_usd_above) */
    const char *value_doc;
    const char *met_when;
};

/* Where each fault of each seed went: seed "000", "002" or "004", its name there, the id here. */
struct catalog_seed_kind {
    const char *seed;
    const char *name;
    const char *id;
    const char *relation; /* NULL, or "same as ..." / "related to ..." */
};

const struct catalog_probe *catalog_probe_find(const char *id);
const struct catalog_probe *catalog_probes(size_t *n);
const struct catalog_invariant *catalog_invariant_find(const char *id);
const struct catalog_invariant *catalog_invariants(size_t *n);
const struct catalog_abort *catalog_abort_find(const char *id);
const struct catalog_abort *catalog_aborts(size_t *n);
const struct catalog_seed_kind *catalog_seed_kinds(size_t *n);
/* The seed-kind row whose name (in its seed) is name, or NULL. */
const struct catalog_seed_kind *catalog_seed_kind_find(const char *name);

/* Every table as one JSON object {faults, probes, invariants, abort, seed_kinds}; new
 * reference. This is what `faultline list --json` prints (plus where the examples are). */
json_t *catalog_to_json(void);

#endif
