/*
 * runner: see runner.h. One struct run per `faultline run`; one struct rep per repetition,
 * alive while it runs. The run's mock model is the runner's child from before the first
 * repetition to after the last. Every child of a repetition (controller, the sandbox with the
 * agent and verify) is ended on every path out of rep_run, including the stop flag, so a
 * SIGTERM of the runner leaves no process, namespace or workspace behind.
 *
 * Repetition states (rep_begin, then rep_go; with one repetition at a time, the next one's
 * BEGIN runs while the current one is in AGENT, and a BEGUN one that is not to run is
 * discarded: rep_discard):
 *   BEGIN    --plan, workspace, carry-in, HOME, sandbox, controller spawned, agent and verify
 *              at their gates--> BEGUN
 *   BEGIN    --any failure--> ERROR (reported by rep_go)
 *   BEGUN    --rep_go: controller healthy, the agent's gate opened--> AGENT
 *   AGENT    --agent exited--> VERIFY
 *   AGENT    --monitor condition (monitor_check)--> ABORTED (sandbox_kill)
 *   AGENT    --stop flag--> ABORTED ("interrupted")
 *   AGENT    --controller exited--> ERROR (sandbox_kill)
 *   VERIFY   --verify exited / timed out--> DONE
 *   any      --> teardown (rep_teardown): controller, runner events, files, sandbox,
 *                workspace
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h>

#include "agent/cmdrun.h"
#include "codec/httpc.h"
#include "events/events.h"
#include "experiment/experiment.h"
#include "model/mockscript.h"
#include "plan/plan.h"
#include "policy/policy.h"
#include "report/rpt.h"
#include "run/carry.h"
#include "run/gatecheck.h"
#include "run/hostports.h"
#include "run/monitor.h"
#include "run/report.h"
#include "run/trust.h"
#include "run/runner.h"
#include "run/world_run.h"
#include "run/workspace.h"
#include "sandbox/sandbox.h"
#include "sandbox/supervise.h"
#include "score/score.h"
#include "util/fs.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "util/url.h"
#include "util/banned.h"

#define RUN_PATH_MAX 4096
/* The sandbox's /etc/resolv.conf: the controller's DNS stub (src/control/dnsstub.h). */
#define RUN_RESOLV_CONF                                                                            \
    "# faultline: the sandbox resolves with its DNS stub\nnameserver 127.0.0.1\noptions timeout:2 attempts:2\n"
/* Directories paths are made below: short enough that a file name always fits. */
#define RUN_BASE_MAX 3000
#define RUN_REPDIR_MAX 3500
#define RUN_MOCK_KEY "faultline-mock-key"
/* agent.out keeps at most this much of the agent's stdout; one pump moves at most this much */
#define RUN_AGENT_OUT_MAX ((uint64_t)64 << 20)
#define RUN_PUMP_MAX ((size_t)1 << 20)
/* At most this many ended repetitions' files written at once (rep_finish's children), and how
 * long the run waits for one (a removal of a large workspace included) before it ends it. */
#define RUN_FINISHING_MAX 4
#define RUN_FINISH_TIMEOUT_MS 60000

struct run {
    struct run_opts o;
    struct experiment *x;
    char exe[RUN_PATH_MAX];
    char project[RUN_BASE_MAX]; /* the git toplevel, real path */
    char report_path[RUN_BASE_MAX];
    char dir[RUN_BASE_MAX];  /* the run folder */
    char tmp[RUN_BASE_MAX];  /* the seed, workspaces and HOMEs */
    char head[72];           /* the project's HEAD commit (sha1 or sha256, hex) */
    char seed[RUN_PATH_MAX]; /* the repository each workspace copies (workspace.h) */
    int seeded;              /* 1 once seed exists; seed_error set when it failed */
    char seed_error[RUN_PATH_MAX + 64];
    char mock_script[RUN_PATH_MAX]; /* "" when not a mock run */
    /* the run's one mock model (a script answers each request alone: it holds no state), shared
     * by every repetition; mock_url "" with mock_error set when it did not start */
    struct proc mock;
    int mock_live;
    char mock_url[256], mock_error[RUN_PATH_MAX + 64];
    /* with one repetition at a time: the next repetition, begun (rep_begin) while the current
     * one's agent runs, or NULL; phase_end: the end of the phase running (it is not begun
     * across the baselines' end, which decides whether the faulted ones run) */
    struct rep *ahead;
    int phase_end;
    char upstream_anthropic[1024], upstream_openai[1024];
    const char *backend_name;
    char backend_buf[64];
    const char *backend;   /* "native" or "oci": run_new's choice (run_opts.backend) */
    const char *image;     /* the OCI image, or NULL (the backend's default) */
    int prefix;            /* with --jobs > 1: "[rep N] " before each line of the agent's output */
    char status_text[200]; /* the live status line's text, "" when none */
    int status_shown;
    json_t *reps;   /* the runner's facts per repetition, for the report */
    json_t *report; /* once written */
    int exit_code;
    int inotify_fd; /* wait_ready's, watching tmp; -1 until the first wait */
    /* with one repetition at a time: the children writing ended repetitions' files (rep_finish),
     * waited for before the report (finish_wait_all) */
    pid_t finishing[RUN_FINISHING_MAX];
    int nfinishing;
    /* with one repetition at a time: the next repetition's workspace, copied while this one
     * runs (workspace_for) */
    struct workspace_job copy_ahead;
    int copy_ahead_index;
    char status[16]; /* run.json status */
    char error[700];
};

/* ---- small helpers ---- */

/* The live status line (opts.status_line: a terminal): drawn on the progress stream without a
 * newline, erased ("\r", erase to end of line) before anything else is printed there or on
 * the agent's stream, and drawn again after. */
static void status_clear(struct run *r)
{
    if (r->status_shown) {
        fputs("\r\033[K", r->o.progress);
        fflush(r->o.progress);
        r->status_shown = 0;
    }
}

static void status_draw(struct run *r)
{
    if (!r->o.status_line || r->o.progress == NULL || r->status_text[0] == '\0')
        return;
    fprintf(r->o.progress, "\r\033[K%s", r->status_text);
    fflush(r->o.progress);
    r->status_shown = 1;
}

static void progress(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(struct run *r, const char *fmt, ...)
{
    va_list ap;
    if (r->o.progress == NULL)
        return;
    status_clear(r);
    va_start(ap, fmt);
    fputs("faultline run: ", r->o.progress);
    vfprintf(r->o.progress, fmt, ap);
    fputc('\n', r->o.progress);
    va_end(ap);
    status_draw(r);
    fflush(r->o.progress);
}

static int stopped(const struct run *r)
{
    return r->o.stop != NULL && *r->o.stop != 0;
}

/* Appends s quoted for sh. */
static void shq(struct buf *b, const char *s)
{
    buf_addc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            buf_adds(b, "'\\''");
        else
            buf_addc(b, *s);
    }
    buf_addc(b, '\'');
}

/* Runs a git command line (already quoted) in cwd; *out (may be NULL) gets its stdout. The
 * exit code, or a negative ERR_* when it could not start. */
static int git(const char *cwd, const char *cmd, struct buf *out, struct err *e)
{
    struct cmdrun_opts co = {
        .command = cmd, .cwd = cwd, .timeout_ms = 60000, .max_output = (size_t)4 << 20};
    struct cmdrun_result res;
    int rc;

    cmdrun_result_init(&res);
    rc = cmdrun(&co, &res, e);
    if (rc == 0) {
        rc = res.exit_code < 0 ? 255 : res.exit_code;
        if (out)
            buf_add(out, res.out.data, res.out.len);
        if (rc != 0)
            err_set(e, ERR_IO, "%s: %s%s%.200s", cmd, res.status, res.err.len ? ": " : "",
                    res.err.data);
    }
    cmdrun_result_release(&res);
    return rc;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void rm_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int write_json(const char *path, json_t *j, struct err *e)
{
    return report_write_json(j, path, e);
}

/* ---- preconditions ---- */

/* 1 when rel (a path of the project) is the experiment file or its mock-model script: the
 * runner reads them from the project, never through a workspace, so an untracked one (as
 * `faultline init` leaves them) does not make the tree dirty. */
static int is_run_input(const struct run *r, const char *rel)
{
    char path[RUN_PATH_MAX], real[RUN_PATH_MAX], mock[RUN_PATH_MAX], *slash;
    const json_t *m = r->x ? json_object_get(r->x->model, "mock") : NULL;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", r->project, rel) >= sizeof(path) ||
        realpath(path, real) == NULL)
        return 0;
    if (realpath(r->o.experiment, path) && strcmp(path, real) == 0)
        return 1;
    if (!json_is_string(m))
        return 0;
    if (json_string_value(m)[0] == '/') {
        snprintf(mock, sizeof(mock), "%s", json_string_value(m));
    } else {
        snprintf(path, sizeof(path), "%s", r->o.experiment);
        slash = strrchr(path, '/');
        if (slash)
            *slash = '\0';
        if ((size_t)snprintf(mock, sizeof(mock), "%s/%s", slash ? path : ".",
                             json_string_value(m)) >= sizeof(mock))
            return 0;
    }
    return realpath(mock, path) && strcmp(path, real) == 0;
}

static int find_project(struct run *r, struct err *e)
{
    char dirbuf[RUN_PATH_MAX], *slash;
    struct buf out = BUF_INIT, cmd = BUF_INIT;
    int rc;

    if (realpath(r->o.experiment, dirbuf) == NULL)
        return err_set(e, ERR_IO, "cannot resolve '%s': %s", r->o.experiment, strerror(errno));
    slash = strrchr(dirbuf, '/');
    if (slash == dirbuf)
        slash[1] = '\0';
    else
        *slash = '\0';
    rc = git(dirbuf, "git rev-parse --show-toplevel", &out, e);
    if (rc != 0) {
        err_clear(e);
        rc = err_set(e, ERR_INVALID,
                     "'%s' is not in a git repository: the run needs a clean git "
                     "working tree",
                     r->o.experiment);
        goto out;
    }
    while (out.len && (out.data[out.len - 1] == '\n' || out.data[out.len - 1] == '\r'))
        out.data[--out.len] = '\0';
    char *real = realpath(out.data, NULL);
    if (real == NULL || strlen(real) >= sizeof(r->project)) {
        rc = err_set(e, ERR_IO, "cannot resolve '%s': %s", out.data,
                     real ? "path too long" : strerror(errno));
        free(real);
        goto out;
    }
    snprintf(r->project, sizeof(r->project), "%s", real);
    free(real);
    buf_reset(&out);
    rc = git(r->project, "git rev-parse --verify --quiet HEAD", &out, e);
    if (rc != 0) {
        err_clear(e);
        rc = err_set(e, ERR_INVALID, "the repository '%s' has no commit yet", r->project);
        goto out;
    }
    while (out.len && (out.data[out.len - 1] == '\n' || out.data[out.len - 1] == '\r'))
        out.data[--out.len] = '\0';
    if (out.len == 0 || out.len >= sizeof(r->head) ||
        strspn(out.data, "0123456789abcdef") != out.len) {
        rc = err_set(e, ERR_INVALID, "git rev-parse HEAD in '%s' printed no commit", r->project);
        goto out;
    }
    snprintf(r->head, sizeof(r->head), "%s", out.data);
    /* Dirty: anything `git status` names, but the carried-in paths (they are carried) and the
     * run's own untracked inputs (is_run_input). */
    buf_reset(&out);
    rc = git(r->project, "git status --porcelain=v1 -z --untracked-files=all", &out, e);
    if (rc != 0) {
        rc = ERR_INVALID;
        goto out;
    }
    for (size_t i = 0; i < out.len;) {
        const char *ent = out.data + i, *path = ent + 3;
        size_t l = strlen(ent);
        int rename = ent[0] == 'R' || ent[0] == 'C';
        i += l + 1;
        if (rename && i < out.len)
            i += strlen(out.data + i) + 1; /* the rename's source */
        if (l < 4 || (ent[0] == '?' && (carry_is_carried(path) || is_run_input(r, path))))
            continue;
        if (cmd.len < 300)
            buf_addf(&cmd, "%s%s", cmd.len ? ", " : "", path);
        else if (cmd.len < 310)
            buf_adds(&cmd, ", ...");
    }
    if (cmd.len) {
        rc = err_set(e, ERR_INVALID,
                     "the working tree of '%s' is not clean (commit or stash first; every "
                     "repetition starts from HEAD): %s",
                     r->project, cmd.data);
        goto out;
    }
    rc = 0;
out:
    buf_release(&out);
    buf_release(&cmd);
    return rc;
}

static int find_model(struct run *r, struct err *e)
{
    const json_t *m = r->x->model;
    const char *v;
    char base[RUN_PATH_MAX], *slash;

    r->mock_script[0] = '\0';
    snprintf(r->upstream_anthropic, sizeof(r->upstream_anthropic), "https://api.anthropic.com");
    snprintf(r->upstream_openai, sizeof(r->upstream_openai), "https://api.openai.com");
    if (r->o.model_upstream) {
        snprintf(r->upstream_anthropic, sizeof(r->upstream_anthropic), "%s", r->o.model_upstream);
        snprintf(r->upstream_openai, sizeof(r->upstream_openai), "%s", r->o.model_upstream);
        return 0;
    }
    if (json_is_object(m) && json_is_string(json_object_get(m, "mock"))) {
        struct mockscript *s;
        v = json_string_value(json_object_get(m, "mock"));
        if (v[0] == '/') {
            snprintf(r->mock_script, sizeof(r->mock_script), "%s", v);
        } else {
            snprintf(base, sizeof(base), "%s", r->x->path);
            slash = strrchr(base, '/');
            if (slash)
                *slash = '\0';
            if ((size_t)snprintf(r->mock_script, sizeof(r->mock_script), "%s/%s",
                                 slash ? base : ".", v) >= sizeof(r->mock_script))
                return err_set(e, ERR_LIMIT, "mock script path too long");
        }
        s = mockscript_load(r->mock_script, e);
        if (s == NULL)
            return ERR_INVALID;
        mockscript_free(s);
        return 0;
    }
    v = json_is_string(m) ? json_string_value(m) : NULL;
    if (v == NULL || strcmp(v, "openai") == 0 || strcmp(v, "anthropic") == 0) {
        /* A paid API: refuse at once without its key, and say how to run offline. */
        const char *a = getenv("ANTHROPIC_API_KEY"), *o = getenv("OPENAI_API_KEY");
        int has_a = a && a[0], has_o = o && o[0];
        if (v == NULL ? !has_a && !has_o : strcmp(v, "openai") == 0 ? !has_o : !has_a)
            return err_set(e, ERR_INVALID,
                           "no %s in the environment for model '%s': set it, or run offline "
                           "with 'model: {mock: SCRIPT}' (docs/mock-model.md) or "
                           "--model-upstream URL",
                           v == NULL                  ? "ANTHROPIC_API_KEY or OPENAI_API_KEY"
                           : strcmp(v, "openai") == 0 ? "OPENAI_API_KEY"
                                                      : "ANTHROPIC_API_KEY",
                           v ? v : "(default)");
        return 0;
    }
    if (json_is_string(m)) {
        snprintf(r->upstream_anthropic, sizeof(r->upstream_anthropic), "%s", v);
        snprintf(r->upstream_openai, sizeof(r->upstream_openai), "%s", v);
    }
    return 0;
}

/* As root the native sandbox's user is nobody (bwrap maps no host user to it), which passes through
 * a directory only by its "others" bit: a TMPDIR below a 0700 directory (a test harness's, a
 * home's) would leave every workspace and HOME unreachable, and bwrap would fail in each
 * repetition with "Permission denied". Refused here, with the directory named. */
static int tmp_reachable(const char *tmpdir, struct err *e)
{
    char path[PATH_MAX], *slash;
    struct stat st;

    if (geteuid() != 0 || realpath(tmpdir, path) == NULL)
        return 0; /* an unprivileged sandbox maps the user to itself; a missing TMPDIR fails later
                   */
    for (;;) {
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && !(st.st_mode & S_IXOTH))
            return err_set(e, ERR_INVALID,
                           "the sandbox cannot reach TMPDIR '%s': '%s' is mode %04o, and its user "
                           "(nobody, when faultline runs as root) passes through a directory only "
                           "by its x bit for others; set TMPDIR to a directory everyone can pass "
                           "through, such as /tmp",
                           tmpdir, path, (unsigned)(st.st_mode & 07777));
        slash = strrchr(path, '/');
        if (slash == NULL || slash == path)
            return 0;
        *slash = '\0';
    }
}

static int make_out(struct run *r, struct err *e)
{
    const char *tmpdir = getenv("TMPDIR");
    struct stat st;
    char tmpl[RUN_PATH_MAX];

    if (tmpdir == NULL || tmpdir[0] != '/')
        tmpdir = "/tmp"; /* a relative TMPDIR would move with each child's cwd */
    if (r->o.out && r->o.out[0] != '/') {
        char cwd[1024];
        if (getcwd(cwd, sizeof(cwd)) == NULL)
            return err_set(e, ERR_IO, "cannot find the current directory: %s", strerror(errno));
        if ((size_t)snprintf(r->report_path, sizeof(r->report_path), "%s/%s", cwd, r->o.out) >=
            sizeof(r->report_path))
            return err_set(e, ERR_LIMIT, "--out path too long");
    } else if (r->o.out) {
        if ((size_t)snprintf(r->report_path, sizeof(r->report_path), "%s", r->o.out) >=
            sizeof(r->report_path))
            return err_set(e, ERR_LIMIT, "--out path too long");
    } else {
        char stamp[32];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
        if (strlen(tmpdir) > 1000)
            return err_set(e, ERR_LIMIT, "TMPDIR is longer than 1000 bytes");
        snprintf(r->report_path, sizeof(r->report_path), "%.1000s/faultline-%s-%s-%ld.json", tmpdir,
                 r->x->name, stamp, (long)getpid());
    }
    if (report_run_dir(r->report_path, r->dir, sizeof(r->dir)) < 0)
        return err_set(e, ERR_LIMIT, "--out path too long");
    if (lstat(r->dir, &st) == 0)
        return err_set(e, ERR_INVALID,
                       "the run folder '%s' already exists (remove it or choose another --out)",
                       r->dir);
    if (strcmp(r->backend, "native") == 0 && tmp_reachable(tmpdir, e) < 0)
        return ERR_INVALID; /* rootful podman's containers reach it as root */
    if (fs_mkdirs(r->dir, e) < 0)
        return ERR_IO;
    if (strlen(tmpdir) > 1000)
        return err_set(e, ERR_LIMIT, "TMPDIR is longer than 1000 bytes");
    snprintf(tmpl, sizeof(tmpl), "%.1000s/faultline-run.XXXXXX", tmpdir);
    if (mkdtemp(tmpl) == NULL)
        return err_set(e, ERR_IO, "cannot make a temporary directory in '%s': %s", tmpdir,
                       strerror(errno));
    snprintf(r->tmp, sizeof(r->tmp), "%.1100s", tmpl);
    /* The sandbox user (nobody, when the runner is root) must pass through to the workspaces
     * and HOMEs below it; it can list nothing here. */
    if (chmod(r->tmp, 0711) < 0)
        return err_set(e, ERR_IO, "cannot chmod '%s': %s", r->tmp, strerror(errno));
    return 0;
}

struct run *run_new(const struct run_opts *o, enum run_refusal *why, struct buf *diags,
                    struct err *e)
{
    struct run *r = xcalloc(1, sizeof(*r));
    struct experiment_diags d = {0};
    ssize_t n;

    r->o = *o;
    r->exit_code = 1;
    r->inotify_fd = -1;
    r->reps = json_array();
    snprintf(r->status, sizeof(r->status), "error");
    *why = RUN_REFUSED_EXPERIMENT;
    r->x = experiment_load(o->experiment, &d, e);
    if (diags)
        experiment_diags_format(&d, o->experiment, diags);
    if (r->x == NULL) {
        if (e->code == 0)
            err_set(e, ERR_INVALID, "'%s' is not a valid experiment (%zu error%s)", o->experiment,
                    d.nerrors, d.nerrors == 1 ? "" : "s");
        goto fail;
    }
    if (o->self_exe) {
        snprintf(r->exe, sizeof(r->exe), "%s", o->self_exe);
    } else if ((n = readlink("/proc/self/exe", r->exe, sizeof(r->exe) - 1)) > 0) {
        r->exe[n] = '\0';
    } else {
        err_set(e, ERR_IO, "cannot find the faultline executable: %s", strerror(errno));
        goto fail;
    }
    /* The sandbox: --sandbox, else the experiment's, else oci when an image is named (by
     * --sandbox-image or the experiment), else native; an image is for oci only. */
    r->image = o->sandbox_image ? o->sandbox_image : r->x->sandbox_image;
    r->backend = o->backend      ? o->backend
                 : r->x->sandbox ? r->x->sandbox
                 : r->image      ? "oci"
                                 : "native";
    if (strcmp(r->backend, "native") == 0 && r->image) {
        if (diags)
            buf_addf(diags,
                     "faultline run: warning: the sandbox image '%.200s' is ignored: the "
                     "native sandbox runs no image\n",
                     r->image);
        r->image = NULL;
    }
    r->o.backend = r->backend;
    *why = RUN_REFUSED_SANDBOX;
    if (sandbox_health_image(r->backend, r->image, e) < 0)
        goto fail;
    *why = RUN_REFUSED_PROJECT;
    if (find_project(r, e) < 0)
        goto fail;
    *why = RUN_REFUSED_MODEL;
    if (find_model(r, e) < 0)
        goto fail;
    *why = RUN_REFUSED_OUT;
    if (make_out(r, e) < 0)
        goto fail;
    *why = RUN_REFUSED_NONE;
    experiment_diags_release(&d);
    return r;
fail:
    experiment_diags_release(&d);
    run_free(r);
    return NULL;
}

/* ---- one repetition ---- */

struct rep {
    struct run *r;
    int index;
    struct plan *plan;
    char dir[RUN_REPDIR_MAX], work[RUN_REPDIR_MAX], home[RUN_REPDIR_MAX];
    int workspace_made;
    struct proc mock, ctl;
    int ctl_live;
    char ctl_ready[RUN_PATH_MAX]; /* the controller's ready file */
    /* the controller's --ca-dir (ca.pem, ca-bundle.pem): in the run's temporary directory, which
     * the sandbox user can pass through (the run folder need not be), so that the sandbox can
     * bind the bundle; ca.pem and the bundle are copied into the run folder at the end */
    char ca_dir[RUN_REPDIR_MAX];
    /* verify, started at the agent's go behind the sandbox's gate (sandbox_spawn_gated), so
     * that its sandbox is built while the agent runs */
    struct proc vp;
    int vp_live, vp_fd;
    struct sandbox *sb;
    uint16_t port;
    uint16_t egress_port; /* the egress proxy's listener inside (HTTP_PROXY) */
    int nsfd;
    struct monitor mon;
    /* results */
    char status[16]; /* complete, aborted, error */
    char error[512];
    struct monitor_abort abort;
    int aborted;
    int agent_ran, agent_exit, agent_signal;
    int64_t agent_ms;
    int verify_ran, verify_exit, verify_signal;
    int64_t verify_ms, t_agent_end, t_verify_end;
    int64_t t_begin;                 /* rep_begin: the run_start event's time */
    int64_t t_start;                 /* rep_go: the repetition's duration starts */
    uint64_t out_bytes, out_dropped; /* the agent's stdout kept and dropped */
    int at_line_start;
    /* rep_begin's outcome: begin_error set when even the plan could not be made; ready when
     * the agent waits at its gate (agent_spawn) */
    char begin_error[512];
    int ready;
    struct buf carry_log; /* carry-in's lines, printed by rep_go */
    /* the agent behind its gate (agent_spawn), let go by agent_phase */
    struct proc ap;
    int ap_live;
    int a_rfd, a_outfd, a_errfd, a_stfd; /* its stdout pipe, agent.out, agent.err, status */
};

static int rep_fail(struct rep *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rep_fail(struct rep *p, const char *fmt, ...)
{
    va_list ap;
    if (p->status[0] == '\0' || strcmp(p->status, "complete") == 0) {
        va_start(ap, fmt);
        vsnprintf(p->error, sizeof(p->error), fmt, ap);
        va_end(ap);
        snprintf(p->status, sizeof(p->status), "error");
    }
    return ERR_IO;
}

/* exit_fd's "no descriptor", and poll(2)'s "ignore this entry". */
#define NO_FD (-1)

/* A descriptor that becomes readable when pr exits (pidfd_open), or NO_FD where the kernel has
 * none: the waits below then fall back to short sleeps. Caller closes it. */
static int exit_fd(const struct proc *pr)
{
    int fd;

    if (pr->pid <= 0 || pr->exited)
        return NO_FD;
    fd = (int)syscall(SYS_pidfd_open, pr->pid, 0);
    return fd >= 0 ? fd : NO_FD;
}

/* Waits up to timeout_ms for pr to exit, woken by its exit_fd (xfd, -1: proc_wait's short
 * sleeps). A signal ends the wait early. 0 when it exited, ERR_TIMEOUT. */
static int wait_exit(struct proc *pr, int xfd, int timeout_ms)
{
    struct pollfd pf = {.fd = xfd, .events = POLLIN};
    if (xfd < 0)
        return proc_wait(pr, timeout_ms);
    if (!proc_poll(pr))
        poll(&pf, 1, timeout_ms);
    return proc_poll(pr) ? 0 : ERR_TIMEOUT;
}

/* Waits for a child's ready file (written whole by a rename, fs_write_file): woken by inotify
 * on its directory or by the child's exit, not by a timer. ERR_TIMEOUT, or ERR_IO when the
 * child exited first. */
static int wait_ready(struct proc *pr, const char *file, int timeout_ms, struct run *r)
{
    int64_t end = time_mono_ns() + (int64_t)timeout_ms * 1000000;
    char dir[RUN_PATH_MAX], *slash;
    struct pollfd pf[2];
    struct stat st;
    int rc = ERR_TIMEOUT;

    if (stat(file, &st) == 0 && st.st_size > 0)
        return 0; /* ready already: a repetition begun ahead */
    snprintf(dir, sizeof(dir), "%s", file);
    slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    /* One inotify instance for the run, watching the run's temporary directory, where every
     * ready file is: closing one waits for the kernel (an SRCU grace period, 15-25 ms on a
     * loaded VM), so it is closed once, by run_free. */
    if (r->inotify_fd < 0 && slash && strcmp(dir, r->tmp) == 0) {
        r->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (r->inotify_fd >= 0 && inotify_add_watch(r->inotify_fd, r->tmp, IN_MOVED_TO) < 0) {
            close(r->inotify_fd);
            r->inotify_fd = -1;
        }
    }
    pf[0].fd = slash && strcmp(dir, r->tmp) == 0 ? r->inotify_fd : -1;
    pf[1].fd = exit_fd(pr);
    pf[0].events = pf[1].events = POLLIN;
    for (;;) {
        int64_t left = (end - time_mono_ns()) / 1000000;
        char drain[4096];
        if (stat(file, &st) == 0 && st.st_size > 0) {
            rc = 0;
            break;
        }
        if (proc_poll(pr)) {
            rc = ERR_IO;
            break;
        }
        if (stopped(r) || left <= 0)
            break;
        /* woken by the descriptors; the timer only bounds how late the stop flag is seen (a
         * signal landing just before poll) and stands in for a missing descriptor */
        int tick = pf[0].fd >= 0 && pf[1].fd >= 0 ? RUN_TICK_MS : 20;
        poll(pf, 2, left < tick ? (int)left : tick);
        if (pf[0].fd >= 0)
            while (read(pf[0].fd, drain, sizeof(drain)) > 0)
                ;
    }
    if (pf[1].fd >= 0)
        close(pf[1].fd);
    return rc;
}

static int read_addr(const char *file, char *out, size_t size)
{
    struct buf b = BUF_INIT;
    struct err e = {0};
    int rc = fs_read_file(file, 256, &b, &e);
    if (rc == 0) {
        while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == ' '))
            b.data[--b.len] = '\0';
        snprintf(out, size, "%s", b.data);
    }
    buf_release(&b);
    return rc;
}

/* GET /_faultline/health from inside the sandbox's network namespace: a child enters it
 * (sandbox_enter_net: through its user namespace when the runner is not root) and asks. 0 when
 * it answered 200; ERR_SYS when the child could not enter (no retry helps). */
#define HEALTH_NO_ENTRY 3 /* the probe's exit code when it could not enter the namespace */

static int health_probe(struct rep *p)
{
    pid_t pid;
    int ws;

    if (p->nsfd < 0)
        return 0; /* no way into the namespace: the ready file and a live process stand in */
    pid = fork();
    if (pid < 0)
        return ERR_SYS;
    if (pid == 0) {
        struct url u;
        struct err e = {0};
        struct httpc_parser hp;
        char addr[64];
        if (sandbox_enter_net(p->sb) != 0)
            _exit(HEALTH_NO_ENTRY);
        snprintf(addr, sizeof(addr), "http://127.0.0.1:%u", (unsigned)p->port);
        if (url_parse(addr, &u, &e) < 0)
            _exit(4);
        struct httpc_call c = {.url = &u,
                               .method = "GET",
                               .target = "/_faultline/health",
                               .connect_timeout_ms = 1000,
                               .idle_timeout_ms = 1000,
                               .total_timeout_ms = 1500,
                               .max_body = 65536};
        int rc = httpc_call_run(&c, &hp, &e);
        int ok = rc == 0 && hp.status == 200;
        httpc_parser_release(&hp);
        _exit(ok ? 0 : 1);
    }
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == HEALTH_NO_ENTRY)
        return ERR_SYS;
    return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : ERR_PROTO;
}

static const char *const *sandbox_env(struct rep *p, struct buf *store, const char **vec,
                                      size_t cap)
{
    struct run *r = p->r;
    size_t n = 0, off[96];

    buf_reset(store);
    off[n++] = store->len;
    buf_addf(store, "FAULTLINE_RUN=%s", plan_run_id(p->plan));
    buf_addc(store, '\0');
    off[n++] = store->len;
    buf_addf(store, "FAULTLINE_CANARY=%s", plan_canary(p->plan));
    buf_addc(store, '\0');
    off[n++] = store->len;
    buf_adds(store, "FAULTLINE_SANDBOX=1");
    buf_addc(store, '\0');
    if (r->x->mcp_servers || r->x->world) {
        off[n++] = store->len;
        buf_adds(store, "FAULTLINE_MCP_CONFIG=" SANDBOX_HOME "/mcp.json");
        buf_addc(store, '\0');
    }
    if (r->x->world) { /* docs/world.md: for an agent that starts the world itself */
        off[n++] = store->len;
        buf_adds(store, "FAULTLINE_WORLD=" WORLD_RUN_FILE);
        buf_addc(store, '\0');
        off[n++] = store->len;
        buf_adds(store, "FAULTLINE_LEDGER=" WORLD_RUN_LEDGER);
        buf_addc(store, '\0');
    }
    /* The providers' keys, by name. A mock run gets a placeholder: never the user's key, so
     * nothing a mock run does can spend it. */
    for (int k = 0; k < 2; k++) {
        const char *nm = k == 0 ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
        const char *v = r->mock_script[0] ? RUN_MOCK_KEY : getenv(nm);
        if (v == NULL)
            continue;
        off[n++] = store->len;
        buf_addf(store, "%s=%s", nm, v);
        buf_addc(store, '\0');
    }
    for (size_t i = 0; i < r->x->nenv && n + 1 < cap && n < 90; i++) {
        const char *v = getenv(r->x->env[i]);
        if (v == NULL)
            continue;
        if (strcmp(r->x->env[i], "ANTHROPIC_API_KEY") == 0 ||
            strcmp(r->x->env[i], "OPENAI_API_KEY") == 0)
            continue; /* passed above (a placeholder in a mock run) */
        off[n++] = store->len;
        buf_addf(store, "%s=%s", r->x->env[i], v);
        buf_addc(store, '\0');
    }
    for (size_t i = 0; i < n && i + 1 < cap; i++)
        vec[i] = store->data + off[i];
    vec[n < cap ? n : cap - 1] = NULL;
    return vec;
}

/* The MCP configuration Claude Code's --mcp-config reads: every experiment server behind the
 * shim (`faultline mcp --name S -- COMMAND ARGS`), which asks the controller. */
static int write_mcp_config(struct rep *p, struct err *e)
{
    const char *name;
    json_t *srv, *root, *servers;
    char path[RUN_PATH_MAX];
    int rc;

    if (p->r->x->mcp_servers == NULL && p->r->x->world == NULL)
        return 0;
    root = json_object();
    servers = json_object();
    json_object_set_new(root, "mcpServers", servers);
    json_object_foreach(p->r->x->mcp_servers, name, srv)
    {
        json_t *args = json_array(), *ent = json_object(), *a;
        size_t i;
        json_array_append_new(args, json_string("mcp"));
        json_array_append_new(args, json_string("--name"));
        json_array_append_new(args, json_string(name));
        json_array_append_new(args, json_string("--"));
        json_array_append(args, json_object_get(srv, "command"));
        json_array_foreach(json_object_get(srv, "args"), i, a) json_array_append(args, a);
        json_object_set_new(ent, "type", json_string("stdio"));
        json_object_set_new(ent, "command", json_string(SANDBOX_BINDIR "/faultline"));
        json_object_set_new(ent, "args", args);
        json_object_set_new(servers, name, ent);
    }
    if (p->r->x->world && (rc = world_run_config(p->r->x->world, p->home, servers, e)) < 0) {
        json_decref(root);
        return rc;
    }
    snprintf(path, sizeof(path), "%s/mcp.json", p->home);
    rc = write_json(path, root, e);
    json_decref(root);
    return rc;
}

/* Starts the run's mock model (before the first repetition, in the runner itself, so that
 * forked repetitions share it): a failure is each repetition's error. */
static void start_mock(struct run *r)
{
    char ready[RUN_PATH_MAX], log[RUN_PATH_MAX], addr[128];
    struct err e = {0};
    snprintf(ready, sizeof(ready), "%s/mock.addr", r->tmp);
    snprintf(log, sizeof(log), "%s/mock.log", r->dir);
    const char *argv[] = {r->exe,        "mock-model",   "--script", r->mock_script, "--listen",
                          "127.0.0.1:0", "--ready-file", ready,      "--log",        log,
                          "--log-level", "info",         NULL};
    struct proc_opts po = {
        .argv = argv, .in = PROC_NULL, .out = PROC_NULL, .err = PROC_NULL, .die_with_parent = 1};
    if (proc_spawn(&r->mock, &po, &e) < 0) {
        snprintf(r->mock_error, sizeof(r->mock_error), "cannot start the mock model: %s", e.msg);
        return;
    }
    r->mock_live = 1;
    if (wait_ready(&r->mock, ready, RUN_HEALTH_TIMEOUT_MS, r) < 0) {
        snprintf(r->mock_error, sizeof(r->mock_error), "the mock model did not start (see %s)",
                 log);
        return;
    }
    if (read_addr(ready, addr, sizeof(addr)) < 0) {
        snprintf(r->mock_error, sizeof(r->mock_error), "cannot read the mock model's address");
        return;
    }
    snprintf(r->mock_url, sizeof(r->mock_url), "http://%s", addr);
}

static void stop_mock(struct run *r)
{
    if (r->mock_live) {
        proc_terminate(&r->mock, RUN_GRACE_MS);
        proc_release(&r->mock);
        r->mock_live = 0;
    }
}

/* The gate endpoint's policy (docs/gate.md): the project's file as carried into the workspace,
 * and a snapshot of the user's taken now into the repetition's folder (the agent's HOME is a
 * fresh one, and a later edit does not change a run under way). Either path is set to "" when
 * there is no such file. 0, or ERR_IO / ERR_LIMIT for a user file that cannot be read. */
static int policy_files(struct rep *p, char *proj, char *user, size_t size, struct err *e)
{
    const char *home = getenv("HOME");
    char src[RUN_PATH_MAX];
    struct buf b = BUF_INIT;
    int rc = 0;

    proj[0] = user[0] = '\0';
    if (fs_exists_beneath(p->work, POLICY_PROJECT_FILE))
        snprintf(proj, size, "%s/%s", p->work, POLICY_PROJECT_FILE);
    if (home == NULL || home[0] == '\0')
        return 0;
    snprintf(src, sizeof(src), "%s/%s", home, POLICY_USER_FILE);
    if (access(src, F_OK) != 0)
        return 0;
    if ((rc = fs_read_file(src, POLICY_FILE_MAX, &b, e)) == 0) {
        snprintf(user, size, "%s/policy-user.yaml", p->dir);
        rc = fs_write_file(user, b.data, b.len, e);
    }
    buf_release(&b);
    return rc;
}

/* Starts the controller on the sandbox's listener lfd; await_controller waits for it. */
static int spawn_controller(struct rep *p, int lfd, struct err *e)
{
    struct run *r = p->r;
    char *ready = p->ctl_ready, log[RUN_PATH_MAX], plan[RUN_PATH_MAX], events[RUN_PATH_MAX];
    char fdtxt[16], efdtxt[16], dfdtxt[16], hfdtxt[16], tfdtxt[16], pproj[RUN_PATH_MAX],
        puser[RUN_PATH_MAX];
    const char *ua = r->upstream_anthropic, *uo = r->upstream_openai;
    int fd, efd, dfd, hfd, tfd, rc;

    if (r->mock_script[0]) {
        if (r->mock_url[0] == '\0')
            return err_set(e, ERR_IO, "%s", r->mock_error[0] ? r->mock_error : "no mock model");
        ua = uo = r->mock_url;
    }
    snprintf(p->ctl_ready, sizeof(p->ctl_ready), "%s/proxy-%03d.addr", r->tmp, p->index);
    snprintf(log, sizeof(log), "%s/proxy.log", p->dir);
    snprintf(plan, sizeof(plan), "%s/plan.json", p->dir);
    snprintf(events, sizeof(events), "%s/events.jsonl", p->dir);
    if ((rc = policy_files(p, pproj, puser, sizeof(pproj), e)) < 0)
        return rc;
    /* The listener without close-on-exec for the controller alone, closed again at once. */
    fd = fcntl(lfd, F_DUPFD, 3);
    if (fd < 0)
        return err_set(e, ERR_SYS, "dup: %s", strerror(errno));
    snprintf(fdtxt, sizeof(fdtxt), "%d", fd);
    efd = fcntl(sandbox_egress_listener(p->sb, &p->egress_port), F_DUPFD, 3);
    if (efd < 0) {
        close(fd);
        return err_set(e, ERR_SYS, "dup: %s", strerror(errno));
    }
    snprintf(efdtxt, sizeof(efdtxt), "%d", efd);
    dfd = fcntl(sandbox_dns_socket(p->sb), F_DUPFD, 3);
    if (dfd < 0) {
        close(fd);
        close(efd);
        return err_set(e, ERR_SYS, "dup: %s", strerror(errno));
    }
    snprintf(dfdtxt, sizeof(dfdtxt), "%d", dfd);
    hfd = fcntl(sandbox_transparent_listener(p->sb, 0), F_DUPFD, 3);
    tfd = fcntl(sandbox_transparent_listener(p->sb, 1), F_DUPFD, 3);
    if (hfd < 0 || tfd < 0) {
        close(fd);
        close(efd);
        close(dfd);
        if (hfd >= 0)
            close(hfd);
        if (tfd >= 0)
            close(tfd);
        return err_set(e, ERR_SYS, "dup: %s", strerror(errno));
    }
    snprintf(hfdtxt, sizeof(hfdtxt), "%d", hfd);
    snprintf(tfdtxt, sizeof(tfdtxt), "%d", tfd);
    const char *argv[42 + 2 * RUN_RESOLVE_MAX] = {r->exe,
                                                  "proxy",
                                                  "--plan",
                                                  plan,
                                                  "--events",
                                                  events,
                                                  "--listen-fd",
                                                  fdtxt,
                                                  "--upstream-anthropic",
                                                  ua,
                                                  "--upstream-openai",
                                                  uo,
                                                  "--ready-file",
                                                  ready,
                                                  "--log",
                                                  log,
                                                  "--log-level",
                                                  "info",
                                                  "--egress-listen-fd",
                                                  efdtxt,
                                                  "--dns-listen-fd",
                                                  dfdtxt,
                                                  "--transparent-http-fd",
                                                  hfdtxt,
                                                  "--transparent-tls-fd",
                                                  tfdtxt,
                                                  NULL};
    size_t na = 0;
    while (argv[na])
        na++;
    for (const char *const *rs = r->o.resolve; rs && *rs && na + 3 < sizeof(argv) / sizeof(*argv);
         rs++) {
        argv[na++] = "--resolve";
        argv[na++] = *rs;
    }
    /* the experiment's egress.allow (docs/egress.md), one comma-separated argument */
    struct buf allow = BUF_INIT;
    for (size_t i = 0; i < r->x->negress_allow; i++)
        buf_addf(&allow, "%s%s", i ? "," : "", r->x->egress_allow[i]);
    if (r->x->has_egress_allow) {
        argv[na++] = "--egress-allow";
        argv[na++] = allow.data;
    }
    /* the experiment's egress.host_ports: their listeners inside (src/run/hostports.h) */
    struct hostports hp;
    int hprc = hostports_dup(p->sb, &hp, e);
    if (hprc == 0 && hp.n) {
        argv[na++] = "--host-port-fd";
        argv[na++] = hp.arg.data;
    }
    /* the run's interception CA and the sandbox's trust bundle (src/run/trust.h) */
    argv[na++] = "--ca-dir";
    argv[na++] = p->ca_dir;
    if (r->o.upstream_ca) {
        argv[na++] = "--upstream-ca";
        argv[na++] = r->o.upstream_ca;
    }
    /* the policy files last: the project's first (docs/gate.md) */
    if (pproj[0]) {
        argv[na++] = "--policy";
        argv[na++] = pproj;
    }
    if (puser[0]) {
        argv[na++] = "--policy";
        argv[na++] = puser;
    }
    argv[na] = NULL;
    struct proc_opts po = {
        .argv = argv, .in = PROC_NULL, .out = PROC_NULL, .err = PROC_NULL, .die_with_parent = 1};
    rc = hprc ? hprc : proc_spawn(&p->ctl, &po, e);
    hostports_release(&hp);
    buf_release(&allow);
    close(fd);
    close(efd);
    close(dfd);
    close(hfd);
    close(tfd);
    if (rc < 0)
        return hprc ? hprc : ERR_IO;
    p->ctl_live = 1;
    return 0;
}

/* Waits until the controller spawn_controller started wrote its ready file and answers
 * /_faultline/health from inside the sandbox's namespace. */
static int await_controller(struct rep *p, struct err *e)
{
    struct run *r = p->r;
    int rc = wait_ready(&p->ctl, p->ctl_ready, RUN_HEALTH_TIMEOUT_MS, r);
    if (rc == ERR_IO) {
        char st[96];
        proc_describe(&p->ctl, st, sizeof(st));
        return err_set(e, ERR_IO, "the controller %s before answering /_faultline/health", st);
    }
    int64_t end = time_mono_ns() + (int64_t)RUN_HEALTH_TIMEOUT_MS * 1000000;
    for (;;) {
        int hp = rc == 0 ? health_probe(p) : ERR_PROTO;
        if (hp == 0)
            return 0;
        if (hp == ERR_SYS)
            return err_set(e, ERR_SYS,
                           "cannot enter the sandbox's network namespace to ask the controller's "
                           "health (setns)");
        if (proc_poll(&p->ctl)) {
            char st[96];
            proc_describe(&p->ctl, st, sizeof(st));
            return err_set(e, ERR_IO, "the controller %s before answering /_faultline/health", st);
        }
        if (stopped(r))
            return err_set(e, ERR_IO, "interrupted");
        if (time_mono_ns() >= end)
            return err_set(e, ERR_TIMEOUT,
                           "the controller never answered /_faultline/health within %d s",
                           RUN_HEALTH_TIMEOUT_MS / 1000);
        time_sleep_ms(50);
        rc = 0;
    }
}

static void work_path(const struct run *r, int index, char *out, size_t size)
{
    snprintf(out, size, "%s/work-%03d", r->tmp, index);
}

/* The repository every workspace copies: the project's HEAD (workspace.h). When it cannot be
 * made, each repetition fails with the reason. */
static void make_seed(struct run *r)
{
    struct err e = {0};

    snprintf(r->seed, sizeof(r->seed), "%s/seed", r->tmp);
    if (workspace_seed(r->project, r->head, r->seed, &e) == 0) {
        r->seeded = 1;
        return;
    }
    snprintf(r->seed_error, sizeof(r->seed_error), "the workspace of HEAD: %s", e.msg);
    rm_tree(r->seed);
}

/* The copy begun ahead that no repetition will take: ended, its tree removed. */
static void copy_ahead_cancel(struct run *r)
{
    char path[RUN_REPDIR_MAX];

    if (!r->copy_ahead.live)
        return;
    workspace_copy_cancel(&r->copy_ahead);
    work_path(r, r->copy_ahead_index, path, sizeof(path));
    rm_tree(path);
}

/* Repetition index's workspace at path: the copy begun ahead for it, or one made now. Then,
 * with one repetition at a time, the next one's copy is begun, to run while this repetition
 * does (cp on another core, not the runner's thread). */
static int workspace_for(struct run *r, int index, const char *path, struct err *e)
{
    int rc;

    if (r->copy_ahead.live && r->copy_ahead_index == index) {
        rc = workspace_copy_finish(&r->copy_ahead, e);
    } else {
        copy_ahead_cancel(r);
        rc = workspace_make(r->seed, path, e);
    }
    if (rc == 0 && r->o.jobs <= 1 && index + 1 < 2 * r->x->repeat) {
        char next[RUN_REPDIR_MAX];
        struct err ce = {0};
        work_path(r, index + 1, next, sizeof(next));
        if (workspace_copy_start(&r->copy_ahead, r->seed, next, &ce) == 0)
            r->copy_ahead_index = index + 1;
    }
    return rc;
}

static int prepare(struct rep *p, struct err *e)
{
    struct run *r = p->r;
    struct buf log = BUF_INIT;
    char path[RUN_PATH_MAX];
    const char *env[100];
    struct buf envstore = BUF_INIT;
    char bundle[RUN_PATH_MAX];
    const char *binds[TRUST_BINDS_MAX + 2];
    char resolv[RUN_PATH_MAX];
    int lfd = -1, rc, ncarried = 0;
    size_t nb = 0;

    snprintf(p->ca_dir, sizeof(p->ca_dir), "%s/ca-%03d", r->tmp, p->index);
    snprintf(bundle, sizeof(bundle), "%s/" TRUST_BUNDLE_NAME, p->ca_dir);
    if ((rc = fs_mkdirs(p->ca_dir, e)) < 0)
        goto out;
    chmod(p->ca_dir, 0755);

    snprintf(path, sizeof(path), "%s/plan.json", p->dir);
    if ((rc = plan_save(p->plan, path, e)) < 0)
        goto out;
    work_path(r, p->index, p->work, sizeof(p->work));
    snprintf(p->home, sizeof(p->home), "%s/home-%03d", r->tmp, p->index);
    if (!r->seeded)
        rc = err_set(e, ERR_IO, "%s", r->seed_error);
    else
        rc = workspace_for(r, p->index, p->work, e);
    if (rc != 0) {
        rc = ERR_IO;
        goto out;
    }
    p->workspace_made = 1;
    if ((rc = carry_in(r->project, p->work, &log, &ncarried, e)) < 0)
        goto out;
    buf_add(&p->carry_log, log.data, log.len); /* printed when the repetition starts */
    rm_tree(p->home);
    if ((rc = fs_mkdirs(p->home, e)) < 0 || (rc = write_mcp_config(p, e)) < 0)
        goto out;
    /* the bundle's file exists before the sandbox binds it; the controller fills it in place
     * before it answers health (src/run/trust.h) */
    if ((rc = fs_write_file(bundle, "", 0, e)) < 0)
        goto out;
    /* the sandbox resolves with the controller's DNS stub (docs/sandbox.md, dnsstub.h) */
    snprintf(resolv, sizeof(resolv), "%s/resolv.conf", p->ca_dir);
    if ((rc = fs_write_file(resolv, RUN_RESOLV_CONF, strlen(RUN_RESOLV_CONF), e)) < 0)
        goto out;
    chmod(resolv, 0644);
    trust_binds(bundle, r->o.backend && strcmp(r->o.backend, "oci") == 0, binds);
    while (binds[nb])
        nb++;
    binds[nb++] = resolv;
    binds[nb++] = "/etc/resolv.conf";
    binds[nb] = NULL;
    struct sandbox_spec spec = {
        .backend = r->o.backend,
        .image = r->image, /* oci: --sandbox-image or the experiment's (docs/sandbox.md) */
        .workdir = p->work,
        .homedir = p->home,
        .self_exe = r->exe,
        .env = sandbox_env(p, &envstore, env, sizeof(env) / sizeof(env[0])),
        .ro_paths = r->o.ro_paths,
        .ro_files = binds,
        .host_ports = r->x->egress_host_ports,
        .nhost_ports = r->x->negress_host_ports,
    };
    if ((rc = sandbox_open(&p->sb, &spec, &lfd, &p->port, e)) < 0)
        goto out;
    r->backend_name = sandbox_backend_name(p->sb);
    p->nsfd = ioctl(lfd, SIOCGSKNS);
    if ((rc = spawn_controller(p, lfd, e)) < 0)
        goto out;
    rc = 0;
out:
    if (lfd >= 0)
        close(lfd);
    buf_release(&log);
    buf_release(&envstore);
    return rc;
}

/* The command run in the sandbox: the controller's URLs (known only once the sandbox's
 * listener is bound, after its environment was fixed) exported, then the experiment's
 * command. */
static void sandbox_cmd(const struct rep *p, const char *cmd, struct buf *out)
{
    buf_reset(out);
    buf_addf(out,
             "export ANTHROPIC_BASE_URL=http://127.0.0.1:%u OPENAI_BASE_URL=http://127.0.0.1:%u "
             "FAULTLINE_CONTROL_URL=http://127.0.0.1:%u\n",
             (unsigned)p->port, (unsigned)p->port, (unsigned)p->port);
    /* The egress proxy (docs/egress.md): both cases of the proxy variables, loopback (the
     * controller's model address among it) never proxied, Node told to honour them. */
    buf_addf(out,
             "export HTTP_PROXY=http://127.0.0.1:%u HTTPS_PROXY=http://127.0.0.1:%u "
             "http_proxy=http://127.0.0.1:%u https_proxy=http://127.0.0.1:%u "
             "NO_PROXY=localhost,127.0.0.1,::1 no_proxy=localhost,127.0.0.1,::1 "
             "NODE_USE_ENV_PROXY=1\n",
             (unsigned)p->egress_port, (unsigned)p->egress_port, (unsigned)p->egress_port,
             (unsigned)p->egress_port);
    /* the run's CA bundle, bound over the system's: named to every client (src/run/trust.h) */
    trust_export(out);
    /* An agent or server installed under a --ro-path directory is found by name: its bin/ (or
     * a node_modules' .bin/) goes after the sandbox's own PATH. */
    for (const char *const *d = p->r->o.ro_paths; d && *d; d++) {
        char bin[RUN_PATH_MAX];
        struct stat st;
        snprintf(bin, sizeof(bin), "%.4000s/.bin", *d);
        if (stat(bin, &st) != 0 || !S_ISDIR(st.st_mode))
            snprintf(bin, sizeof(bin), "%.4000s/bin", *d);
        if (stat(bin, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        buf_adds(out, "PATH=\"$PATH\":");
        shq(out, bin);
        buf_adds(out, "\n");
    }
    buf_adds(out, cmd);
}

static void describe_exit(const struct proc *pr, int *code, int *sig)
{
    *code = -1;
    *sig = 0;
    if (!pr->exited)
        return;
    if (WIFEXITED(pr->status))
        *code = WEXITSTATUS(pr->status);
    else if (WIFSIGNALED(pr->status))
        *sig = WTERMSIG(pr->status);
}

/* Moves what the agent printed to agent.out and the terminal: at most RUN_PUMP_MAX bytes a
 * call, so that an agent printing without pause cannot starve the abort monitor. Past
 * RUN_AGENT_OUT_MAX bytes the output is read and dropped (counted in out_dropped). 1 at EOF. */
static int pump(struct rep *p, int rfd, int outfd)
{
    char chunk[16384];
    size_t moved = 0;
    while (moved < RUN_PUMP_MAX) {
        ssize_t n = read(rfd, chunk, sizeof(chunk));
        if (n > 0) {
            moved += (size_t)n;
            if (p->out_bytes + (uint64_t)n > RUN_AGENT_OUT_MAX) {
                p->out_dropped += (uint64_t)n;
                continue;
            }
            p->out_bytes += (uint64_t)n;
            fs_write_all(outfd, chunk, (size_t)n);
            if (p->r->o.agent_out && p->r->prefix == 0) {
                status_clear(p->r);
                fwrite(chunk, 1, (size_t)n, p->r->o.agent_out);
                fflush(p->r->o.agent_out);
                if (chunk[n - 1] == '\n')
                    status_draw(p->r);
            } else if (p->r->o.agent_out) {
                /* parallel repetitions: each line says whose it is */
                for (ssize_t i = 0; i < n; i++) {
                    if (p->at_line_start)
                        fprintf(p->r->o.agent_out, "[rep %d] ", p->r->prefix - 1);
                    fputc(chunk[i], p->r->o.agent_out);
                    p->at_line_start = chunk[i] == '\n';
                }
                fflush(p->r->o.agent_out);
            }
            continue;
        }
        if (n == 0)
            return 1;
        if (errno == EINTR)
            continue;
        return 0; /* EAGAIN */
    }
    return 0;
}

/* The status line of a repetition: which, what kind, the phase, the cost so far, elapsed. */
static void rep_status(struct rep *p, const char *phase)
{
    struct run *r = p->r;
    if (!r->o.status_line)
        return;
    snprintf(r->status_text, sizeof(r->status_text), "[rep %d of %d, %s] %s  $%.4f  %.1f s",
             p->index + 1, 2 * r->x->repeat, plan_faulted(p->plan) ? "faulted" : "baseline", phase,
             p->mon.cost_usd, (double)(time_now_ms() - p->t_start) / 1000.0);
    status_draw(r);
}

static void verify_start(struct rep *p);

/* After the agent's end: gives its MCP shims, whose input just ended, a moment to write their
 * component_end through the controller (the check in rep_teardown), without a timer when
 * they already did. */
static void wait_shims(struct rep *p)
{
    int64_t end = time_mono_ns() + (int64_t)RUN_SHIM_END_MS * 1000000;
    struct err e = {0};

    while (monitor_poll(&p->mon, &e) == 0 && monitor_shims_open(&p->mon, NULL) > 0 &&
           time_mono_ns() < end && !stopped(p->r))
        time_sleep_ms(10);
}

/* How the agent really ended, from its supervisor in the sandbox (stfd, sandbox/supervise.h;
 * NO_FD where the backend has none): a signal the runner did not send (kill -9 from outside,
 * the kernel's OOM killer) is not the agent's own end, and makes the repetition an error; so
 * does a supervisor that wrote nothing (killed itself). */
static void agent_end(struct rep *p, int stfd, int killed)
{
    int code, sig;

    if (stfd < 0)
        return;
    if (sandbox_read_status(stfd, &code, &sig) != 0) {
        if (!killed)
            rep_fail(p, "the agent's sandbox ended without its supervisor's word (killed from "
                        "outside?)");
        return;
    }
    p->agent_exit = code;
    p->agent_signal = sig;
    if (sig && !killed)
        rep_fail(p, "the agent was killed by signal %d (%s) while it ran: not its own end", sig,
                 strsignal(sig));
}

/* Starts the agent and verify behind their gates (sandbox_spawn_gated): their sandboxes are
 * built while the controller starts, and neither runs before agent_phase lets the agent go.
 * Sets p->ready, or fails the repetition. */
static void agent_spawn(struct rep *p)
{
    struct err e = {0};
    struct buf cmd = BUF_INIT;
    char path[RUN_PATH_MAX];
    int pfd[2] = {-1, -1};

    snprintf(path, sizeof(path), "%s/agent.out", p->dir);
    p->a_outfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    snprintf(path, sizeof(path), "%s/agent.err", p->dir);
    p->a_errfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (p->a_outfd < 0 || p->a_errfd < 0 || pipe2(pfd, O_CLOEXEC) < 0) {
        rep_fail(p, "cannot open the agent's output files: %s", strerror(errno));
        goto out;
    }
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);
    p->a_rfd = pfd[0];
    sandbox_cmd(p, p->r->x->agent, &cmd);
    /* The sandbox binds the run's trust bundle (src/run/trust.h) before the controller has
     * filled it: prepare made the file, the controller writes it in place before it answers
     * health, so the agent reads it whole. */
    if (sandbox_spawn_gated(p->sb, cmd.data, pfd[1], p->a_errfd, &p->a_stfd, &p->ap, &e) < 0) {
        rep_fail(p, "cannot start the agent in the sandbox: %s", e.msg);
        goto out;
    }
    p->ap_live = 1;
    verify_start(p);
    p->ready = 1;
out:
    if (pfd[1] >= 0)
        close(pfd[1]);
    buf_release(&cmd);
}

/* An agent agent_spawn started and nobody let go: its gate closed, it exits unrun. */
static void agent_cancel(struct rep *p)
{
    if (!p->ap_live)
        return;
    sandbox_no_go(&p->ap);
    if (proc_wait(&p->ap, 5000) < 0)
        proc_terminate(&p->ap, RUN_GRACE_MS);
    proc_release(&p->ap);
    p->ap_live = 0;
}

static void begin_next(struct run *r, int index);

/* Lets the agent go once the controller answers from inside the sandbox, then follows it to
 * its end: its output, the abort monitor, the controller. */
static void agent_phase(struct rep *p)
{
    struct run *r = p->r;
    struct proc *ap = &p->ap;
    struct err e = {0};
    int rfd = p->a_rfd, outfd = p->a_outfd, eof = 0, killed = 0, xfd = -1;
    int stfd = p->a_stfd;
    int64_t t0;

    if (await_controller(p, &e) < 0 || sandbox_go(p->sb, ap, &e) < 0) {
        if (stopped(r)) {
            p->aborted = 1;
            p->abort.reason = "interrupted";
            snprintf(p->abort.detail, sizeof(p->abort.detail), "the run was interrupted");
        } else {
            rep_fail(p, "%s", e.code ? e.msg : "the agent's sandbox ended before it could run");
        }
        agent_cancel(p);
        return;
    }
    /* With one repetition at a time, the next one is begun now: its workspace, controller and
     * sandboxes are made while this agent runs, and it starts at its own go. */
    t0 = time_mono_ns();
    p->agent_ran = 1;
    begin_next(r, p->index);
    xfd = exit_fd(ap);
    for (;;) {
        /* woken by output, by the agent's exit (xfd) or by the monitor's tick */
        struct pollfd pf[2] = {{.fd = eof ? NO_FD : rfd, .events = POLLIN},
                               {.fd = xfd, .events = POLLIN}};
        double elapsed = (double)(time_mono_ns() - t0) / 1e9;

        if (poll(pf, 2, eof && xfd < 0 ? RUN_TICK_MS / 5 : RUN_TICK_MS) > 0 && pf[0].revents)
            eof = pump(p, rfd, outfd);
        if (proc_poll(ap) && (eof || killed))
            break;
        if (proc_poll(ap) && !eof) {
            /* exited; a background child may still hold the pipe: give it a moment */
            pf[1].fd = -1;
            for (int i = 0; i < 10 && !eof; i++) {
                if (poll(pf, 1, 20) > 0)
                    eof = pump(p, rfd, outfd);
            }
            break;
        }
        if (killed)
            continue;
        if (monitor_poll(&p->mon, &e) < 0)
            e.code = 0;
        rep_status(p, "agent");
        if (stopped(r)) {
            p->aborted = 1;
            p->abort.reason = "interrupted";
            snprintf(p->abort.detail, sizeof(p->abort.detail), "the run was interrupted");
        } else if (monitor_check(&p->mon, &r->x->abort, elapsed, &p->abort)) {
            p->aborted = 1;
        } else if (proc_poll(&p->ctl)) {
            char st[96];
            proc_describe(&p->ctl, st, sizeof(st));
            rep_fail(p, "the controller %s while the agent ran", st);
        } else {
            continue;
        }
        if (p->aborted)
            progress(r, "rep %d: aborted: %s", p->index, p->abort.detail);
        sandbox_kill(p->sb, RUN_GRACE_MS);
        killed = 1;
    }
    if (!eof)
        pump(p, rfd, outfd);
    if (wait_exit(ap, xfd, 5000) < 0)
        proc_terminate(ap, RUN_GRACE_MS);
    p->agent_ms = (time_mono_ns() - t0) / 1000000;
    p->t_agent_end = time_now_ms();
    describe_exit(ap, &p->agent_exit, &p->agent_signal);
    agent_end(p, stfd, killed);
    if (!killed)
        wait_shims(p);
    proc_release(ap);
    p->ap_live = 0;
    if (xfd >= 0)
        close(xfd);
}

/* Builds verify's sandbox before the agent runs (while the controller starts): verify waits at
 * the gate until verify_phase lets it go (or rep_teardown closes the gate when it is not to
 * run). When it cannot start
 * now, verify_phase starts it itself and reports why it could not. */
static void verify_start(struct rep *p)
{
    struct err e = {0};
    struct buf cmd = BUF_INIT;
    char path[RUN_PATH_MAX];

    snprintf(path, sizeof(path), "%s/verify.out", p->dir);
    p->vp_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    sandbox_cmd(p, p->r->x->verify, &cmd);
    if (sandbox_spawn_gated(p->sb, cmd.data, p->vp_fd, p->vp_fd, NULL, &p->vp, &e) == 0)
        p->vp_live = 1;
    buf_release(&cmd);
}

/* Ends a verify verify_start made that is not to run: the gate closed, it exits unrun. */
static void verify_cancel(struct rep *p)
{
    if (p->vp_live) {
        sandbox_no_go(&p->vp);
        if (proc_wait(&p->vp, 5000) < 0)
            proc_terminate(&p->vp, RUN_GRACE_MS);
        proc_release(&p->vp);
        p->vp_live = 0;
    }
    if (p->vp_fd >= 0)
        close(p->vp_fd);
    p->vp_fd = NO_FD;
}

static void verify_phase(struct rep *p)
{
    struct run *r = p->r;
    struct proc *vp = &p->vp;
    struct err e = {0};
    struct buf cmd = BUF_INIT;
    int xfd = -1, limit_ms = RUN_VERIFY_TIMEOUT_MS;
    int64_t t0, end;

    if (r->x->abort.wall_clock_s_above > 0 && r->x->abort.wall_clock_s_above * 1000 < limit_ms)
        limit_ms = (int)(r->x->abort.wall_clock_s_above * 1000);
    t0 = time_mono_ns();
    end = t0 + (int64_t)limit_ms * 1000000;
    if (p->vp_live) {
        if (sandbox_go(p->sb, vp, &e) < 0) {
            char st[96];
            if (proc_wait(vp, 5000) < 0)
                proc_terminate(vp, RUN_GRACE_MS);
            proc_describe(vp, st, sizeof(st));
            rep_fail(p, "verify's sandbox %s before verify could run (%s)", st, e.msg);
            goto out;
        }
    } else {
        sandbox_cmd(p, r->x->verify, &cmd);
        if (sandbox_spawn(p->sb, cmd.data, p->vp_fd, p->vp_fd, vp, &e) < 0) {
            rep_fail(p, "cannot start verify in the sandbox: %s", e.msg);
            goto out;
        }
        p->vp_live = 1;
    }
    p->verify_ran = 1;
    xfd = exit_fd(vp);
    rep_status(p, "verify");
    while (wait_exit(vp, xfd, RUN_TICK_MS) == ERR_TIMEOUT) {
        rep_status(p, "verify");
        if (stopped(r) || time_mono_ns() >= end) {
            if (stopped(r)) {
                p->aborted = 1;
                p->abort.reason = "interrupted";
                snprintf(p->abort.detail, sizeof(p->abort.detail), "the run was interrupted");
            } else {
                progress(r, "rep %d: verify ran over %d s: stopped", p->index, limit_ms / 1000);
            }
            sandbox_kill(p->sb, RUN_GRACE_MS);
            if (proc_wait(vp, 5000) < 0)
                proc_terminate(vp, RUN_GRACE_MS);
            break;
        }
    }
    p->verify_ms = (time_mono_ns() - t0) / 1000000;
    p->t_verify_end = time_now_ms();
    describe_exit(vp, &p->verify_exit, &p->verify_signal);
out:
    if (p->vp_live)
        proc_release(vp);
    p->vp_live = 0;
    if (xfd >= 0)
        close(xfd);
    buf_release(&cmd);
}

/* The run's warning that something in the sandbox tried to leave by a way faultline does not
 * cover (docs/egress.md): connections to raw IPs (no route) or refused loopback ports, as the
 * namespace counted them (sandbox_netstat). */
static void uncovered_warning(struct rep *p, struct events_writer *w)
{
    struct sandbox_netstat ns;
    struct err e = {0};
    char msg[400];
    json_t *ev;

    if (p->sb == NULL || sandbox_netstat(p->sb, &ns, &e) != 0 || ns.no_route + ns.refused == 0)
        return;
    snprintf(msg, sizeof(msg),
             "something in the sandbox tried to leave by a way faultline does not cover: %" PRIu64
             " packet(s) to an address with no route (a raw IP, not a name through the DNS stub "
             "or the proxy) and %" PRIu64
             " connection(s) refused on the sandbox's loopback (a port nothing serves: only "
             "the proxy, the DNS stub and :80 / :443 do); those requests were not seen or "
             "faulted",
             ns.no_route, ns.refused);
    progress(p->r, "rep %d: warning: %s", p->index, msg);
    ev =
        json_pack("{s:s, s:s, s:s}", "kind", "warning", "code", "egress_uncovered", "message", msg);
    events_append(w, ev);
    json_decref(ev);
}

/* The runner's own events, after the controller stopped (no other writer then), continuing
 * the file's seq. */
static void runner_events(struct rep *p)
{
    char path[RUN_PATH_MAX];
    struct err e = {0};
    struct events_writer *w;
    json_t *ev;

    monitor_poll(&p->mon, &e);
    snprintf(path, sizeof(path), "%s/events.jsonl", p->dir);
    w = events_open(path, plan_run_id(p->plan), "runner", &e);
    if (w == NULL)
        return;
    ev = json_pack("{s:s, s:I, s:i, s:b, s:s, s:s}", "kind", "run_start", "seq",
                   (json_int_t)(p->mon.max_seq + 1), "rep", p->index, "faulted",
                   plan_faulted(p->plan), "canary", plan_canary(p->plan), "experiment",
                   p->r->x->hash);
    json_object_set_new(ev, "t", json_integer(p->t_begin));
    events_append(w, ev);
    json_decref(ev);
    if (p->agent_ran) {
        ev = json_pack("{s:s, s:I}", "kind", "agent_exit", "duration_ms", (json_int_t)p->agent_ms);
        json_object_set_new(ev, "exit_code",
                            p->agent_signal ? json_null() : json_integer(p->agent_exit));
        if (p->agent_signal)
            json_object_set_new(ev, "signal", json_integer(p->agent_signal));
        json_object_set_new(ev, "t", json_integer(p->t_agent_end));
        events_append(w, ev);
        json_decref(ev);
    }
    if (p->aborted && !p->abort.by_controller) {
        ev = json_pack("{s:s, s:s, s:s}", "kind", "abort", "reason", p->abort.reason, "detail",
                       p->abort.detail);
        if (p->abort.limit > 0) {
            json_object_set_new(ev, "value", json_real(score_round(p->abort.value, 4)));
            json_object_set_new(ev, "limit", json_real(p->abort.limit));
        }
        events_append(w, ev);
        json_decref(ev);
    }
    ev = json_pack("{s:s}", "kind", "verify");
    if (p->verify_ran && !p->verify_signal && p->verify_exit >= 0) {
        json_object_set_new(ev, "exit_code", json_integer(p->verify_exit));
        json_object_set_new(ev, "duration_ms", json_integer(p->verify_ms));
    } else {
        json_object_set_new(ev, "exit_code", json_null());
        json_object_set_new(ev, "skipped", json_boolean(!p->verify_ran));
    }
    events_append(w, ev);
    json_decref(ev);
    uncovered_warning(p, w);
    ev = json_pack("{s:s, s:s}", "kind", "run_end", "outcome",
                   p->aborted                        ? "aborted"
                   : strcmp(p->status, "error") == 0 ? "error"
                                                     : "completed");
    events_append(w, ev);
    json_decref(ev);
    events_close(w);
}

static json_t *exit_json(int ran, int code, int sig, int64_t ms)
{
    json_t *j = json_object();
    json_object_set_new(j, "ran", json_boolean(ran));
    json_object_set_new(j, "exit_code",
                        ran && !sig && code >= 0 ? json_integer(code) : json_null());
    json_object_set_new(j, "signal", sig ? json_integer(sig) : json_null());
    json_object_set_new(j, "duration_ms", ran ? json_integer(ms) : json_null());
    return j;
}

/* verify.json, rep.json, and the runner's facts for the report. */
static void rep_files(struct rep *p)
{
    char path[RUN_PATH_MAX];
    struct err e = {0};
    json_t *v, *rj, *ab;
    int verify_ok = p->verify_ran && !p->verify_signal && p->verify_exit >= 0;

    v = json_object();
    json_object_set_new(v, "exit_code", verify_ok ? json_integer(p->verify_exit) : json_null());
    json_object_set_new(v, "skipped", json_boolean(!p->verify_ran));
    json_object_set_new(v, "duration_ms", p->verify_ran ? json_integer(p->verify_ms) : json_null());
    snprintf(path, sizeof(path), "%s/verify.json", p->dir);
    write_json(path, v, &e);
    json_decref(v);

    ab = json_null();
    if (p->aborted) {
        ab = json_object();
        json_object_set_new(ab, "reason", json_string(p->abort.reason));
        json_object_set_new(ab, "detail", json_string(p->abort.detail));
        if (p->abort.limit > 0) {
            json_object_set_new(ab, "value", json_real(score_round(p->abort.value, 4)));
            json_object_set_new(ab, "limit", json_real(p->abort.limit));
        }
    }
    rj = json_object();
    json_object_set_new(rj, "status", json_string(p->status));
    json_object_set_new(rj, "error", p->error[0] ? json_string(p->error) : json_null());
    json_object_set_new(rj, "abort", ab);
    json_object_set_new(rj, "rep", json_integer(p->index));
    json_object_set_new(rj, "faulted", json_boolean(plan_faulted(p->plan)));
    json_object_set_new(rj, "run", json_string(plan_run_id(p->plan)));
    json_object_set_new(rj, "canary", json_string(plan_canary(p->plan)));
    json_object_set_new(rj, "seed", json_integer((json_int_t)(plan_seed(p->plan) & INT64_MAX)));
    json_object_set_new(rj, "sandbox",
                        json_string(p->r->backend_name ? p->r->backend_name : "native"));
    json_object_set_new(rj, "agent",
                        exit_json(p->agent_ran, p->agent_exit, p->agent_signal, p->agent_ms));
    json_object_set_new(rj, "verify",
                        exit_json(p->verify_ran, p->verify_exit, p->verify_signal, p->verify_ms));
    json_object_set_new(rj, "cost_usd", json_real(score_round(p->mon.cost_usd, 6)));
    json_object_set_new(rj, "tokens",
                        json_pack("{s:I, s:I}", "input", (json_int_t)p->mon.input_tokens, "output",
                                  (json_int_t)p->mon.output_tokens));
    json_object_set_new(rj, "agent_out_dropped", json_integer((json_int_t)p->out_dropped));
    json_object_set_new(rj, "duration_ms", json_integer((time_now_ms() - p->t_start)));
    json_object_set_new(rj, "workspace",
                        p->r->o.keep && p->workspace_made ? json_string(p->work) : json_null());
    snprintf(path, sizeof(path), "%s/rep.json", p->dir);
    write_json(path, rj, &e);
    json_decref(rj);
}

/* The run's CA certificate and the sandbox's trust bundle, from the controller's --ca-dir into
 * the repetition's folder (never the CA's key: it never left the controller). */
static void keep_ca_files(struct rep *p)
{
    static const char *const names[] = {"ca.pem", TRUST_BUNDLE_NAME};
    char from[RUN_PATH_MAX], to[RUN_PATH_MAX];

    if (p->ca_dir[0] == '\0')
        return;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        struct buf b = BUF_INIT;
        struct err e = {0};
        snprintf(from, sizeof(from), "%s/%s", p->ca_dir, names[i]);
        snprintf(to, sizeof(to), "%s/%s", p->dir, names[i]);
        /* moved when the run folder is on the same file system (the bundle is the system's
         * CAs, a few hundred KB a repetition), else copied; with --keep, copied */
        if (!p->r->o.keep && rename(from, to) == 0)
            continue;
        if (fs_read_file(from, (size_t)4 << 20, &b, &e) == 0 && b.len > 0)
            fs_write_file(to, b.data, b.len, &e);
        buf_release(&b);
    }
    if (!p->r->o.keep)
        rm_tree(p->ca_dir);
}

/* The agent's descriptors agent_spawn opened. */
static void agent_close_fds(struct rep *p)
{
    int *fds[] = {&p->a_rfd, &p->a_outfd, &p->a_errfd, &p->a_stfd};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = NO_FD;
    }
}

/* Ends every process of the repetition: a gated agent or verify never let go, whatever is
 * left in its sandbox, then the controller (SIGTERM: it flushes its events). */
static void rep_end_processes(struct rep *p)
{
    agent_cancel(p);
    verify_cancel(p);
    agent_close_fds(p);
    if (p->sb)
        sandbox_kill(p->sb, RUN_GRACE_MS);
    if (p->ctl_live) {
        proc_terminate(&p->ctl, 5000);
        proc_release(&p->ctl);
        p->ctl_live = 0;
    }
    if (p->nsfd >= 0)
        close(p->nsfd);
    p->nsfd = -1;
}

/* An ended repetition's files: the world's ledger, the runner's events, rep.json, the CA files,
 * and its workspace and HOME removed. Everything it reads is the repetition's own, and its
 * processes have ended. */
static void rep_files_and_removals(struct rep *p)
{
    struct run *r = p->r;

    if (r->x->world) { /* the world's ledger (docs/world.md); it exited with the sandbox */
        struct err e = {0};
        int copied;
        if (world_run_collect(p->home, p->dir, &copied, &e) < 0)
            progress(r, "rep %d: %s", p->index, e.msg);
    }
    runner_events(p);
    rep_files(p);
    keep_ca_files(p);
    if (p->workspace_made && !r->o.keep)
        rm_tree(p->work);
    if (!r->o.keep)
        rm_tree(p->home);
}

/* Waits up to timeout_ms for the finishing child at i, ended after that; removes it from the
 * list. */
static void finish_wait(struct run *r, int i, int timeout_ms)
{
    struct proc pr = {.pid = r->finishing[i]};

    if (proc_wait(&pr, timeout_ms) < 0) {
        kill(pr.pid, SIGKILL);
        proc_wait(&pr, 5000);
    }
    r->finishing[i] = r->finishing[--r->nfinishing];
}

/* Every finishing child ended: the repetitions' files are all written. */
static void finish_wait_all(struct run *r)
{
    while (r->nfinishing > 0)
        finish_wait(r, r->nfinishing - 1, RUN_FINISH_TIMEOUT_MS);
}

/* rep_files_and_removals, with one repetition at a time in a child of the runner (a fork, no
 * exec: its memory is the repetition's), so that the next repetition's agent is let go while
 * the files are written and the trees removed; the report waits for it (finish_wait_all).
 * Inline with --jobs (each repetition is a child already) or when it cannot fork. */
static void rep_finish(struct rep *p)
{
    struct run *r = p->r;
    pid_t pid;

    for (int i = r->nfinishing - 1; i >= 0; i--) { /* the ones done already */
        struct proc pr = {.pid = r->finishing[i]};
        if (proc_poll(&pr))
            r->finishing[i] = r->finishing[--r->nfinishing];
    }
    if (r->nfinishing == RUN_FINISHING_MAX)
        finish_wait(r, 0, RUN_FINISH_TIMEOUT_MS);
    if (r->o.jobs > 1 || (pid = fork()) < 0) {
        rep_files_and_removals(p);
        return;
    }
    if (pid == 0) {
        rep_files_and_removals(p);
        _exit(0);
    }
    r->finishing[r->nfinishing++] = pid;
}

static void rep_teardown(struct rep *p)
{
    rep_end_processes(p);
    /* every event is in the file now: a shim that loaded its plan and never ended was killed */
    {
        const struct monitor_shim *lost;
        struct err e = {0};
        if (monitor_poll(&p->mon, &e) == 0 && !p->aborted && strcmp(p->status, "error") != 0 &&
            monitor_shims_open(&p->mon, &lost) > 0)
            rep_fail(p,
                     "an MCP shim (faultline mcp, pid %lld in the sandbox) ended without a word "
                     "while the agent ran (killed?)",
                     lost->pid);
    }
    if (p->status[0] == '\0')
        snprintf(p->status, sizeof(p->status), "%s", p->aborted ? "aborted" : "complete");
    rep_finish(p);
    sandbox_close(p->sb);
    p->sb = NULL;
}

/* Everything of repetition index before its agent's go: plan, workspace, carry-in, HOME,
 * sandbox, controller, and the agent and verify waiting at their gates. Prints nothing (it may
 * run while another repetition's agent does); what went wrong is in the repetition, for
 * rep_go to report. */
static struct rep *rep_begin(struct run *r, int index)
{
    struct rep *p = xcalloc(1, sizeof(*p));
    struct err e = {0};
    char path[RUN_PATH_MAX];

    p->r = r;
    p->index = index;
    p->nsfd = -1;
    p->vp_fd = NO_FD;
    p->a_rfd = p->a_outfd = p->a_errfd = p->a_stfd = NO_FD;
    p->agent_exit = p->verify_exit = -1;
    p->at_line_start = 1;
    p->t_begin = p->t_start = time_now_ms();
    buf_init(&p->carry_log, 0);
    snprintf(p->dir, sizeof(p->dir), "%s/rep-%03d", r->dir, index);
    snprintf(path, sizeof(path), "%s/events.jsonl", p->dir);
    monitor_init(&p->mon, path, &e);
    p->plan = plan_build(r->x, index, r->o.has_seed, r->o.seed, NULL, NULL, &e);
    if (p->plan == NULL || fs_mkdirs(p->dir, &e) < 0) {
        snprintf(p->begin_error, sizeof(p->begin_error), "%s", e.msg);
        return p;
    }
    if (prepare(p, &e) < 0) {
        if (stopped(r)) {
            p->aborted = 1;
            p->abort.reason = "interrupted";
            snprintf(p->abort.detail, sizeof(p->abort.detail), "the run was interrupted");
        } else {
            rep_fail(p, "%s", e.msg);
        }
        return p;
    }
    agent_spawn(p);
    return p;
}

static void rep_free(struct rep *p)
{
    plan_free(p->plan);
    monitor_release(&p->mon);
    buf_release(&p->carry_log);
    free(p);
}

/* Runs a repetition rep_begin made to its end and frees it. Returns its status: "complete",
 * "aborted", "error"; the verify exit code in *verify_exit (-1: none). */
static const char *rep_go(struct rep *p, int *verify_exit, char *error, size_t esz)
{
    static char status[16];
    struct run *r = p->r;
    int index = p->index;

    if (p->begin_error[0]) {
        snprintf(error, esz, "rep %d: %.500s", index, p->begin_error);
        *verify_exit = -1;
        rep_free(p);
        return "error";
    }
    p->t_start = time_now_ms();
    progress(r, "rep %d of %d (%s): %s", index + 1, 2 * r->x->repeat,
             plan_faulted(p->plan) ? "faulted" : "baseline", plan_run_id(p->plan));
    for (char *line = p->carry_log.data, *nl; line && *line; line = nl + 1) {
        if ((nl = strchr(line, '\n')) == NULL)
            break;
        *nl = '\0';
        progress(r, "rep %d: %s", index, line);
    }
    rep_status(p, "setup");
    if (p->ready && !stopped(r)) {
        agent_phase(p);
        if (!p->aborted && strcmp(p->status, "error") != 0)
            verify_phase(p);
    } else if (p->ready && !p->aborted) {
        p->aborted = 1;
        p->abort.reason = "interrupted";
        snprintf(p->abort.detail, sizeof(p->abort.detail), "the run was interrupted");
    }
    rep_teardown(p);
    r->status_text[0] = '\0';
    progress(r, "rep %d: %s%s%s (agent %s%d, verify %s%d, $%.4f)", index, p->status,
             p->error[0] ? ": " : "", p->error, p->agent_signal ? "signal " : "exit ",
             p->agent_signal ? p->agent_signal : p->agent_exit,
             p->verify_signal ? "signal " : "exit ",
             p->verify_signal ? p->verify_signal : p->verify_exit, p->mon.cost_usd);
    *verify_exit = p->verify_ran && !p->verify_signal ? p->verify_exit : -1;
    snprintf(error, esz, "rep %d: %s", index,
             p->error[0]  ? p->error
             : p->aborted ? p->abort.detail
                          : "");
    snprintf(status, sizeof(status), "%s", p->status);
    rep_free(p);
    return status;
}

/* A repetition rep_begin made that is not to run (the run or its phase ended first): every
 * process ended, its workspace and its folder removed (skip_rep writes the folder of a skipped
 * repetition in its place). */
static void rep_discard(struct rep *p)
{
    rep_end_processes(p);
    sandbox_close(p->sb);
    if (p->workspace_made)
        rm_tree(p->work);
    rm_tree(p->home);
    if (p->ca_dir[0])
        rm_tree(p->ca_dir);
    rm_tree(p->dir);
    rep_free(p);
}

/* With one repetition at a time, begins the one after index while index's agent runs, unless
 * it is past the phase's end or the run is stopping. */
static void begin_next(struct run *r, int index)
{
    if (r->o.jobs > 1 || r->ahead || index + 1 >= r->phase_end || stopped(r))
        return;
    r->ahead = rep_begin(r, index + 1);
}

/* Runs repetition index: the one begun ahead, or one begun now. */
static const char *rep_run(struct run *r, int index, int *verify_exit, char *error, size_t esz)
{
    struct rep *p = r->ahead;

    r->ahead = NULL;
    if (p && p->index != index) {
        rep_discard(p);
        p = NULL;
    }
    return rep_go(p ? p : rep_begin(r, index), verify_exit, error, esz);
}

/* The repetition begun ahead that no one will run: discarded. */
static void drop_ahead(struct run *r)
{
    if (r->ahead)
        rep_discard(r->ahead);
    r->ahead = NULL;
}

static void skip_rep(struct run *r, int index, const char *why)
{
    char dir[RUN_REPDIR_MAX], path[RUN_PATH_MAX];
    struct err e = {0};
    struct plan *pl = plan_build(r->x, index, r->o.has_seed, r->o.seed, NULL, NULL, &e);
    json_t *j;

    snprintf(dir, sizeof(dir), "%s/rep-%03d", r->dir, index);
    if (fs_mkdirs(dir, &e) < 0)
        goto out;
    if (pl) {
        snprintf(path, sizeof(path), "%s/plan.json", dir);
        plan_save(pl, path, &e);
    }
    j = json_pack("{s:s, s:s, s:i, s:b}", "status", "skipped", "error", why, "rep", index,
                  "faulted", index >= r->x->repeat);
    snprintf(path, sizeof(path), "%s/rep.json", dir);
    write_json(path, j, &e);
    json_decref(j);
out:
    plan_free(pl);
}

static int write_run_json(struct run *r, struct err *e)
{
    char path[RUN_PATH_MAX];
    json_t *j = json_object(), *x = experiment_to_json(r->x);
    int rc;
    json_object_set_new(x, "hash", json_string(r->x->hash));
    json_object_set_new(j, "format", json_integer(1));
    json_object_set_new(j, "status", json_string(r->status));
    json_object_set_new(j, "error", r->error[0] ? json_string(r->error) : json_null());
    json_object_set_new(j, "experiment", x);
    snprintf(path, sizeof(path), "%s/run.json", r->dir);
    rc = write_json(path, j, e);
    json_decref(j);
    return rc;
}

/* The outcome of one repetition, as the loop needs it. */
enum rep_result { REP_OK = 0, REP_ABORTED = 1, REP_ERROR = 2, REP_VERIFY_FAILED = 3 };

static enum rep_result rep_result_of(const char *st, int vexit)
{
    if (strcmp(st, "aborted") == 0)
        return REP_ABORTED;
    if (strcmp(st, "error") == 0)
        return REP_ERROR;
    return vexit == 0 ? REP_OK : REP_VERIFY_FAILED;
}

/* With --jobs N > 1, each repetition runs in a child process (a fork of the runner: the same
 * rep_run, its own sandbox, controller and workspace); its outcome is its exit status, its
 * facts are its rep.json. */
struct slot {
    pid_t pid;
    int index;
};

static pid_t rep_fork(struct run *r, int index)
{
    pid_t pid;
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        char why[600];
        int vexit;
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1)
            _exit(REP_ERROR);
        if (r->inotify_fd >= 0) /* the parent's: a fork waits on an instance of its own */
            close(r->inotify_fd);
        r->inotify_fd = -1;
        r->prefix = index + 1;
        const char *st = rep_run(r, index, &vexit, why, sizeof(why));
        fflush(NULL);
        sandbox_cgroups_release(); /* _exit runs no atexit */
        _exit(rep_result_of(st, vexit));
    }
    return pid;
}

/* Runs repetitions [from, to) at most r->o.jobs at a time; sets *ended on an abort or error and
 * *baseline_failed when a baseline failed verify. When one ends the run, the others running
 * are interrupted (SIGTERM: they record the interruption) and no new one starts. */
static void run_phase(struct run *r, int from, int to, int *ended, int *baseline_failed)
{
    struct slot slots[RUN_JOBS_MAX];
    int next = from, running = 0, jobs = r->o.jobs < 1 ? 1 : r->o.jobs, forwarded = 0;

    if (jobs > RUN_JOBS_MAX)
        jobs = RUN_JOBS_MAX;
    r->phase_end = to;
    while (next < to || running > 0) {
        while (!*ended && !stopped(r) && running < jobs && next < to) {
            if (jobs == 1) {
                char why[600];
                int vexit;
                const char *st = rep_run(r, next, &vexit, why, sizeof(why));
                enum rep_result res = rep_result_of(st, vexit);
                if (res == REP_ABORTED || res == REP_ERROR)
                    *ended = 1;
                else if (res == REP_VERIFY_FAILED && next < r->x->repeat)
                    *baseline_failed = 1;
                next++;
                continue;
            }
            pid_t pid = rep_fork(r, next);
            if (pid < 0) {
                skip_rep(r, next++, "cannot fork the repetition's runner");
                *ended = 1;
                break;
            }
            slots[running].pid = pid;
            slots[running].index = next++;
            running++;
        }
        if ((*ended || stopped(r)) && next < to) {
            drop_ahead(r);
            for (; next < to; next++)
                skip_rep(r, next, stopped(r) ? "the run was interrupted" : "the run had ended");
        }
        if (running == 0)
            continue;
        if ((*ended || stopped(r)) && !forwarded) {
            for (int i = 0; i < running; i++)
                kill(slots[i].pid, SIGTERM);
            forwarded = 1;
        }
        int ws;
        pid_t done = waitpid(-1, &ws, 0);
        if (done < 0) {
            if (errno != EINTR)
                break;
            continue;
        }
        for (int i = 0; i < running; i++) {
            if (slots[i].pid != done)
                continue;
            int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : REP_ERROR;
            if (code == REP_ABORTED || code == REP_ERROR)
                *ended = 1;
            else if (code == REP_VERIFY_FAILED && slots[i].index < r->x->repeat)
                *baseline_failed = 1;
            slots[i] = slots[--running];
            break;
        }
    }
    drop_ahead(r);
}

/* The repetitions' rep.json files, in plan order: the report's repetitions, and the run's
 * status and error (the first repetition, in plan order, that was aborted or failed). */
static void collect_reps(struct run *r)
{
    char path[RUN_PATH_MAX];
    json_t *arr = json_array();
    int decided = 0;

    for (int i = 0; i < 2 * r->x->repeat; i++) {
        json_error_t je;
        json_t *j;
        const char *st, *sb;
        snprintf(path, sizeof(path), "%s/rep-%03d/rep.json", r->dir, i);
        j = json_load_file(path, 0, &je);
        if (!json_is_object(j)) {
            json_decref(j);
            j = json_pack("{s:s, s:s, s:i, s:b}", "status", "error", "error", "no rep.json", "rep",
                          i, "faulted", i >= r->x->repeat);
        }
        st = json_string_value(json_object_get(j, "status"));
        sb = json_string_value(json_object_get(j, "sandbox"));
        if (sb && r->backend_name == NULL)
            snprintf(r->backend_buf, sizeof(r->backend_buf), "%s", sb),
                r->backend_name = r->backend_buf;
        if (!decided && st && (strcmp(st, "aborted") == 0 || strcmp(st, "error") == 0)) {
            const json_t *ab = json_object_get(j, "abort");
            const char *msg = json_string_value(json_object_get(j, "error"));
            if (msg == NULL)
                msg = json_string_value(json_object_get(ab, "detail"));
            snprintf(r->status, sizeof(r->status), "%s", st);
            snprintf(r->error, sizeof(r->error), "rep %d: %.600s", i, msg ? msg : st);
            decided = 1;
        }
        json_array_append_new(arr, j);
    }
    if (!decided && stopped(r)) {
        snprintf(r->status, sizeof(r->status), "aborted");
        snprintf(r->error, sizeof(r->error), "interrupted");
    }
    json_decref(r->reps);
    r->reps = arr;
}

/* The project's harnesses would run ungoverned: said once, before the first repetition. */
static void warn_gates(struct run *r)
{
    struct buf w = BUF_INIT;

    gatecheck_warnings(r->project, &w);
    for (char *line = w.data, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        *nl = '\0';
        progress(r, "warning: %s", line);
    }
    buf_release(&w);
}

int run_execute(struct run *r, struct err *e)
{
    int baseline_failed = 0, ended = 0;
    json_t *score;
    int code;

    snprintf(r->error, sizeof(r->error), "the runner did not finish");
    if (write_run_json(r, e) < 0)
        return ERR_IO;
    r->error[0] = '\0';
    snprintf(r->status, sizeof(r->status), "complete");
    if (r->mock_script[0])
        start_mock(r);
    make_seed(r);
    warn_gates(r);
    /* The baselines finish before the faulted repetitions start. */
    run_phase(r, 0, r->x->repeat, &ended, &baseline_failed);
    if (baseline_failed && !ended)
        progress(r, "a baseline failed verify: the faulted repetitions are skipped");
    if (ended || baseline_failed || stopped(r)) {
        for (int i = r->x->repeat; i < 2 * r->x->repeat; i++)
            skip_rep(r, i,
                     stopped(r)                  ? "the run was interrupted"
                     : baseline_failed && !ended ? "a baseline repetition failed verify"
                                                 : "the run had ended");
    } else {
        run_phase(r, r->x->repeat, 2 * r->x->repeat, &ended, &baseline_failed);
    }
    stop_mock(r);
    copy_ahead_cancel(r);
    if (r->seeded)
        rm_tree(r->seed);
    finish_wait_all(r);
    r->status_text[0] = '\0';
    status_clear(r);
    collect_reps(r);
    if (write_run_json(r, e) < 0)
        return ERR_IO;
    score = score_run(r->dir, &code, e);
    if (score == NULL)
        return ERR_IO;
    r->exit_code = code;
    r->report = report_build(r->x, r->head, r->dir, r->status, r->error[0] ? r->error : NULL,
                             r->backend_name ? r->backend_name : "native", r->reps, score);
    json_decref(score);
    if (report_write(r->report, r->report_path, e) < 0)
        return ERR_IO;
    if (rpt_write_all(r->report, r->report_path, r->dir, e) < 0) /* html, md, junit, badge */
        return ERR_IO;
    return 0;
}

int run_exit_code(const struct run *r)
{
    return r->exit_code;
}

const json_t *run_report(const struct run *r)
{
    return r->report;
}

const char *run_report_path(const struct run *r)
{
    return r->report_path;
}

const char *run_dir(const struct run *r)
{
    return r->dir;
}

void run_free(struct run *r)
{
    if (r == NULL)
        return;
    stop_mock(r);
    copy_ahead_cancel(r);
    finish_wait_all(r); /* before its temporary directory goes */
    if (r->inotify_fd >= 0)
        close(r->inotify_fd);
    if (r->tmp[0] && !r->o.keep)
        rm_tree(r->tmp);
    experiment_free(r->x);
    json_decref(r->reps);
    json_decref(r->report);
    free(r);
}
