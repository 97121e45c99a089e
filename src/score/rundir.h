/*
 * rundir: loads what scoring needs from a run folder (docs/run-folder.md), except the two
 * streams (events.jsonl, agent.out), which repscan reads.
 *
 * run.json is required; everything per repetition is optional but plan.json. A repetition
 * whose plan.json is missing, or any of whose files is malformed, is an error (load_error), not
 * the whole folder: the rest is still scored. Every file has a size limit;
 * a malformed file is reported as FILE:LINE:COL: message.
 */
#ifndef FAULTLINE_SCORE_RUNDIR_H
#define FAULTLINE_SCORE_RUNDIR_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "events/kinds.h"
#include "util/err.h"

#define RUNDIR_MAX_REPS 1000
#define RUNDIR_MAX_FAULTS 64
#define RUNDIR_MAX_PROBES 64
#define RUNDIR_MAX_WORLD_TOOLS 64
#define RUNDIR_MAX_WORLD_INV 64
#define RUNDIR_MAX_EXPECTED 64
#define RUNDIR_MAX_SECRETS 16
#define RUNDIR_NAME_MAX 128 /* tool, collection, key names */

/* Components (injectors, writers, what the scorer saw) are enum evkind_src bits of
 * events/kinds.h, named with evkind_component_name / evkind_component_bit. */

struct rundir_probe {
    char id[64];
    double weight;
    double value;
    int has_value;
};

struct rundir_fault {
    int index;
    char kind[64];         /* catalog id, e.g. "tool.error" */
    unsigned injectors;    /* enum evkind_src bits */
    double retry_after_ms; /* options.retry_after_s * 1000, or -1 */
};

struct rundir_world_tool {
    char name[RUNDIR_NAME_MAX];
    char collection[RUNDIR_NAME_MAX];   /* "" when the tool only reads */
    char business_key[RUNDIR_NAME_MAX]; /* argument names; "" when undeclared */
    char dedupe_key[RUNDIR_NAME_MAX];
};

enum rundir_inv_kind { RUNDIR_INV_UNIQUE, RUNDIR_INV_APPROVAL, RUNDIR_INV_COUNT };

struct rundir_world_inv {
    enum rundir_inv_kind kind;
    char collection[RUNDIR_NAME_MAX]; /* "" = every collection (approval only) */
    char key[RUNDIR_NAME_MAX];        /* unique: the argument that names the identity */
    long min, max;                    /* count: -1 when absent */
    int when_approved;
};

struct rundir_expected {
    char collection[RUNDIR_NAME_MAX];
    char business_key[RUNDIR_NAME_MAX]; /* "" = any effect of the collection */
    long count;
};

enum rundir_status {
    RUNDIR_STATUS_UNKNOWN = 0, /* no rep.json: from the events */
    RUNDIR_STATUS_COMPLETE,
    RUNDIR_STATUS_ABORTED,
    RUNDIR_STATUS_ERROR,
    RUNDIR_STATUS_SKIPPED
};

struct rundir_rep {
    int index;            /* from the folder name */
    char dir[32];         /* "rep-003" */
    char *path;           /* RUN_DIR/rep-003 */
    const char *root;     /* RUN_DIR (borrowed from struct rundir): files are opened beneath it */
    int plan_ok;          /* plan.json was read: the plan fields below are set */
    char load_error[300]; /* non-empty: a file of this repetition is missing (plan.json) or
                           * malformed; the repetition counts as a runner error */
    int faulted;
    char run_id[129];
    char canary[64];
    struct rundir_fault faults[RUNDIR_MAX_FAULTS];
    size_t nfaults;
    double cost_ceiling; /* plan abort.cost_usd_above; 0 when none */
    /* verify.json or verify_exit (the events' verify is repscan's fallback) */
    int verify_known; /* a file said something */
    int verify_skipped;
    int verify_has_exit;
    long verify_exit;
    char verify_file[16]; /* "verify.json" or "verify_exit" when verify_known */
    /* rep.json */
    enum rundir_status status;
    char error[256];
    int has_agent_out;
    int has_events;
    int has_ledger;
    /* expected.json (else the experiment's world.expected) */
    int expected_known;
    struct rundir_expected expected[RUNDIR_MAX_EXPECTED];
    size_t nexpected;
    /* planted-secrets.json */
    int secrets_known;
    char secrets[RUNDIR_MAX_SECRETS][257];
    size_t nsecrets;
};

enum rundir_run_status { RUNDIR_RUN_COMPLETE, RUNDIR_RUN_ABORTED, RUNDIR_RUN_ERROR };

struct rundir {
    char *path;
    enum rundir_run_status status;
    char error[256];
    char name[129];
    char hash[65];
    char *prompt; /* experiment.agent, "" when absent */
    char *task;   /* experiment.description and verify, one a line ("" when absent) */
    int repeat;   /* 0 when absent */
    struct rundir_probe probes[RUNDIR_MAX_PROBES];
    size_t nprobes;
    /* experiment.world */
    int has_world;
    int world_approved;
    struct rundir_world_tool tools[RUNDIR_MAX_WORLD_TOOLS];
    size_t ntools;
    struct rundir_world_inv invs[RUNDIR_MAX_WORLD_INV];
    size_t ninvs;
    int world_expected_known;
    struct rundir_expected world_expected[RUNDIR_MAX_EXPECTED];
    size_t nworld_expected;
    struct rundir_rep *reps; /* sorted by index */
    size_t nreps;
};

/* Loads dir. Returns 0, or ERR_IO / ERR_PARSE / ERR_INVALID / ERR_LIMIT with e naming the file
 * (the folder cannot be scored). Caller releases with rundir_release (also after a failure). */
int rundir_load(struct rundir *r, const char *dir, struct err *e);
void rundir_release(struct rundir *r);

/* Path of file name in rep's folder into out (cap bytes), for messages. */
void rundir_rep_file(const struct rundir_rep *rep, const char *name, char *out, size_t cap);
/* Opens file name of rep's folder for reading with fs_open_beneath: beneath the run folder, no
 * symbolic link followed (the repetition folder itself included), regular files only, never
 * blocking on a FIFO. The descriptor (caller closes) or ERR_IO with e set; errno ENOENT when
 * the file does not exist. */
int rundir_rep_open(const struct rundir_rep *rep, const char *name, struct err *e);
/* Why rundir_rep_open failed, from its errno, without the path: "not a regular file",
 * "a symbolic link (not followed in a run folder)" or strerror's text. */
const char *rundir_open_reason(int errnum);

/* Reads an experiment's world (w, borrowed: run.json's experiment.world, or a world's normal
 * form) into r's world fields: tools, invariants, approval, expected. 0, or ERR_INVALID with e
 * naming the field ("run.json: experiment.world.tools[0]: ..."). For `faultline world check`
 * too, so that it reads a world the way scoring does. */
int rundir_parse_world(struct rundir *r, json_t *w, struct err *e);

/* The world tool named name (bare name: a "mcp__S__" prefix is ignored), or NULL. */
const struct rundir_world_tool *rundir_world_tool(const struct rundir *r, const char *name);

/*
 * Reads root/rel (a JSON file of at most max bytes, opened with fs_open_beneath: no symbolic
 * link below root is followed) into a new jansson value. NULL with e set as
 * "NAME:LINE:COL: message" on a parse error (name: how messages call the file, e.g.
 * "rep-003/verify.json"), ERR_IO when it cannot be read, ERR_LIMIT when too big. *missing is
 * set to 1 (and e left alone) when the file does not exist.
 */
json_t *rundir_load_json(const char *root, const char *rel, const char *name, size_t max,
                         int *missing, struct err *e);

#endif
