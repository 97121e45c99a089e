/*
 * sandbox: the part of sandbox.h every backend shares, and the dispatch to the backends
 * (backend.h: bwrap.c native, oci.c podman/docker).
 *
 * The network namespace. sandbox_open forks a child that unshares a network namespace (plus a
 * user namespace when not root, so that no privilege is needed), brings lo up, binds the
 * listener on 127.0.0.1:0 and sends it, with a descriptor of the namespace, back over a Unix
 * socket pair (SCM_RIGHTS), then exits: the namespace lives on as long as those descriptors.
 *
 * The user. When the runner is root, what runs inside runs as SANDBOX_UID (nobody): as root a
 * process keeps reading every root-owned file (/etc/shadow, /root) even with every capability
 * dropped, because it is their owner. sandbox_open hands the work directory and HOME to it.
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

#define SANDBOX_OPEN_TIMEOUT_MS 10000
/* how long a gated command's start (bwrap's exec) may take before its go */
#define SANDBOX_START_TIMEOUT_MS 10000
#define SANDBOX_NS_FIXED 6 /* listener, netns, egress, DNS, :80, :443 */
/* the fixed ones, the host ports' listeners, userns */
#define SANDBOX_NS_FDS (SANDBOX_NS_FIXED + SANDBOX_HOST_PORTS_MAX + 1)
#define SANDBOX_LO_ALIAS "127.0.0.53"
#define CGROUP_ROOT "/sys/fs/cgroup"

static char *xstrdup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static char **copy_strv(const char *const *v)
{
    size_t n = 0;
    char **out;

    if (v == NULL)
        return NULL;
    while (v[n])
        n++;
    out = xcalloc(n + 1, sizeof(*out));
    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(v[i]);
    return out;
}

static void free_strv(char **v)
{
    if (v == NULL)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

uint64_t sandbox_mono_ms(void)
{
    return (uint64_t)(time_mono_ns() / 1000000);
}

void args_add(struct args *a, const char *s)
{
    if (a->n + 1 >= a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = xrealloc(a->v, a->cap * sizeof(*a->v));
    }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

const char *args_own(struct args *a, const char *s)
{
    if (a->nown >= sizeof(a->own) / sizeof(a->own[0]))
        abort(); /* a fixed, small number of made strings per vector: a bug otherwise */
    a->own[a->nown++] = xstrdup(s);
    return a->own[a->nown - 1];
}

void args_release(struct args *a)
{
    for (size_t i = 0; i < a->nown; i++)
        free(a->own[i]);
    free(a->v);
    memset(a, 0, sizeof(*a));
}

int sandbox_set_limit(int res, long v)
{
    struct rlimit rl = {(rlim_t)v, (rlim_t)v};

    if (v <= 0)
        return 0;
    return setrlimit(res, &rl) < 0 ? errno : 0;
}

static int has_name(char *const *env, const char *name)
{
    size_t len = strlen(name);

    for (; env && *env; env++)
        if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
            return 1;
    return 0;
}

char **sandbox_env(const struct sandbox *sb)
{
    size_t n = 0;
    char **env;

    for (char **v = sb->env; v && *v; v++)
        n++;
    env = xcalloc(n + 4, sizeof(*env));
    n = 0;
    for (char **v = sb->env; v && *v; v++)
        if (strncmp(*v, "HOME=", 5) && strncmp(*v, "FAULTLINE_SANDBOX=", 18))
            env[n++] = *v;
    env[n++] = (char *)"HOME=" SANDBOX_HOME;
    env[n++] = (char *)"FAULTLINE_SANDBOX=1";
    if (!has_name(sb->env, "PATH"))
        env[n++] = (char *)"PATH=" SANDBOX_BINDIR ":/usr/local/bin:/usr/bin:/bin";
    return env;
}

void sandbox_proc_opts(struct sandbox *sb, struct proc_opts *o, const char *const *argv, int out_fd,
                       int err_fd, int (*before)(void *))
{
    memset(o, 0, sizeof(*o));
    o->argv = argv;
    o->in = sb->gated ? PROC_PIPE : PROC_NULL;
    o->out = out_fd >= 0 ? PROC_INHERIT : PROC_NULL;
    o->err = err_fd >= 0 ? PROC_INHERIT : PROC_NULL;
    o->die_with_parent = 1;
    o->before_exec = before;
    o->before_exec_arg = sb;
    sb->out_fd = out_fd;
    sb->err_fd = err_fd;
}

int sandbox_dup_stdio(const struct sandbox *sb)
{
    if (sb->out_fd >= 0 && dup2(sb->out_fd, 1) < 0)
        return errno;
    if (sb->err_fd >= 0 && dup2(sb->err_fd, 2) < 0)
        return errno;
    return 0;
}

static const struct sandbox_ops *ops_for(const char *backend, struct err *e)
{
    if (backend == NULL || strcmp(backend, "native") == 0)
        return &sandbox_native_ops;
    if (strcmp(backend, "oci") == 0)
        return &sandbox_oci_ops;
    err_set(e, ERR_INVALID, "sandbox: unknown backend '%s' (native or oci)", backend);
    return NULL;
}

int sandbox_spawn(struct sandbox *sb, const char *cmd, int out_fd, int err_fd, struct proc *p,
                  struct err *e)
{
    return sb->ops->spawn(sb, cmd, out_fd, err_fd, p, e);
}

/* The gate: the shell inside reads one line from its stdin (the caller's pipe) and runs the
 * command only when it is "go"; then its stdin is /dev/null again, as for sandbox_spawn. */
#define GATE_PREFIX                                                                                \
    "IFS= read -r _faultline_go || exit " SANDBOX_GATE_CLOSED_STR "\n"                             \
    "[ \"$_faultline_go\" = go ] || exit " SANDBOX_GATE_CLOSED_STR "\n"                            \
    "unset _faultline_go\nexec </dev/null\n"

int sandbox_spawn_gated(struct sandbox *sb, const char *cmd, int out_fd, int err_fd, int *status_fd,
                        struct proc *p, struct err *e)
{
    size_t n = strlen(GATE_PREFIX) + strlen(cmd) + 1;
    char *gated = xmalloc(n);
    int st[2] = {-1, -1}, rc;

    if (status_fd) {
        *status_fd = -1;
        if (sb->ops->supervised && sb->self_exe && pipe2(st, O_CLOEXEC) < 0) {
            free(gated);
            return err_set(e, ERR_SYS, "sandbox: pipe: %s", strerror(errno));
        }
    }
    snprintf(gated, n, "%s%s", GATE_PREFIX, cmd);
    sb->gated = 1;
    sb->status_wfd = st[1];
    rc = sb->ops->spawn(sb, gated, out_fd, err_fd, p, e);
    if (sb->status_wfd < 0 && st[0] >= 0) { /* the backend could not supervise it (backend.h) */
        close(st[0]);
        st[0] = -1;
    }
    sb->gated = 0;
    sb->status_wfd = -1;
    if (st[1] >= 0)
        close(st[1]);
    if (rc == 0 && status_fd)
        *status_fd = st[0];
    else if (st[0] >= 0)
        close(st[0]);
    free(gated);
    return rc;
}

int sandbox_go(struct sandbox *sb, struct proc *p, struct err *e)
{
    static const char go[] = "go\n";
    ssize_t n;
    int rc = 0;

    if (p->in_fd < 0)
        return err_set(e, ERR_INVALID, "sandbox: the command's gate is closed already");
    if ((rc = proc_check(p, SANDBOX_START_TIMEOUT_MS, e)) != 0) {
        struct err pe = *e;
        err_clear(e);
        if (rc == ERR_TIMEOUT)
            proc_terminate(p, 0);
        sandbox_no_go(p);
        return err_set(e, rc, "sandbox: %s", pe.msg);
    }
    /* what a kill needs to know of the spawns, known before anything runs */
    if (sb && sb->ops->settle)
        sb->ops->settle(sb);
    do
        n = write(p->in_fd, go, sizeof(go) - 1);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)(sizeof(go) - 1))
        rc = err_set(e, ERR_IO, "sandbox: the command ended before it could run");
    sandbox_no_go(p);
    return rc;
}

void sandbox_no_go(struct proc *p)
{
    if (p->in_fd >= 0)
        close(p->in_fd);
    p->in_fd = -1;
}

int sandbox_kill(struct sandbox *sb, int grace_ms)
{
    if (sb == NULL)
        return 0;
    return sb->ops->kill(sb, grace_ms);
}

/* ---- the network namespace ---- */

int sandbox_write_str(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n;
    size_t len = strlen(s);

    if (fd < 0)
        return errno;
    n = write(fd, s, len);
    if (n != (ssize_t)len) {
        int err = n < 0 ? errno : EIO;
        close(fd);
        return err;
    }
    close(fd);
    return 0;
}

static int lo_up(void)
{
    struct ifreq ifr;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return errno;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, "lo", 3);
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
        goto fail;
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
        goto fail;
    close(fd);
    return 0;
fail:;
    int err = errno;
    close(fd);
    return err;
}

/* A second IPv4 address on lo (SANDBOX_LO_ALIAS as "lo:1"): glibc's getaddrinfo with
 * AI_ADDRCONFIG (getent ahosts, Node's net.connect) returns no IPv4 address at all while the
 * only one configured is 127.0.0.1, and so would never resolve through the DNS stub. */
static int lo_alias(void)
{
    struct ifreq ifr;
    struct sockaddr_in *sa = (struct sockaddr_in *)&ifr.ifr_addr;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

    if (fd < 0)
        return errno;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, "lo:1", 5);
    sa->sin_family = AF_INET;
    inet_pton(AF_INET, SANDBOX_LO_ALIAS, &sa->sin_addr);
    if (ioctl(fd, SIOCSIFADDR, &ifr) < 0)
        err = errno;
    close(fd);
    return err;
}

/* A listening TCP socket on 127.0.0.1:port of the current network namespace, or -errno. */
static int lo_listener_on(uint16_t port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, err;

    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 512) < 0) {
        err = errno;
        close(fd);
        return -err;
    }
    return fd;
}

static int lo_listener(void)
{
    return lo_listener_on(0);
}

/* A UDP socket bound to 127.0.0.1:53 of the current network namespace (the DNS stub's), or
 * -errno. Port 53 needs no privilege here: the process owns the namespace (root in it, or in
 * the user namespace it was made with). */
static int lo_dns_socket(void)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err;

    if (fd < 0)
        return -errno;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(53);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        err = errno;
        close(fd);
        return -err;
    }
    return fd;
}

/* The child of sandbox_open: never returns. Sends {listener, netns, egress listener, DNS
 * socket, :80 listener, :443 listener, one listener per host port[, userns]} or one errno.
 * The host ports are bound first: the kernel then gives the ephemeral listeners other ports. */
static void ns_child(int sock, int unpriv, uid_t uid, gid_t gid, const int *host_ports,
                     size_t nhost_ports)
{
    int fds[SANDBOX_NS_FDS], nfds = SANDBOX_NS_FIXED + (int)nhost_ports, err = 0;
    char map[64];
    char cbuf[CMSG_SPACE(sizeof(fds))];
    struct msghdr mh;
    struct iovec iov;
    struct cmsghdr *cm;

    for (size_t i = 0; i < SANDBOX_NS_FDS; i++)
        fds[i] = -1;
    if (unpriv) {
        if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0) {
            err = errno;
            goto out;
        }
        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
        if ((err = sandbox_write_str("/proc/self/setgroups", "deny")) ||
            (err = sandbox_write_str("/proc/self/uid_map", map)))
            goto out;
        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
        if ((err = sandbox_write_str("/proc/self/gid_map", map)))
            goto out;
    } else if (unshare(CLONE_NEWNET) < 0) {
        err = errno;
        goto out;
    }
    if ((err = lo_up()) || (err = lo_alias()))
        goto out;
    for (size_t i = 0; i < nhost_ports; i++) {
        int fd = lo_listener_on((uint16_t)host_ports[i]);
        if (fd < 0) {
            err = -fd;
            goto out;
        }
        fds[SANDBOX_NS_FIXED + i] = fd;
    }
    fds[0] = lo_listener();
    if (fds[0] < 0) {
        err = -fds[0];
        goto out;
    }
    fds[1] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fds[1] < 0) {
        err = errno;
        goto out;
    }
    fds[2] = lo_listener(); /* the egress proxy's (HTTP_PROXY) */
    if (fds[2] < 0) {
        err = -fds[2];
        goto out;
    }
    fds[3] = lo_dns_socket(); /* the DNS stub's (resolv.conf) */
    if (fds[3] < 0) {
        err = -fds[3];
        goto out;
    }
    fds[4] = lo_listener_on(80); /* transparent mode (the DNS stub's answers lead here) */
    fds[5] = fds[4] < 0 ? fds[4] : lo_listener_on(443);
    if (fds[5] < 0) {
        err = -fds[5];
        goto out;
    }
    if (unpriv) {
        fds[nfds] = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
        if (fds[nfds] < 0) {
            err = errno;
            goto out;
        }
        nfds++;
    }
out:
    memset(&mh, 0, sizeof(mh));
    iov.iov_base = &err;
    iov.iov_len = sizeof(err);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (!err) {
        memset(cbuf, 0, sizeof(cbuf));
        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
    }
    if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
        _exit(127);
    _exit(err ? 1 : 0);
}

/* Receives what ns_child sent: 0 with fds[0..*nfds) filled (at least need), or ERR_* */
static int ns_receive(int sock, int fds[SANDBOX_NS_FDS], int *nfds, int need, struct err *e)
{
    struct pollfd pfd = {.fd = sock, .events = POLLIN};
    char cbuf[CMSG_SPACE(sizeof(int) * SANDBOX_NS_FDS)];
    struct msghdr mh;
    struct iovec iov;
    struct cmsghdr *cm;
    int cerr = 0, r;
    ssize_t n;

    *nfds = 0;
    do {
        r = poll(&pfd, 1, SANDBOX_OPEN_TIMEOUT_MS);
    } while (r < 0 && errno == EINTR);
    if (r == 0)
        return err_set(e, ERR_TIMEOUT, "sandbox: the network namespace was not made within %d s",
                       SANDBOX_OPEN_TIMEOUT_MS / 1000);
    memset(&mh, 0, sizeof(mh));
    iov.iov_base = &cerr;
    iov.iov_len = sizeof(cerr);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof(cbuf);
    do {
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(cerr))
        return err_set(e, ERR_SYS, "sandbox: no answer from the namespace child");
    for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            if (k > SANDBOX_NS_FDS)
                k = SANDBOX_NS_FDS;
            memcpy(fds, CMSG_DATA(cm), k * sizeof(int));
            *nfds = (int)k;
        }
    }
    if (cerr)
        return err_set(e, ERR_SYS, "sandbox: cannot make the network namespace: %s",
                       strerror(cerr));
    if (*nfds < need)
        return err_set(e, ERR_SYS, "sandbox: the namespace child sent %d descriptors", *nfds);
    return 0;
}

/* ---- cgroups (best effort: the machine may offer none, or not to us) ---- */

/* Makes CGROUP_ROOT/<ctrl>/faultline/<name> (v1) or CGROUP_ROOT/faultline/<name> (v2) and
 * writes value to its file; dir gets the directory or "". */
static void cgroup_make(const char *ctrl, const char *file, const char *value, const char *name,
                        char *dir, size_t n)
{
    char base[200], path[320];
    struct stat st;

    dir[0] = '\0';
    if (stat(CGROUP_ROOT "/cgroup.controllers", &st) == 0)
        snprintf(base, sizeof(base), "%s/faultline", CGROUP_ROOT); /* v2 */
    else
        snprintf(base, sizeof(base), "%s/%s/faultline", CGROUP_ROOT, ctrl);
    if (mkdir(base, 0755) < 0 && errno != EEXIST)
        return;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", base, name) >= sizeof(path) ||
        (size_t)snprintf(dir, n, "%s", path) >= n || mkdir(path, 0755) < 0) {
        dir[0] = '\0';
        return;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path) ||
        sandbox_write_str(path, value)) {
        rmdir(dir);
        dir[0] = '\0';
    }
}

/* The cgroups of this process's closed sandboxes, kept for its next sandbox_open. Making a
 * cgroup and removing it each wait for the kernel (an RCU grace period: 5-30 ms each on a
 * loaded 2-core VM, more than a bare bwrap), so a run's repetitions take turns with a few
 * instead; sandbox_cgroups_release (at exit) removes them. A spare's limit is written again
 * when it is taken. */
#define CGROUP_SPARES_MAX 8
struct cgroup_spare {
    pid_t owner; /* the process that keeps it (a fork does not inherit it) */
    int mem;     /* 1: memory, 0: pids */
    char dir[256];
};
static struct cgroup_spare cgroup_spares[CGROUP_SPARES_MAX];
static int cgroup_nspares, cgroup_atexit_set;

/* Removes dir, waiting up to 1 s while it is busy: a sandbox's last process may still be
 * leaving it (an init whose bwrap ended is reaped by the host's init, when that gets to it). */
static void cgroup_remove(const char *dir)
{
    for (int i = 0; rmdir(dir) < 0 && errno == EBUSY && i < 100; i++)
        time_sleep_ms(10);
}

void sandbox_cgroups_release(void)
{
    int kept = 0;

    for (int i = 0; i < cgroup_nspares; i++) {
        if (cgroup_spares[i].owner == getpid())
            cgroup_remove(cgroup_spares[i].dir);
        else
            cgroup_spares[kept++] = cgroup_spares[i]; /* a parent's: its to remove */
    }
    cgroup_nspares = kept;
}

/* Keeps dir for a later sandbox of this process (one whose last process is still leaving is
 * kept too: it leaves soon, and sharing the limit with it for a moment takes nothing from the
 * next sandbox), or removes it. */
static void cgroup_put(const char *dir, int mem)
{
    if (cgroup_nspares < CGROUP_SPARES_MAX && strlen(dir) < sizeof(cgroup_spares[0].dir)) {
        struct cgroup_spare *c = &cgroup_spares[cgroup_nspares++];
        c->owner = getpid();
        c->mem = mem;
        snprintf(c->dir, sizeof(c->dir), "%s", dir);
        if (!cgroup_atexit_set)
            cgroup_atexit_set = atexit(sandbox_cgroups_release) == 0;
        return;
    }
    cgroup_remove(dir);
}

/* A spare of the kind, its file set to value, into dir; 0 when there is none. */
static int cgroup_take(int mem, const char *file, const char *value, char *dir, size_t n)
{
    for (int i = cgroup_nspares - 1; i >= 0; i--) {
        struct cgroup_spare c = cgroup_spares[i];
        char path[320];
        if (c.owner != getpid() || c.mem != mem)
            continue;
        cgroup_spares[i] = cgroup_spares[--cgroup_nspares];
        snprintf(path, sizeof(path), "%s/%s", c.dir, file);
        if (strlen(c.dir) < n && sandbox_write_str(path, value) == 0) {
            snprintf(dir, n, "%s", c.dir);
            return 1;
        }
        rmdir(c.dir);
    }
    return 0;
}

static void cgroup_setup(struct sandbox *sb)
{
    static unsigned seq;
    char name[64], val[32];
    int v2;
    struct stat st;

    if (geteuid() != 0)
        return;
    v2 = stat(CGROUP_ROOT "/cgroup.controllers", &st) == 0;
    snprintf(name, sizeof(name), "sb-%ld-%u", (long)getpid(), seq++);
    if (sb->limits.memory_mb > 0) {
        const char *file = v2 ? "memory.max" : "memory.limit_in_bytes";
        snprintf(val, sizeof(val), "%ld", sb->limits.memory_mb * 1024 * 1024);
        if (!cgroup_take(1, file, val, sb->cg_mem, sizeof(sb->cg_mem)))
            cgroup_make("memory", file, val, name, sb->cg_mem, sizeof(sb->cg_mem));
    }
    if (!v2) {
        snprintf(val, sizeof(val), "%ld", sb->limits.nproc);
        if (!cgroup_take(0, "pids.max", val, sb->cg_pids, sizeof(sb->cg_pids)))
            cgroup_make("pids", "pids.max", val, name, sb->cg_pids, sizeof(sb->cg_pids));
    }
}

/* ---- open, close, health ---- */

/* chown -R path to the sandbox user (the runner is root and drops to it). */
static int chown_tree(const char *path, struct err *e)
{
    struct stat st;
    DIR *d;
    struct dirent *de;
    int rc = 0;

    if (lstat(path, &st) < 0)
        return err_set(e, ERR_IO, "sandbox: %s: %s", path, strerror(errno));
    if (lchown(path, SANDBOX_UID, SANDBOX_GID) < 0)
        return err_set(e, ERR_IO, "sandbox: cannot hand %s to the sandbox user: %s", path,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return 0;
    d = opendir(path);
    if (d == NULL)
        return err_set(e, ERR_IO, "sandbox: %s: %s", path, strerror(errno));
    while (rc == 0 && (de = readdir(d)) != NULL) {
        struct buf b = BUF_INIT;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        buf_addf(&b, "%s/%s", path, de->d_name);
        rc = chown_tree(b.data, e);
        buf_release(&b);
    }
    closedir(d);
    return rc;
}

int sandbox_open(struct sandbox **out, const struct sandbox_spec *spec, int *listen_fd,
                 uint16_t *port, struct err *e)
{
    struct sandbox *sb;
    int sv[2], fds[SANDBOX_NS_FDS], nfds = 0, status, rc, need;
    pid_t pid;
    struct sockaddr_in sa;
    socklen_t salen = sizeof(sa);

    *out = NULL;
    *listen_fd = -1;
    const struct sandbox_ops *ops = ops_for(spec->backend, e);

    if (ops == NULL)
        return ERR_INVALID;
    if (spec->workdir == NULL || spec->homedir == NULL)
        return err_set(e, ERR_INVALID, "sandbox: a work directory and a home are required");
    if (spec->nhost_ports > SANDBOX_HOST_PORTS_MAX)
        return err_set(e, ERR_LIMIT, "sandbox: more than %d host ports", SANDBOX_HOST_PORTS_MAX);
    for (size_t i = 0; i < spec->nhost_ports; i++)
        if (spec->host_ports[i] < 1 || spec->host_ports[i] > 65535)
            return err_set(e, ERR_INVALID, "sandbox: host port %d out of range",
                           spec->host_ports[i]);
    need = SANDBOX_NS_FIXED + (int)spec->nhost_ports;
    sb = xcalloc(1, sizeof(*sb));
    sb->ops = ops;
    sb->image = xstrdup_or_null(spec->image);
    sb->workdir = xstrdup(spec->workdir);
    sb->homedir = xstrdup(spec->homedir);
    sb->self_exe = xstrdup_or_null(spec->self_exe);
    sb->env = copy_strv(spec->env);
    sb->ro_paths = copy_strv(spec->ro_paths);
    sb->ro_files = copy_strv(spec->ro_files);
    sb->limits = spec->limits;
    if (sb->limits.nproc <= 0)
        sb->limits.nproc = 512;
    if (sb->limits.nofile <= 0)
        sb->limits.nofile = 4096;
    if (sb->limits.fsize_mb <= 0)
        sb->limits.fsize_mb = 1024;
    sb->netns_fd = sb->userns_fd = sb->info_wfd = sb->status_wfd = sb->egress_fd = -1;
    sb->dns_fd = sb->http_fd = sb->tls_fd = -1;
    sb->nhost_ports = 0;
    sb->drop_uid = geteuid() == 0;

    if (sb->drop_uid && ((rc = chown_tree(sb->workdir, e)) || (rc = chown_tree(sb->homedir, e))))
        goto fail;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        rc = err_set(e, ERR_SYS, "sandbox: socketpair: %s", strerror(errno));
        goto fail;
    }
    pid = fork();
    if (pid < 0) {
        rc = err_set(e, ERR_SYS, "sandbox: fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        goto fail;
    }
    if (pid == 0) {
        close(sv[0]);
        ns_child(sv[1], geteuid() != 0, getuid(), getgid(), spec->host_ports, spec->nhost_ports);
    }
    close(sv[1]);
    rc = ns_receive(sv[0], fds, &nfds, need, e);
    close(sv[0]);
    if (rc)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc)
        goto fail;
    *listen_fd = fds[0];
    sb->netns_fd = fds[1];
    sb->egress_fd = fds[2];
    sb->dns_fd = fds[3];
    sb->http_fd = fds[4];
    sb->tls_fd = fds[5];
    for (size_t i = 0; i < spec->nhost_ports; i++) {
        sb->host_port_fd[i] = fds[SANDBOX_NS_FIXED + i];
        sb->host_port[i] = spec->host_ports[i];
    }
    sb->nhost_ports = spec->nhost_ports;
    sb->userns_fd = nfds > need ? fds[need] : -1;
    if (getsockname(fds[0], (struct sockaddr *)&sa, &salen) < 0) {
        rc = err_set(e, ERR_SYS, "sandbox: getsockname: %s", strerror(errno));
        goto fail;
    }
    *port = ntohs(sa.sin_port);
    salen = sizeof(sa);
    if (getsockname(fds[2], (struct sockaddr *)&sa, &salen) < 0) {
        rc = err_set(e, ERR_SYS, "sandbox: getsockname: %s", strerror(errno));
        goto fail;
    }
    sb->egress_port = ntohs(sa.sin_port);
    if (sb->ops == &sandbox_native_ops)
        cgroup_setup(sb); /* an engine sets its own */
    *out = sb;
    return 0;
fail:
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    *listen_fd = -1;
    sb->netns_fd = sb->userns_fd = sb->egress_fd = sb->dns_fd = sb->http_fd = sb->tls_fd = -1;
    sb->nhost_ports = 0;
    sandbox_close(sb);
    return rc;
}

void sandbox_close(struct sandbox *sb)
{
    if (sb == NULL)
        return;
    sandbox_kill(sb, 0);
    if (sb->cg_mem[0])
        cgroup_put(sb->cg_mem, 1);
    if (sb->cg_pids[0])
        cgroup_put(sb->cg_pids, 0);
    if (sb->netns_fd >= 0)
        close(sb->netns_fd);
    if (sb->userns_fd >= 0)
        close(sb->userns_fd);
    if (sb->egress_fd >= 0)
        close(sb->egress_fd);
    if (sb->dns_fd >= 0)
        close(sb->dns_fd);
    if (sb->http_fd >= 0)
        close(sb->http_fd);
    if (sb->tls_fd >= 0)
        close(sb->tls_fd);
    for (size_t i = 0; i < sb->nhost_ports; i++)
        close(sb->host_port_fd[i]);
    free(sb->workdir);
    free(sb->homedir);
    free(sb->self_exe);
    free(sb->image);
    for (size_t i = 0; i < SANDBOX_SPAWNS_MAX; i++)
        free(sb->containers[i]);
    free_strv(sb->ro_files);
    free_strv(sb->env);
    free_strv(sb->ro_paths);
    free(sb);
}

const char *sandbox_backend_name(const struct sandbox *sb)
{
    return sb->ops->name;
}

int sandbox_health(const char *backend, struct err *e)
{
    return sandbox_health_image(backend, NULL, e);
}

int sandbox_health_image(const char *backend, const char *image, struct err *e)
{
    char work[] = "/tmp/faultline-health-XXXXXX";
    struct buf home = BUF_INIT;
    struct sandbox_spec spec;
    struct sandbox *sb = NULL;
    struct proc p;
    int lfd = -1, rc;
    uint16_t port;
    char what[128];

    const struct sandbox_ops *ops = ops_for(backend, e);

    if (ops == NULL)
        return ERR_INVALID;
    if ((rc = ops->available(e)) != 0)
        return rc;
    if (mkdtemp(work) == NULL)
        return err_set(e, ERR_IO, "sandbox: mkdtemp: %s", strerror(errno));
    buf_addf(&home, "%s/home", work);
    memset(&spec, 0, sizeof(spec));
    spec.backend = backend;
    spec.image = image;
    spec.workdir = work;
    spec.homedir = home.data;
    if (mkdir(home.data, 0700) < 0) {
        rc = err_set(e, ERR_IO, "sandbox: mkdir %s: %s", home.data, strerror(errno));
        goto out;
    }
    rc = sandbox_open(&sb, &spec, &lfd, &port, e);
    if (rc)
        goto out;
    rc = sandbox_spawn(sb, "true", -1, -1, &p, e);
    if (rc)
        goto out;
    if (proc_wait(&p, 10000) != 0) {
        proc_terminate(&p, 100);
        rc = err_set(e, ERR_TIMEOUT, "sandbox: the trial sandbox did not end within 10 s");
    } else if (proc_exit_code(&p) != 0) {
        proc_describe(&p, what, sizeof(what));
        rc = err_set(e, ERR_SYS, "sandbox: the trial sandbox (bwrap ... true) %s", what);
    }
    proc_release(&p);
out:
    if (lfd >= 0)
        close(lfd);
    sandbox_close(sb);
    rmdir(home.data);
    rmdir(work);
    buf_release(&home);
    return rc;
}

int sandbox_egress_listener(const struct sandbox *sb, uint16_t *port)
{
    *port = sb->egress_port;
    return sb->egress_fd;
}

int sandbox_dns_socket(const struct sandbox *sb)
{
    return sb->dns_fd;
}

int sandbox_transparent_listener(const struct sandbox *sb, int tls)
{
    return tls ? sb->tls_fd : sb->http_fd;
}

int sandbox_host_port_listener(const struct sandbox *sb, size_t i, int *port)
{
    if (i >= sb->nhost_ports)
        return ERR_NOTFOUND;
    *port = sb->host_port[i];
    return sb->host_port_fd[i];
}

int sandbox_enter_net(const struct sandbox *sb)
{
    if (sb->netns_fd < 0)
        return EINVAL;
    if (sb->userns_fd >= 0 && setns(sb->userns_fd, CLONE_NEWUSER) < 0)
        return errno;
    if (setns(sb->netns_fd, CLONE_NEWNET) < 0)
        return errno;
    return 0;
}
