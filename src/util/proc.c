/*
 * proc: see proc.h.
 *
 * Spawn: the parent builds the child's environment, makes the pipes (close-on-exec) and a
 * status pipe, then forks. The child moves its pipe ends onto 0/1/2, resets signals, enters
 * its own process group, optionally asks for SIGKILL on parent death, changes directory and
 * execs. If anything fails after the fork the child writes {stage, errno} to the status pipe
 * and _exits; the parent reads the status pipe until EOF (the exec closed it) and so knows
 * whether the exec happened before proc_spawn returns.
 *
 * Reaping: struct procs are linked in a process-wide list while live, so whichever function
 * reaps a pid (proc_poll, proc_wait, proc_reap_all) records the status in the right struct.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "util/banned.h"

extern char **environ;

static struct proc *live_procs;

struct child_status {
    char stage; /* 'c' chdir, 'e' exec, 'd' dup2/setup, 'p' pdeathsig */
    int err;
};

static void live_add(struct proc *p)
{
    p->next = live_procs;
    live_procs = p;
}

static void live_remove(struct proc *p)
{
    for (struct proc **pp = &live_procs; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    p->next = NULL;
}

static void record_status(pid_t pid, int status)
{
    for (struct proc *p = live_procs; p; p = p->next) {
        if (p->pid == pid && !p->exited) {
            p->exited = 1;
            p->status = status;
            return;
        }
    }
}

void proc_close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static int name_matches(const char *entry, const char *name, size_t nlen)
{
    return strncmp(entry, name, nlen) == 0 && entry[nlen] == '=';
}

/* environ minus env_del and the names env_add sets, plus env_add. The array is malloc'd; its
 * strings are borrowed from environ and env_add. */
static char **build_env(const struct proc_opts *o)
{
    size_t n = 0, k = 0, nadd = 0;
    char **env;

    for (char **ep = environ; ep && *ep; ep++)
        n++;
    if (o->env_add)
        for (const char *const *a = o->env_add; *a; a++)
            nadd++;
    env = xcalloc(n + nadd + 1, sizeof(*env));
    for (char **ep = environ; ep && *ep; ep++) {
        int drop = 0;
        if (o->env_del)
            for (const char *const *d = o->env_del; *d && !drop; d++)
                drop = name_matches(*ep, *d, strlen(*d));
        if (o->env_add)
            for (const char *const *a = o->env_add; *a && !drop; a++) {
                const char *eq = strchr(*a, '=');
                if (eq)
                    drop = name_matches(*ep, *a, (size_t)(eq - *a));
            }
        if (!drop)
            env[k++] = *ep;
    }
    if (o->env_add)
        for (const char *const *a = o->env_add; *a; a++)
            if (strchr(*a, '='))
                env[k++] = (char *)*a;
    env[k] = NULL;
    return env;
}

static void child_fail(int fd, char stage, int err)
{
    struct child_status st = {stage, err};
    ssize_t w = write(fd, &st, sizeof(st));
    (void)w;
    _exit(127);
}

/* Moves fd to >= 3 when it sits on a standard descriptor it is not meant for. */
static int lift_fd(int fd)
{
    if (fd >= 0 && fd <= 2)
        return fcntl(fd, F_DUPFD_CLOEXEC, 3);
    return fd;
}

static void child_setup_stdio(int target, enum proc_stdio how, int pipe_end, int status_fd)
{
    int fd;

    if (how == PROC_INHERIT)
        return;
    if (how == PROC_NULL) {
        fd = open("/dev/null", target == 0 ? O_RDONLY : O_WRONLY);
        if (fd < 0)
            child_fail(status_fd, 'd', errno);
    } else {
        fd = pipe_end;
    }
    if (fd != target) {
        if (dup2(fd, target) < 0)
            child_fail(status_fd, 'd', errno);
        if (how == PROC_NULL)
            close(fd);
    } else {
        /* Already in place: clear close-on-exec so it survives exec. */
        int fl = fcntl(fd, F_GETFD);
        if (fl >= 0)
            fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC);
    }
}

static void child_run(const struct proc_opts *o, char **env, int pin, int pout, int perr,
                      int status_fd, pid_t parent)
{
    sigset_t all;

    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    if (!o->same_pgroup)
        setpgid(0, 0);
    if (o->die_with_parent) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
            child_fail(status_fd, 'p', errno);
        if (getppid() != parent)
            _exit(127);
    }
    status_fd = lift_fd(status_fd);
    pin = lift_fd(pin);
    pout = lift_fd(pout);
    perr = lift_fd(perr);
    if (status_fd < 0 || (o->in == PROC_PIPE && pin < 0) || (o->out == PROC_PIPE && pout < 0) ||
        (o->err == PROC_PIPE && perr < 0))
        child_fail(status_fd, 'd', errno);
    child_setup_stdio(0, o->in, pin, status_fd);
    child_setup_stdio(1, o->out, pout, status_fd);
    child_setup_stdio(2, o->err, perr, status_fd);
    if (o->cwd && chdir(o->cwd) < 0)
        child_fail(status_fd, 'c', errno);
    execvpe(o->argv[0], (char *const *)o->argv, env);
    child_fail(status_fd, 'e', errno);
}

static int make_pipe(int fds[2], struct err *e)
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return err_set(e, ERR_SYS, "cannot create a pipe: %s", strerror(errno));
    return 0;
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int proc_spawn(struct proc *p, const struct proc_opts *o, struct err *e)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1}, st[2] = {-1, -1};
    struct child_status cs;
    char **env = NULL;
    pid_t pid, parent = getpid();
    ssize_t r;
    int rc = 0;

    memset(p, 0, sizeof(*p));
    p->in_fd = p->out_fd = p->err_fd = -1;
    if (o->argv == NULL || o->argv[0] == NULL || o->argv[0][0] == '\0')
        return err_set(e, ERR_INVALID, "no command to run");
    if ((o->in == PROC_PIPE && make_pipe(in, e) < 0) ||
        (o->out == PROC_PIPE && make_pipe(out, e) < 0) ||
        (o->err == PROC_PIPE && make_pipe(errp, e) < 0) || make_pipe(st, e) < 0) {
        rc = ERR_SYS;
        goto fail;
    }
    env = build_env(o);
    pid = fork();
    if (pid < 0) {
        rc = err_set(e, ERR_SYS, "cannot fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        close(st[0]);
        if (in[1] >= 0)
            close(in[1]);
        if (out[0] >= 0)
            close(out[0]);
        if (errp[0] >= 0)
            close(errp[0]);
        child_run(o, env, in[0], out[1], errp[1], st[1], parent);
    }
    if (!o->same_pgroup)
        setpgid(pid, pid); /* also in the child: whichever runs first wins the race */
    free(env);
    env = NULL;
    close(st[1]);
    st[1] = -1;
    do {
        r = read(st[0], &cs, sizeof(cs));
    } while (r < 0 && errno == EINTR);
    close(st[0]);
    st[0] = -1;
    if (r == (ssize_t)sizeof(cs)) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (cs.stage == 'e' && (cs.err == ENOENT || cs.err == ENOTDIR))
            rc = err_set(e, ERR_NOTFOUND, "cannot run '%s': command not found", o->argv[0]);
        else if (cs.stage == 'e')
            rc = err_set(e, ERR_IO, "cannot run '%s': %s", o->argv[0], strerror(cs.err));
        else if (cs.stage == 'c')
            rc = err_set(e, ERR_IO, "cannot enter directory '%s': %s", o->cwd, strerror(cs.err));
        else
            rc = err_set(e, ERR_SYS, "cannot set up the child for '%s': %s", o->argv[0],
                         strerror(cs.err));
        goto fail;
    }
    p->pid = pid;
    p->pgid = o->same_pgroup ? 0 : pid;
    if (in[0] >= 0)
        close(in[0]);
    if (out[1] >= 0)
        close(out[1]);
    if (errp[1] >= 0)
        close(errp[1]);
    p->in_fd = in[1];
    p->out_fd = out[0];
    p->err_fd = errp[0];
    if (p->in_fd >= 0)
        set_nonblock(p->in_fd);
    if (p->out_fd >= 0)
        set_nonblock(p->out_fd);
    if (p->err_fd >= 0)
        set_nonblock(p->err_fd);
    live_add(p);
    return 0;

fail:
    free(env);
    for (int i = 0; i < 2; i++) {
        proc_close_fd(&in[i]);
        proc_close_fd(&out[i]);
        proc_close_fd(&errp[i]);
        proc_close_fd(&st[i]);
    }
    p->pid = 0;
    return rc;
}

int proc_poll(struct proc *p)
{
    int status;
    pid_t r;

    if (p->exited)
        return 1;
    if (p->pid <= 0)
        return 1;
    do {
        r = waitpid(p->pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == p->pid) {
        p->exited = 1;
        p->status = status;
        return 1;
    }
    if (r < 0 && errno == ECHILD) {
        /* Reaped by someone who did not record it: report it as gone. */
        p->exited = 1;
        p->status = 0;
        return 1;
    }
    return 0;
}

int proc_wait(struct proc *p, int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? 0 : time_mono_ns() + (int64_t)timeout_ms * 1000000;
    int64_t step_us = 200;

    for (;;) {
        if (proc_poll(p))
            return 0;
        if (timeout_ms >= 0 && time_mono_ns() >= deadline)
            return ERR_TIMEOUT;
        usleep((useconds_t)step_us);
        if (step_us < 10000)
            step_us *= 2;
    }
}

int proc_signal(struct proc *p, int sig)
{
    if (p->pid <= 0)
        return ERR_SYS;
    if (p->pgid > 0 && kill(-p->pgid, sig) == 0)
        return 0;
    if (!p->exited && kill(p->pid, sig) == 0)
        return 0;
    return ERR_SYS;
}

int proc_terminate(struct proc *p, int grace_ms)
{
    if (p->pid <= 0)
        return 0;
    if (!proc_poll(p)) {
        proc_signal(p, SIGTERM);
        if (grace_ms > 0)
            proc_wait(p, grace_ms);
    }
    /* The leader may be gone while members of its group (a server's own children) live on. */
    proc_signal(p, SIGKILL);
    if (proc_wait(p, 5000) < 0)
        return ERR_TIMEOUT;
    proc_reap_all();
    return 0;
}

int proc_exit_code(const struct proc *p)
{
    if (!p->exited)
        return -1;
    if (WIFEXITED(p->status))
        return WEXITSTATUS(p->status);
    if (WIFSIGNALED(p->status))
        return 128 + WTERMSIG(p->status);
    return -1;
}

void proc_describe(const struct proc *p, char *out, size_t n)
{
    if (!p->exited)
        snprintf(out, n, "still running");
    else if (WIFEXITED(p->status))
        snprintf(out, n, "exited with status %d", WEXITSTATUS(p->status));
    else if (WIFSIGNALED(p->status))
        snprintf(out, n, "killed by signal %d (%s)", WTERMSIG(p->status),
                 strsignal(WTERMSIG(p->status)));
    else
        snprintf(out, n, "ended with wait status %d", p->status);
}

void proc_release(struct proc *p)
{
    proc_close_fd(&p->in_fd);
    proc_close_fd(&p->out_fd);
    proc_close_fd(&p->err_fd);
    live_remove(p);
}

int proc_become_subreaper(void)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        return ERR_SYS;
    return 0;
}

int proc_reap_all(void)
{
    int n = 0, status;
    pid_t r;

    for (;;) {
        r = waitpid(-1, &status, WNOHANG);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        record_status(r, status);
        n++;
    }
    return n;
}
