/*
 * worktree: a repetition's git worktree, made now or ahead of time (worktree.h).
 */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "run/worktree.h"
#include "util/buf.h"
#include "util/timeutil.h"

#include "util/banned.h"

/* What git wrote on stderr is kept up to this much, for the message. */
#define WORKTREE_ERR_MAX 4096

int worktree_start(struct worktree_job *j, const char *project, const char *path, int index,
                   struct err *e)
{
    const char *argv[] = {"git",     "-C",       project, "worktree", "add",
                          "--quiet", "--detach", path,    "HEAD",     NULL};
    struct proc_opts o;
    int rc;

    memset(&o, 0, sizeof(o));
    o.argv = argv;
    o.in = PROC_NULL;
    o.out = PROC_NULL;
    o.err = PROC_PIPE;
    o.die_with_parent = 1;
    j->live = 0;
    j->index = index;
    snprintf(j->path, sizeof(j->path), "%s", path);
    if ((rc = proc_spawn(&j->pr, &o, e)) != 0)
        return rc;
    j->live = 1;
    return 0;
}

int worktree_finish(struct worktree_job *j, int timeout_ms, struct err *e)
{
    struct buf msg = BUF_INIT;
    char st[96];
    int rc = 0;

    if (!j->live)
        return err_set(e, ERR_INVALID, "no checkout under way for %s", j->path);
    j->live = 0;
    if (proc_wait(&j->pr, timeout_ms) != 0) {
        proc_terminate(&j->pr, 500);
        proc_release(&j->pr);
        return err_set(e, ERR_TIMEOUT, "git worktree add %s: no end within %d s", j->path,
                       timeout_ms / 1000);
    }
    if (proc_exit_code(&j->pr) != 0) {
        /* stderr: what the pipe holds (git ended, so it is all there up to the pipe's size) */
        char chunk[1024];
        ssize_t n;
        while (msg.len < WORKTREE_ERR_MAX &&
               ((n = read(j->pr.err_fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR)))
            if (n > 0)
                buf_add(&msg, chunk, (size_t)n);
        while (msg.len && (msg.data[msg.len - 1] == '\n' || msg.data[msg.len - 1] == ' '))
            msg.data[--msg.len] = '\0';
        proc_describe(&j->pr, st, sizeof(st));
        rc = err_set(e, ERR_IO, "git worktree add %s: %s%s%.300s", j->path, st, msg.len ? ": " : "",
                     msg.len ? msg.data : "");
    }
    proc_release(&j->pr);
    buf_release(&msg);
    return rc;
}

/* Takes the exclusive lock on the file lock_path (made if missing), waiting up to timeout_ms.
 * The open descriptor, or ERR_*. */
static int lock_take(const char *lock_path, int timeout_ms, struct err *e)
{
    int64_t deadline = time_now_ms() + timeout_ms;
    int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

    if (fd < 0)
        return err_set(e, ERR_IO, "%s: %s", lock_path, strerror(errno));
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            int rc = err_set(e, ERR_IO, "%s: %s", lock_path, strerror(errno));
            close(fd);
            return rc;
        }
        if (time_now_ms() >= deadline) {
            close(fd);
            return err_set(e, ERR_TIMEOUT, "%s: another checkout held it for %d s", lock_path,
                           timeout_ms / 1000);
        }
        time_sleep_ms(10);
    }
    return fd;
}

int worktree_add(const char *project, const char *path, const char *lock_path, struct err *e)
{
    struct worktree_job j;
    int lfd = -1, rc;

    if (lock_path && (lfd = lock_take(lock_path, WORKTREE_TIMEOUT_MS, e)) < 0)
        return lfd;
    rc = worktree_start(&j, project, path, 0, e);
    if (rc == 0)
        rc = worktree_finish(&j, WORKTREE_TIMEOUT_MS, e);
    if (lfd >= 0)
        close(lfd); /* the lock goes with the descriptor */
    return rc;
}
