/*
 * tlsmint: the run's interception CA and the leaf certificates it signs (OpenSSL 3), for
 * terminating TLS towards the agent on a host that a fault intercepts (egress.credential_401).
 *
 * tlsmint_new mints a CA: an EC P-256 key that exists only in this process's memory (nothing
 * writes it anywhere) and a self-signed certificate (CN "faultline run CA <tag>", basic
 * constraints CA:TRUE pathlen 0, key usage keyCertSign/cRLSign, valid from a day ago for 30
 * days). Only the certificate leaves the process: tlsmint_ca_pem, tlsmint_write_ca, and
 * tlsmint_write_bundle (the system's CAs followed by it: the bundle a sandbox trusts).
 *
 * Leaves: one EC P-256 key per tlsmint (made with the CA) serves every leaf; a leaf
 * certificate per host name is minted on first use (subject CN = host, SAN DNS:host, or
 * IP:host for an IPv4/IPv6 literal; extendedKeyUsage serverAuth; serial random 128 bits;
 * valid from a day ago for 7 days) and cached: later handshakes for the host reuse it. The
 * cache holds TLSMINT_CACHE_MAX hosts; past that the oldest is dropped.
 *
 * The server context (tlsmint_server_ctx): TLS 1.2 or later, ALPN "http/1.1" selected when
 * the client offers it (nothing else is spoken), and an SNI callback that picks the leaf for
 * the session. Each session is made by tlsmint_ssl_new with a caller-owned struct tlsmint_sni
 * naming the host the client asked for (a proxy's CONNECT host; "" when unknown, as in the
 * transparent mode). The callback then decides, per handshake:
 *   SNI present, expect "" or equal (case-insensitive) --> leaf for the SNI name
 *   SNI present, expect differs                          --> alert unrecognized_name (refused)
 *   no SNI, expect an IP literal                          --> leaf for expect (clients send no
 *                                                            SNI for an IP, RFC 6066 3)
 *   no SNI, expect a name or ""                           --> alert unrecognized_name (refused)
 *   SNI too long or not a host name                       --> alert unrecognized_name (refused)
 * and fills sni->host (the name served) or sni->refused (why not, for an event).
 *
 * Single-threaded: one tlsmint per controller, used from its loop's thread.
 */
#ifndef FAULTLINE_CODEC_TLSMINT_H
#define FAULTLINE_CODEC_TLSMINT_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "util/err.h"

#define TLSMINT_HOST_MAX 253           /* longest host name served (DNS limit) */
#define TLSMINT_CACHE_MAX 1024         /* leaf certificates kept */
#define TLSMINT_BUNDLE_MAX (16u << 20) /* largest system CA bundle copied */

struct tlsmint;

/* A session's host, caller-owned: it must outlive the handshake of the SSL made with it. */
struct tlsmint_sni {
    char expect[TLSMINT_HOST_MAX + 1]; /* in: the host asked for, "" when unknown */
    char host[TLSMINT_HOST_MAX + 1];   /* out: the name the leaf was served for, or "" */
    const char *refused;               /* out: why the handshake was refused (static text) */
};

/* Counters, for benchmarks, tests and /_faultline/state. */
struct tlsmint_stats {
    uint64_t minted;  /* leaf certificates minted */
    uint64_t hits;    /* leaves served from the cache */
    uint64_t refused; /* handshakes refused by the SNI rules */
    size_t cached;    /* leaves in the cache now */
};

/* Mints a CA and the leaf key and makes the server context. tag (may be NULL) goes into the
 * CA's name (the run id). Caller frees with tlsmint_free. NULL with e set (ERR_SYS: OpenSSL
 * refused). */
struct tlsmint *tlsmint_new(const char *tag, struct err *e);
/* NULL is a no-op. Sessions made from the context must be gone (SSL_CTX is reference counted:
 * a session still open keeps it alive, but the leaves go with m). */
void tlsmint_free(struct tlsmint *m);

/* The CA certificate as PEM, NUL-terminated; borrowed, valid until tlsmint_free. */
const char *tlsmint_ca_pem(const struct tlsmint *m);
/* The CA certificate (borrowed): to trust it in a client context (tests, benchmarks). */
X509 *tlsmint_ca_cert(const struct tlsmint *m);
/* Writes the CA certificate (never the key) to path, atomically, mode 0644. 0 or ERR_IO. */
int tlsmint_write_ca(const struct tlsmint *m, const char *path, struct err *e);
/* Writes the system CA bundle system_bundle (NULL: the first of the usual Debian, Fedora,
 * Alpine paths that exists; a missing one gives a bundle of the CA alone) followed by the CA
 * certificate to path, mode 0644, in place (truncated and written, not renamed over: a bind
 * mount of path made before sees the new content). 0, ERR_IO or ERR_LIMIT (system bundle over
 * TLSMINT_BUNDLE_MAX). */
int tlsmint_write_bundle(const struct tlsmint *m, const char *system_bundle, const char *path,
                         struct err *e);

/* The leaf certificate for host (a name or an IP literal, at most TLSMINT_HOST_MAX bytes),
 * minted now or taken from the cache; borrowed, valid until it leaves the cache (use it at
 * once). NULL with e set: ERR_INVALID (empty, too long, not a host), ERR_SYS. */
X509 *tlsmint_leaf(struct tlsmint *m, const char *host, struct err *e);

/* The server context (borrowed; valid until tlsmint_free). */
SSL_CTX *tlsmint_server_ctx(struct tlsmint *m);
/* A server session for one client connection, its host rules in sni (borrowed, caller-owned,
 * must outlive the handshake; sni->host and sni->refused are cleared here). The caller owns
 * the SSL (a bufferevent with BEV_OPT_CLOSE_ON_FREE frees it). NULL with e set (ERR_SYS). */
SSL *tlsmint_ssl_new(struct tlsmint *m, struct tlsmint_sni *sni, struct err *e);

void tlsmint_get_stats(const struct tlsmint *m, struct tlsmint_stats *out);

#endif
