/* Unit tests for src/util/opt: the table-driven flag parser and its help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/opt.h"
#include "util/text.h"
#include "util/banned.h"

static int json, quiet, rep, ncalls, secs_ms;
static const char *name;
static size_t body;
static uint64_t seed;
static int seed_given;
static char last_call[32];

static int on_call(const struct opt *o, const char *arg, struct err *e)
{
    ncalls++;
    snprintf(last_call, sizeof(last_call), "%s", arg);
    if (strcmp(arg, "bad") == 0)
        return err_set(e, ERR_INVALID, "--%s: bad '%s'", o->name, arg);
    return 0;
}

static const struct opt opts[] = {
    OPT_BOOL("json", 0, &json, "print JSON"),
    OPT_BOOL("quiet", 'q', &quiet, "print problems only"),
    OPT_INT("rep", "N", &rep, 0, 100, "repetition"),
    OPT_STRING("name", "NAME", &name, "the server's", "the name"),
    OPT_SIZE("max-body", "BYTES", &body, 1, 1 << 20, "body limit"),
    OPT_U64("seed", "S", &seed, &seed_given, "base seed"),
    OPT_SECS("timeout", "S", &secs_ms, 1, 86400000, "a timeout"),
    OPT_CALL("mcp", "NAME=CMD", on_call, NULL, "a server (repeatable)"),
    OPT_END(),
};

static const struct opt_cmd cmd = {
    .name = "demo",
    .usage = "[options] FILE...",
    .about = "a test command\n",
    .opts = opts,
    .min_args = 1,
    .max_args = 2,
    .example = "demo --json x.yaml",
    .doc = "docs/demo.md",
};

static int reset(void **state)
{
    json = quiet = rep = ncalls = seed_given = 0;
    secs_ms = 1500;
    name = NULL;
    body = 4096;
    seed = 0;
    last_call[0] = '\0';
    return 0;
}

/* Parses a NULL-terminated list after the command name; returns opt_parse's result. */
static int parse(struct err *e, int *n, char **out, ...)
{
    static char *argv[32];
    static char store[32][64];
    va_list ap;
    int argc = 0;
    const char *s;

    snprintf(store[argc], sizeof(store[0]), "demo");
    argv[argc] = store[argc];
    argc++;
    va_start(ap, out);
    while ((s = va_arg(ap, const char *)) != NULL) {
        snprintf(store[argc], sizeof(store[0]), "%s", s);
        argv[argc] = store[argc];
        argc++;
    }
    va_end(ap);
    err_clear(e);
    int rc = opt_parse(&cmd, argc, argv, n, e);
    for (int i = 0; rc == 0 && i < *n; i++)
        out[i] = argv[i];
    return rc;
}

static void test_both_value_forms(void **state)
{
    struct err e;
    char *args[8];
    int n = -1;

    assert_int_equal(parse(&e, &n, args, "--rep=7", "a.yaml", "--name", "srv", "-q", NULL), 0);
    assert_int_equal(rep, 7);
    assert_string_equal(name, "srv");
    assert_int_equal(quiet, 1);
    assert_int_equal(n, 1);
    assert_string_equal(args[0], "a.yaml");

    assert_int_equal(parse(&e, &n, args, "--rep", "8", "--name=", "-", NULL), 0);
    assert_int_equal(rep, 8);
    assert_string_equal(name, "");
    assert_string_equal(args[0], "-"); /* a lone dash is an argument */

    assert_int_equal(parse(&e, &n, args, "--seed=0x10", "--timeout", "0.25", "--max-body=1024",
                           "f", NULL),
                     0);
    assert_true(seed == 16 && seed_given == 1);
    assert_int_equal(secs_ms, 250);
    assert_int_equal(body, 1024);
}

static void test_dashdash_and_counts(void **state)
{
    struct err e;
    char *args[8];
    int n;

    assert_int_equal(parse(&e, &n, args, "--", "--json", NULL), 0);
    assert_int_equal(json, 0);
    assert_int_equal(n, 1);
    assert_string_equal(args[0], "--json");

    assert_int_equal(parse(&e, &n, args, "--json", NULL), ERR_INVALID);
    assert_string_equal(e.msg, "missing argument");
    assert_int_equal(parse(&e, &n, args, "a", "b", "c", NULL), ERR_INVALID);
    assert_string_equal(e.msg, "unexpected argument 'c'");
}

static void test_errors(void **state)
{
    struct err e;
    char *args[8];
    int n;

    assert_int_equal(parse(&e, &n, args, "--jsno", "f", NULL), ERR_INVALID);
    assert_string_equal(e.msg, "unknown option '--jsno' (did you mean '--json'?)");
    assert_int_equal(parse(&e, &n, args, "--rpe=3", "f", NULL), ERR_INVALID);
    assert_string_equal(e.msg, "unknown option '--rpe=3' (did you mean '--rep'?)");
    assert_int_equal(parse(&e, &n, args, "--zzzzzzzz", "f", NULL), ERR_INVALID);
    assert_string_equal(e.msg, "unknown option '--zzzzzzzz'");
    assert_int_equal(parse(&e, &n, args, "-x", "f", NULL), ERR_INVALID);
    assert_string_equal(e.msg, "unknown option '-x'");
    assert_int_equal(parse(&e, &n, args, "f", "--rep", NULL), ERR_INVALID);
    assert_string_equal(e.msg, "--rep needs a value (N)");
    assert_int_equal(parse(&e, &n, args, "f", "--json=1", NULL), ERR_INVALID);
    assert_string_equal(e.msg, "--json takes no value");
    assert_int_equal(parse(&e, &n, args, "f", "--rep", "101", NULL), ERR_INVALID);
    assert_string_equal(e.msg, "--rep: expected an integer in 0..100, got '101'");
    assert_int_equal(parse(&e, &n, args, "f", "--rep", "-1", NULL), ERR_INVALID);
    assert_int_equal(parse(&e, &n, args, "f", "--rep=1x", NULL), ERR_INVALID);
    assert_int_equal(parse(&e, &n, args, "f", "--seed", "-1", NULL), ERR_INVALID);
    assert_int_equal(parse(&e, &n, args, "f", "--timeout", "0", NULL), ERR_INVALID);
    assert_string_equal(e.msg, "--timeout: expected seconds in 0.001..86400, got '0'");
    assert_int_equal(parse(&e, &n, args, "f", "--mcp", "ok", "--mcp=bad", NULL), ERR_INVALID);
    assert_int_equal(ncalls, 2);
    assert_string_equal(e.msg, "--mcp: bad 'bad'");
}

static void test_help_wins(void **state)
{
    struct err e;
    char *args[8];
    int n;

    /* before an error and before any value is set */
    assert_int_equal(parse(&e, &n, args, "--rep=9", "--bogus", "-h", NULL), OPT_HELP);
    assert_int_equal(rep, 0);
    assert_int_equal(parse(&e, &n, args, "--help", NULL), OPT_HELP);
    /* after --, it is an argument */
    assert_int_equal(parse(&e, &n, args, "--", "--help", NULL), 0);
    /* a flag's value is not a flag */
    assert_int_equal(parse(&e, &n, args, "--name", "-h", "f", NULL), 0);
    assert_string_equal(name, "-h");
}

static void test_args_after_dashdash(void **state)
{
    static const struct opt_cmd c2 = {.name = "shim",
                                      .usage = "-- COMMAND",
                                      .about = "",
                                      .opts = opts,
                                      .min_args = 1,
                                      .max_args = -1,
                                      .example = "shim -- true",
                                      .doc = "docs/mcp.md",
                                      .flags = OPT_ARGS_AFTER_DASHDASH};
    char a0[] = "shim", a1[] = "--json", a2[] = "--", a3[] = "srv", a4[] = "--bogus", a5[] = "-h";
    char *argv[] = {a0, a1, a2, a3, a4, a5, NULL};
    struct err e = {0};
    int n;

    assert_int_equal(opt_parse(&c2, 6, argv, &n, &e), 0);
    assert_int_equal(json, 1);
    assert_int_equal(n, 3);
    assert_string_equal(argv[0], "srv");
    assert_string_equal(argv[1], "--bogus");
    assert_string_equal(argv[2], "-h");

    char b0[] = "shim", b1[] = "srv";
    char *bargv[] = {b0, b1, NULL};
    err_clear(&e);
    assert_int_equal(opt_parse(&c2, 2, bargv, &n, &e), ERR_INVALID);
    assert_string_equal(e.msg, "unexpected argument 'srv' (arguments go after --)");
}

static void test_help_text(void **state)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    assert_non_null(f);
    opt_help(&cmd, f);
    fclose(f);
    assert_non_null(strstr(text, "usage: faultline demo [options] FILE...\n"));
    assert_non_null(strstr(text, "-q, --quiet"));
    assert_non_null(strstr(text, "repetition (0..100, default 0)"));
    assert_non_null(strstr(text, "the name (default the server's)"));
    assert_non_null(strstr(text, "body limit (1..1048576, default 4096)"));
    assert_non_null(strstr(text, "a timeout (0.001..86400 s, default 1.5)"));
    assert_non_null(strstr(text, "-h, --help"));
    /* ends with the example and the docs page */
    const char *tail = "\nexample:\n  faultline demo --json x.yaml\n\nsee docs/demo.md\n";
    assert_true(len > strlen(tail));
    assert_string_equal(text + len - strlen(tail), tail);
    free(text);
}

static void test_suggest(void **state)
{
    const char *c[] = {"json", "quiet", "as-json"};
    assert_string_equal(text_suggest("jsno", c, 3), "json");
    assert_string_equal(text_suggest("as_json", c, 3), "as-json");
    assert_null(text_suggest("zzzzzzz", c, 3));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_both_value_forms, reset),
        cmocka_unit_test_setup(test_dashdash_and_counts, reset),
        cmocka_unit_test_setup(test_errors, reset),
        cmocka_unit_test_setup(test_help_wins, reset),
        cmocka_unit_test_setup(test_args_after_dashdash, reset),
        cmocka_unit_test_setup(test_help_text, reset),
        cmocka_unit_test(test_suggest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
