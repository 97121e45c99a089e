/*
 * test_policy: the policy engine (src/policy/policy.c) through its API: every match kind
 * (tool, command, paths, mcp_server), the order of rules and files, monitor against enforce,
 * redaction, the loader's FILE:LINE:COL diagnostics, the limits and the schema.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "util/buf.h"
#include "helpers.h"
#include "util/banned.h"

/* A policy from YAML text; fails the test when it does not load. */
static struct policy *load(const char *yaml)
{
    struct policy *p = NULL;
    struct buf diags = BUF_INIT;
    struct err e = {0};
    if (policy_parse(&p, "p.yaml", yaml, strlen(yaml), &diags, &e) < 0)
        fail_msg("policy did not load: %s", diags.data);
    buf_release(&diags);
    return p;
}

/* The diagnostics of a policy that must not load. Caller frees. */
static char *refused(const char *yaml)
{
    struct policy *p = NULL;
    struct buf diags = BUF_INIT;
    struct err e = {0};
    if (policy_parse(&p, "p.yaml", yaml, strlen(yaml), &diags, &e) == 0)
        fail_msg("policy loaded but should not:\n%s", yaml);
    assert_null(p);
    assert_int_equal(e.code, ERR_INVALID);
    return buf_detach(&diags, NULL);
}

static void expect_refused(const char *yaml, const char *want)
{
    char *got = refused(yaml);
    if (strstr(got, want) == NULL)
        fail_msg("diagnostics\n%s\ndo not hold\n%s", got, want);
    free(got);
}

/* Decides tool + input (JSON text) under p with workdir /work. */
static void decide(const struct policy *p, const char *tool, const char *input,
                   struct policy_decision *d)
{
    json_t *in = input ? ut_json(input) : NULL;
    struct policy_call c = {.tool = tool, .input = in, .workdir = "/work"};
    assert_int_equal(policy_decide(p, &c, d), 0);
    json_decref(in);
}

/* The effect and the deciding rule ("" for the default) of one call. */
static void expect(const struct policy *p, const char *tool, const char *input,
                   enum policy_effect effect, const char *rule)
{
    struct policy_decision d;
    decide(p, tool, input, &d);
    if (d.effect != effect || strcmp(d.rule, rule) != 0)
        fail_msg("%s %s: got %s by '%s', want %s by '%s'", tool, input ? input : "",
                 policy_effect_name(d.effect), d.rule, policy_effect_name(effect), rule);
    policy_decision_release(&d);
}

static void test_default(void **state)
{
    struct policy *p = policy_builtin();
    struct policy_decision d;
    decide(p, "Bash", "{\"command\":\"ls -la\"}", &d);
    assert_int_equal(d.effect, POLICY_ALLOW);
    assert_true(d.from_default);
    assert_string_equal(d.rule, "");
    assert_string_equal(policy_tier_name(&d), "default");
    assert_null(d.redacted_input);
    policy_decision_release(&d);
    assert_int_equal(policy_nrules(p), 0);
    policy_free(p);
    policy_free(NULL);
    /* NULL policy: the default alone */
    expect(NULL, "Write", "{\"file_path\":\"x\"}", POLICY_ALLOW, "");
}

static void test_match_tool(void **state)
{
    struct policy *p = load("rules:\n"
                            "  - {id: no-write, tool: Write, effect: block}\n"
                            "  - {id: gh, tool: 'mcp__github__*', effect: hold}\n"
                            "  - {id: edits, tool: '*Edit', effect: block}\n");
    expect(p, "Write", "{}", POLICY_BLOCK, "no-write");
    expect(p, "write", "{}", POLICY_ALLOW, ""); /* exact: case matters */
    expect(p, "WriteX", "{}", POLICY_ALLOW, "");
    expect(p, "mcp__github__create_issue", "{}", POLICY_HOLD, "gh");
    expect(p, "mcp__gitlab__create_issue", "{}", POLICY_ALLOW, "");
    expect(p, "MultiEdit", "{}", POLICY_BLOCK, "edits");
    expect(p, "Edit", "{}", POLICY_BLOCK, "edits");
    assert_int_equal(policy_nrules(p), 3);
    policy_free(p);
}

static void test_match_command(void **state)
{
    struct policy *p = load("rules:\n"
                            "  - id: force-push\n"
                            "    command: git push *--force*\n"
                            "    effect: block\n"
                            "    reason: force pushes rewrite shared history\n"
                            "  - id: npm-publish\n"
                            "    command: {program: npm, args: [publish]}\n"
                            "    effect: hold\n"
                            "  - id: any-curl\n"
                            "    command: {program: curl}\n"
                            "    effect: block\n"
                            "  - id: abs\n"
                            "    command: {program: /opt/*/tool}\n"
                            "    effect: block\n");
    struct policy_decision d;

    expect(p, "Bash", "{\"command\":\"git push origin main --force-with-lease\"}", POLICY_BLOCK,
           "force-push");
    expect(p, "Bash", "{\"command\":\"git push --force\"}", POLICY_BLOCK, "force-push");
    /* arguments in order, others between them */
    expect(p, "Bash", "{\"command\":\"git -C repo push -q origin --force\"}", POLICY_BLOCK,
           "force-push");
    expect(p, "Bash", "{\"command\":\"git --force push\"}", POLICY_ALLOW, "");
    expect(p, "Bash", "{\"command\":\"git push origin main\"}", POLICY_ALLOW, "");
    expect(p, "Bash", "{\"command\":\"sudo -u root env A=1 npm publish\"}", POLICY_HOLD,
           "npm-publish");
    expect(p, "Bash", "{\"command\":\"/usr/bin/curl -s x\"}", POLICY_BLOCK, "any-curl");
    expect(p, "Bash", "{\"command\":\"curlx y\"}", POLICY_ALLOW, "");
    expect(p, "Bash", "{\"command\":\"sudo -u root foo npm publish\"}", POLICY_ALLOW, "");
    expect(p, "Bash", "{\"command\":\"timeout -s KILL 10 npm publish\"}", POLICY_HOLD,
           "npm-publish");
    expect(p, "Bash", "{\"command\":\"echo npm publish\"}", POLICY_ALLOW, "");
    expect(p, "Bash", "{\"command\":\"/opt/a/tool\"}", POLICY_BLOCK, "abs");
    expect(p, "Bash", "{\"command\":\"tool\"}", POLICY_ALLOW, "");
    /* an unparsable line is still matched, split on blanks */
    expect(p, "Bash", "{\"command\":\"git push --force 'unterminated\"}", POLICY_BLOCK,
           "force-push");
    /* no command in the input: a command rule does not match */
    expect(p, "Write", "{\"file_path\":\"git\"}", POLICY_ALLOW, "");

    decide(p, "Bash", "{\"command\":\"git push --force\"}", &d);
    assert_false(d.from_default);
    assert_int_equal(d.mode, POLICY_ENFORCE);
    assert_string_equal(policy_tier_name(&d), d.tier.level == TIER_DESTRUCTIVE ? "destructive"
                                                                              : "rule");
    assert_non_null(strstr(d.reason, "force pushes rewrite shared history"));
    assert_non_null(strstr(d.reason, "'force-push'"));
    policy_decision_release(&d);
    policy_free(p);
}

/* The command is parsed as a shell parses it (src/policy/shell.h), not searched as text. */
static void test_match_parsed(void **state)
{
    struct policy *p = load("rules:\n"
                            "  - {id: force-push, command: git push *--force*, effect: block}\n"
                            "  - {id: npm-publish, command: npm publish, effect: hold}\n"
                            "  - {id: any-curl, command: {program: curl}, effect: block}\n"
                            "  - {id: etc, paths: ['/etc/*'], effect: block}\n"
                            "  - {id: quoted, command: 'git commit -m \"*WIP*\"', effect: hold}\n");

    /* a quoted mention is an argument of echo */
    expect(p, "Bash", "{\"command\":\"echo 'git push --force'\"}", POLICY_ALLOW, "");
    expect(p, "Bash", "{\"command\":\"grep -r 'curl x' .\"}", POLICY_ALLOW, "");
    /* any simple command of the line, nested ones included */
    expect(p, "Bash", "{\"command\":\"make && cd x && git push --force\"}", POLICY_BLOCK,
           "force-push");
    expect(p, "Bash", "{\"command\":\"bash -c 'npm publish --tag next'\"}", POLICY_HOLD,
           "npm-publish");
    expect(p, "Bash", "{\"command\":\"(cd x; curl y) | sh\"}", POLICY_BLOCK, "any-curl");
    expect(p, "Bash", "{\"command\":\"echo $(curl -s x)\"}", POLICY_BLOCK, "any-curl");
    /* quotes are removed before matching */
    expect(p, "Bash", "{\"command\":\"g'i't \\\"push\\\" --force\"}", POLICY_BLOCK,
           "force-push");
    expect(p, "Bash", "{\"command\":\"git commit -m 'WIP: x'\"}", POLICY_HOLD, "quoted");
    /* a command's output redirections are paths too */
    expect(p, "Bash", "{\"command\":\"echo x > /etc/hosts\"}", POLICY_BLOCK, "etc");
    expect(p, "Bash", "{\"command\":\"cd /work && echo x >> ../etc/x\"}", POLICY_BLOCK, "etc");
    /* Codex's argv form: each element one word */
    expect(p, "shell", "{\"command\":[\"bash\",\"-lc\",\"git push --force\"]}", POLICY_BLOCK,
           "force-push");
    expect(p, "shell", "{\"command\":[\"echo\",\"git push --force\"]}", POLICY_ALLOW, "");
    policy_free(p);

    expect_refused("rules:\n  - {id: a, effect: block, command: \"git 'push\"}\n", "cannot parse");
    expect_refused("rules:\n  - {id: a, effect: block, command: 'git push && rm'}\n",
                   "is not one program with its argument globs");
    expect_refused("rules:\n  - {id: a, effect: block, command: 'git > x'}\n",
                   "is not one program with its argument globs");
}

/* The default policy blocks the destructive tier and names its pattern; a rule decides over
 * it (destructive is a tier, not a decision). */
static void test_destructive_default(void **state)
{
    struct policy_decision d;
    struct policy *p;

    decide(NULL, "Bash", "{\"command\":\"cd / && sudo rm -rf /\"}", &d);
    assert_int_equal(d.effect, POLICY_BLOCK);
    assert_true(d.from_default);
    assert_int_equal(d.tier.level, TIER_DESTRUCTIVE);
    assert_string_equal(policy_tier_name(&d), "destructive");
    assert_non_null(strstr(d.reason, d.tier.pattern));
    assert_true(*d.tier.pattern);
    policy_decision_release(&d);
    expect(NULL, "Bash", "{\"command\":\"rm -rf node_modules\"}", POLICY_ALLOW, "");
    expect(NULL, "Bash", "{\"command\":\"echo 'rm -rf /'\"}", POLICY_ALLOW, "");
    expect(NULL, "shell", "{\"command\":[\"git\",\"push\",\"--force\"]}", POLICY_BLOCK, "");

    p = load("rules:\n"
             "  - {id: ok-force, command: git push --force, effect: allow}\n"
             "  - {id: hold-rm, command: rm, effect: hold}\n"
             "  - {id: watch, tool: Bash, effect: allow, mode: monitor}\n");
    decide(p, "Bash", "{\"command\":\"git push --force\"}", &d);
    assert_int_equal(d.effect, POLICY_ALLOW);
    assert_string_equal(d.rule, "ok-force");
    assert_int_equal(d.tier.level, TIER_DESTRUCTIVE); /* still reported */
    assert_string_equal(policy_tier_name(&d), "destructive");
    policy_decision_release(&d);
    expect(p, "Bash", "{\"command\":\"rm -rf ~\"}", POLICY_HOLD, "hold-rm");
    /* a monitor rule does not let a destructive command through */
    decide(p, "Bash", "{\"command\":\"git reset --hard\"}", &d);
    assert_int_equal(d.effect, POLICY_BLOCK);
    assert_true(d.from_default);
    assert_string_equal(d.monitor_rule, "watch");
    policy_decision_release(&d);
    policy_free(p);
}

static void test_match_paths(void **state)
{
    struct policy *p = load("rules:\n"
                            "  - {id: secrets, paths: ['secrets/*', '.env'], effect: block}\n"
                            "  - {id: etc, paths: ['/etc/*'], effect: block}\n"
                            "  - {id: ro, tool: Write, paths: ['docs/*.md'], effect: hold}\n");

    expect(p, "Edit", "{\"file_path\":\"/work/secrets/key.pem\"}", POLICY_BLOCK, "secrets");
    expect(p, "Edit", "{\"file_path\":\"secrets/a/b\"}", POLICY_BLOCK, "secrets");
    expect(p, "Write", "{\"file_path\":\"./.env\"}", POLICY_BLOCK, "secrets");
    expect(p, "Write", "{\"file_path\":\"/work/src/.env\"}", POLICY_ALLOW, "");
    /* .. is resolved before matching: it can neither escape a rule nor dodge one */
    expect(p, "Write", "{\"file_path\":\"src/../secrets/x\"}", POLICY_BLOCK, "secrets");
    expect(p, "Write", "{\"file_path\":\"../../../../etc/passwd\"}", POLICY_BLOCK, "etc");
    expect(p, "Write", "{\"file_path\":\"/work/secrets/../public/x\"}", POLICY_ALLOW, "");
    expect(p, "Write", "{\"file_path\":\"/work//secrets/./x\"}", POLICY_BLOCK, "secrets");
    /* tool and paths both must match */
    expect(p, "Write", "{\"file_path\":\"docs/a.md\"}", POLICY_HOLD, "ro");
    expect(p, "Edit", "{\"file_path\":\"docs/a.md\"}", POLICY_ALLOW, "");
    /* apply_patch's files */
    expect(p, "apply_patch",
           "{\"input\":\"*** Begin Patch\\n*** Update File: src/a.c\\n@@\\n-x\\n+y\\n*** Add "
           "File: secrets/new\\n+k\\n*** End Patch\\n\"}",
           POLICY_BLOCK, "secrets");
    expect(p, "apply_patch",
           "{\"input\":\"*** Begin Patch\\n*** Update File: src/a.c\\n*** Move to: /etc/x\\n*** "
           "End Patch\"}",
           POLICY_BLOCK, "etc");
    expect(p, "apply_patch", "{\"input\":\"*** Begin Patch\\n*** Delete File: src/a.c\\n\"}",
           POLICY_ALLOW, "");
    expect(p, "Bash", "{\"command\":\"cat /etc/hosts\"}", POLICY_ALLOW, "");
    /* paths[] and path */
    expect(p, "Read", "{\"path\":\"secrets/x\"}", POLICY_BLOCK, "secrets");
    expect(p, "X", "{\"paths\":[\"a\",\"/etc/shadow\"]}", POLICY_BLOCK, "etc");
    policy_free(p);
}

static void test_match_mcp_server(void **state)
{
    struct policy *p = load("rules:\n"
                            "  - {id: gh, mcp_server: github, effect: hold}\n"
                            "  - {id: db, mcp_server: 'db-*', tool: '*drop*', effect: block}\n");
    struct policy_decision d;
    json_t *in = ut_json("{}");
    struct policy_call c = {.tool = "create_issue", .input = in, .mcp_server = "github"};

    assert_int_equal(policy_decide(p, &c, &d), 0);
    assert_int_equal(d.effect, POLICY_HOLD);
    assert_string_equal(d.rule, "gh");
    policy_decision_release(&d);
    c.mcp_server = "gitlab";
    assert_int_equal(policy_decide(p, &c, &d), 0);
    assert_int_equal(d.effect, POLICY_ALLOW);
    policy_decision_release(&d);
    /* taken from an mcp__SERVER__TOOL name when the call does not say */
    expect(p, "mcp__github__create_issue", "{}", POLICY_HOLD, "gh");
    expect(p, "mcp__db-main__drop_table", "{}", POLICY_BLOCK, "db");
    expect(p, "mcp__db-main__select", "{}", POLICY_ALLOW, "");
    /* a built-in tool has no server */
    expect(p, "Bash", "{\"command\":\"github\"}", POLICY_ALLOW, "");
    json_decref(in);
    policy_free(p);
}

/* First matching enforce rule wins; the project file's rules come before the user's. */
static void test_order(void **state)
{
    struct policy *p = load("rules:\n"
                            "  - {id: allow-ls, command: ls, effect: allow}\n"
                            "  - {id: all-bash, tool: Bash, effect: block}\n"
                            "  - {id: never, tool: Bash, effect: hold}\n");
    expect(p, "Bash", "{\"command\":\"ls -l\"}", POLICY_ALLOW, "allow-ls");
    expect(p, "Bash", "{\"command\":\"pwd\"}", POLICY_BLOCK, "all-bash");
    policy_free(p);

    char dir[] = "/tmp/test_policy_XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct buf proj = BUF_INIT, user = BUF_INIT, missing = BUF_INIT;
    struct err e = {0};
    buf_addf(&proj, "%s/project.yaml", dir);
    buf_addf(&user, "%s/user.yaml", dir);
    buf_addf(&missing, "%s/missing.yaml", dir);
    const char *pj = "rules:\n  - {id: proj, tool: Write, effect: hold}\n";
    const char *us = "rules:\n  - {id: user, tool: Write, effect: block}\n"
                     "  - {id: user-edit, tool: Edit, effect: block}\n";
    assert_int_equal(fs_write_file(proj.data, pj, strlen(pj), &e), 0);
    assert_int_equal(fs_write_file(user.data, us, strlen(us), &e), 0);
    const char *paths[] = {missing.data, proj.data, user.data};
    assert_int_equal(policy_load(&p, paths, 3, &e), 0);
    assert_int_equal(policy_nrules(p), 3);
    expect(p, "Write", "{}", POLICY_HOLD, "proj");
    expect(p, "Edit", "{}", POLICY_BLOCK, "user-edit");
    policy_free(p);
    /* the other order */
    const char *rev[] = {user.data, proj.data};
    assert_int_equal(policy_load(&p, rev, 2, &e), 0);
    expect(p, "Write", "{}", POLICY_BLOCK, "user");
    policy_free(p);
    /* no files: the default */
    assert_int_equal(policy_load(&p, NULL, 0, &e), 0);
    assert_int_equal(policy_nrules(p), 0);
    policy_free(p);
    /* a bad file is an error with its name and position */
    const char *bad = "rules:\n  - {id: x, effect: blok}\n";
    assert_int_equal(fs_write_file(user.data, bad, strlen(bad), &e), 0);
    err_clear(&e);
    assert_int_equal(policy_load(&p, paths, 3, &e), ERR_INVALID);
    assert_null(p);
    assert_non_null(strstr(e.msg, "user.yaml:2:21: error:"));
    /* a directory cannot be read */
    const char *dirs[] = {dir};
    err_clear(&e);
    assert_int_equal(policy_load(&p, dirs, 1, &e), ERR_IO);
    assert_null(p);
    unlink(proj.data);
    unlink(user.data);
    rmdir(dir);
    buf_release(&proj);
    buf_release(&user);
    buf_release(&missing);
}

/* A monitor rule reports and decides nothing: the next enforce rule, or the default, does. */
static void test_monitor(void **state)
{
    struct policy *p = load("rules:\n"
                            "  - {id: watch-bash, tool: Bash, effect: block, mode: monitor}\n"
                            "  - {id: watch-2, tool: Bash, effect: hold, mode: monitor}\n"
                            "  - {id: rm, command: rm, effect: hold}\n");
    struct policy_decision d;

    decide(p, "Bash", "{\"command\":\"ls\"}", &d);
    assert_int_equal(d.effect, POLICY_ALLOW);
    assert_true(d.from_default);
    assert_true(d.monitored);
    assert_string_equal(d.monitor_rule, "watch-bash");
    assert_int_equal(d.monitor_effect, POLICY_BLOCK);
    assert_string_equal(d.rule, "watch-bash");
    assert_int_equal(d.mode, POLICY_MONITOR);
    json_t *j = policy_decision_json(&d);
    ut_assert_json(json_object_get(j, "monitor"), "{\"rule\":\"watch-bash\",\"effect\":\"block\"}");
    assert_string_equal(json_string_value(json_object_get(j, "effect")), "allow");
    assert_string_equal(json_string_value(json_object_get(j, "mode")), "monitor");
    json_decref(j);
    policy_decision_release(&d);

    decide(p, "Bash", "{\"command\":\"rm x\"}", &d);
    assert_int_equal(d.effect, POLICY_HOLD);
    assert_string_equal(d.rule, "rm");
    assert_int_equal(d.mode, POLICY_ENFORCE);
    assert_false(d.from_default);
    assert_true(d.monitored);
    assert_string_equal(d.monitor_rule, "watch-bash");
    policy_decision_release(&d);

    /* a monitor redaction redacts nothing */
    policy_free(p);
    p = load("rules:\n  - {id: m, tool: Bash, effect: redact, mode: monitor}\n");
    decide(p, "Bash", "{\"command\":\"echo sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345\"}", &d);
    assert_int_equal(d.effect, POLICY_ALLOW);
    assert_null(d.redacted_input);
    assert_int_equal(d.monitor_effect, POLICY_REDACT);
    policy_decision_release(&d);
    policy_free(p);
}

static void test_redact(void **state)
{
    struct policy *p = load("rules:\n"
                            "  - id: mask\n"
                            "    tool: Bash\n"
                            "    effect: redact\n"
                            "    redact: ['hunter[0-9]+', 'x*']\n");
    struct policy_decision d;

    decide(p, "Bash",
           "{\"command\":\"curl -H 'Authorization: Bearer abcdefghijklmnop1234' -d "
           "pw=hunter22 https://x\",\"timeout\":5,\"env\":[\"KEY=ghp_"
           "abcdefghijklmnopqrstuvwxyz0123456789\"]}",
           &d);
    assert_int_equal(d.effect, POLICY_REDACT);
    assert_string_equal(d.rule, "mask");
    assert_non_null(d.redacted_input);
    const char *cmd = json_string_value(json_object_get(d.redacted_input, "command"));
    assert_non_null(cmd);
    assert_null(strstr(cmd, "abcdefghijklmnop1234"));
    assert_null(strstr(cmd, "hunter22"));
    assert_non_null(strstr(cmd, "[REDACTED]"));
    assert_non_null(strstr(cmd, "https://"));
    const char *env = json_string_value(json_array_get(json_object_get(d.redacted_input, "env"), 0));
    assert_null(strstr(env, "ghp_abcdefghijklmnopqrstuvwxyz0123456789"));
    assert_int_equal(json_integer_value(json_object_get(d.redacted_input, "timeout")), 5);
    json_t *j = policy_decision_json(&d);
    assert_true(json_equal(json_object_get(j, "redacted_input"), d.redacted_input));
    json_decref(j);
    policy_decision_release(&d);
    assert_null(d.redacted_input);

    /* nothing to mask: the input comes back as it was */
    decide(p, "Bash", "{\"command\":\"ls\"}", &d);
    assert_int_equal(d.effect, POLICY_REDACT);
    ut_assert_json(d.redacted_input, "{\"command\":\"ls\"}");
    policy_decision_release(&d);
    policy_free(p);
}

static void test_bad_files(void **state)
{
    /* unknown key, with did-you-mean */
    expect_refused("rules:\n  - id: a\n    efect: block\n",
                   "p.yaml:3:5: error: unknown key 'efect' in rules[0] (did you mean 'effect'?)");
    expect_refused("rulez: []\n", "p.yaml:1:1: error: unknown key 'rulez' (did you mean 'rules'?)");
    /* missing required keys */
    expect_refused("rules:\n  - {tool: Bash}\n",
                   "p.yaml:2:5: error: rules[0]: missing required key 'id'");
    expect_refused("rules:\n  - {tool: Bash, id: x}\n", "missing required key 'effect'");
    /* wrong types */
    expect_refused("rules:\n  - {id: a, effect: block, tool: 3}\n",
                   "p.yaml:2:34: error: rules[0].tool: expected a string, found the number 3");
    expect_refused("rules: {a: 1}\n", "p.yaml:1:8: error: rules: expected a list");
    expect_refused("rules:\n  - {id: a, effect: block, paths: x}\n",
                   "p.yaml:2:35: error: rules[0].paths: expected a list");
    expect_refused("rules:\n  - just-a-string\n", "p.yaml:2:5: error: rules[0]: expected a mapping");
    expect_refused("- a\n", "p.yaml:1:1: error: expected a mapping with 'rules'");
    expect_refused("rules:\n  - {id: a, effect: block, command: [git]}\n",
                   "p.yaml:2:37: error: rules[0].command: expected a string");
    /* bad enum values, with did-you-mean */
    expect_refused("rules:\n  - {id: a, effect: blok}\n",
                   "p.yaml:2:21: error: effect: 'blok' is not one of allow, block, hold, redact "
                   "(did you mean 'block'?)");
    expect_refused("rules:\n  - {id: a, effect: block, mode: monitr}\n", "(did you mean 'monitor'?)");
    /* duplicate ids */
    expect_refused("rules:\n  - {id: a, effect: block}\n  - {id: b, effect: block}\n"
                   "  - {id: a, effect: allow}\n",
                   "p.yaml:4:10: error: rules[2].id: duplicate rule id 'a' (first at line 2)");
    /* bad ids */
    expect_refused("rules:\n  - {id: 'a b', effect: block}\n", "p.yaml:2:10: error: id: 'a b' is not");
    /* bad globs */
    expect_refused("rules:\n  - {id: a, effect: block, tool: 'mcp__[abc'}\n",
                   "p.yaml:2:34: error: rules[0].tool: bad glob 'mcp__[abc': it has a '[' "
                   "without its ']'");
    expect_refused("rules:\n  - {id: a, effect: block, paths: [ok, 'x\\']}\n",
                   "rules[0].paths[1]: bad glob");
    expect_refused("rules:\n  - {id: a, effect: block, command: 'git [push'}\n", "bad glob");
    expect_refused("rules:\n  - {id: a, effect: block, command: {program: 'g[', args: []}}\n",
                   "rules[0].command.program: bad glob");
    /* the command's form */
    expect_refused("rules:\n  - {id: a, effect: block, command: {args: [x]}}\n",
                   "rules[0].command: missing required key 'program'");
    expect_refused("rules:\n  - {id: a, effect: block, command: {program: git, arg: [x]}}\n",
                   "unknown key 'arg' in rules[0].command (did you mean 'args'?)");
    /* redaction patterns */
    expect_refused("rules:\n  - {id: a, effect: redact, redact: ['(a']}\n",
                   "rules[0].redact[0]: bad regular expression");
    expect_refused("rules:\n  - {id: a, effect: redact, redact: ['(a)\\1']}\n",
                   "back-references are not supported");
    expect_refused("rules:\n  - {id: a, effect: block, redact: ['x']}\n",
                   "only a rule with effect redact takes patterns");
    /* YAML problems */
    expect_refused("rules: [\n", "p.yaml:2:1: error:");
    expect_refused("rules: []\nrules: []\n", "p.yaml:2:1: error: duplicate key 'rules'");
    expect_refused("version: 2\n", "version: must be an integer from 1 to 1");
    /* every problem in one pass */
    char *all = refused("rules:\n  - {id: a, effect: blok}\n  - {id: b, efect: block}\n");
    assert_non_null(strstr(all, "p.yaml:2:"));
    assert_non_null(strstr(all, "p.yaml:3:"));
    free(all);
}

static void test_accepts(void **state)
{
    struct policy *p = load("");
    assert_int_equal(policy_nrules(p), 0);
    policy_free(p);
    p = load("# only a comment\n");
    policy_free(p);
    p = load("version: 1\nrules: []\n");
    policy_free(p);
    /* a rule without match keys matches every call */
    p = load("rules:\n  - {id: everything, effect: hold, reason: all held}\n");
    expect(p, "Anything", NULL, POLICY_HOLD, "everything");
    policy_free(p);
}

static void test_limits(void **state)
{
    struct buf b = BUF_INIT;
    struct policy *p = NULL;
    struct err e = {0};

    buf_adds(&b, "rules:\n");
    for (int i = 0; i <= POLICY_RULES_MAX; i++)
        buf_addf(&b, "  - {id: r%d, tool: T%d, effect: block}\n", i, i);
    assert_int_equal(policy_parse(&p, "p.yaml", b.data, b.len, NULL, &e), ERR_INVALID);
    assert_non_null(strstr(e.msg, "p.yaml:2:3: error: rules: must have 0 to 1000 items"));
    buf_reset(&b);
    err_clear(&e);
    buf_adds(&b, "rules:\n");
    for (int i = 0; i < POLICY_RULES_MAX; i++)
        buf_addf(&b, "  - {id: r%d, tool: T%d, effect: block}\n", i, i);
    assert_int_equal(policy_parse(&p, "p.yaml", b.data, b.len, NULL, &e), 0);
    assert_int_equal(policy_nrules(p), POLICY_RULES_MAX);
    expect(p, "T999", "{}", POLICY_BLOCK, "r999");
    policy_free(p);
    /* the file's size */
    buf_reset(&b);
    err_clear(&e);
    buf_adds(&b, "# ");
    while (b.len <= POLICY_FILE_MAX)
        buf_adds(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    assert_int_equal(policy_parse(&p, "p.yaml", b.data, b.len, NULL, &e), ERR_INVALID);
    assert_non_null(strstr(e.msg, "over the limit"));
    buf_release(&b);
}

static void test_schema_and_names(void **state)
{
    json_t *s = policy_schema();
    json_t *rule = json_object_get(json_object_get(s, "$defs"), "policy_rule");
    assert_non_null(rule);
    assert_true(json_is_false(json_object_get(s, "additionalProperties")));
    json_t *props = json_object_get(rule, "properties");
    const char *keys[] = {"id", "tool", "command", "paths", "mcp_server", "effect", "mode",
                          "reason", "redact"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (json_object_get(props, keys[i]) == NULL)
            fail_msg("schema lacks rules[].%s", keys[i]);
    ut_assert_json(json_object_get(json_object_get(props, "effect"), "enum"),
                   "[\"allow\",\"block\",\"hold\",\"redact\"]");
    ut_assert_json(json_object_get(rule, "required"), "[\"id\",\"effect\"]");
    json_decref(s);
    assert_string_equal(policy_effect_name(POLICY_REDACT), "redact");
    assert_string_equal(policy_mode_name(POLICY_MONITOR), "monitor");
}

static void test_call_command(void **state)
{
    struct buf b = BUF_INIT;
    json_t *in = ut_json("{\"command\":[\"git\",\"status\"]}");
    struct policy_call c = {.tool = "shell", .input = in};
    assert_string_equal(policy_call_command(&c, &b), "git status");
    json_decref(in);
    in = ut_json("{\"command\":[\"bash\",\"-lc\",\"git push --force\",\"it's\",\"\"]}");
    c.input = in;
    assert_string_equal(policy_call_command(&c, &b), "bash -lc 'git push --force' 'it'\\''s' ''");
    json_decref(in);
    in = ut_json("{\"command\":[\"git\",1]}");
    c.input = in;
    assert_null(policy_call_command(&c, &b));
    json_decref(in);
    in = ut_json("[\"not an object\"]");
    c.input = in;
    assert_null(policy_call_command(&c, &b));
    json_decref(in);
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default),         cmocka_unit_test(test_match_tool),
        cmocka_unit_test(test_match_command),   cmocka_unit_test(test_match_paths),
        cmocka_unit_test(test_match_mcp_server), cmocka_unit_test(test_order),
        cmocka_unit_test(test_monitor),         cmocka_unit_test(test_redact),
        cmocka_unit_test(test_bad_files),       cmocka_unit_test(test_accepts),
        cmocka_unit_test(test_limits),          cmocka_unit_test(test_schema_and_names),
        cmocka_unit_test(test_call_command),    cmocka_unit_test(test_match_parsed),
        cmocka_unit_test(test_destructive_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
