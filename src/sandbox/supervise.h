/*
 * supervise: the first process of a sandboxed command, inside the sandbox, that tells the
 * runner how the command really ended.
 *
 * Seen from outside, a sandboxed command ends as its sandbox's exit code, and a shell or
 * bubblewrap turns death by signal N into exit 128 + N: an agent killed with kill -9 and one
 * that exits 137 look alike. `faultline sandbox supervise --status-fd N -- ARGV...` (bound
 * into every native sandbox as /opt/faultline/bin/faultline) runs ARGV as its child, waits for
 * it, writes one line to descriptor N ("exit CODE" or "signal SIG") and exits with the same
 * code the shell would (CODE, or 128 + SIG). The descriptor is closed to ARGV (close-on-exec),
 * so what runs inside cannot write a status of its own. The supervisor ignores SIGTERM, SIGINT
 * and SIGHUP (the sandbox's end sends SIGTERM to every process in it, and the command's
 * answer to it is what the line reports); the command gets them with their default actions.
 */
#ifndef FAULTLINE_SANDBOX_SUPERVISE_H
#define FAULTLINE_SANDBOX_SUPERVISE_H

/* Runs argv (NULL-terminated, argv[0] looked up in PATH) as described above; returns the exit
 * code for the supervisor (127 when argv could not be run). */
int sandbox_supervise(int status_fd, char *const argv[]);

/* The status line a supervisor wrote on fd (the read end; the supervisor has exited): 0 with
 * *code (-1 when it was killed) and *sig (0 when it exited) set, or ERR_PROTO when it wrote
 * none (it was killed itself, or never ran). */
int sandbox_read_status(int fd, int *code, int *sig);

#endif
