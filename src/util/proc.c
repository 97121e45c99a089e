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
 * Supervised spawn: the forked child becomes the supervisor (supervisor_run) instead of
 * exec'ing. It is a subreaper with PDEATHSIG SIGTERM, forks the real child (child_run, with the
 * supervisor as its parent), writes {'g', child pid} to the status pipe and closes every
 * descriptor it holds, so that only the real child keeps the pipes (and the status pipe until
 * its exec). It then waits, signals blocked, in sigwaitinfo:
 *
 *   child reaped            -> sweep, exit with the child's status
 *   SIGTERM (caller died)   -> SIGTERM to the child's group and the child; grace_ms later sweep
 *   orphan reaped           -> keep waiting
 *
 * The sweep repeats {SIGKILL the child's group, SIGKILL every process whose parent is the
 * supervisor (found in /proc), reap one} until no child is left: killing an orphan re-parents
 * its own children to the supervisor, so the whole subtree goes, setsid or not.
 *
 * Reaping: struct procs are linked in a process-wide list while live, so whichever function
 * reaps a pid (proc_poll, proc_wait, proc_reap_all) records the status in the right struct.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/num.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "util/banned.h"

extern char **environ;

static struct proc *live_procs;

struct child_status {
    char stage; /* 'c' chdir, 'b' before_exec, 'e' exec, 'd' dup2/setup, 'p' prctl, 's' supervisor's
                 * fork; 'g' (not a failure): err is the supervised child's pid */
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

    for (char **ep = environ; ep && *ep && !o->env_clear; ep++)
        n++;
    if (o->env_add)
        for (const char *const *a = o->env_add; *a; a++)
            nadd++;
    env = xcalloc(n + nadd + 1, sizeof(*env));
    for (char **ep = environ; ep && *ep && !o->env_clear; ep++) {
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
    if (o->err == PROC_STDOUT) {
        if (dup2(1, 2) < 0)
            child_fail(status_fd, 'd', errno);
    } else {
        child_setup_stdio(2, o->err, perr, status_fd);
    }
    if (o->cwd && chdir(o->cwd) < 0)
        child_fail(status_fd, 'c', errno);
    if (o->before_exec) {
        int err = o->before_exec(o->before_exec_arg);
        if (err)
            child_fail(status_fd, 'b', err);
    }
    execvpe(o->argv[0], (char *const *)o->argv, env);
    child_fail(status_fd, 'e', errno);
}

#define SUPERVISOR_SWEEP_MAX 100000

/* The parent pid in /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may hold anything, so
 * the fields are taken after the last ')'), or STAT_NO_PID (-1: unreadable or malformed; a pid,
 * not an error code, and never a real parent's). */
#define STAT_NO_PID ((pid_t)-1)

static pid_t stat_ppid(const char *pid)
{
    char path[300], text[512], num[24];
    const char *p;
    long long v;
    ssize_t n;
    size_t k = 0;
    int fd;

    snprintf(path, sizeof(path), "/proc/%s/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return STAT_NO_PID;
    n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0)
        return STAT_NO_PID;
    text[n] = '\0';
    p = strrchr(text, ')');
    if (p == NULL || p[1] != ' ' || p[2] == '\0' || p[3] != ' ')
        return STAT_NO_PID;
    for (p += 4; *p >= '0' && *p <= '9' && k < sizeof(num) - 1; p++)
        num[k++] = *p;
    num[k] = '\0';
    if (num_parse_ll(num, 0, 1LL << 30, &v) < 0)
        return STAT_NO_PID;
    return (pid_t)v;
}

/* SIGKILL to every process whose parent is self. */
static void kill_children(pid_t self)
{
    DIR *d = opendir("/proc");
    struct dirent *de;

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        long long v;
        if (num_parse_ll(de->d_name, 1, 1LL << 30, &v) < 0)
            continue;
        if (stat_ppid(de->d_name) == self)
            kill((pid_t)v, SIGKILL);
    }
    closedir(d);
}

/* Kills the child's group and every descendant re-parented here, reaping them, until this
 * process has no child left. The child's status goes into *status when it is reaped here. */
static void supervisor_sweep(pid_t child, pid_t self, int *status, int *have)
{
    for (int round = 0; round < SUPERVISOR_SWEEP_MAX; round++) {
        pid_t r;
        int ws;
        kill(-child, SIGKILL);
        kill_children(self);
        do {
            r = waitpid(-1, &ws, 0);
        } while (r < 0 && errno == EINTR);
        if (r < 0)
            return; /* ECHILD: nothing left */
        if (r == child && !*have) {
            *status = ws;
            *have = 1;
        }
    }
}

/* Ends the supervisor the way the child ended: its exit code, or its signal re-raised. */
static void supervisor_exit(int status, int have)
{
    sigset_t none;

    if (have && WIFEXITED(status))
        _exit(WEXITSTATUS(status));
    if (have && WIFSIGNALED(status)) {
        struct rlimit nocore = {0, 0};
        int sig = WTERMSIG(status);
        setrlimit(RLIMIT_CORE, &nocore);
        signal(sig, SIG_DFL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        raise(sig);
        _exit(128 + sig);
    }
    _exit(have ? 1 : 128 + SIGKILL);
}

static void supervisor_run(const struct proc_opts *o, char **env, int pin, int pout, int perr,
                           int status_fd, pid_t parent)
{
    struct proc_opts co = *o;
    struct child_status rec;
    sigset_t set;
    pid_t self = getpid(), child;
    int64_t deadline = 0;
    int grace_ms = o->grace_ms > 0 ? o->grace_ms : 1000;
    int status = 0, have = 0, term = 0, fd;
    ssize_t w;

    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    /* The caller forwards what it means to the child; a terminal's ^C is not for us. */
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_SETMASK, &set, NULL);
    setpgid(0, 0);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
        child_fail(status_fd, 'p', errno);
    if (getppid() != parent)
        _exit(127);
    child = fork();
    if (child < 0)
        child_fail(status_fd, 's', errno);
    if (child == 0) {
        co.supervise = 0;
        co.same_pgroup = 0;
        child_run(&co, env, pin, pout, perr, status_fd, self);
    }
    setpgid(child, child);
    rec.stage = 'g';
    rec.err = (int)child;
    w = write(status_fd, &rec, sizeof(rec));
    (void)w;
    /* Hold nothing of the caller's: not the pipes (their EOF is the child's), not the status
     * pipe (its EOF is the exec), not the caller's stdin/stdout/stderr or other files. */
    fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
    }
    if (close_range(3, ~0U, 0) < 0)
        for (int i = 3; i < 4096; i++)
            close(i);

    for (;;) {
        pid_t r;
        int ws, sig;
        if (term) {
            int64_t left = deadline - time_mono_ns();
            struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
            if (left <= 0)
                break; /* the child ignored SIGTERM */
            sig = sigtimedwait(&set, NULL, &ts);
        } else {
            sig = sigwaitinfo(&set, NULL);
        }
        while ((r = waitpid(-1, &ws, WNOHANG)) > 0) {
            if (r == child) {
                status = ws;
                have = 1;
            }
        }
        if (have)
            break;
        if (sig == SIGTERM && !term) {
            term = 1;
            kill(-child, SIGTERM);
            kill(child, SIGTERM);
            deadline = time_mono_ns() + (int64_t)grace_ms * 1000000;
        }
    }
    supervisor_sweep(child, self, &status, &have);
    supervisor_exit(status, have);
}

/* Reads a spawn's status records until EOF (the child's exec closes the pipe): a supervisor's
 * {'g', pid} into *gpid, and the first failure into *cs. Returns the number of failures. */
static int read_status(int fd, struct child_status *cs, pid_t *gpid)
{
    struct child_status rec;
    int failed = 0;
    ssize_t r;

    for (;;) {
        do {
            r = read(fd, &rec, sizeof(rec));
        } while (r < 0 && errno == EINTR);
        if (r != (ssize_t)sizeof(rec))
            break;
        if (rec.stage == 'g')
            *gpid = (pid_t)rec.err;
        else if (!failed++)
            *cs = rec;
    }
    return failed;
}

/* The error of a child that failed at cs's stage, for argv0 (cwd: its directory, or NULL). */
static int status_error(const struct child_status *cs, const char *argv0, const char *cwd,
                        struct err *e)
{
    if (cs->stage == 'e' && (cs->err == ENOENT || cs->err == ENOTDIR))
        return err_set(e, ERR_NOTFOUND, "cannot run '%s': command not found", argv0);
    if (cs->stage == 'e')
        return err_set(e, ERR_IO, "cannot run '%s': %s", argv0, strerror(cs->err));
    if (cs->stage == 'b')
        return err_set(e, ERR_SYS, "cannot prepare '%s': %s", argv0, strerror(cs->err));
    if (cs->stage == 'c')
        return err_set(e, ERR_IO, "cannot enter directory '%s': %s", cwd ? cwd : "(its own)",
                       strerror(cs->err));
    return err_set(e, ERR_SYS, "cannot set up the child for '%s': %s", argv0, strerror(cs->err));
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
    pid_t gpid = 0;
    int failed = 0;
    pid_t pid, parent = getpid();
    int rc = 0;

    memset(p, 0, sizeof(*p));
    p->in_fd = p->out_fd = p->err_fd = p->check_fd = -1;
    if (o->argv == NULL || o->argv[0] == NULL || o->argv[0][0] == '\0')
        return err_set(e, ERR_INVALID, "no command to run");
    if (o->defer_check && o->supervise)
        return err_set(e, ERR_INVALID, "a supervised spawn cannot defer its check");
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
        if (o->supervise)
            supervisor_run(o, env, in[0], out[1], errp[1], st[1], parent);
        child_run(o, env, in[0], out[1], errp[1], st[1], parent);
    }
    if (!o->same_pgroup || o->supervise)
        setpgid(pid, pid); /* also in the child: whichever runs first wins the race */
    free(env);
    env = NULL;
    close(st[1]);
    st[1] = -1;
    if (o->defer_check) { /* the outcome is proc_check's to read */
        p->checking = 1;
        p->check_fd = st[0];
        st[0] = -1;
        snprintf(p->check_name, sizeof(p->check_name), "%s", o->argv[0]);
        goto started;
    }
    failed = read_status(st[0], &cs, &gpid);
    close(st[0]);
    st[0] = -1;
    if (!failed && o->supervise && gpid <= 0) {
        failed = 1;
        cs.stage = 's';
        cs.err = ECHILD;
    }
    if (failed) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        rc = status_error(&cs, o->argv[0], o->cwd, e);
        goto fail;
    }
started:
    p->pid = pid;
    p->pgid = o->supervise ? gpid : o->same_pgroup ? 0 : pid;
    p->supervised = o->supervise;
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

int proc_check(struct proc *p, int timeout_ms, struct err *e)
{
    struct pollfd pf;
    struct child_status cs;
    pid_t gpid = 0;
    int failed, rc;

    if (!p->checking)
        return 0;
    pf.fd = p->check_fd;
    pf.events = POLLIN;
    do
        rc = poll(&pf, 1, timeout_ms);
    while (rc < 0 && errno == EINTR);
    if (rc == 0)
        return err_set(e, ERR_TIMEOUT, "'%s' did not start within %d ms", p->check_name,
                       timeout_ms);
    failed = read_status(p->check_fd, &cs, &gpid);
    proc_close_fd(&p->check_fd);
    p->checking = 0;
    if (!failed)
        return 0;
    /* it exits right after the record: reaped here, so that it is known to have ended */
    while (!p->exited) {
        int status;
        pid_t r = waitpid(p->pid, &status, 0);
        if (r == p->pid) {
            p->exited = 1;
            p->status = status;
        } else if (r < 0 && errno != EINTR) {
            p->exited = 1;
        }
    }
    return status_error(&cs, p->check_name, NULL, e);
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

/* Woken by the child's exit through a pidfd (it becomes readable then), so that the wait ends
 * when the child does, not at the next step of a sleep; where the kernel has no pidfd_open,
 * sleeps of 0.2 ms doubling to 10 ms. */
int proc_wait(struct proc *p, int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? 0 : time_mono_ns() + (int64_t)timeout_ms * 1000000;
    int64_t step_us = 200;
    int fd = -1, rc;

    if (proc_poll(p))
        return 0;
#ifdef SYS_pidfd_open
    if (p->pid > 0)
        fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
#endif
    for (;;) {
        int64_t now;
        if (proc_poll(p)) {
            rc = 0;
            break;
        }
        now = time_mono_ns();
        if (timeout_ms >= 0 && now >= deadline) {
            rc = ERR_TIMEOUT;
            break;
        }
        if (fd >= 0) {
            /* at most 100 ms a poll: proc_poll decides, the pidfd only wakes */
            int64_t left = timeout_ms < 0 ? 100 : (deadline - now) / 1000000 + 1;
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            poll(&pf, 1, (int)(left > 100 ? 100 : left));
        } else {
            usleep((useconds_t)step_us);
            if (step_us < 10000)
                step_us *= 2;
        }
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

int proc_signal(struct proc *p, int sig)
{
    if (p->pid <= 0)
        return ERR_SYS;
    if (p->pgid > 0 && kill(-p->pgid, sig) == 0)
        return 0;
    /* A supervisor told SIGTERM ends the whole tree; SIGKILL would leave the tree behind. */
    if (!p->exited && kill(p->pid, p->supervised ? SIGTERM : sig) == 0)
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
        return PROC_NO_EXIT_CODE;
    if (WIFEXITED(p->status))
        return WEXITSTATUS(p->status);
    if (WIFSIGNALED(p->status))
        return 128 + WTERMSIG(p->status);
    return PROC_NO_EXIT_CODE;
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
    if (p->checking)
        proc_close_fd(&p->check_fd);
    p->checking = 0;
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
