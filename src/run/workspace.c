/*
 * workspace: a repetition's /work, copied from the run's seed repository (workspace.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "run/workspace.h"
#include "util/buf.h"
#include "util/proc.h"

#include "util/banned.h"

/* What a command wrote on stderr is kept up to this much, for the message. */
#define WORKSPACE_ERR_MAX 4096

/* Starts argv with stderr on a pipe; what names it in a message. */
static int job_start(struct workspace_job *j, const char *const *argv, const char *what,
                     const char *path, struct err *e)
{
    struct proc_opts o;
    int rc;

    memset(&o, 0, sizeof(o));
    o.argv = argv;
    o.in = PROC_NULL;
    o.out = PROC_NULL;
    o.err = PROC_PIPE;
    o.die_with_parent = 1;
    j->live = 0;
    snprintf(j->what, sizeof(j->what), "%s", what);
    snprintf(j->path, sizeof(j->path), "%s", path);
    if ((rc = proc_spawn(&j->pr, &o, e)) != 0)
        return rc;
    j->live = 1;
    return 0;
}

/* Waits up to timeout_ms for j's command: 0 when it succeeded, else ERR_* naming it. */
static int job_finish(struct workspace_job *j, int timeout_ms, struct err *e)
{
    struct buf msg = BUF_INIT;
    char st[96];
    int rc = 0;

    if (!j->live)
        return err_set(e, ERR_INVALID, "no copy under way for %s", j->path);
    j->live = 0;
    if (proc_wait(&j->pr, timeout_ms) != 0) {
        proc_terminate(&j->pr, 500);
        proc_release(&j->pr);
        return err_set(e, ERR_TIMEOUT, "%s %s: no end within %d s", j->what, j->path,
                       timeout_ms / 1000);
    }
    if (proc_exit_code(&j->pr) != 0) {
        /* stderr: what the pipe holds (the command ended, so it is all there up to the pipe's
         * size) */
        char chunk[1024];
        ssize_t n;
        while (msg.len < WORKSPACE_ERR_MAX &&
               ((n = read(j->pr.err_fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR)))
            if (n > 0)
                buf_add(&msg, chunk, (size_t)n);
        while (msg.len && (msg.data[msg.len - 1] == '\n' || msg.data[msg.len - 1] == ' '))
            msg.data[--msg.len] = '\0';
        proc_describe(&j->pr, st, sizeof(st));
        rc = err_set(e, ERR_IO, "%s %s: %s%s%.300s", j->what, j->path, st, msg.len ? ": " : "",
                     msg.len ? msg.data : "");
    }
    proc_release(&j->pr);
    buf_release(&msg);
    return rc;
}

/* Runs argv to its end. */
static int job_run(const char *const *argv, const char *what, const char *path, struct err *e)
{
    struct workspace_job j;
    int rc = job_start(&j, argv, what, path, e);
    return rc ? rc : job_finish(&j, WORKSPACE_TIMEOUT_MS, e);
}

int workspace_seed(const char *project, const char *commit, const char *seed, struct err *e)
{
    /* --template= : no sample hooks, no description; fetch.unpackLimit=1: the commit arrives
     * as one pack, not as a directory per object (fewer files to copy per repetition); no
     * `git maintenance` after the fetch */
    const char *init[] = {"git", "init", "--quiet", "--template=", seed, NULL};
    const char *fetch[] = {"git",
                           "-C",
                           seed,
                           "-c",
                           "fetch.unpackLimit=1",
                           "-c",
                           "maintenance.auto=false",
                           "fetch",
                           "--quiet",
                           "--depth=1",
                           "--no-tags",
                           "--no-write-fetch-head",
                           project,
                           commit,
                           NULL};
    const char *checkout[] = {
        "git",      "-C",      seed,       "-c",   "advice.detachedHead=false",
        "checkout", "--quiet", "--detach", commit, NULL};
    int rc;

    if ((rc = job_run(init, "git init", seed, e)) != 0 ||
        (rc = job_run(fetch, "git fetch", seed, e)) != 0 ||
        (rc = job_run(checkout, "git checkout", seed, e)) != 0)
        return rc;
    return 0;
}

int workspace_copy_start(struct workspace_job *j, const char *seed, const char *path, struct err *e)
{
    /* the files' modes and times (so git's index still matches them), links as links; not
     * their owner or extended attributes: the sandbox hands the tree to its user anyway */
    const char *argv[] = {"cp", "-R", "-P", "--preserve=mode,timestamps", "--reflink=auto", "--",
                          seed, path, NULL};
    return job_start(j, argv, "cp", path, e);
}

int workspace_copy_finish(struct workspace_job *j, struct err *e)
{
    return job_finish(j, WORKSPACE_TIMEOUT_MS, e);
}

void workspace_copy_cancel(struct workspace_job *j)
{
    if (!j->live)
        return;
    j->live = 0;
    proc_terminate(&j->pr, 500);
    proc_release(&j->pr);
}

int workspace_make(const char *seed, const char *path, struct err *e)
{
    struct workspace_job j;
    int rc = workspace_copy_start(&j, seed, path, e);
    return rc ? rc : workspace_copy_finish(&j, e);
}
