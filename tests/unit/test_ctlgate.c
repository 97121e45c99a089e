/* Unit tests for src/control/gatectl: the gate endpoint's decision (gatectl_decide): policy
 * first, then the hold table and the plan's gate faults; the exhaustive effect x fault x mode
 * proof that a fault never turns a block, a hold or a redaction into an allow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "control/gatectl.h"
#include "plan/plan.h"
#include "policy/policy.h"
#include "helpers.h"
#include "util/banned.h"

#define CANARY "E-FAULTLINE-0123abcd"

static struct plan *plan_faults(const char *faults)
{
    char text[4096];
    struct err e = {0};
    json_t *j;
    struct plan *p;

    snprintf(text, sizeof(text),
             "{\"version\":1,\"run\":\"r-1\",\"canary\":\"" CANARY "\",\"seed\":\"42\","
             "\"faults\":%s}",
             faults);
    j = ut_json(text);
    p = plan_from_json(j, &e);
    json_decref(j);
    if (p == NULL)
        fail_msg("plan rejected: %s: %s", e.msg, text);
    return p;
}

static struct gatectl *gate_new(void)
{
    struct err e = {0};
    struct gatectl *g = gatectl_new(NULL, 0, &e);
    assert_non_null(g);
    return g;
}

static void pol_allow(struct policy_decision *d)
{
    memset(d, 0, sizeof(*d));
    d->effect = POLICY_ALLOW;
    d->from_default = 1;
}

/* One decision for Bash with input {"command": cmd}. */
static void decide(struct gatectl *g, struct plan *p, const char *cmd,
                   const struct policy_decision *pol, int64_t now, struct gatectl_result *r)
{
    json_t *in = json_pack("{s:s}", "command", cmd);
    struct gatectl_call c = {.tool = "Bash", .input = in};

    assert_int_equal(gatectl_decide(g, p, CANARY, &c, pol, now, r), 0);
    json_decref(in);
}

static uint64_t injected(struct plan *p)
{
    uint64_t m = 0, i = 0;
    plan_fault_counters(p, 0, &m, &i);
    return i;
}

static uint64_t matched(struct plan *p)
{
    uint64_t m = 0, i = 0;
    plan_fault_counters(p, 0, &m, &i);
    return m;
}

/* ---- the exhaustive test ---- */

static const char *const fault_plans[] = {
    NULL, /* no fault */
    "[{\"kind\":\"tool.error\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\"}]",
    "[{\"kind\":\"tool.error\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\",\"options\":{\"message\":\"disk gone\"}}]",
    "[{\"kind\":\"permission.deny_or_delay\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\"}]",
    "[{\"kind\":\"permission.deny_or_delay\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\",\"options\":{\"mode\":"
    "\"deny\"}}]",
    "[{\"kind\":\"permission.deny_or_delay\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\",\"options\":{\"mode\":"
    "\"delay\",\"delay_s\":0}}]",
    "[{\"kind\":\"permission.deny_or_delay\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\",\"options\":{\"mode\":"
    "\"delay\",\"delay_s\":3}}]",
    "[{\"kind\":\"permission.deny_or_delay\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\",\"options\":{\"mode\":"
    "\"hold_then_deny\",\"delay_s\":0}}]",
    "[{\"kind\":\"permission.deny_or_delay\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\",\"options\":{\"mode\":"
    "\"hold_then_deny\",\"delay_s\":3}}]",
};

static void test_fault_never_turns_a_refusal_into_allow(void **state)
{
    static const enum policy_effect effects[] = {POLICY_ALLOW, POLICY_BLOCK, POLICY_HOLD,
                                                 POLICY_REDACT};
    static const enum policy_mode modes[] = {POLICY_ENFORCE, POLICY_MONITOR};
    static const enum tier_level tiers[] = {TIER_NORMAL, TIER_DESTRUCTIVE};
    /* a call, its identical retries (within and past delay_s), another call, the first again */
    static const struct {
        const char *cmd;
        int64_t t;
    } seq[] = {{"ls", 0},    {"ls", 0},    {"ls", 1000}, {"pwd", 1500},
               {"ls", 3000}, {"ls", 3001}, {"ls", 9000}, {"pwd", 9000}};
    size_t combos = 0;

    for (size_t e = 0; e < sizeof(effects) / sizeof(effects[0]); e++)
        for (size_t m = 0; m < 2; m++)
            for (size_t t = 0; t < 2; t++)
                for (size_t f = 0; f < sizeof(fault_plans) / sizeof(fault_plans[0]); f++) {
                    struct gatectl *g = gate_new();
                    struct plan *p = fault_plans[f] ? plan_faults(fault_plans[f]) : NULL;
                    struct policy_decision pol;
                    json_t *masked = json_pack("{s:s}", "command", "echo ****");

                    memset(&pol, 0, sizeof(pol));
                    pol.effect = effects[e];
                    pol.mode = modes[m];
                    pol.tier.level = tiers[t];
                    snprintf(pol.rule, sizeof(pol.rule), "r1");
                    snprintf(pol.reason, sizeof(pol.reason), "because");
                    if (effects[e] == POLICY_REDACT)
                        pol.redacted_input = masked;
                    for (size_t s = 0; s < sizeof(seq) / sizeof(seq[0]); s++) {
                        struct gatectl_result r;
                        decide(g, p, seq[s].cmd, &pol, seq[s].t, &r);
                        combos++;
                        switch (effects[e]) {
                        case POLICY_BLOCK:
                            assert_int_equal(r.verdict, GATECTL_DENY);
                            assert_string_equal(r.code, "POLICY_BLOCK");
                            assert_null(r.fault);
                            assert_false(r.injected);
                            assert_non_null(strstr(r.reason, "[faultline] BLOCKED: because"));
                            break;
                        case POLICY_HOLD:
                            assert_int_equal(r.verdict, GATECTL_HELD);
                            assert_string_equal(r.code, "HELD");
                            assert_null(r.fault);
                            assert_false(r.injected);
                            break;
                        case POLICY_REDACT:
                            /* allowed only with the masked input, whatever the fault did */
                            if (r.verdict == GATECTL_ALLOW)
                                assert_ptr_equal(r.input, masked);
                            break;
                        case POLICY_ALLOW:
                            assert_null(r.input);
                            break;
                        }
                        if (r.verdict != GATECTL_ALLOW)
                            assert_non_null(r.code);
                        if (r.fault)
                            assert_non_null(strstr(r.reason, CANARY));
                    }
                    /* block and hold never asked the plan */
                    if (p && (effects[e] == POLICY_BLOCK || effects[e] == POLICY_HOLD))
                        assert_int_equal(matched(p), 0);
                    if (p && (effects[e] == POLICY_ALLOW || effects[e] == POLICY_REDACT))
                        assert_true(matched(p) > 0);
                    json_decref(masked);
                    plan_free(p);
                    gatectl_free(g);
                }
    assert_int_equal(combos, 4 * 2 * 2 * 9 * 8);
}

/* ---- holds: seed 000's "How a permission delay works" ---- */

static void test_delay_holds_identical_retries_until_delay_s(void **state)
{
    struct gatectl *g = gate_new();
    struct plan *p = plan_faults(
        "[{\"kind\":\"permission.deny_or_delay\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\","
        "\"times\":1,\"options\":{\"mode\":\"delay\",\"delay_s\":5}}]");
    struct policy_decision pol;
    struct gatectl_result r;

    pol_allow(&pol);
    decide(g, p, "make deploy", &pol, 1000, &r);
    assert_int_equal(r.verdict, GATECTL_HELD);
    assert_string_equal(r.code, "HELD");
    assert_true(r.injected);
    assert_string_equal(r.fault, "permission.deny_or_delay");
    assert_non_null(strstr(r.reason, "[faultline] HELD:"));
    assert_non_null(strstr(r.reason, CANARY));
    assert_int_equal(gatectl_holds(g), 1);

    decide(g, p, "make deploy", &pol, 5999, &r); /* 4.999 s later: held again */
    assert_int_equal(r.verdict, GATECTL_HELD);
    assert_false(r.injected);
    assert_non_null(strstr(r.reason, CANARY));

    decide(g, p, "make test", &pol, 6000, &r); /* a different call: its own decision */
    assert_int_equal(r.verdict, GATECTL_ALLOW);
    assert_null(r.fault);
    assert_int_equal(gatectl_holds(g), 1); /* neither retry nor release */

    decide(g, p, "make deploy", &pol, 6000, &r); /* delay_s has passed: let through */
    assert_int_equal(r.verdict, GATECTL_ALLOW);
    assert_null(r.code);
    assert_false(r.injected);
    assert_int_equal(gatectl_holds(g), 0);

    decide(g, p, "make deploy", &pol, 6001, &r); /* the hold is over: a new call */
    assert_int_equal(r.verdict, GATECTL_ALLOW);
    assert_int_equal(injected(p), 1); /* one hold, one injection */
    plan_free(p);
    gatectl_free(g);
}

static void test_hold_then_deny_zero_decides_at_the_immediate_retry(void **state)
{
    struct gatectl *g = gate_new();
    struct plan *p = plan_faults(
        "[{\"kind\":\"permission.deny_or_delay\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\","
        "\"options\":{\"mode\":\"hold_then_deny\",\"delay_s\":0}}]");
    struct policy_decision pol;
    struct gatectl_result r;

    pol_allow(&pol);
    decide(g, p, "rm build.log", &pol, 0, &r);
    assert_int_equal(r.verdict, GATECTL_HELD);
    assert_true(r.injected);
    decide(g, p, "rm build.log", &pol, 0, &r);
    assert_int_equal(r.verdict, GATECTL_DENY);
    assert_string_equal(r.code, "CHAOS_FAULT");
    assert_false(r.injected);
    assert_non_null(strstr(r.reason, "[faultline] DENIED"));
    assert_non_null(strstr(r.reason, CANARY));
    assert_int_equal(injected(p), 1);
    /* over: the next identical call is a new matching call (held anew, a second injection) */
    decide(g, p, "rm build.log", &pol, 0, &r);
    assert_int_equal(r.verdict, GATECTL_HELD);
    assert_true(r.injected);
    assert_int_equal(injected(p), 2);
    plan_free(p);
    gatectl_free(g);
}

static void test_retry_is_same_tool_same_input_any_key_order(void **state)
{
    struct gatectl *g = gate_new();
    struct plan *p = plan_faults(
        "[{\"kind\":\"permission.deny_or_delay\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\","
        "\"times\":1,\"options\":{\"mode\":\"delay\",\"delay_s\":60}}]");
    struct policy_decision pol;
    struct gatectl_result r;
    json_t *a = ut_json("{\"file_path\":\"/work/a.c\",\"old_string\":\"x\",\"new_string\":\"y\"}");
    json_t *b = ut_json("{\"new_string\":\"y\",\"old_string\":\"x\",\"file_path\":\"/work/a.c\"}");
    struct gatectl_call ca = {.tool = "Edit", .input = a}, cb = {.tool = "Edit", .input = b};
    struct gatectl_call cw = {.tool = "Write", .input = a};

    pol_allow(&pol);
    assert_int_equal(gatectl_decide(g, p, CANARY, &ca, &pol, 0, &r), 0);
    assert_int_equal(r.verdict, GATECTL_HELD);
    assert_int_equal(gatectl_decide(g, p, CANARY, &cb, &pol, 1000, &r), 0);
    assert_int_equal(r.verdict, GATECTL_HELD); /* the same call */
    assert_false(r.injected);
    assert_int_equal(gatectl_decide(g, p, CANARY, &cw, &pol, 1000, &r), 0);
    assert_int_equal(r.verdict, GATECTL_ALLOW); /* another tool is another call */
    json_decref(a);
    json_decref(b);
    plan_free(p);
    gatectl_free(g);
}

static void test_deny_and_tool_error_refuse_with_the_canary(void **state)
{
    struct gatectl *g = gate_new();
    struct plan *p = plan_faults(
        "[{\"kind\":\"tool.error\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\",\"options\":"
        "{\"message\":\"disk quota exceeded\"}}]");
    struct plan *q = plan_faults(
        "[{\"kind\":\"permission.deny_or_delay\",\"injectors\":[\"gate\"],\"safety\":\"fail-safe\"}]");
    struct policy_decision pol;
    struct gatectl_result r;

    pol_allow(&pol);
    decide(g, p, "ls", &pol, 0, &r);
    assert_int_equal(r.verdict, GATECTL_DENY);
    assert_string_equal(r.code, "CHAOS_FAULT");
    assert_string_equal(r.fault, "tool.error");
    assert_true(r.injected);
    assert_string_equal(r.target, "Bash");
    assert_non_null(strstr(r.reason, "disk quota exceeded"));
    assert_non_null(strstr(r.reason, CANARY));
    decide(g, q, "ls", &pol, 0, &r); /* mode deny (the default): refused at once */
    assert_int_equal(r.verdict, GATECTL_DENY);
    assert_string_equal(r.code, "CHAOS_FAULT");
    assert_non_null(strstr(r.reason, CANARY));
    assert_int_equal(gatectl_holds(g), 0);
    plan_free(p);
    plan_free(q);
    gatectl_free(g);
}

static void test_mcp_calls_are_the_shims(void **state)
{
    struct gatectl *g = gate_new();
    struct plan *p = plan_faults(
        "[{\"kind\":\"tool.error\",\"injectors\":[\"gate\",\"mcp\"],\"safety\":\"fail-safe\"}]");
    struct policy_decision pol;
    struct gatectl_result r;
    json_t *in = json_object();
    struct gatectl_call c1 = {.tool = "mcp__fs__read", .input = in};
    struct gatectl_call c2 = {.tool = "read", .input = in, .mcp_server = "fs"};

    pol_allow(&pol);
    assert_int_equal(gatectl_decide(g, p, CANARY, &c1, &pol, 0, &r), 0);
    assert_int_equal(r.verdict, GATECTL_ALLOW);
    assert_int_equal(gatectl_decide(g, p, CANARY, &c2, &pol, 0, &r), 0);
    assert_int_equal(r.verdict, GATECTL_ALLOW);
    assert_int_equal(matched(p), 0); /* not asked: never injected twice */
    json_decref(in);
    plan_free(p);
    gatectl_free(g);
}

static void test_bad_calls(void **state)
{
    struct gatectl *g = gate_new();
    struct policy_decision pol;
    struct gatectl_result r;
    struct gatectl_call c = {.tool = NULL};

    pol_allow(&pol);
    assert_int_equal(gatectl_decide(g, NULL, CANARY, &c, &pol, 0, &r), ERR_INVALID);
    assert_int_equal(r.verdict, GATECTL_DENY);
    assert_int_equal(gatectl_decide(g, NULL, CANARY, NULL, &pol, 0, &r), ERR_INVALID);
    gatectl_free(g);
    gatectl_free(NULL);
}

static void test_bad_policy_file_is_a_start_up_error(void **state)
{
    struct ut_tmpfile t;
    struct err e = {0};
    const char *paths[1];

    ut_tmpfile_with(&t, "rules:\n  - {id: a, effect: maybe}\n");
    paths[0] = t.path;
    assert_null(gatectl_new(paths, 1, &e));
    assert_true(e.code != 0);
    assert_non_null(strstr(e.msg, t.path));
    unlink(t.path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_never_turns_a_refusal_into_allow),
        cmocka_unit_test(test_delay_holds_identical_retries_until_delay_s),
        cmocka_unit_test(test_hold_then_deny_zero_decides_at_the_immediate_retry),
        cmocka_unit_test(test_retry_is_same_tool_same_input_any_key_order),
        cmocka_unit_test(test_deny_and_tool_error_refuse_with_the_canary),
        cmocka_unit_test(test_mcp_calls_are_the_shims),
        cmocka_unit_test(test_bad_calls),
        cmocka_unit_test(test_bad_policy_file_is_a_start_up_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
