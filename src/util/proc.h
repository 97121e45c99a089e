/*
 * proc: child processes. Spawn an argv with optional pipes on stdin/stdout/stderr, extra
 * environment and a working directory; wait with a timeout; terminate with a grace period
 * (SIGTERM, then SIGKILL); reap, including orphans re-parented to a subreaper.
 *
 * Spawning is fork + exec with a close-on-exec status pipe (git's run-command): a failed exec
 * (ENOENT, EACCES...) is reported to the parent as an error from proc_spawn (or, for a spawn
 * with defer_check, from proc_check), never as a child that exits 127. The child gets default
 * signal dispositions and an empty signal mask (a parent that ignores SIGPIPE does not pass that
 * on), and by default its own process group, so that proc_terminate reaches the grandchildren a
 * wrapper like npx or sh starts.
 *
 * Supervised spawning (proc_opts.supervise) puts a small supervisor between the caller and the
 * child: a fork of the caller (no exec) that is a child subreaper, gets SIGTERM when the caller
 * dies (PR_SET_PDEATHSIG, so even after SIGKILL of the caller), runs the child in its own
 * process group and, once the child has exited (or grace_ms after that SIGTERM), kills the
 * child's group and every descendant re-parented to it, including those that left the group
 * with setsid, reaps them all and exits with the child's status (re-raising its signal). The
 * struct proc then names the supervisor (pid) and the child's group (pgid); its exit status is
 * the child's.
 *
 * Every live struct proc is kept in a process-wide list so that any reaping (proc_wait,
 * proc_reap_all) stores the status in the right struct. Not thread-safe: call from one thread.
 */
#ifndef FAULTLINE_UTIL_PROC_H
#define FAULTLINE_UTIL_PROC_H

#include <sys/types.h>

#include "util/err.h"

/* What to do with one of the child's standard descriptors. */
enum proc_stdio {
    PROC_INHERIT = 0, /* the parent's descriptor */
    PROC_PIPE,        /* a pipe; the parent's end is in struct proc (non-blocking, close-on-exec) */
    PROC_NULL,        /* /dev/null */
    PROC_STDOUT       /* for err only: the child's stdout, whatever it is (2>&1), so that what it
                       * writes to both keeps its order */
};

struct proc_opts {
    const char *const *argv;    /* argv[0] is looked up in PATH when it has no '/' */
    const char *const *env_add; /* NULL or NULL-terminated "NAME=VALUE" set over the environment */
    const char *const *env_del; /* NULL or NULL-terminated names removed from the environment */
    const char *cwd;            /* NULL: the parent's */
    enum proc_stdio in, out, err;
    int same_pgroup;     /* 1: stay in the parent's process group (default: a new group) */
    int die_with_parent; /* 1: the child gets SIGKILL when the parent dies (PR_SET_PDEATHSIG) */
    int supervise;       /* 1: run the child under a supervisor (see above); implies a new group */
    int grace_ms;        /* supervise: SIGTERM to SIGKILL when the caller dies; 0: 1000 */
    int env_clear;       /* 1: start from an empty environment (then env_add), not environ */
    /* NULL, or run in the child just before exec, after the standard descriptors, the group
     * and cwd are set up (the supervised child's, with supervise): joining namespaces, limits,
     * dropping a uid. Only async-signal-safe calls. Returns 0, or an errno value: proc_spawn then
     * fails with ERR_SYS naming it and nothing runs. argv[0] is still looked up in the parent's
     * PATH. */
    int (*before_exec)(void *arg);
    void *before_exec_arg;
    /* 1: proc_spawn returns once the child is forked, without waiting for its exec; the exec's
     * outcome (and before_exec's) is read later by proc_check. For a child that is not needed
     * at once (one waiting at a gate), so that what before_exec costs (joining a cgroup: a
     * grace period of the kernel's RCU on cgroup v1) is not the caller's wait. Not with
     * supervise. */
    int defer_check;
};

struct proc {
    pid_t pid;           /* 0 before spawn */
    pid_t pgid;          /* the child's group (== pid, or the supervised child's pid), or 0 when it
                          * shares the parent's */
    int supervised;      /* 1: pid is the supervisor's */
    int in_fd;           /* parent's write end of the child's stdin, or -1 */
    int out_fd;          /* parent's read end of the child's stdout, or -1 */
    int err_fd;          /* parent's read end of the child's stderr, or -1 */
    int exited;          /* 1 once reaped */
    int checking;        /* 1 while a defer_check spawn's outcome is unread (in check_fd) */
    int check_fd;        /* with checking: the status pipe's read end */
    char check_name[64]; /* with checking: argv[0], for proc_check's message */
    int status;          /* raw wait status, valid when exited */
    struct proc *next;   /* the live list (internal) */
};

/* Starts o->argv. p is caller-owned storage; on success it is live until proc_release. ERR_SYS
 * when fork or pipe fails, ERR_NOTFOUND when argv[0] does not exist, ERR_IO when it cannot be
 * executed or cwd cannot be entered; e says which and why. On failure nothing is left running
 * and no descriptor is left open. */
int proc_spawn(struct proc *p, const struct proc_opts *o, struct err *e);

/* The outcome of a defer_check spawn: waits up to timeout_ms for the child's exec, and returns 0
 * once it ran (or when p was not spawned with defer_check), or proc_spawn's errors (ERR_SYS,
 * ERR_NOTFOUND, ERR_IO) with the child reaped, or ERR_TIMEOUT (the child is left to the caller,
 * still checking). */
int proc_check(struct proc *p, int timeout_ms, struct err *e);

/* Reaps p if it has exited, without waiting. 1 when exited (now or before), 0 when running. */
int proc_poll(struct proc *p);

/* Waits up to timeout_ms (negative: forever) for p to exit. 0 when exited, ERR_TIMEOUT. */
int proc_wait(struct proc *p, int timeout_ms);

/* Sends sig to p's process group (or to p alone when it shares the parent's group). A
 * supervised child that left its group is reached through the supervisor, which is only ever
 * sent SIGTERM (it then ends the whole tree). 0, or ERR_SYS when nothing could be signalled
 * (e.g. the group is gone). */
int proc_signal(struct proc *p, int sig);

/* Ends p: SIGTERM to its group, up to grace_ms for it to exit, then SIGKILL to the group and a
 * bounded wait (5 s) for the reap. Members of the group still alive after the leader exited are
 * killed too. Returns 0 when p has been reaped, ERR_TIMEOUT if even SIGKILL did not end it. */
int proc_terminate(struct proc *p, int grace_ms);

/* No exit status yet (or none the shell could name): what proc_exit_code returns then. An exit
 * status, not an ERR_* code. */
#define PROC_NO_EXIT_CODE (-1)

/* The shell's view of p's status: the exit code (0..255), or 128 + signal number;
 * PROC_NO_EXIT_CODE while running. Not an error code. */
int proc_exit_code(const struct proc *p);

/* Closes the parent's pipe ends (idempotent), and forgets p. Does not kill or wait: call
 * proc_terminate first if p may still run. */
void proc_release(struct proc *p);

/* Closes one pipe end of p and sets it to -1 (e.g. in_fd to give the child EOF). */
void proc_close_fd(int *fd);

/* Makes this process a child subreaper (PR_SET_CHILD_SUBREAPER): orphaned descendants are
 * re-parented here and reaped by proc_reap_all instead of escaping to init. 0 or ERR_SYS. */
int proc_become_subreaper(void);

/* Reaps every child that has exited (waitpid(-1, WNOHANG)); statuses of live struct procs are
 * stored in them, others (orphans) are discarded. Returns how many were reaped. Safe to call
 * any time, e.g. on SIGCHLD. */
int proc_reap_all(void);

/* Describes a status for messages: "exited with status 3", "killed by signal 9 (Killed)". */
void proc_describe(const struct proc *p, char *out, size_t n);

#endif
