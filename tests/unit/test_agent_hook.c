/* Unit tests for src/agent/hook (decisions, settings files, matchers, the hook input, running
 * real hook commands) and src/agent/cmdrun (output capture, limits, timeouts, stdin). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/cmdrun.h"
#include "agent/hook.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "helpers.h"
#include "util/banned.h"

static void decide(int code, const char *out, const char *err, struct hook_decision *d)
{
    hook_decision_release(d);
    hook_decision_init(d);
    hook_decide(code, 0, out, strlen(out), err, strlen(err), d);
}

static void test_decide(void **state)
{
    struct hook_decision d;

    hook_decision_init(&d);
    decide(2, "ignored {\"x\":1}", "  no writes E-FAULTLINE-01020304\n", &d);
    assert_int_equal(d.verdict, HOOK_DENY);
    assert_string_equal(d.reason.data, "no writes E-FAULTLINE-01020304");

    decide(2, "", "", &d);
    assert_int_equal(d.verdict, HOOK_DENY);
    assert_string_equal(d.reason.data, "blocked by a PreToolUse hook (exit 2)");

    decide(0, "", "", &d);
    assert_int_equal(d.verdict, HOOK_PROCEED);
    assert_int_equal(d.notes.len, 0);

    decide(0, "plain text, not JSON", "", &d);
    assert_int_equal(d.verdict, HOOK_PROCEED);

    decide(0,
           "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":"
           "\"deny\",\"permissionDecisionReason\":\"json no\"}}\n",
           "", &d);
    assert_int_equal(d.verdict, HOOK_DENY);
    assert_string_equal(d.reason.data, "json no");

    decide(0, "{\"hookSpecificOutput\":{\"permissionDecision\":\"deny\"}}", "", &d);
    assert_string_equal(d.reason.data, "denied by a PreToolUse hook");

    decide(0,
           "{\"hookSpecificOutput\":{\"permissionDecision\":\"ask\",\"permissionDecisionReason\":"
           "\"sure?\"}}",
           "", &d);
    assert_int_equal(d.verdict, HOOK_DENY);
    assert_non_null(strstr(d.reason.data, "cannot get: sure?"));

    decide(0, "{\"decision\":\"block\",\"reason\":\"legacy\"}", "", &d);
    assert_int_equal(d.verdict, HOOK_DENY);
    assert_string_equal(d.reason.data, "legacy");

    decide(0,
           "{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\",\"updatedInput\":{"
           "\"command\":\"ls\"}}}",
           "", &d);
    assert_int_equal(d.verdict, HOOK_ALLOW);
    assert_string_equal(json_string_value(json_object_get(d.updated_input, "command")), "ls");

    decide(0, "{\"hookSpecificOutput\":{\"permissionDecision\":\"defer\"}}", "", &d);
    assert_int_equal(d.verdict, HOOK_PROCEED);

    decide(0, "{\"continue\":false,\"stopReason\":\"enough\"}", "", &d);
    assert_int_equal(d.verdict, HOOK_STOP);
    assert_string_equal(d.reason.data, "enough");

    decide(0, "{\"broken\":", "", &d);
    assert_int_equal(d.verdict, HOOK_PROCEED);
    assert_non_null(strstr(d.notes.data, "hook printed invalid JSON"));

    decide(1, "{\"decision\":\"block\"}", "it crashed\nsecond line", &d);
    assert_int_equal(d.verdict, HOOK_PROCEED); /* fail-open, stdout ignored */
    assert_string_equal(d.notes.data,
                        "hook exited with status 1: it crashed; the call proceeds\n");

    hook_decision_release(&d);
    hook_decision_init(&d);
    hook_decide(-1, 1, "", 0, "", 0, &d);
    assert_int_equal(d.verdict, HOOK_PROCEED);
    assert_non_null(strstr(d.notes.data, "timed out"));

    /* verdicts only rise: a later allow does not undo a deny */
    const char *allow = "{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\"}}";
    hook_decide(2, 0, "", 0, "first", 5, &d);
    hook_decide(0, 0, allow, strlen(allow), "", 0, &d);
    assert_int_equal(d.verdict, HOOK_DENY);
    assert_string_equal(d.reason.data, "first");
    hook_decision_release(&d);
}

static void test_matchers(void **state)
{
    struct hook_set s;
    struct err e = {0};

    hook_set_init(&s);
    assert_int_equal(hook_set_add(&s, "Bash", "true", 0, "t", &e), 0);
    assert_int_equal(hook_set_add(&s, "Edit|Write", "true", 0, "t", &e), 0);
    assert_int_equal(hook_set_add(&s, "mcp__fs__.*", "true", 5000, "t", &e), 0);
    assert_int_equal(hook_set_add(&s, "*", "true", 0, "t", &e), 0);
    assert_int_equal(hook_set_add(&s, NULL, "true", 0, "t", &e), 0);
    assert_true(hook_matches(&s.v[0], "Bash"));
    assert_false(hook_matches(&s.v[0], "BashOutput"));
    assert_false(hook_matches(&s.v[0], "xBash"));
    assert_true(hook_matches(&s.v[1], "Write"));
    assert_false(hook_matches(&s.v[1], "Read"));
    assert_true(hook_matches(&s.v[2], "mcp__fs__read_file"));
    assert_false(hook_matches(&s.v[2], "mcp__git__log"));
    assert_true(hook_matches(&s.v[3], "anything"));
    assert_true(hook_matches(&s.v[4], "anything"));
    assert_int_equal(s.v[0].timeout_ms, HOOK_TIMEOUT_DEFAULT_MS);
    assert_int_equal(s.v[2].timeout_ms, 5000);

    assert_int_equal(hook_set_add(&s, "(", "true", 0, "f.json", &e), ERR_INVALID);
    assert_non_null(strstr(e.msg, "f.json: bad matcher '('"));
    err_clear(&e);
    assert_int_equal(hook_set_add(&s, "x", "", 0, "f.json", &e), ERR_INVALID);
    hook_set_release(&s);
}

static void test_settings(void **state)
{
    struct hook_set s;
    struct err e = {0};
    struct ut_tmpfile t;
    char *p = t.path;

    hook_set_init(&s);
    assert_int_equal(hook_set_load_settings(&s, "/nonexistent/settings.json", &e), 0);
    assert_int_equal(s.n, 0);

    ut_tmpfile_with(&t, "{\"permissions\":{},\"hooks\":{\"PostToolUse\":[],\"PreToolUse\":["
                        "{\"matcher\":\"Bash\",\"hooks\":[{\"type\":\"command\",\"command\":\"a\","
                        "\"timeout\":30},{\"type\":\"http\",\"url\":\"http://x\"}]},"
                        "{\"hooks\":[{\"command\":\"b\"}]}]}}");
    assert_int_equal(hook_set_load_settings(&s, p, &e), 1);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.v[0].command, "a");
    assert_int_equal(s.v[0].timeout_ms, 30000);
    assert_string_equal(s.v[0].source, p);
    assert_true(s.v[1].match_all);
    unlink(p);

    ut_tmpfile_with(&t, "{\"other\":1}");
    assert_int_equal(hook_set_load_settings(&s, p, &e), 1);
    assert_int_equal(s.n, 2);
    unlink(p);

    struct {
        const char *text;
        int code;
        const char *msg;
    } bad[] = {
        {"{\n  \"hooks\": {,}\n}", ERR_PARSE, ":2:"},
        {"[1]", ERR_INVALID, "settings must be a JSON object"},
        {"{\"hooks\":[]}", ERR_INVALID, "\"hooks\" must be an object"},
        {"{\"hooks\":{\"PreToolUse\":{}}}", ERR_INVALID, "PreToolUse must be an array"},
        {"{\"hooks\":{\"PreToolUse\":[{\"matcher\":1,\"hooks\":[]}]}}", ERR_INVALID,
         "PreToolUse[0] must be"},
        {"{\"hooks\":{\"PreToolUse\":[{\"hooks\":[{\"type\":\"command\"}]}]}}", ERR_INVALID,
         "no \"command\""},
        {"{\"hooks\":{\"PreToolUse\":[{\"hooks\":[{\"command\":\"x\",\"timeout\":-1}]}]}}",
         ERR_INVALID, "timeout must be"},
        {"{\"hooks\":{\"PreToolUse\":[{\"matcher\":\"[\",\"hooks\":[{\"command\":\"x\"}]}]}}",
         ERR_INVALID, "bad matcher"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err_clear(&e);
        ut_tmpfile_with(&t, bad[i].text);
        assert_int_equal(hook_set_load_settings(&s, p, &e), bad[i].code);
        assert_non_null(strstr(e.msg, bad[i].msg));
        assert_non_null(strstr(e.msg, p));
        unlink(p);
    }
    hook_set_release(&s);
}

static void test_input(void **state)
{
    json_t *ti = json_pack("{s:s}", "command", "rm -rf x");
    json_t *in = hook_input("sess", "/proj", "Bash", ti, "toolu_1");
    char *s = json_dumps(in, JSON_COMPACT | JSON_SORT_KEYS);

    assert_string_equal(s, "{\"cwd\":\"/proj\",\"hook_event_name\":\"PreToolUse\","
                           "\"permission_mode\":\"default\",\"session_id\":\"sess\","
                           "\"tool_input\":{\"command\":\"rm -rf x\"},\"tool_name\":\"Bash\","
                           "\"tool_use_id\":\"toolu_1\"}");
    free(s);
    json_decref(in);
    json_decref(ti);
}

static void test_run(void **state)
{
    struct hook_set s;
    struct hook_decision d;
    struct err e = {0};
    char dir[] = "/tmp/faultline-hook-run-XXXXXX";
    json_t *ti = json_pack("{s:s}", "command", "ls");

    assert_non_null(mkdtemp(dir));
    hook_set_init(&s);
    /* a hook for another tool, one that fails open, one that records its input and env and
     * blocks, and one that must not run after the block */
    assert_int_equal(hook_set_add(&s, "Write", "echo wrong >&2; exit 2", 0, "t", &e), 0);
    assert_int_equal(hook_set_add(&s, NULL, "exit 7", 0, "t", &e), 0);
    assert_int_equal(hook_set_add(&s, "Bash",
                                  "cat > in.json; echo \"$CLAUDE_PROJECT_DIR\" > env.txt; "
                                  "echo 'no ls today' >&2; exit 2",
                                  0, "t", &e),
                     0);
    assert_int_equal(hook_set_add(&s, NULL, "touch ran-after", 0, "t", &e), 0);
    hook_decision_init(&d);
    assert_int_equal(hook_run(&s, "sess", dir, "Bash", ti, "id1", NULL, &d), 0);
    assert_int_equal(d.verdict, HOOK_DENY);
    assert_string_equal(d.reason.data, "no ls today");
    assert_int_equal(d.ran, 2);
    assert_non_null(strstr(d.notes.data, "hook exited with status 7"));

    struct buf b = BUF_INIT;
    char path[256];
    snprintf(path, sizeof(path), "%s/in.json", dir);
    assert_int_equal(fs_read_file(path, 4096, &b, &e), 0);
    assert_non_null(strstr(b.data, "\"tool_name\":\"Bash\""));
    assert_non_null(strstr(b.data, "\"tool_use_id\":\"id1\""));
    buf_reset(&b);
    snprintf(path, sizeof(path), "%s/env.txt", dir);
    assert_int_equal(fs_read_file(path, 4096, &b, &e), 0);
    assert_int_equal(strncmp(b.data, dir, strlen(dir)), 0);
    snprintf(path, sizeof(path), "%s/ran-after", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    buf_release(&b);
    hook_decision_release(&d);
    hook_set_release(&s);

    /* a hook that runs past its timeout fails open, in bounded time */
    hook_set_init(&s);
    assert_int_equal(hook_set_add(&s, NULL, "sleep 10; exit 2", 300, "t", &e), 0);
    hook_decision_init(&d);
    int64_t t0 = time_mono_ns();
    hook_run(&s, "sess", dir, "Bash", ti, "id2", NULL, &d);
    assert_true((time_mono_ns() - t0) / 1000000 < 5000);
    assert_int_equal(d.verdict, HOOK_PROCEED);
    assert_non_null(strstr(d.notes.data, "timed out"));
    hook_decision_release(&d);
    hook_set_release(&s);

    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    json_decref(ti);
}

static void test_cmdrun(void **state)
{
    struct cmdrun_opts o;
    struct cmdrun_result r;
    struct err e = {0};

    memset(&o, 0, sizeof(o));
    o.command = "cat; echo to-err >&2; exit 3";
    o.input = "from stdin\n";
    o.input_len = strlen(o.input);
    o.timeout_ms = 5000;
    cmdrun_result_init(&r);
    assert_int_equal(cmdrun(&o, &r, &e), 0);
    assert_string_equal(r.out.data, "from stdin\n");
    assert_string_equal(r.err.data, "to-err\n");
    assert_int_equal(r.exit_code, 3);
    assert_string_equal(r.status, "exited with status 3");
    cmdrun_result_release(&r);

    /* merged, limited: the rest is counted, not kept */
    o.command = "echo a; echo b >&2; head -c 100000 /dev/zero";
    o.input = NULL;
    o.input_len = 0;
    o.merge_stderr = 1;
    o.max_output = 1000;
    cmdrun_result_init(&r);
    assert_int_equal(cmdrun(&o, &r, &e), 0);
    assert_int_equal(r.out.len, 1000);
    assert_int_equal(r.out_total, 100004);
    assert_int_equal(memcmp(r.out.data, "a\nb\n", 4), 0);
    assert_int_equal(r.exit_code, 0);
    cmdrun_result_release(&r);

    /* a timeout kills the group */
    o.command = "sleep 20 & sleep 20; echo never";
    o.timeout_ms = 300;
    int64_t t0 = time_mono_ns();
    cmdrun_result_init(&r);
    assert_int_equal(cmdrun(&o, &r, &e), 0);
    assert_true(r.timed_out);
    assert_int_equal(r.out.len, 0);
    assert_true((time_mono_ns() - t0) / 1000000 < 4000);
    cmdrun_result_release(&r);

    /* a background job holding the pipe open does not hold the call */
    o.command = "sleep 5 & echo started";
    o.timeout_ms = 10000;
    t0 = time_mono_ns();
    cmdrun_result_init(&r);
    assert_int_equal(cmdrun(&o, &r, &e), 0);
    assert_string_equal(r.out.data, "started\n");
    assert_int_equal(r.exit_code, 0);
    assert_true((time_mono_ns() - t0) / 1000000 < 3000);
    cmdrun_result_release(&r);

    /* a child that does not read a large stdin */
    struct buf big = BUF_INIT;
    for (int i = 0; i < 20000; i++)
        buf_adds(&big, "0123456789");
    o.command = "exit 0";
    o.input = big.data;
    o.input_len = big.len;
    cmdrun_result_init(&r);
    assert_int_equal(cmdrun(&o, &r, &e), 0);
    assert_int_equal(r.exit_code, 0);
    cmdrun_result_release(&r);
    buf_release(&big);

    /* a directory that does not exist */
    o.command = "true";
    o.input = NULL;
    o.input_len = 0;
    o.cwd = "/nonexistent/dir";
    cmdrun_result_init(&r);
    assert_true(cmdrun(&o, &r, &e) < 0);
    assert_non_null(strstr(e.msg, "/nonexistent/dir"));
    cmdrun_result_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide),   cmocka_unit_test(test_matchers),
        cmocka_unit_test(test_settings), cmocka_unit_test(test_input),
        cmocka_unit_test(test_run),      cmocka_unit_test(test_cmdrun),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
