/*
 * tlsout: a write to a TLS bufferevent (libevent's bufferevent_openssl over a socket) made at
 * once, from the caller, when nothing waits in its output.
 *
 * Data added to such a bufferevent's output is written on the next loop turn, when the write
 * event it arms fires, and the event is taken off again once the output is empty: for a
 * request-response exchange that is two epoll changes and a loop turn per message on the
 * critical path (docs/performance.md, egress interception). tlsout_write calls SSL_write
 * itself instead; only what it did not take (a full socket buffer, a handshake message to
 * read first, an error) goes to the output, for libevent to write as usual (it sets
 * SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, and the rest is added as one contiguous piece of at
 * most TLSOUT_MAX bytes, which libevent's 16 KiB writes take whole, so that its SSL_write
 * retries a record OpenSSL half sent with the same bytes and length). Larger data always
 * goes through the output. The bufferevent's write callback is not called for bytes written
 * here: callers check the output's length themselves.
 */
#ifndef FAULTLINE_CONTROL_TLSOUT_H
#define FAULTLINE_CONTROL_TLSOUT_H

#include <stddef.h>

#define TLSOUT_MAX 16384 /* one TLS record; libevent's default single write */

struct bufferevent;

/* Writes n bytes of data to bev: now when n <= TLSOUT_MAX and bev is a TLS bufferevent over a
 * socket (not a filter) whose handshake is done and whose output is empty, else (and for
 * what SSL_write did not take) through its output. data is borrowed (copied when it goes to the
 * output). Callable from a callback. */
void tlsout_write(struct bufferevent *bev, const void *data, size_t n);

#endif
