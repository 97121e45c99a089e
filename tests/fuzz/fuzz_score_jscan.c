/*
 * fuzz_score_jscan: differential target. jscan_object must accept exactly the inputs that the
 * events reader accepts (no raw NUL, then json_loadb(.., JSON_ALLOW_NUL) gives an object) (the
 * events reader's rule for a well-formed line), and on those, every top-level member jansson sees
 * must come out of jscan_get with the same type and value. Any disagreement aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "score/jscan.h"
#include "util/banned.h"

static void check_member(const char *key, json_t *jv, const struct jscan_val *v)
{
    char s[4096];
    int64_t i;
    double d;

    if (v == NULL) {
        fprintf(stderr, "jscan lost member '%s'\n", key);
        abort();
    }
    switch (json_typeof(jv)) {
    case JSON_STRING:
        if (v->type != JSCAN_STRING)
            abort();
        if (!memchr(json_string_value(jv), 0, json_string_length(jv)) &&
            !jscan_str_eq(v, json_string_value(jv)))
            abort();
        if (json_string_length(jv) < sizeof(s)) {
            long n = jscan_str_copy(v, s, sizeof(s));
            if (n != (long)json_string_length(jv) || memcmp(s, json_string_value(jv), (size_t)n))
                abort();
        }
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
    case JSON_OBJECT: {
        struct jscan_iter it;
        struct jscan_val k, e;
        size_t n = 0;
        if (v->type != JSCAN_OBJECT)
            abort();
        jscan_iter_init(&it, v);
        while (jscan_iter_next(&it, &k, &e))
            n++;
        if (n < json_object_size(jv)) /* duplicates collapse in jansson, never the reverse */
            abort();
        break;
    }
    case JSON_ARRAY: {
        struct jscan_iter it;
        struct jscan_val e;
        size_t n = 0;
        if (v->type != JSCAN_ARRAY)
            abort();
        jscan_iter_init(&it, v);
        while (jscan_iter_next(&it, NULL, &e)) {
            json_t *x = json_array_get(jv, n);
            if (x && json_is_string(x) && !memchr(json_string_value(x), 0, json_string_length(x)) &&
                !jscan_str_eq(&e, json_string_value(x)))
                abort();
            n++;
        }
        if (n != json_array_size(jv))
            abort();
        break;
    }
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
    static struct jscan_obj o;
    json_error_t jerr;
    /* the events reader's rule: a raw NUL rejects the line, else jansson decides */
    json_t *j =
        memchr(data, 0, size) ? NULL : json_loadb((const char *)data, size, JSON_ALLOW_NUL, &jerr);
    int want = j != NULL && json_is_object(j);
    int got = jscan_object(&o, (const char *)data, size) == 0;

    if (want != got) {
        fprintf(stderr, "disagreement: jansson %s (%s), jscan %s on %zu bytes\n",
                want ? "accepts" : "rejects", j ? "" : "(rejected)", got ? "accepts" : "rejects",
                size);
        abort();
    }
    if (want) {
        const char *key;
        json_t *jv;
        struct jscan_obj *copy = malloc(sizeof(*copy));
        struct jscan_val top = {JSCAN_OBJECT, 0, o.p, o.n};
        json_object_foreach(j, key, jv)
        {
            struct jscan_val v;
            check_member(key, jv, jscan_get(&o, key, &v) ? &v : NULL);
        }
        /* the same members through the no-revalidation path */
        if (jscan_object_of(copy, &top) != 0 || copy->total != o.total)
            abort();
        json_object_foreach(j, key, jv)
        {
            struct jscan_val v;
            check_member(key, jv, jscan_get(copy, key, &v) ? &v : NULL);
        }
        free(copy);
        for (size_t i = 0; i < o.count; i++) {
            size_t n = 0;
            jscan_walk(&o.m[i].val, count_scalar, &n);
        }
    }
    json_decref(j);
    return 0;
}
