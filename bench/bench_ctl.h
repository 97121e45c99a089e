/*
 * bench_ctl.h: the benchmarks' one way to start a controller (`faultline proxy`) and learn its
 * address: bench_mcp's controller-mode chain and bench_gate's gate-with-controller runs.
 */
#ifndef FAULTLINE_BENCH_CTL_H
#define FAULTLINE_BENCH_CTL_H

#include <stdio.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/err.h"
#include "util/fs.h"
#include "util/proc.h"

/* Starts `faultline proxy --plan PLAN --events EVENTS --ready-file READY` in ctl and waits up to
 * 10 s for its ready file: 0 with its "HOST:PORT" in addr, or 1 after a message naming who. */
static inline int bench_start_controller(const char *faultline, const char *plan,
                                         const char *events, const char *ready, struct proc *ctl,
                                         char *addr, size_t size, const char *who)
{
    const char *argv[] = {faultline, "proxy",        "--plan", plan, "--events",
                          events,    "--ready-file", ready,    NULL};
    struct proc_opts o = {.argv = argv, .in = PROC_NULL, .out = PROC_NULL, .err = PROC_NULL};
    struct buf a = BUF_INIT;
    struct err e = {0};

    if (proc_spawn(ctl, &o, &e) < 0) {
        fprintf(stderr, "%s: cannot start the controller: %s\n", who, e.msg);
        return 1;
    }
    for (int i = 0; i < 200 && a.len == 0; i++) {
        usleep(50000);
        buf_reset(&a);
        err_clear(&e);
        if (fs_read_file(ready, 4096, &a, &e) < 0)
            buf_reset(&a);
    }
    while (a.len > 0 && (a.data[a.len - 1] == '\n' || a.data[a.len - 1] == ' '))
        buf_truncate(&a, a.len - 1);
    if (a.len == 0) {
        fprintf(stderr, "%s: the controller did not start\n", who);
        buf_release(&a);
        return 1;
    }
    snprintf(addr, size, "%s", a.data);
    buf_release(&a);
    return 0;
}

#endif
