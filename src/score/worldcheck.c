/*
 * worldcheck: see worldcheck.h.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "score/repscan.h"
#include "score/rundir.h"
#include "score/worldcheck.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

#define LEDGER_MAX ((size_t)64 << 20)

static void put(struct worldcheck *out, const char *id, const struct rule_out *o,
                const json_t *effects, const json_t *calls)
{
    struct worldcheck_item *it;

    if (out->n >= WORLDCHECK_MAX)
        return;
    it = &out->items[out->n++];
    memset(it, 0, sizeof(*it));
    snprintf(it->id, sizeof(it->id), "%s", id);
    it->result = o->result;
    snprintf(it->reason, sizeof(it->reason), "%s", o->reason);
    it->effect_index = -1;
    it->call_index = -1;
    if (o->result == RULE_FAIL && o->ev.kind == EVID_LEDGER_CALL) {
        const json_t *c = json_array_get(calls, (size_t)o->ev.index);
        const char *tool = json_string_value(json_object_get(c, "tool"));
        it->call_index = o->ev.index;
        it->call = (long)json_integer_value(json_object_get(c, "call"));
        snprintf(it->call_tool, sizeof(it->call_tool), "%s", tool ? tool : "");
    }
    if (o->result == RULE_FAIL && o->ev.kind == EVID_LEDGER) {
        const char *eid;
        it->effect_index = o->ev.index;
        eid = json_string_value(
            json_object_get(json_array_get(effects, (size_t)o->ev.index), "effect_id"));
        snprintf(it->effect_id, sizeof(it->effect_id), "%s", eid ? eid : "");
    }
    if (o->result == RULE_FAIL)
        out->failed = 1;
}

int worldcheck_run(const json_t *world, const char *ledger, struct worldcheck *out, struct err *e)
{
    static const enum rules_inv_id general[] = {RULES_INV_NO_DUPLICATE, RULES_INV_NO_UNINTENDED,
                                                RULES_INV_WORLD_MATCHES, RULES_INV_IDEMPOTENCY};
    struct rundir *r = NULL;
    struct rundir_rep rep;
    struct repsum *sum = NULL;
    struct repscan *s = NULL;
    struct stat st;
    struct buf b = BUF_INIT;
    json_t *lj = NULL;
    char *copy = NULL, root[PATH_MAX], dirpath[PATH_MAX], file[64];
    int rc;

    memset(out, 0, sizeof(*out));
    memset(&rep, 0, sizeof(rep));
    /* the ledger's folder is the repetition's: the scorer reads ROOT/DIR/ledger.json, beneath
     * ROOT, the folder's parent */
    if (stat(ledger, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(dirpath, sizeof(dirpath), "%s", ledger);
    } else {
        copy = xstrdup(ledger);
        if (strcmp(basename(copy), "ledger.json") != 0) {
            rc = err_set(e, ERR_INVALID,
                         "'%s': expected a file named ledger.json or a folder holding one", ledger);
            goto done;
        }
        free(copy);
        copy = xstrdup(ledger);
        snprintf(dirpath, sizeof(dirpath), "%s", dirname(copy));
    }
    if (realpath(dirpath, root) == NULL) {
        rc = err_set(e, ERR_IO, "cannot open '%s'", ledger);
        goto done;
    }
    {
        char *slash = strrchr(root, '/');
        if (slash == NULL || strlen(slash + 1) == 0 || strlen(slash + 1) >= sizeof(rep.dir)) {
            rc = err_set(e, ERR_INVALID, "'%s': the ledger's folder needs a name of 1 to %zu bytes",
                         ledger, sizeof(rep.dir) - 1);
            goto done;
        }
        snprintf(rep.dir, sizeof(rep.dir), "%s", slash + 1);
        *slash = '\0';
        if (root[0] == '\0')
            snprintf(root, sizeof(root), "/");
    }
    snprintf(file, sizeof(file), "%s/ledger.json", rep.dir);
    rep.root = root;
    rep.path = root;
    rep.has_ledger = 1;
    if ((rc = fs_read_file_beneath(root, file, LEDGER_MAX, &b, e)) < 0)
        goto done;
    lj = json_loadb(b.data, b.len, 0, NULL);

    r = xcalloc(1, sizeof(*r));
    if ((rc = rundir_parse_world(r, (json_t *)world, e)) < 0)
        goto done;
    if (r->world_expected_known) {
        memcpy(rep.expected, r->world_expected, sizeof(rep.expected));
        rep.nexpected = r->nworld_expected;
        rep.expected_known = 1;
    }
    sum = xcalloc(1, sizeof(*sum));
    s = repscan_new();
    if ((rc = repscan_begin(s, r, &rep, sum, e)) < 0 || (rc = repscan_end(s, e)) < 0)
        goto done;
    out->effects = sum->ledger_effects;
    json_t *effects = json_is_array(lj) ? lj : json_object_get(lj, "effects");
    json_t *calls = json_object_get(lj, "calls");
    for (size_t i = 0; i < sizeof(general) / sizeof(general[0]); i++) {
        struct rule_out o;
        memset(&o, 0, sizeof(o));
        rules_invariant(r, &rep, sum, general[i], &o);
        put(out, rules_inv_name(general[i]), &o, effects, calls);
    }
    for (size_t k = 0; k < r->ninvs; k++) {
        struct rule_out o;
        memset(&o, 0, sizeof(o));
        rules_world_invariant(r, &rep, sum, k, &o);
        put(out, rules_world_kind_name((int)r->invs[k].kind), &o, effects, calls);
    }
    rc = 0;
done:
    repscan_free(s);
    free(sum);
    if (r)
        rundir_release(r);
    free(r);
    json_decref(lj);
    buf_release(&b);
    free(copy);
    return rc;
}
