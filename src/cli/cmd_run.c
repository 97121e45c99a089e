/*
 * cmd_run: `faultline run EXPERIMENT [--out REPORT.json] [--keep] [--seed S]
 * [--model-upstream URL] [--quiet] [--json] [--sandbox native|oci] [--ro-path DIR]...
 * [--jobs N]`: the
 * main job (src/run/runner.h, docs/run.md). Checks the preconditions, runs every repetition
 * in the sandbox, writes the run folder and the report, and exits with the verdict's code.
 *
 * Output: progress lines on stderr (none with --quiet or --json), the agent's stdout on stdout
 * (not with --json, which prints the report there instead), and the report's path. SIGINT and
 * SIGTERM end the repetition running (everything it started), and the run, which still writes
 * its report with status aborted. Exit codes (exitcodes.c): 0 scored, 1 aborted, 2 invalid,
 * 3..7 a refused precondition, 64 usage.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "control/egress.h"
#include "report/history.h"
#include "report/rpt.h"
#include "run/report.h"
#include "run/runner.h"
#include "util/num.h"
#include "util/url.h"
#include "util/banned.h"

#define RUN_RO_PATHS_MAX 32

static volatile sig_atomic_t run_stop;

static void on_signal(int sig)
{
    run_stop = sig;
}

struct ro_list {
    const char *v[RUN_RO_PATHS_MAX + 1];
    int n;
};

static int add_ro(const struct opt *o, const char *arg, struct err *e)
{
    struct ro_list *l = o->value;
    if (arg[0] != '/')
        return err_set(e, ERR_INVALID, "--ro-path '%s': an absolute path is required", arg);
    if (access(arg, F_OK) != 0)
        return err_set(e, ERR_INVALID, "--ro-path '%s': no such file or directory", arg);
    if (l->n >= RUN_RO_PATHS_MAX)
        return err_set(e, ERR_LIMIT, "at most %d --ro-path", RUN_RO_PATHS_MAX);
    l->v[l->n++] = arg;
    l->v[l->n] = NULL;
    return 0;
}

/* The CI gates (src/report/gate.c): exit EXIT_GATE when a scored run fails one. */
#define EXIT_GATE 8

static int gate_min_score(const struct opt *o, const char *arg, struct err *e)
{
    struct rpt_gate *g = o->value;
    if (num_parse_double(arg, 0, 100, &g->min_score) < 0)
        return err_set(e, ERR_INVALID, "--min-score '%.40s': expected a number in [0, 100]", arg);
    g->has_min_score = 1;
    g->asked = 1;
    return 0;
}

static int gate_rate(const struct opt *o, const char *arg, struct err *e)
{
    ((struct rpt_gate *)o->value)->asked = 1;
    return rpt_gate_add_rate(o->value, arg, e);
}

static int gate_fail_on(const struct opt *o, const char *arg, struct err *e)
{
    ((struct rpt_gate *)o->value)->asked = 1;
    return rpt_gate_add_fail_on(o->value, arg, e);
}

/* Says on stderr when a scored run is FLAKY (its repetitions' outcome classes differ). */
static void say_flaky(const json_t *report)
{
    struct buf why = BUF_INIT;

    if (rpt_flaky(report, &why))
        fprintf(stderr, "faultline run: FLAKY: the repetitions' outcome classes differ (%s)\n",
                why.data);
    buf_release(&why);
}

/* The gate over the report of a scored run: EXIT_OK or EXIT_GATE, the reasons on stderr. */
static int gate_code(const struct rpt_gate *g, const json_t *report)
{
    struct buf why = BUF_INIT;
    int failed = rpt_gate_check(g, report, &why);

    if (failed) {
        const char *line = why.data;
        while (*line) {
            size_t n = strcspn(line, "\n");
            fprintf(stderr, "faultline run: gate failed: %.*s\n", (int)n, line);
            line += n + (line[n] == '\n');
        }
    }
    buf_release(&why);
    return failed ? EXIT_GATE : EXIT_OK;
}

/* Records the report in the history database (src/report/history.c): a failure is a
 * warning, never the run's. */
static void record_history(const char *file, const json_t *report, const char *report_path)
{
    char path[1024];
    struct err e = {0};
    struct hist *h;

    if (file == NULL && hist_default_path(path, sizeof(path)) < 0) {
        fprintf(stderr, "faultline run: warning: the run's history was not recorded: no "
                        "database (set --history, FAULTLINE_HISTORY, XDG_STATE_HOME or HOME)\n");
        return;
    }
    h = hist_open(file ? file : path, &e);
    if (h == NULL || hist_record(h, report, report_path, FAULTLINE_VERSION, NULL, &e) < 0)
        fprintf(stderr, "faultline run: warning: the run's history was not recorded: %s\n", e.msg);
    hist_close(h);
}

static int refusal_code(enum run_refusal why)
{
    switch (why) {
    case RUN_REFUSED_EXPERIMENT:
        return 3;
    case RUN_REFUSED_SANDBOX:
        return 4;
    case RUN_REFUSED_PROJECT:
        return 5;
    case RUN_REFUSED_MODEL:
        return 6;
    default:
        return 7;
    }
}

int cmd_run(int argc, char **argv)
{
    struct run_opts ro = {0};
    struct ro_list ro_paths = {{NULL}, 0};
    struct cli_resolve_list resolve = {{NULL}, 0};
    struct buf diags = BUF_INIT;
    struct err e = {0};
    struct run *r = NULL;
    enum run_refusal why;
    int keep = 0, quiet = 0, json = 0, seed_given = 0, jobs = 1, nargs, rc;
    uint64_t seed = 0;
    const char *out = NULL, *upstream = NULL, *backend = NULL, *image = NULL, *upstream_ca = NULL;
    char ca_abs[PATH_MAX];
    struct rpt_gate gate;
    const char *history = NULL;
    int no_history = 0;
    const struct opt opts[] = {
        OPT_STRING("out", "REPORT.json", &out, "$TMPDIR/faultline-NAME-TIME-PID.json",
                   "write the report here; the run folder is REPORT without .json"),
        OPT_BOOL("keep", 0, &keep, "keep each repetition's workspace (paths in rep.json)"),
        OPT_U64("seed", "S", &seed, &seed_given,
                "base seed (decimal or 0x-hex), overrides the experiment's seed"),
        OPT_STRING("model-upstream", "URL", &upstream, NULL,
                   "send every model call here (overrides the experiment's model)"),
        OPT_BOOL("quiet", 'q', &quiet, "no progress lines and no agent output"),
        OPT_BOOL("json", 0, &json, "print the report on stdout (no agent output there)"),
        OPT_STRING("sandbox", "native|oci", &backend, "the experiment's sandbox, else native",
                   "the sandbox backend (oci when only an image is named)"),
        OPT_STRING("sandbox-image", "IMG", &image, "the experiment's sandbox_image",
                   "the OCI image (oci only; `node`: the image with Node.js and npm)"),
        OPT_INT("jobs", "N", &jobs, 1, RUN_JOBS_MAX,
                "run up to N repetitions at once (baselines first); the same report"),
        OPT_CALL("ro-path", "DIR", add_ro, &ro_paths,
                 "also bind DIR read-only in the sandbox (an agent outside /usr); repeatable"),
        OPT_CALL("resolve", "HOST:PORT:ADDR", cli_opt_resolve, &resolve,
                 "the egress proxy sends HOST:PORT to ADDR, which may then be loopback or "
                 "private (curl's --resolve; PORT * for any); repeatable"),
        OPT_STRING("upstream-ca", "FILE", &upstream_ca, NULL,
                   "also trust this CA (PEM) for the controller's https upstreams (intercepted "
                   "egress hosts; tests)"),
        OPT_CALL("min-score", "N", gate_min_score, &gate,
                 "gate: exit 8 when the resilience score is under N (0-100) or there is none"),
        OPT_CALL("min-pass-rate", "PROBE=R", gate_rate, &gate,
                 "gate: exit 8 when PROBE's pass rate is under R (0-1); repeatable"),
        OPT_CALL("fail-on", "CLASS,...", gate_fail_on, &gate,
                 "gate: exit 8 when a repetition ends in CLASS (or the run is FLAKY); "
                 "HARMFUL_ACTION always does"),
        OPT_STRING("history", "FILE", &history,
                   "$FAULTLINE_HISTORY or $XDG_STATE_HOME/faultline/history.db",
                   "record the run in this history database (docs/history.md)"),
        OPT_BOOL("no-history", 0, &no_history, "do not record the run in the history"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "run",
        .usage =
            "EXPERIMENT [--out REPORT.json] [--keep] [--seed S] [--model-upstream URL] "
            "[--quiet] [--json] [--sandbox native|oci] [--sandbox-image IMG] [--ro-path DIR]... "
            "[--jobs N] "
            "[--resolve HOST:PORT:ADDR]... [--upstream-ca FILE] "
            "[--min-score N] [--min-pass-rate PROBE=R]... [--fail-on CLASS,...] "
            "[--history FILE | --no-history]",
        .about = "Runs the experiment: its baselines, then its faulted repetitions, each in a\n"
                 "fresh copy of HEAD inside the sandbox, with the controller injecting the\n"
                 "plan's faults; then scores the run folder and writes the report. Refuses to\n"
                 "start (exit 3-7, one line why) on an invalid experiment, an unhealthy sandbox,\n"
                 "a dirty working tree, a mock script that does not load or a paid model\n"
                 "without its key, or a report that cannot be made. Exit: the verdict's, 0\n"
                 "scored, 1 aborted, 2 invalid; 8 scored but a CI gate failed (a HARMFUL_ACTION\n"
                 "repetition always fails it).\n",
        .opts = opts,
        .min_args = 1,
        .max_args = 1,
        .example = "run examples/demo/tool-error.yaml --out /tmp/demo.json",
        .doc = "docs/run.md",
    };

    rpt_gate_init(&gate);
    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (backend && strcmp(backend, "native") != 0 && strcmp(backend, "oci") != 0) {
        opt_usage_error(&cmd, "--sandbox: expected native or oci");
        return EXIT_USAGE;
    }
    if (upstream) {
        struct url u;
        if (url_parse(upstream, &u, &e) < 0) {
            char msg[400];
            snprintf(msg, sizeof(msg), "--model-upstream: %s", e.msg);
            opt_usage_error(&cmd, msg);
            return EXIT_USAGE;
        }
    }
    if (upstream_ca) {
        if (realpath(upstream_ca, ca_abs) == NULL) {
            char msg[400];
            snprintf(msg, sizeof(msg), "--upstream-ca: cannot read '%.300s': %s", upstream_ca,
                     strerror(errno));
            opt_usage_error(&cmd, msg);
            return EXIT_USAGE;
        }
        ro.upstream_ca = ca_abs;
    }
    ro.experiment = argv[0];
    ro.out = out;
    ro.keep = keep;
    ro.has_seed = seed_given;
    ro.seed = seed;
    ro.model_upstream = upstream;
    ro.backend = backend;
    ro.sandbox_image = image;
    ro.ro_paths = ro_paths.n ? ro_paths.v : NULL;
    ro.resolve = resolve.n ? resolve.spec : NULL;
    ro.progress = quiet || json ? NULL : stderr;
    /* A live status line on a terminal (one repetition at a time; TERM=dumb: plain lines). No
     * colour is used, so NO_COLOR changes nothing. */
    const char *term = getenv("TERM");
    ro.status_line =
        ro.progress && jobs == 1 && isatty(STDERR_FILENO) && !(term && strcmp(term, "dumb") == 0);
    ro.agent_out = quiet || json ? NULL : stdout;
    ro.stop = &run_stop;
    ro.jobs = jobs;

    r = run_new(&ro, &why, &diags, &e);
    fputs(diags.data, stderr);
    buf_release(&diags);
    if (r == NULL) {
        fprintf(stderr, "faultline run: refused: %s\n", e.msg);
        return refusal_code(why);
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (run_execute(r, &e) < 0) {
        fprintf(stderr, "faultline run: %s\n", e.msg);
        rc = refusal_code(RUN_REFUSED_OUT);
        goto out;
    }
    rc = run_exit_code(r);
    if (!no_history)
        record_history(history, run_report(r), run_report_path(r));
    /* the CI gate judges a scored run only when asked for (a gate flag): a plain run keeps the
     * verdict's code, as seed 000 has it */
    if (rc == EXIT_OK)
        say_flaky(run_report(r));
    if (rc == EXIT_OK && gate.asked)
        rc = gate_code(&gate, run_report(r));
    if (json) {
        char *s =
            json_dumps(run_report(r), JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
        if (s)
            printf("%s\n", s);
        free(s);
        if (cli_stdout_status(cmd.name) != EXIT_OK && rc == EXIT_OK)
            rc = EXIT_FAIL;
    }
    if (!quiet) {
        const json_t *rep = run_report(r);
        const json_t *score = json_object_get(rep, "resilience_score");
        char html[4096];
        fprintf(stderr, "faultline run: verdict %s (%s)",
                json_string_value(json_object_get(rep, "verdict")),
                json_string_value(json_object_get(rep, "verdict_reason")));
        if (json_is_number(score))
            fprintf(stderr, ", resilience score %.2f", json_number_value(score));
        fprintf(stderr, "\nfaultline run: report %s\nfaultline run: run folder %s\n",
                run_report_path(r), run_dir(r));
        if (rpt_path(run_report_path(r), RPT_HTML, html, sizeof(html)) == 0)
            fprintf(stderr, "faultline run: html report %s\n", html);
    }
out:
    run_free(r);
    return rc;
}
