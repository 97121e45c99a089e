/*
 * cmdrun: run one shell command (sh -c) to completion with input on stdin, its output
 * captured up to a limit, and a timeout. Used by the agent's shell tool and by hooks.
 *
 * The command runs in its own process group (src/util/proc.h) and gets SIGKILL if the agent
 * dies. Output past max_output is read and dropped (the child never blocks on a full pipe) and
 * counted. When the command has exited but something it started in the background still holds
 * the pipes open, the output is collected for 200 ms more and then left: the agent does not
 * wait for background jobs. On timeout the whole group gets SIGTERM, then SIGKILL.
 */
#ifndef FAULTLINE_AGENT_CMDRUN_H
#define FAULTLINE_AGENT_CMDRUN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/buf.h"
#include "util/err.h"

struct cmdrun_opts {
    const char *command;        /* run as: sh -c COMMAND */
    const char *cwd;            /* NULL: the agent's */
    const char *const *env_add; /* NULL or NULL-terminated "NAME=VALUE" */
    const char *input;          /* written to stdin, which is then closed; NULL: /dev/null */
    size_t input_len;
    int timeout_ms;              /* > 0 */
    size_t max_output;           /* bytes kept per stream (0: 64 KiB) */
    int merge_stderr;            /* stderr goes into out (2>&1: one pipe, in the order written) */
    volatile sig_atomic_t *stop; /* when set (a signal handler), the command is ended */
};

struct cmdrun_result {
    struct buf out, err;
    uint64_t out_total, err_total; /* bytes seen, kept or not */
    int exit_code; /* the shell's view: code, or 128 + signal; PROC_NO_EXIT_CODE if unknown */
    int timed_out;
    int interrupted;
    char status[96]; /* "exited with status 3", "killed by signal 9 (Killed)" */
};

void cmdrun_result_init(struct cmdrun_result *r);
void cmdrun_result_release(struct cmdrun_result *r);

/* Runs o->command; r (initialised) is filled. Returns 0 when the command ran, whatever its
 * exit (see r), or ERR_SYS / ERR_NOTFOUND / ERR_IO with e set when it could not be started.
 * Not callable from a signal handler. */
int cmdrun(const struct cmdrun_opts *o, struct cmdrun_result *r, struct err *e);

/* write(2) to a pipe that never raises SIGPIPE: when the reader is gone it returns -1 with
 * errno EPIPE (the signal is blocked for the call and a pending one consumed, as git does). */
ssize_t cmdrun_pipe_write(int fd, const void *p, size_t n);

#endif
