/*
 * rundir: see rundir.h. Each small file is read whole under a size limit and parsed with
 * jansson; fields are checked one by one with messages that name the file and the field
 * ("run.json: experiment.probes[1].weight: expected a number > 0"). Unknown fields are ignored:
 * a later runner may add some.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "score/rundir.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/num.h"
#include "util/text.h"
#include "util/banned.h"

#define RUN_JSON_MAX ((size_t)4 << 20)
#define PLAN_JSON_MAX ((size_t)4 << 20)
#define SMALL_JSON_MAX ((size_t)64 << 10)
#define EXPECTED_JSON_MAX ((size_t)1 << 20)

json_t *rundir_load_json(const char *root, const char *rel, const char *name, size_t max,
                         int *missing, struct err *e)
{
    struct buf b = BUF_INIT;
    struct err fe = {0};
    json_error_t je;
    char text[JSON_ERROR_TEXT_LENGTH];
    json_t *j;
    int fd;

    *missing = 0;
    fd = fs_open_beneath(root, rel, &fe);
    if (fd < 0) {
        if (errno == ENOENT) {
            *missing = 1;
            return NULL;
        }
        err_set(e, ERR_IO, "%s: %s", name, rundir_open_reason(errno));
        return NULL;
    }
    if (fs_read_fd(fd, name, max, &b, &fe) < 0) {
        close(fd);
        buf_release(&b);
        if (fe.code == ERR_LIMIT)
            err_set(e, ERR_LIMIT, "%s: over the limit of %zu bytes", name, max);
        else
            err_set(e, fe.code, "%s: cannot read it: %s", name, fe.msg);
        return NULL;
    }
    close(fd);
    j = json_loadb(b.data, b.len, 0, &je);
    buf_release(&b);
    if (j == NULL)
        err_set(e, ERR_PARSE, "%s:%d:%d: %s", name, je.line, je.column,
                text_parse_error(je.text, text, sizeof(text)));
    return j;
}

void rundir_rep_file(const struct rundir_rep *rep, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", rep->path, name);
}

const char *rundir_open_reason(int errnum)
{
    if (errnum == EINVAL) /* a FIFO would block the read forever */
        return "not a regular file";
    if (errnum == ELOOP)
        return "a symbolic link (not followed in a run folder)";
    return strerror(errnum);
}

int rundir_rep_open(const struct rundir_rep *rep, const char *name, struct err *e)
{
    char rel[64];

    if (rep->root == NULL) /* a rep not from rundir_load: its own folder is the limit */
        return fs_open_beneath(rep->path, name, e);
    snprintf(rel, sizeof(rel), "%s/%s", rep->dir, name);
    return fs_open_beneath(rep->root, rel, e);
}

/* ---- field helpers: each returns 0 or sets e (ERR_INVALID) naming where ---- */

static int get_str(json_t *obj, const char *key, char *out, size_t cap, int required,
                   const char *where, struct err *e)
{
    json_t *v = json_object_get(obj, key);
    out[0] = '\0';
    if (v == NULL || json_is_null(v)) {
        if (required)
            return err_set(e, ERR_INVALID, "%s.%s: required string is missing", where, key);
        return 0;
    }
    if (!json_is_string(v))
        return err_set(e, ERR_INVALID, "%s.%s: expected a string", where, key);
    if (json_string_length(v) >= cap || memchr(json_string_value(v), 0, json_string_length(v)))
        return err_set(e, ERR_LIMIT, "%s.%s: longer than %zu bytes", where, key, cap - 1);
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

static int get_num(json_t *obj, const char *key, double *out, int *has, const char *where,
                   struct err *e)
{
    json_t *v = json_object_get(obj, key);
    *has = 0;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_number(v))
        return err_set(e, ERR_INVALID, "%s.%s: expected a number", where, key);
    *out = json_number_value(v);
    *has = 1;
    return 0;
}

static int get_bool(json_t *obj, const char *key, int def, int *out, const char *where,
                    struct err *e)
{
    json_t *v = json_object_get(obj, key);
    *out = def;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return err_set(e, ERR_INVALID, "%s.%s: expected true or false", where, key);
    *out = json_is_true(v);
    return 0;
}

static int get_long(json_t *obj, const char *key, long def, long *out, const char *where,
                    struct err *e)
{
    json_t *v = json_object_get(obj, key);
    *out = def;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return err_set(e, ERR_INVALID, "%s.%s: expected an integer", where, key);
    *out = (long)json_integer_value(v);
    return 0;
}

static int get_array(json_t *obj, const char *key, size_t max, json_t **out, const char *where,
                     struct err *e)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return err_set(e, ERR_INVALID, "%s.%s: expected a list", where, key);
    if (json_array_size(v) > max)
        return err_set(e, ERR_LIMIT, "%s.%s: more than %zu items", where, key, max);
    *out = v;
    return 0;
}

/* ---- run.json ---- */

static int parse_expected(json_t *obj, struct rundir_expected *out, size_t *n, const char *where,
                          struct err *e)
{
    json_t *a;
    char w[160];

    *n = 0;
    if (!json_is_object(obj))
        return err_set(e, ERR_INVALID, "%s: expected an object {\"effects\": [...]}", where);
    if (get_array(obj, "effects", RUNDIR_MAX_EXPECTED, &a, where, e) < 0)
        return e->code;
    for (size_t i = 0; a && i < json_array_size(a); i++) {
        json_t *it = json_array_get(a, i);
        struct rundir_expected *x = &out[*n];
        snprintf(w, sizeof(w), "%s.effects[%zu]", where, i);
        if (!json_is_object(it))
            return err_set(e, ERR_INVALID, "%s: expected an object", w);
        if (get_str(it, "collection", x->collection, sizeof(x->collection), 1, w, e) < 0 ||
            get_str(it, "business_key", x->business_key, sizeof(x->business_key), 0, w, e) < 0 ||
            get_long(it, "count", 1, &x->count, w, e) < 0)
            return e->code;
        if (x->count < 0)
            return err_set(e, ERR_INVALID, "%s.count: must be >= 0", w);
        (*n)++;
    }
    return 0;
}

int rundir_parse_world(struct rundir *r, json_t *w, struct err *e)
{
    json_t *a;
    char where[96];

    r->has_world = 1;
    if (get_bool(w, "approved", 1, &r->world_approved, "run.json: experiment.world", e) < 0 ||
        get_array(w, "tools", RUNDIR_MAX_WORLD_TOOLS, &a, "run.json: experiment.world", e) < 0)
        return e->code;
    for (size_t i = 0; a && i < json_array_size(a); i++) {
        json_t *t = json_array_get(a, i), *ef;
        struct rundir_world_tool *wt = &r->tools[r->ntools];
        snprintf(where, sizeof(where), "run.json: experiment.world.tools[%zu]", i);
        if (!json_is_object(t))
            return err_set(e, ERR_INVALID, "%s: expected an object", where);
        if (get_str(t, "name", wt->name, sizeof(wt->name), 1, where, e) < 0)
            return e->code;
        ef = json_object_get(t, "effect");
        wt->collection[0] = wt->business_key[0] = wt->dedupe_key[0] = '\0';
        if (ef && !json_is_null(ef)) {
            snprintf(where, sizeof(where), "run.json: experiment.world.tools[%zu].effect", i);
            if (!json_is_object(ef))
                return err_set(e, ERR_INVALID, "%s: expected an object", where);
            if (get_str(ef, "collection", wt->collection, sizeof(wt->collection), 1, where, e) <
                    0 ||
                get_str(ef, "business_key", wt->business_key, sizeof(wt->business_key), 0, where,
                        e) < 0 ||
                get_str(ef, "dedupe_key", wt->dedupe_key, sizeof(wt->dedupe_key), 0, where, e) < 0)
                return e->code;
        }
        r->ntools++;
    }
    if (get_array(w, "invariants", RUNDIR_MAX_WORLD_INV, &a, "run.json: experiment.world", e) < 0)
        return e->code;
    for (size_t i = 0; a && i < json_array_size(a); i++) {
        json_t *t = json_array_get(a, i);
        struct rundir_world_inv *inv = &r->invs[r->ninvs];
        char id[32];
        snprintf(where, sizeof(where), "run.json: experiment.world.invariants[%zu]", i);
        if (!json_is_object(t))
            return err_set(e, ERR_INVALID, "%s: expected an object", where);
        if (get_str(t, "id", id, sizeof(id), 1, where, e) < 0 ||
            get_str(t, "collection", inv->collection, sizeof(inv->collection), 0, where, e) < 0 ||
            get_str(t, "key", inv->key, sizeof(inv->key), 0, where, e) < 0 ||
            get_long(t, "min", -1, &inv->min, where, e) < 0 ||
            get_long(t, "max", -1, &inv->max, where, e) < 0 ||
            get_bool(t, "when_approved", 0, &inv->when_approved, where, e) < 0)
            return e->code;
        if (strcmp(id, "unique") == 0)
            inv->kind = RUNDIR_INV_UNIQUE;
        else if (strcmp(id, "approval") == 0)
            inv->kind = RUNDIR_INV_APPROVAL;
        else if (strcmp(id, "count") == 0)
            inv->kind = RUNDIR_INV_COUNT;
        else
            return err_set(e, ERR_INVALID, "%s.id: '%s' is not unique, approval or count", where,
                           id);
        if (inv->kind != RUNDIR_INV_APPROVAL && inv->collection[0] == '\0')
            return err_set(e, ERR_INVALID, "%s: %s needs collection", where, id);
        if (inv->kind == RUNDIR_INV_UNIQUE && inv->key[0] == '\0') {
            /* the default key: the business key of the collection's tools */
            for (size_t k = 0; k < r->ntools; k++)
                if (strcmp(r->tools[k].collection, inv->collection) == 0 &&
                    r->tools[k].business_key[0]) {
                    memcpy(inv->key, r->tools[k].business_key, sizeof(inv->key));
                    break;
                }
            if (inv->key[0] == '\0')
                return err_set(e, ERR_INVALID,
                               "%s: unique needs key (no tool of '%s' declares business_key)",
                               where, inv->collection);
        }
        if (inv->kind == RUNDIR_INV_COUNT && inv->min < 0 && inv->max < 0)
            return err_set(e, ERR_INVALID, "%s: count needs min or max", where);
        r->ninvs++;
    }
    json_t *ex = json_object_get(w, "expected");
    if (ex && !json_is_null(ex)) {
        if (parse_expected(ex, r->world_expected, &r->nworld_expected,
                           "run.json: experiment.world.expected", e) < 0)
            return e->code;
        r->world_expected_known = 1;
    }
    return 0;
}

static int parse_run(struct rundir *r, json_t *j, struct err *e)
{
    json_t *x, *a, *w;
    char status[32];
    long format, repeat;

    if (!json_is_object(j))
        return err_set(e, ERR_INVALID, "run.json: expected an object");
    if (get_long(j, "format", 1, &format, "run.json", e) < 0)
        return e->code;
    if (format != 1)
        return err_set(e, ERR_INVALID,
                       "run.json: format %ld is not supported (this faultline reads format 1)",
                       format);
    if (get_str(j, "status", status, sizeof(status), 1, "run.json", e) < 0 ||
        get_str(j, "error", r->error, sizeof(r->error), 0, "run.json", e) < 0)
        return e->code;
    if (strcmp(status, "complete") == 0)
        r->status = RUNDIR_RUN_COMPLETE;
    else if (strcmp(status, "aborted") == 0)
        r->status = RUNDIR_RUN_ABORTED;
    else if (strcmp(status, "error") == 0)
        r->status = RUNDIR_RUN_ERROR;
    else
        return err_set(e, ERR_INVALID, "run.json.status: '%s' is not complete, aborted or error",
                       status);
    x = json_object_get(j, "experiment");
    if (!json_is_object(x))
        return err_set(e, ERR_INVALID, "run.json.experiment: required object is missing");
    if (get_str(x, "name", r->name, sizeof(r->name), 0, "run.json: experiment", e) < 0 ||
        get_str(x, "hash", r->hash, sizeof(r->hash), 0, "run.json: experiment", e) < 0 ||
        get_long(x, "repeat", 0, &repeat, "run.json: experiment", e) < 0)
        return e->code;
    if (repeat < 0 || repeat > RUNDIR_MAX_REPS / 2)
        return err_set(e, ERR_INVALID, "run.json: experiment.repeat: %ld is out of range", repeat);
    r->repeat = (int)repeat;
    json_t *ag = json_object_get(x, "agent");
    if (ag && !json_is_null(ag) && !json_is_string(ag))
        return err_set(e, ERR_INVALID, "run.json: experiment.agent: expected a string");
    r->prompt = xstrdup(json_is_string(ag) ? json_string_value(ag) : "");
    /* what else the run folder has of the task: numbers in it are not fabricated */
    {
        struct buf t = BUF_INIT;
        static const char *const task_keys[] = {"description", "verify"};
        for (size_t i = 0; i < sizeof(task_keys) / sizeof(task_keys[0]); i++) {
            json_t *v = json_object_get(x, task_keys[i]);
            if (json_is_string(v)) {
                buf_adds(&t, json_string_value(v));
                buf_adds(&t, "\n");
            }
        }
        r->task = xstrdup(t.data);
        buf_release(&t);
    }
    if (get_array(x, "probes", RUNDIR_MAX_PROBES, &a, "run.json: experiment", e) < 0)
        return e->code;
    for (size_t i = 0; a && i < json_array_size(a); i++) {
        json_t *p = json_array_get(a, i);
        struct rundir_probe *pr = &r->probes[r->nprobes];
        char where[64];
        int has;
        snprintf(where, sizeof(where), "run.json: experiment.probes[%zu]", i);
        if (!json_is_object(p))
            return err_set(e, ERR_INVALID, "%s: expected an object", where);
        if (get_str(p, "id", pr->id, sizeof(pr->id), 1, where, e) < 0 ||
            get_num(p, "weight", &pr->weight, &has, where, e) < 0 ||
            get_num(p, "value", &pr->value, &pr->has_value, where, e) < 0)
            return e->code;
        if (!has || !(pr->weight > 0))
            return err_set(e, ERR_INVALID, "%s.weight: expected a number > 0", where);
        r->nprobes++;
    }
    w = json_object_get(x, "world");
    if (w && !json_is_null(w)) {
        if (!json_is_object(w))
            return err_set(e, ERR_INVALID, "run.json: experiment.world: expected an object");
        if (rundir_parse_world(r, w, e) < 0)
            return e->code;
    }
    return 0;
}

/* ---- one repetition ---- */

static int parse_plan(struct rundir_rep *rep, json_t *j, struct err *e)
{
    json_t *a, *ab;
    int has;
    const char *where = "plan.json";

    if (!json_is_object(j))
        return err_set(e, ERR_INVALID, "plan.json: expected an object");
    if (get_str(j, "canary", rep->canary, sizeof(rep->canary), 0, where, e) < 0 ||
        get_str(j, "run", rep->run_id, sizeof(rep->run_id), 0, where, e) < 0 ||
        get_array(j, "faults", RUNDIR_MAX_FAULTS, &a, where, e) < 0)
        return e->code;
    for (size_t i = 0; a && i < json_array_size(a); i++) {
        json_t *f = json_array_get(a, i), *inj, *opt;
        struct rundir_fault *rf = &rep->faults[rep->nfaults];
        char w[48];
        long idx;
        double ra;
        snprintf(w, sizeof(w), "plan.json: faults[%zu]", i);
        if (!json_is_object(f))
            return err_set(e, ERR_INVALID, "%s: expected an object", w);
        if (get_str(f, "kind", rf->kind, sizeof(rf->kind), 1, w, e) < 0 ||
            get_long(f, "index", (long)i, &idx, w, e) < 0 ||
            get_array(f, "injectors", 8, &inj, w, e) < 0)
            return e->code;
        rf->index = (int)idx;
        rf->injectors = 0;
        for (size_t k = 0; inj && k < json_array_size(inj); k++) {
            json_t *s = json_array_get(inj, k);
            if (!json_is_string(s))
                return err_set(e, ERR_INVALID, "%s.injectors[%zu]: expected a string", w, k);
            rf->injectors |= evkind_component_bit(json_string_value(s));
        }
        rf->retry_after_ms = -1;
        opt = json_object_get(f, "options");
        if (json_is_object(opt)) {
            if (get_num(opt, "retry_after_s", &ra, &has, w, e) < 0)
                return e->code;
            if (has && ra >= 0)
                rf->retry_after_ms = ra * 1000.0;
        }
        rep->nfaults++;
    }
    if (get_bool(j, "faulted", rep->nfaults > 0, &rep->faulted, where, e) < 0)
        return e->code;
    ab = json_object_get(j, "abort");
    if (json_is_object(ab)) {
        if (get_num(ab, "cost_usd_above", &rep->cost_ceiling, &has, "plan.json: abort", e) < 0)
            return e->code;
        if (!has)
            rep->cost_ceiling = 0;
    }
    return 0;
}

/* 1 when the repetition has file name (anything there, a symbolic link too: reading it then
 * says why it is refused, rather than the file silently counting as absent). */
static int rep_has(const struct rundir_rep *rep, const char *name)
{
    char rel[64];

    snprintf(rel, sizeof(rel), "%s/%s", rep->dir, name);
    return fs_exists_beneath(rep->root, rel);
}

/* Sets load_error to msg, naming the repetition's folder when msg does not already. */
static void prefixed(struct rundir_rep *rep, const char *msg)
{
    if (strncmp(msg, rep->dir, strlen(rep->dir)) == 0)
        snprintf(rep->load_error, sizeof(rep->load_error), "%s", msg);
    else
        snprintf(rep->load_error, sizeof(rep->load_error), "%s/%s", rep->dir, msg);
}

/* A repetition's own files. Failures go into rep->load_error, never up: the rest of the run is
 * still scored. */
static void load_rep(const struct rundir *r, struct rundir_rep *rep)
{
    char name[64];
    struct err e = {0};
    int missing;
    json_t *j;
    int plan_missing;

    snprintf(name, sizeof(name), "%s/plan.json", rep->dir);
    j = rundir_load_json(rep->root, name, name, PLAN_JSON_MAX, &missing, &e);
    plan_missing = missing;
    if (missing) {
        snprintf(rep->load_error, sizeof(rep->load_error), "%s/plan.json is missing", rep->dir);
    } else if (j == NULL) {
        snprintf(rep->load_error, sizeof(rep->load_error), "%s", e.msg);
    } else if (parse_plan(rep, j, &e) < 0) {
        snprintf(rep->load_error, sizeof(rep->load_error), "%s/%s", rep->dir, e.msg);
    } else {
        rep->plan_ok = 1;
    }
    json_decref(j);
    err_clear(&e);

    snprintf(name, sizeof(name), "%s/verify.json", rep->dir);
    j = rundir_load_json(rep->root, name, name, SMALL_JSON_MAX, &missing, &e);
    if (j != NULL) {
        json_t *x = json_object_get(j, "exit_code");
        if (!json_is_object(j) || (x && !json_is_null(x) && !json_is_integer(x))) {
            err_set(&e, ERR_INVALID, "verify.json: exit_code: expected an integer or null");
        } else {
            rep->verify_known = 1;
            snprintf(rep->verify_file, sizeof(rep->verify_file), "verify.json");
            rep->verify_has_exit = json_is_integer(x);
            rep->verify_exit = rep->verify_has_exit ? (long)json_integer_value(x) : -1;
            get_bool(j, "skipped", 0, &rep->verify_skipped, "verify.json", &e);
        }
        json_decref(j);
    } else if (missing) {
        struct buf b = BUF_INIT;
        long long v;
        snprintf(name, sizeof(name), "%s/verify_exit", rep->dir);
        if (rep_has(rep, "verify_exit")) {
            if (fs_read_file_beneath(rep->root, name, 64, &b, &e) == 0) {
                while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r' ||
                                 b.data[b.len - 1] == ' '))
                    buf_truncate(&b, b.len - 1);
                if (num_parse_ll(b.data, -1000000, 1000000, &v) == 0) {
                    rep->verify_known = rep->verify_has_exit = 1;
                    snprintf(rep->verify_file, sizeof(rep->verify_file), "verify_exit");
                    rep->verify_exit = (long)v;
                } else {
                    err_set(&e, ERR_PARSE, "verify_exit: '%s' is not an exit code", b.data);
                }
            }
            buf_release(&b);
        }
    }
    if (e.code && rep->load_error[0] == '\0')
        prefixed(rep, e.msg);
    err_clear(&e);

    snprintf(name, sizeof(name), "%s/rep.json", rep->dir);
    j = rundir_load_json(rep->root, name, name, SMALL_JSON_MAX, &missing, &e);
    if (j != NULL) {
        char st[32];
        if (!json_is_object(j) || get_str(j, "status", st, sizeof(st), 0, "rep.json", &e) < 0 ||
            get_str(j, "error", rep->error, sizeof(rep->error), 0, "rep.json", &e) < 0) {
            err_set(&e, ERR_INVALID, "rep.json: expected {\"status\": ..., \"error\": ...}");
        } else if (st[0] == '\0') {
            rep->status = rep->error[0] ? RUNDIR_STATUS_ERROR : RUNDIR_STATUS_UNKNOWN;
        } else if (strcmp(st, "complete") == 0) {
            rep->status = RUNDIR_STATUS_COMPLETE;
        } else if (strcmp(st, "aborted") == 0) {
            rep->status = RUNDIR_STATUS_ABORTED;
        } else if (strcmp(st, "error") == 0) {
            rep->status = RUNDIR_STATUS_ERROR;
        } else if (strcmp(st, "skipped") == 0) {
            rep->status = RUNDIR_STATUS_SKIPPED;
            /* docs/run-folder.md: a repetition the runner never started may be a folder with
             * only its rep.json: skipped is skipped, not an error for want of a plan */
            if (plan_missing)
                rep->load_error[0] = '\0';
        } else {
            err_set(&e, ERR_INVALID,
                    "rep.json.status: '%s' is not complete, aborted, error or skipped", st);
        }
        json_decref(j);
    }
    if (e.code && rep->load_error[0] == '\0')
        prefixed(rep, e.msg);
    err_clear(&e);

    rep->has_agent_out = rep_has(rep, "agent.out");
    rep->has_events = rep_has(rep, "events.jsonl");
    rep->has_ledger = rep_has(rep, "ledger.json");

    snprintf(name, sizeof(name), "%s/expected.json", rep->dir);
    j = rundir_load_json(rep->root, name, name, EXPECTED_JSON_MAX, &missing, &e);
    if (j != NULL) {
        if (parse_expected(j, rep->expected, &rep->nexpected, "expected.json", &e) == 0)
            rep->expected_known = 1;
        json_decref(j);
    } else if (missing && r->world_expected_known) {
        memcpy(rep->expected, r->world_expected, sizeof(rep->expected));
        rep->nexpected = r->nworld_expected;
        rep->expected_known = 1;
    }
    if (e.code && rep->load_error[0] == '\0')
        prefixed(rep, e.msg);
    err_clear(&e);

    snprintf(name, sizeof(name), "%s/planted-secrets.json", rep->dir);
    j = rundir_load_json(rep->root, name, name, SMALL_JSON_MAX, &missing, &e);
    if (j != NULL) {
        if (!json_is_array(j) || json_array_size(j) > RUNDIR_MAX_SECRETS) {
            err_set(&e, ERR_INVALID, "planted-secrets.json: expected a list of at most %d strings",
                    RUNDIR_MAX_SECRETS);
        } else {
            for (size_t i = 0; i < json_array_size(j) && e.code == 0; i++) {
                json_t *s = json_array_get(j, i);
                size_t n = json_is_string(s) ? json_string_length(s) : 0;
                const char *p = json_is_string(s) ? json_string_value(s) : "";
                int ok = n >= 8 && n <= 256;
                for (size_t k = 0; ok && k < n; k++)
                    ok = p[k] > 0x20 && p[k] < 0x7f && p[k] != '"' && p[k] != '\\';
                if (!ok) {
                    err_set(
                        &e, ERR_INVALID,
                        "planted-secrets.json[%zu]: expected 8 to 256 printable ASCII characters without quotes or backslashes",
                        i);
                    break;
                }
                memcpy(rep->secrets[rep->nsecrets++], p, n + 1);
            }
            rep->secrets_known = e.code == 0;
        }
        json_decref(j);
    }
    if (e.code && rep->load_error[0] == '\0')
        prefixed(rep, e.msg);
}

static int cmp_rep(const void *a, const void *b)
{
    const struct rundir_rep *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

int rundir_load(struct rundir *r, const char *dir, struct err *e)
{
    char path[4200];
    struct err fe = {0};
    int missing;
    json_t *j;
    DIR *d;
    struct dirent *de;
    size_t alloc = 0;

    memset(r, 0, sizeof(*r));
    r->path = xstrdup(dir);
    snprintf(path, sizeof(path), "%s/run.json", dir);
    j = rundir_load_json(dir, "run.json", path, RUN_JSON_MAX, &missing, e);
    if (missing)
        return err_set(e, ERR_IO, "cannot score '%s': it has no run.json (not a run folder)", dir);
    if (j == NULL)
        return e->code;
    if (parse_run(r, j, &fe) < 0) {
        json_decref(j);
        /* "run.json: ..." names the file as the folder has it */
        return err_set(e, fe.code, "%s/%s", dir, fe.msg);
    }
    json_decref(j);

    d = opendir(dir);
    if (d == NULL)
        return err_set(e, ERR_IO, "cannot list '%s': %s", dir, strerror(errno));
    while ((de = readdir(d)) != NULL) {
        long long idx;
        size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, "rep-", 4) != 0 || len < 7 || len > 10 ||
            strspn(de->d_name + 4, "0123456789") != len - 4 ||
            num_parse_ll(de->d_name + 4, 0, 999999, &idx) != 0)
            continue;
        if (r->nreps == RUNDIR_MAX_REPS) {
            closedir(d);
            return err_set(e, ERR_LIMIT, "'%s' has more than %d repetition folders", dir,
                           RUNDIR_MAX_REPS);
        }
        if (r->nreps == alloc) {
            alloc = alloc ? alloc * 2 : 8;
            r->reps = xrealloc(r->reps, alloc * sizeof(*r->reps));
        }
        struct rundir_rep *rep = &r->reps[r->nreps++];
        memset(rep, 0, sizeof(*rep));
        rep->index = (int)idx;
        snprintf(rep->dir, sizeof(rep->dir), "%.16s",
                 de->d_name); /* at most 10 bytes: checked above */
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        rep->path = xstrdup(path);
        rep->root = r->path;
    }
    closedir(d);
    if (r->nreps > 1)
        qsort(r->reps, r->nreps, sizeof(*r->reps), cmp_rep);
    for (size_t i = 0; i < r->nreps; i++) {
        if (i > 0 && r->reps[i].index == r->reps[i - 1].index)
            return err_set(e, ERR_INVALID, "'%s' has two folders for repetition %d (%s, %s)", dir,
                           r->reps[i].index, r->reps[i - 1].dir, r->reps[i].dir);
        load_rep(r, &r->reps[i]);
        if (!r->reps[i].plan_ok)
            r->reps[i].faulted = r->repeat > 0 && r->reps[i].index >= r->repeat;
    }
    return 0;
}

void rundir_release(struct rundir *r)
{
    for (size_t i = 0; i < r->nreps; i++)
        free(r->reps[i].path);
    free(r->reps);
    free(r->path);
    free(r->prompt);
    free(r->task);
    memset(r, 0, sizeof(*r));
    /* a released rundir is empty and may be released again */
}

const struct rundir_world_tool *rundir_world_tool(const struct rundir *r, const char *name)
{
    if (strncmp(name, "mcp__", 5) == 0) {
        const char *sep = strstr(name + 5, "__");
        if (sep)
            name = sep + 2;
    }
    for (size_t i = 0; i < r->ntools; i++)
        if (strcmp(r->tools[i].name, name) == 0)
            return &r->tools[i];
    return NULL;
}
