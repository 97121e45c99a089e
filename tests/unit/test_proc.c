/* Unit tests for src/util/proc: spawn with pipes, env and cwd; exec failures; wait with a
 * timeout; terminate with escalation; process-group kill; signal reset; reaping orphans;
 * supervised children (the whole tree ends with the child, or with a caller killed -9);
 * deferred checks of a spawn's exec. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/num.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "util/banned.h"

/* Reads fd (non-blocking) until EOF or 5 s pass. */
static void read_all(int fd, struct buf *out)
{
    int64_t deadline = time_mono_ns() + 5000000000LL;
    char tmp[4096];

    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        ssize_t r;
        assert_true(time_mono_ns() < deadline);
        poll(&pfd, 1, 100);
        r = read(fd, tmp, sizeof(tmp));
        if (r == 0)
            return;
        if (r < 0) {
            assert_true(errno == EAGAIN || errno == EINTR);
            continue;
        }
        buf_add(out, tmp, (size_t)r);
    }
}

static void test_pipes_and_exit_code(void **state)
{
    const char *argv[] = {"sh", "-c", "read x; echo \"got $x\"; echo oops >&2; exit 3", NULL};
    struct proc_opts o = {.argv = argv, .in = PROC_PIPE, .out = PROC_PIPE, .err = PROC_PIPE};
    struct proc p;
    struct buf out = BUF_INIT, err = BUF_INIT;
    struct err e = {0};

    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    assert_true(p.pid > 0);
    assert_int_equal(p.pgid, p.pid);
    assert_true(fcntl(p.out_fd, F_GETFL) & O_NONBLOCK);
    assert_true(fcntl(p.in_fd, F_GETFD) & FD_CLOEXEC);
    assert_int_equal(write(p.in_fd, "hi\n", 3), 3);
    proc_close_fd(&p.in_fd);
    read_all(p.out_fd, &out);
    read_all(p.err_fd, &err);
    assert_string_equal(out.data, "got hi\n");
    assert_string_equal(err.data, "oops\n");
    assert_int_equal(proc_wait(&p, 5000), 0);
    assert_int_equal(proc_exit_code(&p), 3);
    proc_release(&p);
    assert_int_equal(p.out_fd, -1);
    buf_release(&out);
    buf_release(&err);
}

static void test_env_and_cwd(void **state)
{
    const char *argv[] = {"sh", "-c", "echo \"$FL_A:${FL_GONE-unset}:$FL_KEEP:$(pwd)\"", NULL};
    const char *add[] = {"FL_A=one", "FL_KEEP=new", NULL};
    const char *del[] = {"FL_GONE", NULL};
    struct proc_opts o = {
        .argv = argv, .env_add = add, .env_del = del, .cwd = "/tmp", .out = PROC_PIPE};
    struct proc p;
    struct buf out = BUF_INIT;
    struct err e = {0};

    setenv("FL_GONE", "present", 1);
    setenv("FL_KEEP", "old", 1);
    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    read_all(p.out_fd, &out);
    assert_string_equal(out.data, "one:unset:new:/tmp\n");
    assert_int_equal(proc_wait(&p, 5000), 0);
    assert_int_equal(proc_exit_code(&p), 0);
    proc_release(&p);
    /* The parent's environment is untouched. */
    assert_string_equal(getenv("FL_KEEP"), "old");
    buf_release(&out);
}

static void test_exec_failures(void **state)
{
    const char *missing[] = {"faultline-no-such-command-xyz", NULL};
    const char *missing_path[] = {"/nonexistent/dir/cmd", NULL};
    const char *notexec[] = {"/tmp", NULL};
    const char *ok[] = {"true", NULL};
    struct proc_opts o = {.argv = missing, .in = PROC_PIPE, .out = PROC_PIPE};
    struct proc p;
    struct err e = {0};

    assert_int_equal(proc_spawn(&p, &o, &e), ERR_NOTFOUND);
    assert_non_null(strstr(e.msg, "faultline-no-such-command-xyz"));
    assert_int_equal(p.in_fd, -1);
    err_clear(&e);
    o.argv = missing_path;
    assert_int_equal(proc_spawn(&p, &o, &e), ERR_NOTFOUND);
    err_clear(&e);
    o.argv = notexec;
    assert_int_equal(proc_spawn(&p, &o, &e), ERR_IO);
    assert_non_null(strstr(e.msg, "cannot run"));
    err_clear(&e);
    o.argv = ok;
    o.cwd = "/nonexistent/dir";
    assert_int_equal(proc_spawn(&p, &o, &e), ERR_IO);
    assert_non_null(strstr(e.msg, "/nonexistent/dir"));
    err_clear(&e);
    o.argv = NULL;
    assert_int_equal(proc_spawn(&p, &o, &e), ERR_INVALID);
}

static void test_wait_timeout_and_terminate(void **state)
{
    const char *argv[] = {"sleep", "30", NULL};
    struct proc_opts o = {.argv = argv, .in = PROC_NULL, .out = PROC_NULL};
    struct proc p;
    struct err e = {0};
    int64_t t0;

    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    t0 = time_mono_ns();
    assert_int_equal(proc_wait(&p, 50), ERR_TIMEOUT);
    assert_true(time_mono_ns() - t0 >= 50000000LL);
    assert_int_equal(proc_poll(&p), 0);
    assert_int_equal(proc_exit_code(&p), PROC_NO_EXIT_CODE);
    assert_int_equal(proc_terminate(&p, 2000), 0);
    assert_int_equal(proc_exit_code(&p), 128 + SIGTERM);
    proc_release(&p);
}

static void test_terminate_escalates_to_kill(void **state)
{
    /* The shell ignores SIGTERM and so does the sleep it starts (ignored dispositions survive
     * exec): only SIGKILL ends them. */
    const char *argv[] = {"sh", "-c", "trap '' TERM; echo ready; sleep 30; exit 0", NULL};
    struct proc_opts o = {.argv = argv, .out = PROC_PIPE};
    struct proc p;
    struct err e = {0};
    char tmp[16];
    struct pollfd pfd;
    int64_t t0;
    char desc[128];

    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    pfd.fd = p.out_fd;
    pfd.events = POLLIN;
    assert_int_equal(poll(&pfd, 1, 5000), 1);
    assert_true(read(p.out_fd, tmp, sizeof(tmp)) > 0);
    t0 = time_mono_ns();
    assert_int_equal(proc_terminate(&p, 300), 0);
    assert_true(time_mono_ns() - t0 >= 300000000LL);
    assert_int_equal(proc_exit_code(&p), 128 + SIGKILL);
    proc_describe(&p, desc, sizeof(desc));
    assert_non_null(strstr(desc, "signal 9"));
    proc_release(&p);
}

static void test_group_kill_reaches_grandchildren(void **state)
{
    const char *argv[] = {"sh", "-c", "sleep 30 & echo $!; wait", NULL};
    struct proc_opts o = {.argv = argv, .out = PROC_PIPE};
    struct proc p;
    struct err e = {0};
    struct buf line = BUF_INIT;
    long long gpid;
    int64_t deadline;

    assert_int_equal(proc_become_subreaper(), 0);
    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    deadline = time_mono_ns() + 5000000000LL;
    while (strchr(line.data, '\n') == NULL) {
        char c;
        struct pollfd pfd = {p.out_fd, POLLIN, 0};
        assert_true(time_mono_ns() < deadline);
        poll(&pfd, 1, 100);
        if (read(p.out_fd, &c, 1) == 1)
            buf_addc(&line, c);
    }
    buf_truncate(&line, line.len - 1);
    assert_int_equal(num_parse_ll(line.data, 1, 1 << 30, &gpid), 0);
    assert_int_equal(kill((pid_t)gpid, 0), 0);
    assert_int_equal(proc_terminate(&p, 1000), 0);
    /* The grandchild got the group's SIGTERM; as our orphan it is reaped, not a zombie. */
    deadline = time_mono_ns() + 5000000000LL;
    while (kill((pid_t)gpid, 0) == 0) {
        assert_true(time_mono_ns() < deadline);
        proc_reap_all();
        usleep(10000);
    }
    assert_int_equal(errno, ESRCH);
    proc_release(&p);
    buf_release(&line);
}

static void test_signals_reset_in_child(void **state)
{
    const char *argv[] = {"grep", "^SigIgn", "/proc/self/status", NULL};
    struct proc_opts o = {.argv = argv, .out = PROC_PIPE};
    struct proc p;
    struct err e = {0};
    struct buf out = BUF_INIT;
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);

    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    read_all(p.out_fd, &out);
    assert_int_equal(proc_wait(&p, 5000), 0);
    /* Signals 32 and 33 are glibc's own (thread cancellation, setxid): libc refuses to change
     * them, installs its handlers when it needs them, and a parent may pass them in ignored
     * (seen in CI). Every signal a program can set must be back to its default. */
    assert_true(strncmp(out.data, "SigIgn:\t", 8) == 0);
    uint64_t ign = 0;
    char hex[20] = "0x";
    memcpy(hex + 2, out.data + 8, 16);
    hex[18] = '\0';
    assert_int_equal(num_parse_u64(hex, &ign), 0);
    ign &= ~((1ULL << 31) | (1ULL << 32));
    assert_true(ign == 0);
    proc_release(&p);
    signal(SIGPIPE, old);
    buf_release(&out);
}

static void test_exit_by_signal_and_reap_all(void **state)
{
    const char *argv[] = {"sh", "-c", "kill -9 $$", NULL};
    struct proc_opts o = {.argv = argv, .same_pgroup = 1};
    struct proc p;
    struct err e = {0};
    int64_t deadline = time_mono_ns() + 5000000000LL;

    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    assert_int_equal(p.pgid, 0);
    while (!p.exited) {
        assert_true(time_mono_ns() < deadline);
        proc_reap_all(); /* records the status in p through the live list */
        usleep(2000);
    }
    assert_int_equal(proc_exit_code(&p), 137);
    assert_int_equal(proc_wait(&p, 0), 0);
    proc_release(&p);
}

static void test_stdin_closed_in_parent(void **state)
{
    /* With the parent's fd 0 closed, a new pipe lands on fd 0; the child must still get its
     * stdin and stdout right. */
    const char *argv[] = {"cat", NULL};
    struct proc_opts o = {.argv = argv, .in = PROC_PIPE, .out = PROC_PIPE};
    struct proc p;
    struct err e = {0};
    struct buf out = BUF_INIT;
    int saved = dup(0);

    close(0);
    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    dup2(saved, 0);
    close(saved);
    assert_int_equal(write(p.in_fd, "abc", 3), 3);
    proc_close_fd(&p.in_fd);
    read_all(p.out_fd, &out);
    assert_string_equal(out.data, "abc");
    assert_int_equal(proc_wait(&p, 5000), 0);
    assert_int_equal(proc_exit_code(&p), 0);
    proc_release(&p);
    buf_release(&out);
}

/* Reads one line of a decimal pid from fd (5 s at most). */
static pid_t read_pid_line(int fd)
{
    struct buf line = BUF_INIT;
    int64_t deadline = time_mono_ns() + 5000000000LL;
    long long v;

    while (strchr(line.data, '\n') == NULL) {
        char c;
        struct pollfd pfd = {fd, POLLIN, 0};
        assert_true(time_mono_ns() < deadline);
        poll(&pfd, 1, 100);
        if (read(fd, &c, 1) == 1)
            buf_addc(&line, c);
    }
    buf_truncate(&line, line.len - 1);
    assert_int_equal(num_parse_ll(line.data, 1, 1 << 30, &v), 0);
    buf_release(&line);
    return (pid_t)v;
}

/* Waits (5 s at most) for pid to be gone, reaping what is ours meanwhile. */
static void assert_gone(pid_t pid)
{
    int64_t deadline = time_mono_ns() + 5000000000LL;

    while (kill(pid, 0) == 0) {
        assert_true(time_mono_ns() < deadline);
        proc_reap_all();
        usleep(10000);
    }
    assert_int_equal(errno, ESRCH);
}

static void test_supervised_sweeps_the_tree(void **state)
{
    /* The descendant leaves the group (setsid) and holds stdout: the group kill misses it. */
    const char *argv[] = {"sh", "-c", "setsid sleep 30 & echo $!; exit 4", NULL};
    const char *sig[] = {"sh", "-c", "kill -9 $$", NULL};
    const char *stay[] = {"sh", "-c", "exec sleep 30", NULL};
    const char *missing[] = {"/nonexistent/faultline-test", NULL};
    struct proc_opts o = {.argv = argv, .out = PROC_PIPE, .supervise = 1};
    struct proc p;
    struct err e = {0};
    struct buf out = BUF_INIT;
    pid_t orphan;

    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    assert_true(p.supervised);
    assert_true(p.pgid > 0 && p.pgid != p.pid);
    orphan = read_pid_line(p.out_fd);
    /* The child's exit ends its whole tree: stdout reaches EOF, the status is the child's. */
    read_all(p.out_fd, &out);
    assert_int_equal(proc_wait(&p, 5000), 0);
    assert_int_equal(proc_exit_code(&p), 4);
    assert_gone(orphan);
    proc_release(&p);

    o.argv = sig;
    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    assert_int_equal(proc_wait(&p, 5000), 0);
    assert_int_equal(proc_exit_code(&p), 128 + SIGKILL);
    proc_release(&p);

    o.argv = stay;
    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    assert_int_equal(proc_terminate(&p, 2000), 0);
    assert_int_equal(proc_exit_code(&p), 128 + SIGTERM);
    proc_release(&p);

    o.argv = missing;
    assert_int_equal(proc_spawn(&p, &o, &e), ERR_NOTFOUND);
    assert_non_null(strstr(e.msg, "command not found"));
    assert_int_equal(p.pid, 0);
    buf_release(&out);
}

static void test_supervised_outlives_its_caller(void **state)
{
    /* A caller killed with SIGKILL runs no cleanup: its supervisor still ends the tree. */
    int fds[2];
    pid_t caller, orphan;
    int status;

    assert_int_equal(pipe(fds), 0);
    caller = fork();
    assert_true(caller >= 0);
    if (caller == 0) {
        const char *argv[] = {"sh", "-c", "setsid sleep 30 & echo $!; wait", NULL};
        struct proc_opts o = {.argv = argv, .supervise = 1, .grace_ms = 500};
        struct proc p;
        struct err e = {0};
        close(fds[0]);
        dup2(fds[1], 1);
        if (proc_spawn(&p, &o, &e) < 0)
            _exit(1);
        pause();
        _exit(0);
    }
    close(fds[1]);
    orphan = read_pid_line(fds[0]);
    assert_int_equal(kill(orphan, 0), 0);
    kill(caller, SIGKILL);
    while (waitpid(caller, &status, 0) < 0 && errno == EINTR)
        ;
    assert_gone(orphan);
    close(fds[0]);
}

/* before_exec of a slow start (joining a cgroup waits for the kernel): 600 ms */
static int slow_start(void *arg)
{
    (void)arg;
    usleep(600000);
    return 0;
}

static int failing_start(void *arg)
{
    (void)arg;
    return EPERM;
}

/* defer_check: the spawn returns before the child's exec (before_exec's wait is not the
 * caller's); proc_check then waits for it and reports what went wrong, as proc_spawn would. */
static void test_deferred_check(void **state)
{
    const char *ok[] = {"sh", "-c", "exit 5", NULL};
    const char *missing[] = {"/nonexistent/faultline-no-such-command", NULL};
    struct proc_opts o = {.argv = ok, .before_exec = slow_start, .defer_check = 1};
    struct proc p;
    struct err e = {0};
    int64_t t0 = time_mono_ns();

    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    assert_true(time_mono_ns() - t0 < 450000000LL); /* did not wait for the 600 ms start */
    assert_true(p.checking);
    assert_int_equal(proc_check(&p, 5000, &e), 0);
    assert_true(time_mono_ns() - t0 >= 590000000LL); /* waited for it there */
    assert_false(p.checking);
    assert_int_equal(proc_wait(&p, 5000), 0);
    assert_int_equal(proc_exit_code(&p), 5);
    assert_int_equal(proc_check(&p, 5000, &e), 0); /* checked once; again is a no-op */
    proc_release(&p);

    /* an exec that fails: proc_spawn succeeds, proc_check says why and has reaped it */
    o.argv = missing;
    o.before_exec = NULL;
    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    assert_int_equal(proc_check(&p, 5000, &e), ERR_NOTFOUND);
    assert_non_null(strstr(e.msg, "command not found"));
    assert_true(p.exited);
    assert_int_equal(proc_poll(&p), 1);
    proc_release(&p);

    /* a before_exec that fails */
    err_clear(&e);
    o.argv = ok;
    o.before_exec = failing_start;
    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    assert_int_equal(proc_check(&p, 5000, &e), ERR_SYS);
    assert_non_null(strstr(e.msg, "cannot prepare 'sh'"));
    proc_release(&p);

    /* a check that times out leaves the child to the caller; released unchecked, its pipe is
     * closed */
    err_clear(&e);
    o.before_exec = slow_start;
    assert_int_equal(proc_spawn(&p, &o, &e), 0);
    assert_int_equal(proc_check(&p, 10, &e), ERR_TIMEOUT);
    assert_true(p.checking);
    assert_int_equal(proc_wait(&p, 5000), 0);
    proc_release(&p);
    assert_false(p.checking);

    /* not with supervise */
    o.supervise = 1;
    assert_int_equal(proc_spawn(&p, &o, &e), ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipes_and_exit_code),
        cmocka_unit_test(test_env_and_cwd),
        cmocka_unit_test(test_exec_failures),
        cmocka_unit_test(test_wait_timeout_and_terminate),
        cmocka_unit_test(test_terminate_escalates_to_kill),
        cmocka_unit_test(test_group_kill_reaches_grandchildren),
        cmocka_unit_test(test_signals_reset_in_child),
        cmocka_unit_test(test_exit_by_signal_and_reap_all),
        cmocka_unit_test(test_stdin_closed_in_parent),
        cmocka_unit_test(test_supervised_sweeps_the_tree),
        cmocka_unit_test(test_supervised_outlives_its_caller),
        cmocka_unit_test(test_deferred_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
