/*
 * test_run: the runner's parts that need no sandbox: carry-in of hook and gate files with the
 * project path rewritten (carry.h), the abort monitor following a live events file
 * (monitor.h), the report's run folder name (report.h), and the workspaces copied from the
 * run's seed repository (workspace.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "run/carry.h"
#include "run/monitor.h"
#include "run/report.h"
#include "run/workspace.h"
#include "helpers.h"
#include "util/banned.h"

static void test_rewrite(void **state)
{
    struct buf out = BUF_INIT;
    const char *in = "{\"command\": \"/home/me/proj/.faultline/gate.sh\", \"x\": \"/home/me/proj\","
                     " \"other\": \"/home/me/proj2/x\", \"pre\": \"a/home/me/proj/b\"}";
    (void)state;
    assert_int_equal(carry_rewrite(in, strlen(in), "/home/me/proj", "/work", &out), 2);
    assert_string_equal(out.data, "{\"command\": \"/work/.faultline/gate.sh\", \"x\": \"/work\","
                                  " \"other\": \"/home/me/proj2/x\", \"pre\": \"a/home/me/proj/b\"}");
    buf_reset(&out);
    assert_int_equal(carry_rewrite("/p", 2, "/p", "/work", &out), 1);
    assert_string_equal(out.data, "/work");
    buf_reset(&out);
    assert_int_equal(carry_rewrite("", 0, "/p", "/work", &out), 0);
    assert_string_equal(out.data, "");
    buf_release(&out);
}

static void test_is_carried(void **state)
{
    (void)state;
    assert_true(carry_is_carried(".claude/settings.local.json"));
    assert_true(carry_is_carried(".claude/settings.json"));
    assert_true(carry_is_carried(".codex/hooks.json"));
    assert_true(carry_is_carried(".cursor/hooks.json"));
    assert_true(carry_is_carried(".faultline/"));
    assert_true(carry_is_carried(".faultline/gates/a.yaml"));
    assert_false(carry_is_carried(".claude/other.json"));
    assert_false(carry_is_carried(".faultlinex/a"));
    assert_false(carry_is_carried("src/a.c"));
}

static void mkdtemp_into(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/faultline-test-run-XXXXXX");
    assert_non_null(mkdtemp(buf));
}

static void test_carry_in(void **state)
{
    char proj[64], wt[64], text[512], path[512];
    struct buf log = BUF_INIT;
    struct err e = {0};
    int n = -1;
    char *got;
    (void)state;

    mkdtemp_into(proj, sizeof(proj));
    mkdtemp_into(wt, sizeof(wt));
    /* committed (in both), mentioning the project: rewritten in the worktree, never replaced */
    snprintf(text, sizeof(text), "{\"hooks\": \"%s/.faultline/gate.sh\"}", proj);
    ut_put(proj, ".claude/settings.json", "project copy");
    ut_put(wt, ".claude/settings.json", text);
    /* uncommitted: carried in, rewritten */
    snprintf(text, sizeof(text), "{\"a\": \"%s\", \"b\": \"%s/x\"}", proj, proj);
    ut_put(proj, ".claude/settings.local.json", text);
    ut_put(proj, ".faultline/gates/deep/g.json", "plain");
    ut_put(proj, ".codex/other.json", "not carried");
    /* committed, no project path: left alone, no log line */
    ut_put(proj, ".cursor/hooks.json", "same");
    ut_put(wt, ".cursor/hooks.json", "same");
    /* a symbolic link is never followed */
    snprintf(path, sizeof(path), "%s/.faultline/link", proj);
    assert_int_equal(symlink("/etc/passwd", path), 0);

    assert_int_equal(carry_in(proj, wt, &log, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_string_equal(log.data, "rewrote .claude/settings.json (1 path to /work)\n"
                                  "carried in .claude/settings.local.json (2 paths rewritten to /work)\n"
                                  "carried in .faultline/gates/deep/g.json (0 paths rewritten to /work)\n"
                                  "skipped .faultline/link: not a regular file\n");
    snprintf(path, sizeof(path), "%s/.claude/settings.json", wt);
    got = ut_slurp(path, NULL);
    assert_string_equal(got, "{\"hooks\": \"/work/.faultline/gate.sh\"}");
    free(got);
    snprintf(path, sizeof(path), "%s/.claude/settings.local.json", wt);
    got = ut_slurp(path, NULL);
    assert_string_equal(got, "{\"a\": \"/work\", \"b\": \"/work/x\"}");
    free(got);
    snprintf(path, sizeof(path), "%s/.codex/other.json", wt);
    assert_int_not_equal(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/.faultline/link", wt);
    assert_int_not_equal(access(path, F_OK), 0);

    snprintf(path, sizeof(path), "rm -rf %s %s", proj, wt);
    assert_int_equal(system(path), 0);
    buf_release(&log);
}

/* faultline's gate entries in the hook files are pointed at the sandbox's faultline, whatever
 * host path connect wrote; other hooks and files that are not JSON stay as they are. */
static void test_carry_retargets_gates(void **state)
{
    char proj[64], wt[64], path[512];
    struct buf log = BUF_INIT;
    struct err e = {0};
    char *got;
    (void)state;

    mkdtemp_into(proj, sizeof(proj));
    mkdtemp_into(wt, sizeof(wt));
    ut_put(proj, ".codex/hooks.json",
           "{\"hooks\":{\"PreToolUse\":[{\"hooks\":[{\"type\":\"command\",\"command\":"
           "\"/home/me/bin/faultline gate codex\"},{\"type\":\"command\",\"command\":"
           "\"./mine.sh\"}]}]}}");
    ut_put(proj, ".claude/settings.local.json", "{\"hooks\":{\"PreToolUse\":[]}}");
    ut_put(proj, ".cursor/hooks.json", "not json: /home/me/bin/faultline gate cursor");
    assert_int_equal(carry_in(proj, wt, &log, NULL, &e), 0);
    assert_string_equal(log.data,
                        "carried in .claude/settings.local.json (0 paths rewritten to /work)\n"
                        "carried in .codex/hooks.json (0 paths rewritten to /work, gate hooks to "
                        "/opt/faultline/bin/faultline)\n"
                        "carried in .cursor/hooks.json (0 paths rewritten to /work)\n");
    snprintf(path, sizeof(path), "%s/.codex/hooks.json", wt);
    got = ut_slurp(path, NULL);
    assert_non_null(strstr(got, "\"/opt/faultline/bin/faultline gate codex\""));
    assert_non_null(strstr(got, "\"./mine.sh\""));
    assert_null(strstr(got, "/home/me/bin"));
    free(got);
    snprintf(path, sizeof(path), "%s/.claude/settings.local.json", wt);
    got = ut_slurp(path, NULL);
    assert_string_equal(got, "{\"hooks\":{\"PreToolUse\":[]}}"); /* nothing added */
    free(got);

    snprintf(path, sizeof(path), "rm -rf %s %s", proj, wt);
    assert_int_equal(system(path), 0);
    buf_release(&log);
}

static void test_carry_limits(void **state)
{
    char proj[64], wt[64], path[512];
    struct buf log = BUF_INIT;
    struct err e = {0};
    char *big = xmalloc(CARRY_FILE_MAX + 2);
    (void)state;

    mkdtemp_into(proj, sizeof(proj));
    mkdtemp_into(wt, sizeof(wt));
    memset(big, 'a', CARRY_FILE_MAX + 1);
    big[CARRY_FILE_MAX + 1] = '\0';
    ut_put(proj, ".faultline/big", big);
    assert_int_equal(carry_in(proj, wt, &log, NULL, &e), ERR_LIMIT);
    assert_non_null(strstr(e.msg, ".faultline/big"));
    snprintf(path, sizeof(path), "rm -rf %s/.faultline", proj);
    assert_int_equal(system(path), 0);

    err_clear(&e);
    for (int i = 0; i <= CARRY_FILES_MAX; i++) {
        char rel[32];
        snprintf(rel, sizeof(rel), ".faultline/f%03d", i);
        ut_put(proj, rel, "x");
    }
    assert_int_equal(carry_in(proj, wt, &log, NULL, &e), ERR_LIMIT);
    assert_non_null(strstr(e.msg, "more than"));

    snprintf(path, sizeof(path), "rm -rf %s %s", proj, wt);
    assert_int_equal(system(path), 0);
    free(big);
    buf_release(&log);
}

static void test_monitor(void **state)
{
    struct ut_tmpfile t;
    struct monitor m;
    struct monitor_abort ab;
    struct experiment_abort lim = {.destructive_attempt = 1, .cost_usd_above = 1.0,
                                   .wall_clock_s_above = 30};
    struct err e = {0};
    (void)state;

    ut_tmpfile_init(&t);
    unlink(t.path);
    assert_int_equal(monitor_init(&m, t.path, &e), 0);
    /* no file yet: nothing, no error */
    assert_int_equal(monitor_poll(&m, &e), 0);
    assert_int_equal(monitor_check(&m, &lim, 1.0, &ab), 0);
    assert_null(ab.reason);
    assert_int_equal(m.max_seq, -1);

    const char *first = "{\"seq\":0,\"kind\":\"model_response\",\"cost_usd\":0.4}\n"
                        "not json\n"
                        "{\"seq\":1,\"kind\":\"model_response\",\"cost_usd\":0.5}\n"
                        "{\"seq\":2,\"kind\":\"gate_decision\",\"tier\":\"rule\"}\n"
                        "{\"seq\":3,\"kind\":\"model_resp";
    ut_tmpfile_write(&t, first, strlen(first));
    assert_int_equal(monitor_poll(&m, &e), 0);
    assert_int_equal(m.events, 3);
    assert_int_equal(m.max_seq, 2);
    assert_int_equal(monitor_check(&m, &lim, 10.0, &ab), 0);
    /* the wall clock */
    assert_int_equal(monitor_check(&m, &lim, 30.5, &ab), 1);
    assert_string_equal(ab.reason, "wall_clock_s_above");
    assert_true(ab.limit == 30);
    /* the half line completes: the cost passes the ceiling */
    ut_tmpfile_append(&t, "onse\",\"cost_usd\":0.2}\n");
    assert_int_equal(monitor_poll(&m, &e), 0);
    assert_int_equal(m.max_seq, 3);
    assert_int_equal(monitor_check(&m, &lim, 1.0, &ab), 1);
    assert_string_equal(ab.reason, "cost_usd_above");
    assert_false(ab.by_controller);
    assert_true(ab.value > 1.09 && ab.value < 1.11);
    /* a destructive decision wins over the cost */
    ut_tmpfile_append(&t, "{\"seq\":4,\"kind\":\"gate_decision\",\"tier\":\"destructive\","
                          "\"decision\":\"allow\"}\n");
    assert_int_equal(monitor_poll(&m, &e), 0);
    assert_int_equal(monitor_check(&m, &lim, 1.0, &ab), 1);
    assert_string_equal(ab.reason, "destructive_attempt");
    /* ... unless the experiment does not list destructive_attempt */
    lim.destructive_attempt = 0;
    assert_int_equal(monitor_check(&m, &lim, 1.0, &ab), 1);
    assert_string_equal(ab.reason, "cost_usd_above");
    monitor_release(&m);
    unlink(t.path);
}

static void test_monitor_controller_abort(void **state)
{
    struct ut_tmpfile t;
    struct monitor m;
    struct monitor_abort ab;
    struct experiment_abort lim = {.cost_usd_above = 5.0};
    struct err e = {0};
    (void)state;

    ut_tmpfile_with(&t, "{\"seq\":7,\"kind\":\"abort\",\"reason\":\"cost_usd_above\"}\n");
    assert_int_equal(monitor_init(&m, t.path, &e), 0);
    assert_int_equal(monitor_poll(&m, &e), 0);
    assert_int_equal(monitor_check(&m, &lim, 0, &ab), 1);
    assert_string_equal(ab.reason, "cost_usd_above");
    assert_true(ab.by_controller);
    assert_int_equal(m.max_seq, 7);
    monitor_release(&m);
    unlink(t.path);
}

static void test_dir_for_report(void **state)
{
    char out[64];
    (void)state;
    assert_int_equal(report_run_dir("/tmp/r.json", out, sizeof(out)), 0);
    assert_string_equal(out, "/tmp/r");
    assert_int_equal(report_run_dir("/tmp/report", out, sizeof(out)), 0);
    assert_string_equal(out, "/tmp/report.d");
    assert_int_equal(report_run_dir(".json", out, sizeof(out)), 0);
    assert_string_equal(out, ".json.d");
    assert_int_equal(report_run_dir("/a/very/long/path/that/does/not/fit/in/the/buffer/x.json",
                                        out, 16),
                     ERR_LIMIT);
}

/* The seed is a repository of the project's HEAD with nothing of the host in it; a workspace
 * copied from it is a repository where git works (status clean, the commit, no remote), and
 * the project's own repository gains no worktree entry. Eight copies at once all succeed. */
static void test_workspace_seed_and_copies(void **state)
{
    enum { KIDS = 8 };
    char proj[64], cmd[1024], seed[96], head[64];
    struct err e = {0};
    FILE *f;
    (void)state;

    mkdtemp_into(proj, sizeof(proj));
    snprintf(cmd, sizeof(cmd),
             "cd %s && git init -q && echo one > a.txt && mkdir d && echo two > d/b.txt && "
             "ln -s a.txt link && git add -A && git -c user.email=t@t -c user.name=t commit -qm "
             "first && echo three > a.txt && git -c user.email=t@t -c user.name=t commit -qam "
             "second",
             proj);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "git -C %s rev-parse HEAD", proj);
    f = popen(cmd, "r");
    assert_non_null(f);
    assert_non_null(fgets(head, sizeof(head), f));
    pclose(f);
    head[strcspn(head, "\n")] = '\0';
    snprintf(seed, sizeof(seed), "%s.seed", proj);
    assert_int_equal(workspace_seed(proj, head, seed, &e), 0);
    /* nothing names the project: no remote, no FETCH_HEAD, no alternates */
    snprintf(cmd, sizeof(cmd), "grep -r -q -F %s %s/.git", proj, seed);
    assert_int_not_equal(system(cmd), 0);
    /* a bad commit is an error naming git fetch */
    {
        char bad[128];
        struct err be = {0};
        snprintf(bad, sizeof(bad), "%s.bad", proj);
        assert_int_not_equal(workspace_seed(proj, "0123456789abcdef0123456789abcdef01234567", bad,
                                            &be), 0);
        assert_non_null(strstr(be.msg, "git fetch"));
        snprintf(cmd, sizeof(cmd), "rm -rf %s", bad);
        assert_int_equal(system(cmd), 0);
    }
    pid_t kids[KIDS];
    for (int i = 0; i < KIDS; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0) {
            char path[128];
            struct err ce = {0};
            snprintf(path, sizeof(path), "%s.w%d", proj, i);
            int rc = workspace_make(seed, path, &ce);
            if (rc != 0)
                fprintf(stderr, "copy %d: %s\n", i, ce.msg);
            _exit(rc == 0 ? 0 : 1);
        }
    }
    for (int i = 0; i < KIDS; i++) {
        int ws;
        assert_int_equal(waitpid(kids[i], &ws, 0), kids[i]);
        assert_true(WIFEXITED(ws));
        assert_int_equal(WEXITSTATUS(ws), 0);
    }
    for (int i = 0; i < KIDS; i += 7) {
        snprintf(cmd, sizeof(cmd),
                 "cd %s.w%d && test -z \"$(git status --porcelain)\" && "
                 "test \"$(git rev-parse HEAD)\" = %s && test \"$(cat a.txt)\" = three && "
                 "test \"$(cat d/b.txt)\" = two && test -L link && test -z \"$(git remote)\" && "
                 "echo four > a.txt && test \"$(git status --porcelain)\" = ' M a.txt'",
                 proj, i, head);
        assert_int_equal(system(cmd), 0);
    }
    snprintf(cmd, sizeof(cmd), "test \"$(git -C %s worktree list | wc -l)\" = 1", proj);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s %s.w* %s", proj, proj, seed);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rewrite),
        cmocka_unit_test(test_is_carried),
        cmocka_unit_test(test_carry_in),
        cmocka_unit_test(test_carry_retargets_gates),
        cmocka_unit_test(test_carry_limits),
        cmocka_unit_test(test_monitor),
        cmocka_unit_test(test_monitor_controller_abort),
        cmocka_unit_test(test_dir_for_report),
        cmocka_unit_test(test_workspace_seed_and_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
