/*
 * worktree: a repetition's git worktree (`git worktree add --detach PATH HEAD`), made now or
 * ahead of time.
 *
 * A checkout is the largest fixed cost of a repetition (docs/performance.md, "## runner"). With
 * one repetition at a time, the runner starts the next repetition's checkout while the current
 * agent runs (worktree_start) and collects it when that repetition begins (worktree_finish), so
 * it leaves the critical path. git runs directly (no shell), in the project, with its own
 * process group; its stderr is kept for the error message.
 */
#ifndef FAULTLINE_RUN_WORKTREE_H
#define FAULTLINE_RUN_WORKTREE_H

#include "util/err.h"
#include "util/proc.h"

#define WORKTREE_PATH_MAX 4096
/* How long a checkout may take before the repetition fails. */
#define WORKTREE_TIMEOUT_MS 60000

struct worktree_job {
    struct proc pr; /* never copied: the process list links it */
    int live;       /* 1 between worktree_start and worktree_finish */
    int index;      /* the repetition it is for */
    char path[WORKTREE_PATH_MAX];
};

/* Starts `git worktree add --quiet --detach path HEAD` in project, for repetition index. 0, or
 * ERR_* when git could not start (j stays not live). */
int worktree_start(struct worktree_job *j, const char *project, const char *path, int index,
                   struct err *e);

/* Waits up to timeout_ms for j's checkout. 0 when it succeeded; ERR_IO naming git's exit and
 * its stderr, or ERR_TIMEOUT (git is then ended). j is not live afterwards. */
int worktree_finish(struct worktree_job *j, int timeout_ms, struct err *e);

/* worktree_start then worktree_finish. Two `git worktree add` at once in one project race (each
 * reads the other's half-made .git/worktrees entry and fails), so runners that check out in
 * parallel (--jobs N) name one lock file: the checkout holds an exclusive flock on it, waiting
 * up to WORKTREE_TIMEOUT_MS for it. lock_path NULL: no lock. */
int worktree_add(const char *project, const char *path, const char *lock_path, struct err *e);

#endif
