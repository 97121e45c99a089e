/*
 * bench_mcp: what `faultline mcp` adds to an MCP session, in one run:
 *   latency:    tools/call round trips, one at a time, p50 and p99 (microseconds);
 *   throughput: small requests (ping) pipelined, messages per second through the chain (each
 *               request and its reply count as one message each way).
 * for four chains to the same server (this binary, re-executed with --server: a minimal MCP
 * server that answers without parsing JSON, so the server costs as little as possible):
 *   direct       the server's own stdin/stdout (no relay at all);
 *   plain relay  this binary with --relay: copies bytes both ways with poll(2), nothing else
 *                (the floor any relay pays: two more pipe hops);
 *   shim         faultline mcp, standalone, no plan;
 *   shim+plan    faultline mcp, standalone, with a plan whose fault never matches (a decision
 *                per tools/call) and an events file (two events per tools/call);
 *   shim+controller  faultline mcp in controller mode (FAULTLINE_CONTROL_URL) in front of a
 *                `faultline proxy` with the same plan: a POST /_faultline/decide per tools/call
 *                and the events posted in batches by the shim's sender thread.
 * Targets (docs/performance.md): in standalone mode the shim's added p50 is at most 2x the
 * plain relay's, and it moves at least 100k small messages/s; in controller mode its p50 is
 * within 1 ms of standalone shim+plan's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fs.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define ROUNDS 7         /* the chains take turns, so a burst of load hits all of them */
#define ROUND_TRIPS 4000 /* per round */
#define WARMUP 500
#define PIPELINED 100000 /* per round */

/* ---- the server: answers tools/call and ping by id, without parsing ---- */

static int run_server(void)
{
    static char in[1 << 16];
    struct buf line = BUF_INIT, out = BUF_INIT;
    ssize_t n;

    while ((n = read(0, in, sizeof(in))) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            const char *id, *end;
            if (in[i] != '\n') {
                buf_addc(&line, in[i]);
                continue;
            }
            id = strstr(line.data, "\"id\":");
            if (id) {
                id += 5;
                end = id + strcspn(id, ",}");
                if (strstr(line.data, "\"tools/call\""))
                    buf_addf(&out,
                             "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":"
                             "\"text\",\"text\":\"Echo: hi\"}]}}\n",
                             (int)(end - id), id);
                else
                    buf_addf(&out, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{}}\n",
                             (int)(end - id), id);
            }
            buf_reset(&line);
        }
        if (out.len && fs_write_all(1, out.data, out.len) < 0)
            break;
        buf_reset(&out);
    }
    buf_release(&line);
    buf_release(&out);
    return 0;
}

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

struct chain {
    const char *name;
    struct proc p;
    struct buf in;              /* bytes read, not yet consumed */
    const char *const *env_add; /* NULL or "NAME=VALUE"s for the chain's process */
};

static int chain_start(struct chain *c, const char *const *argv)
{
    struct proc_opts o = {
        .argv = argv, .in = PROC_PIPE, .out = PROC_PIPE, .err = PROC_NULL, .env_add = c->env_add};
    struct err e = {0};

    buf_init(&c->in, 0);
    if (proc_spawn(&c->p, &o, &e) < 0) {
        fprintf(stderr, "bench_mcp: cannot start %s: %s\n", c->name, e.msg);
        return -1;
    }
    fcntl(c->p.in_fd, F_SETFL, fcntl(c->p.in_fd, F_GETFL) & ~O_NONBLOCK);
    fcntl(c->p.out_fd, F_SETFL, fcntl(c->p.out_fd, F_GETFL) & ~O_NONBLOCK);
    return 0;
}

/* Reads until n complete lines have arrived (consuming them). -1 on EOF. */
static int read_lines(struct chain *c, long n)
{
    char buf[1 << 16];

    while (n > 0) {
        char *nl;
        while (n > 0 && (nl = memchr(c->in.data, '\n', c->in.len)) != NULL) {
            buf_consume(&c->in, (size_t)(nl - c->in.data) + 1);
            n--;
        }
        if (n == 0)
            break;
        ssize_t r = read(c->p.out_fd, buf, sizeof(buf));
        if (r <= 0)
            return -1;
        buf_add(&c->in, buf, (size_t)r);
    }
    return 0;
}

static void chain_stop(struct chain *c)
{
    proc_close_fd(&c->p.in_fd);
    proc_terminate(&c->p, 3000);
    proc_release(&c->p);
    buf_release(&c->in);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

struct result {
    double p50, p99, msgs_per_s;
};

/* One round of sequential tools/call round trips; appends the latencies (ns) to lat. */
static int measure_latency(struct chain *c, int64_t *lat, int *next_id)
{
    char req[256];

    for (int i = 0; i < WARMUP + ROUND_TRIPS; i++) {
        int n = snprintf(req, sizeof(req),
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                         "\"name\":\"echo\",\"arguments\":{\"message\":\"hi\"}}}\n",
                         ++*next_id);
        int64_t t0 = time_mono_ns();
        if (fs_write_all(c->p.in_fd, req, (size_t)n) < 0 || read_lines(c, 1) < 0)
            return -1;
        if (i >= WARMUP)
            lat[i - WARMUP] = time_mono_ns() - t0;
    }
    return 0;
}

struct writer_arg {
    int fd;
    long n;
    int base;
};

static void *writer(void *p)
{
    struct writer_arg *w = p;
    struct buf b = BUF_INIT;

    for (long i = 0; i < w->n; i++) {
        buf_addf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"ping\"}\n", w->base + i);
        if (b.len > 60000) {
            if (fs_write_all(w->fd, b.data, b.len) < 0)
                break;
            buf_reset(&b);
        }
    }
    if (b.len)
        fs_write_all(w->fd, b.data, b.len);
    buf_release(&b);
    return NULL;
}

/* One round of pipelined pings; returns messages per second (each request and each reply
 * crosses the chain once), or -1. */
static double measure_throughput(struct chain *c, int *next_id)
{
    pthread_t t;
    struct writer_arg w = {c->p.in_fd, PIPELINED, *next_id + 1};
    int64_t t0 = time_mono_ns();
    int rc;

    *next_id += PIPELINED;
    pthread_create(&t, NULL, writer, &w);
    rc = read_lines(c, PIPELINED);
    pthread_join(t, NULL);
    return rc < 0 ? -1 : 2.0 * PIPELINED / ((time_mono_ns() - t0) / 1e9);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    char self[4096], dir[4096], plan[4200], events[4200];
    const char *faultline = getenv("FAULTLINE");
    enum { NCHAINS = 5 };
    struct result res[NCHAINS];
    const char *names[NCHAINS] = {"direct", "plain relay", "shim", "shim+plan+events",
                                  "shim+controller"};
    char ctl_events[4200], ready[4200], url[600], url_env[700];
    struct proc ctl;
    int ok = 1;

    if (argc > 1 && strcmp(argv[1], "--server") == 0)
        return run_server();
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
    snprintf(dir, sizeof(dir), "%s/faultline-bench-mcp-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(plan, sizeof(plan), "%s/plan.json", dir);
    snprintf(events, sizeof(events), "%s/events.jsonl", dir);
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
        const char *argv[] = {faultline, "proxy", "--plan", plan, "--events", ctl_events,
                              "--ready-file", ready, NULL};
        struct proc_opts o = {.argv = argv, .in = PROC_NULL, .out = PROC_NULL, .err = PROC_NULL};
        struct buf addr = BUF_INIT;
        struct err e = {0};
        if (proc_spawn(&ctl, &o, &e) < 0) {
            fprintf(stderr, "bench_mcp: cannot start the controller: %s\n", e.msg);
            return 1;
        }
        for (int i = 0; i < 200 && addr.len == 0; i++) {
            usleep(50000);
            buf_reset(&addr);
            err_clear(&e);
            if (fs_read_file(ready, 4096, &addr, &e) < 0)
                buf_reset(&addr);
        }
        while (addr.len > 0 && (addr.data[addr.len - 1] == '\n' || addr.data[addr.len - 1] == ' '))
            buf_truncate(&addr, addr.len - 1);
        if (addr.len == 0) {
            fprintf(stderr, "bench_mcp: the controller did not start\n");
            return 1;
        }
        snprintf(url, sizeof(url), "http://%s", addr.data);
        snprintf(url_env, sizeof(url_env), "FAULTLINE_CONTROL_URL=%s", url);
        buf_release(&addr);
    }
    {
        const char *direct[] = {self, "--server", NULL};
        const char *relay[] = {self, "--relay", self, "--server", NULL};
        const char *shim[] = {faultline, "mcp", "--", self, "--server", NULL};
        const char *shimp[] = {faultline, "mcp", "--plan", plan,       "--events",
                               events,    "--",  self,     "--server", NULL};
        const char *shimc[] = {faultline, "mcp", "--plan", plan, "--", self, "--server", NULL};
        const char *ctl_env[] = {url_env, NULL};
        const char *const *argvs[NCHAINS] = {direct, relay, shim, shimp, shimc};
        static struct chain chains[NCHAINS];
        static int64_t lat[NCHAINS][ROUNDS * ROUND_TRIPS];
        double p50s[NCHAINS][ROUNDS], tps[NCHAINS][ROUNDS];
        int ids[NCHAINS] = {0};

        chains[4].env_add = ctl_env;
        for (int i = 0; i < NCHAINS; i++) {
            chains[i].name = names[i];
            if (chain_start(&chains[i], argvs[i]) < 0)
                return 1;
        }
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < NCHAINS; i++) {
                int64_t *l = lat[i] + (size_t)round * ROUND_TRIPS;
                if (measure_latency(&chains[i], l, &ids[i]) < 0 ||
                    (tps[i][round] = measure_throughput(&chains[i], &ids[i])) < 0) {
                    fprintf(stderr, "bench_mcp: %s failed\n", names[i]);
                    return 1;
                }
                qsort(l, ROUND_TRIPS, sizeof(l[0]), cmp_i64);
                p50s[i][round] = l[ROUND_TRIPS / 2] / 1000.0;
            }
        }
        for (int i = 0; i < NCHAINS; i++) {
            chain_stop(&chains[i]);
            qsort(lat[i], (size_t)ROUNDS * ROUND_TRIPS, sizeof(lat[i][0]), cmp_i64);
            qsort(p50s[i], ROUNDS, sizeof(double), cmp_double);
            qsort(tps[i], ROUNDS, sizeof(double), cmp_double);
            res[i].p50 = p50s[i][ROUNDS / 2]; /* the median round */
            res[i].p99 = lat[i][(size_t)ROUNDS * ROUND_TRIPS * 99 / 100] / 1000.0;
            res[i].msgs_per_s = tps[i][ROUNDS / 2];
        }
    }
    proc_terminate(&ctl, 3000);
    proc_release(&ctl);
    unlink(plan);
    unlink(events);
    unlink(ctl_events);
    unlink(ready);
    rmdir(dir);

    printf("tools/call round trips one at a time (microseconds; p50: median of %d rounds of %d, "
           "p99: over all), and pipelined pings (messages/s, median round):\n",
           ROUNDS, ROUND_TRIPS);
    printf("  %-18s %8s %8s %10s %14s\n", "chain", "p50", "p99", "added p50", "messages/s");
    for (int i = 0; i < NCHAINS; i++)
        printf("  %-18s %8.1f %8.1f %10.1f %14.0f\n", names[i], res[i].p50, res[i].p99,
               res[i].p50 - res[0].p50, res[i].msgs_per_s);
    {
        double floor = res[1].p50 - res[0].p50;
        for (int i = 2; i < 4; i++) {
            double added = res[i].p50 - res[0].p50;
            int lat_ok = added <= 2.0 * floor, tp_ok = res[i].msgs_per_s >= 100000;
            printf("  %s: added p50 %.1f us = %.2fx the plain relay's (target <= 2x: %s); "
                   "%.0f msgs/s (target >= 100000: %s)\n",
                   names[i], added, floor > 0 ? added / floor : 0.0, lat_ok ? "met" : "MISSED",
                   res[i].msgs_per_s, tp_ok ? "met" : "MISSED");
            ok = ok && tp_ok && lat_ok;
        }
    }
    {
        double d = res[4].p50 - res[3].p50;
        int met = d <= 1000.0;
        printf("  controller mode: p50 %.1f us vs standalone shim+plan+events %.1f us: %+.1f us "
               "(target within 1000 us: %s)\n",
               res[4].p50, res[3].p50, d, met ? "met" : "NOT MET");
        ok = ok && met;
    }
    /* A missed target is reported, not an error: the figures depend on the machine's load. */
    printf("  targets: %s\n", ok ? "all met" : "some MISSED");
    return 0;
}
