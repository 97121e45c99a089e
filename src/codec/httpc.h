/*
 * httpc: the one blocking HTTP/1.1 client, for a caller that sends a request and waits for
 * its answer: the reference agent's model calls (one-shot) and the control API client
 * (src/seam/client.c, keep-alive).
 *
 * Nothing else runs while a request is in flight, so a blocking client with poll(2) timeouts
 * is the simplest thing that is exact about failures (a refused connection is reported as
 * "connection refused", not as a generic EOF). http:// or https:// (OpenSSL, peer and host
 * name verified against the default trust store, which honours SSL_CERT_FILE).
 *
 * Three layers:
 *   - httpc_parser: an incremental response parser over the project's one HTTP/1.1 codec
 *     (src/codec/http.h: the strict, fuzzed head parser and chunked decoder the controller
 *     uses too): bytes go in in any split; decoded body bytes come out through a callback as
 *     they arrive, so a server-sent-events stream can be acted on live. Interim 1xx answers
 *     are skipped; the body is framed by Transfer-Encoding: chunked, Content-Length or the
 *     connection's close, as the codec decides.
 *   - httpc_call_run: one request on its own connection ("Connection: close"): resolve,
 *     connect (timeout), TLS handshake, send, read until the message ends, with an idle
 *     timeout per read and a total deadline, and a body size limit.
 *   - httpc_conn: the same exchange over one kept connection to one URL ("Connection:
 *     keep-alive"), opened on first use and re-opened when it cannot be reused.
 *
 * URLs are src/util/url.h's, TLS contexts the codec's (src/codec/tls.h): one per
 * httpc_call_run, one per httpc_conn for its life; no process-wide state.
 *
 * Kept connection states (httpc_conn_run, one request):
 *   CLOSED --open: connect and TLS within connect_timeout_ms--> OPEN
 *   OPEN   --idle check before sending finds it readable (peer closed, stray bytes), or it
 *            has been idle over HTTPC_REUSE_IDLE_MS--> CLOSED, then opened as above
 *   OPEN   --exchange within total_timeout_ms, httpc_parser_keep_alive--> OPEN
 *   OPEN   --exchange, the response does not allow reuse--> CLOSED
 *   any    --error--> CLOSED
 * The idle check happens before a byte is sent, so a request is never sent twice: a request
 * that fails after sending started is reported, never retried (the server may have acted on
 * it; httpc_conn_sent says whether sending started).
 *
 * Parser states (httpc_parser_feed):
 *   HEAD   --empty lines before the status line--> HEAD (dropped)
 *   HEAD   --head (http_head_find, http_head_parse_response), status 1xx--> HEAD (dropped;
 *            101 is an error: nothing here switches protocols)
 *   HEAD   --head, no body (HEAD request, 204, 304, Content-Length: 0)--> DONE
 *   HEAD   --head, chunked--> CHUNKED --last chunk and trailer (http_chunked_decode)--> DONE
 *   HEAD   --head, Content-Length--> LENGTH --length read--> DONE
 *   HEAD   --head, otherwise--> UNTIL_EOF --httpc_parser_eof--> DONE
 *   any    --error--> ERROR (sticky)
 *
 * Limits: a head (status line and fields) of HTTPC_HEAD_MAX bytes with at most
 * HTTP_FIELDS_MAX fields; a chunk-size line of HTTP_CHUNK_LINE_MAX bytes, at most 15 hex
 * digits; trailers of HTTPC_HEAD_MAX bytes in all; the decoded body of max_body bytes
 * (refused as soon as a Content-Length or a chunk size announces more). Strict where the
 * codec is: CRLF line ends, no obsolete folding, one Content-Length value.
 */
#ifndef FAULTLINE_UTIL_HTTPC_H
#define FAULTLINE_UTIL_HTTPC_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/http.h"
#include "util/url.h"
#include "util/buf.h"
#include "util/err.h"

#define HTTPC_HEAD_MAX ((size_t)HTTP_HEAD_MAX_DEFAULT) /* status line plus fields */
#define HTTPC_HOST_MAX URL_HOST_MAX
#define HTTPC_REUSE_IDLE_MS 30000 /* a kept connection idle longer is not reused */

enum httpc_parser_state {
    HTTPC_P_HEAD = 0,
    HTTPC_P_CHUNKED,
    HTTPC_P_LENGTH,
    HTTPC_P_UNTIL_EOF,
    HTTPC_P_DONE,
    HTTPC_P_ERROR
};

struct httpc_parser;

/* Receives decoded body bytes as they arrive (p is the parser: status and headers are known).
 * Returns 0, or a negative code that stops the parse (the parser goes to ERROR and
 * httpc_parser_feed returns that code; the callback sets its own struct err). */
typedef int (*httpc_body_fn)(const struct httpc_parser *p, const char *data, size_t n, void *arg);

struct httpc_parser {
    enum httpc_parser_state state;
    int head_only;               /* the request was HEAD: no body whatever the fields say */
    int status;                  /* of the final (non-1xx) answer, 0 until its head is read */
    struct http_head head;       /* the final answer's head (codec), once read */
    struct evbuffer *in;         /* bytes fed and not consumed yet */
    struct evbuffer *body;       /* decoded chunk data on its way to on_body */
    size_t scanned;              /* http_head_find's progress in the head being read */
    struct http_chunked chunked; /* with HTTPC_P_CHUNKED */
    uint64_t remaining;          /* bytes left of the Content-Length body */
    uint64_t body_bytes;         /* decoded body bytes delivered */
    uint64_t max_body;           /* more decoded body than this is ERR_LIMIT; 0: no limit */
    int to_eof;                  /* the body was framed by the connection's close */
    uint64_t extra;              /* bytes fed after the end of the message (ignored) */
    httpc_body_fn on_body;
    void *arg;
};

/* Initialises caller-owned storage. on_body may be NULL (body bytes are counted, dropped). */
void httpc_parser_init(struct httpc_parser *p, uint64_t max_body, httpc_body_fn on_body, void *arg);
void httpc_parser_release(struct httpc_parser *p);
/* Feeds n bytes. Bytes after the end of the message are ignored (and counted in p->extra). 0,
 * or with e set ("bad HTTP response: why"): ERR_PROTO (malformed status line, field, chunk
 * framing, conflicting lengths: whatever the codec refuses as ERR_PARSE or ERR_UNSUPPORTED),
 * ERR_LIMIT (one of the limits above), or the callback's code. Errors are sticky. */
int httpc_parser_feed(struct httpc_parser *p, const char *data, size_t n, struct err *e);
/* The peer closed the connection. 0 when that ends the message (or it had ended), ERR_PROTO
 * ("connection closed after N bytes of the response") otherwise. */
int httpc_parser_eof(struct httpc_parser *p, struct err *e);
/* 1 when a whole message was read. */
int httpc_parser_done(const struct httpc_parser *p);
/* 1 when the connection it came on may carry another request: a whole message was read, its
 * body was not framed by the close, nothing followed it, and its head allows reuse (HTTP/1.1
 * without "Connection: close", or HTTP/1.0 with "Connection: keep-alive"). */
int httpc_parser_keep_alive(const struct httpc_parser *p);
/* The value of the first header called name (case-insensitive), trimmed, copied into out
 * (cut to n - 1 bytes). 1 when present, 0 when not (out is then ""). */
int httpc_parser_header(const struct httpc_parser *p, const char *name, char *out, size_t n);

/* One request. */
struct httpc_call {
    const struct url *url;      /* ignored by httpc_conn_run (the connection's URL) */
    const char *method;         /* "POST" */
    const char *target;         /* request target, starts with '/' */
    const char *const *headers; /* NULL-terminated "Name: value" lines, or NULL */
    const char *body;           /* may be NULL when body_len is 0 */
    size_t body_len;
    int connect_timeout_ms; /* > 0 */
    int idle_timeout_ms;    /* > 0: longest wait for the next bytes */
    int total_timeout_ms;   /* > 0: the whole exchange */
    uint64_t max_body;      /* response body limit; 0: none */
    httpc_body_fn on_body;  /* as for the parser; may be NULL */
    void *arg;
    volatile sig_atomic_t *stop; /* when non-NULL and set (a signal handler), give up */
    const char *peer; /* names the server in messages ("the controller at h:p"); NULL: h:p */
    /* https: the TLS context to use (borrowed, from tls_client_ctx_new, kept by a caller that
     * makes many calls); NULL: httpc_call_run makes one for the call, which costs loading the
     * trust store (~25 ms). Ignored by httpc_conn_run (a kept connection has its own). */
    struct ssl_ctx_st *tls;
};

/* Runs c. p is caller-owned and initialised here (release it with httpc_parser_release, also
 * after an error: it holds what was read). Returns 0 once a whole response was read (any
 * status), or with e set: ERR_INVALID (cannot resolve the host), ERR_IO (connect refused or
 * failed, reset, TLS failure; the message names c->peer or host:port, and the reason), ERR_TIMEOUT
 * (connect, idle or total timeout), ERR_PROTO / ERR_LIMIT (from the parser), ERR_SYS
 * (interrupted through c->stop, or socket() failed). Never retries. */
int httpc_call_run(const struct httpc_call *c, struct httpc_parser *p, struct err *e);

/* A kept connection to one URL; holds at most one open socket. Not thread-safe. */
struct httpc_conn;

/* A connection object for u (copied); nothing is opened until the first request. Caller
 * frees with httpc_conn_free. Never NULL (allocation failure aborts). */
struct httpc_conn *httpc_conn_new(const struct url *u);
/* Closes the socket (if open) and frees; NULL is a no-op. */
void httpc_conn_free(struct httpc_conn *k);
/* Closes the socket if open; the next request opens a new one. */
void httpc_conn_close(struct httpc_conn *k);
/* Runs c over k (c->url is ignored): reuses the open socket when its idle check passes,
 * otherwise opens a new one within c->connect_timeout_ms (connect and TLS handshake), then
 * sends and reads the response within c->total_timeout_ms (and c->idle_timeout_ms per wait).
 * p as for httpc_call_run. Returns 0 once a whole response was read (any status); the socket
 * stays open when httpc_parser_keep_alive(p). Errors as for httpc_call_run; after an error
 * the socket is closed. Never retries: see httpc_conn_sent. */
int httpc_conn_run(struct httpc_conn *k, const struct httpc_call *c, struct httpc_parser *p,
                   struct err *e);
/* 1 when the last httpc_conn_run started sending its request (the server may have acted on
 * it), 0 when it failed before that (resolve, connect, TLS handshake: nothing was sent). */
int httpc_conn_sent(const struct httpc_conn *k);
/* How many sockets k has opened over its life (1 after any number of requests on one kept
 * connection). */
unsigned long httpc_conn_opens(const struct httpc_conn *k);
/* A kept connection idle longer than ms (> 0; default HTTPC_REUSE_IDLE_MS) is reopened rather
 * than reused. */
void httpc_conn_set_reuse_idle_ms(struct httpc_conn *k, int ms);

#endif
