/* Unit tests for src/experiment catalog, format tables, schema and docs generators: the tables'
 * internal consistency and the contract other components read (ids, injectors, options). */
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "experiment/catalog.h"
#include "experiment/docgen.h"
#include "experiment/format.h"
#include "experiment/schema.h"
#include "util/buf.h"
#include "util/fs.h"
#include "helpers.h"
#include "util/banned.h"

/* Where the examples are: docgen's. Next to a unit test binary (build/MODE/tests/) there are
 * none: the JSON says null and an empty list, the text where it looked. */
static void test_examples_not_found(void **state)
{
    struct buf dir = BUF_INIT, text = BUF_INIT;
    json_t *j = json_object();

    assert_int_equal(docgen_examples_dir(&dir), ERR_NOTFOUND);
    assert_int_equal(dir.len, 0);
    docgen_examples_json(j);
    ut_assert_json(j, "{\"examples_dir\": null, \"examples\": []}");
    docgen_examples_text(&text);
    assert_non_null(strstr(text.data, "EXAMPLES: not found next to this faultline binary"));
    json_decref(j);
    buf_release(&dir);
    buf_release(&text);
}

static void test_fault_ids_unique_and_named_by_family(void **state)
{
    static const char *const families[] = {"llm", "egress", "tool", "mcp", "inject", "permission",
                                           "effect", NULL};
    size_t n;
    const struct catalog_fault *f = catalog_faults(&n);
    regex_t re;
    assert_int_equal(regcomp(&re, "^[a-z]+\\.[a-z0-9_]+$", REG_EXTENDED | REG_NOSUB), 0);
    assert_true(n >= 32);
    for (size_t i = 0; i < n; i++) {
        int fam = 0;
        assert_int_equal(regexec(&re, f[i].id, 0, NULL, 0), 0);
        assert_int_equal(strncmp(f[i].id, f[i].family, strlen(f[i].family)), 0);
        assert_int_equal(f[i].id[strlen(f[i].family)], '.');
        for (const char *const *p = families; *p; p++)
            fam |= strcmp(*p, f[i].family) == 0;
        assert_true(fam);
        assert_true(f[i].injectors != 0 && (f[i].injectors & ~CATALOG_INJ_ALL) == 0);
        assert_non_null(f[i].effect);
        assert_non_null(f[i].origin);
        assert_non_null(f[i].options);
        assert_ptr_equal(catalog_fault_find(f[i].id), &f[i]);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(f[i].id, f[j].id);
    }
    regfree(&re);
    assert_null(catalog_fault_find("llm.nope"));
    assert_null(catalog_fault_find(NULL));
}

/* The injectors of every row are a contract (src/plan and each component read them). */
static void test_injectors_exact(void **state)
{
    static const struct {
        const char *id;
        unsigned inj;
    } want[] = {
        {"llm.rate_limit", CATALOG_INJ_CONTROLLER_MODEL},
        {"llm.upstream_5xx", CATALOG_INJ_CONTROLLER_MODEL},
        {"llm.context_trim", CATALOG_INJ_CONTROLLER_MODEL},
        {"llm.model_degrade", CATALOG_INJ_CONTROLLER_MODEL},
        {"llm.latency", CATALOG_INJ_CONTROLLER_MODEL},
        {"egress.dns_fail", CATALOG_INJ_CONTROLLER_EGRESS},
        {"egress.credential_401", CATALOG_INJ_CONTROLLER_EGRESS},
        {"tool.error", CATALOG_INJ_GATE | CATALOG_INJ_MCP | CATALOG_INJ_WORLD},
        {"tool.latency", CATALOG_INJ_MCP},
        {"tool.timeout", CATALOG_INJ_MCP | CATALOG_INJ_WORLD},
        {"tool.timeout_after_commit", CATALOG_INJ_MCP},
        {"tool.omission", CATALOG_INJ_MCP},
        {"tool.silent_wrong_data", CATALOG_INJ_MCP | CATALOG_INJ_WORLD},
        {"tool.partial_failure", CATALOG_INJ_MCP},
        {"tool.transient_error", CATALOG_INJ_MCP},
        {"tool.rate_limit", CATALOG_INJ_MCP},
        {"tool.malformed_response", CATALOG_INJ_MCP},
        {"tool.auth_expiry", CATALOG_INJ_MCP},
        {"tool.wrong_error_channel", CATALOG_INJ_MCP},
        {"tool.stale_data", CATALOG_INJ_MCP | CATALOG_INJ_WORLD},
        {"tool.duplicate_delivery", CATALOG_INJ_MCP},
        {"tool.concurrent_duplicate", CATALOG_INJ_MCP},
        {"mcp.toolset_change", CATALOG_INJ_MCP},
        {"mcp.schema_drift", CATALOG_INJ_MCP},
        {"mcp.schema_violating_output", CATALOG_INJ_MCP},
        {"mcp.annotation_lie", CATALOG_INJ_MCP},
        {"mcp.capability_downgrade", CATALOG_INJ_MCP},
        {"permission.deny_or_delay", CATALOG_INJ_GATE},
        {"inject.tool_result", CATALOG_INJ_MCP | CATALOG_INJ_WORLD},
        {"effect.timeout_before_effect", CATALOG_INJ_WORLD},
        {"effect.timeout_after_effect", CATALOG_INJ_WORLD},
        {"effect.duplicate_delivery", CATALOG_INJ_WORLD},
    };
    size_t n;
    catalog_faults(&n);
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++) {
        const struct catalog_fault *f = catalog_fault_find(want[i].id);
        assert_non_null(f);
        assert_int_equal(f->injectors, want[i].inj);
    }
}

static void test_options_consistent(void **state)
{
    const struct format_section *fs = format_section_find("fault");
    size_t n;
    const struct catalog_fault *f = catalog_faults(&n);
    assert_non_null(fs);
    for (size_t i = 0; i < n; i++) {
        for (const struct catalog_option *o = f[i].options; o->name; o++) {
            /* options stand beside id, match, ...: a name clash would be ambiguous */
            assert_null(format_key_find(fs, o->name));
            assert_non_null(o->doc);
            assert_ptr_equal(catalog_option_find(&f[i], o->name), o);
            for (const struct catalog_option *p = f[i].options; p < o; p++)
                assert_string_not_equal(p->name, o->name);
            if (o->required)
                assert_null(o->def);
            if (o->type == CATALOG_OPT_ENUM)
                assert_non_null(o->values);
            json_t *d = catalog_option_default(o);
            if (o->def == NULL) {
                assert_null(d);
                continue;
            }
            assert_non_null(d);
            switch (o->type) {
            case CATALOG_OPT_INT:
                assert_true(json_is_integer(d));
                if (o->min <= o->max) {
                    assert_true(json_integer_value(d) >= o->min);
                    assert_true(json_integer_value(d) <= o->max);
                }
                if (o->values) {
                    int in = 0;
                    for (const char *const *v = o->values; *v; v++)
                        in |= strcmp(*v, o->def) == 0;
                    assert_true(in);
                }
                break;
            case CATALOG_OPT_NUMBER:
                assert_true(json_is_number(d));
                break;
            case CATALOG_OPT_BOOL:
                assert_true(json_is_boolean(d));
                assert_true(!strcmp(o->def, "true") || !strcmp(o->def, "false"));
                break;
            case CATALOG_OPT_ENUM: {
                int in = 0;
                for (const char *const *v = o->values; *v; v++)
                    in |= strcmp(*v, o->def) == 0;
                assert_true(in);
                break;
            }
            case CATALOG_OPT_STRING:
                assert_true(json_is_string(d));
                break;
            case CATALOG_OPT_OBJECT:
                assert_true(json_is_object(d));
                break;
            default:
                break;
            }
            json_decref(d);
        }
    }
}

static const struct catalog_option *opt(const char *id, const char *name)
{
    const struct catalog_fault *f = catalog_fault_find(id);
    assert_non_null(f);
    const struct catalog_option *o = catalog_option_find(f, name);
    assert_non_null(o);
    return o;
}

/* Seed 000's catalog with the options it names. */
static void test_seed_000_faults(void **state)
{
    assert_string_equal(opt("llm.rate_limit", "retry_after_s")->def, "5");
    const struct catalog_option *st = opt("llm.upstream_5xx", "status");
    const char *const want[] = {"500", "502", "503", "529"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(st->values[i], want[i]);
    assert_null(st->values[4]);
    assert_int_equal(opt("llm.upstream_5xx", "stream_cut_after_chunks")->type, CATALOG_OPT_INT);
    opt("llm.context_trim", "drop_oldest");
    assert_int_equal(opt("llm.context_trim", "drop_system")->type, CATALOG_OPT_BOOL);
    assert_true(opt("llm.model_degrade", "to_model")->required);
    opt("tool.error", "message");
    opt("tool.stale_data", "result");
    assert_int_equal(opt("mcp.toolset_change", "remove")->type, CATALOG_OPT_STRING_LIST);
    assert_int_equal(opt("mcp.toolset_change", "redefine")->type, CATALOG_OPT_OBJECT);
    const struct catalog_option *m = opt("permission.deny_or_delay", "mode");
    assert_string_equal(m->values[0], "deny");
    assert_string_equal(m->values[1], "delay");
    assert_string_equal(m->values[2], "hold_then_deny");
    const struct catalog_option *d = opt("permission.deny_or_delay", "delay_s");
    assert_true(d->min == 0 && d->max == 600);
    assert_string_equal(d->def, "0");
    assert_true(opt("inject.tool_result", "payload")->required);
    assert_true(catalog_fault_find("egress.dns_fail")->requires_host);
    assert_true(catalog_fault_find("egress.credential_401")->requires_host);
    assert_int_equal(catalog_fault_find("llm.context_trim")->safety, CATALOG_MUTATING);
    assert_int_equal(catalog_fault_find("tool.error")->safety, CATALOG_FAIL_SAFE);
    assert_int_equal(catalog_fault_find("inject.tool_result")->safety, CATALOG_MUTATING);
    opt("llm.latency", "delay_ms");
    opt("tool.latency", "delay_ms");
    assert_non_null(catalog_fault_find("tool.concurrent_duplicate"));
}

/* Seed 002's 16 kinds each map to one row; the ones that are seed 000's faults map to them. */
static void test_seed_002_mapping(void **state)
{
    static const char *const kinds[] = {
        "timeout", "timeout_after_commit", "omission", "silent_wrong_data",
        "partial_failure_mid_plan", "tool_result_injection", "retry_storm", "rate_limit_429",
        "malformed_response", "schema_drift", "auth_expiry_mid_run", "schema_violating_output",
        "annotation_lie", "wrong_error_channel", "capability_downgrade", "stale_cache"};
    size_t n, count = 0;
    const struct catalog_seed_kind *k = catalog_seed_kinds(&n);
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const struct catalog_seed_kind *s = catalog_seed_kind_find(kinds[i]);
        assert_non_null(s);
        assert_string_equal(s->seed, "002");
        const struct catalog_fault *f = catalog_fault_find(s->id);
        assert_non_null(f);
        assert_non_null(strstr(f->origin, kinds[i]));
        assert_true(!strcmp(f->family, "tool") || !strcmp(f->family, "mcp") ||
                    !strcmp(f->family, "inject"));
    }
    assert_string_equal(catalog_seed_kind_find("stale_cache")->id, "tool.stale_data");
    assert_string_equal(catalog_seed_kind_find("tool_result_injection")->id,
                        "inject.tool_result");
    assert_string_equal(catalog_seed_kind_find("rate_limit_429")->id, "tool.rate_limit");
    for (size_t i = 0; i < n; i++) {
        assert_non_null(catalog_fault_find(k[i].id));
        count += strcmp(k[i].seed, "002") == 0;
    }
    assert_int_equal(count, 16);
    /* no twins: the shared faults are single rows */
    size_t nf;
    const struct catalog_fault *f = catalog_faults(&nf);
    for (size_t i = 0; i < nf; i++) {
        assert_null(strstr(f[i].id, "stale_cache"));
        assert_null(strstr(f[i].id, "result_injection"));
    }
}

static void test_seed_004_faults(void **state)
{
    static const char *const ids[] = {"effect.timeout_before_effect", "effect.timeout_after_effect",
                                      "effect.duplicate_delivery"};
    for (int i = 0; i < 3; i++) {
        const struct catalog_fault *f = catalog_fault_find(ids[i]);
        assert_non_null(f);
        assert_int_equal(f->injectors, CATALOG_INJ_WORLD);
        assert_true(f->requires_tool);
        assert_non_null(strstr(f->origin, "004"));
    }
    assert_int_equal(catalog_fault_find("effect.timeout_before_effect")->safety, CATALOG_FAIL_SAFE);
    assert_int_equal(catalog_fault_find("effect.timeout_after_effect")->safety, CATALOG_MUTATING);
}

static void test_injector_names_and_match_keys(void **state)
{
    static const char *const names[] = {"controller-model", "controller-egress", "mcp", "gate",
                                        "world"};
    unsigned bit = 1;
    for (int i = 0; i < 5; i++, bit <<= 1) {
        assert_string_equal(catalog_injector_name(bit), names[i]);
        assert_int_equal(catalog_injector_from_name(names[i]), bit);
    }
    assert_null(catalog_injector_name(3));
    assert_int_equal(catalog_injector_from_name("proxy"), 0);
    assert_int_equal(catalog_match_keys(CATALOG_INJ_CONTROLLER_MODEL), CATALOG_MATCH_MODEL);
    assert_int_equal(catalog_match_keys(CATALOG_INJ_CONTROLLER_EGRESS), CATALOG_MATCH_HOST);
    assert_int_equal(catalog_match_keys(CATALOG_INJ_MCP), CATALOG_MATCH_TOOL | CATALOG_MATCH_SERVER);
    assert_int_equal(catalog_match_keys(CATALOG_INJ_GATE), CATALOG_MATCH_TOOL);
    assert_int_equal(catalog_match_keys(CATALOG_INJ_WORLD), CATALOG_MATCH_TOOL);
    assert_false(catalog_fault_sees_args(catalog_fault_find("llm.rate_limit")));
    assert_false(catalog_fault_sees_args(catalog_fault_find("egress.dns_fail")));
    assert_true(catalog_fault_sees_args(catalog_fault_find("tool.error")));
    assert_true(catalog_fault_sees_args(catalog_fault_find("effect.duplicate_delivery")));
}

static void test_probes_invariants_aborts(void **state)
{
    size_t n;
    const struct catalog_probe *p = catalog_probes(&n);
    assert_int_equal(n, 6);
    assert_string_equal(p[0].id, "task_success");
    const struct catalog_probe *c = catalog_probe_find("cost_multiplier_below");
    assert_true(c->takes_value && c->value_type == CATALOG_OPT_NUMBER && c->value_min_exclusive);
    assert_string_equal(c->not_evaluated_when, "the baseline cost is 0");
    const struct catalog_probe *r = catalog_probe_find("recovered_within");
    assert_true(r->takes_value && r->value_type == CATALOG_OPT_INT && r->value_min == 1);
    assert_string_equal(r->not_evaluated_when, "no fault fired");
    assert_string_equal(catalog_probe_find("failure_surfaced")->not_evaluated_when,
                        "no fault fired");
    assert_null(catalog_probe_find("task_success")->not_evaluated_when);
    assert_false(catalog_probe_find("no_policy_hits")->takes_value);
    assert_null(catalog_probe_find("bounded_retries"));

    static const char *const inv002[] = {"no_duplicate_side_effect", "no_unintended_side_effect",
                                         "no_orphaned_mutation", "world_matches_expected",
                                         "bounded_retries", "backoff_observed", "terminated",
                                         "no_progress_loop", "no_fabricated_value",
                                         "failure_surfaced", "cost_bounded", "canary_untouched"};
    for (size_t i = 0; i < sizeof(inv002) / sizeof(inv002[0]); i++) {
        const struct catalog_invariant *v = catalog_invariant_find(inv002[i]);
        assert_non_null(v);
        assert_string_equal(v->origin, "002");
        assert_false(v->world_declared);
    }
    static const char *const inv004[] = {"unique", "approval", "count"};
    for (int i = 0; i < 3; i++) {
        const struct catalog_invariant *v = catalog_invariant_find(inv004[i]);
        assert_non_null(v);
        assert_string_equal(v->origin, "004");
        assert_true(v->world_declared);
        assert_non_null(v->params);
    }
    /* beyond the seeds: idempotency_key_stable (issue 5) */
    const struct catalog_invariant *ik = catalog_invariant_find("idempotency_key_stable");
    assert_non_null(ik);
    assert_string_equal(ik->origin, "faultline");
    catalog_invariants(&n);
    assert_int_equal(n, 16);

    const struct catalog_abort *a = catalog_aborts(&n);
    assert_int_equal(n, 3);
    assert_false(catalog_abort_find("destructive_attempt")->takes_value);
    assert_true(catalog_abort_find("cost_usd_above")->required);
    assert_true(catalog_abort_find("cost_usd_above")->value_min_exclusive);
    assert_false(catalog_abort_find("wall_clock_s_above")->required);
    assert_null(catalog_abort_find("cost"));
    (void)a;
}

static int run_check(const char *id, const char *options)
{
    const struct catalog_fault *f = catalog_fault_find(id);
    char msg[200] = "";
    json_t *o = ut_json(options);
    assert_non_null(f->check);
    int rc = f->check(o, msg, sizeof(msg));
    if (rc < 0)
        assert_true(msg[0] != '\0');
    json_decref(o);
    return rc;
}

/* catalog_option_check: every default passes it; wrong types, ranges, lists are refused with
 * "expected ..." (what plan_load reports after "faults[N].options.NAME: "). */
struct refusal_log {
    enum catalog_refusal why[8];
    size_t item[8];
    size_t n;
};

static void log_refusal(enum catalog_refusal why, size_t item, void *arg)
{
    struct refusal_log *l = arg;
    assert_true(l->n < 8);
    l->why[l->n] = why;
    l->item[l->n++] = item;
}

/* catalog_option_check_each: why a value is refused, every bad item of a list; the code and
 * message are catalog_option_check's (the first reason). */
static void test_option_check_each(void **state)
{
    const struct catalog_fault *tc = catalog_fault_find("mcp.toolset_change");
    const struct catalog_fault *u = catalog_fault_find("llm.upstream_5xx");
    const struct catalog_option *remove = catalog_option_find(tc, "remove");
    const struct catalog_option *status = catalog_option_find(u, "status");
    struct refusal_log l = {0};
    char msg[200], msg1[200];
    json_t *v = ut_json("[\"a\", \"\", \"a\", 1, \"b\", \"b\"]");

    assert_int_equal(catalog_option_check_each(remove, v, log_refusal, &l, msg, sizeof(msg)),
                     ERR_INVALID);
    assert_int_equal(catalog_option_check(remove, v, msg1, sizeof(msg1)), ERR_INVALID);
    assert_string_equal(msg, msg1);
    assert_string_equal(msg, "item 1: expected a string of 1 to 4096 bytes");
    assert_int_equal(l.n, 4);
    assert_int_equal(l.why[0], CATALOG_REFUSED_ITEM_EMPTY);
    assert_int_equal(l.item[0], 1);
    assert_int_equal(l.why[1], CATALOG_REFUSED_ITEM_TWICE);
    assert_int_equal(l.item[1], 2);
    assert_int_equal(l.why[2], CATALOG_REFUSED_ITEM_TYPE);
    assert_int_equal(l.item[2], 3);
    assert_int_equal(l.why[3], CATALOG_REFUSED_ITEM_TWICE);
    assert_int_equal(l.item[3], 5);
    json_decref(v);

    l.n = 0;
    v = json_integer(504);
    assert_int_equal(catalog_option_check_each(status, v, log_refusal, &l, msg, sizeof(msg)),
                     ERR_INVALID);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.why[0], CATALOG_REFUSED_VALUES);
    json_decref(v);
    l.n = 0;
    v = json_string("503");
    catalog_option_check_each(status, v, log_refusal, &l, msg, sizeof(msg));
    assert_int_equal(l.why[0], CATALOG_REFUSED_TYPE);
    json_decref(v);
    l.n = 0;
    v = json_integer(503);
    assert_int_equal(catalog_option_check_each(status, v, log_refusal, &l, msg, sizeof(msg)), 0);
    assert_int_equal(l.n, 0);
    json_decref(v);
}

static void test_option_check(void **state)
{
    size_t n;
    const struct catalog_fault *f = catalog_faults(&n);
    const struct catalog_fault *u = catalog_fault_find("llm.upstream_5xx");
    char msg[200];
    json_t *v;

    for (size_t i = 0; i < n; i++)
        for (const struct catalog_option *o = f[i].options; o->name; o++) {
            json_t *d = catalog_option_default(o);
            if (d != NULL && catalog_option_check(o, d, msg, sizeof(msg)) != 0)
                fail_msg("%s.%s: default refused: %s", f[i].id, o->name, msg);
            json_decref(d);
        }
    v = json_integer(501);
    assert_int_equal(catalog_option_check(catalog_option_find(u, "status"), v, msg, sizeof(msg)),
                     ERR_INVALID);
    assert_string_equal(msg, "expected one of 500, 502, 503, 529");
    json_decref(v);
    v = json_string("503");
    assert_int_equal(catalog_option_check(catalog_option_find(u, "status"), v, msg, sizeof(msg)),
                     ERR_INVALID);
    assert_string_equal(msg, "expected an integer");
    json_decref(v);
    v = json_integer(100001);
    assert_int_equal(catalog_option_check(catalog_option_find(u, "stream_cut_after_chunks"), v,
                                          msg, sizeof(msg)),
                     ERR_INVALID);
    assert_string_equal(msg, "expected an integer from 0 to 100000");
    json_decref(v);
    v = json_pack("[s,s]", "a", "a");
    assert_int_equal(catalog_option_check(catalog_option_find(catalog_fault_find("mcp.toolset_change"),
                                                              "remove"),
                                          v, msg, sizeof(msg)),
                     ERR_INVALID);
    json_decref(v);
    /* what injectors read agrees: an off-list value reads as the default */
    v = json_pack("{s:i}", "status", 501);
    {
        long long st = 0;
        assert_int_equal(catalog_option_int(u, v, "status", &st), 1);
        assert_int_equal(st, 529);
    }
    json_decref(v);
}

static void test_checks_across_options(void **state)
{
    assert_int_equal(run_check("llm.context_trim", "{\"drop_oldest\":0,\"drop_system\":false}"), ERR_INVALID);
    assert_int_equal(run_check("llm.context_trim", "{\"drop_oldest\":0,\"drop_system\":true}"), 0);
    assert_int_equal(run_check("llm.context_trim", "{\"drop_oldest\":2,\"drop_system\":false}"), 0);
    assert_int_equal(run_check("mcp.toolset_change", "{\"notify\":true}"), ERR_INVALID);
    assert_int_equal(run_check("mcp.toolset_change", "{\"remove\":[\"a\"]}"), 0);
    assert_int_equal(run_check("mcp.toolset_change", "{\"redefine\":{\"a\":1}}"), ERR_INVALID);
    assert_int_equal(run_check("mcp.toolset_change", "{\"redefine\":{\"a\":{\"description\":\"x\"}}}"),
                     0);
    assert_int_equal(run_check("tool.partial_failure", "{\"pattern\":\"SSF\"}"), 0);
    assert_int_equal(run_check("tool.partial_failure", "{\"pattern\":\"SSS\"}"), ERR_INVALID);
    assert_int_equal(run_check("tool.partial_failure", "{\"pattern\":\"SXF\"}"), ERR_INVALID);
    assert_int_equal(run_check("tool.partial_failure", "{\"fail_every\":3}"), 0);
    assert_int_equal(run_check("tool.silent_wrong_data", "{\"mode\":\"text\",\"by\":1}"), ERR_INVALID);
    assert_int_equal(run_check("tool.silent_wrong_data",
                               "{\"mode\":\"text\",\"by\":1,\"find\":\"4\"}"), 0);
    assert_int_equal(run_check("tool.silent_wrong_data", "{\"mode\":\"numbers_scale\",\"by\":1}"),
                     ERR_INVALID);
    assert_int_equal(run_check("tool.silent_wrong_data", "{\"mode\":\"numbers_offset\",\"by\":0}"),
                     ERR_INVALID);
    assert_int_equal(run_check("tool.omission", "{\"mode\":\"empty\",\"keep_bytes\":10}"), ERR_INVALID);
    assert_int_equal(run_check("tool.omission", "{\"mode\":\"truncate\",\"keep_bytes\":10}"), 0);
    assert_int_equal(run_check("mcp.schema_drift", "{\"rename\":{\"a\":\"\"}}"), ERR_INVALID);
    assert_int_equal(run_check("mcp.schema_drift", "{\"rename\":{\"a\":\"b\"}}"), 0);
}

static void test_catalog_json(void **state)
{
    size_t nf, np, ni, na, nk;
    catalog_faults(&nf);
    catalog_probes(&np);
    catalog_invariants(&ni);
    catalog_aborts(&na);
    catalog_seed_kinds(&nk);
    json_t *j = catalog_to_json();
    assert_int_equal(json_array_size(json_object_get(j, "faults")), nf);
    assert_int_equal(json_array_size(json_object_get(j, "probes")), np);
    assert_int_equal(json_array_size(json_object_get(j, "invariants")), ni);
    assert_int_equal(json_array_size(json_object_get(j, "abort")), na);
    assert_int_equal(json_array_size(json_object_get(j, "seed_kinds")), nk);
    json_t *f = json_array_get(json_object_get(j, "faults"), 7);
    assert_string_equal(json_string_value(json_object_get(f, "id")), "tool.error");
    json_t *inj = json_object_get(f, "injectors");
    assert_int_equal(json_array_size(inj), 3);
    assert_string_equal(json_string_value(json_array_get(inj, 0)), "mcp");
    assert_string_equal(json_string_value(json_array_get(inj, 1)), "gate");
    assert_string_equal(json_string_value(json_array_get(inj, 2)), "world");
    json_t *o = json_array_get(json_object_get(f, "options"), 0);
    assert_string_equal(json_string_value(json_object_get(o, "name")), "message");
    assert_true(json_is_string(json_object_get(o, "default")));
    json_decref(j);
}

/* Every format row is well formed: patterns compile, sections exist, defaults parse. */
static void test_format_tables(void **state)
{
    size_t n;
    const struct format_section *s = format_sections(&n);
    assert_true(n >= 10);
    for (size_t i = 0; i < n; i++) {
        for (const struct format_key *k = s[i].keys; k->name; k++) {
            regex_t re;
            assert_non_null(k->doc);
            if (k->pattern) {
                assert_int_equal(regcomp(&re, k->pattern, REG_EXTENDED | REG_NOSUB), 0);
                assert_non_null(k->pattern_doc);
                regfree(&re);
            }
            if (k->type == FORMAT_MAP || k->type == FORMAT_LIST || k->type == FORMAT_DICT)
                assert_non_null(format_section_find(k->section));
            if (k->type == FORMAT_ENUM)
                assert_non_null(k->values);
        }
    }
    const struct format_key *name = format_key_find(format_section_find("experiment"), "name");
    regex_t re;
    assert_int_equal(regcomp(&re, name->pattern, REG_EXTENDED | REG_NOSUB), 0);
    assert_int_equal(regexec(&re, "registry-down", 0, NULL, 0), 0);
    assert_int_equal(regexec(&re, "a", 0, NULL, 0), 0);
    assert_int_not_equal(regexec(&re, "Registry-down", 0, NULL, 0), 0);
    assert_int_not_equal(regexec(&re, "-x", 0, NULL, 0), 0);
    assert_int_not_equal(regexec(&re, "x-", 0, NULL, 0), 0);
    assert_int_not_equal(regexec(&re, "a_b", 0, NULL, 0), 0);
    regfree(&re);
    const struct format_key *path = format_key_find(format_section_find("when"), "path");
    assert_int_equal(regcomp(&re, path->pattern, REG_EXTENDED | REG_NOSUB), 0);
    assert_int_equal(regexec(&re, "$", 0, NULL, 0), 0);
    assert_int_equal(regexec(&re, "$.a.b_c[0].d-e", 0, NULL, 0), 0);
    assert_int_not_equal(regexec(&re, "a.b", 0, NULL, 0), 0);
    assert_int_not_equal(regexec(&re, "$.a[x]", 0, NULL, 0), 0);
    regfree(&re);
}

/* The schema names every fault, probe and top-level key, and carries the seed's rules. */
static void test_schema_generated_from_tables(void **state)
{
    json_t *s = schema_experiment();
    size_t n;
    const struct catalog_fault *f = catalog_faults(&n);
    assert_string_equal(json_string_value(json_object_get(s, "$schema")), SCHEMA_DIALECT);
    json_t *defs = json_object_get(s, "$defs");
    for (size_t i = 0; i < n; i++) {
        char name[96];
        snprintf(name, sizeof(name), "fault.%s", f[i].id);
        json_t *d = json_object_get(defs, name);
        assert_non_null(d);
        assert_true(json_is_false(json_object_get(d, "additionalProperties")));
        json_t *props = json_object_get(d, "properties");
        for (const struct catalog_option *o = f[i].options; o->name; o++)
            assert_non_null(json_object_get(props, o->name));
        assert_int_equal(json_object_get(props, "when") != NULL, catalog_fault_sees_args(&f[i]));
        if (f[i].requires_host) {
            json_t *m = json_object_get(props, "match");
            assert_string_equal(json_string_value(json_array_get(json_object_get(m, "required"), 0)),
                                "host");
        }
    }
    json_t *props = json_object_get(s, "properties");
    for (const struct format_key *k = format_section_find("experiment")->keys; k->name; k++)
        assert_non_null(json_object_get(props, k->name));
    json_t *repeat = json_object_get(props, "repeat");
    assert_int_equal(json_integer_value(json_object_get(repeat, "minimum")), 1);
    assert_int_equal(json_integer_value(json_object_get(repeat, "maximum")), 20);
    json_t *abort_ = json_object_get(props, "abort");
    json_t *contains = json_object_get(json_array_get(json_object_get(abort_, "allOf"), 0),
                                       "contains");
    assert_string_equal(json_string_value(json_array_get(json_object_get(contains, "required"), 0)),
                        "cost_usd_above");
    json_decref(s);
}

static void test_docs_name_everything(void **state)
{
    struct buf md = BUF_INIT, txt = BUF_INIT;
    size_t n;
    docgen_faults_markdown(&md);
    docgen_list_text(&txt);
    const struct catalog_fault *f = catalog_faults(&n);
    for (size_t i = 0; i < n; i++) {
        char h[96];
        snprintf(h, sizeof(h), "\n### %s\n", f[i].id);
        assert_non_null(strstr(md.data, h));
        assert_non_null(strstr(txt.data, f[i].id));
    }
    const struct catalog_probe *p = catalog_probes(&n);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(strstr(md.data, p[i].id));
        assert_non_null(strstr(txt.data, p[i].id));
    }
    const struct catalog_invariant *v = catalog_invariants(&n);
    for (size_t i = 0; i < n; i++)
        assert_non_null(strstr(md.data, v[i].id));
    assert_non_null(strstr(md.data, "| 002 | stale_cache | `tool.stale_data` | same as"));
    assert_non_null(strstr(txt.data, "cost_usd_above (value)"));
    buf_release(&md);
    buf_release(&txt);
}

/* docs/experiment-format.md describes every key of every section of the format tables. */
static void test_format_doc_names_every_key(void **state)
{
    const char *root = getenv("FAULTLINE_ROOT");
    struct buf path = BUF_INIT, doc = BUF_INIT;
    struct err e = {0};
    size_t n;
    buf_addf(&path, "%s/docs/experiment-format.md", root ? root : ".");
    assert_int_equal(fs_read_file(path.data, 1 << 20, &doc, &e), 0);
    const struct format_section *s = format_sections(&n);
    for (size_t i = 0; i < n; i++) {
        for (const struct format_key *k = s[i].keys; k->name; k++) {
            char needle[80];
            snprintf(needle, sizeof(needle), "`%s`", k->name);
            if (strstr(doc.data, needle) == NULL)
                fail_msg("docs/experiment-format.md does not name %s.%s", s[i].name, k->name);
        }
    }
    buf_release(&path);
    buf_release(&doc);
}

static void test_match_pattern(void **state)
{
    assert_true(catalog_match_pattern("read", "read"));
    assert_false(catalog_match_pattern("read", "Read"));
    assert_true(catalog_match_pattern("*read_file", "mcp__fs__read_file"));
    assert_false(catalog_match_pattern("*.npmjs.org", "npmjs.org"));
    assert_true(catalog_match_pattern("*", ""));
    assert_false(catalog_match_pattern(NULL, "x"));
    assert_false(catalog_match_pattern("x", NULL));
}

/* Rows are in enum catalog_fault_id order (injectors index their handlers by it), and the
 * option readers give a plan's valid value or the catalog's default, never one of their own. */
static void test_fault_ids_and_option_readers(void **state)
{
    size_t n;
    const struct catalog_fault *f = catalog_faults(&n);
    const struct catalog_fault *tl = catalog_fault_find("tool.timeout");
    const struct catalog_fault *up = catalog_fault_find("llm.upstream_5xx");
    json_t *o;
    long long ll;
    double d;

    assert_int_equal(n, CATALOG_F_COUNT);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(f[i].fid, i);
        assert_ptr_equal(catalog_fault_of(f[i].fid), &f[i]);
        /* fill_defaults sets exactly the options with a default */
        o = json_object();
        catalog_fill_defaults(&f[i], o);
        for (const struct catalog_option *op = f[i].options; op->name; op++) {
            json_t *def = catalog_option_default(op);
            if (def == NULL)
                assert_null(json_object_get(o, op->name));
            else
                assert_true(json_equal(def, json_object_get(o, op->name)));
            json_decref(def);
        }
        json_decref(o);
    }
    assert_null(catalog_fault_of(CATALOG_F_COUNT));
    assert_int_equal(catalog_fault_find("tool.partial_failure")->fires, CATALOG_FIRES_EVERY_NTH);
    assert_int_equal(catalog_fault_find("tool.auth_expiry")->fires, CATALOG_FIRES_FROM_CALL);
    assert_int_equal(catalog_fault_find("mcp.annotation_lie")->fires, CATALOG_FIRES_ON_LIST);
    assert_int_equal(catalog_fault_find("tool.error")->fires, CATALOG_FIRES_EACH);

    /* filling keeps what the plan says, whatever its type */
    o = json_pack("{s:i, s:s}", "timeout_ms", 7, "reply", "bogus");
    catalog_fill_defaults(tl, o);
    assert_int_equal(json_integer_value(json_object_get(o, "timeout_ms")), 7);
    assert_string_equal(json_string_value(json_object_get(o, "reply")), "bogus");
    /* readers: valid value, else the catalog's default */
    assert_int_equal(catalog_option_int(tl, o, "timeout_ms", &ll), 1);
    assert_int_equal(ll, 7);
    assert_string_equal(catalog_option_string(tl, o, "reply"),
                        catalog_option_find(tl, "reply")->def);
    json_object_set_new(o, "timeout_ms", json_integer(600001)); /* over the range */
    assert_int_equal(catalog_option_int(tl, o, "timeout_ms", &ll), 1);
    assert_string_equal(catalog_option_find(tl, "timeout_ms")->def, "30000");
    assert_int_equal(ll, 30000);
    json_object_set_new(o, "timeout_ms", json_string("5"));
    assert_int_equal(catalog_option_int(tl, o, "timeout_ms", &ll), 1);
    assert_int_equal(ll, 30000);
    assert_int_equal(catalog_option_int(tl, o, "nope", &ll), 0);
    assert_int_equal(catalog_option_int(NULL, o, "timeout_ms", &ll), 0);
    json_decref(o);
    /* an INT option with a values list; an option with no default */
    o = json_pack("{s:i}", "status", 503);
    assert_int_equal(catalog_option_int(up, o, "status", &ll), 1);
    assert_int_equal(ll, 503);
    json_object_set_new(o, "status", json_integer(501));
    assert_int_equal(catalog_option_int(up, o, "status", &ll), 1);
    assert_int_equal(ll, 529);
    ll = -1;
    assert_int_equal(catalog_option_int(up, o, "stream_cut_after_chunks", &ll), 0);
    assert_int_equal(ll, -1);
    assert_int_equal(catalog_option_int(up, NULL, "status", &ll), 1);
    json_decref(o);
    assert_int_equal(
        catalog_option_number(catalog_fault_find("tool.silent_wrong_data"), NULL, "by", &d), 1);
    assert_true(d == 1.0);
    assert_int_equal(catalog_option_bool(catalog_fault_find("mcp.toolset_change"), NULL, "notify"),
                     1);
    assert_null(catalog_option_string(catalog_fault_find("inject.tool_result"), NULL, "payload"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_ids_unique_and_named_by_family),
        cmocka_unit_test(test_examples_not_found),
        cmocka_unit_test(test_option_check_each),
        cmocka_unit_test(test_injectors_exact),
        cmocka_unit_test(test_match_pattern),
        cmocka_unit_test(test_options_consistent),
        cmocka_unit_test(test_seed_000_faults),
        cmocka_unit_test(test_seed_002_mapping),
        cmocka_unit_test(test_seed_004_faults),
        cmocka_unit_test(test_injector_names_and_match_keys),
        cmocka_unit_test(test_probes_invariants_aborts),
        cmocka_unit_test(test_checks_across_options),
        cmocka_unit_test(test_option_check),
        cmocka_unit_test(test_catalog_json),
        cmocka_unit_test(test_format_tables),
        cmocka_unit_test(test_schema_generated_from_tables),
        cmocka_unit_test(test_docs_name_everything),
        cmocka_unit_test(test_format_doc_names_every_key),
        cmocka_unit_test(test_fault_ids_and_option_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
