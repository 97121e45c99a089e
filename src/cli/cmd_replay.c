/*
 * cmd_replay: `faultline replay RUN_DIR [--rep N]` (docs/world.md, "Replay"): rebuilds each
 * repetition's world from its recorded calls and the faults of its plan (src/run/replay.c) and
 * prints one line per repetition, reproduced or where it differs. Exit 0 when every repetition
 * with a ledger reproduced, 3 when one differs, 2 for bad input, 1 when stdout or the
 * temporary folder cannot be written.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "run/replay.h"
#include "score/rundir.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/num.h"
#include "util/opt.h"
#include "util/banned.h"

#define REPLAY_EXIT_DIFFERS 3
#define REPS_MAX 1000

struct repname {
    long long index;
    char name[32];
};

static int by_index(const void *a, const void *b)
{
    const struct repname *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* The repetition folders of dir (rep- and at least three digits), sorted; ERR_* when it
 * cannot be read or holds too many. */
static int list_reps(const char *dir, struct repname *out, size_t *n)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    *n = 0;
    if (d == NULL)
        return ERR_IO;
    while ((de = readdir(d)) != NULL) {
        const char *p = de->d_name;
        long long i;
        if (strncmp(p, "rep-", 4) != 0 || strlen(p + 4) < 3 || strlen(p) >= sizeof(out->name) ||
            strspn(p + 4, "0123456789") != strlen(p + 4) || num_parse_ll(p + 4, 0, 1000000, &i) < 0)
            continue;
        if (*n >= REPS_MAX) {
            closedir(d);
            return ERR_LIMIT;
        }
        out[*n].index = i;
        memcpy(out[*n].name, p, strlen(p) + 1); /* shorter than name: checked above */
        (*n)++;
    }
    closedir(d);
    qsort(out, *n, sizeof(*out), by_index);
    return 0;
}

int cmd_replay(int argc, char **argv)
{
    struct repname *reps = NULL;
    struct err e = {0};
    json_t *run = NULL, *world;
    int nargs, rc, rep = -1, missing, replayed = 0, bad = 0, differs = 0, failed = 0;
    size_t n = 0;
    const struct opt opts[] = {
        OPT_INT("rep", "N", &rep, 0, 1000000, "only repetition N (the plan's rep, rep-N's folder)"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "replay",
        .usage = "RUN_DIR [--rep N]",
        .about = "Rebuilds each repetition's world from the calls its ledger recorded and the\n"
                 "faults of its plan, and compares the ledger, the results and the invariant\n"
                 "verdicts with the recorded ones, and the files with the hashes the run\n"
                 "recorded. Exit 0 when every repetition reproduced (a failing outcome too),\n"
                 "3 when one differs (the first differing call is named), 2 for bad input.\n",
        .opts = opts,
        .min_args = 1,
        .max_args = 1,
        .example = "replay runs/payments-20261201-1200 --rep 1",
        .doc = "docs/world.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (log_level > LOG_LEVEL_ERROR)
        log_level = LOG_LEVEL_ERROR; /* a replayed fault's warnings are the run's, not news */
    run = rundir_load_json(argv[0], "run.json", "run.json", (size_t)64 << 20, &missing, &e);
    if (run == NULL) {
        fprintf(stderr, "faultline replay: %s: %s\n", argv[0],
                missing ? "no run.json: not a run folder" : e.msg);
        return EXIT_INVALID;
    }
    world = json_object_get(json_object_get(run, "experiment"), "world");
    if (!json_is_object(world)) {
        fprintf(stderr, "faultline replay: %s: the experiment has no world: nothing to replay\n",
                argv[0]);
        rc = EXIT_INVALID;
        goto done;
    }
    reps = xcalloc(REPS_MAX, sizeof(*reps));
    if (list_reps(argv[0], reps, &n) < 0) {
        fprintf(stderr, "faultline replay: %s: cannot list its repetitions\n", argv[0]);
        rc = EXIT_INVALID;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        struct replay_rep r;
        if (rep >= 0 && reps[i].index != rep)
            continue;
        err_clear(&e);
        if (replay_rep(argv[0], reps[i].name, world, &r, &e) < 0) {
            printf("%-8s error: %s\n", reps[i].name, e.msg);
            if (e.code == ERR_SYS)
                failed++;
            else
                bad++;
            continue;
        }
        if (r.status == REPLAY_NO_LEDGER) {
            printf("%-8s no ledger.json: nothing to replay\n", reps[i].name);
            if (rep >= 0)
                bad++;
            continue;
        }
        replayed++;
        if (r.status == REPLAY_REPRODUCED) {
            printf("%-8s reproduced: %zu call%s, %zu effect%s, invariants %s%s%s\n", reps[i].name,
                   r.ncalls, r.ncalls == 1 ? "" : "s", r.neffects, r.neffects == 1 ? "" : "s",
                   r.failing[0] ? "failing: " : "all hold", r.failing,
                   r.hash_known ? "" : " (no " REPLAY_HASH_FILE ": files not checked)");
            continue;
        }
        differs++;
        printf("%-8s differs", reps[i].name);
        if (r.differs && r.diff.call > 0)
            printf(" at call %llu (%s): %s", (unsigned long long)r.diff.call, r.diff.tool,
                   r.diff.what);
        else if (r.differs)
            printf(": %s", r.diff.what);
        if (r.changed[0])
            printf("%s changed since the run: %s (" REPLAY_HASH_FILE ")", r.differs ? ";" : ":",
                   r.changed);
        putchar('\n');
    }
    if (rep >= 0 && replayed == 0 && bad == 0) {
        fprintf(stderr, "faultline replay: %s: no repetition %d\n", argv[0], rep);
        bad++;
    } else if (replayed == 0 && bad == 0) {
        fprintf(stderr, "faultline replay: %s: no repetition has a ledger.json\n", argv[0]);
        bad++;
    }
    rc = cli_stdout_status("replay");
    if (rc == EXIT_OK)
        rc = failed ? EXIT_FAIL : bad ? EXIT_INVALID : differs ? REPLAY_EXIT_DIFFERS : EXIT_OK;
done:
    free(reps);
    json_decref(run);
    return rc;
}
