/*
 * runner: `faultline run`, the main job (seed 000 "How a run works"; docs/run.md).
 *
 * run_new checks the preconditions, each refused with a one-line reason and its own
 * enum run_refusal: the experiment validates, the sandbox backend passes its health check
 * (never a fallback to the host), the project (the git repository holding the experiment
 * file) has a clean working tree (the carried-in paths aside), a `model: {mock: FILE}` script
 * exists and loads, and the report's run folder can be made.
 *
 * run_execute starts the run's one mock model (`faultline mock-model`, when the model is a
 * mock: shared by every repetition), makes the seed repository of the project's HEAD that
 * every workspace copies (workspace.h), then runs the repetitions in plan order, `repeat`
 * baselines and then as many faulted ones, each in five steps:
 *
 *   1. plan (plan_build, as `faultline plan`), workspace (a copy of the seed), carry-in
 *      (carry.h), a scratch HOME with the MCP configuration (FAULTLINE_MCP_CONFIG);
 *   2. the sandbox's namespace and listener (sandbox_open), the controller (`faultline proxy
 * --listen-fd`), and its health endpoint, asked from inside the namespace;
 *   3. the agent (sandbox_spawn), its stdout streamed to agent.out and the terminal, while the
 *      abort monitor (monitor.h) reads the events at least every RUN_TICK_MS;
 *   4. verify, the same way (skipped when the repetition was aborted or failed);
 *   5. the controller stopped, the runner's own events (agent_exit, verify,
 *      abort, run_end) appended to events.jsonl, verify.json and rep.json written, the
 *      sandbox closed, the workspace removed (unless keep); then the mock model is stopped and the
 * seed removed.
 *
 * With one repetition at a time, the next one's steps 1 and 2 and its agent and verify waiting
 * at their gates are made while the current agent runs (runner.c, begin_next), and it runs
 * after the current one's step 5; a repetition begun so that is not to run (the run or the
 * baselines ended) is discarded and skipped.
 *
 * With jobs > 1 up to that many repetitions run at once, each in a fork of the runner (the
 * same steps; its outcome is its exit status, its facts its rep.json), the baselines before
 * the faulted ones; the report is built from the rep.json files in plan order either way, so
 * it is the same as a one-at-a-time run's.
 *
 * A baseline that fails verify skips the faulted repetitions (rep.json "skipped"); an abort
 * or a runner error ends the run. The stop flag (a signal handler's) ends the repetition
 * running, as an abort with reason "interrupted", and the run. Finally run.json gets the
 * run's status, score_compute scores the run folder, and the report is written (report.h).
 *
 * Blocking and single-threaded; not callable from a signal handler.
 */
#ifndef FAULTLINE_RUN_RUNNER_H
#define FAULTLINE_RUN_RUNNER_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

/* The abort monitor's period and the longest the runner waits for the controller's health. */
#define RUN_TICK_MS 250
#define RUN_HEALTH_TIMEOUT_MS 10000
/* SIGTERM to SIGKILL, for the sandbox and the runner's children. */
#define RUN_GRACE_MS 2000
/* How long the runner waits, after the agent's end, for its MCP shims to say they ended. */
#define RUN_SHIM_END_MS 2000
/* The most repetitions run at once (--jobs). */
#define RUN_JOBS_MAX 16
/* verify's time limit when the experiment has no wall clock limit. */
#define RUN_VERIFY_TIMEOUT_MS 600000

/* The most --resolve entries (the egress proxy's own limit). */
#define RUN_RESOLVE_MAX 64

struct run_opts {
    const char *experiment;      /* the experiment file (required) */
    const char *out;             /* the report; NULL: under $TMPDIR */
    int keep;                    /* keep the workspaces */
    int has_seed;                /* seed overrides the experiment's */
    uint64_t seed;               /* with has_seed */
    const char *model_upstream;  /* NULL, or a URL every model call goes to */
    const char *backend;         /* --sandbox, or NULL: the experiment's `sandbox`, else oci
                                  * when an image is named, else native */
    const char *sandbox_image;   /* --sandbox-image, or NULL: the experiment's */
    const char *const *ro_paths; /* NULL-terminated, or NULL */
    const char *const *resolve;  /* NULL-terminated --resolve HOST:PORT:ADDR for the egress
                                  * proxy (docs/egress.md), at most RUN_RESOLVE_MAX, or NULL */
    const char *self_exe;        /* the faultline binary (NULL: /proc/self/exe) */
    const char *upstream_ca;     /* an absolute path: a CA (PEM) the controller trusts for its
                                  * https upstreams besides the system's (intercepted egress
                                  * origins, the model API; tests), or NULL */
    int jobs;                    /* repetitions at once, 1..RUN_JOBS_MAX (0: 1); each in a child
                                  * process with its own sandbox, controller and workspace; the
                                  * baselines finish before the faulted ones start */
    FILE *progress;              /* progress lines (NULL: none) */
    int status_line;             /* progress is a terminal: a live status line there too */
    FILE *agent_out;             /* where the agent's stdout is echoed (NULL: none) */
    volatile sig_atomic_t *stop; /* set by a signal handler: interrupt the run */
};

enum run_refusal {
    RUN_REFUSED_NONE = 0,
    RUN_REFUSED_EXPERIMENT, /* cannot be read, or invalid */
    RUN_REFUSED_SANDBOX,    /* the backend's health check failed */
    RUN_REFUSED_PROJECT,    /* not in a git repository, or a dirty working tree */
    RUN_REFUSED_MODEL,      /* the mock script is missing or does not load */
    RUN_REFUSED_OUT         /* the report or its run folder cannot be made */
};

struct run;

/* Checks the preconditions and prepares a run. NULL with *why and e set (one line) when one
 * fails; diags gets the experiment's diagnostics (FILE:LINE:COL), if any. Caller frees with
 * run_free. */
struct run *run_new(const struct run_opts *o, enum run_refusal *why, struct buf *diags,
                    struct err *e);
/* Runs every repetition, then scores and writes the report. 0 when the report was written
 * (whatever the verdict: run_exit_code), else ERR_IO with e set. */
int run_execute(struct run *r, struct err *e);
/* The verdict's exit code (0 scored, 1 aborted, 2 invalid); 1 before run_execute finished. */
int run_exit_code(const struct run *r);
/* The report (borrowed, valid until run_free; NULL before run_execute wrote it) and paths. */
const json_t *run_report(const struct run *r);
const char *run_report_path(const struct run *r);
const char *run_dir(const struct run *r);
void run_free(struct run *r);

#endif
