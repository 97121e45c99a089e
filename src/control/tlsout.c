/*
 * tlsout: SSL_write at once on an idle TLS bufferevent (see tlsout.h).
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "control/tlsout.h"
#include "util/banned.h"

void tlsout_write(struct bufferevent *bev, const void *data, size_t n)
{
    struct evbuffer *out = bufferevent_get_output(bev);
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    int w = 0;

    if (n == 0)
        return;
    if (ssl && n <= TLSOUT_MAX && bufferevent_get_underlying(bev) == NULL &&
        evbuffer_get_length(out) == 0 && SSL_is_init_finished(ssl)) {
        w = SSL_write(ssl, data, (int)n);
        if (w <= 0) {
            /* would block, or failed: libevent's own SSL_write meets the same state and
             * reports it (an error event) */
            ERR_clear_error();
            w = 0;
        }
    }
    if ((size_t)w < n)
        evbuffer_add(out, (const char *)data + w, n - (size_t)w);
}
