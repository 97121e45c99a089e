/*
 * tlsmint: the run's CA, leaves minted per host and cached, and the SNI-picking server context
 * (see tlsmint.h for the rules). The cache is a small array searched linearly: a handshake
 * costs far more than comparing a few hundred names, and a run talks to a handful of hosts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "codec/tlsmint.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

struct leaf {
    char host[TLSMINT_HOST_MAX + 1];
    X509 *cert;
};

struct tlsmint {
    EVP_PKEY *ca_key; /* never written anywhere */
    X509 *ca;
    char *ca_pem;
    EVP_PKEY *leaf_key;
    SSL_CTX *ctx;
    struct leaf *leaves; /* TLSMINT_CACHE_MAX slots, used as a ring once full */
    size_t nleaves, next_evict;
    struct tlsmint_stats st;
};

static int mint_index = -1; /* SSL ex_data slot holding the struct tlsmint_sni */

static EVP_PKEY *mint_key(void)
{
    return EVP_EC_gen("P-256");
}

static int is_ip(const char *host)
{
    unsigned char tmp[16];
    return inet_pton(AF_INET, host, tmp) == 1 || inet_pton(AF_INET6, host, tmp) == 1;
}

/* A host name as served: letters, digits, '-', '.', '_' (some test hosts), or an IP
 * literal; 1..TLSMINT_HOST_MAX bytes. */
static int host_ok(const char *host)
{
    size_t n = strlen(host);

    if (n == 0 || n > TLSMINT_HOST_MAX)
        return 0;
    if (is_ip(host))
        return 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)host[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_'))
            return 0;
    }
    return host[0] != '.';
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v3;
    X509_EXTENSION *ext;
    int ok;

    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    if (ext == NULL)
        return 0;
    ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

static int set_serial(X509 *cert)
{
    unsigned char r[16];
    BIGNUM *bn = NULL;
    int ok = 0;

    if (RAND_bytes(r, sizeof(r)) != 1)
        return 0;
    r[0] &= 0x7f; /* positive */
    bn = BN_bin2bn(r, sizeof(r), NULL);
    if (bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)))
        ok = 1;
    BN_free(bn);
    return ok;
}

/* A certificate for subject CN cn with public key pub, signed by issuer_key (issuer NULL:
 * self-signed). */
static X509 *mint_cert(const char *cn, EVP_PKEY *pub, X509 *issuer, EVP_PKEY *issuer_key, long days)
{
    X509 *c = X509_new();
    X509_NAME *name;

    if (c == NULL)
        return NULL;
    if (X509_set_version(c, 2) != 1 || !set_serial(c) ||
        X509_gmtime_adj(X509_getm_notBefore(c), -86400) == NULL ||
        X509_gmtime_adj(X509_getm_notAfter(c), days * 86400) == NULL ||
        X509_set_pubkey(c, pub) != 1)
        goto fail;
    name = X509_get_subject_name(c);
    if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"faultline", -1,
                                   -1, 0) != 1 ||
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                   0) != 1)
        goto fail;
    if (X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : name) != 1)
        goto fail;
    return c;
fail:
    X509_free(c);
    return NULL;
}

static X509 *mint_ca(EVP_PKEY *key, const char *tag)
{
    char cn[128];
    X509 *c;

    snprintf(cn, sizeof(cn), "faultline run CA%s%.80s", tag ? " " : "", tag ? tag : "");
    c = mint_cert(cn, key, NULL, key, 30);
    if (c == NULL)
        return NULL;
    if (!add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
        !add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign") ||
        !add_ext(c, c, NID_subject_key_identifier, "hash") ||
        X509_sign(c, key, EVP_sha256()) == 0) {
        X509_free(c);
        return NULL;
    }
    return c;
}

static X509 *mint_leaf(struct tlsmint *m, const char *host)
{
    char san[TLSMINT_HOST_MAX + 8];
    const char *cn = strlen(host) > 64 ? "faultline leaf" : host; /* CN is at most 64 */
    X509 *c = mint_cert(cn, m->leaf_key, m->ca, m->ca_key, 7);

    if (c == NULL)
        return NULL;
    snprintf(san, sizeof(san), "%s:%s", is_ip(host) ? "IP" : "DNS", host);
    if (!add_ext(c, m->ca, NID_subject_alt_name, san) ||
        !add_ext(c, m->ca, NID_basic_constraints, "critical,CA:FALSE") ||
        !add_ext(c, m->ca, NID_key_usage, "critical,digitalSignature") ||
        !add_ext(c, m->ca, NID_ext_key_usage, "serverAuth") ||
        !add_ext(c, m->ca, NID_authority_key_identifier, "keyid:always") ||
        X509_sign(c, m->ca_key, EVP_sha256()) == 0) {
        X509_free(c);
        return NULL;
    }
    return c;
}

X509 *tlsmint_leaf(struct tlsmint *m, const char *host, struct err *e)
{
    struct leaf *slot;
    X509 *c;

    if (!host_ok(host)) {
        err_set(e, ERR_INVALID, "not a host name: '%.80s'", host);
        return NULL;
    }
    for (size_t i = 0; i < m->nleaves; i++) {
        if (strcasecmp(m->leaves[i].host, host) == 0) {
            m->st.hits++;
            return m->leaves[i].cert;
        }
    }
    c = mint_leaf(m, host);
    if (c == NULL) {
        ERR_clear_error();
        err_set(e, ERR_SYS, "cannot mint a certificate for '%.80s'", host);
        return NULL;
    }
    if (m->nleaves < TLSMINT_CACHE_MAX) {
        slot = &m->leaves[m->nleaves++];
    } else {
        slot = &m->leaves[m->next_evict];
        m->next_evict = (m->next_evict + 1) % TLSMINT_CACHE_MAX;
        X509_free(slot->cert);
    }
    snprintf(slot->host, sizeof(slot->host), "%s", host);
    for (char *p = slot->host; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    slot->cert = c;
    m->st.minted++;
    return c;
}

static int refuse(struct tlsmint *m, struct tlsmint_sni *sni, const char *why, int *al)
{
    sni->refused = why;
    m->st.refused++;
    *al = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static int sni_cb(SSL *ssl, int *al, void *arg)
{
    struct tlsmint *m = arg;
    struct tlsmint_sni *sni = SSL_get_ex_data(ssl, mint_index);
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    const char *host;
    X509 *leaf;

    if (sni == NULL)
        return refuse(m, &(struct tlsmint_sni){0}, "no session state", al);
    if (name == NULL || name[0] == '\0') {
        if (sni->expect[0] == '\0' || !is_ip(sni->expect))
            return refuse(m, sni, "the ClientHello names no host (no SNI)", al);
        host = sni->expect;
    } else {
        if (!host_ok(name))
            return refuse(m, sni, "the SNI is not a host name", al);
        if (sni->expect[0] != '\0' && strcasecmp(name, sni->expect) != 0)
            return refuse(m, sni, "the SNI does not match the host asked for", al);
        host = name;
    }
    leaf = tlsmint_leaf(m, host, NULL);
    if (leaf == NULL || SSL_use_certificate(ssl, leaf) != 1 ||
        SSL_use_PrivateKey(ssl, m->leaf_key) != 1) {
        ERR_clear_error();
        return refuse(m, sni, "cannot mint the certificate", al);
    }
    snprintf(sni->host, sizeof(sni->host), "%s", host);
    return SSL_TLSEXT_ERR_OK;
}

static int alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned int inlen, void *arg)
{
    static const unsigned char h11[] = "\x08http/1.1";
    unsigned char *sel;

    (void)ssl;
    (void)arg;
    if (SSL_select_next_proto(&sel, outlen, h11, sizeof(h11) - 1, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK; /* speak HTTP/1.1 without ALPN */
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

static char *cert_pem(X509 *c)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data, *out = NULL;
    long n;

    if (b == NULL)
        return NULL;
    if (PEM_write_bio_X509(b, c) == 1) {
        n = BIO_get_mem_data(b, &data);
        if (n > 0)
            out = xstrndup(data, (size_t)n);
    }
    BIO_free(b);
    return out;
}

struct tlsmint *tlsmint_new(const char *tag, struct err *e)
{
    struct tlsmint *m = xcalloc(1, sizeof(*m));

    if (mint_index < 0)
        mint_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
    m->leaves = xcalloc(TLSMINT_CACHE_MAX, sizeof(*m->leaves));
    if (mint_index < 0 || (m->ca_key = mint_key()) == NULL ||
        (m->ca = mint_ca(m->ca_key, tag)) == NULL || (m->ca_pem = cert_pem(m->ca)) == NULL ||
        (m->leaf_key = mint_key()) == NULL || (m->ctx = SSL_CTX_new(TLS_server_method())) == NULL)
        goto fail;
    SSL_CTX_set_min_proto_version(m->ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(m->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_tlsext_servername_callback(m->ctx, sni_cb);
    SSL_CTX_set_tlsext_servername_arg(m->ctx, m);
    SSL_CTX_set_alpn_select_cb(m->ctx, alpn_cb, NULL);
    return m;
fail:
    ERR_clear_error();
    tlsmint_free(m);
    err_set(e, ERR_SYS, "cannot mint the interception CA");
    return NULL;
}

void tlsmint_free(struct tlsmint *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->nleaves; i++)
        X509_free(m->leaves[i].cert);
    free(m->leaves);
    SSL_CTX_free(m->ctx);
    EVP_PKEY_free(m->leaf_key);
    free(m->ca_pem);
    X509_free(m->ca);
    EVP_PKEY_free(m->ca_key);
    free(m);
}

const char *tlsmint_ca_pem(const struct tlsmint *m)
{
    return m->ca_pem;
}

X509 *tlsmint_ca_cert(const struct tlsmint *m)
{
    return m->ca;
}

int tlsmint_write_ca(const struct tlsmint *m, const char *path, struct err *e)
{
    return fs_write_file(path, m->ca_pem, strlen(m->ca_pem), e);
}

/* Writes the file's content in place (truncate, write), not through a rename: a bind mount of
 * the file made before (the sandbox's, built while the controller starts) then sees it. */
static int write_in_place(const char *path, const char *p, size_t n, struct err *e)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    int rc;

    if (fd < 0)
        return err_set(e, ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    rc = fs_write_all(fd, p, n);
    if (close(fd) != 0 || rc != 0)
        return err_set(e, ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return 0;
}

int tlsmint_write_bundle(const struct tlsmint *m, const char *system_bundle, const char *path,
                         struct err *e)
{
    static const char *const usual[] = {"/etc/ssl/certs/ca-certificates.crt",
                                        "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem",
                                        NULL};
    struct buf b;
    int rc;

    buf_init(&b, TLSMINT_BUNDLE_MAX + 64 * 1024);
    if (system_bundle) {
        rc = fs_read_file(system_bundle, TLSMINT_BUNDLE_MAX, &b, e);
        if (rc < 0)
            goto out;
    } else {
        for (size_t i = 0; usual[i]; i++) {
            struct err ignored = {0};
            if (fs_read_file(usual[i], TLSMINT_BUNDLE_MAX, &b, &ignored) == 0)
                break;
        }
    }
    if (b.len > 0 && b.data[b.len - 1] != '\n')
        buf_addc(&b, '\n');
    rc = buf_adds(&b, m->ca_pem);
    if (rc < 0) {
        err_set(e, rc, "the CA bundle for '%s' is too large", path);
        goto out;
    }
    rc = write_in_place(path, b.data, b.len, e);
out:
    buf_release(&b);
    return rc;
}

SSL_CTX *tlsmint_server_ctx(struct tlsmint *m)
{
    return m->ctx;
}

SSL *tlsmint_ssl_new(struct tlsmint *m, struct tlsmint_sni *sni, struct err *e)
{
    SSL *ssl = SSL_new(m->ctx);

    if (ssl == NULL || SSL_set_ex_data(ssl, mint_index, sni) != 1) {
        SSL_free(ssl);
        ERR_clear_error();
        err_set(e, ERR_SYS, "cannot make a TLS session");
        return NULL;
    }
    sni->host[0] = '\0';
    sni->refused = NULL;
    return ssl;
}

void tlsmint_get_stats(const struct tlsmint *m, struct tlsmint_stats *out)
{
    *out = m->st;
    out->cached = m->nleaves;
}
