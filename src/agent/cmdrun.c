/*
 * cmdrun: one sh -c command with stdin, bounded capture and a timeout (see cmdrun.h).
 *
 * One poll loop over the child's stdin (while input is left), stdout and stderr, waking at
 * least every 50 ms to reap the child. It ends when both output pipes are at EOF and the
 * child has exited, or 200 ms after the exit if a background process keeps a pipe open, or
 * at the timeout (the process group is terminated), or when o->stop is set.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmdrun.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define LINGER_MS 200

void cmdrun_result_init(struct cmdrun_result *r)
{
    memset(r, 0, sizeof(*r));
    buf_init(&r->out, 0);
    buf_init(&r->err, 0);
    r->exit_code = PROC_NO_EXIT_CODE;
}

void cmdrun_result_release(struct cmdrun_result *r)
{
    buf_release(&r->out);
    buf_release(&r->err);
}

/* Reads what is there from *fd into b (up to max kept), counting into *total; closes *fd at
 * EOF or error. */
static void drain(int *fd, struct buf *b, size_t max, uint64_t *total)
{
    char tmp[8192];

    for (;;) {
        ssize_t n = read(*fd, tmp, sizeof(tmp));
        if (n > 0) {
            size_t keep = b->len < max ? max - b->len : 0;
            if (keep > (size_t)n)
                keep = (size_t)n;
            buf_add(b, tmp, keep);
            *total += (uint64_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        proc_close_fd(fd);
        return;
    }
}

ssize_t cmdrun_pipe_write(int fd, const void *p, size_t n)
{
    sigset_t pipe_set, old;
    ssize_t w;
    int saved;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipe_set, &old);
    w = write(fd, p, n);
    saved = errno;
    if (w < 0 && saved == EPIPE && !sigismember(&old, SIGPIPE)) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero); /* drop the SIGPIPE we caused */
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return w;
}

int cmdrun(const struct cmdrun_opts *o, struct cmdrun_result *r, struct err *e)
{
    const char *argv[] = {"sh", "-c", o->command, NULL};
    struct proc_opts po;
    struct proc p;
    size_t max = o->max_output ? o->max_output : (size_t)64 << 10;
    size_t written = 0;
    int64_t start = time_mono_ns(), exited_at = 0;
    int rc;

    memset(&po, 0, sizeof(po));
    po.argv = argv;
    po.env_add = o->env_add;
    po.cwd = o->cwd;
    po.in = o->input ? PROC_PIPE : PROC_NULL;
    po.out = PROC_PIPE;
    po.err = o->merge_stderr ? PROC_STDOUT : PROC_PIPE; /* merged: one pipe keeps the order */
    po.die_with_parent = 1;
    if ((rc = proc_spawn(&p, &po, e)) < 0)
        return rc;
    if (p.in_fd >= 0 && o->input_len == 0)
        proc_close_fd(&p.in_fd);

    for (;;) {
        struct pollfd pfd[3];
        int nf = 0, wait_ms = 50;
        int64_t now = time_mono_ns();

        if (proc_poll(&p) && exited_at == 0)
            exited_at = now;
        if (p.out_fd < 0 && p.err_fd < 0 && p.exited)
            break;
        if (exited_at && (now - exited_at) / 1000000 >= LINGER_MS)
            break;
        if (o->stop && *o->stop) {
            r->interrupted = 1;
            break;
        }
        if ((now - start) / 1000000 >= o->timeout_ms && !p.exited) {
            r->timed_out = 1;
            break;
        }
        if (p.in_fd >= 0)
            pfd[nf++] = (struct pollfd){.fd = p.in_fd, .events = POLLOUT};
        if (p.out_fd >= 0)
            pfd[nf++] = (struct pollfd){.fd = p.out_fd, .events = POLLIN};
        if (p.err_fd >= 0)
            pfd[nf++] = (struct pollfd){.fd = p.err_fd, .events = POLLIN};
        if (nf == 0)
            wait_ms = 5; /* only the reap is left */
        if (poll(pfd, (nfds_t)nf, wait_ms) < 0 && errno != EINTR) {
            err_set(e, ERR_SYS, "poll: %s", strerror(errno));
            break;
        }
        if (p.in_fd >= 0) {
            ssize_t w = cmdrun_pipe_write(p.in_fd, o->input + written, o->input_len - written);
            if (w > 0)
                written += (size_t)w;
            if ((w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
                written == o->input_len)
                proc_close_fd(&p.in_fd); /* all written, or the child stopped reading */
        }
        if (p.out_fd >= 0)
            drain(&p.out_fd, &r->out, max, &r->out_total);
        if (p.err_fd >= 0)
            drain(&p.err_fd, &r->err, max, &r->err_total);
    }
    if (!p.exited)
        proc_terminate(&p, 1000);
    r->exit_code = p.exited ? proc_exit_code(&p) : PROC_NO_EXIT_CODE;
    proc_describe(&p, r->status, sizeof(r->status));
    proc_release(&p);
    return 0;
}
