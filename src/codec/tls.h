/*
 * tls: the one TLS client set-up (OpenSSL 3) for every HTTPS client in the project: the
 * blocking client (src/codec/httpc.c) and the controller's upstream client
 * (src/control/upstream.c).
 *
 * A context made by tls_client_ctx_new always verifies the peer: TLS 1.2 or later, the
 * certificate chain checked against the default trust store (which honours SSL_CERT_FILE and
 * SSL_CERT_DIR) plus an optional extra CA file, ALPN "http/1.1", and an unexpected EOF read as
 * the end of the stream (HTTP frames its messages itself; a body framed by the close is as
 * trustworthy as the peer, whose certificate was checked). There is no switch that turns
 * verification off.
 *
 * tls_client_session_host then names the peer on each session: the certificate must match
 * host (a DNS name: SNI sent and the name checked; an IP literal: no SNI, RFC 6066 3, and the
 * address checked against the certificate's IP entries).
 *
 * The context belongs to its caller (no process-wide state): free it with SSL_CTX_free once
 * no session made from it is in use.
 */
#ifndef FAULTLINE_CODEC_TLS_H
#define FAULTLINE_CODEC_TLS_H

#include <openssl/ssl.h>

#include "util/err.h"

/* A new client context, as above; ca_file (PEM) is trusted in addition to the default store
 * when non-NULL. Caller frees with SSL_CTX_free. NULL with e set: ERR_SYS (OpenSSL refused
 * to make one), ERR_INVALID (ca_file cannot be loaded: "cannot load CA file 'x': reason"). */
SSL_CTX *tls_client_ctx_new(const char *ca_file, struct err *e);
/* Sets the peer name ssl must prove (see above). 0, or ERR_SYS with e set. */
int tls_client_session_host(SSL *ssl, const char *host, struct err *e);

#endif
