/*
 * bench_plan: plan_decide() decisions per second on one core, against a baseline measured in
 * the same run (a loop of hash64 alone over the same keys: the floor any hashed decision pays).
 *
 * Scenarios: a typical faulted plan (four faults: egress host, MCP tool with server, model,
 * gate tool) asked about a mix of calls; the same with a `when: contains` on the arguments; and
 * with a `when: matches` regex. Each runs for a fixed number of calls; the figure is the best
 * of three runs. Figures go into docs/performance.md ("plan and events").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "util/hash.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define CALLS 4000000
#define RUNS 3

static volatile uint64_t sink;

static const char *const base_faults =
    "{\"kind\":\"egress.dns_fail\",\"injectors\":[\"controller-egress\"],"
    "\"match\":{\"host\":\"*.npmjs.org\"}},"
    "{\"kind\":\"tool.error\",\"injectors\":[\"mcp\",\"gate\"],"
    "\"match\":{\"tool\":\"read_file\",\"server\":\"fs\"},\"after_calls\":2,\"probability\":0.5},"
    "{\"kind\":\"llm.rate_limit\",\"injectors\":[\"controller-model\"],"
    "\"match\":{\"model\":\"*-sonnet-4\"},\"probability\":0.2},"
    "{\"kind\":\"permission.deny_or_delay\",\"injectors\":[\"gate\"],"
    "\"match\":{\"tool\":\"Bash\"},\"probability\":0.3}";

static struct plan *make_plan(const char *extra)
{
    char text[4096];
    struct err e = {0};
    json_t *j;
    struct plan *p;

    snprintf(text, sizeof(text),
             "{\"version\":1,\"run\":\"bench\",\"canary\":\"E-FAULTLINE-00c0ffee\",\"seed\":7,"
             "\"faults\":[%s%s%s]}",
             base_faults, extra ? "," : "", extra ? extra : "");
    j = json_loads(text, 0, NULL);
    p = j ? plan_from_json(j, &e) : NULL;
    json_decref(j);
    if (p == NULL) {
        fprintf(stderr, "bench_plan: bad plan: %s\n", e.msg);
        exit(1);
    }
    return p;
}

static double best_rate(double (*fn)(void *), void *arg)
{
    double best = 0;
    for (int r = 0; r < RUNS; r++) {
        double v = fn(arg);
        if (v > best)
            best = v;
    }
    return best;
}

static const char *const keys[] = {"mcp__fs__read_file", "registry.npmjs.org", "claude-sonnet-4",
                                   "Bash"};

static double run_hash(void *arg)
{
    int64_t t0 = time_mono_ns();
    uint64_t acc = 0;
    size_t lens[4];

    for (int k = 0; k < 4; k++)
        lens[k] = strlen(keys[k]);
    for (uint64_t i = 0; i < CALLS; i++)
        acc += hash64(keys[i & 3], lens[i & 3], i);
    sink += acc;
    return CALLS / ((time_mono_ns() - t0) / 1e9);
}

static double run_select(void *arg)
{
    int64_t t0 = time_mono_ns();
    uint64_t acc = 0;

    for (uint64_t i = 0; i < CALLS; i++)
        acc += (uint64_t)plan_select(7, i & 3, keys[i & 3], i, 0.5);
    sink += acc;
    return CALLS / ((time_mono_ns() - t0) / 1e9);
}

struct decide_arg {
    struct plan *plan;
    struct plan_call calls[8];
    int ncalls;
};

static double run_decide(void *arg)
{
    struct decide_arg *a = arg;
    struct plan_decision d;
    int64_t t0 = time_mono_ns();
    uint64_t acc = 0;

    for (uint64_t i = 0; i < CALLS; i++) {
        if (plan_decide(a->plan, &a->calls[i % (uint64_t)a->ncalls], &d) < 0)
            exit(1);
        acc += (uint64_t)d.inject;
    }
    sink += acc;
    return CALLS / ((time_mono_ns() - t0) / 1e9);
}

static void report(const char *name, double rate, double base)
{
    printf("  %-44s %8.2f M/s   %5.2fx the hash64 loop\n", name, rate / 1e6, rate / base);
}

int main(void)
{
    json_t *args = json_pack("{s:s,s:i}", "path", "docs/README.md", "limit", 100);
    json_t *cmd = json_pack("{s:s}", "command", "git status && ls -la src");
    struct decide_arg a = {0};
    double base, rate;

    a.calls[0] = (struct plan_call){CATALOG_INJ_MCP, "read_file", "fs", NULL, NULL, args, 0};
    a.calls[1] = (struct plan_call){CATALOG_INJ_CONTROLLER_EGRESS, NULL, NULL,
                                    "registry.npmjs.org", NULL, NULL, 0};
    a.calls[2] = (struct plan_call){CATALOG_INJ_CONTROLLER_MODEL, NULL, NULL, NULL,
                                    "claude-sonnet-4", NULL, 0};
    a.calls[3] = (struct plan_call){CATALOG_INJ_GATE, "Bash", NULL, NULL, NULL, cmd, 0};
    a.calls[4] = (struct plan_call){CATALOG_INJ_MCP, "mcp__fs__write_file", NULL, NULL, NULL,
                                    args, 0};
    a.calls[5] = (struct plan_call){CATALOG_INJ_CONTROLLER_EGRESS, NULL, NULL, "api.github.com",
                                    NULL, NULL, 0};
    a.ncalls = 6;

    printf("plan_decide, %d calls a run, best of %d (one core)\n", CALLS, RUNS);
    base = best_rate(run_hash, NULL);
    printf("  %-44s %8.2f M/s   (baseline)\n", "hash64 loop (same keys)", base / 1e6);
    report("plan_select (probability 0.5)", best_rate(run_select, NULL), base);

    a.plan = make_plan(NULL);
    rate = best_rate(run_decide, &a);
    report("plan_decide, 4 faults, mixed calls", rate, base);
    plan_free(a.plan);

    a.plan = make_plan("{\"kind\":\"inject.tool_result\",\"injectors\":[\"mcp\"],"
                       "\"match\":{\"tool\":\"*_file\"},"
                       "\"when\":{\"path\":\"$.path\",\"contains\":\"README\"},\"times\":0,"
                       "\"options\":{\"payload\":\"x\"}}");
    report("plan_decide, + when contains", best_rate(run_decide, &a), base);
    plan_free(a.plan);

    a.plan = make_plan("{\"kind\":\"inject.tool_result\",\"injectors\":[\"mcp\",\"gate\"],"
                       "\"match\":{\"tool\":\"*\"},"
                       "\"when\":{\"path\":\"$.command\",\"matches\":\"(^|[;&| ])rm -rf\"},"
                       "\"options\":{\"payload\":\"x\"}}");
    report("plan_decide, + when matches (regex)", best_rate(run_decide, &a), base);
    plan_free(a.plan);

    printf("target: >= 5 M decisions/s: %s\n", rate >= 5e6 ? "met" : "NOT MET");
    json_decref(args);
    json_decref(cmd);
    return 0;
}
