/* Unit tests for src/codec/jsonrpc: framing with a line limit, the skim, classification, id keys
 * and the per-direction id map, message builders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/jsonrpc.h"
#include "events/view.h"
#include "util/err.h"
#include "util/banned.h"

/* Collects frames as "L:<line>" / "T:<len>:<id>" entries joined by '|'. */
static void drain(struct jsonrpc_framer *f, struct buf *out)
{
    const char *line;
    size_t len;
    enum jsonrpc_frame k;

    while ((k = jsonrpc_framer_next(f, &line, &len)) != JSONRPC_FRAME_NONE) {
        if (k == JSONRPC_FRAME_LINE) {
            buf_adds(out, "L:");
            buf_add(out, line, len);
        } else {
            buf_addf(out, "T:%zu:%s", len, f->skim.has_id ? f->skim.id : "-");
        }
        buf_addc(out, '|');
    }
}

static void test_framer_lines_across_feeds(void **state)
{
    struct jsonrpc_framer f;
    struct buf out = BUF_INIT;
    const char *rest;
    size_t held;

    jsonrpc_framer_init(&f, 100);
    jsonrpc_framer_feed(&f, "{\"a\":1}\n{\"b\"", 12);
    drain(&f, &out);
    assert_string_equal(out.data, "L:{\"a\":1}|");
    jsonrpc_framer_feed(&f, ":2}\r\n\n", 6);
    drain(&f, &out);
    assert_string_equal(out.data, "L:{\"a\":1}|L:{\"b\":2}\r|L:|");
    /* Byte by byte gives the same lines. */
    buf_reset(&out);
    for (const char *p = "x\nyz\n"; *p; p++) {
        jsonrpc_framer_feed(&f, p, 1);
        drain(&f, &out);
    }
    assert_string_equal(out.data, "L:x|L:yz|");
    jsonrpc_framer_feed(&f, "partial", 7);
    drain(&f, &out);
    assert_int_equal(jsonrpc_framer_finish(&f, &rest, &held), 7);
    assert_int_equal(held, 7);
    assert_memory_equal(rest, "partial", 7);
    assert_int_equal(jsonrpc_framer_finish(&f, &rest, &held), 0);
    jsonrpc_framer_release(&f);
    buf_release(&out);
}

static void test_framer_line_limit(void **state)
{
    struct jsonrpc_framer f;
    struct buf out = BUF_INIT, big = BUF_INIT;
    const char *rest;
    size_t held;

    jsonrpc_framer_init(&f, 16);
    /* Exactly at the limit passes. */
    jsonrpc_framer_feed(&f, "0123456789abcdef\n", 17);
    drain(&f, &out);
    assert_string_equal(out.data, "L:0123456789abcdef|");
    /* Over the limit, in pieces, with the id at the end as the TypeScript SDK writes it. */
    buf_reset(&out);
    buf_adds(&big, "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"");
    for (int i = 0; i < 1000; i++)
        buf_adds(&big, "xx\\\"}{[");
    buf_adds(&big, "\"}]},\"jsonrpc\":\"2.0\",\"id\":42}\n{\"ok\":1}\n");
    for (size_t i = 0; i < big.len; i += 10) {
        jsonrpc_framer_feed(&f, big.data + i, big.len - i < 10 ? big.len - i : 10);
        drain(&f, &out);
        /* Memory stays bounded while the long line streams through. */
        assert_true(f.in.len - f.start <= 16 + 10);
    }
    assert_int_equal(f.skim.has_result, 1);
    assert_int_equal(f.skim.has_error, 0);
    {
        char want[64];
        snprintf(want, sizeof(want), "T:%zu:42|L:{\"ok\":1}|", big.len - 10);
        assert_string_equal(out.data, want);
    }
    /* An over-long unterminated line at EOF reports its full length and holds nothing. */
    buf_reset(&out);
    jsonrpc_framer_feed(&f, "{\"id\":\"abc\",\"method\":\"tools/call\",\"params\":{}", 45);
    drain(&f, &out);
    assert_string_equal(out.data, "");
    assert_int_equal(jsonrpc_framer_finish(&f, &rest, &held), 45);
    assert_null(rest);
    assert_int_equal(held, 0);
    assert_int_equal(f.skim.has_id, 1);
    assert_string_equal(f.skim.id, "\"abc\"");
    assert_string_equal(f.skim.method, "tools/call");
    jsonrpc_framer_release(&f);
    buf_release(&out);
    buf_release(&big);
}

static void skim_str(struct jsonrpc_skim *s, const char *t)
{
    jsonrpc_skim_feed(s, t, strlen(t));
}

static void test_skim(void **state)
{
    struct jsonrpc_skim s;
    json_t *id;

    jsonrpc_skim_init(&s);
    skim_str(&s, " { \"params\" : {\"id\": 9, \"x\": [\"}\"]}, \"id\" : \"a\\\"b\" , ");
    skim_str(&s, "\"method\":\"ping\"}");
    assert_int_equal(s.is_object, 1);
    assert_int_equal(s.done, 1);
    assert_int_equal(s.broken, 0);
    assert_string_equal(s.method, "ping");
    id = jsonrpc_skim_id(&s);
    assert_non_null(id);
    assert_string_equal(json_string_value(id), "a\"b");
    json_decref(id);

    jsonrpc_skim_init(&s);
    skim_str(&s, "{\"id\":-17,\"error\":{}}");
    id = jsonrpc_skim_id(&s);
    assert_int_equal(json_integer_value(id), -17);
    assert_int_equal(s.has_error, 1);
    json_decref(id);

    /* Structured ids and garbage give no id. */
    jsonrpc_skim_init(&s);
    skim_str(&s, "{\"id\":{\"a\":1}}");
    assert_null(jsonrpc_skim_id(&s));
    jsonrpc_skim_init(&s);
    skim_str(&s, "[1,2]");
    assert_int_equal(s.is_array, 1);
    assert_null(jsonrpc_skim_id(&s));
    jsonrpc_skim_init(&s);
    skim_str(&s, "{\"id\" 5}");
    assert_int_equal(s.broken, 1);
    assert_null(jsonrpc_skim_id(&s));
}

static enum jsonrpc_kind kind_of(const char *line, unsigned *flags)
{
    struct jsonrpc_msg m;
    enum jsonrpc_kind k = jsonrpc_parse(line, strlen(line), &m);
    if (flags)
        *flags = m.flags;
    jsonrpc_msg_release(&m);
    return k;
}

static void test_classify(void **state)
{
    unsigned fl;
    struct jsonrpc_msg m;

    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &fl),
                     JSONRPC_REQUEST);
    assert_int_equal(fl, 0);
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &fl),
                     JSONRPC_NOTIFICATION);
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}", &fl),
                     JSONRPC_RESPONSE);
    assert_int_equal(
        kind_of("{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32601,\"message\":\"no\"}}",
                &fl),
        JSONRPC_ERROR);
    assert_int_equal(fl, 0);
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":1}}", &fl),
                     JSONRPC_ERROR);
    assert_int_equal(fl, JSONRPC_F_NULL_ID | JSONRPC_F_BAD_ERROR);
    assert_int_equal(kind_of("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}]", NULL),
                     JSONRPC_BATCH);
    assert_int_equal(kind_of("  \r", NULL), JSONRPC_EMPTY);
    assert_int_equal(kind_of("Starting server...", NULL), JSONRPC_NOT_JSON);
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1", NULL), JSONRPC_NOT_JSON);
    assert_int_equal(kind_of("{\"hello\":1}", NULL), JSONRPC_NOT_RPC);
    assert_int_equal(kind_of("[]", NULL), JSONRPC_NOT_RPC);
    assert_int_equal(kind_of("42", NULL), JSONRPC_NOT_RPC);
    assert_int_equal(kind_of("{\"id\":1,\"method\":7}", NULL), JSONRPC_NOT_RPC);
    assert_int_equal(kind_of("{\"id\":[1],\"method\":\"x\"}", NULL), JSONRPC_NOT_RPC);
    assert_int_equal(kind_of("{\"id\":1,\"result\":1,\"error\":{}}", NULL), JSONRPC_NOT_RPC);
    assert_int_equal(kind_of("{\"result\":{}}", NULL), JSONRPC_NOT_RPC);
    assert_int_equal(kind_of("{\"id\":true,\"result\":{}}", NULL), JSONRPC_NOT_RPC);
    /* Soft violations keep the class. */
    assert_int_equal(kind_of("{\"id\":1,\"method\":\"x\",\"params\":3}", &fl), JSONRPC_REQUEST);
    assert_int_equal(fl, JSONRPC_F_NO_VERSION | JSONRPC_F_BAD_PARAMS);
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}", &fl),
                     JSONRPC_REQUEST);
    assert_int_equal(fl, JSONRPC_F_NULL_ID);
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"result\":{}}", &fl),
                     JSONRPC_RESPONSE);
    assert_int_equal(fl, JSONRPC_F_REAL_ID);
    /* An integer too big for int64 still parses (as a real). */
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":123456789012345678901234567890}}", NULL),
                     JSONRPC_RESPONSE);
    /* Fields are reachable. */
    assert_int_equal(jsonrpc_parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}",
                                   71, &m),
                     JSONRPC_REQUEST);
    assert_string_equal(m.method, "tools/call");
    assert_int_equal(json_integer_value(m.id), 7);
    assert_string_equal(json_string_value(json_object_get(m.params, "name")), "echo");
    jsonrpc_msg_release(&m);
    assert_int_equal(jsonrpc_parse("{\"a\":", 5, &m), JSONRPC_NOT_JSON);
    assert_non_null(strstr(m.why, "column"));
    jsonrpc_msg_release(&m);
    assert_string_equal(jsonrpc_kind_name(JSONRPC_BATCH), "batch");
}

/* What JSON.parse accepts and jansson refuses (issue 9): a lone surrogate, a byte that is not
 * UTF-8, a number past a double, nesting past 2048. */
static char *deep(const char *head, int levels, const char *tail)
{
    struct buf b = BUF_INIT;
    buf_adds(&b, head);
    for (int i = 0; i < levels; i++)
        buf_addc(&b, '[');
    for (int i = 0; i < levels; i++)
        buf_addc(&b, ']');
    buf_adds(&b, tail);
    return b.data;
}

static enum jsonrpc_kind lax(const char *t, struct jsonrpc_msg *m)
{
    return jsonrpc_parse_lax(t, strlen(t), m);
}

static void test_lax_scan(void **state)
{
    const char *texts[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"cut "
        "\\ud83d\"}]}}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\xff"
        "b\"}]}}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"structuredContent\":{\"x\":1e400}}}",
    };
    struct jsonrpc_lax lx;
    struct jsonrpc_span sp;
    struct jsonrpc_msg m;
    char *d = deep("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"x\":", 3000, "}}");
    json_t *v;

    for (size_t i = 0; i < 4; i++) {
        const char *t = i < 3 ? texts[i] : d;
        /* jansson refuses it: that was the bug. */
        assert_int_equal(jsonrpc_parse(t, strlen(t), &m), JSONRPC_NOT_JSON);
        jsonrpc_msg_release(&m);
        assert_int_equal(jsonrpc_lax_scan(t, strlen(t), &lx), 0);
        assert_int_equal(lx.type, 'o');
        assert_int_equal(lx.id.type, 'n');
        assert_int_equal(lx.result.type, 'o');
        assert_int_equal(lx.method.type, 0);
        assert_int_equal(jsonrpc_parse_lax(t, strlen(t), &m), JSONRPC_RESPONSE);
        assert_true(m.flags & JSONRPC_F_OPAQUE);
        assert_null(m.root);
        assert_int_equal(json_integer_value(m.id), 3);
        assert_int_equal(m.flags & JSONRPC_F_NO_VERSION, 0);
        jsonrpc_msg_release(&m);
    }
    /* A request, with its members found by the scan. */
    {
        const char *req = "{\"params\":{\"name\":\"echo\",\"arguments\":{\"m\":\"\\udc00\"}},"
                          "\"method\":\"tools/call\",\"id\":\"a\",\"jsonrpc\":\"2.0\"}";
        const char *keys[] = {"arguments", "m", NULL};
        assert_int_equal(jsonrpc_parse_lax(req, strlen(req), &m), JSONRPC_REQUEST);
        assert_string_equal(m.method, "tools/call");
        assert_string_equal(json_string_value(m.id), "a");
        assert_int_equal(jsonrpc_lax_member(req, &m.lax.params, "name", &sp), 1);
        v = jsonrpc_lax_value(req, &sp);
        assert_string_equal(json_string_value(v), "echo");
        json_decref(v);
        assert_int_equal(jsonrpc_lax_path(req, &m.lax.params, keys, &sp), 1);
        assert_int_equal(sp.type, 's');
        assert_null(jsonrpc_lax_value(req, &sp)); /* the lone surrogate jansson cannot hold */
        assert_int_equal(jsonrpc_lax_member(req, &m.lax.params, "nope", &sp), 0);
        jsonrpc_msg_release(&m);
    }
    /* Error replies, notifications, a batch, an id nobody can hold. */
    assert_int_equal(lax("{\"id\":1,\"error\":{\"code\":-1,\"message\":\"\\ud800\"}}", &m),
                     JSONRPC_ERROR);
    assert_int_equal(m.flags & JSONRPC_F_BAD_ERROR, 0);
    assert_true(m.flags & JSONRPC_F_NO_VERSION);
    jsonrpc_msg_release(&m);
    assert_int_equal(lax("{\"method\":\"n\",\"params\":{\"x\":1e999}}", &m),
                     JSONRPC_NOTIFICATION);
    assert_null(m.id);
    jsonrpc_msg_release(&m);
    assert_int_equal(lax("[{\"id\":1,\"result\":1e999}]", &m), JSONRPC_BATCH);
    assert_true(m.flags & JSONRPC_F_OPAQUE);
    jsonrpc_msg_release(&m);
    assert_int_equal(lax("{\"id\":1e999,\"result\":{}}", &m), JSONRPC_RESPONSE);
    assert_true(m.flags & JSONRPC_F_OPAQUE_ID);
    assert_null(m.id);
    jsonrpc_msg_release(&m);
    assert_int_equal(lax("{\"x\":1e999}", &m), JSONRPC_NOT_RPC);
    jsonrpc_msg_release(&m);
    /* Still not JSON: what JSON.parse refuses too. */
    {
        const char *bad[] = {"{\"a\":1,}", "{\"a\":01}", "{\"a\":\"\\u12\"}", "{\"a\":\"\\x\"}",
                             "{\"a\":\"\t\"}", "[1,2", "\xef\xbb\xbf{}", "{\"a\":\xff}",
                             "{\"a\" 1}", "{} {}", "", "nul", "{\"a\":1e}", "-", "[1.]"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            assert_int_equal(jsonrpc_lax_scan(bad[i], strlen(bad[i]), &lx), ERR_PARSE);
            assert_int_not_equal(jsonrpc_parse_lax(bad[i], strlen(bad[i]), &m), JSONRPC_RESPONSE);
            jsonrpc_msg_release(&m);
        }
        free(d);
        d = deep("", 3000, "x");
        assert_int_equal(jsonrpc_lax_scan(d, strlen(d), &lx), ERR_PARSE);
        free(d);
        d = deep("[", 5000, ""); /* one bracket left open */
        assert_int_equal(jsonrpc_lax_scan(d, strlen(d), &lx), ERR_PARSE);
    }
    /* Duplicate keys: the last one, as JSON.parse keeps. Escaped keys are decoded. */
    assert_int_equal(jsonrpc_lax_scan("{\"id\":1,\"\\u0069d\":2}", strlen("{\"id\":1,\"\\u0069d\":2}"), &lx), 0);
    assert_int_equal(lx.id.off, 18);
    free(d);
}

/* The string scans skip plain bytes eight at a time (events_json_check and the lax scan): a
 * quote, backslash, control or non-ASCII byte at every offset of a long string is still seen
 * where it is, as jansson sees it. */
static void test_string_runs(void **state)
{
    static const char *subst[] = {"\"", "\\", "\\n", "\\u00e9", "\x01", "\x1f", "\x7f",
                                  "\x80", "\xc3\xa9", "\xe2\x82", "\xff", "a\"b"};
    char line[256], body[64];

    for (size_t k = 0; k < sizeof(subst) / sizeof(subst[0]); k++) {
        for (size_t at = 0; at <= 40; at++) {
            struct jsonrpc_lax lx;
            json_t *v;
            size_t n;
            memset(body, 'x', 40);
            body[40] = '\0';
            memcpy(body + at, subst[k], strlen(subst[k]));
            n = (size_t)snprintf(line, sizeof(line),
                                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"%.*s\"}}",
                                 (int)(at + strlen(subst[k]) > 40 ? at + strlen(subst[k]) : 40),
                                 body);
            v = json_loadb(line, n, JSON_ALLOW_NUL, NULL);
            assert_int_equal(events_json_check(line, n) == 0, v != NULL);
            if (v != NULL) {
                /* the lax scan finds the same end of the string: params is the whole object */
                json_t *sv = json_object_get(json_object_get(v, "params"), "s");
                assert_int_equal(jsonrpc_lax_scan(line, n, &lx), 0);
                assert_int_equal(lx.params.off + lx.params.len, n - 1);
                assert_true(json_is_string(sv));
            }
            json_decref(v);
        }
    }
}

/* jsonrpc_lax_value makes the value jansson makes of a scalar (integers and strings without
 * escapes are made without its parser), or NULL where jansson refuses it. */
static void test_lax_scalars(void **state)
{
    static const char *vals[] = {"0",          "7",     "-1",    "42",  "123456789012345678",
                                 "1234567890123456789", "-0",    "1.5", "1e3", "-12e-1",
                                 "\"abc\"",   "\"\"",    "\"a\\nb\"", "\"\xc3\xa9\"",
                                 "\"\xff\"",  "\"\\ud800\"", "true",  "null", "9223372036854775808"};
    char line[128];

    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        struct jsonrpc_lax lx;
        json_t *got, *want;
        int n = snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}",
                         vals[i]);
        assert_int_equal(jsonrpc_lax_scan(line, (size_t)n, &lx), 0);
        got = jsonrpc_lax_value(line, &lx.id);
        want = json_loadb(line + lx.id.off, lx.id.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (want == NULL && lx.id.type == 'n')
            want = json_loadb(line + lx.id.off, lx.id.len,
                              JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
        if (want == NULL) {
            assert_null(got);
        } else {
            assert_non_null(got);
            assert_int_equal(json_typeof(got), json_typeof(want));
            assert_true(json_equal(got, want));
        }
        json_decref(got);
        json_decref(want);
    }
}

static void test_id_keys(void **state)
{
    struct buf k = BUF_INIT;
    json_t *one = json_integer(1), *sone = json_string("1"), *r = json_real(1.0);
    json_t *obj = json_object();

    jsonrpc_id_key(one, &k);
    assert_string_equal(k.data, "n:1");
    buf_reset(&k);
    jsonrpc_id_key(sone, &k);
    assert_string_equal(k.data, "s:1");
    buf_reset(&k);
    jsonrpc_id_key(r, &k);
    assert_string_equal(k.data, "r:1");
    buf_reset(&k);
    assert_int_equal(jsonrpc_id_key(obj, &k), ERR_INVALID);
    {
        /* integers are formatted by hand: the edges, as printf writes them */
        static const long long ints[] = {0, 7, -1, 10, -10, 1234567890123LL, LLONG_MAX, LLONG_MIN};
        for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
            json_t *n = json_integer(ints[i]);
            char want[32];
            snprintf(want, sizeof(want), "n:%lld", ints[i]);
            buf_reset(&k);
            assert_int_equal(jsonrpc_id_key(n, &k), 0);
            assert_string_equal(k.data, want);
            json_decref(n);
        }
    }
    json_decref(one);
    json_decref(sone);
    json_decref(r);
    json_decref(obj);
    buf_release(&k);
}

static void count_value(void *value, void *ctx)
{
    *(int *)ctx += *(int *)value;
}

static void test_idmap(void **state)
{
    struct jsonrpc_idmap m;
    static int vals[1000];
    json_t *id0 = json_integer(0), *sid0 = json_string("0"), *obj = json_object();
    int sum = 0;

    jsonrpc_idmap_init(&m, 1000);
    assert_int_equal(jsonrpc_idmap_put(&m, id0, &vals[0]), 0);
    /* 0 and "0" are different ids. */
    assert_int_equal(jsonrpc_idmap_put(&m, sid0, &vals[1]), 0);
    assert_int_equal(jsonrpc_idmap_put(&m, id0, &vals[2]), ERR_INVALID);
    assert_int_equal(jsonrpc_idmap_put(&m, obj, &vals[2]), ERR_INVALID);
    assert_ptr_equal(jsonrpc_idmap_get(&m, id0), &vals[0]);
    assert_ptr_equal(jsonrpc_idmap_get(&m, sid0), &vals[1]);
    assert_ptr_equal(jsonrpc_idmap_take(&m, id0), &vals[0]);
    assert_null(jsonrpc_idmap_get(&m, id0));
    assert_null(jsonrpc_idmap_take(&m, id0));
    assert_ptr_equal(jsonrpc_idmap_take(&m, sid0), &vals[1]);
    assert_int_equal(jsonrpc_idmap_count(&m), 0);
    /* Grows past the initial buckets; the limit holds. */
    for (int i = 0; i < 1000; i++) {
        json_t *id = json_integer(i);
        vals[i] = 1;
        assert_int_equal(jsonrpc_idmap_put(&m, id, &vals[i]), 0);
        json_decref(id);
    }
    {
        json_t *id = json_integer(5000);
        assert_int_equal(jsonrpc_idmap_put(&m, id, &vals[0]), ERR_LIMIT);
        json_decref(id);
    }
    for (int i = 0; i < 1000; i += 7) {
        json_t *id = json_integer(i);
        assert_ptr_equal(jsonrpc_idmap_get(&m, id), &vals[i]);
        json_decref(id);
    }
    jsonrpc_idmap_each(&m, count_value, &sum);
    assert_int_equal(sum, 1000);
    jsonrpc_idmap_release(&m, NULL);
    json_decref(id0);
    json_decref(sid0);
    json_decref(obj);
}

static void test_builders(void **state)
{
    struct buf out = BUF_INIT;
    json_t *id = json_string("a\nb");
    json_t *v;

    v = jsonrpc_make_error(id, JSONRPC_REQUEST_TIMEOUT, "timed out\n[E-X]", NULL);
    assert_int_equal(jsonrpc_write(&out, v), 0);
    assert_string_equal(
        out.data,
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\\nb\",\"error\":{\"code\":-32001,\"message\":\"timed out\\n[E-X]\"}}\n");
    json_decref(v);
    buf_reset(&out);
    v = jsonrpc_make_error(NULL, JSONRPC_PARSE_ERROR, "bad", json_pack("{s:i}", "n", 1));
    jsonrpc_write(&out, v);
    assert_string_equal(out.data, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                                  "\"message\":\"bad\",\"data\":{\"n\":1}}}\n");
    json_decref(v);
    buf_reset(&out);
    v = jsonrpc_make_result(id, json_pack("{s:b}", "isError", 1));
    jsonrpc_write(&out, v);
    assert_string_equal(out.data, "{\"jsonrpc\":\"2.0\",\"id\":\"a\\nb\",\"result\":{\"isError\":true}}\n");
    json_decref(v);
    buf_reset(&out);
    v = jsonrpc_make_notification("notifications/tools/list_changed", NULL);
    jsonrpc_write(&out, v);
    assert_string_equal(out.data,
                        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n");
    json_decref(v);
    buf_reset(&out);
    v = jsonrpc_make_request(id, "tools/call", json_object());
    jsonrpc_write(&out, v);
    assert_string_equal(out.data,
                        "{\"jsonrpc\":\"2.0\",\"id\":\"a\\nb\",\"method\":\"tools/call\",\"params\":{}}\n");
    json_decref(v);
    /* The output limit holds and leaves out unchanged. */
    buf_release(&out);
    buf_init(&out, 8);
    v = jsonrpc_make_notification("x", NULL);
    assert_int_equal(jsonrpc_write(&out, v), ERR_LIMIT);
    assert_int_equal(out.len, 0);
    json_decref(v);
    json_decref(id);
    buf_release(&out);
}

/* jsonrpc_parse_scan: a message jansson would take is classified from the scan, no tree
 * (F_SCANNED), the same as jsonrpc_parse_lax; jsonrpc_msg_tree then gives parse_lax's message.
 * Every other line (not JSON, not JSON-RPC, a batch, jansson refuses it, an id past int64) is
 * what jsonrpc_parse_lax makes of it. */
static void test_parse_scan(void **state)
{
    static const struct {
        const char *line;
        int scanned;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"e\"}}", 1},
        {"{\"jsonrpc\":\"2\\u002e0\",\"id\":\"a\",\"method\":\"ping\"}", 1},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}",
         1},
        {" {\"id\":1.5,\"result\":{\"content\":[]},\"jsonrpc\":\"2.0\"} ", 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":1.0,\"message\":\"m\"}}", 1},
        {"{\"jsonrpc\":\"2.0\",\"\\u0069d\":7,\"method\":\"x\",\"params\":3}", 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999,\"method\":\"x\"}", 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"t\":\"cut \\ud83d\"}}", 0},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":1}", 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,", 0},
        {"", 0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *l = cases[i].line;
        struct jsonrpc_msg a, b;
        jsonrpc_parse_lax(l, strlen(l), &a);
        assert_int_equal(jsonrpc_parse_scan(l, strlen(l), &b), a.kind);
        if (cases[i].scanned != ((b.flags & JSONRPC_F_SCANNED) != 0))
            fail_msg("case %zu: scanned %d", i, (b.flags & JSONRPC_F_SCANNED) != 0);
        assert_int_equal(b.flags & ~(unsigned)JSONRPC_F_SCANNED, a.flags);
        assert_true((a.id == NULL) == (b.id == NULL));
        assert_true(a.id == NULL || json_equal(a.id, b.id));
        assert_true((a.method == NULL) == (b.method == NULL));
        if (a.method)
            assert_string_equal(a.method, b.method);
        if (cases[i].scanned)
            assert_null(b.root);
        assert_int_equal(jsonrpc_msg_tree(&b, l, strlen(l)), a.kind);
        assert_int_equal(b.flags, a.flags);
        assert_true((a.root == NULL) == (b.root == NULL));
        assert_true(a.root == NULL || json_equal(a.root, b.root));
        jsonrpc_msg_release(&a);
        jsonrpc_msg_release(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_framer_lines_across_feeds),
        cmocka_unit_test(test_framer_line_limit),
        cmocka_unit_test(test_skim),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_lax_scan),
        cmocka_unit_test(test_string_runs),
        cmocka_unit_test(test_lax_scalars),
        cmocka_unit_test(test_id_keys),
        cmocka_unit_test(test_idmap),
        cmocka_unit_test(test_builders),
        cmocka_unit_test(test_parse_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
