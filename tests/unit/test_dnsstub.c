/* Unit tests for src/control/dnsstub's answer (dnsstub_reply): an A query gets the stub's
 * loopback address, AAAA and other types NODATA, a failing name NXDOMAIN (and the callback is
 * asked once, with the name as sent), another class REFUSED, and every datagram the stub does
 * not take: FORMERR with the header only (a bad question, two questions), NOTIMP (another
 * opcode), dropped (shorter than a header, oversized, a response). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "control/dnsstub.h"
#include "helpers.h"
#include "util/banned.h"

struct asked {
    int n;
    char last[DNS_NAME_MAX + 1];
    const char *fail; /* the name that fails */
};

static int fail_cb(void *arg, const struct dns_query *q)
{
    struct asked *a = arg;

    a->n++;
    snprintf(a->last, sizeof(a->last), "%s", q->name);
    return a->fail && strcmp(q->name, a->fail) == 0;
}

static unsigned rcode(const uint8_t *out)
{
    return out[3] & 0xF;
}

static unsigned ancount(const uint8_t *out)
{
    return (unsigned)out[6] << 8 | out[7];
}

static void test_a_gets_loopback(void **state)
{
    uint8_t m[600], out[DNS_MSG_MAX];
    struct dnsstub_result r;
    struct asked a = {0};
    size_t n = ut_dns_query(m, "Pkg.Example.org", DNS_TYPE_A), len;

    (void)state;
    len = dnsstub_reply(m, n, fail_cb, &a, out, sizeof(out), &r);
    assert_int_equal(len, n + 16);
    assert_int_equal(out[0], 0xBE);
    assert_int_equal(out[1], 0xEF);
    assert_true(out[2] & 0x80); /* QR */
    assert_int_equal(rcode(out), DNS_RCODE_NOERROR);
    assert_int_equal(ancount(out), 1);
    const uint8_t addr[4] = {127, 0, 0, 1};
    assert_memory_equal(out + len - 4, addr, 4);
    assert_int_equal(r.parsed, 1);
    assert_string_equal(r.q.name, "Pkg.Example.org");
    assert_string_equal(r.answer, "address");
    assert_int_equal(r.faulted, 0);
    assert_string_equal(r.error, "");
    assert_int_equal(a.n, 1);
    assert_string_equal(a.last, "Pkg.Example.org");
    /* no callback: nothing fails */
    assert_int_equal(dnsstub_reply(m, n, NULL, NULL, out, sizeof(out), &r), n + 16);
}

static void test_aaaa_and_others_nodata(void **state)
{
    uint8_t m[600], out[DNS_MSG_MAX];
    struct dnsstub_result r;
    unsigned types[] = {DNS_TYPE_AAAA, 15 /* MX */, 65 /* HTTPS */, 16 /* TXT */};

    (void)state;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        size_t n = ut_dns_query(m, "pkg.example.org", types[i]);
        assert_int_equal(dnsstub_reply(m, n, NULL, NULL, out, sizeof(out), &r), n);
        assert_int_equal(rcode(out), DNS_RCODE_NOERROR);
        assert_int_equal(ancount(out), 0);
        assert_string_equal(r.answer, "nodata");
        assert_int_equal(r.q.qtype, types[i]);
    }
}

static void test_failing_name_nxdomain(void **state)
{
    uint8_t m[600], out[DNS_MSG_MAX];
    struct dnsstub_result r;
    struct asked a = {.fail = "down.example.org"};
    size_t n = ut_dns_query(m, "down.example.org", DNS_TYPE_A);

    (void)state;
    assert_int_equal(dnsstub_reply(m, n, fail_cb, &a, out, sizeof(out), &r), n);
    assert_int_equal(rcode(out), DNS_RCODE_NXDOMAIN);
    assert_int_equal(ancount(out), 0);
    assert_string_equal(r.answer, "nxdomain");
    assert_int_equal(r.faulted, 1);
    /* AAAA of the same name: NXDOMAIN too (the callback decides for every type) */
    n = ut_dns_query(m, "down.example.org", DNS_TYPE_AAAA);
    assert_int_equal(dnsstub_reply(m, n, fail_cb, &a, out, sizeof(out), &r), n);
    assert_int_equal(rcode(out), DNS_RCODE_NXDOMAIN);
    assert_int_equal(a.n, 2);
    /* another name still answers */
    n = ut_dns_query(m, "up.example.org", DNS_TYPE_A);
    assert_int_equal(dnsstub_reply(m, n, fail_cb, &a, out, sizeof(out), &r), n + 16);
    assert_int_equal(r.faulted, 0);
}

static void test_other_class_refused(void **state)
{
    uint8_t m[600], out[DNS_MSG_MAX];
    struct dnsstub_result r;
    struct asked a = {0};
    size_t n = ut_dns_query(m, "version.bind", 16);

    (void)state;
    m[n - 1] = 3; /* CHAOS */
    assert_int_equal(dnsstub_reply(m, n, fail_cb, &a, out, sizeof(out), &r), n);
    assert_int_equal(rcode(out), DNS_RCODE_REFUSED);
    assert_string_equal(r.answer, "refused");
    assert_int_equal(a.n, 0); /* never reaches the plan */
}

static void test_refusals(void **state)
{
    uint8_t m[DNS_MSG_MAX + 100], out[DNS_MSG_MAX];
    struct dnsstub_result r;
    struct asked a = {0};
    size_t n = ut_dns_query(m, "pkg.example.org", DNS_TYPE_A);

    (void)state;
    /* truncated inside the question: FORMERR, header only, the id kept */
    assert_int_equal(dnsstub_reply(m, n - 3, fail_cb, &a, out, sizeof(out), &r), 12);
    assert_int_equal(rcode(out), DNS_RCODE_FORMERR);
    assert_int_equal(out[0], 0xBE);
    assert_int_equal(out[5], 0); /* no question */
    assert_string_equal(r.answer, "formerr");
    assert_int_equal(r.parsed, 0);
    assert_string_not_equal(r.error, "");
    /* every shorter prefix: dropped below the header, FORMERR from it */
    for (size_t k = 0; k < n; k++) {
        size_t len = dnsstub_reply(m, k, fail_cb, &a, out, sizeof(out), &r);
        if (k < 12) {
            assert_int_equal(len, 0);
            assert_string_equal(r.answer, "dropped");
        } else {
            assert_int_equal(len, 12);
            assert_string_equal(r.answer, "formerr");
        }
    }
    /* two questions: FORMERR */
    m[5] = 2;
    assert_int_equal(dnsstub_reply(m, n, fail_cb, &a, out, sizeof(out), &r), 12);
    assert_int_equal(rcode(out), DNS_RCODE_FORMERR);
    m[5] = 1;
    /* opcode 2 (STATUS): NOTIMP */
    m[2] = 0x10 | 0x01;
    assert_int_equal(dnsstub_reply(m, n, fail_cb, &a, out, sizeof(out), &r), 12);
    assert_int_equal(rcode(out), DNS_RCODE_NOTIMP);
    assert_string_equal(r.answer, "notimp");
    /* a response: dropped (never answered: no loops between two servers) */
    m[2] = 0x81;
    assert_int_equal(dnsstub_reply(m, n, fail_cb, &a, out, sizeof(out), &r), 0);
    assert_string_equal(r.answer, "dropped");
    m[2] = 0x01;
    /* oversized: dropped */
    memset(m + n, 0, sizeof(m) - n);
    assert_int_equal(dnsstub_reply(m, DNS_MSG_MAX + 1, fail_cb, &a, out, sizeof(out), &r), 0);
    assert_string_equal(r.answer, "dropped");
    assert_string_not_equal(r.error, "");
    /* a compression loop: FORMERR */
    n = 12;
    m[n++] = 0xC0, m[n++] = 12;
    m[n++] = 0, m[n++] = 1, m[n++] = 0, m[n++] = 1;
    assert_int_equal(dnsstub_reply(m, n, fail_cb, &a, out, sizeof(out), &r), 12);
    assert_int_equal(rcode(out), DNS_RCODE_FORMERR);
    assert_int_equal(a.n, 0); /* nothing that failed to parse reached the plan */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_gets_loopback),
        cmocka_unit_test(test_aaaa_and_others_nodata),
        cmocka_unit_test(test_failing_name_nxdomain),
        cmocka_unit_test(test_other_class_refused),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
