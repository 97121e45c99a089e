/*
 * fuzz_score_jscan: differential target for jscan's readers. The input becomes the value of a
 * field of an event line, {"kind":"k","v":INPUT}; when the events view accepts the line (the
 * events reader's rule), everything jscan reads of that value (types, decoded strings, integers,
 * reals, booleans, object members by key with the last duplicate winning, array elements, at any
 * depth) must equal what jansson parsed from the same line, and walking it must not crash.
 * Any disagreement aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "events/view.h"
#include "score/jscan.h"
#include "util/buf.h"
#include "util/banned.h"

static void check(json_t *jv, const struct jscan_val *v);

static void check_string(json_t *jv, const struct jscan_val *v)
{
    size_t n = json_string_length(jv);
    char *s = malloc(n + 1);
    if (v->type != JSCAN_STRING || jscan_str_copy(v, s, n + 1) != (long)n ||
        memcmp(s, json_string_value(jv), n) != 0)
        abort();
    if (!memchr(json_string_value(jv), 0, n) && !jscan_str_eq(v, json_string_value(jv)))
        abort();
    free(s);
}

static void check_object(json_t *jv, const struct jscan_val *v)
{
    struct jscan_obj *o = malloc(sizeof(*o));
    const char *key;
    json_t *x;

    if (v->type != JSCAN_OBJECT || jscan_object_of(o, v) != 0)
        abort();
    if (o->total < json_object_size(jv)) /* duplicates collapse in jansson, never the reverse */
        abort();
    json_object_foreach(jv, key, x)
    {
        struct jscan_val m;
        if (!jscan_get(o, key, &m))
            abort();
        check(x, &m);
    }
    free(o);
}

static void check_array(json_t *jv, const struct jscan_val *v)
{
    struct jscan_iter it;
    struct jscan_val e;
    size_t n = 0;

    if (v->type != JSCAN_ARRAY)
        abort();
    jscan_iter_init(&it, v);
    while (jscan_iter_next(&it, NULL, &e)) {
        json_t *x = json_array_get(jv, n++);
        if (x == NULL)
            abort();
        check(x, &e);
    }
    if (n != json_array_size(jv))
        abort();
}

static void check(json_t *jv, const struct jscan_val *v)
{
    int64_t i;
    double d;

    switch (json_typeof(jv)) {
    case JSON_STRING:
        check_string(jv, v);
        break;
    case JSON_INTEGER:
        if (jscan_int(v, &i) != 0 || i != json_integer_value(jv))
            abort();
        break;
    case JSON_REAL:
        if (v->type != JSCAN_REAL || jscan_number(v, &d) != 0 || d != json_real_value(jv))
            abort();
        break;
    case JSON_TRUE:
        if (jscan_bool(v) != 1)
            abort();
        break;
    case JSON_FALSE:
        if (jscan_bool(v) != 0)
            abort();
        break;
    case JSON_NULL:
        if (v->type != JSCAN_NULL)
            abort();
        break;
    case JSON_OBJECT:
        check_object(jv, v);
        break;
    case JSON_ARRAY:
        check_array(jv, v);
        break;
    }
}

static int count_scalar(void *ctx, enum jscan_type type, const char *p, size_t n, int more)
{
    (void)type, (void)p, (void)n, (void)more;
    (*(size_t *)ctx)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct events_view view;
    struct buf line = BUF_INIT;
    struct jscan_val v;
    const char *raw;
    size_t n, scalars = 0;

    buf_adds(&line, "{\"kind\":\"k\",\"v\":");
    buf_add(&line, data, size);
    buf_addc(&line, '}');
    if (events_view_parse(&view, line.data, line.len) == 0 &&
        (raw = events_view_raw(&view, "v", &n)) != NULL) {
        json_t *j = json_loadb(line.data, line.len, JSON_ALLOW_NUL, NULL);
        /* Whether the view agrees with jansson is tests/fuzz/fuzz_events.c's question; here
         * only what jscan reads of an accepted line is checked. */
        if (j == NULL)
            abort(); /* the view accepted what jansson rejects */
        jscan_val_of(raw, n, &v);
        check(json_object_get(j, "v"), &v);
        jscan_walk(&v, count_scalar, &scalars);
        json_decref(j);
    }
    buf_release(&line);
    return 0;
}
