/*
 * test_tlsmint: the run CA, leaves per host (cache, SAN), the SNI rules in real handshakes
 * over memory BIOs, and the files written (the certificate, never the key).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "codec/tlsmint.h"
#include "helpers.h"
#include "util/banned.h"

static struct tlsmint *mint(void)
{
    struct err e = {0};
    struct tlsmint *m = tlsmint_new("r-test", &e);
    assert_non_null(m);
    return m;
}

static void test_ca_is_a_ca(void **state)
{
    struct tlsmint *m = mint();
    X509 *ca = tlsmint_ca_cert(m);
    EVP_PKEY *pub = X509_get0_pubkey(ca);

    (void)state;
    assert_int_equal(X509_check_ca(ca), 1);
    assert_int_equal(EVP_PKEY_get_id(pub), EVP_PKEY_EC);
    assert_int_equal(EVP_PKEY_get_bits(pub), 256);
    assert_int_equal(X509_verify(ca, pub), 1); /* self-signed */
    assert_non_null(strstr(tlsmint_ca_pem(m), "-----BEGIN CERTIFICATE-----"));
    assert_null(strstr(tlsmint_ca_pem(m), "PRIVATE KEY"));
    tlsmint_free(m);
    tlsmint_free(NULL);
}

/* The leaf chains to the CA and names the host; the same host again is the cached leaf. */
static void test_leaf_minted_once(void **state)
{
    struct tlsmint *m = mint();
    struct tlsmint_stats st;
    struct err e = {0};
    X509 *a = tlsmint_leaf(m, "api.github.com", &e);
    X509 *b = tlsmint_leaf(m, "API.GitHub.com", &e);
    X509 *ip = tlsmint_leaf(m, "127.0.0.1", &e);

    (void)state;
    assert_non_null(a);
    assert_ptr_equal(a, b);
    assert_int_equal(X509_check_host(a, "api.github.com", 0, 0, NULL), 1);
    assert_int_equal(X509_check_host(a, "github.com", 0, 0, NULL), 0);
    assert_int_equal(X509_verify(a, X509_get0_pubkey(tlsmint_ca_cert(m))), 1);
    assert_int_equal(X509_check_issued(tlsmint_ca_cert(m), a), X509_V_OK);
    assert_non_null(ip);
    assert_int_equal(X509_check_ip_asc(ip, "127.0.0.1", 0), 1);
    tlsmint_get_stats(m, &st);
    assert_int_equal(st.minted, 2);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.cached, 2);
    tlsmint_free(m);
}

static void test_leaf_bad_host(void **state)
{
    struct tlsmint *m = mint();
    char longname[TLSMINT_HOST_MAX + 8];
    struct err e = {0};

    (void)state;
    assert_null(tlsmint_leaf(m, "", &e));
    assert_int_equal(e.code, ERR_INVALID);
    err_clear(&e);
    assert_null(tlsmint_leaf(m, "a b", &e));
    assert_int_equal(e.code, ERR_INVALID);
    err_clear(&e);
    assert_null(tlsmint_leaf(m, "x,DNS:evil.com", &e)); /* no extension injection */
    assert_int_equal(e.code, ERR_INVALID);
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    err_clear(&e);
    assert_null(tlsmint_leaf(m, longname, &e));
    assert_int_equal(e.code, ERR_INVALID);
    tlsmint_free(m);
}

/* One handshake over memory BIOs: a verifying client (trusting only the CA) naming sni (NULL:
 * none) and checking verify_name; the server session from tlsmint_ssl_new with expect.
 * Returns 1 when both ends completed it. */
static int handshake(struct tlsmint *m, const char *expect, const char *sni,
                     const char *verify_name, struct tlsmint_sni *s, int *client_alert)
{
    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    X509_STORE *store = SSL_CTX_get_cert_store(cctx);
    struct err e = {0};
    SSL *c, *srv;
    BIO *cb, *sb;
    int cdone = 0, sdone = 0, failed = 0;

    X509_STORE_add_cert(store, tlsmint_ca_cert(m));
    SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
    c = SSL_new(cctx);
    if (sni)
        SSL_set_tlsext_host_name(c, sni);
    if (verify_name)
        SSL_set1_host(c, verify_name);
    snprintf(s->expect, sizeof(s->expect), "%s", expect);
    srv = tlsmint_ssl_new(m, s, &e);
    assert_non_null(srv);
    assert_int_equal(BIO_new_bio_pair(&cb, 0, &sb, 0), 1);
    SSL_set_bio(c, cb, cb);
    SSL_set_bio(srv, sb, sb);
    SSL_set_connect_state(c);
    SSL_set_accept_state(srv);
    for (int i = 0; i < 20 && !(cdone && sdone) && !failed; i++) {
        int rc;
        if (!cdone) {
            rc = SSL_do_handshake(c);
            if (rc == 1)
                cdone = 1;
            else if (SSL_get_error(c, rc) != SSL_ERROR_WANT_READ)
                failed = 1;
        }
        if (!sdone) {
            rc = SSL_do_handshake(srv);
            if (rc == 1)
                sdone = 1;
            else if (SSL_get_error(srv, rc) != SSL_ERROR_WANT_READ)
                failed = 1;
        }
    }
    /* let the client read the server's alert, if any */
    if (failed && !cdone) {
        int rc = SSL_do_handshake(c);
        unsigned long code = ERR_peek_last_error();
        (void)rc;
        *client_alert = ERR_GET_REASON(code) == SSL_R_TLSV1_UNRECOGNIZED_NAME;
    }
    ERR_clear_error();
    SSL_free(c);
    SSL_free(srv);
    SSL_CTX_free(cctx);
    return cdone && sdone;
}

static void test_handshake_sni_rules(void **state)
{
    struct tlsmint *m = mint();
    struct tlsmint_sni s;
    struct tlsmint_stats st;
    int alert = 0;

    (void)state;
    /* SNI equal to the CONNECT host: served, and the client verifies the name */
    assert_int_equal(handshake(m, "api.github.com", "api.github.com", "api.github.com", &s,
                               &alert),
                     1);
    assert_string_equal(s.host, "api.github.com");
    assert_null(s.refused);
    /* transparent (expect ""): the SNI decides */
    assert_int_equal(handshake(m, "", "example.org", "example.org", &s, &alert), 1);
    assert_string_equal(s.host, "example.org");
    /* an SNI other than the CONNECT host: refused with unrecognized_name */
    alert = 0;
    assert_int_equal(handshake(m, "api.github.com", "evil.example", NULL, &s, &alert), 0);
    assert_non_null(s.refused);
    assert_non_null(strstr(s.refused, "does not match"));
    assert_int_equal(alert, 1);
    assert_string_equal(s.host, "");
    /* no SNI for a name: refused */
    alert = 0;
    assert_int_equal(handshake(m, "api.github.com", NULL, NULL, &s, &alert), 0);
    assert_non_null(s.refused);
    assert_non_null(strstr(s.refused, "no SNI"));
    assert_int_equal(alert, 1);
    /* no SNI for a name in transparent mode: refused */
    assert_int_equal(handshake(m, "", NULL, NULL, &s, &alert), 0);
    assert_non_null(s.refused);
    /* no SNI for an IP literal (clients send none): the IP's leaf */
    assert_int_equal(handshake(m, "127.0.0.1", NULL, NULL, &s, &alert), 1);
    assert_string_equal(s.host, "127.0.0.1");
    /* the second handshake for a host reuses its leaf */
    assert_int_equal(handshake(m, "api.github.com", "api.github.com", "api.github.com", &s,
                               &alert),
                     1);
    tlsmint_get_stats(m, &st);
    assert_int_equal(st.minted, 3);
    assert_true(st.hits >= 1);
    assert_int_equal(st.refused, 3);
    tlsmint_free(m);
}

static void test_files(void **state)
{
    struct tlsmint *m = mint();
    struct ut_tmpfile sys, ca, bundle;
    struct buf b = BUF_INIT;
    struct err e = {0};
    const char *sys_pem = "-----BEGIN CERTIFICATE-----\nSYSTEM\n-----END CERTIFICATE-----";

    (void)state;
    ut_tmpfile_with(&sys, sys_pem);
    ut_tmpfile_init(&ca);
    ut_tmpfile_init(&bundle);
    assert_int_equal(tlsmint_write_ca(m, ca.path, &e), 0);
    assert_int_equal(fs_read_file(ca.path, 1 << 20, &b, &e), 0);
    assert_string_equal(b.data, tlsmint_ca_pem(m));
    buf_reset(&b);
    assert_int_equal(tlsmint_write_bundle(m, sys.path, bundle.path, &e), 0);
    assert_int_equal(fs_read_file(bundle.path, 1 << 20, &b, &e), 0);
    assert_true(strncmp(b.data, sys_pem, strlen(sys_pem)) == 0);
    assert_int_equal(b.data[strlen(sys_pem)], '\n');
    assert_string_equal(b.data + strlen(sys_pem) + 1, tlsmint_ca_pem(m));
    assert_null(strstr(b.data, "PRIVATE"));
    /* a system bundle that cannot be read is an error naming it */
    assert_true(tlsmint_write_bundle(m, "/nonexistent/ca.crt", bundle.path, &e) < 0);
    assert_non_null(strstr(e.msg, "/nonexistent/ca.crt"));
    buf_release(&b);
    unlink(sys.path);
    unlink(ca.path);
    unlink(bundle.path);
    tlsmint_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ca_is_a_ca),
        cmocka_unit_test(test_leaf_minted_once),
        cmocka_unit_test(test_leaf_bad_host),
        cmocka_unit_test(test_handshake_sni_rules),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
