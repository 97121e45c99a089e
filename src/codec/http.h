/*
 * http: HTTP/1.1 message heads and chunked bodies (RFC 9112), parsed from libevent buffers.
 *
 * The controller speaks HTTP/1.1 on both sides (agent -> controller -> model API) with its own
 * small parser instead of evhttp, because it must answer oversized bodies with a JSON 413,
 * forward a streamed body event by event with backpressure, and cut a stream mid-body on
 * purpose; evhttp in libevent 2.1 allows none of these.
 *
 * A head (request line or status line, then header fields, then an empty line) is located in
 * an evbuffer with http_head_find, copied once into struct http_head's own storage and parsed
 * in place: every name and value is a NUL-terminated slice of that copy. Parsing is strict
 * where leniency lets requests be smuggled: CRLF line ends, no whitespace before a colon, no
 * obsolete line folding, one Content-Length value, Transfer-Encoding only "chunked".
 *
 * Body framing (http_head.framing): HTTP_BODY_NONE, HTTP_BODY_LENGTH (content_length bytes),
 * HTTP_BODY_CHUNKED (struct http_chunked decodes it) or HTTP_BODY_CLOSE (until EOF, responses
 * only).
 *
 * Chunked decoder states (http_chunked_decode):
 *   SIZE    --hex size line, size > 0-->  DATA
 *   SIZE    --size 0-->                   TRAILER
 *   DATA    --size bytes moved-->         DATA_END
 *   DATA_END --CRLF-->                    SIZE
 *   TRAILER --non-empty line-->           TRAILER   (trailer fields are dropped)
 *   TRAILER --empty line-->               DONE
 */
#ifndef FAULTLINE_CODEC_HTTP_H
#define FAULTLINE_CODEC_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "util/buf.h"
#include "util/err.h"

#define HTTP_HEAD_MAX_DEFAULT (64 * 1024) /* bytes of a head, request or response */
#define HTTP_FIELDS_MAX 256               /* header fields in one head */
#define HTTP_CHUNK_LINE_MAX 4096          /* a chunk-size line with its extensions */

enum http_framing { HTTP_BODY_NONE, HTTP_BODY_LENGTH, HTTP_BODY_CHUNKED, HTTP_BODY_CLOSE };

struct http_field {
    const char *name;  /* as sent (case kept); compare with strcasecmp */
    const char *value; /* leading and trailing whitespace removed */
};

struct http_head {
    struct buf raw; /* the head's bytes, split in place into the slices below */
    /* request */
    const char *method;
    const char *target; /* origin form: path and query, e.g. "/v1/messages?beta=true" */
    /* response */
    int status;
    const char *reason;
    /* both */
    int minor; /* HTTP/1.minor */
    struct http_field *fields;
    size_t nfields, afields;
    enum http_framing framing;
    uint64_t content_length; /* with HTTP_BODY_LENGTH */
    int keep_alive;          /* the connection may carry another message after this one */
    int expect_continue;     /* request: "Expect: 100-continue" */
};

/* Initialises caller-owned storage. */
void http_head_init(struct http_head *h);
/* Frees the storage; h is then empty and reusable. */
void http_head_release(struct http_head *h);

/*
 * Looks for the end of a head at the start of in. Returns the head's length including the
 * final empty line (> 0), 0 when more bytes are needed, or ERR_LIMIT when max bytes arrived
 * without one. *scanned remembers how far the search got (start it at 0 for a new head) so a
 * head that trickles in is not searched from the beginning every time.
 */
long http_head_find(struct evbuffer *in, size_t max, size_t *scanned);

/*
 * Removes the first len bytes of in (a head found by http_head_find) and parses them as a
 * request (http_head_parse_request) or a response to a request with method req_method
 * (http_head_parse_response: HEAD, 1xx, 204 and 304 have no body). 0, or ERR_PARSE with a
 * message fit for a 400 reply, or ERR_UNSUPPORTED (a transfer coding other than chunked).
 * h is reset first; its slices stay valid until the next parse or release.
 */
int http_head_parse_request(struct http_head *h, struct evbuffer *in, size_t len, struct err *e);
int http_head_parse_response(struct http_head *h, struct evbuffer *in, size_t len,
                             const char *req_method, struct err *e);

/* The value of the first field named name (case-insensitive), or NULL. Borrowed from h. */
const char *http_head_get(const struct http_head *h, const char *name);
/* 1 when the comma-separated value list contains token (case-insensitive). */
int http_list_has(const char *list, const char *token);
/* 1 when name is a hop-by-hop field a proxy must not forward (RFC 9110 7.6.1), or one the
 * proxy recomputes (Content-Length, Transfer-Encoding, Host). */
int http_is_hop_field(const char *name);
/* The standard reason phrase of a status code ("OK", "Too Many Requests"...), never NULL. */
const char *http_reason(int status);

enum http_chunked_state {
    HTTP_CHUNK_SIZE,
    HTTP_CHUNK_DATA,
    HTTP_CHUNK_DATA_END,
    HTTP_CHUNK_TRAILER,
    HTTP_CHUNK_DONE
};

struct http_chunked {
    enum http_chunked_state state;
    uint64_t remaining;   /* data bytes left in the current chunk */
    size_t trailer_bytes; /* bytes of trailer fields seen, bounded by HTTP_HEAD_MAX_DEFAULT */
    uint64_t max_body;    /* set after init: more data in all is ERR_LIMIT; 0: no limit */
    uint64_t announced;   /* data bytes the size lines so far announced */
};

/* Starts a body with no limit on its data (set c->max_body after this for one). */
void http_chunked_init(struct http_chunked *c);
/*
 * Decodes as much of in as is available, moving body bytes to out (at most max_out bytes per
 * call when max_out > 0, so a caller can bound what it holds). Returns 1 when the last chunk
 * and the trailer are complete, 0 when more input is needed (or max_out was reached), or
 * ERR_PARSE (malformed chunk line or data terminator) / ERR_LIMIT (size line or trailer too
 * long, or a size line announcing data past c->max_body: refused before any of it is moved,
 * so the data of the chunks before it is all that reaches out). Errors happen in stream
 * order: how the bytes were split never changes which one is reported.
 */
int http_chunked_decode(struct http_chunked *c, struct evbuffer *in, struct evbuffer *out,
                        size_t max_out, struct err *e);

#endif
