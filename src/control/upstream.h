/*
 * upstream: the controller's HTTP/1.1 client towards one origin (the model API or the mock
 * model), with a keep-alive connection pool, TLS for https origins, timeouts, and a body that
 * is handed over as it arrives so a stream can be forwarded event by event.
 *
 * A request (struct ureq) is serialised once, sent on an idle pooled connection or a new one,
 * and its response reported through callbacks: on_head once, on_body for each piece of the
 * decoded body (chunked encoding removed), then on_done, or on_error at any point. A request
 * that fails on a reused keep-alive connection before any byte of response arrived (the
 * origin closed it meanwhile) is sent again once on a fresh connection, invisibly. A pooled
 * connection whose socket has anything to read (the origin's end, read or not yet) is closed
 * instead of taking a request.
 *
 * Connection states (uconn_* in upstream.c):
 *   CONNECTING --connected (TLS handshake done)--> HEAD   (request written)
 *   HEAD       --1xx head-->                        HEAD
 *   HEAD       --final head, body-->                BODY   (on_head)
 *   HEAD       --final head, no body-->             done   (on_head, on_done)
 *   BODY       --body complete-->                   done   (on_done)
 *   done       --keep-alive, nothing extra read-->  IDLE   (pooled)   else closed
 *   IDLE       --taken by a new request-->          HEAD   (when alive: nothing to read)
 *   IDLE       --EOF, stray bytes, pool timeout-->  closed (also when a request finds it so)
 *   any        --error, timeout-->                  closed (on_error)
 *
 * Callbacks are never called from inside upstream_send, ureq_pause or ureq_cancel; after
 * on_done or on_error the request is freed and must not be touched; after ureq_cancel no
 * callback comes. A callback may call ureq_cancel or ureq_pause on its own request, and may
 * start other requests. Single-threaded.
 */
#ifndef FAULTLINE_CONTROL_UPSTREAM_H
#define FAULTLINE_CONTROL_UPSTREAM_H

#include <stddef.h>

#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/event.h>

#include "codec/http.h"
#include "util/err.h"

struct upstream;
struct ureq;

struct upstream_config {
    int connect_timeout_ms;    /* TCP connect and TLS handshake */
    int first_byte_timeout_ms; /* request written -> response head */
    int idle_timeout_ms;       /* silence between two pieces of the response body */
    int pool_idle_ms;          /* an idle pooled connection is closed after this */
    size_t max_idle;           /* idle connections kept per origin */
    const char *ca_file;       /* extra trusted CA (PEM) for https origins; NULL: system */
    /* connect to this address (an IP literal: a --resolve entry) instead of resolving the
     * URL's host, which still names the peer (TLS name, Host); NULL: resolve */
    const char *connect_addr;
};

enum upstream_error {
    UPSTREAM_ECONNECT = 1, /* DNS, TCP connect or TLS handshake failed */
    UPSTREAM_ETIMEOUT,     /* connect, first byte or idle timeout */
    UPSTREAM_ERESET,       /* the connection closed or failed mid-exchange */
    UPSTREAM_EPROTO        /* the origin broke HTTP/1.1 */
};

struct ureq_callbacks {
    /* The final response head (1xx are skipped). h is borrowed for the call. */
    void (*on_head)(struct ureq *q, const struct http_head *h, void *arg);
    /* A piece of the body; the callee takes all of data (drains or moves it). */
    void (*on_body)(struct ureq *q, struct evbuffer *data, void *arg);
    /* The body is complete. q is freed after the call. */
    void (*on_done)(struct ureq *q, void *arg);
    /* The exchange failed: code is an enum upstream_error, got_head says whether on_head was
     * called. msg is a short reason without secrets. q is freed after the call. */
    void (*on_error)(struct ureq *q, int code, int got_head, const char *msg, void *arg);
};

/* An origin from a URL "http[s]://host[:port][/prefix]" (src/util/url.h rules: no query,
 * fragment or user info; messages quote it redacted). dns may be NULL (numeric hosts
 * only). The config is copied (ca_file borrowed for the call). Caller frees with
 * upstream_free. NULL with e set (ERR_INVALID bad URL, ERR_SYS TLS setup). */
struct upstream *upstream_new(struct event_base *base, struct evdns_base *dns, const char *url,
                              const struct upstream_config *cfg, struct err *e);
/* Closes the pooled connections; in-flight requests are cancelled without callbacks.
 * NULL is a no-op. Not callable from an upstream callback. */
void upstream_free(struct upstream *u);
/* The origin's Host field value and its path prefix ("" or "/v1" without a trailing '/'). */
const char *upstream_host(const struct upstream *u);
const char *upstream_prefix(const struct upstream *u);
/* The URL as given, for messages (it never holds user info: upstream_new refuses it). */
const char *upstream_url(const struct upstream *u);

/*
 * Sends "METHOD target" (target includes the prefix) with the header lines hdrs (hlen bytes of
 * "Name: value\r\n", without Host, Content-Length or hop-by-hop fields, which are added here)
 * and body. The head is copied; body is borrowed, not copied (a 30 MiB body costs no copy):
 * it must stay valid and unchanged until on_done or on_error has been called or q is
 * cancelled. Returns the request; never NULL.
 */
struct ureq *upstream_send(struct upstream *u, const char *method, const char *target,
                           const char *hdrs, size_t hlen, const void *body, size_t blen,
                           const struct ureq_callbacks *cb, void *arg);
/* Abandons q: no callback comes, its connection is closed. */
void ureq_cancel(struct ureq *q);
/* Stops (1) or resumes (0) reading q's response body, for backpressure. */
void ureq_pause(struct ureq *q, int paused);

#endif
