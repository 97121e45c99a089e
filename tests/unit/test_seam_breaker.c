/* Unit tests for src/seam/breaker: the controller-mode circuit breaker, driven by a fake clock
 * (trip once, skip without asking while open, probes every probe_ms, reset with the count). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "seam/breaker.h"
#include "util/banned.h"

static void test_breaker_cycle(void **state)
{
    struct seam_breaker b;
    int64_t now = 1000;

    seam_breaker_init(&b, 250);
    assert_int_equal(seam_breaker_allow(&b), 1);
    assert_int_equal(seam_breaker_wait_ms(&b, now), SEAM_BREAKER_CLOSED);
    assert_int_equal(seam_breaker_probe_due(&b, now), 0); /* closed: nothing to probe */
    assert_int_equal(seam_breaker_reset(&b), 0);

    /* a missed deadline opens it, once */
    assert_int_equal(seam_breaker_trip(&b, now), 1);
    assert_int_equal(seam_breaker_trip(&b, now + 5), 0);
    assert_int_equal(b.trips, 1);
    /* open: every decision is skipped at once, counted */
    for (int i = 0; i < 7; i++)
        assert_int_equal(seam_breaker_allow(&b), 0);
    /* probes: not before probe_ms, then every probe_ms */
    assert_int_equal(seam_breaker_wait_ms(&b, now + 100), 150);
    assert_int_equal(seam_breaker_probe_due(&b, now + 249), 0);
    assert_int_equal(seam_breaker_probe_due(&b, now + 250), 1);
    assert_int_equal(seam_breaker_probe_due(&b, now + 260), 0); /* the next is scheduled */
    assert_int_equal(seam_breaker_wait_ms(&b, now + 260), 240);
    assert_int_equal(seam_breaker_probe_due(&b, now + 500), 1);
    assert_int_equal(seam_breaker_wait_ms(&b, now + 900), 0); /* overdue */
    /* a probe that passed closes it and tells how many went unasked */
    assert_int_equal(seam_breaker_reset(&b), 7);
    assert_int_equal(seam_breaker_allow(&b), 1);
    assert_int_equal(seam_breaker_probe_due(&b, now + 2000), 0);

    /* a second trip starts the count again */
    assert_int_equal(seam_breaker_trip(&b, now + 3000), 1);
    assert_int_equal(seam_breaker_allow(&b), 0);
    assert_int_equal(seam_breaker_reset(&b), 1);
    assert_int_equal(b.trips, 2);
}

static void test_breaker_default_interval(void **state)
{
    struct seam_breaker b;

    seam_breaker_init(&b, 0);
    assert_int_equal(b.probe_ms, 250);
    seam_breaker_trip(&b, 0);
    assert_int_equal(seam_breaker_probe_due(&b, 249), 0);
    assert_int_equal(seam_breaker_probe_due(&b, 250), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_breaker_cycle),
        cmocka_unit_test(test_breaker_default_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
