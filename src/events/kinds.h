/*
 * evkind: the event kinds as one table. Each row names a kind of the events file, the
 * components that write it (and those that will), what it records, its fields (name, JSON
 * type, required or optional, meaning, allowed values) and an example line; the common fields
 * every event has are a table of their own. docs/events.md's per-kind sections are generated
 * from it (evkind_fill_page, reached by the hidden `faultline list --markdown-events PAGE`;
 * tests/e2e/t0030-events-doc.sh fails when the page is stale), evkind_check validates an event
 * against its row, and tests/unit/test_evkinds.c fails when code emits a kind with no row.
 *
 * The table is static and read-only: every function here is callable from anywhere, callbacks
 * included.
 */
#ifndef FAULTLINE_EVENTS_KINDS_H
#define FAULTLINE_EVENTS_KINDS_H

#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

/* The components of a run, as bits: the one enum for who writes an event (its `src`), who
 * injects a fault (the catalog's injectors, enum catalog_injector, have the same values: a
 * static assertion in src/experiment/catalog.c ties them) and what the scorer saw. Each bit has
 * a component name ("controller-model", "mcp", ..., the name of a plan_loaded `component` and
 * of an injector) and a `src` value; the controller is one writer with two injecting sides, so
 * both of its bits write `src` "controller" (EVKIND_SRC_CONTROLLER). Appended only. */
enum evkind_src {
    EVKIND_SRC_CONTROLLER_MODEL = 1 << 0,  /* faultline proxy, model API side */
    EVKIND_SRC_CONTROLLER_EGRESS = 1 << 1, /* faultline proxy, egress side */
    EVKIND_SRC_MCP = 1 << 2,               /* faultline mcp, the stdio shim */
    EVKIND_SRC_GATE = 1 << 3,              /* faultline gate, hook gates */
    EVKIND_SRC_WORLD = 1 << 4,             /* faultline world, simulated backends */
    EVKIND_SRC_RUNNER = 1 << 5,            /* the runner */
    EVKIND_SRC_AGENT = 1 << 6,             /* the reference agent */
    EVKIND_SRC_CONTROLLER = EVKIND_SRC_CONTROLLER_MODEL | EVKIND_SRC_CONTROLLER_EGRESS,
    EVKIND_SRC_ALL = (1 << 7) - 1
};

/* JSON types a field may have, as bits (a field may allow several). NUMBER is any JSON number,
 * integer or real; ANY is every type. */
enum evkind_type {
    EVKIND_T_STRING = 1 << 0,
    EVKIND_T_INTEGER = 1 << 1,
    EVKIND_T_NUMBER = 1 << 2,
    EVKIND_T_BOOLEAN = 1 << 3,
    EVKIND_T_OBJECT = 1 << 4,
    EVKIND_T_ARRAY = 1 << 5,
    EVKIND_T_NULL = 1 << 6,
    EVKIND_T_ANY = (1 << 7) - 1
};

/* The kinds, one id per row of the table, in the table's (and the page's) order: evkind_get
 * indexes the rows by them (a row more or less than ids is a compile error, through
 * EVKIND_COUNT), and tests/unit/test_events_ev.c ties each id to its kind's name. Writers
 * build events by id (ev.h), so a kind that is not in the table cannot be written. */
enum evkind_id {
    EVKIND_PLAN_LOADED,
    EVKIND_MODEL_REQUEST,
    EVKIND_MODEL_RESPONSE,
    EVKIND_TOOL_CALL,
    EVKIND_TOOL_RESULT,
    EVKIND_EGRESS_REQUEST,
    EVKIND_GATE_DECISION,
    EVKIND_FAULT_INJECTED,
    EVKIND_EFFECT,
    EVKIND_ABORT,
    EVKIND_VERIFY,
    EVKIND_WARNING,
    EVKIND_RUN_START,
    EVKIND_AGENT_EXIT,
    EVKIND_RUN_END,
    EVKIND_COMPONENT_END,
    EVKIND_DNS_QUERY,
    EVKIND_COUNT
};

struct evkind_field {
    const char *name;
    unsigned types;            /* EVKIND_T_* bits */
    unsigned items;            /* for an array: the type of its elements (0: not checked) */
    int required;              /* must be present (and not null unless types has NULL) */
    const char *meaning;       /* one line, Markdown */
    const char *const *values; /* NULL-terminated allowed string values, or NULL: any */
    int planned;               /* no writer sets it yet */
};

struct evkind {
    const char *name;   /* the `kind` value */
    const char *title;  /* one line: what an event of this kind records */
    unsigned src;       /* EVKIND_SRC_* bits: components that write it today */
    unsigned src_later; /* components documented to write it that do not yet */
    const char *about;  /* optional paragraph (Markdown): who writes it when, who reads it */
    const struct evkind_field *fields;
    size_t nfields;
    const char *example; /* one events-file line of this kind (JSON) */
};

/* The common fields (t, seq, run, src, kind, via), in the order the writer stamps them; *n gets
 * their count. Borrowed, static. */
const struct evkind_field *evkind_common(size_t *n);
/* The kinds in the page's order; *n gets their count. Borrowed, static. */
const struct evkind *evkind_all(size_t *n);
/* The row of id (< EVKIND_COUNT). Borrowed, static. */
const struct evkind *evkind_get(enum evkind_id id);
/* The row of kind name, or NULL when there is none. Borrowed, static. */
const struct evkind *evkind_find(const char *name);
/* A kind's field by name, or NULL. */
const struct evkind_field *evkind_field(const struct evkind *k, const char *name);
/* 1 when no component writes the kind yet (src == 0). */
int evkind_planned(const struct evkind *k);
/* The `src` value written by the components in bits ("controller" for either controller bit
 * or both, "mcp", ...), or NULL when bits is 0 or names components of different `src` values. */
const char *evkind_src_name(unsigned bits);
/* The EVKIND_SRC_* bits that write `src` value src (EVKIND_SRC_CONTROLLER for "controller"),
 * 0 when src is NULL or unknown. */
unsigned evkind_src_bits(const char *src);
/* The component name of one EVKIND_SRC_* bit ("controller-model", "mcp", ..., "runner",
 * "agent"), "?" for anything else. */
const char *evkind_component_name(unsigned bit);
/* The bit of a component name (evkind_component_name's inverse), 0 when NULL or unknown. */
unsigned evkind_component_bit(const char *name);

/* Checks one event as written (after the writer stamped it) against the table: an object with
 * every common and every required field of its kind present, each known field of an allowed
 * type (null counts as absent for an optional field) and, where the row lists values, one of
 * them. Unknown fields are allowed (readers ignore them). ev is borrowed. 0, ERR_INVALID (not
 * an object, a missing or ill-typed field: the message names the field), or ERR_NOTFOUND (a
 * kind with no row). */
int evkind_check(const json_t *ev, struct err *e);

/* Checks one field a writer sets on an event of kind k: name is a common field (t, t_us, seq,
 * run, src, via; not kind) or a field of k's row, and v (borrowed) has a type (and, where the
 * row lists values, a value) the row allows; null is allowed for an optional field. 0,
 * ERR_NOTFOUND (a field the table does not list: the message names it) or ERR_INVALID. */
int evkind_check_field(const struct evkind *k, const char *name, const json_t *v, struct err *e);
/* evkind_check_field for every top-level field of ev (an object with a kind of the table). 0,
 * ERR_NOTFOUND (no such kind, or a field it does not list) or ERR_INVALID. For the places a
 * component's own events go through (ctl_emit, seam_emit), so nothing undocumented is written;
 * never for events posted from outside, which are claims, not programmer errors. */
int evkind_check_listed(const json_t *ev, struct err *e);

/* Appends the Markdown of the common-fields table / of every kind's section to out. */
void evkind_markdown_common(struct buf *out);
void evkind_markdown_kinds(struct buf *out);
/* Copies the page (docs/events.md) to out with the lines between `<!-- generated: NAME -->`
 * and `<!-- end generated: NAME -->` replaced by the Markdown above, NAME being `common` or
 * `kinds`; everything else is the hand-written page, kept byte for byte. 0, or ERR_INVALID
 * (a marker missing, repeated, unknown or unclosed: the message names it). */
int evkind_fill_page(const char *page, size_t len, struct buf *out, struct err *e);

#endif
