/* Unit tests for src/codec/dns: a query parsed (case kept, EDNS records ignored), replies built
 * byte for byte (A, AAAA, NODATA, NXDOMAIN, header only), and every refusal: truncated at each
 * byte, pointer loops and forward pointers, reserved label types, names too long, oversized
 * messages, responses, other opcodes and question counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "codec/dns.h"
#include "helpers.h"
#include "util/banned.h"

static void test_parse_and_answer_a(void **state)
{
    uint8_t m[600], out[600];
    struct dns_query q;
    struct err e = {0};
    size_t n = ut_dns_query(m, "Registry.NPMjs.org", DNS_TYPE_A);
    const uint8_t lo[4] = {127, 0, 0, 1};
    long r;

    (void)state;
    assert_int_equal(dns_parse_query(m, n, &q, &e), 0);
    assert_string_equal(q.name, "Registry.NPMjs.org");
    assert_int_equal(q.id, 0xBEEF);
    assert_int_equal(q.qtype, DNS_TYPE_A);
    assert_int_equal(q.qclass, DNS_CLASS_IN);
    r = dns_build_reply(&q, 1, DNS_RCODE_NOERROR, lo, 4, out, sizeof(out));
    assert_int_equal(r, (long)n + 16);
    /* header: id, QR AA RD RA, rcode 0; 1 question, 1 answer */
    const uint8_t head[12] = {0xBE, 0xEF, 0x85, 0x80, 0, 1, 0, 1, 0, 0, 0, 0};
    assert_memory_equal(out, head, 12);
    assert_memory_equal(out + 12, m + 12, n - 12); /* the question, as asked */
    const uint8_t ans[16] = {0xC0, 12, 0, 1, 0, 1, 0, 0, 0, DNS_TTL, 0, 4, 127, 0, 0, 1};
    assert_memory_equal(out + n, ans, 16);
    /* an EDNS OPT record after the question is ignored */
    m[11] = 1;
    const uint8_t opt[11] = {0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0};
    memcpy(m + n, opt, sizeof(opt));
    assert_int_equal(dns_parse_query(m, n + sizeof(opt), &q, &e), 0);
    /* too small an output */
    assert_int_equal(dns_build_reply(&q, 1, 0, lo, 4, out, (size_t)r - 1), ERR_LIMIT);
    assert_int_equal(dns_build_reply(&q, 1, 0, lo, 4, out, 11), ERR_LIMIT);
}

static void test_aaaa_nodata_nxdomain(void **state)
{
    uint8_t m[600], out[600];
    struct dns_query q;
    struct err e = {0};
    const uint8_t v6[16] = {[15] = 1}, lo[4] = {127, 0, 0, 1};
    size_t n = ut_dns_query(m, "a.b", DNS_TYPE_AAAA);
    long r;

    (void)state;
    assert_int_equal(dns_parse_query(m, n, &q, &e), 0);
    r = dns_build_reply(&q, 1, 0, v6, 16, out, sizeof(out));
    assert_int_equal(r, (long)n + 28);
    assert_int_equal(out[7], 1);
    assert_int_equal(out[n + 11], 16);
    assert_memory_equal(out + n + 12, v6, 16);
    /* an A address for an AAAA question: no answer (NODATA) */
    assert_int_equal(dns_build_reply(&q, 1, 0, lo, 4, out, sizeof(out)), (long)n);
    assert_int_equal(out[7], 0);
    /* MX: no answer */
    n = ut_dns_query(m, "a.b", 15);
    assert_int_equal(dns_parse_query(m, n, &q, &e), 0);
    assert_int_equal(dns_build_reply(&q, 1, 0, lo, 4, out, sizeof(out)), (long)n);
    /* NXDOMAIN */
    n = ut_dns_query(m, "pkg.blocked.test", DNS_TYPE_A);
    assert_int_equal(dns_parse_query(m, n, &q, &e), 0);
    assert_int_equal(dns_build_reply(&q, 1, DNS_RCODE_NXDOMAIN, NULL, 0, out, sizeof(out)),
                     (long)n);
    assert_int_equal(out[3] & 0xF, DNS_RCODE_NXDOMAIN);
    assert_int_equal(out[7], 0);
    /* header only (a query that did not parse) */
    assert_int_equal(dns_build_reply(&q, 0, DNS_RCODE_FORMERR, NULL, 0, out, sizeof(out)), 12);
    assert_int_equal(out[3] & 0xF, DNS_RCODE_FORMERR);
    assert_int_equal(out[5], 0);
    /* the root */
    n = ut_dns_query(m, "", DNS_TYPE_A);
    assert_int_equal(dns_parse_query(m, n, &q, &e), 0);
    assert_string_equal(q.name, "");
    assert_int_equal(dns_build_reply(&q, 1, 0, lo, 4, out, sizeof(out)), (long)n + 16);
}

static void refused(const uint8_t *m, size_t n, int code, const char *what)
{
    struct dns_query q;
    struct err e = {0};
    int rc = dns_parse_query(m, n, &q, &e);

    if (rc != code)
        fail_msg("%s: got %d, want %d (%s)", what, rc, code, e.msg);
    assert_true(e.msg[0] != '\0');
}

static void test_refusals(void **state)
{
    uint8_t m[DNS_MSG_MAX + 10];
    size_t n = ut_dns_query(m, "registry.npmjs.org", DNS_TYPE_A);

    (void)state;
    for (size_t i = 0; i < n; i++)
        refused(m, i, ERR_PARSE, "truncated");
    refused(m, DNS_MSG_MAX + 1, ERR_LIMIT, "oversized");
    m[2] |= 0x80;
    refused(m, n, ERR_UNSUPPORTED, "a response");
    m[2] = 0x01 | (2 << 3);
    refused(m, n, ERR_UNSUPPORTED, "opcode STATUS");
    m[2] = 0x01;
    m[5] = 0;
    refused(m, n, ERR_UNSUPPORTED, "no question");
    m[5] = 2;
    refused(m, n, ERR_UNSUPPORTED, "two questions");
    m[5] = 1;

    /* a pointer to itself, a pointer forwards, a two-pointer loop */
    uint8_t p[32] = {0xBE, 0xEF, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1};
    refused(p, 18, ERR_PARSE, "self pointer");
    p[13] = 20;
    refused(p, 24, ERR_PARSE, "forward pointer");
    uint8_t l[40] = {0xBE, 0xEF, 1,   0,    0,  1,    0,  0, 0, 0, 0,
                     0,    1,    'a', 0xC0, 16, 0xC0, 14, 0, 1, 0, 1};
    refused(l, 22, ERR_PARSE, "pointer loop");
    /* reserved label types 0x40 and 0x80 */
    uint8_t r[32] = {0xBE, 0xEF, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 1, 0, 1};
    refused(r, 18, ERR_PARSE, "label type 01");
    r[12] = 0x80;
    refused(r, 18, ERR_PARSE, "label type 10");
    /* a label byte no name holds */
    uint8_t b[32] = {0xBE, 0xEF, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, '.', 0, 0, 1, 0, 1};
    refused(b, 19, ERR_PARSE, "a dot in a label");
    b[13] = 0;
    refused(b, 19, ERR_PARSE, "a NUL in a label");
    /* a name over 253 characters: four labels of 63 and one of 2 */
    uint8_t big[400];
    size_t k = 12;
    memcpy(big, m, 12);
    for (int i = 0; i < 4; i++) {
        big[k++] = 63;
        memset(big + k, 'x', 63);
        k += 63;
    }
    big[k++] = 2, big[k++] = 'y', big[k++] = 'y', big[k++] = 0;
    big[k++] = 0, big[k++] = 1, big[k++] = 0, big[k++] = 1;
    refused(big, k, ERR_PARSE, "a name of 254 characters");
    /* 253 is fine */
    char name[300];
    memset(name, 'x', 253);
    name[63] = name[127] = name[191] = '.';
    name[253] = '\0';
    struct dns_query q;
    struct err e = {0};
    k = ut_dns_query(big, name, DNS_TYPE_A);
    assert_int_equal(dns_parse_query(big, k, &q, &e), 0);
    assert_int_equal(strlen(q.name), 253);
    /* a pointer back into the header is followed (and there refused: a zero count is no
     * label, a 0 flags byte ends the name) without reading past the message */
    uint8_t h[32] = {0xBE, 0xEF, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 3, 0, 1, 0, 1};
    assert_int_equal(dns_parse_query(h, 18, &q, &e), 0);
    assert_string_equal(q.name, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_answer_a),
        cmocka_unit_test(test_aaaa_nodata_nxdomain),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
