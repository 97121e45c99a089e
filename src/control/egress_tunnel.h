/*
 * egress_tunnel: a blind byte relay between two connected stream sockets, moved by splice(2)
 * through one pipe per direction (socket -> pipe -> socket, SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
 * so that the bytes never enter user space (docs/egress.md, docs/performance.md).
 *
 * The egress proxy hands a CONNECT tunnel (or a transparent TLS one) here once it is blind:
 * the 200 and any bytes that came with the head are flushed, its bufferevents disabled. Each
 * direction runs on its own:
 *
 *   FLOWING  --pipe empty, source would block-->    wait for the source to be readable
 *   FLOWING  --destination would block-->           wait for it to be writable; the source
 *                                                   is not read (at most the pipe's bytes,
 *                                                   EGRESS_TUNNEL_PIPE, buffered)
 *   FLOWING  --source EOF, pipe drained-->          DONE: shutdown(destination, SHUT_WR)
 *   any      --an error on either socket-->         the tunnel ends (done, error set)
 *
 * When both directions are DONE, or no byte moved either way for idle_ms, or an error, the
 * tunnel stops its events and calls done once. It never closes the sockets: the caller does,
 * after egress_tunnel_free.
 */
#ifndef FAULTLINE_CONTROL_EGRESS_TUNNEL_H
#define FAULTLINE_CONTROL_EGRESS_TUNNEL_H

#include <stdint.h>

#include "util/err.h"

#define EGRESS_TUNNEL_PIPE (1024 * 1024) /* bytes a pipe is asked to hold (F_SETPIPE_SZ) */
#define EGRESS_TUNNEL_SIDE_NONE (-1)     /* egress_tunnel_end.err_side: no socket failed */

struct event_base;
struct egress_tunnel;

/* How a tunnel ended. */
struct egress_tunnel_end {
    uint64_t bytes[2]; /* [0]: moved from a to b; [1]: from b to a */
    int idle;          /* no byte moved for idle_ms */
    int err_side;      /* EGRESS_TUNNEL_SIDE_NONE, or the socket (0: a, 1: b) that failed */
    int err_errno;
};

/* Called once when the tunnel ends; the tunnel's events are stopped. It may drop the tunnel
 * but not free it (egress_tunnel_free from outside the callback, e.g. a deferred event). */
typedef void (*egress_tunnel_done_fn)(struct egress_tunnel *t, const struct egress_tunnel_end *end,
                                      void *arg);

/* Starts relaying between the connected sockets a and b (borrowed: the caller closes them
 * after egress_tunnel_free; they are made non-blocking) on base. idle_ms > 0: the tunnel ends
 * after that long without a byte moved. A new tunnel, or NULL with e set (ERR_SYS: no pipe,
 * no event; nothing was read or written, the caller may relay another way). Callable from a
 * callback; done is never called before this returns. */
struct egress_tunnel *egress_tunnel_new(struct event_base *base, int a, int b, int idle_ms,
                                        egress_tunnel_done_fn done, void *arg, struct err *e);

/* The bytes moved so far ([0] a to b, [1] b to a). */
void egress_tunnel_bytes(const struct egress_tunnel *t, uint64_t out[2]);

/* Stops the tunnel's events without calling done (the caller ends it: a controller stopping).
 * Idempotent; callable from a callback, the tunnel's own included. */
void egress_tunnel_stop(struct egress_tunnel *t);

/* Frees the tunnel and its pipes (not the sockets). NULL is a no-op. Not from its own done
 * callback. */
void egress_tunnel_free(struct egress_tunnel *t);

#endif
