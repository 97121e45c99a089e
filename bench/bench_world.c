/*
 * bench_world: tools/calls through the world on one core, in process: world_serve_line on
 * create_refund calls of examples/worlds/payments.yaml (a fresh idempotency key each, so each
 * call is a schema check, an effect with its dedupe index, and three events: tool_call, effect,
 * tool_result, written by a standalone seam to an events file, flushed every 64 calls as the
 * server does after each read). Reference in the same run: the JSON-RPC floor, parsing the same
 * line and writing a reply of the same size (jsonrpc_parse + jsonrpc_write), no world.
 * Target (docs/performance.md, ## World): at least 50k calls/s. Prints met / NOT MET.
 * NEEDSWORK: issue 16 asks for the figure against the shim relaying to an echo server, through
 * pipes; this measures the world's own cost only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/jsonrpc.h"
#include "experiment/experiment.h"
#include "seam/seam.h"
#include "util/buf.h"
#include "util/timeutil.h"
#include "world/serve.h"
#include "world/world.h"
#include "util/banned.h"

#define CALLS 20000 /* per round: under WORLD_EFFECTS_MAX */
#define ROUNDS 3

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void line_of(char *out, size_t n, int i)
{
    snprintf(out, n,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"create_refund\",\"arguments\":{\"charge_id\":\"ch_2\",\"amount\":1999,"
             "\"idempotency_key\":\"key-%d\"}}}",
             i, i);
}

int main(void)
{
    struct experiment_diags d = {0};
    struct err e = {0};
    const char *root = getenv("FAULTLINE_ROOT") ? getenv("FAULTLINE_ROOT") : ".";
    char path[4096], evpath[256], line[512];
    double world_cps[ROUNDS], floor_cps[ROUNDS];
    json_t *spec;

    snprintf(path, sizeof(path), "%s/examples/worlds/payments.yaml", root);
    if ((spec = experiment_world_load(path, &d, &e)) == NULL) {
        fprintf(stderr, "bench_world: %s\n", e.msg);
        return 1;
    }
    experiment_diags_release(&d);
    json_object_del(spec, "max_calls"); /* its budget of 50 calls would stop the rounds */
    snprintf(evpath, sizeof(evpath), "%s/faultline-bench-world-%d.jsonl",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    for (int r = 0; r < ROUNDS; r++) {
        struct world *w = world_new(spec, &e);
        struct seam_opts so = {.component = "world", .events_path = evpath};
        struct seam *seam = seam_new(&so, &e);
        struct world_serve_opts o = {.seam = seam};
        struct buf out = BUF_INIT;
        if (w == NULL || seam == NULL) {
            fprintf(stderr, "bench_world: %s\n", e.msg);
            return 1;
        }
        int64_t t0 = time_mono_ns();
        for (int i = 0; i < CALLS; i++) {
            line_of(line, sizeof(line), i);
            world_serve_line(w, &o, line, strlen(line), &out);
            buf_reset(&out);
            if (i % 64 == 63)
                seam_flush(seam);
        }
        seam_flush(seam);
        world_cps[r] = CALLS / ((time_mono_ns() - t0) / 1e9);
        if (world_nentries(w) != CALLS) {
            fprintf(stderr, "bench_world: %zu effects, expected %d\n", world_nentries(w), CALLS);
            return 1;
        }
        seam_free(seam);
        world_free(w);
        unlink(evpath);
        buf_release(&out);

        /* the floor: parse the line, write a reply */
        struct buf o2 = BUF_INIT;
        t0 = time_mono_ns();
        for (int i = 0; i < CALLS; i++) {
            struct jsonrpc_msg m;
            line_of(line, sizeof(line), i);
            jsonrpc_parse(line, strlen(line), &m);
            json_t *rep = jsonrpc_make_result(
                m.id, json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
                                "{\"effect_id\":\"refunds-1\",\"status\":\"refunded\"}",
                                "isError", 0));
            jsonrpc_write(&o2, rep);
            json_decref(rep);
            jsonrpc_msg_release(&m);
            buf_reset(&o2);
        }
        floor_cps[r] = CALLS / ((time_mono_ns() - t0) / 1e9);
        buf_release(&o2);
    }
    qsort(world_cps, ROUNDS, sizeof(double), cmp);
    qsort(floor_cps, ROUNDS, sizeof(double), cmp);
    double wm = world_cps[ROUNDS / 2], fm = floor_cps[ROUNDS / 2];
    printf("world: %.0f calls/s (median of %d rounds of %d create_refund calls: schema, effect, "
           "3 events each)\n",
           wm, ROUNDS, CALLS);
    printf("json-rpc floor (parse + reply, same run): %.0f calls/s; the world costs %.1fx\n", fm,
           fm / wm);
    printf("target world >= 50000 calls/s: %s\n", wm >= 50000 ? "met" : "NOT MET");
    json_decref(spec);
    return wm >= 50000 ? 0 : 1;
}
