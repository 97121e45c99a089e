/*
 * bench_gate: `faultline gate claude-code` end to end, as a harness runs it: a new process per
 * tool call, the hook input written to its stdin, its answer read from stdout until it exits.
 * Three commands are started the same way, interleaved, ROUNDS times each:
 *
 *   /bin/true            the reference: what starting any process costs here
 *   gate                 `faultline gate claude-code`, no controller (a destructive Bash call:
 *                        the policy denies it, the answer is printed)
 *   gate+controller      the same with FAULTLINE_CONTROL_URL set to a `faultline proxy`
 *                        (POST /_faultline/gate; a controller without that endpoint answers
 *                        404 and the gate posts the gate_decision event itself: the same two
 *                        exchanges at worst)
 *
 * Targets (docs/performance.md, "## Gate"): the gate's p50 at most 5 ms more than /bin/true's
 * without a controller, at most 10 ms more with one. Prints the figures and met / NOT MET;
 * exits 1 when a target is missed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fs.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "bench_ctl.h"
#include "util/banned.h"

#define ROUNDS 300

extern char **environ;

static const char input[] =
    "{\"session_id\":\"s\",\"transcript_path\":\"/tmp/x.jsonl\",\"cwd\":\"/tmp\","
    "\"permission_mode\":\"default\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\","
    "\"tool_input\":{\"command\":\"cd /tmp && sudo rm -rf --no-preserve-root / 2>/dev/null\","
    "\"description\":\"clean up\",\"timeout\":120000},\"tool_use_id\":\"toolu_01\"}";

/* One start of argv with envp, input on stdin, stdout read to its end; microseconds. */
static double one(char *const *argv, char *const *envp)
{
    int in[2], out[2], status;
    posix_spawn_file_actions_t fa;
    int64_t t0 = time_mono_ns();
    char sink[4096];
    pid_t pid;

    if (pipe(in) < 0 || pipe(out) < 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, envp) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (write(in[1], input, sizeof(input) - 1) < 0 && errno != EPIPE)
        perror("bench_gate: write");
    close(in[1]);
    while (read(out[0], sink, sizeof(sink)) > 0)
        ;
    close(out[0]);
    waitpid(pid, &status, 0);
    return (double)(time_mono_ns() - t0) / 1000.0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    return v[(int)(p * (n - 1))];
}

int main(void)
{
    const char *faultline = getenv("FAULTLINE");
    char dir[4096], plan[4200], events[4200], ready[4200], url_env[700], user_env[4300];
    static double t_true[ROUNDS], t_gate[ROUNDS], t_ctl[ROUNDS];
    struct proc ctl;
    int ok = 1;

    signal(SIGPIPE, SIG_IGN); /* /bin/true exits without reading its stdin */
    if (faultline == NULL) {
        fprintf(stderr, "bench_gate: set FAULTLINE to the faultline binary (bench/run does)\n");
        return 1;
    }
    snprintf(dir, sizeof(dir), "%s/faultline-bench-gate-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(plan, sizeof(plan), "%s/plan.json", dir);
    snprintf(events, sizeof(events), "%s/events.jsonl", dir);
    snprintf(ready, sizeof(ready), "%s/ready", dir);
    snprintf(user_env, sizeof(user_env), "FAULTLINE_USER_POLICY=%s/none.yaml", dir);
    {
        const char *p = "{\"version\":1,\"run\":\"bench\",\"canary\":\"E-FAULTLINE-00000000\","
                        "\"faults\":[]}\n";
        struct err e = {0};
        if (fs_write_file(plan, p, strlen(p), &e) < 0)
            return 1;
    }
    {
        char addr[128];
        if (bench_start_controller(faultline, plan, events, ready, &ctl, addr, sizeof(addr),
                                   "bench_gate"))
            return 1;
        snprintf(url_env, sizeof(url_env), "FAULTLINE_CONTROL_URL=http://%s", addr);
    }
    {
        char *true_argv[] = {(char *)"/bin/true", NULL};
        char *gate_argv[] = {(char *)faultline, (char *)"gate", (char *)"claude-code", NULL};
        char *env_local[] = {user_env, (char *)"HOME=/nonexistent", NULL};
        char *env_ctl[] = {user_env, (char *)"HOME=/nonexistent", url_env, NULL};
        for (int i = 0; i < ROUNDS; i++) {
            t_true[i] = one(true_argv, env_local);
            t_gate[i] = one(gate_argv, env_local);
            t_ctl[i] = one(gate_argv, env_ctl);
            if (t_true[i] < 0 || t_gate[i] < 0 || t_ctl[i] < 0) {
                fprintf(stderr, "bench_gate: cannot start a command\n");
                return 1;
            }
        }
    }
    proc_terminate(&ctl, 2000);
    proc_release(&ctl);
    {
        double p50t = pct(t_true, ROUNDS, 0.5), p95t = pct(t_true, ROUNDS, 0.95);
        double p50g = pct(t_gate, ROUNDS, 0.5), p95g = pct(t_gate, ROUNDS, 0.95);
        double p50c = pct(t_ctl, ROUNDS, 0.5), p95c = pct(t_ctl, ROUNDS, 0.95);
        printf("%-18s %10s %10s %14s\n", "command", "p50 ms", "p95 ms", "p50 over true");
        printf("%-18s %10.2f %10.2f %14s\n", "/bin/true", p50t / 1000, p95t / 1000, "-");
        printf("%-18s %10.2f %10.2f %14.2f\n", "gate", p50g / 1000, p95g / 1000,
               (p50g - p50t) / 1000);
        printf("%-18s %10.2f %10.2f %14.2f\n", "gate+controller", p50c / 1000, p95c / 1000,
               (p50c - p50t) / 1000);
        printf("targets (%d starts each, interleaved, the same stdin and stdout pipes):\n", ROUNDS);
        printf("  gate p50 at most 5 ms over /bin/true: %.2f ms  %s\n", (p50g - p50t) / 1000,
               p50g - p50t <= 5000 ? "met" : "NOT MET");
        printf("  gate+controller p50 at most 10 ms over /bin/true: %.2f ms  %s\n",
               (p50c - p50t) / 1000, p50c - p50t <= 10000 ? "met" : "NOT MET");
        ok = p50g - p50t <= 5000 && p50c - p50t <= 10000;
    }
    unlink(plan);
    unlink(events);
    unlink(ready);
    rmdir(dir);
    return ok ? 0 : 1;
}
