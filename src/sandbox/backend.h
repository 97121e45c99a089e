/*
 * sandbox/backend.h: what sandbox.c (the part every backend shares: the network namespace and
 * its listener, the copied spec, the environment, cgroups, the user) and the backends
 * (bwrap.c: native; oci.c: podman, docker) share. Internal to src/sandbox.
 */
#ifndef FAULTLINE_SANDBOX_BACKEND_H
#define FAULTLINE_SANDBOX_BACKEND_H

#include <stddef.h>
#include <sys/types.h>

#include "sandbox/sandbox.h"

#define SANDBOX_UID 65534 /* nobody: the user inside when the runner is root */
#define SANDBOX_GID 65534
#define SANDBOX_SPAWNS_MAX 16 /* spawns tracked per sandbox (agent, verify, ...) */

struct sandbox_ops {
    const char *name;
    /* The backend can run here (its program exists, its image is there or was just made);
     * 0 or ERR_* with a one-line reason. */
    int (*available)(struct err *e);
    int (*spawn)(struct sandbox *sb, const char *cmd, int out_fd, int err_fd, struct proc *p,
                 struct err *e);
    /* 1: spawn runs the command under `faultline sandbox supervise` when sb->status_wfd is
     * set (supervise.h); a spawn that cannot (oci with docker) sets sb->status_wfd to -1, and
     * the caller then gets no status pipe */
    int supervised;
    /* Ends everything the backend started in sb (see sandbox_kill). */
    int (*kill)(struct sandbox *sb, int grace_ms);
    /* Learns what spawn left to learn later (native: each spawn's PID namespace), before a
     * gated command is let go; NULL when there is nothing. */
    void (*settle)(struct sandbox *sb);
};

/* The oci backend's image when none is given, made on first use (oci.c). */
#define OCI_DEFAULT_IMAGE "localhost/faultline-sandbox:1"

extern const struct sandbox_ops sandbox_native_ops;
extern const struct sandbox_ops sandbox_oci_ops;

struct spawn_ns {
    pid_t init; /* host pid of the PID namespace's init (bwrap's child), 0 when gone */
    dev_t dev;  /* the PID namespace, as /proc/N/ns/pid names it */
    ino_t ino;
};

struct sandbox {
    const struct sandbox_ops *ops;
    char *image; /* oci: the image */
    /* the spec, copied */
    char *workdir, *homedir, *self_exe;
    char **env, **ro_paths;
    char **ro_files; /* pairs: host file, path inside */
    struct sandbox_limits limits;
    int netns_fd, userns_fd; /* userns_fd: -1 when root made the namespace */
    int egress_fd;           /* the egress proxy's listener inside, or -1 */
    uint16_t egress_port;
    int dns_fd;          /* the DNS stub's UDP socket on 127.0.0.1:53 inside, or -1 */
    int http_fd, tls_fd; /* transparent mode's listeners on 127.0.0.1:80 and :443, or -1 */
    int host_port_fd[SANDBOX_HOST_PORTS_MAX]; /* listeners on 127.0.0.1:host_port[i] inside */
    int host_port[SANDBOX_HOST_PORTS_MAX];
    size_t nhost_ports;
    int drop_uid;                               /* 1: run as SANDBOX_UID */
    char cg_mem[256], cg_pids[256];             /* cgroup directories made for it, or "" */
    struct spawn_ns spawns[SANDBOX_SPAWNS_MAX]; /* native */
    /* native: spawns whose --info-fd is not read yet (settle reads it): [0, npending) */
    struct {
        int fd;      /* the info pipe's read end */
        pid_t bwrap; /* bwrap's pid (the runner's child, so not reused while unreaped) */
    } pending[SANDBOX_SPAWNS_MAX];
    int npending;
    char *containers[SANDBOX_SPAWNS_MAX]; /* oci: names of the containers started */
    unsigned nspawned;
    /* what before_exec needs, prepared in the parent (the child may not allocate) */
    int info_wfd, out_fd, err_fd;
    int gated;      /* the spawn under way is sandbox_spawn_gated's: its stdin is a pipe */
    int status_wfd; /* and, when not -1, its supervisor's status pipe (supervise.h) */
};

/* An argument vector under construction (strings borrowed) and the strings made for it. */
struct args {
    const char **v;
    size_t n, cap;
    char *own[64];
    size_t nown;
};

void args_add(struct args *a, const char *s);
/* Adds a copy of s (owned by a) and returns it. */
const char *args_own(struct args *a, const char *s);
void args_release(struct args *a);

/* The environment inside: the spec's, with HOME, FAULTLINE_SANDBOX and (when the spec sets
 * none) PATH. A malloc'd NULL-terminated array of borrowed strings. */
char **sandbox_env(const struct sandbox *sb);

/* Limits through setrlimit, for a child before exec: 0 or an errno value. */
int sandbox_set_limit(int res, long v);

uint64_t sandbox_mono_ms(void);

/* The proc_opts every backend spawns with: argv, stdin /dev/null, stdout and stderr to out_fd
 * and err_fd (-1: /dev/null; moved into place by sandbox_dup_stdio in before), dying with the
 * caller. The caller sets the environment. */
void sandbox_proc_opts(struct sandbox *sb, struct proc_opts *o, const char *const *argv, int out_fd,
                       int err_fd, int (*before)(void *));

/* In a backend's before_exec: puts the spawn's out_fd and err_fd on 1 and 2. 0 or errno. */
int sandbox_dup_stdio(const struct sandbox *sb);

/* Writes s to the existing file path (a cgroup or /proc file): 0 or an errno value. Safe
 * between fork and exec. */
int sandbox_write_str(const char *path, const char *s);

/* The argument vector of one oci spawn (`ENGINE run ... IMAGE /bin/sh -c cmd`), into a:
 * engine "podman" or "docker", the container's name, the network namespace's path. */
void oci_argv(struct args *a, const char *engine, const struct sandbox *sb, const char *name,
              const char *netns_path, const char *cmd);

#endif
