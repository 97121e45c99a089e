/* Unit tests for src/events: secret names, redaction, writer stamps and cuts, concurrent
 * appends, the streaming reader (malformed, overlong, partial and followed lines). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>

#include "events/ev.h"
#include "events/events.h"
#include "events/view.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/redact.h"
#include "util/timeutil.h"
#include "helpers.h"
#include "util/banned.h"

/* ---- helpers ----------------------------------------------------------------------------- */

static void assert_redacts_to(const char *in, const char *expect, int count)
{
    json_t *a = ut_json(in), *b = ut_json(expect);
    int n = events_redact(a);
    char *sa = ut_dumps(a), *sb = ut_dumps(b);

    if (strcmp(sa, sb) != 0 || n != count)
        fail_msg("redact %s\n  got      %s (%d)\n  expected %s (%d)", in, sa, n, sb, count);
    free(sa);
    free(sb);
    json_decref(a);
    json_decref(b);
}

/* ---- redaction --------------------------------------------------------------------------- */

static void test_secret_names(void **state)
{
    static const char *const yes[] = {
        "api_key",       "API_KEY",        "x-api-key",     "X-Api-Key",    "apikey",
        "openai-api-key", "ANTHROPIC_API_KEY", "authorization", "Authorization",
        "proxy-authorization", "Proxy-Authorization", "token",  "access_token",
        "auth_token",    "refresh_token",  "id_token",      "x-auth-token", "accessToken",
        "GH_TOKEN",      "secret",         "client_secret", "AWS_SECRET_ACCESS_KEY",
        "password",      "db_password",    "passwd",        "cookie",       "Cookie",
        "set-cookie",    "Set-Cookie",     "cookies",       "private_key",  "auth",
        "npm_auth",      "basic-auth",     "credentials",   "pass",         NULL};
    static const char *const no[] = {
        "tokens",        "input_tokens",  "output_tokens", "max_tokens",    "total_tokens",
        "prompt_tokens", "completion_tokens", "cache_read_input_tokens",
        "cache_creation_input_tokens", "reasoning_tokens", "token_count", "tokenizer",
        "author",        "authority",     "oauth_provider", "key",          "businessKey",
        "monkey",        "passive",       "compass",       "model",         "tool",
        "args",          "",              "to",            "usage",         NULL};

    for (int i = 0; yes[i]; i++)
        if (!events_is_secret_name(yes[i]))
            fail_msg("'%s' should be secret", yes[i]);
    for (int i = 0; no[i]; i++)
        if (events_is_secret_name(no[i]))
            fail_msg("'%s' should not be secret", no[i]);
    assert_false(events_is_secret_name(NULL));

    /* Long names are scanned in windows: a part at any offset, across a window's end too. */
    for (size_t at = 0; at < 700; at += 7) {
        char name[800];
        memset(name, 'x', sizeof(name));
        memcpy(name + at, "PassWord", 8);
        name[at + 8 + 50] = '\0';
        if (!events_is_secret_name(name))
            fail_msg("'password' at %zu of a long name was missed", at);
        name[at] = 'Q';
        if (events_is_secret_name(name))
            fail_msg("'Qassword' at %zu should not be secret", at);
    }
}

static void test_redact_fields(void **state)
{
    assert_redacts_to("{\"kind\":\"x\",\"api_key\":\"abc\",\"n\":1}",
                      "{\"kind\":\"x\",\"api_key\":\"[REDACTED]\",\"n\":1}", 1);
    assert_redacts_to("{\"headers\":{\"Authorization\":\"Basic Zm9vOmJhcg==\",\"Accept\":\"*/*\","
                      "\"X-Api-Key\":\"k\",\"Cookie\":\"a=b\"}}",
                      "{\"headers\":{\"Authorization\":\"[REDACTED]\",\"Accept\":\"*/*\","
                      "\"X-Api-Key\":\"[REDACTED]\",\"Cookie\":\"[REDACTED]\"}}",
                      3);
    /* Any value type but null and booleans. */
    assert_redacts_to("{\"token\":{\"a\":1},\"secret\":[1,2],\"password\":1234,"
                      "\"access_token\":null,\"auth\":true}",
                      "{\"token\":\"[REDACTED]\",\"secret\":\"[REDACTED]\","
                      "\"password\":\"[REDACTED]\",\"access_token\":null,\"auth\":true}",
                      3);
    /* Usage counts stay. */
    assert_redacts_to("{\"usage\":{\"input_tokens\":10,\"output_tokens\":20,"
                      "\"cache_read_input_tokens\":3},\"max_tokens\":1024}",
                      "{\"usage\":{\"input_tokens\":10,\"output_tokens\":20,"
                      "\"cache_read_input_tokens\":3},\"max_tokens\":1024}",
                      0);
    /* Deep inside arrays. */
    assert_redacts_to("{\"a\":[{\"b\":[{\"refresh_token\":\"r\"}]}]}",
                      "{\"a\":[{\"b\":[{\"refresh_token\":\"[REDACTED]\"}]}]}", 1);
    /* A credential used as an object key is renamed. */
    assert_redacts_to("{\"m\":{\"sk-ant-api03-AAAAAAAAAAAAAAAAAAAA\":1,\"ok\":2}}",
                      "{\"m\":{\"ok\":2,\"[REDACTED]\":1}}", 1);
    /* Already redacted values are not counted again. */
    assert_redacts_to("{\"token\":\"[REDACTED]\"}", "{\"token\":\"[REDACTED]\"}", 0);
}

static void test_redact_header_lists(void **state)
{
    assert_redacts_to("{\"headers\":[[\"Authorization\",\"Bearer x\"],[\"Accept\",\"json\"],"
                      "[\"set-cookie\",\"s=1\"]]}",
                      "{\"headers\":[[\"Authorization\",\"[REDACTED]\"],[\"Accept\",\"json\"],"
                      "[\"set-cookie\",\"[REDACTED]\"]]}",
                      2);
    assert_redacts_to("{\"headers\":[{\"name\":\"x-api-key\",\"value\":\"k1\"},"
                      "{\"name\":\"Host\",\"value\":\"h\"}]}",
                      "{\"headers\":[{\"name\":\"x-api-key\",\"value\":\"[REDACTED]\"},"
                      "{\"name\":\"Host\",\"value\":\"h\"}]}",
                      1);
}

/* Credentials deep inside long words, where redact_text skips a word's inner bytes without
 * asking token_at: a key glued after '_', one after a %XX escape, and a registered literal
 * right after a letter, each past 20 KB of letters (and ending at a space). */
static void test_redact_long_words(void **state)
{
    struct redact_lits *l = redact_lits_new();
    struct buf in = BUF_INIT, out = BUF_INIT;
    const char *parts[] = {"_ghp_0123456789abcdefghijklmnopqrstuv",
                           "%3Dsk-proj-0123456789abcdefghij", "Zq9LiteralSecret7"};

    (void)state;
    assert_int_equal(redact_lits_add(l, "Zq9LiteralSecret7"), 0);
    for (size_t k = 0; k < 3; k++) {
        for (int i = 0; i < 20000; i++)
            buf_addc(&in, (char)('a' + i % 26));
        buf_adds(&in, parts[k]);
        buf_addc(&in, ' ');
    }
    buf_adds(&in, "tail");
    assert_int_equal(redact_text(l, in.data, in.len, NULL), 1);
    assert_int_equal(redact_text(l, in.data, in.len, &out), 3);
    assert_null(strstr(out.data, "ghp_0123"));
    assert_null(strstr(out.data, "sk-proj-0123"));
    assert_null(strstr(out.data, "LiteralSecret"));
    assert_non_null(strstr(out.data, "tail"));
    buf_release(&in);
    buf_release(&out);
    redact_lits_free(l);
}

static void test_redact_strings(void **state)
{
    /* Header values. */
    assert_redacts_to("{\"h\":\"Bearer abc\"}", "{\"h\":\"Bearer [REDACTED]\"}", 1);
    assert_redacts_to("{\"h\":\"bearer abc.def-ghi\"}", "{\"h\":\"bearer [REDACTED]\"}", 1);
    assert_redacts_to("{\"h\":\"Basic Zm9vOmJhcg==\"}", "{\"h\":\"Basic [REDACTED]\"}", 1);
    /* Keys anywhere in text. */
    assert_redacts_to("{\"cmd\":\"export KEY=sk-ant-api03-AAAAAAAAAAAAAAAAAAAA && run\"}",
                      "{\"cmd\":\"export KEY=[REDACTED] && run\"}", 1);
    assert_redacts_to("{\"s\":\"sk-proj-abcdefghijklmnopqrstuvwxyz\"}",
                      "{\"s\":\"[REDACTED]\"}", 1);
    assert_redacts_to("{\"s\":[\"ghp_0123456789abcdefghijklmnopqrstuv\",\"AKIAIOSFODNN7EXAMPLE\"]}",
                      "{\"s\":[\"[REDACTED]\",\"[REDACTED]\"]}", 2);
    assert_redacts_to("{\"c\":\"curl -H 'Authorization: Bearer abcdefghijklmnop0123' x\"}",
                      "{\"c\":\"curl -H 'Authorization: Bearer [REDACTED]' x\"}", 1);
    /* Secret headers written as text: the value up to the end of the line (or its quote). */
    assert_redacts_to("{\"s\":\"GET / HTTP/1.1\\r\\nx-api-key: abc\\r\\nAccept: */*\\r\\n\"}",
                      "{\"s\":\"GET / HTTP/1.1\\r\\nx-api-key: [REDACTED]\\r\\nAccept: */*\\r\\n\"}", 1);
    assert_redacts_to("{\"s\":\"Proxy-Authorization:Basic Zm9v\\nCookie:  a=1; b=2\\nSet-Cookie: c=3\"}",
                      "{\"s\":\"Proxy-Authorization:Basic [REDACTED]\\nCookie:  [REDACTED]\\n"
                      "Set-Cookie: [REDACTED]\"}",
                      1);
    assert_redacts_to("{\"s\":\"{\\\"api-key\\\": \\\"k1\\\", \\\"n\\\": 1}\"}",
                      "{\"s\":\"{\\\"api-key\\\": \\\"[REDACTED]\\\", \\\"n\\\": 1}\"}", 1);
    /* Bearer and Basic tokens anywhere, 8 characters or more, not only lowercase letters. */
    assert_redacts_to("{\"s\":\"use Bearer abc12345 here\",\"t\":\"and basic dXNlcjpw now\"}",
                      "{\"s\":\"use Bearer [REDACTED] here\",\"t\":\"and basic [REDACTED] now\"}", 2);
    assert_redacts_to("{\"s\":\"Bearer abc1234 x\",\"t\":\"a basic understanding\"}",
                      "{\"s\":\"Bearer [REDACTED] x\",\"t\":\"a basic understanding\"}", 1);
    assert_redacts_to("{\"s\":\"a Bearer abc1234 x\"}", "{\"s\":\"a Bearer abc1234 x\"}", 0);
    /* Usage counters in text stay. */
    assert_redacts_to("{\"s\":\"input_tokens: 12\\noutput_tokens: 3\\nmax_tokens: 9\"}",
                      "{\"s\":\"input_tokens: 12\\noutput_tokens: 3\\nmax_tokens: 9\"}", 0);
    /* Two in one string count once (one value). */
    assert_redacts_to("{\"s\":\"a sk-aaaaaaaaaaaaaaaaaaaaaa b sk-bbbbbbbbbbbbbbbbbbbbbb c\"}",
                      "{\"s\":\"a [REDACTED] b [REDACTED] c\"}", 1);
    /* Not secrets: short, not at a word boundary, prose. */
    assert_redacts_to("{\"s\":\"sk-short\",\"t\":\"task-aaaaaaaaaaaaaaaaaaaaaaaa\","
                      "\"u\":\"the bearer of bad news\",\"v\":\"Basic setup\"}",
                      "{\"s\":\"sk-short\",\"t\":\"task-aaaaaaaaaaaaaaaaaaaaaaaa\","
                      "\"u\":\"the bearer of bad news\",\"v\":\"Basic [REDACTED]\"}",
                      1);
    assert_redacts_to("{\"canary\":\"E-FAULTLINE-0123abcd\",\"tool\":\"mcp__fs__read\"}",
                      "{\"canary\":\"E-FAULTLINE-0123abcd\",\"tool\":\"mcp__fs__read\"}", 0);
}

/* ---- writer ------------------------------------------------------------------------------ */

static json_t *read_all(const char *path, size_t *n, size_t *malformed)
{
    struct err e = {0};
    struct events_reader *r = events_reader_open(path, &e);
    json_t *a = json_array(), *ev;
    int rc;

    assert_non_null(r);
    while ((rc = events_next(r, &ev)) == 1)
        json_array_append_new(a, ev);
    assert_int_equal(rc, 0);
    *n = json_array_size(a);
    if (malformed)
        *malformed = events_reader_malformed(r);
    events_reader_free(r);
    return a;
}

static void test_writer_stamps(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_writer *w;
    json_t *ev, *all, *x;
    const char *key;
    size_t n, i = 0;
    static const char *const order[] = {"t", "t_us", "seq", "run", "src", "kind", "tool", "args"};
    char *before, *after, *text;

    ut_tmpfile_init(&t);
    w = events_open(t.path, "run-1", "mcp", &e);
    assert_non_null(w);
    assert_int_equal(events_next_seq(w), 0);
    ev = ut_json("{\"tool\":\"read\",\"kind\":\"tool_call\",\"args\":{\"password\":\"hunter2\"}}");
    before = ut_dumps(ev);
    assert_int_equal(events_append(w, ev), 0);
    after = ut_dumps(ev);
    assert_string_equal(before, after); /* the caller's object is not modified */
    free(before);
    free(after);
    json_decref(ev);
    /* The caller's t, seq and src are kept; the writer's counter continues above seq. */
    ev = ut_json("{\"kind\":\"warning\",\"t\":5,\"seq\":10,\"src\":\"agent\",\"run\":\"other\"}");
    assert_int_equal(events_append(w, ev), 0);
    json_decref(ev);
    assert_int_equal(events_next_seq(w), 11);
    ev = ut_json("{\"code\":\"x\"}");
    assert_int_equal(events_emit(w, "warning", ev), 0);
    json_decref(ev);
    assert_int_equal(events_emit(w, "plan_loaded", NULL), 0);
    assert_int_equal(events_next_seq(w), 13);
    events_close(w);

    all = read_all(t.path, &n, NULL);
    assert_int_equal(n, 4);
    ev = json_array_get(all, 0);
    json_object_foreach(ev, key, x)
    {
        assert_string_equal(key, order[i]);
        i++;
    }
    assert_int_equal(i, 8);
    assert_true(json_integer_value(json_object_get(ev, "t")) > 1600000000000LL);
    assert_int_equal(json_integer_value(json_object_get(ev, "t")),
                     json_integer_value(json_object_get(ev, "t_us")) / 1000);
    assert_int_equal(json_integer_value(json_object_get(ev, "seq")), 0);
    assert_string_equal(json_string_value(json_object_get(ev, "run")), "run-1");
    assert_string_equal(json_string_value(json_object_get(ev, "src")), "mcp");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(ev, "args"), "password")),
        "[REDACTED]");
    ev = json_array_get(all, 1);
    assert_int_equal(json_integer_value(json_object_get(ev, "t")), 5);
    assert_null(json_object_get(ev, "t_us")); /* an old writer's t alone: no precision made up */
    assert_int_equal(json_integer_value(json_object_get(ev, "seq")), 10);
    assert_string_equal(json_string_value(json_object_get(ev, "src")), "agent");
    assert_string_equal(json_string_value(json_object_get(ev, "run")), "run-1");
    ev = json_array_get(all, 2);
    assert_int_equal(json_integer_value(json_object_get(ev, "seq")), 11);
    assert_string_equal(json_string_value(json_object_get(ev, "code")), "x");
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 3), "kind")),
                        "plan_loaded");
    json_decref(all);

    /* Compact: one line per event, no spaces. */
    text = ut_slurp(t.path, &n);
    assert_null(strstr(text, ": "));
    assert_null(strstr(text, "hunter2"));
    free(text);
    unlink(t.path);
}

/* The time of an event is when it happened: stamped by events_stamp at creation and kept by the
 * writer however late it writes; t follows t_us; readers get it from events_time_us. */
static void test_writer_time(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_writer *w;
    json_t *ev, *all, *late;
    int64_t before, us;
    size_t n;

    ut_tmpfile_init(&t);
    w = events_open(t.path, "r", "mcp", &e);
    assert_non_null(w);
    before = time_now_us();
    late = ut_json("{\"kind\":\"tool_result\"}");
    events_stamp(late); /* it happened now... */
    us = json_integer_value(json_object_get(late, "t_us"));
    assert_true(us >= before && us <= time_now_us());
    assert_int_equal(json_integer_value(json_object_get(late, "t")), us / 1000);
    events_stamp(late); /* a second stamp keeps the first */
    assert_int_equal(json_integer_value(json_object_get(late, "t_us")), us);
    time_sleep_ms(3);
    ev = ut_json("{\"kind\":\"model_request\"}"); /* ...this one later, but written first */
    assert_int_equal(events_append(w, ev), 0);
    json_decref(ev);
    assert_int_equal(events_append(w, late), 0);
    json_decref(late);
    ev = ut_json("{\"kind\":\"warning\",\"t_us\":1764590000123456}"); /* t from t_us */
    assert_int_equal(events_append(w, ev), 0);
    json_decref(ev);
    ev = ut_json("{\"kind\":\"warning\",\"t\":7,\"t_us\":9000}"); /* both kept */
    assert_int_equal(events_append(w, ev), 0);
    json_decref(ev);
    events_close(w);

    all = read_all(t.path, &n, NULL);
    assert_int_equal(n, 4);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(all, 1), "t_us")), us);
    assert_true(events_time_us(json_array_get(all, 0)) > us); /* file order is not time order */
    assert_int_equal(json_integer_value(json_object_get(json_array_get(all, 2), "t")),
                     1764590000123LL);
    assert_int_equal(events_time_us(json_array_get(all, 2)), 1764590000123456LL);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(all, 3), "t")), 7);
    assert_int_equal(events_time_us(json_array_get(all, 3)), 9000);
    json_decref(all);
    ev = ut_json("{\"t\":5}");
    assert_int_equal(events_time_us(ev), 5000); /* an old file: t * 1000 */
    json_decref(ev);
    ev = ut_json("{\"t\":-5,\"t_us\":\"x\"}");
    assert_int_equal(events_time_us(ev), -1);
    json_decref(ev);
    unlink(t.path);
}

/* events_reader_tell: pread at the offset of a returned line reads that line, across buffer
 * refills, blank lines, \r\n endings, skipped over-long lines and a final line without newline. */
static void test_reader_tell(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_reader *r;
    struct buf b = BUF_INIT;
    const char *line;
    size_t len;
    int fd, got = 0;
    char *back = xmalloc(EVENTS_LINE_MAX);

    ut_tmpfile_init(&t);
    for (int i = 0; i < 3000; i++) {
        buf_addf(&b, "{\"kind\":\"k\",\"i\":%d,\"pad\":\"%0*d\"}%s", i, 200 + i % 300, 0,
                 i % 7 == 0 ? "\r\n" : "\n");
        if (i % 500 == 0)
            buf_adds(&b, "\n");
        if (i == 1500) {
            for (size_t k = 0; k < EVENTS_LINE_MAX + 10; k++)
                buf_addc(&b, 'x');
            buf_addc(&b, '\n');
        }
    }
    buf_adds(&b, "{\"kind\":\"last\"}");
    ut_tmpfile_write(&t, b.data, b.len);
    r = events_reader_open(t.path, &e);
    assert_non_null(r);
    fd = open(t.path, O_RDONLY);
    assert_true(fd >= 0);
    while (events_next_line(r, &line, &len) == 1) {
        assert_int_equal(pread(fd, back, len, (off_t)events_reader_tell(r)), (ssize_t)len);
        assert_memory_equal(back, line, len);
        got++;
    }
    assert_int_equal(got, 3000 + 6 + 1); /* events, blank lines, the last one */
    assert_int_equal(events_reader_malformed(r), 1);
    close(fd);
    events_reader_free(r);
    free(back);
    buf_release(&b);
    unlink(t.path);
}

static void test_writer_invalid(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_writer *w;
    json_t *a = json_array(), *nokind = ut_json("{\"x\":1}"), *numkind = ut_json("{\"kind\":1}");
    char big[400];
    size_t n;
    char *text;

    ut_tmpfile_init(&t);
    w = events_open(t.path, NULL, NULL, &e);
    assert_int_equal(events_append(w, a), ERR_INVALID);
    assert_int_equal(events_append(w, nokind), ERR_INVALID);
    assert_int_equal(events_append(w, numkind), ERR_INVALID);
    assert_int_equal(events_append(w, NULL), ERR_INVALID);
    assert_int_equal(events_emit(w, "", NULL), ERR_INVALID);
    memset(big, 'k', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(events_emit(w, big, NULL), ERR_INVALID);
    assert_int_equal(events_next_seq(w), 0);
    events_close(w);
    text = ut_slurp(t.path, &n);
    assert_int_equal(n, 0);
    free(text);
    json_decref(a);
    json_decref(nokind);
    json_decref(numkind);
    unlink(t.path);
    assert_null(events_open("/nonexistent-dir/events.jsonl", "r", "x", &e));
    assert_int_equal(e.code, ERR_IO);
    events_close(NULL);
}

static void test_writer_literal_secrets(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_writer *w;
    json_t *ev;
    char *text;
    size_t n;

    ut_tmpfile_init(&t);
    w = events_open(t.path, "r", "controller", &e);
    assert_int_equal(events_add_secret(w, "my-upstream-key-123"), 0);
    assert_int_equal(events_add_secret(w, "short"), 0); /* ignored */
    ev = ut_json("{\"kind\":\"model_request\",\"body\":{\"note\":\"key is my-upstream-key-123!\"},"
                 "\"x\":\"short\"}");
    assert_int_equal(events_append(w, ev), 0);
    json_decref(ev);
    /* the 17th secret and every one up to 1024 are redacted too; duplicates do not count */
    for (int i = 1; i < 1024; i++) {
        char v[32];
        snprintf(v, sizeof(v), "upstream-%04d-key", i);
        assert_int_equal(events_add_secret(w, v), 0);
        assert_int_equal(events_add_secret(w, v), 0);
    }
    assert_int_equal(events_add_secret(w, "one-too-many-key"), ERR_LIMIT);
    ev = ut_json("{\"kind\":\"model_request\",\"a\":\"x upstream-0016-key y\","
                 "\"b\":\"upstream-1023-key\",\"c\":\"upstream-0001-keyupstream-0500-key\","
                 "\"upstream-0777-key\":1}");
    assert_int_equal(events_append(w, ev), 0);
    json_decref(ev);
    events_close(w);
    text = ut_slurp(t.path, &n);
    assert_null(strstr(text, "my-upstream-key-123"));
    assert_null(strstr(text, "upstream-0"));
    assert_null(strstr(text, "upstream-1"));
    assert_non_null(strstr(text, "\"c\":\"[REDACTED][REDACTED]\""));
    assert_non_null(strstr(text, "key is [REDACTED]!"));
    assert_non_null(strstr(text, "\"x\":\"short\""));
    free(text);
    unlink(t.path);
}

static void test_writer_io_error(void **state)
{
    struct err e = {0};
    struct events_writer *w = events_open("/dev/full", "r", "x", &e);

    if (w == NULL)
        skip();
    assert_int_equal(events_emit(w, "warning", NULL), ERR_IO);
    events_close(w);
}

/* Reads the only line of path and checks it is at most EVENTS_LINE_MAX and valid. */
static json_t *one_line(const char *path)
{
    size_t n;
    char *text = ut_slurp(path, &n);
    json_t *j;

    assert_true(n <= EVENTS_LINE_MAX);
    assert_true(n > 0 && text[n - 1] == '\n');
    assert_null(memchr(text, '\n', n - 1));
    j = json_loadb(text, n - 1, JSON_ALLOW_NUL, NULL);
    assert_non_null(j);
    free(text);
    return j;
}

static void test_writer_cut_big_string(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_writer *w;
    struct buf big = BUF_INIT;
    json_t *ev, *j;
    const char *s, *m;
    size_t removed = 0;

    ut_tmpfile_init(&t);
    w = events_open(t.path, "r", "mcp", &e);
    for (int i = 0; i < 200000; i++)
        buf_addc(&big, (char)('a' + i % 26));
    ev = json_pack("{s:s,s:s,s:{s:s,s:i}}", "kind", "tool_result", "tool", "read", "result",
                   "text", big.data, "n", 7);
    assert_int_equal(events_append(w, ev), 0);
    events_close(w);
    j = one_line(t.path);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "tool_result");
    assert_string_equal(json_string_value(json_object_get(j, "tool")), "read");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "result"), "n")), 7);
    s = json_string_value(json_object_get(json_object_get(j, "result"), "text"));
    m = strstr(s, "...[cut ");
    assert_non_null(m);
    assert_memory_equal(s, big.data, (size_t)(m - s)); /* a prefix of the original */
    assert_int_equal(sscanf(m, "...[cut %zu bytes]", &removed), 1);
    assert_int_equal((size_t)(m - s) + removed, 200000);
    assert_true(m - s > 60000); /* most of the room is kept */
    json_decref(j);
    json_decref(ev);
    buf_release(&big);
    unlink(t.path);
}

static void test_writer_cut_utf8_and_escapes(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_writer *w;
    struct buf u = BUF_INIT, c = BUF_INIT;
    json_t *ev, *j;

    for (int i = 0; i < 40000; i++)
        buf_adds(&u, "\xc3\xa9\xe2\x82\xac"); /* é€: 5 bytes, 2 characters */
    for (int i = 0; i < 30000; i++)
        buf_addc(&c, (char)1); /* dumps as \u0001: six times its size */
    for (int round = 0; round < 2; round++) {
        ut_tmpfile_init(&t);
        w = events_open(t.path, "r", "mcp", &e);
        ev = json_object();
        json_object_set_new(ev, "kind", json_string("tool_result"));
        json_object_set_new(ev, "a", json_stringn(u.data, u.len));
        json_object_set_new(ev, "b", json_stringn(c.data, c.len));
        json_object_set_new(ev, "c", json_string(round ? "small" : "x"));
        assert_int_equal(events_append(w, ev), 0);
        events_close(w);
        j = one_line(t.path); /* valid JSON: jansson rejects invalid UTF-8 */
        assert_string_equal(json_string_value(json_object_get(j, "kind")), "tool_result");
        assert_non_null(strstr(json_string_value(json_object_get(j, "a")), "...[cut "));
        json_decref(j);
        json_decref(ev);
        unlink(t.path);
    }
    buf_release(&u);
    buf_release(&c);
}

static void test_writer_cut_fallback(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_writer *w;
    json_t *ev = json_object(), *a = json_array(), *j;

    ut_tmpfile_init(&t);
    w = events_open(t.path, "run-9", "world", &e);
    for (int i = 0; i < 30000; i++)
        json_array_append_new(a, json_integer(1000 + i));
    json_object_set_new(ev, "kind", json_string("effect"));
    json_object_set_new(ev, "ids", a);
    assert_int_equal(events_append(w, ev), 0);
    events_close(w);
    j = one_line(t.path);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "effect");
    assert_string_equal(json_string_value(json_object_get(j, "run")), "run-9");
    assert_string_equal(json_string_value(json_object_get(j, "src")), "world");
    assert_true(json_is_true(json_object_get(j, "truncated")));
    assert_true(json_integer_value(json_object_get(j, "original_bytes")) > EVENTS_LINE_MAX);
    assert_null(json_object_get(j, "ids"));
    json_decref(j);
    json_decref(ev);
    unlink(t.path);
}

/* The fallback object copies only short scalars: a huge non-string "run" from the caller (no
 * run set on the writer) is dropped, so the line stays under EVENTS_LINE_MAX. */
static void test_writer_cut_fallback_run(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_writer *w;
    json_t *ev = json_object(), *a = json_array(), *j;
    struct stat st;

    ut_tmpfile_init(&t);
    w = events_open(t.path, NULL, "world", &e);
    assert_non_null(w);
    for (int i = 0; i < 30000; i++)
        json_array_append_new(a, json_integer(1000 + i));
    json_object_set_new(ev, "kind", json_string("effect"));
    json_object_set_new(ev, "run", a);
    assert_int_equal(events_append(w, ev), 0);
    events_close(w);
    assert_int_equal(stat(t.path, &st), 0);
    assert_true(st.st_size > 0 && st.st_size <= EVENTS_LINE_MAX);
    j = one_line(t.path);
    assert_true(json_is_true(json_object_get(j, "truncated")));
    assert_null(json_object_get(j, "run"));
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "effect");
    json_decref(j);
    json_decref(ev);
    unlink(t.path);
}

/* Several processes append to one file at once: every line arrives whole. */
static void test_writer_concurrent_appends(void **state)
{
    enum { PROCS = 4, LINES = 300 };
    struct ut_tmpfile t;
    pid_t pids[PROCS];
    json_t *all;
    size_t n, malformed;
    int count[PROCS] = {0};

    ut_tmpfile_init(&t);
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0) {
            struct err e = {0};
            struct events_writer *w = events_open(t.path, "r", "mcp", &e);
            char pad[8000];
            memset(pad, 'a' + p, sizeof(pad) - 1);
            pad[sizeof(pad) - 1] = '\0';
            for (int i = 0; i < LINES; i++) {
                json_t *ev = json_pack("{s:s,s:i,s:i,s:s}", "kind", "tool_call", "proc", p, "i",
                                       i, "pad", pad);
                if (events_append(w, ev) != 0)
                    _exit(1);
                json_decref(ev);
            }
            events_close(w);
            _exit(0);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int status;
        assert_int_equal(waitpid(pids[p], &status, 0), pids[p]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    all = read_all(t.path, &n, &malformed);
    assert_int_equal(malformed, 0);
    assert_int_equal(n, PROCS * LINES);
    for (size_t i = 0; i < n; i++) {
        json_t *ev = json_array_get(all, i);
        int p = (int)json_integer_value(json_object_get(ev, "proc"));
        assert_in_range(p, 0, PROCS - 1);
        /* Each writer's lines arrive in its order. */
        assert_int_equal(json_integer_value(json_object_get(ev, "i")), count[p]);
        assert_int_equal(json_integer_value(json_object_get(ev, "seq")), count[p]);
        assert_int_equal(json_string_length(json_object_get(ev, "pad")), 7999);
        count[p]++;
    }
    json_decref(all);
    unlink(t.path);
}

/* ---- reader ------------------------------------------------------------------------------ */

static void test_reader_malformed(void **state)
{
    struct ut_tmpfile t;
    static const char text[] =
        "{\"kind\":\"a\",\"seq\":0}\n"
        "not json\n"
        "\n"
        "   \n"
        "[1,2]\n"
        "{\"no\":\"kind\"}\n"
        "{\"kind\":7}\n"
        "{\"kind\":\"b\"\n"
        "{\"kind\":\"c\"} trailing\n"
        "{\"kind\":\"d\",\"s\":\"caf\xc3\xa9\"}\r\n"
        "\"just a string\"\n"
        "{\"kind\":\"e\",\"bad\":\"\xff\xfe\"}\n"
        "{\"kind\":\"f\",\"nul\":\"a\\u0000b\"}\n"
        "{\"kind\":\"g\"}"; /* no final newline */
    json_t *all;
    size_t n, malformed;

    ut_tmpfile_init(&t);
    ut_tmpfile_write(&t, text, sizeof(text) - 1);
    all = read_all(t.path, &n, &malformed);
    assert_int_equal(n, 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "kind")), "a");
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 1), "kind")), "d");
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 2), "kind")), "f");
    assert_int_equal(json_string_length(json_object_get(json_array_get(all, 2), "nul")), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 3), "kind")), "g");
    assert_int_equal(malformed, 8);
    json_decref(all);
    unlink(t.path);
}

static void test_reader_overlong(void **state)
{
    struct ut_tmpfile t;
    struct buf b = BUF_INIT;
    struct err e = {0};
    struct events_reader *r;
    const char *line;
    size_t len;
    json_t *ev;

    ut_tmpfile_init(&t);
    buf_adds(&b, "{\"kind\":\"first\"}\n");
    /* A line of exactly EVENTS_LINE_MAX bytes with its newline: accepted. */
    buf_adds(&b, "{\"kind\":\"fits\",\"p\":\"");
    while (b.len < 17 + EVENTS_LINE_MAX - 3)
        buf_addc(&b, 'x');
    buf_adds(&b, "\"}\n");
    /* One byte more: skipped. Then a 1 MiB line: skipped, counted once. */
    buf_adds(&b, "{\"kind\":\"over\",\"p\":\"");
    for (int i = 0; i < EVENTS_LINE_MAX - 22; i++)
        buf_addc(&b, 'y');
    buf_adds(&b, "\"}\n");
    buf_adds(&b, "{\"kind\":\"huge\",\"p\":\"");
    for (int i = 0; i < (1 << 20); i++)
        buf_addc(&b, 'z');
    buf_adds(&b, "\"}\n{\"kind\":\"last\"}\n");
    ut_tmpfile_write(&t, b.data, b.len);
    buf_release(&b);

    r = events_reader_open(t.path, &e);
    assert_non_null(r);
    assert_int_equal(events_next(r, &ev), 1);
    assert_string_equal(json_string_value(json_object_get(ev, "kind")), "first");
    json_decref(ev);
    assert_int_equal(events_next_line(r, &line, &len), 1);
    assert_int_equal(len, EVENTS_LINE_MAX - 1);
    assert_memory_equal(line, "{\"kind\":\"fits\"", 14);
    assert_int_equal(events_next(r, &ev), 1);
    assert_string_equal(json_string_value(json_object_get(ev, "kind")), "last");
    json_decref(ev);
    assert_int_equal(events_next(r, &ev), 0);
    assert_null(ev);
    assert_int_equal(events_reader_malformed(r), 2);
    events_reader_count_malformed(r);
    assert_int_equal(events_reader_malformed(r), 3);
    events_reader_free(r);
    unlink(t.path);

    /* An overlong final line with no newline at all. */
    ut_tmpfile_init(&t);
    b = (struct buf)BUF_INIT;
    buf_adds(&b, "{\"kind\":\"a\"}\n");
    for (int i = 0; i < 3 * EVENTS_LINE_MAX; i++)
        buf_addc(&b, 'q');
    ut_tmpfile_write(&t, b.data, b.len);
    buf_release(&b);
    r = events_reader_open(t.path, &e);
    assert_int_equal(events_next(r, &ev), 1);
    json_decref(ev);
    assert_int_equal(events_next(r, &ev), 0);
    assert_int_equal(events_reader_malformed(r), 1);
    events_reader_free(r);
    unlink(t.path);
}

static void test_reader_follow(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_reader *r;
    json_t *ev;

    ut_tmpfile_init(&t);
    ut_tmpfile_write(&t, "{\"kind\":\"a\"}\n{\"kind\":\"b", 23);
    r = events_reader_open(t.path, &e);
    events_reader_set_follow(r, 1);
    assert_int_equal(events_next(r, &ev), 1);
    json_decref(ev);
    assert_int_equal(events_next(r, &ev), 0); /* half a line is held back */
    assert_int_equal(events_reader_malformed(r), 0);
    ut_tmpfile_append(&t, "\"}\n{\"kind\":\"c\"}\n");
    assert_int_equal(events_next(r, &ev), 1);
    assert_string_equal(json_string_value(json_object_get(ev, "kind")), "b");
    json_decref(ev);
    assert_int_equal(events_next(r, &ev), 1);
    assert_string_equal(json_string_value(json_object_get(ev, "kind")), "c");
    json_decref(ev);
    assert_int_equal(events_next(r, &ev), 0);
    events_reader_free(r);

    /* Without follow mode, data appended after the end is still picked up. */
    r = events_reader_open(t.path, &e);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(events_next(r, &ev), 1);
        json_decref(ev);
    }
    assert_int_equal(events_next(r, &ev), 0);
    ut_tmpfile_append(&t, "{\"kind\":\"d\"}\n");
    assert_int_equal(events_next(r, &ev), 1);
    assert_string_equal(json_string_value(json_object_get(ev, "kind")), "d");
    json_decref(ev);
    events_reader_free(r);
    events_reader_free(NULL);
    unlink(t.path);
    assert_null(events_reader_open("/nonexistent/events.jsonl", &e));
    assert_int_equal(e.code, ERR_IO);
}

/* Many lines across many buffer refills: every one comes back, in order. */
static void test_reader_many_lines(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_writer *w;
    struct events_reader *r;
    json_t *ev;
    int i = 0;

    ut_tmpfile_init(&t);
    w = events_open(t.path, "r", "runner", &e);
    for (int k = 0; k < 20000; k++) {
        ev = json_pack("{s:s,s:i,s:s#}", "kind", "tool_call", "k", k, "pad",
                       "0123456789abcdefghijklmnopqrstuvwxyz0123456789", (int)(k % 47));
        assert_int_equal(events_append(w, ev), 0);
        json_decref(ev);
    }
    events_close(w);
    r = events_reader_open(t.path, &e);
    while (events_next(r, &ev) == 1) {
        assert_int_equal(json_integer_value(json_object_get(ev, "k")), i);
        assert_int_equal(json_integer_value(json_object_get(ev, "seq")), i);
        json_decref(ev);
        i++;
    }
    assert_int_equal(i, 20000);
    assert_int_equal(events_reader_malformed(r), 0);
    events_reader_free(r);
    unlink(t.path);
}

/* events_hold collects lines in memory; events_release writes them in order, whole; a batch
 * that outgrows 256 KiB is written early; events_close releases what is held. */
static void test_writer_hold_release(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_writer *w;
    struct stat st;
    json_t *ev, *all;
    size_t n;
    char pad[1000];

    ut_tmpfile_init(&t);
    w = events_open(t.path, "r", "controller", &e);
    assert_non_null(w);
    events_hold(w);
    for (int k = 0; k < 3; k++) {
        ev = json_pack("{s:s,s:i,s:s}", "kind", "model_request", "k", k, "api_key", "hunter2");
        assert_int_equal(events_append(w, ev), 0);
        json_decref(ev);
    }
    assert_int_equal(stat(t.path, &st), 0);
    assert_int_equal(st.st_size, 0); /* held */
    assert_int_equal(events_release(w), 0);
    all = read_all(t.path, &n, NULL);
    assert_int_equal(n, 3);
    for (size_t k = 0; k < 3; k++) {
        ev = json_array_get(all, k);
        assert_int_equal(json_integer_value(json_object_get(ev, "seq")), k);
        assert_string_equal(json_string_value(json_object_get(ev, "api_key")), "[REDACTED]");
    }
    json_decref(all);
    assert_int_equal(events_release(w), 0); /* not holding: nothing to do */

    /* Past 256 KiB the batch is written early, never cutting a line. */
    memset(pad, 'x', sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = '\0';
    events_hold(w);
    for (int k = 0; k < 400; k++) {
        ev = json_pack("{s:s,s:i,s:s}", "kind", "model_response", "k", k, "pad", pad);
        assert_int_equal(events_append(w, ev), 0);
        json_decref(ev);
    }
    assert_int_equal(stat(t.path, &st), 0);
    assert_true(st.st_size > 256 * 1024 - 2048 && st.st_size < 400 * 1000);
    events_close(w); /* releases the rest */
    all = read_all(t.path, &n, NULL);
    assert_int_equal(n, 403);
    for (size_t k = 3; k < 403; k++)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(all, k), "k")), k - 3);
    json_decref(all);
    unlink(t.path);
}

/* ---- view -------------------------------------------------------------------------------- */

/* The view accepts a line exactly when jansson does (as an event), on hand-picked cases; the
 * fuzz target checks the same on generated ones. */
static void test_view_accepts_as_jansson(void **state)
{
    static const char *const lines[] = {
        "{\"kind\":\"a\"}",
        " {\"kind\" : \"a\" , \"x\" : [ 1 , 2 ] } ",
        "{\"kind\":\"a\",\"x\":{}}",
        "{\"kind\":\"a\",\"x\":[]}",
        "{\"kind\":\"\\u00e9\\ud83d\\ude00\\n\\/\"}",
        "{\"kind\":\"a\",\"n\":\"\\u0000\"}",
        "{\"kind\":\"a\",\"k\\u0000\":1}",
        "{\"kind\":\"a\",\"s\":\"\\ud800\"}",
        "{\"kind\":\"a\",\"s\":\"\\ud800\\u0041\"}",
        "{\"kind\":\"a\",\"s\":\"\\udc00\"}",
        "{\"kind\":\"a\",\"s\":\"\\x\"}",
        "{\"kind\":\"a\",\"s\":\"\\u12\"}",
        "{\"kind\":\"a\",\"s\":\"tab\there\"}",
        "{\"kind\":\"a\",\"s\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
        "{\"kind\":\"a\",\"s\":\"\xc0\xaf\"}",
        "{\"kind\":\"a\",\"s\":\"\xed\xa0\x80\"}",
        "{\"kind\":\"a\",\"s\":\"\xf4\x90\x80\x80\"}",
        "{\"kind\":\"a\",\"s\":\"\xe2\x82\"}",
        "{\"kind\":\"a\",\"n\":-0}",
        "{\"kind\":\"a\",\"n\":01}",
        "{\"kind\":\"a\",\"n\":1.}",
        "{\"kind\":\"a\",\"n\":.5}",
        "{\"kind\":\"a\",\"n\":+1}",
        "{\"kind\":\"a\",\"n\":1e}",
        "{\"kind\":\"a\",\"n\":1E+2}",
        "{\"kind\":\"a\",\"n\":9223372036854775807}",
        "{\"kind\":\"a\",\"n\":9223372036854775808}",
        "{\"kind\":\"a\",\"n\":-9223372036854775808}",
        "{\"kind\":\"a\",\"n\":-9223372036854775809}",
        "{\"kind\":\"a\",\"n\":1e308}",
        "{\"kind\":\"a\",\"n\":1e309}",
        "{\"kind\":\"a\",\"n\":1e-400}",
        "{\"kind\":\"a\",\"t\":true,\"f\":false,\"z\":null}",
        "{\"kind\":\"a\",\"t\":tru}",
        "{\"kind\":\"a\",\"t\":truex}",
        "{\"kind\":\"a\",}",
        "{\"kind\":\"a\",\"x\":[1,]}",
        "{\"kind\":\"a\"} x",
        "{\"kind\":\"a\"}}",
        "{\"kind\" \"a\"}",
        "{kind:\"a\"}",
        "{\"kind\":\"a\",\"kind\":3}",
        "{\"kind\":3,\"kind\":\"a\"}",
        "{\"kind\":7}",
        "{\"other\":1}",
        "[{\"kind\":\"a\"}]",
        "\"kind\"",
        "{}",
        "{",
        "",
    };
    struct events_view v;

    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        size_t n = strlen(lines[i]);
        json_t *j = json_loadb(lines[i], n, JSON_ALLOW_NUL, NULL);
        int jok = j && json_is_object(j) && json_is_string(json_object_get(j, "kind"));
        int vok = events_view_parse(&v, lines[i], n) == 0;
        if (jok != vok)
            fail_msg("line %zu '%s': jansson %d, view %d", i, lines[i], jok, vok);
        json_decref(j);
    }
}

static void test_view_depth(void **state)
{
    struct buf b = BUF_INIT;
    struct events_view v;

    for (int depth = 2047; depth <= 2048; depth++) {
        buf_reset(&b);
        buf_adds(&b, "{\"kind\":\"d\",\"a\":");
        for (int i = 0; i < depth; i++)
            buf_addc(&b, '[');
        for (int i = 0; i < depth; i++)
            buf_addc(&b, ']');
        buf_addc(&b, '}');
        /* The object is level 1: 2047 arrays inside it reach jansson's limit of 2048. */
        assert_int_equal(events_view_parse(&v, b.data, b.len), depth == 2047 ? 0 : ERR_PARSE);
    }
    buf_release(&b);
}

static void test_view_accessors(void **state)
{
    static const char line[] =
        "{\"t\":1732900000123,\"kind\":\"model_\\u0072esponse\",\"cost_usd\":0.25,"
        "\"usage\":{\"input_tokens\":10},\"ok\":true,\"no\":false,\"nil\":null,"
        "\"s\":\"caf\\u00e9 \\\"q\\\"\",\"k\\u0065y\":\"esc key\",\"big\":12345678901234,"
        "\"neg\":-5,\"e\":2e3,\"dup\":1,\"dup\":2}";
    struct events_view v;
    char out[64], tiny[4];
    size_t len;
    long long ll;
    double d;
    int b;
    json_t *j;
    const char *raw;

    assert_int_equal(events_view_parse(&v, line, sizeof(line) - 1), 0);
    assert_int_equal(v.kind_len, 14);
    assert_memory_equal(v.kind, "model_response", 14);
    assert_true(events_view_is(&v, "kind", "model_response"));
    assert_false(events_view_is(&v, "kind", "model_respons"));
    assert_false(events_view_is(&v, "cost_usd", "0.25"));
    assert_int_equal(events_view_number(&v, "cost_usd", &d), 0);
    assert_true(d == 0.25);
    assert_int_equal(events_view_int(&v, "cost_usd", &ll), ERR_NOTFOUND);
    assert_int_equal(events_view_int(&v, "t", &ll), 0);
    assert_true(ll == 1732900000123LL);
    assert_int_equal(events_view_int(&v, "big", &ll), 0);
    assert_true(ll == 12345678901234LL);
    assert_int_equal(events_view_int(&v, "neg", &ll), 0);
    assert_true(ll == -5);
    assert_int_equal(events_view_int(&v, "e", &ll), ERR_NOTFOUND);
    assert_int_equal(events_view_number(&v, "e", &d), 0);
    assert_true(d == 2000);
    assert_int_equal(events_view_int(&v, "dup", &ll), 0);
    assert_true(ll == 2); /* the last one wins, as in jansson */
    assert_int_equal(events_view_bool(&v, "ok", &b), 0);
    assert_true(b == 1);
    assert_int_equal(events_view_bool(&v, "no", &b), 0);
    assert_true(b == 0);
    assert_int_equal(events_view_bool(&v, "nil", &b), ERR_NOTFOUND);
    assert_int_equal(events_view_number(&v, "s", &d), ERR_NOTFOUND);
    assert_int_equal(events_view_string(&v, "s", out, sizeof(out), &len), 0);
    assert_string_equal(out, "caf\xc3\xa9 \"q\"");
    assert_int_equal(len, 9);
    assert_int_equal(events_view_string(&v, "s", tiny, sizeof(tiny), &len), ERR_LIMIT);
    assert_string_equal(tiny, "caf");
    assert_int_equal(len, 9);
    assert_int_equal(events_view_string(&v, "usage", out, sizeof(out), NULL), ERR_NOTFOUND);
    assert_int_equal(events_view_string(&v, "absent", out, sizeof(out), NULL), ERR_NOTFOUND);
    assert_true(events_view_is(&v, "key", "esc key")); /* an escaped key matches */
    raw = events_view_raw(&v, "usage", &len);
    assert_non_null(raw);
    assert_int_equal(len, 19);
    assert_memory_equal(raw, "{\"input_tokens\":10}", 19);
    assert_null(events_view_raw(&v, "absent", &len));
    j = events_view_get(&v, "usage");
    assert_int_equal(json_integer_value(json_object_get(j, "input_tokens")), 10);
    json_decref(j);
    assert_null(events_view_get(&v, "absent"));
    j = events_view_json(&v);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "model_response");
    json_decref(j);
}

static void test_view_time(void **state)
{
    static const struct {
        const char *line;
        int64_t us;
    } cases[] = {
        {"{\"kind\":\"k\",\"t\":5,\"t_us\":5123}", 5123},
        {"{\"t\":5,\"kind\":\"k\"}", 5000}, /* an older writer: t only */
        {"{\"kind\":\"k\",\"t\":5,\"t_us\":-1}", 5000},
        {"{\"kind\":\"k\",\"t\":\"5\"}", -1},
        {"{\"kind\":\"k\",\"t\":9223372036854775807}", -1},
        {"{\"kind\":\"k\"}", -1},
    };
    struct events_view v;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *j = ut_json(cases[i].line);
        assert_int_equal(events_view_parse(&v, cases[i].line, strlen(cases[i].line)), 0);
        assert_int_equal(events_view_time_us(&v), cases[i].us);
        assert_int_equal(events_time_us(j), cases[i].us); /* the tree reader agrees */
        json_decref(j);
    }
}

static void test_view_many_fields(void **state)
{
    struct buf b = BUF_INIT;
    struct events_view v;
    long long ll;

    buf_adds(&b, "{");
    for (int i = 0; i < 100; i++)
        buf_addf(&b, "\"f%d\":%d,", i, i);
    buf_adds(&b, "\"f3\":333,\"kind\":\"wide\"}");
    assert_int_equal(events_view_parse(&v, b.data, b.len), 0);
    assert_true(v.overflow);
    assert_int_equal(v.nfields, EVENTS_VIEW_FIELDS);
    assert_true(events_view_is(&v, "kind", "wide")); /* beyond the index */
    assert_int_equal(events_view_int(&v, "f99", &ll), 0);
    assert_true(ll == 99);
    assert_int_equal(events_view_int(&v, "f3", &ll), 0);
    assert_true(ll == 333); /* the later duplicate, beyond the index, wins */
    assert_int_equal(events_view_int(&v, "f100", &ll), ERR_NOTFOUND);
    buf_release(&b);
}

/* events_next_view sees the same events and malformed lines as events_next. */
static void test_view_reader(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_reader *r1, *r2;
    struct events_view v;
    json_t *ev;
    static const char text[] = "{\"kind\":\"a\"}\nbad\n\n{\"kind\":\"b\",\"x\":1\x00}\n"
                               "{\"kind\":\"c\",\"x\":[1,2]}\r\n{\"kind\":5}\n{\"kind\":\"d\"}";
    int n1 = 0, n2 = 0;

    ut_tmpfile_init(&t);
    ut_tmpfile_write(&t, text, sizeof(text) - 1);
    r1 = events_reader_open(t.path, &e);
    r2 = events_reader_open(t.path, &e);
    while (events_next(r1, &ev) == 1) {
        n1++;
        json_decref(ev);
    }
    while (events_next_view(r2, &v) == 1) {
        assert_memory_equal(v.kind, n2 == 0 ? "a" : n2 == 1 ? "c" : "d", 1);
        n2++;
    }
    assert_int_equal(n1, 3);
    assert_int_equal(n2, 3);
    assert_int_equal(events_reader_malformed(r1), 3);
    assert_int_equal(events_reader_malformed(r2), 3);
    events_reader_free(r1);
    events_reader_free(r2);
    unlink(t.path);
}

/* The redaction corpus: tests/data/redact/NAME.in redacts to NAME.out (byte for byte; a near
 * miss has NAME.out equal to NAME.in). A new case is two new files. */
static void test_redact_corpus(void **state)
{
    const char *root = getenv("FAULTLINE_ROOT");
    char dir[512], path[800];
    struct dirent *de;
    int ncases = 0, nfail = 0;
    DIR *d;

    snprintf(dir, sizeof(dir), "%s/tests/data/redact", root ? root : ".");
    d = opendir(dir);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        struct buf in = BUF_INIT, want = BUF_INIT;
        struct err e = {0};
        json_t *ev;
        if (len < 4 || strcmp(de->d_name + len - 3, ".in") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        assert_int_equal(fs_read_file(path, 1 << 20, &in, &e), 0);
        path[strlen(path) - 3] = '\0';
        snprintf(path + strlen(path), sizeof(path) - strlen(path), ".out");
        assert_int_equal(fs_read_file(path, 1 << 20, &want, &e), 0);
        ev = json_pack("{s:s%}", "s", in.data, in.len);
        events_redact(ev);
        const char *got = json_string_value(json_object_get(ev, "s"));
        if (strlen(got) != want.len || memcmp(got, want.data, want.len) != 0) {
            print_error("redact corpus %s:\n  got      %s  expected %s", de->d_name, got, want.data);
            nfail++;
        }
        json_decref(ev);
        buf_release(&in);
        buf_release(&want);
        ncases++;
    }
    closedir(d);
    assert_true(ncases >= 20);
    assert_int_equal(nfail, 0);
}

/* Appends {"kind":"tool_result","v": V} with V as a tree (raw 0) or as its raw text (raw 1) to a
 * new file and returns the line, parsed, without t, t_us and seq; *line gets the text (caller
 * frees). */
static json_t *write_value(const char *v, int raw, const char *literal, char **line)
{
    struct ut_tmpfile t;
    struct err e = {0};
    struct events_writer *w;
    json_t *ev = json_pack("{s:s}", "kind", "tool_result"), *got;
    size_t n;

    ut_tmpfile_init(&t);
    w = events_open(t.path, "r", "mcp", &e);
    assert_non_null(w);
    if (literal)
        assert_int_equal(events_add_secret(w, literal), 0);
    if (raw) {
        json_t *r = events_raw_new(v, strlen(v));
        assert_non_null(r);
        json_object_set_new(ev, "v", r);
    } else {
        json_t *tree = json_loads(v, JSON_DECODE_ANY, NULL);
        assert_non_null(tree);
        json_object_set_new(ev, "v", tree);
    }
    assert_int_equal(events_append(w, ev), 0);
    json_decref(ev);
    events_close(w);
    *line = ut_slurp(t.path, &n);
    unlink(t.path);
    assert_true(n > 0 && (*line)[n - 1] == '\n' && strchr(*line, '\n') == *line + n - 1);
    got = json_loadb(*line, n - 1, 0, NULL);
    assert_non_null(got); /* one valid JSON line */
    json_object_del(got, "t");
    json_object_del(got, "t_us");
    json_object_del(got, "seq");
    return got;
}

/* A raw value (events_raw_new) is written as the line's own text when nothing in it needs
 * redacting, and redacted exactly as the same value given as a tree otherwise: every rule of
 * the walk (secret names, header pairs, name/value pairs, credentials in strings and keys,
 * escaped ones, registered literals, nesting past the walk's depth). */
static void test_raw_values(void **state)
{
    static const char *const cases[] = {
        "{ \"message\" : \"hello\",  \"n\":1.50, \"a\":[1,{\"b\":null}] }",
        "{\"api_key\":\"abc\",\"ok\":1}",
        "{\"deep\":{\"x\":[{\"refresh_token\":\"r\"}]}}",
        "{\"headers\":[[\"Authorization\",\"Bearer x\"],[\"Accept\",\"json\"]]}",
        "{\"headers\":[{\"value\":\"k1\",\"name\":\"x-api-key\"},{\"name\":\"Host\",\"value\":\"h\"}]}",
        "{\"cmd\":\"export KEY=sk-ant-api03-AAAAAAAAAAAAAAAAAAAA && run\"}",
        "{\"cmd\":\"sk\\u002dant-api03-AAAAAAAAAAAAAAAAAAAA\"}",
        "{\"m\":{\"sk-ant-api03-AAAAAAAAAAAAAAAAAAAA\":1,\"ok\":2}}",
        "{\"pass\\u0077ord\":\"hunter2\"}",
        "{\"note\":\"key is my-upstream-key-123!\"}",
        "[\"Cookie\",\"s=1\"]",
        "\"ghp_0123456789abcdefghijklmnopqrstuv\"",
        "{\"token\":\"[REDACTED]\",\"e\":\"caf\\u00e9 \\ud83d\\ude00\"}",
    };
    char *a, *b;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *tree = write_value(cases[i], 0, "my-upstream-key-123", &a);
        json_t *raw = write_value(cases[i], 1, "my-upstream-key-123", &b);
        if (!json_equal(tree, raw))
            fail_msg("case %zu: tree %s raw %s", i, a, b);
        assert_null(strstr(b, "sk-ant-api03-A"));
        assert_null(strstr(b, "hunter2"));
        assert_null(strstr(b, "my-upstream"));
        json_decref(tree);
        json_decref(raw);
        free(a);
        free(b);
    }
    /* clean: the text as it came, spacing and number spelling kept (no tree was dumped) */
    json_decref(write_value(cases[0], 1, NULL, &b));
    assert_non_null(strstr(b, "\"v\":{ \"message\" : \"hello\",  \"n\":1.50, \"a\":[1,{\"b\":null}] }}"));
    free(b);
    /* deeper than the walk looks: redacted as the tree is (cleared), never passed through */
    {
        struct buf d = BUF_INIT;
        json_t *tree, *raw;
        for (int i = 0; i < 300; i++)
            buf_adds(&d, "[");
        buf_adds(&d, "\"x\"");
        for (int i = 0; i < 300; i++)
            buf_adds(&d, "]");
        tree = write_value(d.data, 0, NULL, &a);
        raw = write_value(d.data, 1, NULL, &b);
        assert_true(json_equal(tree, raw));
        json_decref(tree);
        json_decref(raw);
        free(a);
        free(b);
        buf_release(&d);
    }
}

/* A raw value must be one JSON text jansson takes: anything else is refused, nothing made. */
static void test_raw_refused(void **state)
{
    static const char *const bad[] = {"{\"a\":", "", "{\"a\":1} x", "\"\\ud800\"", "1e400",
                                      "{\"a\":1}{\"b\":2}", "{\"a\":\"\x01\"}", "\"\xc3\x28\""};
    json_t *ev = json_pack("{s:s}", "kind", "tool_call");

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_null(events_raw_new(bad[i], strlen(bad[i])));
        assert_int_equal(ev_set_raw(ev, "args", bad[i], strlen(bad[i])), ERR_PARSE);
    }
    assert_null(json_object_get(ev, "args"));
    assert_int_equal(ev_set_raw(ev, "args", "{\"x\":1}", 7), 0);
    json_decref(ev);
}

/* events_dump (what a seam sends a controller) splices raw values as their text; a raw value
 * that makes the line too long is cut like any other value. */
static void test_raw_dump_and_cut(void **state)
{
    struct buf b = BUF_INIT, big = BUF_INIT;
    json_t *ev = json_pack("{s:s, s:i}", "kind", "tool_call", "n", 1), *back;
    char *line;

    json_object_set_new(ev, "args", events_raw_new("{ \"a\" : 1 }", 11));
    assert_int_equal(events_dump(ev, &b), 0);
    assert_non_null(strstr(b.data, "\"args\":{ \"a\" : 1 }"));
    back = json_loadb(b.data, b.len, 0, NULL);
    assert_non_null(back);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(back, "args"), "a")), 1);
    json_decref(back);
    json_decref(ev);
    buf_release(&b);
    buf_adds(&big, "{\"text\":\"");
    for (int i = 0; i < EVENTS_LINE_MAX; i++)
        buf_addc(&big, 'y');
    buf_adds(&big, "\"}");
    back = write_value(big.data, 1, NULL, &line);
    assert_true(strlen(line) <= EVENTS_LINE_MAX);
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(back, "v"), "text")),
                           "[cut "));
    json_decref(back);
    free(line);
    buf_release(&big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_names),
        cmocka_unit_test(test_redact_fields),
        cmocka_unit_test(test_redact_header_lists),
        cmocka_unit_test(test_redact_strings),
        cmocka_unit_test(test_redact_long_words),
        cmocka_unit_test(test_redact_corpus),
        cmocka_unit_test(test_writer_stamps),
        cmocka_unit_test(test_writer_time),
        cmocka_unit_test(test_reader_tell),
        cmocka_unit_test(test_writer_invalid),
        cmocka_unit_test(test_writer_literal_secrets),
        cmocka_unit_test(test_writer_io_error),
        cmocka_unit_test(test_writer_cut_big_string),
        cmocka_unit_test(test_writer_cut_utf8_and_escapes),
        cmocka_unit_test(test_writer_cut_fallback),
        cmocka_unit_test(test_writer_cut_fallback_run),
        cmocka_unit_test(test_writer_concurrent_appends),
        cmocka_unit_test(test_writer_hold_release),
        cmocka_unit_test(test_reader_malformed),
        cmocka_unit_test(test_reader_overlong),
        cmocka_unit_test(test_reader_follow),
        cmocka_unit_test(test_reader_many_lines),
        cmocka_unit_test(test_view_accepts_as_jansson),
        cmocka_unit_test(test_view_depth),
        cmocka_unit_test(test_view_accessors),
        cmocka_unit_test(test_view_time),
        cmocka_unit_test(test_view_many_fields),
        cmocka_unit_test(test_view_reader),
        cmocka_unit_test(test_raw_values),
        cmocka_unit_test(test_raw_refused),
        cmocka_unit_test(test_raw_dump_and_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
