/*
 * bench_chain.h: what the MCP benchmarks share (bench_mcp, bench_world): the trivial echo MCP
 * server they measure against, a chain (a process spoken to over its stdin and stdout),
 * pipelined tools/calls through it, and the report lines (a target's figure, reference, ratio
 * and met / NOT MET; the load average before and after).
 */
#ifndef FAULTLINE_BENCH_CHAIN_H
#define FAULTLINE_BENCH_CHAIN_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/err.h"
#include "util/fs.h"
#include "util/proc.h"
#include "util/timeutil.h"

#define BENCH_INFLIGHT 64 /* pipelined calls in flight */
#define BENCH_ROUNDS_MAX 16

/* ---- the server: answers tools/call (echoing arguments.message) and anything else with {} by
 * id, without parsing: the same small cost behind every chain. Reads stdin to its end. ---- */
static inline int bench_echo_server(void)
{
    static char in[1 << 16];
    struct buf line = BUF_INIT, out = BUF_INIT;
    ssize_t n;

    while ((n = read(0, in, sizeof(in))) > 0) {
        const char *p = in, *end = in + n;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p)), *id, *idend, *msg, *msgend;
            if (nl == NULL) {
                buf_add(&line, p, (size_t)(end - p));
                break;
            }
            buf_add(&line, p, (size_t)(nl - p));
            p = nl + 1;
            id = memmem(line.data, line.len, "\"id\":", 5);
            if (id) {
                id += 5;
                idend = id + strcspn(id, ",}");
                msg = memmem(line.data, line.len, "\"message\":\"", 11);
                if (msg && memmem(line.data, line.len, "\"tools/call\"", 12)) {
                    msg += 11;
                    msgend = strchr(msg, '"'); /* the benchmark's messages hold no escapes */
                    if (msgend == NULL)
                        msgend = msg;
                    buf_addf(&out,
                             "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":"
                             "\"text\",\"text\":\"%.*s\"}]}}\n",
                             (int)(idend - id), id, (int)(msgend - msg), msg);
                } else {
                    buf_addf(&out, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{}}\n",
                             (int)(idend - id), id);
                }
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

/* ---- chains ---- */

struct bench_chain {
    const char *name;
    struct proc p;
    struct buf in;              /* bytes read, not yet consumed */
    const char *const *env_add; /* NULL or "NAME=VALUE"s for the chain's process */
};

/* Starts argv with its stdin and stdout piped to us (blocking), stderr to /dev/null. 0, or the
 * spawn's error after a message. */
static inline int bench_chain_start(struct bench_chain *c, const char *const *argv, const char *who)
{
    struct proc_opts o = {
        .argv = argv, .in = PROC_PIPE, .out = PROC_PIPE, .err = PROC_NULL, .env_add = c->env_add};
    struct err e = {0};

    buf_init(&c->in, 0);
    if (proc_spawn(&c->p, &o, &e) < 0) {
        fprintf(stderr, "%s: cannot start %s: %s\n", who, c->name, e.msg);
        return e.code < 0 ? e.code : ERR_IO;
    }
    fcntl(c->p.in_fd, F_SETFL, fcntl(c->p.in_fd, F_GETFL) & ~O_NONBLOCK);
    fcntl(c->p.out_fd, F_SETFL, fcntl(c->p.out_fd, F_GETFL) & ~O_NONBLOCK);
    return 0;
}

/* Reads until n complete lines have arrived (consuming them). 0, or ERR_IO at the end of the
 * chain's output. */
static inline int bench_chain_read_lines(struct bench_chain *c, long n)
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
            return ERR_IO;
        buf_add(&c->in, buf, (size_t)r);
    }
    return 0;
}

/* Closes the chain's stdin and waits up to 3 s for it to exit (then kills it). */
static inline void bench_chain_stop(struct bench_chain *c)
{
    proc_close_fd(&c->p.in_fd);
    proc_terminate(&c->p, 3000);
    proc_release(&c->p);
    buf_release(&c->in);
}

/* Appends request number id (one line, with its '\n') to b. */
typedef void (*bench_request_fn)(struct buf *b, int id);

/* The benchmarks' small tools/call: echo of a 32-byte message. */
static inline void bench_echo_request(struct buf *b, int id)
{
    buf_addf(b,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"message\":\"0123456789abcdef0123456789abcdef\"}}}\n",
             id);
}

/* One round of n requests made by req with BENCH_INFLIGHT of them in flight (a new request
 * written for each reply read); returns calls per second, or -1. */
static inline double bench_pipelined(struct bench_chain *c, long n, bench_request_fn req,
                                     int *next_id)
{
    char rd[1 << 16];
    struct buf b = BUF_INIT;
    long sent = 0, got = 0;
    int64_t t0 = time_mono_ns();
    double rc = -1;

    for (; sent < BENCH_INFLIGHT && sent < n; sent++)
        req(&b, ++*next_id);
    if (fs_write_all(c->p.in_fd, b.data, b.len) < 0)
        goto done;
    while (got < n) {
        long k = 0;
        char *nl;
        while ((nl = memchr(c->in.data, '\n', c->in.len)) != NULL) {
            buf_consume(&c->in, (size_t)(nl - c->in.data) + 1);
            k++;
        }
        if (k == 0) {
            ssize_t r = read(c->p.out_fd, rd, sizeof(rd));
            if (r <= 0)
                goto done;
            buf_add(&c->in, rd, (size_t)r);
            continue;
        }
        got += k;
        buf_reset(&b);
        for (; k > 0 && sent < n; k--, sent++)
            req(&b, ++*next_id);
        if (b.len && fs_write_all(c->p.in_fd, b.data, b.len) < 0)
            goto done;
    }
    rc = n / ((time_mono_ns() - t0) / 1e9);
done:
    buf_release(&b);
    return rc;
}

/* ---- reporting ---- */

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n), n <= BENCH_ROUNDS_MAX. */
static inline double bench_median(const double *v, int n)
{
    double s[BENCH_ROUNDS_MAX];
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), bench_cmp_double);
    return s[n / 2];
}

/* Prints one target's line: figure, reference, ratio and met / NOT MET against the bar (le: the
 * checked value must be at most bar; else at least). Returns 1 when NOT MET, else 0. */
static inline int bench_row(const char *name, double fig, double ref, double ratio,
                            const char *unit, int le, double bar, double goal, double checked)
{
    int met = le ? checked <= bar : checked >= bar;
    printf("  %-44s %10.1f %-7s reference %10.1f  ratio %6.2fx  %s (bar %s %g, goal %s %g)\n", name,
           fig, unit, ref, ratio, met ? "met" : "NOT MET", le ? "<=" : ">=", bar,
           le ? "<=" : ">=", goal);
    return !met;
}

static inline void bench_loadavg(const char *when)
{
    char b[128] = "";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fgets(b, sizeof(b), f) == NULL)
            b[0] = '\0';
        fclose(f);
    }
    printf("load average %s: %.*s\n", when, (int)strcspn(b, "\n"), b);
}

#endif
