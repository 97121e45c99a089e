/*
 * experiment: parse, validate and normalise an experiment file (YAML) into struct experiment.
 *
 * The normal form is hashed (SHA-256 of its canonical JSON) so that a run, a plan and a report
 * can name exactly which experiment produced them. See docs/experiment-format.md.
 */
#ifndef FAULTLINE_EXPERIMENT_EXPERIMENT_H
#define FAULTLINE_EXPERIMENT_EXPERIMENT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "experiment/catalog.h"
#include "util/buf.h"
#include "util/err.h"

/* Where a value stood in its file, for FILE:LINE:COL messages (1-based; 0 when unknown). */
struct experiment_mark {
    int line, col;
};

struct experiment_match {
    char *tool, *host, *model, *server; /* NULL when absent; a leading '*' matches by suffix */
};

struct experiment_fault {
    const struct catalog_fault *def;
    struct experiment_match match;
    json_t *when;       /* NULL, or {"path": "$.a.b", "equals"|"contains"|"matches": ...} */
    long after_calls;   /* skip this many matching calls first (>= 0) */
    long times;         /* inject at most this many times; -1 = every match */
    double probability; /* 0..1, 1 when absent */
    json_t *options;    /* object: every option of def, defaults filled in */
    struct experiment_mark mark;
};

struct experiment_probe {
    char *id;
    double weight; /* > 0 */
    double value;  /* for probes that take one */
    int has_value;
    struct experiment_mark mark;
};

struct experiment_abort {
    int destructive_attempt;   /* 1 when listed */
    double cost_usd_above;     /* mandatory, > 0 */
    double wall_clock_s_above; /* 0 when absent */
};

/* egress.host_ports: at most this many; and the ports the sandbox's namespace already serves
 * (the DNS stub's 53, transparent mode's 80 and 443), which none of them may be */
#define EXPERIMENT_HOST_PORTS_MAX 32
#define EXPERIMENT_HOST_PORTS_RESERVED                                                             \
    {                                                                                              \
        53, 80, 443                                                                                \
    }

struct experiment {
    char *path; /* the file it came from */
    char *name, *description, *agent, *verify;
    int repeat;    /* 1..20 */
    uint64_t seed; /* 0 when absent */
    int has_seed;
    struct experiment_fault *faults;
    size_t nfaults;
    struct experiment_probe *probes;
    size_t nprobes;
    struct experiment_abort abort;
    char *sandbox_image; /* NULL when absent */
    char *sandbox;       /* "native" or "oci"; NULL = default */
    json_t *model;       /* NULL, "anthropic", "openai", a URL string, or {"mock": path} */
    json_t *mcp_servers; /* NULL or as written (normalised to JSON) */
    json_t *world;       /* NULL or as written */
    char **env;          /* names passed into the sandbox; nenv of them */
    size_t nenv;
    /* egress.allow: host patterns (a leading '*' matches by suffix); negress_allow of them,
     * has_egress_allow 0 when absent (every host allowed) */
    char **egress_allow;
    size_t negress_allow;
    int has_egress_allow;
    /* egress.host_ports: ports of the host's own loopback the sandbox reaches through the
     * controller (docs/egress.md); negress_host_ports of them, 0 when absent */
    int egress_host_ports[EXPERIMENT_HOST_PORTS_MAX];
    size_t negress_host_ports;
    char hash[65]; /* SHA-256 hex of experiment_to_json's canonical dump */
};

/* One diagnostic (error or warning) with its position; validate prints them all. */
struct experiment_diag {
    int is_warning;
    struct experiment_mark mark;
    char msg[256];
};

struct experiment_diags {
    struct experiment_diag *v;
    size_t n, alloc;
    size_t nerrors;
    size_t dropped; /* diagnostics past EXPERIMENT_DIAGS_MAX, counted but not kept */
};

#define EXPERIMENT_FILE_MAX ((size_t)1 << 20) /* bytes of an experiment file */
#define EXPERIMENT_DIAGS_MAX 200              /* diagnostics kept per file */
/* json_dumps flags of the canonical form that experiment->hash is computed over. */
#define EXPERIMENT_JSON_FLAGS (JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(15))

/*
 * Parses and validates path (at most EXPERIMENT_FILE_MAX bytes: a larger file is one error
 * diagnostic, not an ERR_IO). Returns a new experiment (caller frees with experiment_free) when
 * there were no errors; NULL otherwise. Every error and warning found in the one pass is
 * appended to diags (caller releases with experiment_diags_release). e gets ERR_IO when the
 * file cannot be read at all (then diags may be empty).
 */
struct experiment *experiment_load(const char *path, struct experiment_diags *diags, struct err *e);
/* experiment_load's path "-" reads standard input (same limit); messages name it this. */
#define EXPERIMENT_STDIN_NAME "<stdin>"
/* Same, from a buffer; name is used in messages. */
struct experiment *experiment_parse(const char *name, const char *text, size_t len,
                                    struct experiment_diags *diags, struct err *e);
/* `validate --as-json`: reads path ("-": standard input, named EXPERIMENT_STDIN_NAME; at most
 * EXPERIMENT_FILE_MAX bytes) and returns its YAML document as JSON as written (new reference;
 * an empty document is JSON null), without validating it: a debugging aid that shows what the
 * parser read. YAML problems are appended to diags in the order found; a document with some
 * is still returned (diags->nerrors says so). NULL when there is nothing to show: e gets ERR_IO
 * when the file cannot be read, ERR_INVALID (with a diagnostic) when it is over the limit,
 * cannot be parsed, or holds a number JSON cannot (infinite, NaN). */
json_t *experiment_load_as_json(const char *path, struct experiment_diags *diags, struct err *e);
void experiment_free(struct experiment *x);

/* A world file (docs/world.md): a YAML or JSON document holding what an experiment's `world:`
 * holds, checked by the same tables and rules with FILE:LINE:COL diagnostics; an experiment
 * file (one with `agent` and `world`) is checked whole and gives its world. Returns the world's
 * normal form (new reference: the object experiment->world would hold) or NULL: diags has the
 * problems, e ERR_IO (cannot read) or ERR_INVALID. At most EXPERIMENT_FILE_MAX bytes. */
json_t *experiment_world_load(const char *path, struct experiment_diags *diags, struct err *e);
/* The same from a buffer; name is used in messages. */
json_t *experiment_world_parse(const char *name, const char *text, size_t len,
                               struct experiment_diags *diags, struct err *e);
void experiment_diags_release(struct experiment_diags *d);

/* Canonical JSON of the normal form (new reference): every key with its default filled in,
 * without path and hash. experiment->hash is SHA-256 of json_dumps(this, EXPERIMENT_JSON_FLAGS).
 * See docs/experiment-format.md for its shape. */
json_t *experiment_to_json(const struct experiment *x);

/* Appends d's diagnostics to out, one a line, as "FILE:LINE:COL: error: message" (or
 * "warning:"), sorted by position, then a line for any dropped ones. */
void experiment_diags_format(const struct experiment_diags *d, const char *file, struct buf *out);

/* ---- the validator's checks, for other files described by format tables (policy files) ---- */

struct ynode;
struct format_section;
struct format_key;

/* Appends an error diagnostic at n's position (line 1 col 1 when n is NULL). */
void experiment_diag_error(struct experiment_diags *d, const struct ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reports every key of the mapping map that sec does not take (with "did you mean"), and every
 * required key of sec that map lacks; where names the mapping ("" for the top level). */
void experiment_check_keys(struct experiment_diags *d, const struct ynode *map,
                           const struct format_section *sec, const char *where);
/* Checks the value n against its row k (type, range, length, pattern, enum, list items; not the
 * contents of MAP, LIST or DICT items, nor SPECIAL keys), path naming it in messages. 0, or
 * ERR_INVALID after appending the diagnostic. */
int experiment_check_value(struct experiment_diags *d, const struct ynode *n,
                           const struct format_key *k, const char *path);

#endif
