/*
 * bench_events: event lines written and read per second on one core, against baselines
 * measured in the same run on the same file:
 *   write: events_append (stamp, redaction check, compact dump, one write(2)) vs a loop of
 *          plain write(2) calls of the same bytes (the syscall floor);
 *   read:  events_next_line (framing only), events_next (framing + jansson parse) and
 *          events_next_view (framing + validation + field index, as a monitor reads) vs a raw
 *          read(2) + memchr line count, `wc -l` style.
 * The file (LINES typical events, about 200 bytes each) lives in $TMPDIR and is removed at the
 * end. Figures go into docs/performance.md ("plan and events").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events/events.h"
#include "events/view.h"
#include "util/buf.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define LINES 1000000
#define RUNS 3

static volatile uint64_t sink;

static double secs_since(int64_t t0)
{
    return (time_mono_ns() - t0) / 1e9;
}

static json_t *sample_event(int i)
{
    switch (i % 4) {
    case 0:
        return json_pack("{s:s,s:s,s:s,s:s,s:{s:s,s:i}}", "kind", "tool_call", "tool", "read_file",
                         "server", "fs", "id", "17", "args", "path", "src/lib/chunk.js", "limit",
                         200);
    case 1:
        return json_pack("{s:s,s:s,s:b,s:i,s:b}", "kind", "tool_result", "tool", "read_file", "ok",
                         1, "duration_ms", 3, "faulted", 0);
    case 2:
        return json_pack("{s:s,s:s,s:s,s:i,s:{s:i,s:i,s:i,s:i},s:f,s:s}", "kind",
                         "model_response", "id", "req-42", "model", "claude-sonnet-4", "status",
                         200, "usage", "input_tokens", 1234, "output_tokens", 321,
                         "cache_creation_input_tokens", 0, "cache_read_input_tokens", 1100,
                         "cost_usd", 0.0123, "stop_reason", "tool_use");
    default:
        return json_pack("{s:s,s:s,s:s,s:n,s:s,s:s,s:s}", "kind", "gate_decision", "decision",
                         "allow", "tier", "default", "rule", "mode", "enforce", "tool", "Bash",
                         "harness", "claude-code");
    }
}

static double write_events(const char *path)
{
    struct err e = {0};
    struct events_writer *w;
    json_t *ev[4];
    int64_t t0;
    double s;

    unlink(path);
    w = events_open(path, "bench-0-00c0ffee", "controller", &e);
    if (w == NULL) {
        fprintf(stderr, "bench_events: %s\n", e.msg);
        exit(1);
    }
    for (int k = 0; k < 4; k++)
        ev[k] = sample_event(k);
    t0 = time_mono_ns();
    for (int i = 0; i < LINES; i++)
        if (events_append(w, ev[i & 3]) != 0)
            exit(1);
    s = secs_since(t0);
    events_close(w);
    for (int k = 0; k < 4; k++)
        json_decref(ev[k]);
    return LINES / s;
}

/* The syscall floor: the same lines, already formatted, one write(2) each. */
static double write_raw(const char *path, const char *src)
{
    int in = open(src, O_RDONLY), out;
    struct buf b = BUF_INIT;
    char chunk[65536];
    ssize_t n;
    int64_t t0;
    size_t lines = 0;
    double s;

    while ((n = read(in, chunk, sizeof(chunk))) > 0 && b.len < 4000 * 256)
        buf_add(&b, chunk, (size_t)n);
    close(in);
    unlink(path);
    out = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
    t0 = time_mono_ns();
    for (int rep = 0; lines < LINES; rep++) {
        const char *p = b.data, *end = b.data + b.len, *nl;
        while (lines < LINES && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            if (write(out, p, (size_t)(nl - p + 1)) < 0)
                exit(1);
            p = nl + 1;
            lines++;
        }
    }
    s = secs_since(t0);
    close(out);
    unlink(path);
    buf_release(&b);
    return LINES / s;
}

static double read_raw(const char *path)
{
    static char chunk[256 * 1024];
    int fd = open(path, O_RDONLY);
    uint64_t lines = 0;
    ssize_t n;
    int64_t t0 = time_mono_ns();

    while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
        const char *p = chunk, *end = chunk + n;
        while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            lines++;
            p++;
        }
    }
    close(fd);
    sink += lines;
    return lines / secs_since(t0);
}

static double read_lines(const char *path)
{
    struct err e = {0};
    struct events_reader *r = events_reader_open(path, &e);
    const char *line;
    size_t len, lines = 0;
    int64_t t0 = time_mono_ns();

    while (events_next_line(r, &line, &len) == 1)
        lines++;
    events_reader_free(r);
    sink += lines;
    return lines / secs_since(t0);
}

static double read_events(const char *path)
{
    struct err e = {0};
    struct events_reader *r = events_reader_open(path, &e);
    json_t *ev;
    size_t n = 0;
    int64_t t0 = time_mono_ns();
    double s;

    while (events_next(r, &ev) == 1) {
        n++;
        json_decref(ev);
    }
    s = secs_since(t0);
    if (n != LINES || events_reader_malformed(r) != 0) {
        fprintf(stderr, "bench_events: read %zu events, %zu malformed\n", n,
                events_reader_malformed(r));
        exit(1);
    }
    events_reader_free(r);
    return n / s;
}

/* A monitor's loop: every event as a view, its kind compared, cost summed from the model
 * responses. */
static double read_views(const char *path)
{
    struct err e = {0};
    struct events_reader *r = events_reader_open(path, &e);
    static struct events_view v;
    size_t n = 0, responses = 0;
    double cost = 0, c;
    int64_t t0 = time_mono_ns();
    double s;

    while (events_next_view(r, &v) == 1) {
        n++;
        if (v.kind_len == 14 && memcmp(v.kind, "model_response", 14) == 0 &&
            events_view_number(&v, "cost_usd", &c) == 0) {
            cost += c;
            responses++;
        }
    }
    s = secs_since(t0);
    if (n != LINES || responses != LINES / 4 || events_reader_malformed(r) != 0) {
        fprintf(stderr, "bench_events: viewed %zu events, %zu responses\n", n, responses);
        exit(1);
    }
    sink += (uint64_t)cost;
    events_reader_free(r);
    return n / s;
}

static double best(double (*fn)(const char *), const char *path)
{
    double b = 0;
    for (int r = 0; r < RUNS; r++) {
        double v = fn(path);
        if (v > b)
            b = v;
    }
    return b;
}

int main(void)
{
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[512], raw[512];
    double w, wraw, rraw, rl, re, rv;
    off_t size;
    int fd;

    snprintf(path, sizeof(path), "%s/faultline-bench-events-%d.jsonl", tmp, (int)getpid());
    snprintf(raw, sizeof(raw), "%s/faultline-bench-raw-%d.jsonl", tmp, (int)getpid());
    printf("events, %d lines, best of %d (one core)\n", LINES, RUNS);
    w = write_events(path);
    fd = open(path, O_RDONLY);
    size = lseek(fd, 0, SEEK_END);
    close(fd);
    printf("  file: %.1f MB, %.0f bytes a line\n", size / 1e6, (double)size / LINES);
    wraw = write_raw(raw, path);
    printf("  %-40s %8.2f M lines/s   (baseline)\n", "write(2) of preformatted lines", wraw / 1e6);
    printf("  %-40s %8.2f M lines/s   %5.2fx the baseline\n", "events_append", w / 1e6, w / wraw);
    rraw = best(read_raw, path);
    rl = best(read_lines, path);
    re = best(read_events, path);
    rv = best(read_views, path);
    printf("  %-40s %8.2f M lines/s   (baseline)\n", "read(2) + memchr line count", rraw / 1e6);
    printf("  %-40s %8.2f M lines/s   %5.2fx the baseline\n", "events_next_line (framing)",
           rl / 1e6, rl / rraw);
    printf("  %-40s %8.2f M lines/s   %5.2fx the baseline\n", "events_next (framing + jansson)",
           re / 1e6, re / rraw);
    printf("  %-40s %8.2f M lines/s   %5.2fx the baseline\n", "events_next_view (+ kind, cost_usd)",
           rv / 1e6, rv / rraw);
    printf("target: >= 1 M event lines read/s: events_next_view %s, events_next (jansson) %s\n",
           rv >= 1e6 ? "met" : "NOT MET", re >= 1e6 ? "met" : "NOT MET");
    unlink(path);
    return 0;
}
