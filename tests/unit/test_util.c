/* Unit tests for src/util: buf, num, hash, fs, err. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/err.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/num.h"
#include "util/regex_safe.h"
#include "util/text.h"
#include "util/utf8.h"
#include "util/banned.h"

static void test_buf_invariants(void **state)
{
    struct buf b = BUF_INIT;
    assert_non_null(b.data);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    assert_int_equal(buf_adds(&b, "abc"), 0);
    assert_int_equal(buf_addf(&b, "-%d-%s", 42, "x"), 0);
    assert_string_equal(b.data, "abc-42-x");
    assert_int_equal(buf_add(&b, "\0z", 2), 0);
    assert_int_equal(b.len, 10);
    assert_int_equal(b.data[10], '\0');
    buf_consume(&b, 4);
    assert_string_equal(b.data, "42-x");
    buf_truncate(&b, 2);
    assert_string_equal(b.data, "42");
    buf_release(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
}

static void test_buf_limit(void **state)
{
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_adds(&b, "12345678"), 0);
    assert_int_equal(buf_addc(&b, '9'), ERR_LIMIT);
    assert_int_equal(b.len, 8);
    assert_string_equal(b.data, "12345678");
    buf_reset(&b);
    assert_int_equal(buf_addf(&b, "%s", "too long for eight"), ERR_LIMIT);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    buf_release(&b);
}

static void test_buf_addf_grows(void **state)
{
    struct buf b = BUF_INIT;
    for (int i = 0; i < 1000; i++)
        assert_int_equal(buf_addf(&b, "%04d", i), 0);
    assert_int_equal(b.len, 4000);
    assert_memory_equal(b.data + 3996, "0999", 4);
    size_t n;
    char *p = buf_detach(&b, &n);
    assert_int_equal(n, 4000);
    assert_int_equal(b.len, 0);
    free(p);
    p = buf_detach(&b, &n);
    assert_string_equal(p, "");
    free(p);
}

static void test_num(void **state)
{
    long long v;
    double d;
    uint64_t u;
    assert_int_equal(num_parse_ll("42", 0, 100, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(num_parse_ll("-1", 0, 100, &v), ERR_LIMIT);
    assert_int_equal(num_parse_ll("4x", 0, 100, &v), ERR_PARSE);
    assert_int_equal(num_parse_ll("", 0, 100, &v), ERR_PARSE);
    assert_int_equal(num_parse_ll("99999999999999999999", 0, 100, &v), ERR_LIMIT);
    assert_int_equal(num_parse_double("0.5", 0, 1, &d), 0);
    assert_true(d == 0.5);
    assert_int_equal(num_parse_double("nan", 0, 1, &d), ERR_PARSE);
    assert_int_equal(num_parse_double("2", 0, 1, &d), ERR_LIMIT);
    assert_int_equal(num_parse_u64("0x10", &u), 0);
    assert_int_equal(u, 16);
    assert_int_equal(num_parse_u64("-3", &u), ERR_PARSE);
    /* no white space, no '+', no octal, hex only after 0x */
    assert_int_equal(num_parse_ll(" 42", 0, 100, &v), ERR_PARSE);
    assert_int_equal(num_parse_ll("\t42", 0, 100, &v), ERR_PARSE);
    assert_int_equal(num_parse_ll("+42", 0, 100, &v), ERR_PARSE);
    assert_int_equal(num_parse_ll("- 4", -100, 100, &v), ERR_PARSE);
    assert_int_equal(num_parse_ll("-42", -100, 100, &v), 0);
    assert_int_equal(v, -42);
    assert_int_equal(num_parse_ll("010", 0, 100, &v), 0);
    assert_int_equal(v, 10);
    assert_int_equal(num_parse_double(" 0.5", 0, 1, &d), ERR_PARSE);
    assert_int_equal(num_parse_double("+0.5", 0, 1, &d), ERR_PARSE);
    assert_int_equal(num_parse_double("-+0.5", -1, 1, &d), ERR_PARSE);
    assert_int_equal(num_parse_double("-0.5", -1, 1, &d), 0);
    assert_int_equal(num_parse_u64(" 7", &u), ERR_PARSE);
    assert_int_equal(num_parse_u64("+7", &u), ERR_PARSE);
    assert_int_equal(num_parse_u64("0x", &u), ERR_PARSE);
    assert_int_equal(num_parse_u64("0x-5", &u), ERR_PARSE);
    assert_int_equal(num_parse_u64("0x 5", &u), ERR_PARSE);
    assert_int_equal(num_parse_u64("0XfF", &u), 0);
    assert_int_equal(u, 255);
    assert_int_equal(num_parse_u64("010", &u), 0);
    assert_int_equal(u, 10);
    assert_int_equal(num_parse_u64("0777", &u), 0);
    assert_int_equal(u, 777);
    assert_int_equal(num_parse_u64("ff", &u), ERR_PARSE);
    assert_int_equal(num_parse_u64("18446744073709551615", &u), 0);
    assert_int_equal(num_parse_u64("18446744073709551616", &u), ERR_PARSE);
}

static void test_hash_stable(void **state)
{
    /* Fixed values: a change here changes every plan's decisions, which must be deliberate. */
    assert_true(hash64("abc", 3, 0) == hash64("abc", 3, 0));
    assert_true(hash64("abc", 3, 0) != hash64("abc", 3, 1));
    assert_true(hash64("abc", 3, 0) != hash64("abd", 3, 0));
    assert_true(hash64("", 0, 0) != hash64("\0", 1, 0));
    char hex[65];
    hash_sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_fs_roundtrip(void **state)
{
    char dir[] = "/tmp/faultline-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct buf path = BUF_INIT, sub = BUF_INIT, data = BUF_INIT;
    struct err e = {0};
    buf_addf(&sub, "%s/a/b/c", dir);
    assert_int_equal(fs_mkdirs(sub.data, &e), 0);
    buf_addf(&path, "%s/file", sub.data);
    assert_int_equal(fs_write_file(path.data, "hello", 5, &e), 0);
    assert_int_equal(fs_read_file(path.data, 100, &data, &e), 0);
    assert_string_equal(data.data, "hello");
    buf_reset(&data);
    assert_int_equal(fs_read_file(path.data, 4, &data, &e), ERR_LIMIT);
    assert_int_equal(data.len, 0);
    assert_non_null(strstr(e.msg, "limit"));
    err_clear(&e);
    assert_int_equal(fs_read_file("/nonexistent/x", 4, &data, &e), ERR_IO);
    assert_non_null(strstr(e.msg, "cannot open '/nonexistent/x'"));
    /* a FIFO with no writer is refused at once, not waited on; so is a directory */
    buf_reset(&path);
    buf_addf(&path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path.data, 0600), 0);
    err_clear(&e);
    assert_int_equal(fs_read_file(path.data, 100, &data, &e), ERR_IO);
    assert_non_null(strstr(e.msg, "/fifo' is not a regular file"));
    err_clear(&e);
    assert_int_equal(fs_read_file(dir, 100, &data, &e), ERR_IO);
    assert_non_null(strstr(e.msg, "is not a regular file"));
    buf_release(&path);
    buf_release(&sub);
    buf_release(&data);
    buf_addf(&path, "rm -rf '%s'", dir);
    assert_int_equal(system(path.data), 0);
    buf_release(&path);
}

static void test_err_first_wins(void **state)
{
    struct err e = {0};
    assert_int_equal(err_set(&e, ERR_PARSE, "first %d", 1), ERR_PARSE);
    assert_int_equal(err_set(&e, ERR_IO, "second"), ERR_IO);
    assert_int_equal(e.code, ERR_PARSE);
    assert_string_equal(e.msg, "first 1");
    assert_int_equal(err_set(NULL, ERR_IO, "x"), ERR_IO);
    assert_string_equal(err_name(ERR_LIMIT), "limit");
}

/* utf8_put at each length's edges, and what utf8_seq reads back. */
static void test_utf8_encode(void **state)
{
    static const struct {
        unsigned long cp;
        const char *want;
    } cases[] = {{0x41, "A"},
                 {0x7F, "\x7F"},
                 {0x80, "\xC2\x80"},
                 {0xE9, "\xC3\xA9"},
                 {0x7FF, "\xDF\xBF"},
                 {0x800, "\xE0\xA0\x80"},
                 {0x20AC, "\xE2\x82\xAC"},
                 {0xFFFF, "\xEF\xBF\xBF"},
                 {0x10000, "\xF0\x90\x80\x80"},
                 {0x1F600, "\xF0\x9F\x98\x80"},
                 {0x10FFFF, "\xF4\x8F\xBF\xBF"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[4];
        size_t n = utf8_put(cases[i].cp, out);
        assert_int_equal(n, strlen(cases[i].want));
        assert_memory_equal(out, cases[i].want, n);
        assert_int_equal(utf8_seq(out, n), n);
    }
}

static void test_utf8(void **state)
{
    struct buf b = BUF_INIT;
    assert_int_equal(utf8_seq("a", 1), 1);
    assert_int_equal(utf8_seq("\xC3\xA9", 2), 2);
    assert_int_equal(utf8_seq("\xC3\xA9", 1), 0);          /* truncated */
    assert_int_equal(utf8_seq("\xC0\x80", 2), 0);          /* overlong */
    assert_int_equal(utf8_seq("\xE0\x80\x80", 3), 0);      /* overlong */
    assert_int_equal(utf8_seq("\xED\xA0\x80", 3), 0);      /* surrogate */
    assert_int_equal(utf8_seq("\xF4\x90\x80\x80", 4), 0); /* past U+10FFFF */
    assert_int_equal(utf8_seq("\xF0\x9F\x98\x80", 4), 4);
    assert_true(utf8_valid("caf\xC3\xA9", 5));
    assert_false(utf8_valid("caf\xC3", 4));
    assert_int_equal(utf8_boundary("a\xC3\xA9" "b", 4, 2), 1);
    assert_int_equal(utf8_boundary("a\xC3\xA9" "b", 4, 3), 3);
    assert_int_equal(utf8_boundary("a\xC3\xA9" "b", 4, 9), 4);
    assert_int_equal(utf8_sanitize("a\xFF\xC3\xA9\xC3", 5, &b), 0);
    assert_string_equal(b.data, "a\xEF\xBF\xBD\xC3\xA9\xEF\xBF\xBD");
    buf_release(&b);
}

static void test_text(void **state)
{
    char out[TEXT_SHOWN_SIZE];
    assert_string_equal(text_shown("a\tb", 3, out), "a?b");
    /* 39 ASCII bytes then a 2-byte character: cut before it, never inside */
    const char *s = "0123456789012345678901234567890123456789\xC3\xA9tail";
    assert_string_equal(text_shown(s, strlen(s), out), "0123456789012345678901234567890123456789...");
    const char *t = "012345678901234567890123456789012345678\xC3\xA9tail";
    assert_string_equal(text_shown(t, strlen(t), out), "012345678901234567890123456789012345678...");
    assert_true(text_blank(" \t\r", 3));
    assert_true(text_blank("", 0));
    assert_false(text_blank(" x", 2));
}

static void expect_refused(const char *pattern, const char *needle)
{
    char why[96];
    if (regex_check(pattern, why, sizeof(why)) != ERR_INVALID || strstr(why, needle) == NULL)
        fail_msg("'%s': got '%s', want '%s'", pattern, why, needle);
}

static void test_regex_check(void **state)
{
    static const char *const ok[] = {
        "^README", "([0-9]{1,3}\\.){3}[0-9]{1,3}", "(a{1,10}){1,100}", "(a*)*", "[]{}(]+x",
        "\\{1000}", "[[:digit:]]{1,9}x?", "(a{5}|b{100}){10}", "a{1,100}b{1,100}c{1,100}",
    };
    char why[96];
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (regex_check(ok[i], why, sizeof(why)) != 0)
            fail_msg("'%s' refused: %s", ok[i], why);
    expect_refused("((((((a{1,255}){1,255}){1,255}){1,255}){1,255}){1,255})", "a repetition bound over 100");
    expect_refused("((((a{1,100}){1,100}){1,100}){1,100})",
                   "nested repetitions multiply to 10000 copies (more than 1000)");
    expect_refused("(a{1,11}){1,100}", "multiply to 1100 copies");
    expect_refused("((a){10}b){101}", "bound over 100");
    expect_refused("(a)\\1", "back-references are not supported");
    expect_refused("a**", "stacked repetition operators");
    expect_refused("a{2}{3}", "stacked repetition operators");
    expect_refused("((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))", "groups nested deeper than 32");
    char big[600];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    expect_refused(big, "longer than 512 bytes");
}

/* The level's name is what `--log-level`'s help shows as the default: it is read from the
 * level itself, not written again as text. */
static void test_log_level_name(void **state)
{
    assert_string_equal(log_level_name(), "warn");
    assert_int_equal(log_set_level_name("debug"), 0);
    assert_string_equal(log_level_name(), "debug");
    assert_int_equal(log_set_level_name("loud"), ERR_INVALID);
    assert_string_equal(log_level_name(), "debug");
    assert_int_equal(log_set_level_name("warn"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regex_check),
        cmocka_unit_test(test_utf8_encode),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_buf_invariants), cmocka_unit_test(test_buf_limit),
        cmocka_unit_test(test_buf_addf_grows), cmocka_unit_test(test_num),
        cmocka_unit_test(test_hash_stable),    cmocka_unit_test(test_fs_roundtrip),
        cmocka_unit_test(test_err_first_wins),
        cmocka_unit_test(test_log_level_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
