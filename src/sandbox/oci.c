/*
 * oci: the container backend of sandbox.h (podman; docker's argument vector is the same where
 * an engine runs).
 *
 * A spawn is `ENGINE run --rm` of the image with the native backend's rules: every capability
 * dropped, no new privileges, the sandbox user, a read-only root with a private /tmp, the work
 * directory at /work, the scratch HOME, the faultline binary read-only on PATH, limits on
 * processes, open files, file size and memory, and the repetition's network namespace
 * (`--network ns:/proc/PID/fd/N`, the descriptor sandbox.c holds), so that the controller's
 * listener is the one way out. Environment values never appear in the argument vector: each
 * variable is passed by name (`--env NAME`), the engine reading its value from its own
 * environment.
 *
 * Supervised (supervise.h). A gated spawn with a status pipe (the agent's) runs `faultline
 * sandbox supervise --status-fd 3 -- /bin/sh -c cmd` as the container's first process: the
 * pipe's write end is put on descriptor 3 of the engine, every other descriptor above stderr
 * close-on-exec, and `--preserve-fds 1` hands descriptor 3, and only it, into the container,
 * where the supervisor makes it close-on-exec before the command runs. docker has no way to
 * pass a descriptor in (its daemon starts the container): there the command runs alone and
 * the caller gets no status pipe.
 *
 * The images (oci_image.c): the default one, localhost/faultline-sandbox:1, holds only mount
 * points, and the host's /usr and /etc are bound into it read-only at run time, exactly as the
 * native backend does; the -node one (`--sandbox-image node`) and any other image given with
 * --sandbox-image are used as they are (their own /usr and /etc). The two built-in ones are
 * made on first use from local files (no registry can be reached here).
 *
 * podman is run with runc and a CONTAINERS_CONF of its own (crun cannot set the limits on some
 * kernels), unless the user's environment names one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/backend.h"
#include "sandbox/oci.h"
#include "util/buf.h"
#include "util/fs.h"

#include "util/banned.h"

#define OCI_CMD_TIMEOUT_MS 60000
#define OCI_STATUS_FD 3 /* the supervisor's status pipe, inside and in the engine */
#define OCI_STATUS_FD_STR "3"

static const char *engine(void)
{
    const char *e = getenv("FAULTLINE_OCI_ENGINE");

    if (e && *e)
        return e;
    if (access("/usr/bin/podman", X_OK) == 0 || access("/usr/local/bin/podman", X_OK) == 0)
        return "podman";
    if (access("/usr/bin/docker", X_OK) == 0 || access("/usr/local/bin/docker", X_OK) == 0)
        return "docker";
    return "podman";
}

/* "CONTAINERS_CONF=FILE" for podman, into b: the user's, or one written under /tmp; NULL when
 * it cannot be written (podman then runs with its own defaults). */
static const char *containers_conf(struct buf *b)
{
    const char *user = getenv("CONTAINERS_CONF");
    static const char conf[] = "[containers]\n"
                               "default_ulimits = [\"nofile=20000:20000\", \"nproc=32768:32768\"]\n"
                               "[engine]\n"
                               "runtime = \"runc\"\n";
    struct buf dir = BUF_INIT;
    struct err e = {0};
    const char *r = NULL;

    buf_reset(b);
    if (user && *user) {
        buf_addf(b, "CONTAINERS_CONF=%s", user);
        return b->data;
    }
    buf_addf(&dir, "/tmp/faultline-oci-%ld", (long)getuid());
    if (mkdir(dir.data, 0700) == 0 || errno == EEXIST) {
        buf_adds(&dir, "/containers.conf");
        if (fs_write_file(dir.data, conf, sizeof(conf) - 1, &e) == 0) {
            buf_addf(b, "CONTAINERS_CONF=%s", dir.data);
            r = b->data;
        }
    }
    buf_release(&dir);
    return r;
}

/* Reads fd (non-blocking) to its end or until timeout_ms, keeping at most max bytes in out. */
static void read_some(int fd, struct buf *out, size_t max, int timeout_ms)
{
    uint64_t end = sandbox_mono_ms() + (uint64_t)timeout_ms;
    char chunk[65536];

    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        uint64_t now = sandbox_mono_ms();
        ssize_t n;

        if (now >= end)
            return;
        if (poll(&pfd, 1, (int)(end - now)) < 0 && errno != EINTR)
            return;
        n = read(fd, chunk, sizeof(chunk));
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            return;
        if (n > 0 && out->len < max)
            buf_add(out, chunk, (size_t)n < max - out->len ? (size_t)n : max - out->len);
    }
}

int oci_run_tool(const char *const *argv, struct buf *out, size_t max, int timeout_ms,
                 struct err *e)
{
    struct buf cc = BUF_INIT;
    const char *env[2] = {containers_conf(&cc), NULL};
    struct proc_opts o;
    struct proc p;
    int rc;

    memset(&o, 0, sizeof(o));
    o.argv = argv;
    o.env_add = env[0] ? env : NULL;
    o.in = PROC_NULL;
    o.out = out ? PROC_PIPE : PROC_NULL;
    o.err = out ? PROC_STDOUT : PROC_NULL;
    o.die_with_parent = 1;
    rc = proc_spawn(&p, &o, e);
    buf_release(&cc);
    if (rc == ERR_NOTFOUND) {
        err_clear(e);
        return err_set(e, ERR_NOTFOUND,
                       "sandbox: %s is not installed (apt-get install podman runc)", argv[0]);
    }
    if (rc)
        return rc;
    if (out)
        read_some(p.out_fd, out, max, timeout_ms);
    if (proc_wait(&p, timeout_ms) != 0) {
        proc_terminate(&p, 500);
        proc_release(&p);
        return err_set(e, ERR_TIMEOUT, "sandbox: %s %s did not end within %d s", argv[0], argv[1],
                       timeout_ms / 1000);
    }
    rc = proc_exit_code(&p);
    proc_release(&p);
    return rc;
}

static int oci_available(struct err *e)
{
    return oci_image_ensure(engine(), OCI_DEFAULT_IMAGE, NULL, e);
}

void oci_argv(struct args *a, const char *eng, const struct sandbox *sb, const char *name,
              const char *netns_path, const char *cmd)
{
    char num[64];
    const char *image = oci_image_name(sb->image);
    int default_image = strcmp(image, OCI_DEFAULT_IMAGE) == 0;
    /* podman hands the supervisor's status pipe in as descriptor 3 (oci_before_exec) */
    int supervised = sb->status_wfd >= 0 && sb->self_exe && strcmp(eng, "docker") != 0;
    char **env = sandbox_env(sb);

    args_add(a, eng);
    args_add(a, "run");
    if (sb->gated)
        args_add(a, "--interactive"); /* stdin stays the gate's pipe */
    args_add(a, "--rm");
    if (supervised) {
        args_add(a, "--preserve-fds");
        args_add(a, "1");
    }
    args_add(a, "--name");
    args_add(a, name);
    args_add(a, "--network");
    if (strcmp(eng, "docker") == 0) {
        args_add(a, "none"); /* docker cannot join a namespace by path: no controller then */
    } else {
        snprintf(num, sizeof(num), "ns:%s", netns_path);
        args_add(a, args_own(a, num));
    }
    args_add(a, "--cap-drop");
    args_add(a, "ALL");
    args_add(a, "--security-opt");
    args_add(a, "no-new-privileges");
    args_add(a, "--user");
    snprintf(num, sizeof(num), "%d:%d", SANDBOX_UID, SANDBOX_GID);
    args_add(a, args_own(a, num));
    args_add(a, "--pids-limit");
    snprintf(num, sizeof(num), "%ld", sb->limits.nproc);
    args_add(a, args_own(a, num));
    args_add(a, "--ulimit"); /* each limit named: one given replaces the configured ones */
    snprintf(num, sizeof(num), "nproc=%ld:%ld", sb->limits.nproc, sb->limits.nproc);
    args_add(a, args_own(a, num));
    args_add(a, "--ulimit");
    snprintf(num, sizeof(num), "nofile=%ld:%ld", sb->limits.nofile, sb->limits.nofile);
    args_add(a, args_own(a, num));
    args_add(a, "--ulimit");
    snprintf(num, sizeof(num), "fsize=%ld:%ld", sb->limits.fsize_mb * 1024 * 1024,
             sb->limits.fsize_mb * 1024 * 1024);
    args_add(a, args_own(a, num));
    if (sb->limits.cpu_s > 0) {
        args_add(a, "--ulimit");
        snprintf(num, sizeof(num), "cpu=%ld:%ld", sb->limits.cpu_s, sb->limits.cpu_s);
        args_add(a, args_own(a, num));
    }
    if (sb->limits.memory_mb > 0) {
        args_add(a, "--memory");
        snprintf(num, sizeof(num), "%ldm", sb->limits.memory_mb);
        args_add(a, args_own(a, num));
    }
    args_add(a, "--read-only");
    args_add(a, "--tmpfs");
    args_add(a, "/tmp");
    if (default_image) {
        args_add(a, "--volume");
        args_add(a, "/usr:/usr:ro");
        args_add(a, "--volume");
        args_add(a, "/etc:/etc:ro");
    }
    {
        struct buf v = BUF_INIT;
        buf_addf(&v, "%s:%s", sb->workdir, SANDBOX_WORKDIR);
        args_add(a, "--volume");
        args_add(a, args_own(a, v.data));
        buf_reset(&v);
        buf_addf(&v, "%s:%s", sb->homedir, SANDBOX_HOME);
        args_add(a, "--volume");
        args_add(a, args_own(a, v.data));
        if (sb->self_exe) {
            buf_reset(&v);
            buf_addf(&v, "%s:%s/faultline:ro", sb->self_exe, SANDBOX_BINDIR);
            args_add(a, "--volume");
            args_add(a, args_own(a, v.data));
        }
        for (char **r = sb->ro_paths; r && *r; r++) {
            buf_reset(&v);
            buf_addf(&v, "%s:%s:ro", *r, *r);
            args_add(a, "--volume");
            args_add(a, args_own(a, v.data));
        }
        for (char **f = sb->ro_files; f && f[0] && f[1]; f += 2) {
            buf_reset(&v);
            buf_addf(&v, "%s:%s:ro", f[0], f[1]);
            args_add(a, "--volume");
            args_add(a, args_own(a, v.data));
        }
        buf_release(&v);
    }
    args_add(a, "--workdir");
    args_add(a, SANDBOX_WORKDIR);
    for (char **v = env; *v; v++) {
        const char *eq = strchr(*v, '=');
        struct buf n = BUF_INIT;
        if (eq == NULL)
            continue;
        buf_add(&n, *v, (size_t)(eq - *v));
        args_add(a, "--env");
        args_add(a, args_own(a, n.data));
        buf_release(&n);
    }
    free(env);
    args_add(a, image);
    if (supervised) {
        args_add(a, SANDBOX_BINDIR "/faultline");
        args_add(a, "sandbox");
        args_add(a, "supervise");
        args_add(a, "--status-fd");
        args_add(a, OCI_STATUS_FD_STR);
        args_add(a, "--");
    }
    args_add(a, "/bin/sh");
    args_add(a, "-c");
    args_add(a, cmd);
}

/* proc_spawn's before_exec: stdout and stderr in place, and the supervisor's status pipe, when
 * there is one, on OCI_STATUS_FD (what `--preserve-fds 1` passes in), the one descriptor above
 * stderr the engine inherits. */
static int oci_before_exec(void *arg)
{
    struct sandbox *sb = arg;
    int err = sandbox_dup_stdio(sb), fl;

    if (err || sb->status_wfd < 0)
        return err;
    if (sb->status_wfd != OCI_STATUS_FD && dup2(sb->status_wfd, OCI_STATUS_FD) < 0)
        return errno;
    fl = fcntl(OCI_STATUS_FD, F_GETFD);
    if (fl < 0 || fcntl(OCI_STATUS_FD, F_SETFD, fl & ~FD_CLOEXEC) < 0)
        return errno;
    close_range(OCI_STATUS_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC);
    return 0;
}

static int oci_spawn(struct sandbox *sb, const char *cmd, int out_fd, int err_fd, struct proc *p,
                     struct err *e)
{
    const char *eng = engine();
    struct args a = {0};
    struct buf name = BUF_INIT, ns = BUF_INIT, cc = BUF_INIT;
    char **env;
    size_t n = 0;
    const char **envp;
    struct proc_opts o;
    unsigned slot = sb->nspawned % SANDBOX_SPAWNS_MAX;
    int rc;

    if ((rc = oci_image_ensure(eng, oci_image_name(sb->image), sb->self_exe, e)) < 0)
        return rc;
    /* docker cannot pass a descriptor in: no supervisor there, and sandbox_spawn_gated hands
     * the caller no status pipe (backend.h) */
    if (strcmp(eng, "docker") == 0 || sb->self_exe == NULL)
        sb->status_wfd = -1;
    env = sandbox_env(sb);
    buf_addf(&name, "faultline-%ld-%p-%u", (long)getpid(), (void *)sb, sb->nspawned++);
    buf_addf(&ns, "/proc/%ld/fd/%d", (long)getpid(), sb->netns_fd);
    oci_argv(&a, eng, sb, name.data, ns.data, cmd);
    /* the engine's environment: ours, the sandbox's values (passed on by name), its config */
    while (env[n])
        n++;
    envp = xcalloc(n + 2, sizeof(*envp));
    memcpy(envp, env, n * sizeof(*envp));
    envp[n] = containers_conf(&cc);
    sandbox_proc_opts(sb, &o, a.v, out_fd, err_fd, oci_before_exec);
    o.env_add = envp;
    rc = proc_spawn(p, &o, e);
    if (rc == ERR_NOTFOUND) {
        err_clear(e);
        rc = err_set(e, ERR_NOTFOUND,
                     "sandbox: %s is not installed (apt-get install podman "
                     "runc)",
                     eng);
    }
    if (rc == 0) {
        free(sb->containers[slot]);
        sb->containers[slot] = buf_detach(&name, NULL);
    }
    free(envp);
    free(env);
    args_release(&a);
    buf_release(&name);
    buf_release(&ns);
    buf_release(&cc);
    return rc;
}

static int oci_kill(struct sandbox *sb, int grace_ms)
{
    const char *eng = engine();
    char secs[16];
    int rc = 0;

    snprintf(secs, sizeof(secs), "%d", (grace_ms + 999) / 1000);
    for (size_t i = 0; i < SANDBOX_SPAWNS_MAX; i++) {
        struct err e = {0};
        const char *stop[] = {eng, "stop", "--ignore", "--time", secs, NULL, NULL};
        const char *rm[] = {eng, "rm", "--force", "--ignore", NULL, NULL};

        if (sb->containers[i] == NULL)
            continue;
        stop[5] = sb->containers[i];
        rm[4] = sb->containers[i];
        if (strcmp(eng, "docker") == 0) { /* no --ignore there */
            stop[2] = "--time";
            stop[3] = secs;
            stop[4] = sb->containers[i];
            stop[5] = NULL;
            rm[3] = sb->containers[i];
            rm[4] = NULL;
        }
        oci_run_tool(stop, NULL, 0, OCI_CMD_TIMEOUT_MS, &e);
        if (oci_run_tool(rm, NULL, 0, OCI_CMD_TIMEOUT_MS, &e) < 0)
            rc = ERR_TIMEOUT;
        free(sb->containers[i]);
        sb->containers[i] = NULL;
    }
    return rc;
}

const struct sandbox_ops sandbox_oci_ops = {
    .name = "oci",
    .available = oci_available,
    .spawn = oci_spawn,
    .supervised = 1,
    .kill = oci_kill,
};
