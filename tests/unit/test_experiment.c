/* Unit tests for src/experiment/experiment.c and the YAML reader it uses (src/util/yaml.c),
 * through experiment_parse/_load: each rule of the format, the normal form and its hash, and
 * hostile input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "experiment/catalog.h"
#include "experiment/experiment.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/yaml.h"
#include "util/banned.h"

#define HEAD "name: t\nagent: run-agent\nverify: 'true'\n"
#define FAULT_ERR "faults:\n  - id: tool.error\n"
#define PROBES "probes:\n  - {id: task_success, weight: 1}\n"
#define ABORT "abort:\n  - cost_usd_above: 1\n"
#define VALID HEAD FAULT_ERR PROBES ABORT

static struct experiment_diags D;

static struct experiment *parse(const char *text)
{
    struct err e = {0};
    experiment_diags_release(&D);
    return experiment_parse("t.yaml", text, strlen(text), &D, &e);
}

static void dump_diags(void)
{
    struct buf b = BUF_INIT;
    experiment_diags_format(&D, "t.yaml", &b);
    fprintf(stderr, "%s", b.data);
    buf_release(&b);
}

/* 1 when some diagnostic (of the given kind) contains needle. */
static int has(int warning, const char *needle)
{
    for (size_t i = 0; i < D.n; i++)
        if (D.v[i].is_warning == warning && strstr(D.v[i].msg, needle))
            return 1;
    return 0;
}

static void expect_ok(const char *text)
{
    struct experiment *x = parse(text);
    if (x == NULL) {
        dump_diags();
        fail_msg("expected a valid experiment:\n%s", text);
    }
    experiment_free(x);
}

static void expect_error(const char *text, const char *needle)
{
    struct experiment *x = parse(text);
    if (x != NULL || !has(0, needle)) {
        dump_diags();
        experiment_free(x);
        fail_msg("expected an error containing '%s' for:\n%s", needle, text);
    }
}

/* Expects exactly one error, containing needle, at line:col. */
static void expect_error_at(const char *text, int line, int col, const char *needle)
{
    expect_error(text, needle);
    if (D.nerrors != 1 || D.v[0].mark.line != line || D.v[0].mark.col != col) {
        dump_diags();
        fail_msg("expected one error at %d:%d", line, col);
    }
}

static char *doc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *doc(const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vaddf(&b, fmt, ap);
    va_end(ap);
    return buf_detach(&b, NULL);
}

/* A valid document with one fault item (its lines after "  - id: ID\n"). */
static char *with_fault(const char *fault_body)
{
    return doc(HEAD "faults:\n%s" PROBES ABORT, fault_body);
}

static void ok_fault(const char *body)
{
    char *t = with_fault(body);
    expect_ok(t);
    free(t);
}

static void bad_fault(const char *body, const char *needle)
{
    char *t = with_fault(body);
    expect_error(t, needle);
    free(t);
}

static void test_minimal_valid_with_defaults(void **state)
{
    struct experiment *x = parse(VALID);
    assert_non_null(x);
    assert_string_equal(x->name, "t");
    assert_string_equal(x->agent, "run-agent");
    assert_string_equal(x->verify, "true");
    assert_string_equal(x->path, "t.yaml");
    assert_int_equal(x->repeat, 1);
    assert_false(x->has_seed);
    assert_int_equal(x->nfaults, 1);
    assert_string_equal(x->faults[0].def->id, "tool.error");
    assert_int_equal(x->faults[0].after_calls, 0);
    assert_int_equal(x->faults[0].times, -1);
    assert_true(x->faults[0].probability == 1.0);
    assert_null(x->faults[0].when);
    assert_string_equal(json_string_value(json_object_get(x->faults[0].options, "message")),
                        "tool failed (injected fault)");
    assert_int_equal(x->nprobes, 1);
    assert_true(x->probes[0].weight == 1.0);
    assert_true(x->abort.cost_usd_above == 1.0);
    assert_false(x->abort.destructive_attempt);
    assert_int_equal(strlen(x->hash), 64);
    assert_int_equal(D.n, 0);
    experiment_free(x);
}

static void test_name_pattern(void **state)
{
    static const char *const bad[] = {"Registry-Down", "-x", "x-", "a_b", "a b", "\"\"",
                                      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    static const char *const good[] = {"registry-down", "a", "a1-b2", "9lives"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *t = doc("name: %s\nagent: a\nverify: v\n" FAULT_ERR PROBES ABORT, bad[i]);
        expect_error(t, "name:");
        assert_int_equal(D.v[0].mark.line, 1);
        free(t);
    }
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char *t = doc("name: %s\nagent: a\nverify: v\n" FAULT_ERR PROBES ABORT, good[i]);
        expect_ok(t);
        free(t);
    }
}

static void test_repeat_range(void **state)
{
    expect_error_at(VALID "repeat: 0\n", 10, 9, "repeat: must be an integer from 1 to 20, found 0");
    expect_error_at(VALID "repeat: 21\n", 10, 9, "from 1 to 20");
    expect_error(VALID "repeat: 2.5\n", "expected an integer");
    expect_error(VALID "repeat: '3'\n", "expected an integer");
    expect_ok(VALID "repeat: 1\n");
    struct experiment *x = parse(VALID "repeat: 20\n");
    assert_non_null(x);
    assert_int_equal(x->repeat, 20);
    experiment_free(x);
}

static void test_cost_usd_above_mandatory(void **state)
{
    expect_error(HEAD FAULT_ERR PROBES "abort:\n  - destructive_attempt\n",
                 "cost_usd_above is mandatory");
    expect_error(HEAD FAULT_ERR PROBES "abort: []\n", "cost_usd_above is mandatory");
    expect_error(HEAD FAULT_ERR PROBES, "missing required key 'abort'");
    expect_error(HEAD FAULT_ERR PROBES "abort:\n  - cost_usd_above: 0\n",
                 "must be a number above 0");
    expect_error(HEAD FAULT_ERR PROBES "abort:\n  - cost_usd_above: -2\n", "above 0");
    expect_error(HEAD FAULT_ERR PROBES "abort:\n  - cost_usd_above\n", "needs a value");
    expect_error(HEAD FAULT_ERR PROBES "abort:\n  - cost_usd_above: 1\n  - cost_usd_above: 2\n",
                 "listed twice");
    expect_error(HEAD FAULT_ERR PROBES "abort:\n  - cost_usd_above: 1\n  - destructive_attempt: true\n",
                 "takes no value");
    expect_error(HEAD FAULT_ERR PROBES "abort:\n  - cost_usd_abov: 1\n",
                 "did you mean 'cost_usd_above'");
    expect_error(HEAD FAULT_ERR PROBES "abort:\n  - {cost_usd_above: 1, wall_clock_s_above: 5}\n",
                 "one condition per item");
    struct experiment *x = parse(HEAD FAULT_ERR PROBES
                                 "abort:\n  - destructive_attempt\n  - cost_usd_above: 2.5\n"
                                 "  - wall_clock_s_above: 900\n");
    assert_non_null(x);
    assert_true(x->abort.destructive_attempt);
    assert_true(x->abort.cost_usd_above == 2.5);
    assert_true(x->abort.wall_clock_s_above == 900);
    experiment_free(x);
}

static void test_egress_requires_host(void **state)
{
    bad_fault("  - id: egress.dns_fail\n", "egress.dns_fail requires match.host");
    bad_fault("  - id: egress.credential_401\n    match: {}\n",
              "egress.credential_401 requires match.host");
    bad_fault("  - id: egress.dns_fail\n    match: {tool: x}\n", "does not apply");
    ok_fault("  - id: egress.dns_fail\n    match: {host: \"*.npmjs.org\"}\n");
    ok_fault("  - id: egress.credential_401\n    match: {host: api.github.com}\n    after_calls: 2\n");
}

static void test_option_types_and_ranges(void **state)
{
    ok_fault("  - id: llm.rate_limit\n    retry_after_s: 2\n");
    bad_fault("  - id: llm.rate_limit\n    retry_after_s: '2'\n", "expected an integer");
    bad_fault("  - id: llm.rate_limit\n    retry_after_s: 2.5\n", "expected an integer");
    bad_fault("  - id: llm.rate_limit\n    retry_after_s: -1\n", "from 0 to 3600");
    bad_fault("  - id: llm.rate_limit\n    retry_after_s: 3601\n", "from 0 to 3600");
    ok_fault("  - id: llm.upstream_5xx\n    status: 503\n");
    bad_fault("  - id: llm.upstream_5xx\n    status: 504\n", "must be one of 500, 502, 503, 529");
    ok_fault("  - id: llm.upstream_5xx\n    stream_cut_after_chunks: 3\n");
    bad_fault("  - id: llm.context_trim\n    drop_system: yes\n", "expected a boolean");
    ok_fault("  - id: llm.context_trim\n    drop_system: true\n    drop_oldest: 0\n");
    bad_fault("  - id: llm.model_degrade\n", "requires option 'to_model'");
    bad_fault("  - id: llm.model_degrade\n    to_model: ''\n", "must not be empty");
    ok_fault("  - id: llm.model_degrade\n    to_model: claude-haiku-4\n");
    bad_fault("  - id: permission.deny_or_delay\n    mode: dealy\n", "did you mean 'delay'");
    bad_fault("  - id: permission.deny_or_delay\n    delay_s: 601\n", "from 0 to 600");
    ok_fault("  - id: permission.deny_or_delay\n    mode: hold_then_deny\n    delay_s: 600\n");
    bad_fault("  - id: inject.tool_result\n", "requires option 'payload'");
    bad_fault("  - id: mcp.toolset_change\n    remove: a\n", "expected a list");
    bad_fault("  - id: mcp.toolset_change\n    remove: [a, a]\n", "listed twice");
    /* every bad item of a list, each at its own position, in the validator's words */
    {
        char *t = with_fault("  - id: mcp.toolset_change\n    remove: [a, '', a, 1, b, b]\n");
        experiment_free(parse(t));
        free(t);
        assert_int_equal(D.nerrors, 4);
        assert_true(has(0, "faults[0].remove[1]: must not be empty"));
        assert_true(has(0, "faults[0].remove[2]: 'a' is listed twice"));
        assert_true(has(0, "faults[0].remove[3]: expected a string, found"));
        assert_true(has(0, "faults[0].remove[5]: 'b' is listed twice"));
    }    bad_fault("  - id: mcp.toolset_change\n    redefine: [a]\n", "expected a mapping");
    ok_fault("  - id: mcp.toolset_change\n    remove: [write_file]\n");
    ok_fault("  - id: tool.stale_data\n    result: {balance: 10}\n");
    bad_fault("  - id: tool.stale_data\n    result: .inf\n", "not representable as JSON");
    bad_fault("  - id: tool.error\n    message: 404\n", "quote it to make it a string");

    struct experiment *x = NULL;
    char *t = with_fault("  - id: llm.upstream_5xx\n    status: 502\n");
    x = parse(t);
    free(t);
    assert_non_null(x);
    json_t *o = x->faults[0].options;
    assert_int_equal(json_integer_value(json_object_get(o, "status")), 502);
    assert_null(json_object_get(o, "stream_cut_after_chunks")); /* no default: absent */
    experiment_free(x);
}

/* A valid value of option o in YAML, for the options a probe does not set. */
static void sample_value(const struct catalog_option *o, struct buf *out)
{
    if (o->def && o->type != CATALOG_OPT_JSON && o->type != CATALOG_OPT_OBJECT &&
        o->type != CATALOG_OPT_STRING_LIST) {
        buf_addf(out, o->type == CATALOG_OPT_STRING || o->type == CATALOG_OPT_ENUM ? "'%s'" : "%s",
                 o->def);
        return;
    }
    switch (o->type) {
    case CATALOG_OPT_INT:
    case CATALOG_OPT_NUMBER:
        if (o->values)
            buf_adds(out, o->values[0]);
        else
            buf_addf(out, "%.0f", o->min <= o->max ? ceil(o->min) : 1);
        return;
    case CATALOG_OPT_ENUM:
        buf_addf(out, "'%s'", o->values[0]);
        return;
    case CATALOG_OPT_BOOL:
        buf_adds(out, "true");
        return;
    case CATALOG_OPT_STRING_LIST:
        buf_adds(out, "[a]");
        return;
    case CATALOG_OPT_OBJECT:
    case CATALOG_OPT_JSON:
        buf_adds(out, "{a: 1}");
        return;
    case CATALOG_OPT_STRING:
        break;
    }
    buf_adds(out, "x");
}

/* The JSON of a YAML value, as the validator would hand it to the plan: NULL when JSON cannot
 * hold it. */
static json_t *yaml_value_json(const char *yaml_value)
{
    struct buf b = BUF_INIT;
    struct ydoc d;
    struct ydoc_problem fatal;
    static const struct ydoc_limits lim = {.kind = "a probe"};
    const struct ynode *bad = NULL;
    json_t *j = NULL;

    buf_addf(&b, "v: %s\n", yaml_value);
    if (ydoc_parse(b.data, b.len, &lim, &d, &fatal) == 0 && d.nproblems == 0 && d.root)
        j = ynode_to_json(ynode_get(d.root, "v"), &bad);
    if (j != NULL || d.root != NULL)
        ydoc_release(&d);
    buf_release(&b);
    return j;
}

/* Probes the validator with one value of option o of fault f: it must accept exactly what the
 * catalog's option check (what plan_load and the injectors read through) accepts. Returns 1
 * when they agree. */
static int probe_option(const struct catalog_fault *f, const struct catalog_option *o,
                        const char *value)
{
    struct buf t = BUF_INIT, want = BUF_INIT;
    json_t *j = yaml_value_json(value);
    char msg[200];
    int catalog_ok, validator_ok = 1, agree;

    if (j == NULL) /* not JSON (.inf): the validator refuses it, the catalog never sees it */
        return 1;
    catalog_ok = catalog_option_check(o, j, msg, sizeof(msg)) == 0;
    json_decref(j);
    buf_addf(&t, HEAD "faults:\n  - id: %s\n", f->id);
    if (f->requires_host)
        buf_adds(&t, "    match: {host: api.example.com}\n");
    for (const struct catalog_option *p = f->options; p->name; p++) {
        if (p == o) {
            buf_addf(&t, "    %s: %s\n", p->name, value);
        } else if (p->required) {
            buf_addf(&t, "    %s: ", p->name);
            sample_value(p, &t);
            buf_adds(&t, "\n");
        }
    }
    buf_adds(&t, PROBES ABORT);
    experiment_free(parse(t.data));
    buf_addf(&want, "faults[0].%s", o->name);
    for (size_t i = 0; i < D.n; i++)
        if (!D.v[i].is_warning && strncmp(D.v[i].msg, want.data, want.len) == 0 &&
            (D.v[i].msg[want.len] == ':' || D.v[i].msg[want.len] == '['))
            validator_ok = 0;
    agree = validator_ok == catalog_ok;
    if (!agree) {
        dump_diags();
        fprintf(stderr, "%s.%s = %.60s: validate %s, catalog_option_check %s (%s)\n", f->id,
                o->name, value, validator_ok ? "accepts" : "refuses",
                catalog_ok ? "accepts" : "refuses", catalog_ok ? "" : msg);
    }
    buf_release(&t);
    buf_release(&want);
    return agree;
}

/* One table decides an option's type, range and values: for every option of every fault, the
 * validator and catalog_option_check agree on each probe (its bounds and just past them, its
 * values, other types, spellings of integers YAML reads as numbers, long strings and lists). */
static void test_options_agree_with_catalog(void **state)
{
    static const char *const common[] = {
        "0",       "1",    "-1",    "2.5",    "1e300",     "-1e300", "'5'",
        "true",    "null", "''",    "x",      "[]",        "[a]",    "[a, a]",
        "[a, '']", "[1]",  "[[a]]", "{a: 1}", "0x1f4",     "+500",   "0o764",
        "500",     "529",  "2.0",   "yes",    "[a, .inf]", "'true'", "9223372036854775807",
        NULL};
    struct buf v = BUF_INIT;
    size_t n, disagree = 0;
    const struct catalog_fault *faults = catalog_faults(&n);

    for (size_t i = 0; i < n; i++) {
        for (const struct catalog_option *o = faults[i].options; o->name; o++) {
            for (const char *const *c = common; *c; c++)
                disagree += !probe_option(&faults[i], o, *c);
            for (const char *const *p = o->values; p && *p; p++) {
                buf_reset(&v);
                buf_addf(&v, "%s", *p);
                disagree += !probe_option(&faults[i], o, v.data);
                buf_reset(&v);
                buf_addf(&v, "'%s'", *p);
                disagree += !probe_option(&faults[i], o, v.data);
                buf_reset(&v);
                buf_addf(&v, "%sx", *p);
                disagree += !probe_option(&faults[i], o, v.data);
            }
            if (o->min <= o->max) {
                const double edge[] = {o->min,     o->max,       o->min - 1,
                                       o->max + 1, o->min - 0.5, o->max + 0.5};
                for (size_t k = 0; k < sizeof(edge) / sizeof(edge[0]); k++) {
                    buf_reset(&v);
                    buf_addf(&v, "%.17g", edge[k]);
                    disagree += !probe_option(&faults[i], o, v.data);
                }
            }
            if (o->type == CATALOG_OPT_STRING) {
                for (size_t len = CATALOG_STRING_MAX; len <= CATALOG_STRING_MAX + 1; len++) {
                    buf_reset(&v);
                    buf_addc(&v, '\'');
                    for (size_t k = 0; k < len; k++)
                        buf_addc(&v, 'x');
                    buf_addc(&v, '\'');
                    disagree += !probe_option(&faults[i], o, v.data);
                }
            }
            if (o->type == CATALOG_OPT_STRING_LIST) {
                for (size_t cnt = CATALOG_LIST_MAX; cnt <= CATALOG_LIST_MAX + 1; cnt++) {
                    buf_reset(&v);
                    buf_addc(&v, '[');
                    for (size_t k = 0; k < cnt; k++)
                        buf_addf(&v, "%si%zu", k ? ", " : "", k);
                    buf_addc(&v, ']');
                    disagree += !probe_option(&faults[i], o, v.data);
                }
                for (size_t len = CATALOG_LIST_ITEM_MAX; len <= CATALOG_LIST_ITEM_MAX + 1; len++) {
                    buf_reset(&v);
                    buf_adds(&v, "[a, ");
                    for (size_t k = 0; k < len; k++)
                        buf_addc(&v, 'y');
                    buf_addc(&v, ']');
                    disagree += !probe_option(&faults[i], o, v.data);
                }
            }
        }
    }
    buf_release(&v);
    assert_int_equal(disagree, 0);
}

static void test_checks_across_options(void **state)
{
    bad_fault("  - id: llm.context_trim\n    drop_oldest: 0\n", "drops nothing");
    bad_fault("  - id: mcp.toolset_change\n", "needs remove or redefine");
    bad_fault("  - id: tool.partial_failure\n    pattern: SSS\n", "no call would fail");
    bad_fault("  - id: tool.silent_wrong_data\n    mode: text\n", "needs a non-empty find");
    ok_fault("  - id: tool.silent_wrong_data\n    mode: text\n    find: '42'\n    replace_with: '24'\n");
}

static void test_probes_rules(void **state)
{
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: task_sucess, weight: 1}\n" ABORT,
                 "did you mean 'task_success'");
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: nothing_like_it}\n" ABORT, "unknown probe");
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: task_success, weight: 0}\n" ABORT,
                 "must be a number above 0");
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: task_success, weight: -1}\n" ABORT, "above 0");
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: cost_multiplier_below, weight: 1}\n" ABORT,
                 "cost_multiplier_below needs a value");
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: recovered_within}\n" ABORT,
                 "recovered_within needs a value");
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: recovered_within, value: 2.5}\n" ABORT,
                 "expected an integer");
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: recovered_within, value: 0}\n" ABORT,
                 "from 1 to 1000");
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: cost_multiplier_below, value: 0}\n" ABORT,
                 "above 0");
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: task_success, value: 1}\n" ABORT,
                 "task_success takes no value");
    expect_error(HEAD FAULT_ERR "probes:\n  - task_success\n  - {id: task_success}\n" ABORT,
                 "listed twice");
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: bounded_retries}\n" ABORT,
                 "is an invariant, not a probe");
    expect_error(HEAD FAULT_ERR "probes: []\n" ABORT, "must not be empty");
    expect_error(HEAD FAULT_ERR "probes:\n  - cost_multiplier_below\n" ABORT, "needs a value");

    struct experiment *x = parse(HEAD FAULT_ERR
                                 "probes:\n  - no_policy_hits\n"
                                 "  - {id: cost_multiplier_below, weight: 2.5, value: 3}\n"
                                 "  - {id: recovered_within, value: 4}\n" ABORT);
    assert_non_null(x);
    assert_int_equal(x->nprobes, 3);
    assert_string_equal(x->probes[0].id, "no_policy_hits");
    assert_true(x->probes[0].weight == 1);
    assert_false(x->probes[0].has_value);
    assert_true(x->probes[1].weight == 2.5 && x->probes[1].has_value && x->probes[1].value == 3);
    assert_true(x->probes[2].value == 4);
    assert_int_equal(x->probes[2].mark.line, 9);
    experiment_free(x);
}

static void test_unknown_keys_did_you_mean(void **state)
{
    expect_error_at(VALID "descripton: x\n", 10, 1,
                    "unknown key 'descripton' (did you mean 'description'?)");
    expect_error(VALID "zzzzzz: 1\n", "expected one of: name, description");
    bad_fault("  - id: llm.rate_limit\n    retry_after: 2\n",
              "unknown key 'retry_after' in faults[0] (did you mean 'retry_after_s'?)");
    bad_fault("  - id: tool.error\n    probabilty: 0.5\n", "did you mean 'probability'");
    bad_fault("  - id: tool.error\n    match: {tol: x}\n", "did you mean 'tool'");
    bad_fault("  - id: tool.error\n    when: {path: $.a, equal: 1}\n", "did you mean 'equals'");
    expect_error(HEAD FAULT_ERR "probes:\n  - {id: task_success, wieght: 2}\n" ABORT,
                 "unknown key 'wieght' in probes[0] (did you mean 'weight'?)");
    expect_error(VALID "mcp_servers:\n  fs: {comand: x}\n", "did you mean 'command'");
    expect_error(VALID "world:\n  tols: []\n", "did you mean 'tools'");
    expect_error(VALID "model: {mok: x}\n", "did you mean 'mock'");
    bad_fault("  - id: egress.dns_failure\n    match: {host: x}\n",
              "unknown fault 'egress.dns_failure' (did you mean 'egress.dns_fail'?)");
    bad_fault("  - id: dns_fail\n", "did you mean 'egress.dns_fail'");
    bad_fault("  - id: stale_cache\n", "seed 002's stale_cache is 'tool.stale_data' here");
    bad_fault("  - id: retry_storm\n", "'tool.transient_error'");
}

static void test_all_errors_in_one_pass_sorted(void **state)
{
    const char *t = "name: Bad\n"                          /* 1: name pattern */
                    "agent: a\n"
                    "verify: v\n"
                    "repeat: 99\n"                         /* 4: range */
                    "faults:\n"
                    "  - id: egress.dns_fail\n"            /* 6: requires host */
                    "  - id: nope.nope\n"                  /* 7: unknown fault */
                    "probes:\n"
                    "  - {id: task_success, weight: 0}\n"  /* 9: weight */
                    "abort:\n"
                    "  - destructive_attempt\n"            /* 11: list lacks cost_usd_above */
                    "extra: 1\n";                          /* 12: unknown key */
    struct experiment *x = parse(t);
    assert_null(x);
    assert_int_equal(D.nerrors, 7);
    static const int lines[] = {1, 4, 6, 7, 9, 11, 12};
    for (int i = 0; i < 7; i++)
        assert_int_equal(D.v[i].mark.line, lines[i]);
    struct buf b = BUF_INIT;
    experiment_diags_format(&D, "f.yaml", &b);
    assert_non_null(strstr(b.data, "f.yaml:1:7: error: name: 'Bad' is not lowercase letters"));
    assert_non_null(strstr(b.data, "f.yaml:4:9: error: repeat: must be an integer from 1 to 20, found 99\n"));
    assert_non_null(strstr(b.data, "f.yaml:12:1: error: unknown key 'extra'"));
    buf_release(&b);
}

static void test_warnings_do_not_fail(void **state)
{
    const char *perm = HEAD "faults:\n  - id: permission.deny_or_delay\n";
    char *t = doc("%sprobes:\n  - {id: task_success, weight: 3}\n  - {id: failure_surfaced, weight: 3}\n" ABORT,
                  perm);
    struct experiment *x = parse(t);
    free(t);
    assert_non_null(x);
    assert_int_equal(D.nerrors, 0);
    assert_int_equal(D.n, 1);
    assert_true(D.v[0].is_warning);
    assert_non_null(strstr(D.v[0].msg, "task_success has the highest weight"));
    assert_int_equal(D.v[0].mark.line, 7);
    struct buf b = BUF_INIT;
    experiment_diags_format(&D, "p.yaml", &b);
    assert_non_null(strstr(b.data, "p.yaml:7:5: warning: task_success"));
    buf_release(&b);
    experiment_free(x);

    t = doc("%sprobes:\n  - {id: task_success, weight: 1}\n  - {id: failure_surfaced, weight: 3}\n" ABORT,
            perm);
    x = parse(t);
    free(t);
    assert_non_null(x);
    assert_int_equal(D.n, 0);
    experiment_free(x);

    /* without a permission fault, task_success may weigh most */
    x = parse(HEAD FAULT_ERR "probes:\n  - {id: task_success, weight: 5}\n" ABORT);
    assert_non_null(x);
    assert_int_equal(D.n, 0);
    experiment_free(x);

    x = parse(HEAD "faults:\n  - id: tool.error\n    probability: 0\n" PROBES ABORT);
    assert_non_null(x);
    assert_true(has(1, "never injects"));
    experiment_free(x);
}

static void test_match_and_when(void **state)
{
    ok_fault("  - id: tool.error\n    match: {tool: \"*read_file\", server: fs}\n");
    bad_fault("  - id: tool.error\n    match: {tool: \"read*\"}\n", "a name, or * followed by a suffix");
    bad_fault("  - id: tool.error\n    match: {model: x}\n",
              "match.model: does not apply to tool.error: its injectors (mcp, gate, world) match on tool, server only");
    bad_fault("  - id: llm.rate_limit\n    match: {server: x}\n", "does not apply");
    ok_fault("  - id: llm.rate_limit\n    match: {model: \"*haiku-4\"}\n");
    bad_fault("  - id: tool.error\n    match: [tool]\n", "expected a mapping");

    ok_fault("  - id: tool.error\n    when: {path: $.path, matches: \"^README\"}\n");
    ok_fault("  - id: tool.error\n    when: {path: \"$.items[0].id\", equals: 7}\n");
    ok_fault("  - id: tool.error\n    when: {path: $, contains: rm}\n");
    bad_fault("  - id: tool.error\n    when: {path: $.a}\n", "needs one of equals, contains, matches");
    bad_fault("  - id: tool.error\n    when: {path: $.a, equals: 1, matches: x}\n", "not both");
    bad_fault("  - id: tool.error\n    when: {path: a.b, equals: 1}\n", "is not $ followed by");
    bad_fault("  - id: tool.error\n    when: {path: $.a, matches: \"(\"}\n",
              "not a POSIX extended regular expression");
    /* patterns glibc handles badly are refused by util/regex_safe, at the pattern */
    static const char *const unsafe[] = {
        "((((((a{1,255}){1,255}){1,255}){1,255}){1,255}){1,255})",
        "((((a{1,100}){1,100}){1,100}){1,100})",
        "(a)\\\\1",
    };
    for (size_t i = 0; i < sizeof(unsafe) / sizeof(unsafe[0]); i++) {
        char *u = doc(HEAD "faults:\n  - id: tool.error\n    when: {path: $.a, matches: \"%s\"}\n" PROBES
                           ABORT,
                      unsafe[i]);
        expect_error_at(u, 6, 32, "when.matches: regular expression refused: ");
        free(u);
    }
    bad_fault("  - id: tool.error\n    when: {equals: 1}\n", "missing required key 'path'");
    bad_fault("  - id: llm.rate_limit\n    when: {path: $.a, equals: 1}\n",
              "sees no tool arguments");

    char *t = with_fault("  - id: tool.error\n    match: {tool: x}\n    when: {path: $.n, equals: 7}\n"
                         "    after_calls: 2\n    times: 3\n    probability: 0.25\n");
    struct experiment *x = parse(t);
    free(t);
    assert_non_null(x);
    assert_string_equal(x->faults[0].match.tool, "x");
    assert_null(x->faults[0].match.host);
    assert_int_equal(x->faults[0].after_calls, 2);
    assert_int_equal(x->faults[0].times, 3);
    assert_true(x->faults[0].probability == 0.25);
    assert_string_equal(json_string_value(json_object_get(x->faults[0].when, "path")), "$.n");
    assert_int_equal(json_integer_value(json_object_get(x->faults[0].when, "equals")), 7);
    experiment_free(x);
    bad_fault("  - id: tool.error\n    probability: 1.5\n", "from 0 to 1");
    bad_fault("  - id: tool.error\n    times: 0\n", "from 1 to 1000000");
    bad_fault("  - id: tool.error\n    after_calls: -1\n", "from 0 to 1000000");
}

static void test_top_level_fields(void **state)
{
    struct experiment *x = parse(VALID "seed: 0x10\nsandbox: oci\nsandbox_image: img\n"
                                       "model: {mock: models/m.yaml}\nenv: [A_KEY, B]\n"
                                       "description: d\n");
    assert_non_null(x);
    assert_true(x->has_seed && x->seed == 16);
    assert_string_equal(x->sandbox, "oci");
    assert_string_equal(x->sandbox_image, "img");
    assert_string_equal(json_string_value(json_object_get(x->model, "mock")), "models/m.yaml");
    assert_int_equal(x->nenv, 2);
    assert_string_equal(x->env[1], "B");
    experiment_free(x);
    x = parse(VALID "seed: 42\nmodel: https://llm.example/v1\n");
    assert_non_null(x);
    assert_true(x->seed == 42);
    assert_string_equal(json_string_value(x->model), "https://llm.example/v1");
    experiment_free(x);
    expect_ok(VALID "model: openai\n");
    expect_ok(VALID "seed: '9223372036854775807'\n");
    expect_error(VALID "seed: -1\n", "seed: expected an integer from 0 to 2^63-1");
    expect_error(VALID "seed: '18446744073709551615'\n", "seed:");
    expect_error(VALID "model: antropic\n", "did you mean 'anthropic'");
    expect_error(VALID "model: 3\n", "model: expected anthropic, openai");
    expect_error(VALID "model: ftp://x\n", "model:");
    /* a model URL follows the controller's URL rules (src/util/url.h), quoted redacted */
    expect_error(VALID "model: https://k:hunter2pw@llm.example/v1\n",
                 "model: bad URL 'https://***@llm.example/v1': credentials in the URL");
    expect_error(VALID "model: 'https://llm.example/v1?key=1'\n", "model: bad URL");
    expect_error(VALID "model: 'http://'\n", "model: bad URL 'http://': empty or long host");
    expect_error(VALID "sandbox: docker\n", "'docker' is not one of native, oci");
    expect_error(VALID "env: [1BAD]\n", "is not an environment variable name");
    expect_error(VALID "env: [A, A]\n", "listed twice");
    expect_error(VALID "env: [FAULTLINE_RUN]\n", "set by the runner");
    expect_error(VALID "agent: ''\n", "duplicate key 'agent'");
    expect_error(HEAD "agent: ''\n", "duplicate key");
    expect_error("name: t\nagent: ''\nverify: v\n" FAULT_ERR PROBES ABORT, "agent: must not be empty");
    expect_error("name: t\nagent: a\nverify: true\n" FAULT_ERR PROBES ABORT,
                 "verify: expected a string, found the boolean true (quote it");
    expect_error(HEAD PROBES ABORT, "missing required key 'faults'");
    expect_error(HEAD "faults: []\n" PROBES ABORT, "faults: must not be empty");
    expect_error(HEAD "faults:\n  - tool.error\n" PROBES ABORT, "expected a mapping with id");
    x = parse(VALID "sandbox: native\nsandbox_image: img\n");
    assert_non_null(x);
    assert_true(has(1, "sandbox_image is ignored"));
    experiment_free(x);
}

static void test_mcp_servers(void **state)
{
    struct experiment *x = parse(VALID "mcp_servers:\n  fs:\n    command: mcp-server-filesystem\n"
                                       "    args: [/work]\n");
    assert_non_null(x);
    json_t *fs = json_object_get(x->mcp_servers, "fs");
    assert_string_equal(json_string_value(json_object_get(fs, "command")), "mcp-server-filesystem");
    assert_int_equal(json_array_size(json_object_get(fs, "args")), 1);
    assert_int_equal(json_array_size(json_object_get(fs, "env")), 0);
    experiment_free(x);
    expect_error(VALID "mcp_servers:\n  fs: {args: [a]}\n", "missing required key 'command'");
    expect_error(VALID "mcp_servers:\n  \"a b\": {command: x}\n", "server name 'a b'");
    expect_error(VALID "mcp_servers: [fs]\n", "expected a mapping");
    x = parse(HEAD "faults:\n  - id: tool.error\n    match: {server: other}\n" PROBES ABORT
                   "mcp_servers:\n  fs: {command: x}\n");
    assert_non_null(x);
    assert_true(has(1, "matches none of this experiment's servers"));
    experiment_free(x);
}

#define WORLD                                                                                      \
    "world:\n"                                                                                     \
    "  name: payments\n"                                                                           \
    "  tools:\n"                                                                                   \
    "    - name: create_refund\n"                                                              \
    "      input_schema: {type: object}\n"                                                     \
    "      effect: {collection: refunds, business_key: charge_id, dedupe_key: key}\n"          \
    "    - name: get_balance\n"                                                                \
    "  invariants:\n"                                                                          \
    "    - {id: unique, collection: refunds}\n"                                                \
    "    - {id: count, collection: refunds, min: 1, max: 1, when_approved: true}\n"            \
    "    - {id: approval}\n"

static void test_world(void **state)
{
    struct experiment *x = parse(HEAD "faults:\n  - id: effect.duplicate_delivery\n"
                                      "    match: {tool: create_refund}\n" PROBES ABORT WORLD);
    if (x == NULL)
        dump_diags();
    assert_non_null(x);
    assert_string_equal(json_string_value(json_object_get(x->world, "name")), "payments");
    assert_true(json_is_true(json_object_get(x->world, "approved")));
    json_t *inv = json_array_get(json_object_get(x->world, "invariants"), 0);
    assert_string_equal(json_string_value(json_object_get(inv, "key")), "charge_id");
    assert_int_equal(json_array_size(json_object_get(x->world, "tools")), 2);
    experiment_free(x);

    expect_error(HEAD "faults:\n  - id: effect.duplicate_delivery\n    match: {tool: create_refund}\n"
                 PROBES ABORT, "injected by the world, and this experiment has no world");
    expect_error(HEAD "faults:\n  - id: effect.timeout_after_effect\n" PROBES ABORT WORLD,
                 "requires match.tool");
    expect_error(HEAD "faults:\n  - id: effect.timeout_after_effect\n    match: {tool: nope}\n"
                 PROBES ABORT WORLD, "matches no tool of the world");
    expect_error(VALID "world:\n  tools:\n    - name: a\n  invariants:\n    - {id: uniq, collection: c}\n",
                 "did you mean 'unique'");
    expect_error(VALID "world:\n  tools:\n    - name: a\n  invariants:\n    - {id: bounded_retries}\n",
                 "a world declares only unique, approval and count");
    expect_error(VALID "world:\n  tools:\n    - name: a\n      effect: {collection: c}\n"
                       "  invariants:\n    - {id: count, collection: d, min: 1}\n",
                 "no tool of the world writes collection 'd'");
    expect_error(VALID "world:\n  tools:\n    - name: a\n      effect: {collection: c}\n"
                       "  invariants:\n    - {id: unique, collection: c}\n",
                 "unique needs key");
    expect_error(VALID "world:\n  tools:\n    - name: a\n      effect: {collection: c}\n"
                       "  invariants:\n    - {id: count, collection: c, min: 3, max: 1}\n",
                 "min 3 is above max 1");
    expect_error(VALID "world:\n  tools:\n    - name: a\n      effect: {collection: c}\n"
                       "  invariants:\n    - {id: count, collection: c}\n",
                 "count needs min or max");
    expect_error(VALID "world:\n  tools:\n    - name: a\n      effect: {collection: c}\n"
                       "  invariants:\n    - {id: approval, min: 1}\n",
                 "approval does not take 'min'");
    expect_error(VALID "world:\n  tools:\n    - name: a\n    - name: a\n", "defined twice");
    expect_error(VALID "world:\n  tools: []\n", "must not be empty");
    expect_error(VALID "world:\n  tools:\n    - name: a\n      input_schema: 3\n",
                 "input_schema: expected a mapping");
    expect_error(VALID "world:\n  tools:\n    - name: a\nmcp_servers:\n  world: {command: x}\n",
                 "also a key of mcp_servers");
}

/* egress.host_ports: 1..32 distinct ports from 1 to 65535, none the sandbox's own (53, 80,
 * 443), each error at its item; the normal form (and so the hash) names them only when set. */
static void test_egress_host_ports(void **state)
{
    struct experiment *x = parse(VALID "egress:\n  host_ports: [5432, 3000]\n");
    assert_non_null(x);
    assert_int_equal(x->negress_host_ports, 2);
    assert_int_equal(x->egress_host_ports[0], 5432);
    assert_int_equal(x->egress_host_ports[1], 3000);
    assert_false(x->has_egress_allow);
    json_t *j = experiment_to_json(x);
    json_t *eg = json_object_get(j, "egress");
    assert_int_equal(json_array_size(json_object_get(eg, "host_ports")), 2);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(eg, "host_ports"), 1)),
                     3000);
    assert_null(json_object_get(eg, "allow"));
    json_decref(j);
    experiment_free(x);
    x = parse(VALID "egress:\n  allow: [a.test]\n  host_ports: [1, 65535]\n");
    assert_non_null(x);
    assert_int_equal(x->negress_allow, 1);
    assert_int_equal(x->negress_host_ports, 2);
    experiment_free(x);
    x = parse(VALID);
    assert_non_null(x);
    assert_int_equal(x->negress_host_ports, 0);
    j = experiment_to_json(x);
    assert_null(json_object_get(j, "egress"));
    json_decref(j);
    experiment_free(x);

    expect_error_at(VALID "egress:\n  host_ports: [8080, 0]\n", 11, 22,
                    "egress.host_ports[1]: must be a port from 1 to 65535, found 0");
    expect_error_at(VALID "egress:\n  host_ports: [70000]\n", 11, 16,
                    "egress.host_ports[0]: must be a port from 1 to 65535, found 70000");
    expect_error_at(VALID "egress:\n  host_ports: [8080, 8080]\n", 11, 22,
                    "egress.host_ports[1]: port 8080 is listed twice");
    expect_error_at(VALID "egress:\n  host_ports: [443]\n", 11, 16,
                    "egress.host_ports[0]: port 443 is the sandbox's own");
    expect_error(VALID "egress:\n  host_ports: [53]\n", "port 53 is the sandbox's own");
    expect_error(VALID "egress:\n  host_ports: [80]\n", "port 80 is the sandbox's own");
    expect_error_at(VALID "egress:\n  host_ports: ['5432']\n", 11, 16,
                    "egress.host_ports[0]: expected an integer, found the string");
    expect_error_at(VALID "egress:\n  host_ports: []\n", 11, 15,
                    "egress.host_ports: must have 1 to 32 items, found 0");
    expect_error_at(VALID "egress:\n  host_ports: 5432\n", 11, 15,
                    "egress.host_ports: expected a list, found the number 5432");
    struct buf b = BUF_INIT;
    buf_adds(&b, VALID "egress:\n  host_ports: [");
    for (int i = 0; i < 33; i++)
        buf_addf(&b, "%s%d", i ? ", " : "", 10000 + i);
    buf_adds(&b, "]\n");
    expect_error_at(b.data, 11, 15, "egress.host_ports: must have 1 to 32 items, found 33");
    buf_release(&b);
    expect_error(VALID "egress:\n  host_port: [5432]\n", "did you mean 'host_ports'");
}

static void test_hash_is_of_the_normal_form(void **state)
{
    struct experiment *a = parse(VALID);
    assert_non_null(a);
    /* other formatting, key order, comments and spelled-out defaults: the same experiment */
    struct experiment *b = parse("# comment\n"
                                 "abort: [{cost_usd_above: 1.0}]\n"
                                 "probes: [{weight: 1, id: task_success}]\n"
                                 "verify: \"true\"\n"
                                 "faults:\n"
                                 "  - {message: tool failed (injected fault), id: tool.error,\n"
                                 "     after_calls: 0, probability: 1}\n"
                                 "repeat: 1\n"
                                 "agent: run-agent\n"
                                 "name: t\n");
    assert_non_null(b);
    assert_string_equal(a->hash, b->hash);
    struct experiment *c = parse(VALID "repeat: 2\n");
    assert_non_null(c);
    assert_string_not_equal(a->hash, c->hash);

    json_t *j = experiment_to_json(a);
    char *s = json_dumps(j, EXPERIMENT_JSON_FLAGS);
    char h[65];
    hash_sha256_hex(s, strlen(s), h);
    assert_string_equal(h, a->hash);
    assert_null(json_object_get(j, "path"));
    assert_null(json_object_get(j, "hash"));
    json_t *f = json_array_get(json_object_get(j, "faults"), 0);
    assert_string_equal(json_string_value(json_object_get(f, "id")), "tool.error");
    assert_true(json_is_null(json_object_get(f, "times")));
    assert_string_equal(json_string_value(json_object_get(f, "safety")), "fail-safe");
    free(s);
    json_decref(j);
    experiment_free(a);
    experiment_free(b);
    experiment_free(c);
}

static void test_not_a_mapping(void **state)
{
    expect_error_at("", 1, 1, "empty file");
    expect_error_at("# only a comment\n", 1, 1, "empty file");
    expect_error_at("- a\n- b\n", 1, 1, "the file is a list");
    expect_error_at("hello\n", 1, 1, "the file is the string 'hello'");
    expect_error_at("42\n", 1, 1, "the file is the number 42");
    expect_error("~\n", "the file is null");
}

static void test_yaml_problems(void **state)
{
    expect_error_at("name: t\nfaults:\n\t- id: a\n", 3, 1, "a tab character");
    expect_error_at(VALID "name: u\n", 10, 1, "duplicate key 'name' (first at line 1, column 1)");
    expect_error_at("a: 1\n---\nb: 2\n", 2, 1, "a second YAML document");
    expect_error_at("name: \"a\\0b\"\n", 1, 7, "NUL");
    expect_error("name: !!python/object x\n", "unsupported tag");
    expect_error("? [a]\n: b\n", "a mapping key must be a scalar");
    expect_error("a: *nope\n", "refers to no anchor");
    expect_error("a: &x [1, *x]\n", "recursive alias");
    expect_error("a: 99999999999999999999999\n", "out of range");
    expect_error("name: \"unterminated\n", "yaml:");
    expect_error("a: [1, 2\n", "yaml:");
    /* a UTF-8 BOM is fine */
    char *t = doc("\xef\xbb\xbf%s", VALID);
    expect_ok(t);
    free(t);
}

static void test_binary_input(void **state)
{
    unsigned char bin[4096];
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    struct err e = {0};
    for (size_t i = 0; i < sizeof(bin); i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        bin[i] = (unsigned char)(s >> 56);
    }
    experiment_diags_release(&D);
    assert_null(experiment_parse("b", (const char *)bin, sizeof(bin), &D, &e));
    assert_true(D.nerrors >= 1);
    assert_true(has(0, "not a UTF-8 text file") || has(0, "yaml:"));
    /* embedded NUL bytes */
    experiment_diags_release(&D);
    assert_null(experiment_parse("b", "name: a\0b\n", 10, &D, &e));
    assert_true(has(0, "not a UTF-8 text file"));
}

static void test_limits(void **state)
{
    /* alias bomb: refused fast with its own message */
    const char *bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
                       "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                       "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                       "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                       "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                       "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                       "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
                       "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
                       "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
    expect_error(bomb, "an alias bomb?");
    /* small aliases are fine */
    expect_ok(HEAD "faults:\n  - id: tool.error\n    match: &m {tool: x}\n"
                   "  - id: tool.latency\n    match: *m\n" PROBES ABORT);
    /* deep nesting */
    struct buf b = BUF_INIT;
    for (int i = 0; i < 200000; i++)
        buf_addc(&b, '[');
    expect_error(b.data, "nesting deeper than 64 levels");
    buf_reset(&b);
    buf_adds(&b, "a:\n");
    for (int i = 1; i < 100; i++)
        buf_addf(&b, "%*sb%d:\n", i * 2, "", i);
    expect_error(b.data, "nesting deeper than 64 levels");
    /* too many nodes */
    buf_reset(&b);
    for (int i = 0; i < 30000; i++)
        buf_addf(&b, "k%d: v\n", i);
    expect_error(b.data, "more than 50000 YAML nodes");
    /* over the size limit: one clear error, nothing parsed */
    buf_reset(&b);
    for (size_t i = 0; i < EXPERIMENT_FILE_MAX + 1; i++)
        buf_addc(&b, 'a');
    expect_error_at(b.data, 1, 1, "over the limit of 1048576");
    buf_release(&b);
}

static void test_many_errors_are_capped(void **state)
{
    struct buf b = BUF_INIT;
    buf_adds(&b, VALID);
    for (int i = 0; i < 300; i++)
        buf_addf(&b, "unknown_%d: 1\n", i);
    assert_null(parse(b.data));
    assert_int_equal(D.n, EXPERIMENT_DIAGS_MAX);
    assert_int_equal(D.nerrors, 300);
    assert_int_equal(D.dropped, 100);
    struct buf out = BUF_INIT;
    experiment_diags_format(&D, "m.yaml", &out);
    assert_non_null(strstr(out.data, "m.yaml: 100 more problems not shown\n"));
    buf_release(&out);
    buf_release(&b);
}

static void test_load_files(void **state)
{
    char dir[] = "/tmp/faultline-test-experiment.XXXXXX";
    struct buf p = BUF_INIT, big = BUF_INIT;
    struct err e = {0};
    struct experiment *x;

    assert_non_null(mkdtemp(dir));
    buf_addf(&p, "%s/ok.yaml", dir);
    assert_int_equal(fs_write_file(p.data, VALID, strlen(VALID), &e), 0);
    experiment_diags_release(&D);
    x = experiment_load(p.data, &D, &e);
    assert_non_null(x);
    assert_string_equal(x->path, p.data);
    experiment_free(x);
    unlink(p.data);

    experiment_diags_release(&D);
    err_clear(&e);
    x = experiment_load(p.data, &D, &e);
    assert_null(x);
    assert_int_equal(e.code, ERR_IO);
    assert_int_equal(D.n, 0);

    buf_reset(&p);
    buf_addf(&p, "%s/big.yaml", dir);
    for (int i = 0; i < 10 * 1024 * 1024 / 64; i++)
        buf_adds(&big, "# padding padding padding padding padding padding padding paddi\n");
    assert_int_equal(fs_write_file(p.data, big.data, big.len, &e), 0);
    experiment_diags_release(&D);
    err_clear(&e);
    x = experiment_load(p.data, &D, &e);
    assert_null(x);
    assert_int_equal(e.code, ERR_INVALID);
    assert_int_equal(D.nerrors, 1);
    assert_true(has(0, "over the limit"));
    unlink(p.data);

    experiment_diags_release(&D);
    err_clear(&e);
    x = experiment_load(dir, &D, &e);
    assert_null(x);
    assert_int_equal(e.code, ERR_IO);
    rmdir(dir);
    buf_release(&p);
    buf_release(&big);
}

/* experiment_load_as_json: the YAML as JSON without validation; non-fatal problems keep the
 * document (counted), fatal ones, non-JSON numbers and over-limit files give NULL with a
 * diagnostic, an unreadable file ERR_IO without one. */
static void test_load_as_json(void **state)
{
    char dir[] = "/tmp/faultline-test-asjson.XXXXXX";
    struct buf p = BUF_INIT, big = BUF_INIT;
    struct err e = {0};
    json_t *j;
    char *s;

    assert_non_null(mkdtemp(dir));
    buf_addf(&p, "%s/x.yaml", dir);
#define AS_JSON(text)                                                                              \
    (experiment_diags_release(&D), err_clear(&e),                                                \
     assert_int_equal(fs_write_file(p.data, text, strlen(text), &e), 0),                          \
     experiment_load_as_json(p.data, &D, &e))
    j = AS_JSON("name: not validated\nrepeat: 0\nx: [1, 2.5, true, null]\n");
    assert_non_null(j);
    s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"name\":\"not validated\",\"repeat\":0,\"x\":[1,2.5,true,null]}");
    free(s);
    json_decref(j);
    assert_int_equal(D.n, 0);

    j = AS_JSON("");
    assert_true(json_is_null(j));
    json_decref(j);

    j = AS_JSON("a: 1\na: 2\n"); /* a duplicate key: a problem, the document still shown */
    assert_non_null(j);
    assert_int_equal(D.nerrors, 1);
    assert_int_equal(D.v[0].mark.line, 2);
    json_decref(j);

    j = AS_JSON("a: [1, 2\n");
    assert_null(j);
    assert_int_equal(e.code, ERR_INVALID);
    assert_true(D.nerrors >= 1);

    j = AS_JSON("a:\n  b: .inf\n");
    assert_null(j);
    assert_int_equal(e.code, ERR_INVALID);
    assert_true(has(0, "not representable as JSON"));
    assert_int_equal(D.v[D.n - 1].mark.line, 2);

    for (int i = 0; i < 2 * 1024 * 1024 / 64; i++)
        buf_adds(&big, "# padding padding padding padding padding padding padding paddi\n");
    j = AS_JSON(big.data);
    assert_null(j);
    assert_int_equal(e.code, ERR_INVALID);
    assert_true(has(0, "over the limit of 1048576 bytes"));
#undef AS_JSON

    unlink(p.data);
    experiment_diags_release(&D);
    err_clear(&e);
    assert_null(experiment_load_as_json(p.data, &D, &e));
    assert_int_equal(e.code, ERR_IO);
    assert_int_equal(D.n, 0);
    rmdir(dir);
    buf_release(&p);
    buf_release(&big);
}

static void test_ydoc_typing(void **state)
{
    static const char *const text = "a: ~\nb: true\nc: 0x1f\nd: 0o17\ne: -3\nf: 1.5e3\ng: '5'\n"
                                    "h: !!str 7\ni: yes\nj: .5\nk: !!int '12'\nl: |\n  x\n";
    struct ydoc d;
    struct ydoc_problem fatal;
    assert_int_equal(ydoc_parse(text, strlen(text), NULL, &d, &fatal), 0);
    assert_int_equal(ynode_get(d.root, "a")->type, YNODE_NULL);
    assert_int_equal(ynode_get(d.root, "b")->type, YNODE_BOOL);
    assert_int_equal(ynode_get(d.root, "c")->i, 31);
    assert_int_equal(ynode_get(d.root, "d")->i, 15);
    assert_int_equal(ynode_get(d.root, "e")->i, -3);
    assert_true(ynode_get(d.root, "f")->type == YNODE_REAL && ynode_get(d.root, "f")->d == 1500);
    assert_int_equal(ynode_get(d.root, "g")->type, YNODE_STR);
    assert_int_equal(ynode_get(d.root, "h")->type, YNODE_STR);
    assert_int_equal(ynode_get(d.root, "i")->type, YNODE_STR); /* YAML 1.2: no "yes" booleans */
    assert_true(ynode_get(d.root, "j")->d == 0.5);
    assert_int_equal(ynode_get(d.root, "k")->i, 12);
    assert_string_equal(ynode_get(d.root, "l")->str, "x\n");
    assert_int_equal(ynode_key(d.root, "c")->line, 3);
    const struct ynode *bad = NULL;
    json_t *j = ynode_to_json(d.root, &bad);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "c")), 31);
    json_decref(j);
    ydoc_release(&d);
}

static int teardown(void **state)
{
    experiment_diags_release(&D);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_minimal_valid_with_defaults, teardown),
        cmocka_unit_test_teardown(test_name_pattern, teardown),
        cmocka_unit_test_teardown(test_repeat_range, teardown),
        cmocka_unit_test_teardown(test_cost_usd_above_mandatory, teardown),
        cmocka_unit_test_teardown(test_egress_requires_host, teardown),
        cmocka_unit_test_teardown(test_option_types_and_ranges, teardown),
        cmocka_unit_test_teardown(test_checks_across_options, teardown),
        cmocka_unit_test_teardown(test_probes_rules, teardown),
        cmocka_unit_test_teardown(test_unknown_keys_did_you_mean, teardown),
        cmocka_unit_test_teardown(test_all_errors_in_one_pass_sorted, teardown),
        cmocka_unit_test_teardown(test_warnings_do_not_fail, teardown),
        cmocka_unit_test_teardown(test_match_and_when, teardown),
        cmocka_unit_test_teardown(test_top_level_fields, teardown),
        cmocka_unit_test_teardown(test_mcp_servers, teardown),
        cmocka_unit_test_teardown(test_world, teardown),
        cmocka_unit_test_teardown(test_hash_is_of_the_normal_form, teardown),
        cmocka_unit_test_teardown(test_not_a_mapping, teardown),
        cmocka_unit_test_teardown(test_yaml_problems, teardown),
        cmocka_unit_test_teardown(test_binary_input, teardown),
        cmocka_unit_test_teardown(test_limits, teardown),
        cmocka_unit_test_teardown(test_many_errors_are_capped, teardown),
        cmocka_unit_test_teardown(test_load_files, teardown),
        cmocka_unit_test_teardown(test_load_as_json, teardown),
        cmocka_unit_test_teardown(test_options_agree_with_catalog, teardown),
        cmocka_unit_test_teardown(test_ydoc_typing, teardown),
        cmocka_unit_test_teardown(test_egress_host_ports, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
