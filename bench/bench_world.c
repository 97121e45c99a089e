/*
 * bench_world: tool calls through the world on one core, against the shim relaying to a trivial
 * echo server, in the same run (issue 16: "at least 50k tool calls per second through the world
 * (validation, effect, ledger event) on one core, measured against the shim relaying to a
 * trivial echo server in the same run").
 *
 * Each call is a create_refund of examples/worlds/payments.yaml with a fresh idempotency key: a
 * schema check, an effect with its dedupe index, and three events (tool_call, effect,
 * tool_result) to an events file. Per round, the chains taking turns so that a burst of load
 * hits all of them:
 *   world            `faultline world WORLD --plan PLAN --events EVENTS`, a new process each
 *                    round (its ledger grows with the calls), CALLS pipelined tools/calls with
 *                    BENCH_INFLIGHT in flight through its stdin and stdout: the figure;
 *   shim+echo        `faultline mcp --plan PLAN --events EVENTS -- bench_world --server` (the
 *                    echo server bench_mcp measures, bench_chain.h), the same client, the same
 *                    pipelining, a 32-byte echo call each: the reference;
 *   world in process world_serve_line on the same lines, no pipes (the world's own cost), and
 *                    again with no events file (what the three events cost, informational);
 *   json-rpc floor   parsing the same line and writing a reply of the same size, in process.
 * PLAN holds one fault that never matches, so each call is decided as in a run. The target is
 * met when the world's pipelined median is at least 50000 calls/s; ratios are of medians.
 * With FAULTLINE_BASE set to another faultline binary (a build of an earlier commit), its world
 * runs as a fifth chain in the same rounds: a before/after measured side by side
 * (informational). Prints the load average before and after (docs/performance.md, ## World).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/jsonrpc.h"
#include "experiment/experiment.h"
#include "seam/seam.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "world/serve.h"
#include "world/world.h"
#include "bench_chain.h"
#include "util/banned.h"

#define CALLS 20000 /* per round and chain: under WORLD_EFFECTS_MAX */
#define ROUNDS 5
#define TARGET 50000

static void line_of(char *out, size_t n, int i)
{
    snprintf(out, n,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"create_refund\",\"arguments\":{\"charge_id\":\"ch_2\",\"amount\":1999,"
             "\"idempotency_key\":\"key-%d\"}}}",
             i, i);
}

static void refund_request(struct buf *b, int id)
{
    char line[512];
    line_of(line, sizeof(line), id);
    buf_adds(b, line);
    buf_addc(b, '\n');
}

/* CALLS calls through world_serve_line in this process: calls/s, or -1. */
static double in_process(const json_t *spec, const char *evpath)
{
    struct err e = {0};
    struct world *w = world_new(spec, &e);
    struct seam_opts so = {.component = "world", .events_path = evpath}; /* NULL: no events */
    struct seam *seam = seam_new(&so, &e);
    struct world_serve_opts o = {.seam = seam};
    struct buf out = BUF_INIT;
    char line[512];
    double cps = -1;

    if (w == NULL || seam == NULL) {
        fprintf(stderr, "bench_world: %s\n", e.msg);
        goto done;
    }
    int64_t t0 = time_mono_ns();
    for (int i = 0; i < CALLS; i++) {
        line_of(line, sizeof(line), i);
        world_serve_line(w, &o, line, strlen(line), &out);
        buf_reset(&out);
        if (i % BENCH_INFLIGHT == BENCH_INFLIGHT - 1)
            seam_flush(seam); /* as the server does after each read */
    }
    seam_flush(seam);
    cps = CALLS / ((time_mono_ns() - t0) / 1e9);
    if (world_nentries(w) != CALLS) {
        fprintf(stderr, "bench_world: %zu effects, expected %d\n", world_nentries(w), CALLS);
        cps = -1;
    }
done:
    seam_free(seam);
    world_free(w);
    if (evpath)
        unlink(evpath);
    buf_release(&out);
    return cps;
}

/* The floor: parse the line, write a reply of the same size. */
static double floor_rate(void)
{
    struct buf o2 = BUF_INIT;
    char line[512];
    int64_t t0 = time_mono_ns();

    for (int i = 0; i < CALLS; i++) {
        struct jsonrpc_msg m;
        line_of(line, sizeof(line), i);
        jsonrpc_parse(line, strlen(line), &m);
        json_t *rep = jsonrpc_make_result(
            m.id, json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
                            "{\"effect_id\":\"refunds-1\",\"status\":\"refunded\"}", "isError", 0));
        jsonrpc_write(&o2, rep);
        json_decref(rep);
        jsonrpc_msg_release(&m);
        buf_reset(&o2);
    }
    buf_release(&o2);
    return CALLS / ((time_mono_ns() - t0) / 1e9);
}

int main(int argc, char **argv)
{
    struct experiment_diags d = {0};
    struct err e = {0};
    const char *root = getenv("FAULTLINE_ROOT") ? getenv("FAULTLINE_ROOT") : ".";
    const char *faultline = getenv("FAULTLINE"), *base = getenv("FAULTLINE_BASE");
    char self[4096], dir[4096], path[4096], wpath[4200], plan[4200], evpath[4200], wev[4200],
        sev[4200];
    double world_cps[ROUNDS], shim_cps[ROUNDS], inproc_cps[ROUNDS], floor_cps[ROUNDS],
        base_cps[ROUNDS], ratio[ROUNDS], noev_cps[ROUNDS];
    int notmet = 0, rc = 1;
    json_t *spec;
    char *text;

    if (argc > 1 && strcmp(argv[1], "--server") == 0)
        return bench_echo_server();
    {
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
            return 1;
        self[n] = '\0';
    }
    if (faultline == NULL) {
        fprintf(stderr, "bench_world: set FAULTLINE to the faultline binary (bench/run does)\n");
        return 1;
    }
    bench_loadavg("before");
    snprintf(path, sizeof(path), "%s/examples/worlds/payments.yaml", root);
    if ((spec = experiment_world_load(path, &d, &e)) == NULL) {
        fprintf(stderr, "bench_world: %s\n", e.msg);
        return 1;
    }
    experiment_diags_release(&d);
    json_object_del(spec, "max_calls"); /* its budget of 50 calls would stop the rounds */
    snprintf(dir, sizeof(dir), "%s/faultline-bench-world-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(wpath, sizeof(wpath), "%s/world.json", dir);
    snprintf(plan, sizeof(plan), "%s/plan.json", dir);
    snprintf(evpath, sizeof(evpath), "%s/inproc.jsonl", dir);
    snprintf(wev, sizeof(wev), "%s/world-events.jsonl", dir);
    snprintf(sev, sizeof(sev), "%s/shim-events.jsonl", dir);
    text = json_dumps(spec, JSON_COMPACT);
    {
        const char *p = "{\"version\":1,\"run\":\"bench\",\"canary\":\"E-FAULTLINE-00000000\","
                        "\"faults\":[{\"kind\":\"tool.error\",\"injectors\":[\"mcp\",\"world\"],"
                        "\"safety\":\"fail-safe\",\"match\":{\"tool\":\"never\"}}]}\n";
        if (text == NULL || fs_write_file(wpath, text, strlen(text), &e) < 0 ||
            fs_write_file(plan, p, strlen(p), &e) < 0) {
            fprintf(stderr, "bench_world: %s\n", e.msg);
            goto done;
        }
    }
    {
        const char *wargv[] = {faultline, "world", wpath, "--plan", plan, "--events", wev, NULL};
        const char *bargv[] = {base, "world", wpath, "--plan", plan, "--events", wev, NULL};
        const char *sargv[] = {faultline, "mcp", "--plan", plan,       "--events",
                               sev,       "--",  self,     "--server", NULL};
        struct bench_chain shim = {.name = "shim+echo"};
        int wid = 0, sid = 0;

        if (bench_chain_start(&shim, sargv, "bench_world") < 0)
            goto done;
        for (int r = 0; r < ROUNDS; r++) {
            struct bench_chain world = {.name = "world"};
            if (bench_chain_start(&world, wargv, "bench_world") < 0) {
                bench_chain_stop(&shim);
                goto done;
            }
            wid = 0; /* a new world: its idempotency keys start again */
            world_cps[r] = bench_pipelined(&world, CALLS, refund_request, &wid);
            bench_chain_stop(&world);
            unlink(wev);
            if (base && *base) {
                struct bench_chain bw = {.name = "base world"};
                if (bench_chain_start(&bw, bargv, "bench_world") < 0) {
                    bench_chain_stop(&shim);
                    goto done;
                }
                wid = 0;
                base_cps[r] = bench_pipelined(&bw, CALLS, refund_request, &wid);
                bench_chain_stop(&bw);
                unlink(wev);
                ratio[r] = world_cps[r] / base_cps[r];
            }
            shim_cps[r] = bench_pipelined(&shim, CALLS, bench_echo_request, &sid);
            inproc_cps[r] = in_process(spec, evpath);
            noev_cps[r] = in_process(spec, NULL);
            floor_cps[r] = floor_rate();
            if (world_cps[r] < 0 || shim_cps[r] < 0 || inproc_cps[r] < 0) {
                fprintf(stderr, "bench_world: round %d failed (world %.0f, shim %.0f)\n", r,
                        world_cps[r], shim_cps[r]);
                bench_chain_stop(&shim);
                goto done;
            }
        }
        bench_chain_stop(&shim);
    }
    {
        double wm = bench_median(world_cps, ROUNDS), sm = bench_median(shim_cps, ROUNDS);
        double im = bench_median(inproc_cps, ROUNDS), fm = bench_median(floor_cps, ROUNDS);
        printf("calls/s, medians of %d rounds of %d calls: create_refund calls of "
               "examples/worlds/payments.yaml (a schema check, an effect, 3 events each; a plan "
               "decision), %d in flight through pipes\n",
               ROUNDS, CALLS, BENCH_INFLIGHT);
        printf("  %-32s %10.0f\n", "world (faultline world)", wm);
        printf("  %-32s %10.0f\n", "shim+echo (faultline mcp)", sm);
        printf("  %-32s %10.0f\n", "world in process", im);
        printf("  %-32s %10.0f\n", "world in process, no events", bench_median(noev_cps, ROUNDS));
        printf("  %-32s %10.0f\n", "json-rpc floor, in process", fm);
        if (base && *base)
            printf("before/after (FAULTLINE_BASE's world in the same rounds): base %.0f calls/s, "
                   "this build / base %.2fx (median of the per-round ratios)\n",
                   bench_median(base_cps, ROUNDS), bench_median(ratio, ROUNDS));
        printf("targets (the world against the shim relaying to the echo server, same client):\n");
        notmet += bench_row("world calls/s, 64 in flight (bar in calls/s)", wm, sm, wm / sm,
                            "calls/s", 0, TARGET, TARGET, wm);
        notmet += bench_row("world in process (bar in calls/s)", im, fm, im / fm, "calls/s", 0,
                            TARGET, TARGET, im);
    }
    bench_loadavg("after");
    /* A missed target is reported (and listed by bench/run), not an error. */
    if (notmet)
        printf("targets NOT MET: %d\n", notmet);
    rc = 0;
done:
    free(text);
    unlink(wpath);
    unlink(plan);
    unlink(evpath);
    unlink(wev);
    unlink(sev);
    rmdir(dir);
    json_decref(spec);
    return rc;
}
