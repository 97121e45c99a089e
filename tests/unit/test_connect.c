/*
 * test_connect: the hook settings `faultline connect` merges (src/run/connect.c): each
 * harness's entries added to a file that has others (kept, in their order), idempotence, a
 * moved binary, removal of only faultline's entries, refusals of files that are not JSON or
 * not shaped as the harness reads them, and the unified diff.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "run/connect.h"
#include "util/buf.h"
#include "helpers.h"
#include "util/banned.h"

#define FL "/opt/fl/bin/faultline"

/* connect_apply that must succeed; returns the new text (caller frees) and *changed. */
static char *apply(enum connect_harness h, const char *old, const char *self, int remove,
                   int *changed)
{
    struct buf out = BUF_INIT;
    struct err e = {0};
    if (connect_apply(h, "f.json", old, old ? strlen(old) : 0, self,
                      remove ? CONNECT_REMOVE : CONNECT_ADD, &out, changed, &e) < 0)
        fail_msg("connect_apply: %s", e.msg);
    return buf_detach(&out, NULL);
}

static void expect_error(enum connect_harness h, const char *old, int code, const char *msg)
{
    struct buf out = BUF_INIT;
    struct err e = {0};
    int changed = 1;
    assert_int_equal(connect_apply(h, "f.json", old, strlen(old), FL, CONNECT_ADD, &out, &changed, &e), code);
    assert_int_equal(changed, 0);
    if (strcmp(e.msg, msg) != 0)
        fail_msg("got '%s', want '%s'", e.msg, msg);
    buf_release(&out);
}

static void test_names(void **state)
{
    enum connect_harness h;
    assert_int_equal(connect_harness_find("codex", &h), 0);
    assert_int_equal(h, CONNECT_CODEX);
    assert_int_equal(connect_harness_find("claude", &h), ERR_NOTFOUND);
    assert_string_equal(connect_settings_path(CONNECT_CLAUDE_CODE), ".claude/settings.json");
    assert_string_equal(connect_settings_path(CONNECT_CODEX), ".codex/hooks.json");
    assert_string_equal(connect_settings_path(CONNECT_CURSOR), ".cursor/hooks.json");
    assert_string_equal(connect_harness_name(CONNECT_CURSOR), "cursor");
}

static void test_new_files(void **state)
{
    int changed;
    char *t = apply(CONNECT_CLAUDE_CODE, NULL, FL, 0, &changed);
    json_t *j = ut_json(t);
    assert_true(changed);
    ut_assert_json(j, "{\"hooks\":{\"PreToolUse\":[{\"matcher\":\"*\",\"hooks\":[{\"type\":"
                      "\"command\",\"command\":\"" FL " gate claude-code\",\"timeout\":30}]}]}}");
    assert_int_equal(t[strlen(t) - 1], '\n');
    json_decref(j);
    free(t);

    t = apply(CONNECT_CODEX, "  \n", FL, 0, &changed); /* blank: as missing */
    j = ut_json(t);
    ut_assert_json(j, "{\"hooks\":{\"PreToolUse\":[{\"hooks\":[{\"type\":\"command\","
                      "\"command\":\"" FL " gate codex\",\"timeout\":30}]}]}}");
    json_decref(j);
    free(t);

    t = apply(CONNECT_CURSOR, NULL, FL, 0, &changed);
    j = ut_json(t);
    ut_assert_json(j, "{\"version\":1,\"hooks\":{"
                      "\"beforeShellExecution\":[{\"command\":\"" FL " gate cursor\"}],"
                      "\"beforeMCPExecution\":[{\"command\":\"" FL " gate cursor\"}],"
                      "\"preToolUse\":[{\"command\":\"" FL " gate cursor\"}]}}");
    json_decref(j);
    free(t);

    /* a path that needs quoting */
    t = apply(CONNECT_CLAUDE_CODE, NULL, "/my dir/it's/faultline", 0, &changed);
    assert_non_null(strstr(t, "\"command\": \"'/my dir/it'\\\\''s/faultline' gate claude-code\""));
    /* and is recognised as ours again */
    char *again = apply(CONNECT_CLAUDE_CODE, t, "/my dir/it's/faultline", 0, &changed);
    assert_false(changed);
    assert_string_equal(again, t);
    free(again);
    free(t);
    /* removing from a missing file: nothing */
    t = apply(CONNECT_CODEX, NULL, FL, 1, &changed);
    assert_false(changed);
    assert_string_equal(t, "");
    free(t);
}

static const char *const claude_existing =
    "{\n"
    "  \"permissions\": {\"allow\": [\"Bash(ls:*)\"]},\n"
    "  \"hooks\": {\n"
    "    \"PostToolUse\": [{\"matcher\": \"Write\", \"hooks\": [{\"type\": \"command\", "
    "\"command\": \"prettier\"}]}],\n"
    "    \"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", "
    "\"command\": \"./check.sh\"}]}]\n"
    "  },\n"
    "  \"model\": \"x\"\n"
    "}";

/* Every other key and entry stays, in its order; a second connect changes nothing; --remove
 * gives back the same JSON. */
static void test_merge_keeps_entries(void **state)
{
    int changed;
    char *t = apply(CONNECT_CLAUDE_CODE, claude_existing, FL, 0, &changed);
    json_t *j = ut_json(t), *before = ut_json(claude_existing);
    assert_true(changed);
    ut_assert_json(
        j, "{\"permissions\":{\"allow\":[\"Bash(ls:*)\"]},\"hooks\":{\"PostToolUse\":[{"
           "\"matcher\":\"Write\",\"hooks\":[{\"type\":\"command\",\"command\":\"prettier\"}]}],"
           "\"PreToolUse\":[{\"matcher\":\"Bash\",\"hooks\":[{\"type\":\"command\",\"command\":"
           "\"./check.sh\"}]},{\"matcher\":\"*\",\"hooks\":[{\"type\":\"command\",\"command\":"
           "\"" FL " gate claude-code\",\"timeout\":30}]}]},\"model\":\"x\"}");
    /* key order kept */
    assert_true(strstr(t, "\"permissions\"") < strstr(t, "\"hooks\""));
    assert_true(strstr(t, "\"hooks\"") < strstr(t, "\"model\""));
    assert_true(strstr(t, "PostToolUse") < strstr(t, "PreToolUse"));
    assert_true(strstr(t, "check.sh") < strstr(t, " gate claude-code"));

    char *t2 = apply(CONNECT_CLAUDE_CODE, t, FL, 0, &changed);
    assert_false(changed);
    assert_string_equal(t2, t); /* left byte for byte */
    free(t2);

    char *r = apply(CONNECT_CLAUDE_CODE, t, FL, 1, &changed);
    json_t *rj = ut_json(r);
    assert_true(changed);
    assert_true(json_equal(rj, before));
    /* removing again: nothing */
    char *r2 = apply(CONNECT_CLAUDE_CODE, r, FL, 1, &changed);
    assert_false(changed);
    free(r2);
    json_decref(rj);
    free(r);
    json_decref(j);
    json_decref(before);
    free(t);
}

/* A moved binary: the entry is updated in place, not doubled; another program's `gate` is
 * not ours; the other harnesses' gates are not ours either. */
static void test_moved_and_foreign(void **state)
{
    int changed;
    const char *old =
        "{\"hooks\":{\"PreToolUse\":[{\"matcher\":\"*\",\"hooks\":["
        "{\"type\":\"command\",\"command\":\"/old/faultline gate claude-code\",\"timeout\":5},"
        "{\"type\":\"command\",\"command\":\"/usr/bin/notfaultline gate claude-code\"},"
        "{\"type\":\"command\",\"command\":\"/old/faultline gate codex\"},"
        "{\"type\":\"command\",\"command\":\"faultline-gate claude-code\"}]}]}}";
    char *t = apply(CONNECT_CLAUDE_CODE, old, FL, 0, &changed);
    json_t *j = ut_json(t);
    assert_true(changed);
    ut_assert_json(j,
                   "{\"hooks\":{\"PreToolUse\":[{\"matcher\":\"*\",\"hooks\":["
                   "{\"type\":\"command\",\"command\":\"" FL " gate claude-code\",\"timeout\":5},"
                   "{\"type\":\"command\",\"command\":\"/usr/bin/notfaultline gate claude-code\"},"
                   "{\"type\":\"command\",\"command\":\"/old/faultline gate codex\"},"
                   "{\"type\":\"command\",\"command\":\"faultline-gate claude-code\"}]}]}}");
    json_decref(j);
    /* remove: only ours, the group stays for the others */
    char *r = apply(CONNECT_CLAUDE_CODE, t, FL, 1, &changed);
    j = ut_json(r);
    ut_assert_json(j,
                   "{\"hooks\":{\"PreToolUse\":[{\"matcher\":\"*\",\"hooks\":["
                   "{\"type\":\"command\",\"command\":\"/usr/bin/notfaultline gate claude-code\"},"
                   "{\"type\":\"command\",\"command\":\"/old/faultline gate codex\"},"
                   "{\"type\":\"command\",\"command\":\"faultline-gate claude-code\"}]}]}}");
    json_decref(j);
    free(r);
    free(t);
    /* a relative or bare faultline is ours too */
    t = apply(CONNECT_CODEX,
              "{\"hooks\":{\"PreToolUse\":[{\"hooks\":[{\"type\":\"command\",\"command\":"
              "\"faultline gate codex\"}]}]}}",
              FL, 1, &changed);
    assert_true(changed);
    ut_assert_json(j = ut_json(t), "{}");
    json_decref(j);
    free(t);
}

/* CONNECT_RETARGET points the entries already there at the binary and adds none. */
static void test_retarget(void **state)
{
    const char *ours = "{\"hooks\":{\"PreToolUse\":[{\"hooks\":[{\"type\":\"command\","
                       "\"command\":\"/old/faultline gate codex\"}]}]}}",
               *theirs = "{\"hooks\":{\"PreToolUse\":[{\"hooks\":[{\"command\":\"x.sh\"}]}]}}",
               *cur = "{\"hooks\":{\"preToolUse\":[{\"command\":\"/old/faultline gate cursor\"}]}}";
    struct buf out = BUF_INIT;
    struct err e = {0};
    int changed = -1;
    json_t *j;
    (void)state;

    assert_int_equal(connect_apply(CONNECT_CODEX, "f", ours, strlen(ours), "/new/faultline",
                                   CONNECT_RETARGET, &out, &changed, &e),
                     0);
    assert_true(changed);
    j = ut_json(out.data);
    ut_assert_json(j, "{\"hooks\":{\"PreToolUse\":[{\"hooks\":[{\"type\":\"command\","
                      "\"command\":\"/new/faultline gate codex\"}]}]}}");
    json_decref(j);
    /* nothing of ours: left alone (no group added), nor in an empty or missing file */
    assert_int_equal(connect_apply(CONNECT_CODEX, "f", theirs, strlen(theirs), "/new/faultline",
                                   CONNECT_RETARGET, &out, &changed, &e),
                     0);
    assert_false(changed);
    assert_string_equal(out.data, theirs);
    assert_int_equal(connect_apply(CONNECT_CLAUDE_CODE, "f", NULL, 0, "/new/faultline",
                                   CONNECT_RETARGET, &out, &changed, &e),
                     0);
    assert_false(changed);
    assert_int_equal(connect_apply(CONNECT_CURSOR, "f", "{}", 2, "/new/faultline",
                                   CONNECT_RETARGET, &out, &changed, &e),
                     0);
    assert_false(changed);
    /* a bare program is found on PATH, in the sandbox too: left as it is */
    {
        const char *bare = "{\"hooks\":{\"PreToolUse\":[{\"hooks\":[{\"type\":\"command\","
                           "\"command\":\"faultline gate codex\"}]}]}}";
        assert_int_equal(connect_apply(CONNECT_CODEX, "f", bare, strlen(bare), "/new/faultline",
                                       CONNECT_RETARGET, &out, &changed, &e),
                         0);
        assert_false(changed);
    }
    /* cursor: the entry updated, no version or other events added */
    assert_int_equal(connect_apply(CONNECT_CURSOR, "f", cur, strlen(cur), "/new/faultline",
                                   CONNECT_RETARGET, &out, &changed, &e),
                     0);
    assert_true(changed);
    j = ut_json(out.data);
    ut_assert_json(j,
                   "{\"hooks\":{\"preToolUse\":[{\"command\":\"/new/faultline gate cursor\"}]}}");
    json_decref(j);
    buf_release(&out);
}

static void test_cursor_merge(void **state)
{
    int changed;
    const char *old = "{\"version\":1,\"hooks\":{\"beforeShellExecution\":[{\"command\":"
                      "\"./audit.sh\"}],\"afterFileEdit\":[{\"command\":\"./fmt.sh\"}]}}";
    char *t = apply(CONNECT_CURSOR, old, FL, 0, &changed);
    json_t *j = ut_json(t);
    ut_assert_json(j, "{\"version\":1,\"hooks\":{\"beforeShellExecution\":[{\"command\":"
                      "\"./audit.sh\"},{\"command\":\"" FL " gate cursor\"}],"
                      "\"afterFileEdit\":[{\"command\":\"./fmt.sh\"}],"
                      "\"beforeMCPExecution\":[{\"command\":\"" FL " gate cursor\"}],"
                      "\"preToolUse\":[{\"command\":\"" FL " gate cursor\"}]}}");
    json_decref(j);
    char *r = apply(CONNECT_CURSOR, t, FL, 1, &changed);
    j = ut_json(r);
    json_t *b = ut_json(old);
    assert_true(json_equal(j, b));
    json_decref(b);
    json_decref(j);
    free(r);
    free(t);
}

static void test_refusals(void **state)
{
    expect_error(CONNECT_CLAUDE_CODE, "{\"hooks\": [}", ERR_PARSE,
                 "f.json:1:12: unexpected token near '}'");
    expect_error(CONNECT_CLAUDE_CODE, "{\"a\":1,\"a\":2}", ERR_PARSE,
                 "f.json:1:10: duplicate object key near '\"a\"'");
    expect_error(CONNECT_CLAUDE_CODE, "[1]", ERR_INVALID, "f.json: the file is not a JSON object");
    expect_error(CONNECT_CLAUDE_CODE, "{\"hooks\":[]}", ERR_INVALID,
                 "f.json: hooks is not an object");
    expect_error(CONNECT_CODEX, "{\"hooks\":{\"PreToolUse\":{}}}", ERR_INVALID,
                 "f.json: hooks.PreToolUse is not a list");
    expect_error(CONNECT_CURSOR, "{\"hooks\":{\"preToolUse\":\"x\"}}", ERR_INVALID,
                 "f.json: hooks.preToolUse is not a list");
    /* a group or hook of another shape is left alone, not refused */
    int changed;
    char *t = apply(CONNECT_CLAUDE_CODE, "{\"hooks\":{\"PreToolUse\":[7,{\"hooks\":3}]}}", FL, 0,
                    &changed);
    assert_true(changed);
    json_t *j = ut_json(t);
    assert_int_equal(json_array_size(json_object_get(json_object_get(j, "hooks"), "PreToolUse")),
                     3);
    json_decref(j);
    free(t);
    /* over the limit */
    struct buf big = BUF_INIT, out = BUF_INIT;
    struct err e = {0};
    buf_addc(&big, '{');
    while (big.len <= CONNECT_FILE_MAX)
        buf_adds(&big, "                                                                ");
    buf_addc(&big, '}');
    assert_int_equal(
        connect_apply(CONNECT_CODEX, "f.json", big.data, big.len, FL, CONNECT_ADD, &out, &changed, &e),
        ERR_LIMIT);
    buf_release(&big);
    buf_release(&out);
}

static void test_diff(void **state)
{
    struct buf d = BUF_INIT;
    connect_diff("a", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "b", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n",
                 &d);
    assert_string_equal(d.data,
                        "--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
    buf_reset(&d);
    connect_diff("/dev/null", "", "b", "x\ny\n", &d);
    assert_string_equal(d.data, "--- /dev/null\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n");
    buf_reset(&d);
    connect_diff("a", "x\n", "a", "x\n", &d);
    assert_string_equal(d.data, "");
    /* two changes far apart: two hunks */
    buf_reset(&d);
    connect_diff("a", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n", "a", "A\nb\nc\nd\ne\nf\ng\nh\ni\nj\nK\n",
                 &d);
    assert_string_equal(d.data, "--- a\n+++ a\n@@ -1,4 +1,4 @@\n-a\n+A\n b\n c\n d\n"
                                "@@ -8,4 +8,4 @@\n h\n i\n j\n-k\n+K\n");
    /* all removed */
    buf_reset(&d);
    connect_diff("a", "x\ny\n", "a", "", &d);
    assert_string_equal(d.data, "--- a\n+++ a\n@@ -1,2 +0,0 @@\n-x\n-y\n");
    buf_release(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_new_files),
        cmocka_unit_test(test_merge_keeps_entries),
        cmocka_unit_test(test_moved_and_foreign),
        cmocka_unit_test(test_retarget),
        cmocka_unit_test(test_cursor_merge),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_diff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
