/* Unit tests for src/util/url (the one URL parser: accepted forms, refusals, messages that
 * never quote user info, Host fields) and src/codec/tls (the one TLS client set-up: always
 * verifying, an extra CA file, refusals with a message). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/ssl.h>

#include "codec/tls.h"
#include "util/url.h"
#include "util/banned.h"

static void test_parse(void **state)
{
    struct url u;
    struct err e = {0};
    char a[300];

    assert_int_equal(url_parse("http://127.0.0.1:8080", &u, &e), 0);
    assert_false(u.tls);
    assert_string_equal(u.host, "127.0.0.1");
    assert_string_equal(u.port, "8080");
    assert_string_equal(u.path, "");
    assert_int_equal(url_parse("https://api.openai.com/v1/", &u, &e), 0);
    assert_true(u.tls);
    assert_string_equal(u.port, "443");
    assert_string_equal(u.path, "/v1");
    assert_int_equal(url_parse("HTTP://[::1]:9/x//", &u, &e), 0);
    assert_string_equal(u.host, "::1");
    assert_true(u.ipv6);
    assert_string_equal(u.path, "/x");
    url_authority(&u, a, sizeof(a));
    assert_string_equal(a, "[::1]:9");

    const char *bad[] = {"",
                         "ftp://x",
                         "http://",
                         "http://:80",
                         "http://h:0",
                         "http://h:99999",
                         "http://h:8x",
                         "http://u:p@h/",
                         "http://h/?q=1",
                         "http://h/#f",
                         "http://[::1",
                         "http://[::1]x",
                         "http://h /"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct err e2 = {0};
        assert_int_equal(url_parse(bad[i], &u, &e2), ERR_INVALID);
        assert_non_null(strstr(e2.msg, "bad URL"));
    }
}

/* Every refusal quotes the URL with its user info replaced: a password never reaches a
 * message (httpc's own parser used to quote the URL as given). */
static void test_refusals_redacted(void **state)
{
    static const char *bad[] = {"http://user:hunter2pw@127.0.0.1:9/",
                                "https://user:hunter2pw@api.example.com/v1?x=1",
                                "ftp://hunter2pw@h/",
                                "http://u:hunter2pw@[::1",
                                "http://a@b:hunter2pw@h#f",
                                "http://u:hunter2pw@h:99999/",
                                "http://u:hunter2pw@h/\x01"};
    struct url u;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct err e = {0};
        assert_int_equal(url_parse(bad[i], &u, &e), ERR_INVALID);
        assert_non_null(strstr(e.msg, "bad URL '"));
        assert_null(strstr(e.msg, "hunter2"));
        assert_non_null(strstr(e.msg, "***"));
    }
}

static void test_redact(void **state)
{
    static const struct {
        const char *in, *out;
    } cases[] = {{"http://u:p@h:1/x@y", "http://***@h:1/x@y"},
                 {"https://h/p@q", "https://h/p@q"},
                 {"http://a@b@c/", "http://***@c/"},
                 {"u:p@h", "***@h"},
                 {"", ""}};
    char out[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        url_redact(cases[i].in, out, sizeof(out));
        assert_string_equal(out, cases[i].out);
    }
    url_redact("http://user:hunter2pw@h/", out, 8);
    assert_null(strstr(out, "hunter2"));
}

static void test_more_forms(void **state)
{
    struct url u;
    struct err e = {0};
    char h[URL_HOST_MAX + 16];

    assert_int_equal(url_parse("https://api.anthropic.com", &u, &e), 0);
    url_host_field(&u, h, sizeof(h));
    assert_string_equal(h, "api.anthropic.com");
    assert_int_equal(url_port(&u), 443);
    assert_int_equal(url_parse("http://127.0.0.1:8080/v1", &u, &e), 0);
    url_host_field(&u, h, sizeof(h));
    assert_string_equal(h, "127.0.0.1:8080");
    assert_int_equal(url_parse("http://[::1]/", &u, &e), 0);
    url_host_field(&u, h, sizeof(h));
    assert_string_equal(h, "[::1]");
    assert_int_equal(url_port(&u), 80);
    /* a port is digits only; no control bytes or DEL anywhere */
    const char *bad[] = {"http://h:+80/", "http://h: 80/", "http://h/\x7f", "http://h/a\tb"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct err e2 = {0};
        assert_int_equal(url_parse(bad[i], &u, &e2), ERR_INVALID);
    }
    /* limits: a host of URL_HOST_MAX bytes, a path of URL_PATH_MAX bytes */
    char big[URL_PATH_MAX + 64];
    memset(big, 0, sizeof(big));
    memcpy(big, "http://", 7);
    memset(big + 7, 'h', URL_HOST_MAX);
    assert_int_equal(url_parse(big, &u, &e), ERR_INVALID);
    memset(big, 0, sizeof(big));
    memcpy(big, "http://h/", 9);
    memset(big + 9, 'p', URL_PATH_MAX);
    assert_int_equal(url_parse(big, &u, &e), ERR_INVALID);
}

static void test_tls_ctx(void **state)
{
    struct err e = {0};
    SSL_CTX *ctx = tls_client_ctx_new(NULL, &e);

    assert_non_null(ctx);
    assert_int_equal(SSL_CTX_get_verify_mode(ctx) & SSL_VERIFY_PEER, SSL_VERIFY_PEER);
    assert_int_equal(SSL_CTX_get_min_proto_version(ctx), TLS1_2_VERSION);
    SSL *ssl = SSL_new(ctx);
    assert_int_equal(tls_client_session_host(ssl, "127.0.0.1", &e), 0);
    assert_null(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name)); /* no SNI for an IP */
    assert_int_equal(tls_client_session_host(ssl, "api.example.com", &e), 0);
    assert_string_equal(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name), "api.example.com");
    SSL_free(ssl);
    SSL_CTX_free(ctx);

    err_clear(&e);
    assert_null(tls_client_ctx_new("/nonexistent/ca.pem", &e));
    assert_int_equal(e.code, ERR_INVALID);
    assert_non_null(strstr(e.msg, "cannot load CA file '/nonexistent/ca.pem'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_refusals_redacted),
        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_more_forms),
        cmocka_unit_test(test_tls_ctx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
