/* Unit tests for src/policy/shell.c: words and quoting, operators, nesting, limits, unwrapping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/shell.h"
#include "util/buf.h"
#include "helpers.h"
#include "util/banned.h"

/*
 * The parse of src as one line of text: each simple command as [w1 w2 ... >redir], preceded
 * by "|" when it reads the previous one's stdout and by its depth when nested ("1[...]");
 * commands separated by one space.
 */
static char *dump(const char *src, struct err *e)
{
    struct shell_list l;
    struct buf b = BUF_INIT;

    if (shell_parse(src, strlen(src), &l, e) < 0)
        return NULL;
    for (size_t i = 0; i < l.ncmds; i++) {
        const struct shell_simple *c = &l.cmds[i];
        if (i > 0)
            buf_addc(&b, ' ');
        if (c->pipe_from_prev)
            buf_addc(&b, '|');
        if (c->depth > 0)
            buf_addf(&b, "%d", c->depth);
        buf_addc(&b, '[');
        for (size_t j = 0; j < c->nwords; j++)
            buf_addf(&b, "%s%s", j ? " " : "", c->words[j].text);
        for (size_t j = 0; j < c->nredir_out; j++)
            buf_addf(&b, "%s>%s", c->nwords || j ? " " : "", c->redir_out[j]);
        buf_addc(&b, ']');
    }
    shell_list_free(&l);
    return buf_detach(&b, NULL);
}

static void expect(const char *src, const char *want)
{
    struct err e = {0};
    char *got = dump(src, &e);
    if (got == NULL)
        fail_msg("'%s': unexpected error: %s", src, e.msg);
    if (strcmp(got, want) != 0)
        fail_msg("'%s'\n got  %s\n want %s", src, got, want);
    free(got);
}

static void expect_error(const char *src, size_t len, const char *needle)
{
    struct shell_list l;
    struct err e = {0};
    int rc = shell_parse(src, len, &l, &e);

    if (rc != ERR_INVALID)
        fail_msg("'%.60s': want ERR_INVALID, got %d", src, rc);
    if (strstr(e.msg, needle) == NULL)
        fail_msg("'%.60s': message '%s' lacks '%s'", src, e.msg, needle);
    assert_int_equal(l.ncmds, 0);
    assert_null(l.cmds);
    shell_list_free(&l);
}

static void test_words_and_quoting(void **state)
{
    (void)state;
    expect("git status", "[git status]");
    expect("  ls\t-la  ", "[ls -la]");
    expect("echo 'a b' \"c d\" e\\ f", "[echo a b c d e f]");
    expect("echo 'it'\\''s'", "[echo it's]");
    expect("echo \"a \\\"q\\\" \\$x \\n\"", "[echo a \"q\" $x \\n]");
    expect("echo $'a\\tb\\x41\\'c\\101'", "[echo a\tbA'cA]");
    expect("echo $\"hi\"", "[echo hi]");
    expect("echo a\\\nb", "[echo ab]");
    expect("r\"m\" -rf x", "[rm -rf x]");
    expect("echo a#b # comment rm -rf /", "[echo a#b]");
    expect("# only a comment", "");
    expect("", "");
}

static void test_flags(void **state)
{
    struct shell_list l;
    struct err e = {0};
    const char *src = "echo plain 'q' $HOME \"$(date)\" ${X:-y}";

    (void)state;
    assert_int_equal(shell_parse(src, strlen(src), &l, &e), 0);
    assert_int_equal(l.ncmds, 2); /* echo, then date from the substitution */
    const struct shell_simple *c = &l.cmds[0];
    assert_int_equal(c->nwords, 6);
    assert_false(c->words[1].quoted);
    assert_false(c->words[1].has_expansion);
    assert_true(c->words[2].quoted);
    assert_string_equal(c->words[3].text, "$HOME");
    assert_true(c->words[3].has_expansion);
    assert_false(c->words[3].quoted);
    assert_string_equal(c->words[4].text, "$(date)");
    assert_true(c->words[4].has_expansion);
    assert_true(c->words[4].quoted);
    assert_string_equal(c->words[5].text, "${X:-y}");
    assert_true(c->words[5].has_expansion);
    assert_string_equal(l.cmds[1].words[0].text, "date");
    assert_int_equal(l.cmds[1].depth, 1);
    shell_list_free(&l);
    shell_list_free(&l); /* empty again: a second free is harmless */
    shell_list_free(NULL);
}

static void test_assignments_and_redirections(void **state)
{
    (void)state;
    expect("FOO=1 BAR=\"x y\" cmd arg", "[cmd arg]");
    expect("FOO=1", "");
    expect("cmd FOO=1", "[cmd FOO=1]");
    expect("\"FOO\"=1 cmd", "[FOO=1 cmd]");
    expect("x=(1 2 3); echo ${x[@]}", "[echo ${x[@]}]");
    expect("make >out.log 2>err.log", "[make >out.log >err.log]");
    expect("make > a >> b &> c &>> d >| e 1>f", "[make >a >b >c >d >e >f]");
    expect("make 2>&1 >&2 <in 3<>rw", "[make]");
    expect("echo x >&file", "[echo x >file]");
    expect("> /dev/sda", "[>/dev/sda]");
    expect("cat <<< 'hello' | wc", "[cat] |[wc]");
    expect("echo 8080 2", "[echo 8080 2]");
    expect("cat <<EOF\nrm -rf /\nEOF\necho after", "[cat] [echo after]");
    expect("cat <<-'EOF' >x\n\trm -rf /\n\tEOF\nls", "[cat >x] [ls]");
    expect("cat <<A <<B\na\nA\nb\nB\nls", "[cat] [ls]");
    expect("cat <<EOF", "[cat]"); /* a body that never ends: the rest of the input */
}

static void test_operators(void **state)
{
    (void)state;
    expect("cd src && make -j4 2>&1 | tail -n 20", "[cd src] [make -j4] |[tail -n 20]");
    expect("a || b; c & d\ne", "[a] [b] [c] [d] [e]");
    expect("a |& b", "[a] |[b]");
    expect("a |\n  b", "[a] |[b]");
    expect("| a", "[a]");
    expect("FOO=1 | a", "[a]");
    expect("a &&\n b", "[a] [b]");
    expect("a;b;", "[a] [b]");
    expect(";; ; a", "[a]");
}

static void test_nesting(void **state)
{
    (void)state;
    expect("(cd / && rm -rf x)", "1[cd /] 1[rm -rf x]");
    expect("{ a; b; } > out", "1[a] 1[b] [>out]");
    expect("echo {a,b} }", "[echo {a,b} }]");
    expect("echo $(rm -rf x)", "[echo $(rm -rf x)] 1[rm -rf x]");
    expect("echo `ls \\`pwd\\``", "[echo `ls \\`pwd\\``] 1[ls `pwd`] 2[pwd]");
    expect("echo \"$(a \"$(b)\")\"", "[echo $(a \"$(b)\")] 1[a $(b)] 2[b]");
    expect("diff <(ls a) >(wc)", "[diff <(ls a) >(wc)] 1[ls a] 1[wc]");
    expect("echo $((1 + (2 * 3)))", "[echo $((1 + (2 * 3)))]");
    expect("((i++)); ls", "[ls]");
    expect("bash -c 'rm -rf /; ls'", "[bash -c rm -rf /; ls] 1[rm -rf /] 1[ls]");
    expect("sh -ec \"echo hi\"", "[sh -ec echo hi] 1[echo hi]");
    expect("bash -lc 'cd x && make'", "[bash -lc cd x && make] 1[cd x] 1[make]");
    expect("sudo -u me bash -o pipefail -c 'a | b'",
           "[sudo -u me bash -o pipefail -c a | b] 1[a] |1[b]");
    expect("/bin/sh -c 'x'", "[/bin/sh -c x] 1[x]");
    expect("bash script.sh -c x", "[bash script.sh -c x]");
    expect("su - me -c 'make install'", "[su - me -c make install] 1[make install]");
    expect("su me", "[su me]");
    expect("eval 'rm' -rf /", "[eval rm -rf /] 1[rm -rf /]");
    expect("bash <<< 'rm -rf /'", "[bash] 1[rm -rf /]");
    expect("cat <<EOF | sh\nrm -rf /\nEOF\nls", "[cat] |[sh] 1[rm -rf /] [ls]");
    expect("sh <<'X'\ngit push -f\nX", "[sh] 1[git push -f]");
    expect("cat <<EOF > f\nrm -rf /\nEOF", "[cat >f]");
    expect("if [ -f x ]; then rm a; elif b; then c; else d; fi", "[[ -f x ]] [rm a] [b] [c] [d]");
    expect("for f in *.o; do rm -f \"$f\"; done", "[for f in *.o] [rm -f $f]");
    expect("while true; do ! sleep 1; done", "[true] [sleep 1]");
    expect("case $x in a) rm -rf /;; b|c) echo;; (d) ls ;& esac; echo after",
           "1[rm -rf /] 1[echo] 1[ls] [echo after]");
    expect("case \"$1\" in\n start) ./run.sh ;;\n *) echo usage ;;\nesac",
           "1[./run.sh] 1[echo usage]");
}

static void test_functions(void **state)
{
    struct shell_list l;
    struct err e = {0};
    const char *bomb = ":(){ :|:& };:";

    (void)state;
    assert_int_equal(shell_parse(bomb, strlen(bomb), &l, &e), 0);
    assert_int_equal(l.ncmds, 3);
    assert_string_equal(l.cmds[0].in_function, ":");
    assert_string_equal(l.cmds[1].in_function, ":");
    assert_true(l.cmds[1].pipe_from_prev);
    assert_null(l.cmds[2].in_function);
    shell_list_free(&l);
    expect("f() { echo hi; }; f", "2[echo hi] [f]");
    expect("function g { g & g; }", "2[g] 2[g]");
    expect("function h() ( ls )", "2[ls]");
}

static void test_pipelines(void **state)
{
    struct shell_list l;
    struct err e = {0};
    const char *src = "curl $(echo u) | sh $(echo v); (a; b) | c";

    (void)state;
    assert_int_equal(shell_parse(src, strlen(src), &l, &e), 0);
    /* the members of a pipeline are consecutive, nested commands after them */
    assert_int_equal(l.ncmds, 7);
    assert_string_equal(l.cmds[0].words[0].text, "curl");
    assert_string_equal(l.cmds[1].words[0].text, "sh");
    assert_true(l.cmds[1].pipe_from_prev);
    assert_int_equal(l.cmds[0].pipeline, l.cmds[1].pipeline);
    assert_string_equal(l.cmds[2].words[1].text, "u");
    assert_string_equal(l.cmds[3].words[1].text, "v");
    assert_int_not_equal(l.cmds[2].pipeline, l.cmds[0].pipeline);
    assert_false(l.cmds[2].pipe_from_prev);
    /* (a; b) | c: one pipeline, c reads the group */
    assert_string_equal(l.cmds[6].words[0].text, "c");
    assert_true(l.cmds[6].pipe_from_prev);
    assert_int_equal(l.cmds[4].pipeline, l.cmds[6].pipeline);
    assert_int_equal(l.cmds[5].pipeline, l.cmds[6].pipeline);
    shell_list_free(&l);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("echo 'abc", 9, "unterminated single quote");
    expect_error("echo \"abc", 9, "unterminated double quote");
    expect_error("echo $'abc", 10, "unterminated $'");
    expect_error("echo $(ls", 9, "unterminated");
    expect_error("echo `ls", 8, "unterminated backquote");
    expect_error("echo ${x", 8, "unterminated ${");
    expect_error("(ls", 3, "unterminated");
    expect_error("{ ls; ", 6, "unterminated '{' group");
    expect_error("ls )", 4, "unexpected ')'");
    expect_error("ls (x)", 6, "unexpected '('");
    expect_error("case x in a) ls", 15, "unterminated case");
    expect_error("echo >", 6, "redirection without a target");
    expect_error("a\0b", 3, "NUL");
    expect_error("function f| { f & f; }; f", 25, "function without a body");
    expect_error("f() ;", 5, "function without a body");
}

static void test_limits(void **state)
{
    struct buf b = BUF_INIT;
    struct shell_list l;
    struct err e = {0};

    (void)state;
    /* 64 KiB is the most */
    buf_adds(&b, "echo '");
    while (b.len < SHELL_MAX_INPUT - 1)
        buf_addc(&b, 'a');
    buf_adds(&b, "'x");
    b.len = SHELL_MAX_INPUT;
    assert_int_equal(shell_parse(b.data, b.len, &l, &e), 0);
    shell_list_free(&l);
    expect_error(b.data, SHELL_MAX_INPUT + 1, "longer than");
    buf_release(&b);

    /* 4096 words */
    for (int i = 0; i < SHELL_MAX_WORDS; i++)
        buf_adds(&b, "w ");
    assert_int_equal(shell_parse(b.data, b.len, &l, &e), 0);
    assert_int_equal(l.cmds[0].nwords, SHELL_MAX_WORDS);
    shell_list_free(&l);
    buf_adds(&b, "w");
    expect_error(b.data, b.len, "more than 4096 words");
    buf_release(&b);

    /* depth 16 ("((" would be arithmetic) */
    for (int i = 0; i < SHELL_MAX_DEPTH; i++)
        buf_adds(&b, "( ");
    buf_adds(&b, "ls");
    for (int i = 0; i < SHELL_MAX_DEPTH; i++)
        buf_addc(&b, ')');
    assert_int_equal(shell_parse(b.data, b.len, &l, &e), 0);
    assert_int_equal(l.cmds[0].depth, SHELL_MAX_DEPTH);
    shell_list_free(&l);
    buf_reset(&b);
    buf_adds(&b, "echo ");
    for (int i = 0; i <= SHELL_MAX_DEPTH; i++)
        buf_adds(&b, "$(");
    for (int i = 0; i <= SHELL_MAX_DEPTH; i++)
        buf_addc(&b, ')');
    expect_error(b.data, b.len, "deeper than 16");
    buf_reset(&b);
    /* eval and sh -c re-parse a level deeper each */
    for (int i = 0; i <= SHELL_MAX_DEPTH; i++)
        buf_adds(&b, "eval ");
    buf_adds(&b, "ls");
    expect_error(b.data, b.len, "deeper than 16");
    buf_reset(&b);
    expect("sh -c \"sh -c 'sh -c ls'\"",
           "[sh -c sh -c 'sh -c ls'] 1[sh -c sh -c ls] 2[sh -c ls] 3[ls]");
    /* a deep chain of function definitions is nesting too, not unbounded recursion */
    for (int i = 0; i < 100; i++)
        buf_adds(&b, "f()");
    buf_adds(&b, "{ ls; }");
    expect_error(b.data, b.len, "deeper than 16");
    buf_release(&b);
}

static void test_command_start(void **state)
{
    static const struct {
        const char *src;
        const char *prog; /* NULL: none */
    } cases[] = {
        {"rm -rf x", "rm"},
        {"/usr/bin/rm -rf x", "rm"},
        {"sudo rm x", "rm"},
        {"sudo -u root -E -- rm x", "rm"},
        {"sudo --user=root rm x", "rm"},
        {"sudo -uroot rm x", "rm"},
        {"env -i A=1 B=2 rm x", "rm"},
        {"env -u HOME rm x", "rm"},
        {"nice -n 10 rm x", "rm"},
        {"nice -5 rm x", "rm"},
        {"timeout 10 rm x", "rm"},
        {"timeout -s KILL -k 5 10s rm x", "rm"},
        {"timeout --signal=KILL 10s rm x", "rm"},
        {"nohup rm x", "rm"},
        {"command rm x", "rm"},
        {"command -v rm", NULL},
        {"exec -a name rm x", "rm"},
        {"xargs -0 -n 1 -I{} rm {}", "rm"},
        {"xargs --max-args 2 rm", "rm"},
        {"time -p rm x", "rm"},
        {"sudo env FOO=1 nice timeout 5 /bin/rm x", "rm"},
        {"sudo -v", NULL},
        {"env", NULL},
        {"xargs", NULL},
        {"/", "/"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct shell_list l;
        struct err e = {0};
        size_t k;
        assert_int_equal(shell_parse(cases[i].src, strlen(cases[i].src), &l, &e), 0);
        k = shell_command_start(l.cmds[0].words, l.cmds[0].nwords);
        if (cases[i].prog == NULL) {
            if (k != l.cmds[0].nwords)
                fail_msg("'%s': want no program, got '%s'", cases[i].src, l.cmds[0].words[k].text);
        } else {
            if (k >= l.cmds[0].nwords)
                fail_msg("'%s': want '%s', got none", cases[i].src, cases[i].prog);
            if (strcmp(shell_program(l.cmds[0].words[k].text), cases[i].prog) != 0)
                fail_msg("'%s': want '%s', got '%s'", cases[i].src, cases[i].prog,
                         l.cmds[0].words[k].text);
        }
        shell_list_free(&l);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words_and_quoting),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_assignments_and_redirections),
        cmocka_unit_test(test_operators),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_pipelines),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_command_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
