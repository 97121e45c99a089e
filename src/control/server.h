/*
 * server: the controller's HTTP/1.1 server on libevent bufferevents.
 *
 * One struct hsrv accepts on one or more listening sockets (bound here, or inherited as a
 * descriptor). Each connection reads one request at a time: the head (bounded by max_head),
 * then the whole body (bounded by max_body: larger bodies are answered 413 before they are
 * read), then hands a struct hreq to the handler. The handler answers at once or later, whole
 * (hreq_reply) or streamed (hreq_start, hreq_write..., hreq_end), or drops the connection
 * (hreq_abort, so the client sees a cut stream). Keep-alive and pipelining are honoured;
 * malformed requests get a JSON error (400, 408, 413, 431, 501) built by the reject hook, and
 * the connection closes with a lingering close so the client reads the error.
 *
 * Connection states (conn_* in server.c; every change goes through conn_set_state, and
 * assert_conn_state checks struct hconn's invariants at the transitions):
 *   (accept)  --new connection-->           HEAD        (accept_cb)
 *   HEAD     --head complete, body-->      BODY        (conn_process)
 *   HEAD     --head complete, no body-->   HANDLER     (conn_dispatch)
 *   BODY     --body complete-->            HANDLER     (conn_dispatch)
 *   HANDLER  --hreq_end/hreq_reply-->      HEAD        (conn_request_done, keep-alive)
 *   HANDLER  --hreq_end, no keep-alive or client EOF and no request waiting--> CLOSING
 *                                                      (conn_request_done -> conn_linger)
 *   HANDLER  --hreq_abort-->               CLOSING     (conn_linger)
 *   HANDLER  --client EOF (half-close)-->  HANDLER     (conn_eof: reading stops, the
 *                                                      response is still written)
 *   HEAD/BODY --bad input, limit, timeout (408)--> CLOSING (conn_reject)
 *   HEAD/BODY --client EOF, request incomplete--> CLOSING (conn_eof -> conn_arm -> conn_linger)
 *   HEAD     --idle timeout-->             freed       (conn_timer_cb -> conn_kill)
 *   HEAD     --oldest in its head phase at the connection limit--> freed (conn_evict)
 *   any      --read/write error, write timeout--> freed (conn_kill; on_close if HANDLER)
 *   CLOSING  --output flushed, then client EOF or linger timeout--> freed
 *                                                      (conn_flush, conn_eof, conn_timer_cb)
 *
 * Connection limits: at max_conns, a new connection evicts one in its head phase: the head
 * arriving longest (>= 250 ms), else the new connection waiting longest for its first byte
 * (>= 250 ms), else the keep-alive connection idle longest (>= 1 s); its socket is read first,
 * so a request already there is served. When none is evictable, accepting pauses until a
 * slot frees or one becomes evictable. The head, body and
 * keep-alive waits shrink as slots fill: the configured timeouts below half of max_conns,
 * linearly down to 2 s at the limit. A client that sends its request promptly therefore gets
 * a slot however many sockets trickle bytes (slowloris).
 *
 * Half-close: a client's EOF stops reading. Requests already read whole are answered, in
 * order, then the connection closes; an incomplete one is dropped without an answer. A client
 * that closed entirely looks the same until a write to it fails: its handler learns of it
 * (on_close) at that write, not at the EOF.
 *
 * Lifetime rules: the handler borrows r from the call until it ends the response (hreq_end,
 * hreq_reply, hreq_abort) or until on_close is called, whichever comes first; after either,
 * r must not be touched. Nothing here calls on_close or on_drain from inside an hreq_* call,
 * so a handler may call hreq_* from any callback. Single-threaded: call only from the loop's
 * thread.
 */
#ifndef FAULTLINE_CONTROL_SERVER_H
#define FAULTLINE_CONTROL_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "codec/http.h"
#include "util/buf.h"
#include "util/err.h"

struct hsrv;
struct hreq;

struct hsrv_config {
    size_t max_head;        /* request head bytes; 0: HTTP_HEAD_MAX_DEFAULT */
    size_t max_body;        /* request body bytes; larger bodies get 413 */
    int request_timeout_ms; /* from a request's first byte to its last; then 408 */
    int idle_timeout_ms;    /* keep-alive wait for the next request */
    int write_timeout_ms;   /* a client that takes no bytes for this long is dropped */
    size_t max_conns;       /* open client connections; accepting pauses at the limit */
};

/* Called with a complete request. r is borrowed as the file comment says. */
typedef void (*hsrv_handler_fn)(struct hreq *r, void *arg);
/* Called when the server itself refuses a request (status 400, 408, 413, 431, 501). h is the
 * parsed head when there is one (for routing the error format), NULL otherwise. The hook may
 * replace body (default {"error":{"type","message"}}) and append header lines to headers
 * ("Name: value\r\n"); it may record the refusal. */
typedef void (*hsrv_reject_fn)(void *arg, const struct http_head *h, int status, const char *type,
                               const char *msg, struct buf *headers, struct buf *body);
typedef void (*hreq_event_fn)(struct hreq *r, void *arg);
typedef void (*hsrv_hook_fn)(void *arg);

/* A server on base. The config is copied. Caller frees with hsrv_free. */
struct hsrv *hsrv_new(struct event_base *base, const struct hsrv_config *cfg,
                      hsrv_handler_fn handler, hsrv_reject_fn reject, void *arg);
/* Binds and listens on "HOST:PORT" (IPv4 or [IPv6]; port 0 picks one). 0, ERR_INVALID (bad
 * address) or ERR_SYS (bind/listen failed). */
int hsrv_listen(struct hsrv *s, const char *addr, struct err *e);
/* "IPv4:PORT" or "[IPv6]:PORT", port 0..65535 (libevent's parser refuses port 0), into ss and
 * *sslen. Returns 0, or ERR_INVALID (the caller words it). Also the egress proxy's listener. */
int hsrv_parse_addr(const char *addr, struct sockaddr_storage *ss, int *sslen);
/* Accepts on an inherited socket (bound; listen(2) is called here if needed). Takes
 * ownership of fd on success. 0 or ERR_SYS. */
int hsrv_listen_fd(struct hsrv *s, int fd, struct err *e);
/* "HOST:PORT" of the first listening socket into out. 0 or ERR_SYS. */
int hsrv_address(struct hsrv *s, char *out, size_t n);
/* fn(arg) runs before any response byte (or a closing connection's FIN) is written to a
 * client socket, so the owner can first write records that must precede what the client
 * sees (the controller's queued events). With a hook set, hreq_end and hreq_abort leave the
 * end of a response to the loop iteration's flush, so what the handler records right after
 * them still precedes it, and one hook call serves every response of the iteration. fn must
 * not call back into s. */
void hsrv_set_before_write(struct hsrv *s, hsrv_hook_fn fn, void *arg);
/* Stops accepting new connections; open ones continue. */
void hsrv_stop_accepting(struct hsrv *s);
/* Number of open client connections. */
size_t hsrv_nconns(const struct hsrv *s);
/* Closes every connection (in-flight requests get on_close first) and the listeners, and
 * frees s. NULL is a no-op. Not callable from one of s's own callbacks. */
void hsrv_free(struct hsrv *s);

/* Request accessors; pointers are borrowed from r. */
const char *hreq_method(const struct hreq *r);
const char *hreq_target(const struct hreq *r); /* path and query as sent */
const struct http_head *hreq_head(const struct hreq *r);
const char *hreq_header(const struct hreq *r, const char *name);
/* The body, contiguous (not NUL-terminated); *len its length. Valid while r is. */
const char *hreq_body(struct hreq *r, size_t *len);

/* on_close: the client went away (EOF, error, write timeout) or the server is shutting down
 * before the response ended; r is dead when it returns. on_drain: the output buffer emptied
 * after hreq_want_drain. Either may be NULL. */
void hreq_set_callbacks(struct hreq *r, hreq_event_fn on_close, hreq_event_fn on_drain, void *arg);
/* Starts the response: status line, the caller's header lines (hdrs, "Name: value\r\n"...,
 * without framing or Connection fields), then Content-Length when content_length >= 0,
 * otherwise chunked encoding (HTTP/1.1) or a close-delimited body (HTTP/1.0). */
void hreq_start(struct hreq *r, int status, const char *hdrs, size_t hlen, int64_t content_length);
/* Appends body bytes (copied) / moves all of src into the response. */
void hreq_write(struct hreq *r, const void *p, size_t n);
void hreq_write_buffer(struct hreq *r, struct evbuffer *src);
/* Ends the response and writes out what the socket takes at once (with a before_write hook:
 * at the loop iteration's flush, after the hook); r is then no longer the caller's. */
void hreq_end(struct hreq *r);
/* hreq_start + hreq_write + hreq_end with a Content-Length; hdrs is NUL-terminated (or
 * NULL). */
void hreq_reply(struct hreq *r, int status, const char *hdrs, const void *body, size_t n);
/* Cuts the response: what was written is flushed, then the connection closes without the
 * end of the body (no final chunk), so the client sees the stream cut short. r is then no
 * longer the caller's. */
void hreq_abort(struct hreq *r);
/* Bytes written to the response but not yet taken by the socket. */
size_t hreq_pending(const struct hreq *r);
/* Asks for one on_drain call once the pending output has been written. */
void hreq_want_drain(struct hreq *r);
/* 1 once hreq_start was called. */
int hreq_started(const struct hreq *r);

#endif
