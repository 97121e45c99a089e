/*
 * bwrap: the native backend (bubblewrap) of sandbox.h.
 *
 * A spawn. proc_spawn runs bwrap with a before_exec step that joins the sandbox's network
 * namespace (setns), moves itself into the sandbox's cgroups when the machine offers them, sets
 * the resource limits and, when root, drops to the sandbox user (nobody). bwrap then unshares
 * everything else (user, PID, IPC, UTS, mount, cgroup) with --share-net keeping the joined
 * namespace, forbids further user namespaces, drops every capability, and builds the file
 * system from read-only binds. Its environment is exactly sandbox_env's: it is passed as
 * bwrap's own environment (never as --setenv arguments, which any host user could read in its
 * command line).
 *
 * Killing. Each spawn is its own PID namespace, whose init bwrap reports on --info-fd. SIGTERM
 * goes to every process of those namespaces (found through /proc/N/ns/pid), then SIGKILL to
 * each init, which makes the kernel kill the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/backend.h"
#include "util/buf.h"
#include "util/timeutil.h"

#include "util/banned.h"

#define SANDBOX_INFO_TIMEOUT_MS 10000

static int join_cgroup(const char *dir)
{
    char path[300], pid[24];

    if (dir[0] == '\0')
        return 0;
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    return sandbox_write_str(path, pid);
}

/* ---- spawning ---- */

/* proc_spawn's before_exec: runs in the child, just before exec of bwrap. */
static int before_bwrap(void *arg)
{
    struct sandbox *sb = arg;
    int err, fl;

    if (sb->userns_fd >= 0 && setns(sb->userns_fd, CLONE_NEWUSER) < 0)
        return errno;
    if (setns(sb->netns_fd, CLONE_NEWNET) < 0)
        return errno;
    if ((err = join_cgroup(sb->cg_mem)) || (err = join_cgroup(sb->cg_pids)))
        return err;
    if ((err = sandbox_set_limit(RLIMIT_NOFILE, sb->limits.nofile)) ||
        (err = sandbox_set_limit(RLIMIT_FSIZE, sb->limits.fsize_mb * 1024 * 1024)) ||
        (err = sandbox_set_limit(RLIMIT_CPU, sb->limits.cpu_s)))
        return err;
    if (sb->drop_uid) {
        if (setgroups(0, NULL) < 0 || setresgid(SANDBOX_GID, SANDBOX_GID, SANDBOX_GID) < 0 ||
            setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0)
            return errno;
    }
    /* after the uid change, so that the count is the sandbox user's */
    if ((err = sandbox_set_limit(RLIMIT_NPROC, sb->limits.nproc)))
        return err;
    if ((err = sandbox_dup_stdio(sb)))
        return err;
    /* nothing of the runner's leaks in but the info pipe */
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    fl = fcntl(sb->info_wfd, F_GETFD);
    if (fl < 0 || fcntl(sb->info_wfd, F_SETFD, fl & ~FD_CLOEXEC) < 0)
        return errno;
    /* and the supervisor's status pipe, which bwrap passes on to it */
    if (sb->status_wfd >= 0 && ((fl = fcntl(sb->status_wfd, F_GETFD)) < 0 ||
                                fcntl(sb->status_wfd, F_SETFD, fl & ~FD_CLOEXEC) < 0))
        return errno;
    return 0;
}

/* The root's top-level entries that are symlinks into /usr (merged /usr) become the same
 * symlinks inside; real directories of system files are bound read-only. */
static void add_system_dirs(struct args *a)
{
    static const char *const dirs[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
    char link[256], path[64];

    args_add(a, "--ro-bind");
    args_add(a, "/usr");
    args_add(a, "/usr");
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        ssize_t k;
        struct stat st;

        snprintf(path, sizeof(path), "/%s", dirs[i]);
        if (lstat(path, &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            k = readlink(path, link, sizeof(link) - 1);
            if (k <= 0)
                continue;
            link[k] = '\0';
            args_add(a, "--symlink");
            args_add(a, args_own(a, link));
            args_add(a, args_own(a, path));
        } else if (S_ISDIR(st.st_mode)) {
            const char *d = args_own(a, path);
            args_add(a, "--ro-bind");
            args_add(a, d);
            args_add(a, d);
        }
    }
}

/* Reads bwrap's --info-fd JSON to its end (bwrap closes it; closing first would kill bwrap with
 * SIGPIPE) and returns its "child-pid"; 0 when it never names one. */
static pid_t read_child_pid(int fd)
{
    char buf[4096];
    size_t len = 0;
    uint64_t end = sandbox_mono_ms() + SANDBOX_INFO_TIMEOUT_MS;
    char *p;

    while (len < sizeof(buf) - 1) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        uint64_t now = sandbox_mono_ms();
        ssize_t r;

        if (now >= end || poll(&pfd, 1, (int)(end - now)) <= 0)
            break;
        r = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    p = strstr(buf, "\"child-pid\"");
    if (p && (p = strchr(p, ':'))) {
        long v = strtol(p + 1, NULL, 10);
        return v > 0 ? (pid_t)v : 0;
    }
    return 0;
}

/* What /proc/PID/stat says after the command's name ("S PPID ..."), into buf; NULL when the
 * process is gone or the line is not that. */
static const char *stat_fields(long pid, char *buf, size_t size)
{
    char path[64], *p;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return NULL;
    n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* "pid (comm) S ppid ...": comm may hold anything */
    if (p == NULL || p[1] != ' ' || p[2] == '\0')
        return NULL;
    return p + 2;
}

/* The parent pid /proc/PID/stat names, or 0. */
static pid_t parent_of(pid_t pid)
{
    char buf[512];
    const char *f = stat_fields(pid, buf, sizeof(buf));

    return f && f[1] == ' ' ? (pid_t)strtol(f + 2, NULL, 10) : 0;
}

static void remember_spawn(struct sandbox *sb, pid_t init)
{
    char path[64];
    struct stat st, self;
    struct spawn_ns *slot = NULL;

    snprintf(path, sizeof(path), "/proc/%ld/ns/pid", (long)init);
    if (stat(path, &st) < 0)
        return;
    /* never the runner's own PID namespace: signal_all would reach the host's processes */
    if (stat("/proc/self/ns/pid", &self) == 0 && self.st_dev == st.st_dev &&
        self.st_ino == st.st_ino)
        return;
    for (size_t i = 0; i < SANDBOX_SPAWNS_MAX && !slot; i++)
        if (sb->spawns[i].init == 0)
            slot = &sb->spawns[i];
    if (slot == NULL) /* full: reuse the first, which must have ended long ago */
        slot = &sb->spawns[0];
    slot->init = init;
    slot->dev = st.st_dev;
    slot->ino = st.st_ino;
}

static int bwrap_spawn(struct sandbox *sb, const char *cmd, int out_fd, int err_fd, struct proc *p,
                       struct err *e)
{
    struct args a = {0};
    char infofd[16];
    char **env;
    int info[2] = {-1, -1};
    struct proc_opts o;
    int rc;
    pid_t init;

    if (pipe2(info, O_CLOEXEC) < 0)
        return err_set(e, ERR_SYS, "sandbox: pipe: %s", strerror(errno));
    snprintf(infofd, sizeof(infofd), "%d", info[1]);

    args_add(&a, "bwrap");
    args_add(&a, "--unshare-all");
    args_add(&a, "--share-net"); /* the namespace before_bwrap joined */
    args_add(&a, "--unshare-user");
    args_add(&a, "--disable-userns"); /* no nested user namespace, so no capabilities in one */
    args_add(&a, "--die-with-parent");
    args_add(&a, "--new-session");
    args_add(&a, "--cap-drop");
    args_add(&a, "ALL");
    args_add(&a, "--info-fd");
    args_add(&a, infofd);
    add_system_dirs(&a);
    args_add(&a, "--ro-bind");
    args_add(&a, "/etc");
    args_add(&a, "/etc");
    args_add(&a, "--proc");
    args_add(&a, "/proc");
    args_add(&a, "--dev");
    args_add(&a, "/dev");
    args_add(&a, "--tmpfs");
    args_add(&a, "/tmp");
    args_add(&a, "--bind");
    args_add(&a, sb->homedir);
    args_add(&a, SANDBOX_HOME);
    args_add(&a, "--bind");
    args_add(&a, sb->workdir);
    args_add(&a, SANDBOX_WORKDIR);
    if (sb->self_exe) {
        args_add(&a, "--ro-bind");
        args_add(&a, sb->self_exe);
        args_add(&a, SANDBOX_BINDIR "/faultline");
    }
    for (char **r = sb->ro_paths; r && *r; r++) {
        args_add(&a, "--ro-bind");
        args_add(&a, *r);
        args_add(&a, *r);
    }
    for (char **f = sb->ro_files; f && f[0] && f[1]; f += 2) {
        args_add(&a, "--ro-bind");
        args_add(&a, f[0]);
        args_add(&a, f[1]);
    }
    args_add(&a, "--remount-ro");
    args_add(&a, "/");
    args_add(&a, "--chdir");
    args_add(&a, SANDBOX_WORKDIR);
    if (sb->status_wfd >= 0 && sb->self_exe) {
        char num[16];
        snprintf(num, sizeof(num), "%d", sb->status_wfd);
        args_add(&a, SANDBOX_BINDIR "/faultline");
        args_add(&a, "sandbox");
        args_add(&a, "supervise");
        args_add(&a, "--status-fd");
        args_add(&a, args_own(&a, num));
        args_add(&a, "--");
    }
    args_add(&a, "/bin/sh");
    args_add(&a, "-c");
    args_add(&a, cmd);

    env = sandbox_env(sb);

    sandbox_proc_opts(sb, &o, a.v, out_fd, err_fd, before_bwrap);
    /* a gated command is not needed before its go: the spawn does not wait for bwrap's exec,
     * nor so for before_bwrap's joining of the cgroups (a wait for the kernel's RCU, 10-16 ms
     * a spawn on this kind of machine); sandbox_go reads the outcome (proc_check) */
    o.defer_check = sb->gated;
    o.env_clear = 1;
    o.env_add = (const char *const *)env;
    sb->info_wfd = info[1];
    rc = proc_spawn(p, &o, e);
    close(info[1]);
    if (rc == ERR_NOTFOUND) {
        err_clear(e);
        rc = err_set(e, ERR_NOTFOUND,
                     "sandbox: bwrap is not installed (apt-get install "
                     "bubblewrap)");
    }
    /* bwrap names its namespace's init on the info pipe right after making it; that is read
     * later (bwrap_settle: before the command is let go, or before a kill), so that the spawn
     * does not wait for bwrap's start */
    if (rc == 0 && sb->npending < SANDBOX_SPAWNS_MAX) {
        sb->pending[sb->npending].fd = info[0];
        sb->pending[sb->npending].bwrap = p->pid;
        sb->npending++;
    } else {
        if (rc == 0 && (init = read_child_pid(info[0])) > 0)
            remember_spawn(sb, init);
        close(info[0]);
    }
    free(env);
    args_release(&a);
    return rc;
}

/* ---- killing ---- */

/* 1 when pid has exited and waits to be reaped (a zombie keeps its /proc/N/ns/pid link: the
 * namespace's init, orphaned when bwrap exits first, may wait on a host init that reaps late). */
static int is_zombie(long pid)
{
    char buf[512];
    const char *f = stat_fields(pid, buf, sizeof(buf));

    return f == NULL || f[0] == 'Z' || f[0] == 'X'; /* gone counts as ended */
}

/* Sends sig to every live process in one of sb's PID namespaces; returns how many it found.
 * The namespaces' inits themselves only with with_init: bwrap's init ignores SIGTERM and exits
 * on its own once its command has, so waiting on it would only run out the grace. */
static int signal_all(struct sandbox *sb, int sig, int with_init)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int found = 0;

    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        char path[300];
        struct stat st;
        char *end;
        long pid = strtol(de->d_name, &end, 10);

        if (pid <= 0 || *end != '\0')
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
        if (stat(path, &st) < 0)
            continue;
        for (size_t i = 0; i < SANDBOX_SPAWNS_MAX; i++) {
            if (sb->spawns[i].init && sb->spawns[i].dev == st.st_dev &&
                sb->spawns[i].ino == st.st_ino && !is_zombie(pid)) {
                if (with_init || pid != (long)sb->spawns[i].init) {
                    kill((pid_t)pid, sig);
                    found++;
                }
                break;
            }
        }
    }
    closedir(d);
    return found;
}

/* Forgets the spawns whose namespace is empty: an init that exited (a zombie, or reaped) has
 * outlived every other process of its namespace (the kernel reaps them all before the init's
 * own exit completes). 1 when any spawn may still have a live process. */
static int forget_ended(struct sandbox *sb)
{
    int live = 0;

    for (size_t i = 0; i < SANDBOX_SPAWNS_MAX; i++) {
        if (sb->spawns[i].init == 0)
            continue;
        if (is_zombie(sb->spawns[i].init))
            memset(&sb->spawns[i], 0, sizeof(sb->spawns[i]));
        else
            live = 1;
    }
    return live;
}

/* Reads each pending spawn's info pipe and remembers its PID namespace. An init is taken only
 * while it is bwrap's child (bwrap, the runner's child, is not reaped before its init has
 * ended, so the pid cannot name another process then); one that already ended has emptied its
 * namespace, and there is nothing to remember. */
static void bwrap_settle(struct sandbox *sb)
{
    for (int i = 0; i < sb->npending; i++) {
        pid_t init = read_child_pid(sb->pending[i].fd);
        close(sb->pending[i].fd);
        if (init > 0 && parent_of(init) == sb->pending[i].bwrap)
            remember_spawn(sb, init);
    }
    sb->npending = 0;
}

static int bwrap_kill(struct sandbox *sb, int grace_ms)
{
    uint64_t end;

    bwrap_settle(sb);

    /* the common case, after the agent and verify exited: nothing to look for in /proc */
    if (!forget_ended(sb))
        return 0;

    /* SIGTERM again every 100 ms: a process still starting (a command not yet forked by the
     * namespace's init, which itself ignores SIGTERM) would otherwise miss it and run out the
     * grace period. */
    end = sandbox_mono_ms() + (uint64_t)(grace_ms > 0 ? grace_ms : 0);
    for (int round = 0; signal_all(sb, round % 5 == 0 ? SIGTERM : 0, 0) > 0; round++) {
        if (sandbox_mono_ms() >= end)
            break;
        time_sleep_ms(20);
    }
    for (size_t i = 0; i < SANDBOX_SPAWNS_MAX; i++)
        if (sb->spawns[i].init)
            kill(sb->spawns[i].init, SIGKILL); /* its namespace goes with it */
    end = sandbox_mono_ms() + 5000;
    while (signal_all(sb, 0, 1) > 0) {
        if (sandbox_mono_ms() >= end)
            return ERR_TIMEOUT;
        time_sleep_ms(2);
    }
    memset(sb->spawns, 0, sizeof(sb->spawns));
    return 0;
}

static int bwrap_available(struct err *e)
{
    if (access("/usr/bin/bwrap", X_OK) != 0 && access("/usr/local/bin/bwrap", X_OK) != 0)
        return err_set(e, ERR_NOTFOUND,
                       "sandbox: bwrap is not installed (apt-get install "
                       "bubblewrap)");
    return 0;
}

const struct sandbox_ops sandbox_native_ops = {
    .name = "native",
    .available = bwrap_available,
    .spawn = bwrap_spawn,
    .supervised = 1,
    .kill = bwrap_kill,
    .settle = bwrap_settle,
};
