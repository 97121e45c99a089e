/*
 * replay: see replay.h. Every file of the run folder is read beneath it without following
 * links (rundir_load_json), with a size limit; the replayed ledger's verdicts are computed by
 * worldcheck_run over a copy in a temporary folder, the way it reads the recorded one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/replay.h"
#include "run/report.h"
#include "run/world_run.h"
#include "score/rundir.h"
#include "score/worldcheck.h"
#include "seam/seam.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

#define PATH_MAX_ 4096
#define PLAN_MAX ((size_t)16 << 20)
#define RUN_JSON_MAX ((size_t)64 << 20)
#define HASH_MAX ((size_t)64 << 10)

/* root/rep/name as JSON (new reference), or NULL with e set; a missing file is an error
 * naming it. */
static json_t *load(const char *root, const char *rep, const char *name, size_t max, struct err *e)
{
    char rel[PATH_MAX_];
    int missing;
    json_t *j;

    snprintf(rel, sizeof(rel), "%s%s%s", rep ? rep : "", rep ? "/" : "", name);
    j = rundir_load_json(root, rel, rel, max, &missing, e);
    if (missing)
        err_set(e, ERR_INVALID, "%s is missing", rel);
    return j;
}

int replay_record(const char *repdir, struct err *e)
{
    char root[PATH_MAX_], path[PATH_MAX_];
    const char *rep, *slash = strrchr(repdir, '/');
    json_t *run = NULL, *plan = NULL, *ledger = NULL, *j;
    struct world_digest d;
    int rc = ERR_IO;

    if (slash == NULL || slash[1] == '\0')
        return err_set(e, ERR_INVALID, "'%s': not a repetition's folder", repdir);
    snprintf(root, sizeof(root), "%.*s", (int)(slash - repdir), repdir);
    if (root[0] == '\0')
        snprintf(root, sizeof(root), "/");
    rep = slash + 1;
    if ((run = load(root, NULL, "run.json", RUN_JSON_MAX, e)) == NULL ||
        (plan = load(root, rep, "plan.json", PLAN_MAX, e)) == NULL ||
        (ledger = load(root, rep, "ledger.json", WORLD_RUN_LEDGER_MAX, e)) == NULL)
        goto done;
    world_replay_digest(json_object_get(json_object_get(run, "experiment"), "world"), plan, ledger,
                        &d);
    j = world_replay_digest_json(&d);
    snprintf(path, sizeof(path), "%s/" REPLAY_HASH_FILE, repdir);
    rc = report_write_json(j, path, e);
    json_decref(j);
done:
    json_decref(run);
    json_decref(plan);
    json_decref(ledger);
    return rc;
}

/* The verdicts of ledger (borrowed) against world: worldcheck_run over DIR/replayed/ledger.json
 * in a new temporary folder ($TMPDIR, else /tmp). ERR_SYS when that folder cannot be made. */
static int check_json(const json_t *world, const json_t *ledger, struct worldcheck *wc,
                      struct err *e)
{
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX_], rep[PATH_MAX_ + 16], file[PATH_MAX_ + 32];
    struct err re = {0};
    int rc;

    snprintf(dir, sizeof(dir), "%s/faultline-replay.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL)
        return err_set(e, ERR_SYS, "cannot make a temporary folder in '%s'",
                       tmp && *tmp ? tmp : "/tmp");
    snprintf(rep, sizeof(rep), "%s/replayed", dir);
    snprintf(file, sizeof(file), "%s/ledger.json", rep);
    if (fs_mkdirs(rep, e) < 0 || report_write_json(ledger, file, e) < 0)
        rc = err_set(e, ERR_SYS, "cannot write the replayed ledger in '%s'", dir);
    else
        rc = worldcheck_run(world, file, wc, e);
    fs_remove_tree(dir, &re);
    return rc;
}

/* Names the first verdict that differs into out; 1 when one does. */
static int verdicts_differ(const struct worldcheck *a, const struct worldcheck *b,
                           struct world_replay_diff *out)
{
    for (size_t i = 0; i < a->n || i < b->n; i++) {
        const struct worldcheck_item *x = i < a->n ? &a->items[i] : NULL;
        const struct worldcheck_item *y = i < b->n ? &b->items[i] : NULL;
        if (x && y && strcmp(x->id, y->id) == 0 && x->result == y->result &&
            x->effect_index == y->effect_index)
            continue;
        memset(out, 0, sizeof(*out));
        snprintf(out->what, sizeof(out->what), "verdict %s: recorded %s, replayed %s",
                 x ? x->id : y->id, x ? rules_result_name(x->result) : "absent",
                 y ? rules_result_name(y->result) : "absent");
        return 1;
    }
    return 0;
}

int replay_rep(const char *run_dir, const char *rep, const json_t *world, struct replay_rep *out,
               struct err *e)
{
    char rel[PATH_MAX_], plan_path[PATH_MAX_];
    json_t *plan = NULL, *ledger = NULL, *replayed = NULL, *hj = NULL;
    struct seam_opts so;
    struct seam *s = NULL;
    struct worldcheck *wa = NULL, *wb = NULL;
    struct world_digest now, then;
    struct err le = {0};
    int missing, rc;

    memset(out, 0, sizeof(*out));
    snprintf(rel, sizeof(rel), "%s/ledger.json", rep);
    if (!fs_exists_beneath(run_dir, rel)) {
        out->status = REPLAY_NO_LEDGER;
        return 0;
    }
    if ((ledger = load(run_dir, rep, "ledger.json", WORLD_RUN_LEDGER_MAX, e)) == NULL ||
        (plan = load(run_dir, rep, "plan.json", PLAN_MAX, e)) == NULL) {
        rc = e->code;
        goto done;
    }
    snprintf(rel, sizeof(rel), "%s/" REPLAY_HASH_FILE, rep);
    hj = rundir_load_json(run_dir, rel, rel, HASH_MAX, &missing, e);
    if (hj == NULL && !missing) {
        rc = e->code;
        goto done;
    }
    if (hj && world_replay_digest_parse(hj, &then, &le) < 0) {
        rc = err_set(e, ERR_INVALID, "%s: %s", rel, le.msg);
        goto done;
    }
    memset(&so, 0, sizeof(so));
    snprintf(plan_path, sizeof(plan_path), "%s/%s/plan.json", run_dir, rep);
    so.component = "world";
    so.plan_path = plan_path;
    so.i_have_a_sandbox = 1; /* the run had its sandbox; nothing here touches anything real */
    if ((s = seam_new(&so, &le)) == NULL) {
        rc = err_set(e, le.code == ERR_IO ? ERR_IO : ERR_INVALID, "%s/plan.json: %s", rep, le.msg);
        goto done;
    }
    if ((replayed = world_replay_rebuild(world, ledger, s, &le)) == NULL) {
        rc = err_set(e, le.code, "%s/ledger.json: %s", rep, le.msg);
        goto done;
    }
    out->ncalls = json_array_size(json_object_get(replayed, "calls"));
    out->neffects = json_array_size(json_object_get(replayed, "effects"));
    out->differs = world_replay_compare(ledger, replayed, &out->diff);
    wa = xcalloc(1, sizeof(*wa));
    wb = xcalloc(1, sizeof(*wb));
    snprintf(rel, sizeof(rel), "%s/%s/ledger.json", run_dir, rep);
    if ((rc = worldcheck_run(world, rel, wa, e)) < 0 ||
        (rc = check_json(world, replayed, wb, e)) < 0)
        goto done;
    if (!out->differs)
        out->differs = verdicts_differ(wa, wb, &out->diff);
    for (size_t i = 0; i < wa->n; i++)
        if (wa->items[i].result == RULE_FAIL) {
            size_t n = strlen(out->failing);
            snprintf(out->failing + n, sizeof(out->failing) - n, "%s%s", n ? ", " : "",
                     wa->items[i].id);
        }
    if (hj) {
        out->hash_known = 1;
        world_replay_digest(world, plan, ledger, &now);
        world_replay_digest_diff(&then, &now, out->changed, sizeof(out->changed));
    }
    out->status = out->differs || out->changed[0] ? REPLAY_DIFFERS : REPLAY_REPRODUCED;
    rc = 0;
done:
    seam_free(s);
    free(wa);
    free(wb);
    json_decref(plan);
    json_decref(ledger);
    json_decref(replayed);
    json_decref(hj);
    return rc;
}
