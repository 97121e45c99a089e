/* Unit tests for src/seam/outq: the bounded queue of serialized events (order, the bound with
 * the oldest dropped and counted, batches as JSON array elements, an item a full buffer
 * cannot take stays queued). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "seam/outq.h"
#include "util/buf.h"
#include "util/banned.h"

static char *item(int i)
{
    char s[32];
    snprintf(s, sizeof(s), "{\"i\":%d}", i);
    return xstrdup(s);
}

static void test_outq_bound(void **state)
{
    struct seam_outq q;
    struct buf b = BUF_INIT;

    seam_outq_init(&q, 3);
    assert_int_equal(seam_outq_take(&q, 10, &b), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(seam_outq_push(&q, item(i)), 0);
    /* full: the oldest goes, counted */
    assert_int_equal(seam_outq_push(&q, item(3)), 1);
    assert_int_equal(seam_outq_push(&q, item(4)), 1);
    assert_int_equal(q.len, 3);
    assert_int_equal(q.dropped, 2);
    buf_addc(&b, '[');
    assert_int_equal(seam_outq_take(&q, 2, &b), 2);
    assert_string_equal(b.data, "[{\"i\":2},{\"i\":3}");
    assert_int_equal(seam_outq_take(&q, 2, &b), 1);
    buf_addc(&b, ']');
    assert_string_equal(b.data, "[{\"i\":2},{\"i\":3},{\"i\":4}]");
    assert_int_equal(q.len, 0);
    /* the ring wraps */
    for (int i = 5; i < 9; i++)
        seam_outq_push(&q, item(i));
    buf_reset(&b);
    assert_int_equal(seam_outq_take(&q, 10, &b), 3);
    assert_string_equal(b.data, "{\"i\":6},{\"i\":7},{\"i\":8}");
    assert_int_equal(q.dropped, 3);
    /* items left are freed by release (ASan checks) */
    seam_outq_push(&q, item(9));
    seam_outq_release(&q);
    buf_release(&b);
}

static void test_outq_buffer_limit(void **state)
{
    struct seam_outq q;
    struct buf b;

    buf_init(&b, 12);
    seam_outq_init(&q, 4);
    seam_outq_push(&q, item(1));
    seam_outq_push(&q, item(2));
    buf_addc(&b, '[');
    /* "[{"i":1}" fits in 12 bytes, ",{"i":2}" does not: it stays queued */
    assert_int_equal(seam_outq_take(&q, 10, &b), 1);
    assert_string_equal(b.data, "[{\"i\":1}");
    assert_int_equal(q.len, 1);
    buf_reset(&b);
    assert_int_equal(seam_outq_take(&q, 10, &b), 1);
    assert_string_equal(b.data, "{\"i\":2}");
    seam_outq_release(&q);
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outq_bound),
        cmocka_unit_test(test_outq_buffer_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
