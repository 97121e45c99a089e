/*
 * bench_mcp: what `faultline mcp` adds to an MCP session, in one run, against a byte relay:
 *   latency:    tools/call round trips, one at a time, with a 32 B and a 16 KiB message as the
 *               argument (the server echoes it, so the result is as large): p50 in microseconds;
 *   pipelined:  small tools/calls with 64 in flight (a new one written per reply read): calls/s.
 * for five chains to the same server (this binary, re-executed with --server: a minimal MCP
 * server that answers by id and echoes arguments.message without parsing JSON, so the server
 * costs as little as possible and the same behind every chain):
 *   direct       the server's own stdin/stdout (no relay at all);
 *   byte relay   this binary with --relay: copies bytes both ways with poll(2), nothing else
 *                (the reference: the floor any relay pays, two more pipe hops and a process);
 *   shim         faultline mcp, standalone, no plan;
 *   shim+plan+events  faultline mcp, standalone, with a plan whose fault never matches (a
 *                decision per tools/call) and an events file (two events per tools/call);
 *   shim+controller  faultline mcp in controller mode (FAULTLINE_CONTROL_URL) in front of a
 *                `faultline proxy` with the same plan: a POST /_faultline/decide per tools/call
 *                and the events posted in batches by the shim's sender thread.
 * The chains take turns each round; added p50 = a chain's p50 minus direct's in the same round,
 * and each ratio is the median over the rounds of that round's ratio to the byte relay.
 * Targets (docs/performance.md, ## MCP shim), for shim+plan+events: added p50 at most 2x the
 * byte relay's at 32 B and 4x at 16 KiB (goal 2x), at least 100k calls/s pipelined (goal 150k);
 * in controller mode its p50 within 1 ms of standalone's. Each prints met / NOT MET.
 * With FAULTLINE_BASE set to another faultline binary (a build of an earlier commit), a sixth
 * chain runs it as shim+plan+events too, in the same rounds: a before/after measured side by
 * side (informational, no target).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fs.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "bench_chain.h"
#include "bench_ctl.h"
#include "util/banned.h"

#define ROUNDS 7              /* the chains take turns, so a burst of load hits all of them */
#define ROUND_TRIPS 2000      /* per round, SMALL-byte messages */
#define ROUND_TRIPS_LARGE 500 /* per round, LARGE-byte messages */
#define SMALL 32
#define LARGE 16384
#define WARMUP 200
#define PIPELINED 30000 /* calls per round */

/* ---- the plain relay: bytes both ways, nothing else ---- */

/* Moves bytes from one descriptor to another through a buffer: reads only while the buffer is
 * below 1 MiB, writes whatever the destination takes; both sides non-blocking. */
struct pump {
    int from, to;
    struct buf b;
    int eof;
};

static int pump_step(struct pump *p, short rev_from, short rev_to)
{
    char tmp[1 << 16];

    if ((rev_from & (POLLIN | POLLHUP)) && !p->eof) {
        ssize_t n = read(p->from, tmp, sizeof(tmp));
        if (n > 0)
            buf_add(&p->b, tmp, (size_t)n);
        else if (n == 0 || (errno != EAGAIN && errno != EINTR))
            p->eof = 1;
    }
    if (p->b.len > 0) {
        ssize_t w = write(p->to, p->b.data, p->b.len);
        if (w > 0)
            buf_consume(&p->b, (size_t)w);
        else if (w < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
    }
    (void)rev_to;
    return 0;
}

static int run_relay(char **argv)
{
    struct proc p;
    struct proc_opts o = {.argv = (const char *const *)argv, .in = PROC_PIPE, .out = PROC_PIPE};
    struct err e = {0};
    struct pump up, down;

    if (proc_spawn(&p, &o, &e) < 0) {
        fprintf(stderr, "relay: %s\n", e.msg);
        return 1;
    }
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
    up = (struct pump){0, p.in_fd, BUF_INIT, 0};
    down = (struct pump){p.out_fd, 1, BUF_INIT, 0};
    while (!down.eof || down.b.len > 0) {
        struct pollfd pf[4] = {
            {(!up.eof && up.b.len < (1u << 20)) ? 0 : -1, POLLIN, 0},
            {up.b.len > 0 ? p.in_fd : -1, POLLOUT, 0},
            {(!down.eof && down.b.len < (1u << 20)) ? p.out_fd : -1, POLLIN, 0},
            {down.b.len > 0 ? 1 : -1, POLLOUT, 0},
        };
        if (poll(pf, 4, -1) < 0 && errno != EINTR)
            break;
        if (pump_step(&up, pf[0].revents, pf[1].revents) < 0 ||
            pump_step(&down, pf[2].revents, pf[3].revents) < 0)
            break;
        if (up.eof && up.b.len == 0 && p.in_fd >= 0)
            proc_close_fd(&p.in_fd);
    }
    buf_release(&up.b);
    buf_release(&down.b);
    proc_terminate(&p, 1000);
    proc_release(&p);
    return 0;
}

/* ---- the client side ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One round of sequential tools/call round trips whose argument (and so the echoed result) is a
 * message of size bytes; appends the latencies (ns) to lat. */
static int measure_latency(struct bench_chain *c, int64_t *lat, int n, size_t size, int *next_id)
{
    struct buf req = BUF_INIT;
    int rc = 0;

    for (int i = 0; i < WARMUP + n; i++) {
        buf_reset(&req);
        buf_addf(&req,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"echo\",\"arguments\":{\"message\":\"",
                 ++*next_id);
        for (size_t k = 0; k < size; k++)
            buf_addc(&req, (char)('a' + k % 26));
        buf_adds(&req, "\"}}}\n");
        int64_t t0 = time_mono_ns();
        if (fs_write_all(c->p.in_fd, req.data, req.len) < 0 || bench_chain_read_lines(c, 1) < 0) {
            rc = -1;
            break;
        }
        if (i >= WARMUP)
            lat[i - WARMUP] = time_mono_ns() - t0;
    }
    buf_release(&req);
    return rc;
}

static double p50_of(int64_t *l, int n)
{
    qsort(l, (size_t)n, sizeof(l[0]), cmp_i64);
    return l[n / 2] / 1000.0;
}

int main(int argc, char **argv)
{
    char self[4096], dir[4096], plan[4200], events[4200], events_base[4200];
    const char *faultline = getenv("FAULTLINE"), *base = getenv("FAULTLINE_BASE");
    enum { DIRECT, RELAY, SHIM, SHIMP, SHIMC, BASEP, NCHAINS };
    const char *names[NCHAINS] = {"direct",           "byte relay",      "shim",
                                  "shim+plan+events", "shim+controller", "base s+p+e"};
    const int nchains = base && *base ? NCHAINS : BASEP;
    char ctl_events[4200], ready[4200], url[600], url_env[700];
    struct proc ctl;
    int notmet = 0;

    if (argc > 1 && strcmp(argv[1], "--server") == 0)
        return bench_echo_server();
    if (argc > 2 && strcmp(argv[1], "--relay") == 0)
        return run_relay(argv + 2);
    {
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
            return 1;
        self[n] = '\0';
    }
    if (faultline == NULL) {
        fprintf(stderr, "bench_mcp: set FAULTLINE to the faultline binary (bench/run does)\n");
        return 1;
    }
    bench_loadavg("before");
    snprintf(dir, sizeof(dir), "%s/faultline-bench-mcp-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(plan, sizeof(plan), "%s/plan.json", dir);
    snprintf(events, sizeof(events), "%s/events.jsonl", dir);
    snprintf(events_base, sizeof(events_base), "%s/events-base.jsonl", dir);
    snprintf(ctl_events, sizeof(ctl_events), "%s/ctl-events.jsonl", dir);
    snprintf(ready, sizeof(ready), "%s/ready", dir);
    {
        const char *p = "{\"version\":1,\"run\":\"bench\",\"canary\":\"E-FAULTLINE-00000000\","
                        "\"faults\":[{\"kind\":\"tool.error\",\"injectors\":[\"mcp\"],"
                        "\"safety\":\"fail-safe\",\"match\":{\"tool\":\"never\"}}]}\n";
        struct err e = {0};
        if (fs_write_file(plan, p, strlen(p), &e) < 0)
            return 1;
    }
    {
        /* the controller for the controller-mode chain */
        char addr[128];
        if (bench_start_controller(faultline, plan, ctl_events, ready, &ctl, addr, sizeof(addr),
                                   "bench_mcp"))
            return 1;
        snprintf(url, sizeof(url), "http://%s", addr);
        snprintf(url_env, sizeof(url_env), "FAULTLINE_CONTROL_URL=%s", url);
    }
    {
        const char *direct[] = {self, "--server", NULL};
        const char *relay[] = {self, "--relay", self, "--server", NULL};
        const char *shim[] = {faultline, "mcp", "--", self, "--server", NULL};
        const char *shimp[] = {faultline, "mcp", "--plan", plan,       "--events",
                               events,    "--",  self,     "--server", NULL};
        const char *shimc[] = {faultline, "mcp", "--plan", plan, "--", self, "--server", NULL};
        const char *basep[] = {base,        "mcp", "--plan", plan,       "--events",
                               events_base, "--",  self,     "--server", NULL};
        const char *ctl_env[] = {url_env, NULL};
        const char *const *argvs[NCHAINS] = {direct, relay, shim, shimp, shimc, basep};
        static struct bench_chain chains[NCHAINS];
        static int64_t lat_s[ROUND_TRIPS], lat_l[ROUND_TRIPS_LARGE];
        double p50s[NCHAINS][ROUNDS], p50l[NCHAINS][ROUNDS], cps[NCHAINS][ROUNDS];
        double r_small[NCHAINS][ROUNDS], r_large[NCHAINS][ROUNDS], r_cps[NCHAINS][ROUNDS];
        double add_s[NCHAINS][ROUNDS], add_l[NCHAINS][ROUNDS];
        int ids[NCHAINS] = {0};

        chains[SHIMC].env_add = ctl_env;
        for (int i = 0; i < nchains; i++) {
            chains[i].name = names[i];
            if (bench_chain_start(&chains[i], argvs[i], "bench_mcp") < 0)
                return 1;
        }
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < nchains; i++) {
                if (measure_latency(&chains[i], lat_s, ROUND_TRIPS, SMALL, &ids[i]) < 0 ||
                    measure_latency(&chains[i], lat_l, ROUND_TRIPS_LARGE, LARGE, &ids[i]) < 0 ||
                    (cps[i][round] =
                         bench_pipelined(&chains[i], PIPELINED, bench_echo_request, &ids[i])) < 0) {
                    fprintf(stderr, "bench_mcp: %s failed\n", names[i]);
                    return 1;
                }
                p50s[i][round] = p50_of(lat_s, ROUND_TRIPS);
                p50l[i][round] = p50_of(lat_l, ROUND_TRIPS_LARGE);
            }
            for (int i = 0; i < nchains; i++) {
                add_s[i][round] = p50s[i][round] - p50s[DIRECT][round];
                add_l[i][round] = p50l[i][round] - p50l[DIRECT][round];
                r_small[i][round] = add_s[i][round] / add_s[RELAY][round];
                r_large[i][round] = add_l[i][round] / add_l[RELAY][round];
                r_cps[i][round] = cps[i][round] / cps[RELAY][round];
            }
        }
        for (int i = 0; i < nchains; i++)
            bench_chain_stop(&chains[i]);
        proc_terminate(&ctl, 3000);
        proc_release(&ctl);
        unlink(plan);
        unlink(events);
        unlink(events_base);
        unlink(ctl_events);
        unlink(ready);
        rmdir(dir);

        printf("tools/call round trips one at a time, p50 in us (median of %d rounds of %d at %d B "
               "and %d at %d B), and calls/s with %d in flight (%d calls a round); each ratio is "
               "the median of the per-round ratios to the byte relay\n",
               ROUNDS, ROUND_TRIPS, SMALL, ROUND_TRIPS_LARGE, LARGE, BENCH_INFLIGHT, PIPELINED);
        printf("  %-18s %9s %11s %9s %11s %12s\n", "chain", "p50 32B", "added 32B", "p50 16K",
               "added 16K", "calls/s");
        for (int i = 0; i < nchains; i++)
            printf("  %-18s %9.1f %11.1f %9.1f %11.1f %12.0f\n", names[i],
                   bench_median(p50s[i], ROUNDS), bench_median(add_s[i], ROUNDS),
                   bench_median(p50l[i], ROUNDS), bench_median(add_l[i], ROUNDS),
                   bench_median(cps[i], ROUNDS));
        if (nchains > BASEP) {
            double rs[ROUNDS], rl[ROUNDS], rc[ROUNDS];
            for (int r = 0; r < ROUNDS; r++) {
                rs[r] = add_s[SHIMP][r] / add_s[BASEP][r];
                rl[r] = add_l[SHIMP][r] / add_l[BASEP][r];
                rc[r] = cps[SHIMP][r] / cps[BASEP][r];
            }
            printf("before/after (FAULTLINE_BASE as shim+plan+events in the same rounds; medians "
                   "of per-round ratios, this build / base): added p50 32 B %.2fx, 16 KiB %.2fx, "
                   "calls/s %.2fx\n",
                   bench_median(rs, ROUNDS), bench_median(rl, ROUNDS), bench_median(rc, ROUNDS));
        }
        printf("targets (shim with plan and events against the byte relay, same client, same "
               "server):\n");
        notmet +=
            bench_row("added p50, 32 B message", bench_median(add_s[SHIMP], ROUNDS),
                      bench_median(add_s[RELAY], ROUNDS), bench_median(r_small[SHIMP], ROUNDS),
                      "us", 1, 2, 2, bench_median(r_small[SHIMP], ROUNDS));
        notmet +=
            bench_row("added p50, 16 KiB message", bench_median(add_l[SHIMP], ROUNDS),
                      bench_median(add_l[RELAY], ROUNDS), bench_median(r_large[SHIMP], ROUNDS),
                      "us", 1, 4, 2, bench_median(r_large[SHIMP], ROUNDS));
        notmet +=
            bench_row("calls/s, 64 in flight (bar in calls/s)", bench_median(cps[SHIMP], ROUNDS),
                      bench_median(cps[RELAY], ROUNDS), bench_median(r_cps[SHIMP], ROUNDS),
                      "calls/s", 0, 100000, 150000, bench_median(cps[SHIMP], ROUNDS));
        {
            double d[ROUNDS];
            for (int r = 0; r < ROUNDS; r++)
                d[r] = p50s[SHIMC][r] - p50s[SHIMP][r];
            notmet +=
                bench_row("controller mode: p50 minus standalone's", bench_median(d, ROUNDS),
                          bench_median(p50s[SHIMP], ROUNDS),
                          bench_median(p50s[SHIMC], ROUNDS) / bench_median(p50s[SHIMP], ROUNDS),
                          "us", 1, 1000, 1000, bench_median(d, ROUNDS));
        }
    }
    bench_loadavg("after");
    /* A missed target is reported (and listed by bench/run), not an error. */
    if (notmet)
        printf("targets NOT MET: %d\n", notmet);
    return 0;
}
