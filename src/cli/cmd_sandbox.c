/*
 * cmd_sandbox: `faultline sandbox check` runs the backend's health check (a trial sandbox
 * running `true`), the one `faultline run` makes before anything else; `faultline sandbox exec
 * [--work DIR] [--env NAME]... [--ro-path P]... -- COMMAND` runs `sh -c COMMAND` in a fresh
 * sandbox exactly as a repetition's agent runs (docs/run.md): to try an agent, or an escape,
 * by hand. Its exit code is COMMAND's.
 *
 * Exit codes (exitcodes.c): check 0 healthy, 1 not; exec COMMAND's code (128 + signal when
 * killed), 1 when the sandbox could not be made; 64 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "sandbox/sandbox.h"
#include "sandbox/supervise.h"
#include "util/num.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

#define SANDBOX_FLAG_LIST_MAX 64

struct sb_flags {
    const char *env[SANDBOX_FLAG_LIST_MAX + 1];
    size_t nenv;
    const char *ro[SANDBOX_FLAG_LIST_MAX + 1];
    size_t nro;
};

static int on_env(const struct opt *op, const char *v, struct err *e)
{
    struct sb_flags *f = op->value;

    if (f->nenv >= SANDBOX_FLAG_LIST_MAX)
        return err_set(e, ERR_LIMIT, "at most %d --env", SANDBOX_FLAG_LIST_MAX);
    f->env[f->nenv++] = v;
    return 0;
}

static int on_ro(const struct opt *op, const char *v, struct err *e)
{
    struct sb_flags *f = op->value;

    if (f->nro >= SANDBOX_FLAG_LIST_MAX)
        return err_set(e, ERR_LIMIT, "at most %d --ro-path", SANDBOX_FLAG_LIST_MAX);
    if (v[0] != '/')
        return err_set(e, ERR_INVALID, "--ro-path needs an absolute path, not '%s'", v);
    f->ro[f->nro++] = v;
    return 0;
}

static int sandbox_check(const char *backend, const char *image)
{
    struct err e = {0};

    if (sandbox_health_image(backend, image, &e) != 0) {
        fprintf(stderr, "faultline sandbox: %s\n", e.msg);
        return EXIT_FAIL;
    }
    printf("sandbox: %s: healthy\n", backend);
    return cli_stdout_status(EXIT_OK);
}

static int sandbox_exec(const char *backend, const char *image, const char *work_arg,
                        struct sb_flags *f, char **cmdv, int ncmd)
{
    char tmp[] = "/tmp/faultline-sandbox-XXXXXX";
    struct buf home = BUF_INIT, cmd = BUF_INIT, envs = BUF_INIT;
    const char *envv[SANDBOX_FLAG_LIST_MAX + 1];
    size_t nenvv = 0;
    struct sandbox_spec spec;
    struct sandbox *sb = NULL;
    struct err e = {0};
    struct proc p;
    int lfd = -1, rc = EXIT_FAIL, spawned = 0;
    uint16_t port;
    char self[4096];
    ssize_t k;

    if (mkdtemp(tmp) == NULL) {
        fprintf(stderr, "faultline sandbox: mkdtemp: %s\n", strerror(errno));
        return EXIT_FAIL;
    }
    chmod(tmp, 0711); /* the sandbox user must pass through it (sandbox.h) */
    buf_addf(&home, "%s/home", tmp);
    if (mkdir(home.data, 0700) < 0 ||
        (work_arg == NULL && (buf_addf(&envs, "%s/work", tmp), mkdir(envs.data, 0700) < 0))) {
        fprintf(stderr, "faultline sandbox: mkdir: %s\n", strerror(errno));
        goto out;
    }
    for (size_t i = 0; i < f->nenv; i++) {
        const char *v = getenv(f->env[i]);
        if (v == NULL)
            continue;
        struct buf b = BUF_INIT;
        buf_addf(&b, "%s=%s", f->env[i], v);
        envv[nenvv++] = buf_detach(&b, NULL); /* freed below */
    }
    envv[nenvv] = NULL;
    for (int i = 0; i < ncmd; i++)
        buf_addf(&cmd, "%s%s", i ? " " : "", cmdv[i]);
    k = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (k > 0)
        self[k] = '\0';
    memset(&spec, 0, sizeof(spec));
    spec.backend = backend;
    spec.image = image;
    spec.workdir = work_arg ? work_arg : envs.data;
    spec.homedir = home.data;
    spec.self_exe = k > 0 ? self : NULL;
    spec.env = envv;
    spec.ro_paths = f->ro;
    if (sandbox_open(&sb, &spec, &lfd, &port, &e) != 0 ||
        sandbox_spawn(sb, cmd.data, STDOUT_FILENO, STDERR_FILENO, &p, &e) != 0) {
        fprintf(stderr, "faultline sandbox: %s\n", e.msg);
        goto out;
    }
    spawned = 1;
    proc_wait(&p, -1);
    rc = proc_exit_code(&p);
out:
    if (spawned)
        proc_release(&p);
    if (lfd >= 0)
        close(lfd);
    sandbox_close(sb);
    for (size_t i = 0; i < nenvv; i++)
        free((char *)envv[i]);
    if (fs_remove_tree(tmp, &e) != 0)
        fprintf(stderr, "faultline sandbox: %s\n", e.msg);
    buf_release(&home);
    buf_release(&cmd);
    buf_release(&envs);
    return rc;
}

int cmd_sandbox(int argc, char **argv)
{
    struct sb_flags f = {0};
    const char *work = NULL, *backend = "native", *image = NULL;
    int nargs, rc;
    const struct opt opts[] = {
        OPT_STRING("sandbox", "native|oci", &backend, NULL, "the backend"),
        OPT_STRING("sandbox-image", "IMAGE", &image, "localhost/faultline-sandbox:1",
                   "oci: the image; node: localhost/faultline-sandbox-node:1 (both made on first "
                   "use)"),
        OPT_STRING("work", "DIR", &work, "a new empty directory",
                   "exec: the directory bound read-write at /work"),
        OPT_CALL("env", "NAME", on_env, &f,
                 "exec: pass this variable of the environment in (repeatable)"),
        OPT_CALL("ro-path", "PATH", on_ro, &f,
                 "exec: also bind this host path read-only, at the same path (repeatable)"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "sandbox",
        .usage = "check | exec [options] -- COMMAND...",
        .about = "check: runs the sandbox backend's health check (a trial sandbox running true),\n"
                 "as faultline run does first. exec: runs sh -c COMMAND in a fresh sandbox, as a\n"
                 "repetition's agent runs, and exits with its code.\n",
        .opts = opts,
        .min_args = 1,
        .max_args = -1,
        .example = "sandbox exec -- 'id; ls /work; cat /etc/hostname'",
        .doc = "docs/run.md",
    };

    /* internal: the first process inside a native sandbox (src/sandbox/supervise.h) */
    if (argc >= 5 && strcmp(argv[1], "supervise") == 0 && strcmp(argv[2], "--status-fd") == 0 &&
        strcmp(argv[4], "--") == 0) {
        long long fd;
        if (num_parse_ll(argv[3], 3, 1 << 20, &fd) != 0 || argc < 6) {
            fprintf(stderr, "faultline sandbox supervise: --status-fd FD -- COMMAND...\n");
            return EXIT_USAGE;
        }
        return sandbox_supervise((int)fd, argv + 5);
    }
    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (strcmp(argv[0], "check") == 0 && nargs == 1)
        return sandbox_check(backend, image);
    if (strcmp(argv[0], "exec") == 0 && nargs >= 2)
        return sandbox_exec(backend, image, work, &f, argv + 1, nargs - 1);
    opt_usage_error(&cmd, "expected `check` or `exec -- COMMAND`");
    return EXIT_USAGE;
}
