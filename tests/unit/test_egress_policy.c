/* Unit tests for src/control/egress_policy: the egress allow list's patterns (checked and
 * normalised) and its matching (exact, or by suffix after a leading '*'; no list: all). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "control/egress_policy.h"
#include "util/banned.h"

static void test_no_list_allows_all(void **state)
{
    struct egress_policy p;
    struct err e = {0};

    (void)state;
    assert_int_equal(egress_policy_init(&p, NULL, &e), 0);
    assert_int_equal(p.active, 0);
    assert_int_equal(egress_policy_allows(&p, "anything.example"), 1);
    assert_int_equal(egress_policy_allows(&p, "127.0.0.1"), 1);
}

static void test_match(void **state)
{
    const char *const allow[] = {"Registry.NPMjs.org.", "*.github.com", "10.0.0.7", NULL};
    struct egress_policy p;
    struct err e = {0};

    (void)state;
    assert_int_equal(egress_policy_init(&p, allow, &e), 0);
    assert_int_equal(p.active, 1);
    assert_int_equal(p.nallow, 3);
    assert_string_equal(p.allow[0], "registry.npmjs.org"); /* lowercase, the final dot gone */
    assert_int_equal(egress_policy_allows(&p, "registry.npmjs.org"), 1);
    assert_int_equal(egress_policy_allows(&p, "api.github.com"), 1);
    assert_int_equal(egress_policy_allows(&p, "a.b.github.com"), 1);
    assert_int_equal(egress_policy_allows(&p, "10.0.0.7"), 1);
    /* "*.github.com" needs the dot: the apex and look-alikes are not on the list */
    assert_int_equal(egress_policy_allows(&p, "github.com"), 0);
    assert_int_equal(egress_policy_allows(&p, "evilgithub.com"), 0);
    assert_int_equal(egress_policy_allows(&p, "npmjs.org"), 0);
    assert_int_equal(egress_policy_allows(&p, "registry.npmjs.org.evil.test"), 0);
    assert_int_equal(egress_policy_allows(&p, "xregistry.npmjs.org"), 0);
    assert_int_equal(egress_policy_allows(&p, "10.0.0.70"), 0);
    assert_int_equal(egress_policy_allows(&p, ""), 0);
}

static void test_bad_patterns(void **state)
{
    char out[EGRESS_ALLOW_PATTERN_MAX + 1], big[EGRESS_ALLOW_PATTERN_MAX + 2];
    const char *bad[] = {"", "a b", "a/b", "**.x", "x*", "h@st", "[::1]", "a;b"};
    struct err e = {0};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        memset(&e, 0, sizeof(e));
        assert_int_equal(egress_policy_pattern(bad[i], out, &e), ERR_INVALID);
        assert_true(e.msg[0] != '\0');
    }
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(egress_policy_pattern(big, out, &e), ERR_INVALID);
    big[EGRESS_ALLOW_PATTERN_MAX] = '\0'; /* exactly the limit */
    assert_int_equal(egress_policy_pattern(big, out, &e), 0);
    assert_int_equal(egress_policy_pattern("*", out, &e), 0);
    assert_string_equal(out, "*");
    assert_int_equal(egress_policy_pattern("::1", out, &e), 0);
}

static void test_limits(void **state)
{
    const char *many[EGRESS_ALLOW_MAX + 2];
    const char *const one_bad[] = {"ok.example", "not ok", NULL};
    struct egress_policy p;
    struct err e = {0};

    (void)state;
    for (size_t i = 0; i < EGRESS_ALLOW_MAX + 1; i++)
        many[i] = "h.example";
    many[EGRESS_ALLOW_MAX + 1] = NULL;
    assert_int_equal(egress_policy_init(&p, many, &e), ERR_LIMIT);
    assert_int_equal(egress_policy_allows(&p, "h.example"), 0); /* a failed list allows nothing */
    many[EGRESS_ALLOW_MAX] = NULL;
    assert_int_equal(egress_policy_init(&p, many, &e), 0);
    assert_int_equal(p.nallow, EGRESS_ALLOW_MAX);
    memset(&e, 0, sizeof(e));
    assert_int_equal(egress_policy_init(&p, one_bad, &e), ERR_INVALID);
    assert_non_null(strstr(e.msg, "not ok"));
    assert_int_equal(egress_policy_allows(&p, "ok.example"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_list_allows_all),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_bad_patterns),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
