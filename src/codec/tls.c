/*
 * tls: TLS client contexts with verification, and the per-session peer name (see tls.h).
 */
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "codec/tls.h"
#include "util/banned.h"

SSL_CTX *tls_client_ctx_new(const char *ca_file, struct err *e)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    char why[160];

    if (ctx == NULL) {
        err_set(e, ERR_SYS, "cannot make a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_default_verify_paths(ctx);
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x08http/1.1", 9);
    if (ca_file && SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
        unsigned long code = ERR_get_error();
        if (code)
            ERR_error_string_n(code, why, sizeof(why));
        else
            snprintf(why, sizeof(why), "unreadable");
        ERR_clear_error();
        SSL_CTX_free(ctx);
        err_set(e, ERR_INVALID, "cannot load CA file '%s': %s", ca_file, why);
        return NULL;
    }
    ERR_clear_error(); /* a missing default store leaves queued errors behind */
    return ctx;
}

int tls_client_session_host(SSL *ssl, const char *host, struct err *e)
{
    unsigned char tmp[16];
    int ok;

    if (inet_pton(AF_INET, host, tmp) == 1 || inet_pton(AF_INET6, host, tmp) == 1)
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1;
    else
        ok = SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1;
    if (!ok) {
        ERR_clear_error();
        return err_set(e, ERR_SYS, "cannot set the TLS peer name '%.100s'", host);
    }
    return 0;
}
