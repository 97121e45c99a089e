/* Unit tests for src/codec/sni: the server name read out of real ClientHellos (the fuzz corpus
 * tests/fuzz/corpus/sni, made by Python's ssl: TLS 1.3 and 1.2, lowercased, the final dot
 * dropped), ERR_NOTFOUND for one without SNI (an IP literal: clients send none), and every
 * refusal: truncated at each byte, not a handshake record, a record too long, a ClientHello
 * longer than its record, a name with a byte names never hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/sni.h"
#include "util/banned.h"

static size_t load(const char *name, uint8_t *buf, size_t size)
{
    const char *root = getenv("FAULTLINE_ROOT");
    char path[800];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/sni/%s", root ? root : ".", name);
    f = fopen(path, "rb");
    assert_non_null(f);
    n = fread(buf, 1, size, f);
    fclose(f);
    return n;
}

static void test_real_hellos(void **state)
{
    uint8_t m[4096];
    char host[SNI_HOST_MAX + 1];
    struct err e = {0};
    size_t n = load("sni", m, sizeof(m)), need;

    (void)state;
    assert_int_equal(sni_record_need(m, n, &need, &e), 0);
    assert_int_equal(need, n);
    assert_int_equal(sni_parse(m, n, host, &e), 0);
    assert_string_equal(host, "pkg.example.org");
    n = load("sni-tls12", m, sizeof(m));
    assert_int_equal(sni_parse(m, n, host, &e), 0);
    assert_string_equal(host, "registry.npmjs.org"); /* sent as "Registry.NPMjs.org." */
    n = load("no-sni", m, sizeof(m));
    assert_int_equal(sni_parse(m, n, host, &e), ERR_NOTFOUND);
    n = load("ip", m, sizeof(m));
    assert_int_equal(sni_parse(m, n, host, &e), ERR_NOTFOUND);
}

static void test_refusals(void **state)
{
    uint8_t m[4096], c[4096];
    char host[SNI_HOST_MAX + 1];
    struct err e = {0};
    size_t n = load("sni", m, sizeof(m)), need;

    (void)state;
    /* every prefix: the header asks for more, then the record is truncated */
    for (size_t k = 0; k < n; k++) {
        assert_int_equal(sni_record_need(m, k, &need, &e), 0);
        assert_int_equal(need, k < 5 ? 5 : n);
        assert_int_not_equal(sni_parse(m, k, host, &e), 0);
    }
    /* not a handshake record: HTTP */
    n = load("http", c, sizeof(c));
    assert_int_equal(sni_record_need(c, n, &need, &e), ERR_PARSE);
    assert_int_equal(sni_parse(c, n, host, &e), ERR_PARSE);
    /* a record over SNI_RECORD_MAX */
    n = load("sni", c, sizeof(c));
    c[3] = 0x48, c[4] = 0x01;
    assert_int_equal(sni_record_need(c, n, &need, &e), ERR_PARSE);
    /* a ClientHello longer than its record: split over records, refused */
    n = load("sni", c, sizeof(c));
    c[6] = 0x01; /* handshake length + 64 KiB */
    assert_int_equal(sni_parse(c, n, host, &e), ERR_UNSUPPORTED);
    /* a byte names never hold in the name */
    n = load("sni", c, sizeof(c));
    uint8_t *p = memmem(c, n, "pkg.example.org", 15);
    assert_non_null(p);
    p[3] = '/';
    assert_int_equal(sni_parse(c, n, host, &e), ERR_PARSE);
    assert_string_not_equal(e.msg, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_hellos),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
