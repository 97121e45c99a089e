/*
 * workspace: a repetition's /work, a standalone git repository of the project's HEAD, copied
 * from the run's seed now or ahead of time.
 *
 * Once per run, workspace_seed makes the seed: `git init`, a fetch of the HEAD commit one
 * commit deep from the project (one pack, no remote, no host path left in it), and a detached
 * checkout. Each repetition's workspace is a copy of the seed (`cp -R`, which clones the files'
 * extents where the file system can). Unlike `git worktree add`, whose `.git` names the
 * project's `.git/worktrees/` entry (a host path the sandbox cannot see, so every git command
 * inside failed), git works inside /work: status, diff, commit and log (of the one commit).
 * Nothing is written to the project's repository, so nothing is left to prune there, and
 * repetitions run in parallel (--jobs N) copy at once without a lock. A copy is also far
 * cheaper than a checkout (docs/performance.md, "## runner"), and with one repetition at a
 * time the runner makes it while the previous repetition's agent runs (runner.c, rep_begin).
 * Every command runs directly (no shell), with its own process group; its stderr is kept for
 * the error message.
 */
#ifndef FAULTLINE_RUN_WORKSPACE_H
#define FAULTLINE_RUN_WORKSPACE_H

#include "util/err.h"
#include "util/proc.h"

#define WORKSPACE_PATH_MAX 4096
/* How long one command of the seed, or a copy, may take before the repetition fails. */
#define WORKSPACE_TIMEOUT_MS 60000

/* Makes seed (which must not exist) a repository holding commit (its hex name) of project,
 * checked out detached. 0, or ERR_* naming the git command that failed and its stderr. */
int workspace_seed(const char *project, const char *commit, const char *seed, struct err *e);

/* One command under way (a copy begun ahead). */
struct workspace_job {
    struct proc pr; /* never copied: the process list links it */
    int live;       /* 1 between its start and workspace_copy_finish / _cancel */
    char what[32];  /* the command, for the message: "cp", "git fetch" */
    char path[WORKSPACE_PATH_MAX];
};

/* Copies seed to path (which must not exist). 0, or ERR_* naming cp's exit and its stderr
 * (ERR_TIMEOUT after WORKSPACE_TIMEOUT_MS: cp is then ended). */
int workspace_make(const char *seed, const char *path, struct err *e);

/* workspace_make in two halves, so that the copy runs while the caller does other work: the
 * start (0, or ERR_* when cp cannot be started), then the finish, workspace_make's outcome. A
 * copy that is not wanted after all is ended by workspace_copy_cancel, which leaves path to the
 * caller to remove. */
int workspace_copy_start(struct workspace_job *j, const char *seed, const char *path,
                         struct err *e);
int workspace_copy_finish(struct workspace_job *j, struct err *e);
void workspace_copy_cancel(struct workspace_job *j);

#endif
