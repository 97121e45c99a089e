/*
 * sandbox: where a repetition's agent and verify run. One interface, two backends: `native`
 * (bubblewrap) and `oci` (podman, docker).
 *
 * A sandbox is made in two steps, because the controller must be listening before the agent
 * starts and must itself stay outside:
 *
 *   sandbox_open()     makes the sandbox's network namespace: a child process unshares it,
 *                      brings lo up, binds a listening TCP socket on 127.0.0.1:0 inside it (and
 *                      the egress proxy's, the DNS stub's UDP socket on 127.0.0.1:53 and the
 *                      transparent listeners on 127.0.0.1:80 and :443, and one on
 *                      127.0.0.1:PORT for each of spec->host_ports) and
 *                      passes them (and a descriptor of the namespace) back over a Unix
 *                      socket with SCM_RIGHTS. The caller hands the listener to the controller
 *                      (`faultline proxy --listen-fd N`), which accepts on it from the host
 *                      namespace and so alone reaches the real upstream.
 *   sandbox_spawn()    runs `sh -c CMD` inside: that network namespace (only lo, the
 *                      controller's listener the one open port), its own user, PID, IPC, UTS
 *                      and mount namespaces, every capability dropped, system directories
 *                      read-only, spec->workdir read-write at /work, a private /tmp, a scratch
 *                      HOME, only spec->env as its environment, and resource limits. Called
 *                      for the agent, then for verify, in the same sandbox.
 *   sandbox_kill()     ends everything running in the sandbox (SIGTERM, then SIGKILL of its
 *                      PID namespace after grace_ms).
 *   sandbox_close()    kill, then release the namespace and every descriptor; idempotent.
 *
 * sandbox_health() runs a trial sandbox (`true`); the runner refuses to start when it fails and
 * never falls back to running on the host.
 *
 * Everything here is blocking and single-threaded (the runner's own loop); a struct sandbox is
 * owned by one repetition.
 */
#ifndef FAULTLINE_SANDBOX_SANDBOX_H
#define FAULTLINE_SANDBOX_SANDBOX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"
#include "util/proc.h"

/* The path inside the sandbox the workspace is bound at, and the agent's cwd. */
#define SANDBOX_WORKDIR "/work"
/* The scratch HOME inside the sandbox. */
#define SANDBOX_HOME "/home/agent"
/* Where the runner's own executable is bound read-only, on PATH inside. */
#define SANDBOX_BINDIR "/opt/faultline/bin"

struct sandbox_limits {
    long nproc;     /* RLIMIT_NPROC; default 512 */
    long nofile;    /* RLIMIT_NOFILE; default 4096 */
    long fsize_mb;  /* RLIMIT_FSIZE in MiB; default 1024 */
    long cpu_s;     /* RLIMIT_CPU in seconds; 0: none */
    long memory_mb; /* through a cgroup where the machine offers one; 0: none */
};

/* When the runner is root, what runs inside runs as the sandbox user (nobody, 65534: as root a
 * process reads every root-owned file even with every capability dropped). sandbox_open then
 * hands workdir and homedir (recursively) to that user, and every directory above them and
 * above ro_paths and self_exe must let it pass (mode 0711 or wider). */
struct sandbox_spec {
    const char *backend;         /* "native" (default when NULL) or "oci" */
    const char *image;           /* oci only: the image; NULL: the default one */
    const char *workdir;         /* host directory bound read-write at SANDBOX_WORKDIR (required) */
    const char *homedir;         /* host scratch directory bound at SANDBOX_HOME (required; the
                                  * caller empties it per repetition) */
    const char *self_exe;        /* host path of the faultline binary, bound read-only as
                                  * SANDBOX_BINDIR/faultline; NULL: not bound */
    const char *const *env;      /* NULL-terminated "NAME=VALUE": the whole environment inside
                                  * (HOME, PATH and FAULTLINE_SANDBOX are set by the backend) */
    const char *const *ro_paths; /* NULL or NULL-terminated extra host paths bound read-only at
                                  * the same path inside (an agent installed outside /usr) */
    struct sandbox_limits limits; /* zeros take the defaults above */
    /* NULL or NULL-terminated pairs (host file, path inside): each host file bound read-only
     * over that path (the run's CA bundle over the system one, src/run/trust.h). The host
     * file must exist when a command is spawned. */
    const char *const *ro_files;
    /* ports of the host's loopback the sandbox reaches through the controller (the
     * experiment's egress.host_ports, docs/egress.md): sandbox_open binds 127.0.0.1:PORT inside
     * the namespace for each, before its other listeners (so no ephemeral port takes one);
     * nhost_ports of them, at most SANDBOX_HOST_PORTS_MAX, none 53, 80 or 443 */
    const int *host_ports;
    size_t nhost_ports;
};

#define SANDBOX_HOST_PORTS_MAX 32

struct sandbox;

/* 0 when backend (NULL: native) can run a trial sandbox here; otherwise ERR_* with a one-line
 * reason in e ("bwrap: not installed (apt-get install bubblewrap)"). */
int sandbox_health(const char *backend, struct err *e);
/* sandbox_health with the trial in image (oci; NULL: the default one), which the oci backend
 * makes first when it is one of its own and missing. */
int sandbox_health_image(const char *backend, const char *image, struct err *e);

/* Makes the network namespace and its listener (see above). *out is the new sandbox; *listen_fd
 * is a listening socket bound to 127.0.0.1:*port inside it, owned by the caller (close it after
 * handing it to the controller). spec is copied. */
int sandbox_open(struct sandbox **out, const struct sandbox_spec *spec, int *listen_fd,
                 uint16_t *port, struct err *e);

/* The second listening socket sandbox_open made inside the namespace, on 127.0.0.1:*port: the
 * egress proxy's (the controller's `--egress-listen-fd`; the agent's HTTP_PROXY). Borrowed:
 * the sandbox closes it in sandbox_close (hand a dup to the controller). */
int sandbox_egress_listener(const struct sandbox *sb, uint16_t *port);

/* The UDP socket sandbox_open bound to 127.0.0.1:53 inside the namespace: the DNS stub's (the
 * controller's `--dns-listen-fd`; the sandbox's /etc/resolv.conf names it). Borrowed as the
 * egress listener is. */
int sandbox_dns_socket(const struct sandbox *sb);

/* The listening sockets sandbox_open bound to 127.0.0.1:80 (tls 0) and 127.0.0.1:443 (tls 1)
 * inside the namespace: transparent mode's (the controller's `--transparent-http-fd` and
 * `--transparent-tls-fd`), where the DNS stub's answers lead. Borrowed as the egress one. */
int sandbox_transparent_listener(const struct sandbox *sb, int tls);

/* The listening socket sandbox_open bound to 127.0.0.1:spec->host_ports[i] inside the
 * namespace (the controller's `--host-port-fd FD:PORT`), *port set to that port; ERR_NOTFOUND
 * when i is out of range. Borrowed as the egress one. */
int sandbox_host_port_listener(const struct sandbox *sb, size_t i, int *port);

/* What the namespace counted of connections that went nowhere (src/sandbox/netstat.c): no_route
 * (packets to an address with no route: a raw IP, IPv4 or IPv6) and refused (TCP connections
 * that failed before they were established: a loopback port nothing listens on). */
struct sandbox_netstat {
    uint64_t no_route;
    uint64_t refused;
};
/* Reads them from a child that joins the namespace. 0, or ERR_SYS with e set. Blocking (at
 * most 2 s). */
int sandbox_netstat(const struct sandbox *sb, struct sandbox_netstat *out, struct err *e);

/* Moves the calling process into sb's network namespace, through the user namespace that owns
 * it when the runner is not root (a namespace an unprivileged process made can only be joined
 * from inside its user namespace). For a child made to do one thing there (ask the
 * controller's health from inside): it cannot come back. 0, or an errno. */
int sandbox_enter_net(const struct sandbox *sb);

/* Starts `sh -c cmd` in the sandbox, cwd SANDBOX_WORKDIR. out_fd and err_fd are host
 * descriptors the command's stdout and stderr go to (-1: /dev/null); stdin is /dev/null.
 * p is caller storage, live until proc_release; wait on it with proc_wait. */
int sandbox_spawn(struct sandbox *sb, const char *cmd, int out_fd, int err_fd, struct proc *p,
                  struct err *e);

/* Ends every process in the sandbox: SIGTERM, up to grace_ms, then SIGKILL. 0 when nothing is
 * left running. */
/* As sandbox_spawn, but the command waits inside the sandbox, the sandbox already built around
 * it, until the caller lets it go: sandbox_go (it runs) or sandbox_no_go (it exits with
 * SANDBOX_GATE_CLOSED without running anything; so does a caller that dies). The caller makes
 * the sandbox's start overlap with its own work (the controller's start, the agent's run) and
 * still runs nothing before it is ready. The command's stdin is /dev/null once it runs. */
/* With status_fd not NULL, the command runs under `faultline sandbox supervise` where the
 * backend can (native, and oci with podman, with self_exe bound): *status_fd is then the read
 * end of its status pipe, for sandbox_read_status (supervise.h) once it exited, to be closed
 * by the caller; -1 where it cannot (oci with docker). */
int sandbox_spawn_gated(struct sandbox *sb, const char *cmd, int out_fd, int err_fd, int *status_fd,
                        struct proc *p, struct err *e);
#define SANDBOX_GATE_CLOSED 125
#define SANDBOX_GATE_CLOSED_STR "125"
/* Lets sb's sandbox_spawn_gated command p run: 0, or ERR_IO when it could not be told (it
 * exited), or the error of a spawn that failed after sandbox_spawn_gated returned (the native
 * backend does not wait for bwrap's exec there: its joining of the sandbox's cgroups waits for
 * the kernel, and the caller has other work meanwhile), e saying why. What a kill needs to know
 * of sb's spawns (the native backend reads it from bwrap after the spawn returned) is learnt
 * first. */
int sandbox_go(struct sandbox *sb, struct proc *p, struct err *e);
/* Tells a sandbox_spawn_gated command not to run (closes the gate). */
void sandbox_no_go(struct proc *p);

int sandbox_kill(struct sandbox *sb, int grace_ms);

/* sandbox_kill, then releases the namespace, descriptors and memory. NULL is a no-op. Its
 * cgroups, once empty, are kept for this process's next sandbox_open (a cgroup's making and
 * removal each wait for the kernel): sandbox_cgroups_release removes them, and runs at exit; a
 * process that ends with _exit calls it first. */
void sandbox_close(struct sandbox *sb);
void sandbox_cgroups_release(void);

/* The backend's name ("native", "oci: podman"), for rep.json and the report. */
const char *sandbox_backend_name(const struct sandbox *sb);

#endif
