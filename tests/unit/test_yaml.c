/* Unit tests for src/util/yaml (the one YAML reader), through its public API: the limits and
 * their defaults, the file kind in messages, refusing aliases, and the JSON view with its marks
 * and its stricter rules (duplicate keys, values JSON cannot hold). The tree's typing and the
 * experiment-facing messages are covered by test_experiment.c and tests/data/validate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/yaml.h"
#include "util/banned.h"

/* Parses text under lim, expecting a fatal problem with code at line:col holding needle. */
static void expect_fatal(const char *text, const struct ydoc_limits *lim, int code, int line,
                         int col, const char *needle)
{
    struct ydoc d;
    struct ydoc_problem p;
    int rc = ydoc_parse(text, strlen(text), lim, &d, &p);
    ydoc_release(&d);
    if (rc != code || p.line != line || p.col != col || strstr(p.msg, needle) == NULL)
        fail_msg("got %d at %d:%d '%s'; want %d at %d:%d with '%s'", rc, p.line, p.col, p.msg, code,
                 line, col, needle);
}

/* ydoc_parse_json on text, expecting NULL with code and exactly msg. */
static void expect_json_error(const char *text, const struct ydoc_limits *lim, int code,
                              const char *msg)
{
    struct err e = {0};
    struct ydoc_marks *m = (struct ydoc_marks *)1;
    json_t *j = ydoc_parse_json(text, strlen(text), "f.yaml", lim, &m, &e);
    if (j != NULL)
        fail_msg("'%s' was read as JSON", text);
    assert_null(m);
    assert_int_equal(e.code, code);
    assert_string_equal(e.msg, msg);
}

static void test_limits_and_kind(void **state)
{
    static const struct ydoc_limits small = {.max_nodes = 3, .max_depth = 2, .kind = "a test"};
    struct buf deep = BUF_INIT;
    struct ydoc d;
    struct ydoc_problem p;

    /* zero fields take the defaults: 64 levels, 50000 nodes, "the file" */
    for (int i = 0; i < 65; i++)
        buf_adds(&deep, "[");
    expect_fatal(deep.data, &(struct ydoc_limits){0}, ERR_LIMIT, 1, 65,
                 "nesting deeper than 64 levels");
    buf_release(&deep);
    expect_fatal("a: 1\n---\nb: 2\n", NULL, ERR_PARSE, 2, 1,
                 "a second YAML document: the file holds one");
    expect_fatal("a: 1\n---\nb: 2\n", &small, ERR_PARSE, 2, 1,
                 "a second YAML document: a test holds one");
    expect_fatal("[1, 2, 3]\n", &small, ERR_LIMIT, 1, 8,
                 "more than 3 YAML nodes: too many for a test");
    expect_fatal("[[[1]]]\n", &small, ERR_LIMIT, 1, 3, "nesting deeper than 2 levels");
    assert_int_equal(ydoc_parse("[[1]]", 5, &small, &d, &p), 0);
    ydoc_release(&d);
}

static void test_aliases(void **state)
{
    static const struct ydoc_limits refuse = {.no_aliases = 1, .kind = "a price file"};
    struct ydoc d;
    struct ydoc_problem p;
    const char *text = "a: &x {b: 1}\nc: *x\n";

    /* expanded by default, refused under no_aliases (an anchor alone is fine) */
    assert_int_equal(ydoc_parse(text, strlen(text), NULL, &d, &p), 0);
    assert_int_equal(ynode_get(ynode_get(d.root, "c"), "b")->i, 1);
    ydoc_release(&d);
    expect_fatal(text, &refuse, ERR_UNSUPPORTED, 2, 4,
                 "YAML aliases are not supported in a price file");
    assert_int_equal(ydoc_parse("a: &x 1\n", 8, &refuse, &d, &p), 0);
    ydoc_release(&d);
}

/* A long string aliased many times is few nodes but many bytes: the byte budget stops it. */
static void test_alias_bytes(void **state)
{
    static const struct ydoc_limits tight = {.max_alias_bytes = 25};
    struct buf t;
    struct ydoc d;
    struct ydoc_problem p;

    /* 10-byte value and 1-byte key: two copies of the map fit in 25 bytes, the third does not */
    expect_fatal("a: &x {k: \"0123456789\"}\nb: [*x, *x, *x]\n", &tight, ERR_LIMIT, 2, 13,
                 "expanding alias '*x': aliases expand to more than 25 bytes");
    /* the default: 8 x the input, at least YDOC_ALIAS_BYTES_MIN */
    buf_init(&t, 0);
    buf_adds(&t, "a: &a \"");
    for (int i = 0; i < 100000; i++)
        buf_addc(&t, 'x');
    buf_adds(&t, "\"\nb:\n");
    for (int i = 0; i < 45000; i++)
        buf_adds(&t, " - *a\n");
    assert_int_equal(ydoc_parse(t.data, t.len, NULL, &d, &p), ERR_LIMIT);
    ydoc_release(&d);
    assert_non_null(strstr(p.msg, "aliases expand to more than"));
    /* a few copies are fine */
    buf_reset(&t);
    buf_adds(&t, "a: &a \"0123456789\"\nb: [*a, *a, *a]\n");
    assert_int_equal(ydoc_parse(t.data, t.len, NULL, &d, &p), 0);
    ydoc_release(&d);
    buf_release(&t);
}

static void test_json_view_and_marks(void **state)
{
    const char *text = "# a price file\n"
                       "models:\n"
                       "  a: {input: 1.5, note: \"x\"}\n"
                       "  b:\n"
                       "    - 0o17\n"
                       "    - ~\n"
                       "empty:\n";
    struct err e = {0};
    struct ydoc_marks *m = NULL;
    int line, col;
    json_t *j = ydoc_parse_json(text, strlen(text), "f.yaml", NULL, &m, &e);

    assert_non_null(j);
    assert_non_null(m);
    json_t *models = json_object_get(j, "models");
    json_t *a = json_object_get(models, "a");
    json_t *b = json_object_get(models, "b");
    assert_true(json_real_value(json_object_get(a, "input")) == 1.5);
    assert_int_equal(json_integer_value(json_array_get(b, 0)), 15);
    assert_true(json_is_null(json_array_get(b, 1)));
    assert_true(json_is_null(json_object_get(j, "empty")));

    assert_int_equal(ydoc_json_mark(m, j, NULL, 0, &line, &col), 1); /* the root itself */
    assert_int_equal(line * 100 + col, 201);
    assert_int_equal(ydoc_json_mark(m, models, "a", 1, &line, &col), 1); /* a key */
    assert_int_equal(line * 100 + col, 303);
    assert_int_equal(ydoc_json_mark(m, models, "a", 0, &line, &col), 1); /* its value */
    assert_int_equal(line * 100 + col, 306);
    assert_int_equal(ydoc_json_mark(m, a, "note", 0, &line, &col), 1);
    assert_int_equal(line * 100 + col, 325);
    assert_int_equal(ydoc_json_mark(m, b, NULL, 0, &line, &col), 1);
    assert_int_equal(line * 100 + col, 505);
    assert_int_equal(ydoc_json_mark(m, a, "missing", 0, &line, &col), 0);
    assert_int_equal(line + col, 0);
    assert_int_equal(ydoc_json_mark(NULL, a, "note", 0, &line, &col), 0);
    assert_int_equal(ydoc_json_mark(m, b, "note", 1, &line, &col), 0); /* a list has no keys */

    assert_int_equal(ydoc_json_err(&e, ERR_INVALID, "f.yaml", m, a, "input", 1, "bad input"),
                     ERR_INVALID);
    assert_string_equal(e.msg, "f.yaml:3:7: bad input");
    err_clear(&e);
    ydoc_json_err(&e, ERR_INVALID, "f.json", NULL, a, "input", 1, "bad input");
    assert_string_equal(e.msg, "f.json: bad input");

    ydoc_marks_free(m);
    json_decref(j);
    ydoc_marks_free(NULL);

    /* an empty document is null; marks are optional */
    j = ydoc_parse_json("# nothing\n", 10, "f.yaml", NULL, NULL, &e);
    assert_true(json_is_null(j));
    json_decref(j);
}

static void test_json_view_is_stricter(void **state)
{
    static const struct ydoc_limits refuse = {.no_aliases = 1, .kind = "a mock-model script"};
    struct ydoc d;
    struct ydoc_problem p;
    const char *dup = "a: 1\nb: 2\na: 3\n";

    /* the tree records a duplicate key and carries on; the view refuses it */
    assert_int_equal(ydoc_parse(dup, strlen(dup), NULL, &d, &p), 0);
    assert_int_equal(d.nproblems, 1);
    ydoc_release(&d);
    expect_json_error(dup, NULL, ERR_PARSE,
                      "f.yaml:3:1: duplicate key 'a' (first at line 1, column 1)");
    /* the first problem in file order wins, fatal or not */
    expect_json_error("x: {a: 1, a: 2}\ny: [\n", NULL, ERR_PARSE,
                      "f.yaml:1:11: duplicate key 'a' (first at line 1, column 5)");
    expect_json_error("x: [1, *y]\ny: {a: 1, a: 2}\n", &refuse, ERR_UNSUPPORTED,
                      "f.yaml:1:8: YAML aliases are not supported in a mock-model script");
    expect_json_error("a: .inf\n", NULL, ERR_PARSE,
                      "f.yaml:1:4: not representable as JSON (an infinite or NaN number, or bad "
                      "UTF-8)");
    expect_json_error("a: !foo 1\n", NULL, ERR_PARSE, "f.yaml:1:4: unsupported tag '!foo' on '1'");
    expect_json_error("a: \"x\\0y\"\n", NULL, ERR_PARSE,
                      "f.yaml:1:4: a string holds a NUL character");
    expect_json_error("a: [\n", NULL, ERR_PARSE,
                      "f.yaml:2:1: yaml: did not find expected node content while parsing a flow "
                      "node (line 2, column 1)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_and_kind),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_alias_bytes),
        cmocka_unit_test(test_json_view_and_marks),
        cmocka_unit_test(test_json_view_is_stricter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
