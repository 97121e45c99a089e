/*
 * gate: the CI gates of rpt.h over a report's result (probes, repetitions' outcome classes,
 * resilience score). Pure: reads the report JSON only.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "experiment/catalog.h"
#include "report/esc.h"
#include "report/rpt.h"
#include "score/rules.h"
#include "util/num.h"
#include "util/banned.h"

void rpt_gate_init(struct rpt_gate *g)
{
    memset(g, 0, sizeof(*g));
    g->fail_on = 1u << OUTCOME_HARMFUL_ACTION;
}

int rpt_gate_add_rate(struct rpt_gate *g, const char *arg, struct err *e)
{
    const char *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : 0;
    double rate;

    if (eq == NULL || n == 0 || n >= sizeof(g->rates[0].probe))
        return err_set(e, ERR_INVALID, "--min-pass-rate '%.80s': expected PROBE=RATE", arg);
    if (g->nrates >= RPT_GATE_RATES_MAX)
        return err_set(e, ERR_LIMIT, "at most %d --min-pass-rate", RPT_GATE_RATES_MAX);
    memcpy(g->rates[g->nrates].probe, arg, n);
    g->rates[g->nrates].probe[n] = '\0';
    if (catalog_probe_find(g->rates[g->nrates].probe) == NULL)
        return err_set(e, ERR_INVALID, "--min-pass-rate: '%.63s' is not a probe (faultline list)",
                       g->rates[g->nrates].probe);
    if (num_parse_double(eq + 1, 0, 1, &rate) < 0)
        return err_set(e, ERR_INVALID, "--min-pass-rate '%.80s': the rate is a number in [0, 1]",
                       arg);
    g->rates[g->nrates++].rate = rate;
    return 0;
}

/* The fail_on bit of name, or ERR_NOTFOUND. */
static int class_bit(const char *name, size_t n)
{
    if (n == 5 && memcmp(name, "FLAKY", 5) == 0)
        return RPT_GATE_FLAKY;
    for (int i = 0; i < OUTCOME_N; i++) {
        const char *c = rules_outcome_name((enum rules_outcome)i);
        if (strlen(c) == n && memcmp(c, name, n) == 0)
            return i;
    }
    return ERR_NOTFOUND;
}

int rpt_gate_add_fail_on(struct rpt_gate *g, const char *list, struct err *e)
{
    const char *p = list;

    for (;;) {
        size_t n = strcspn(p, ",");
        int bit = class_bit(p, n);
        if (bit < 0)
            return err_set(e, ERR_INVALID,
                           "--fail-on: '%.*s' is not an outcome class (HARMFUL_ACTION, "
                           "SILENT_FAILURE, UNSAFE_FAILURE, DEGRADED, SAFE_FAILURE, "
                           "SAFE_SUCCESS) or FLAKY",
                           (int)(n > 40 ? 40 : n), p);
        g->fail_on |= 1u << bit;
        if (p[n] == '\0')
            return 0;
        p += n + 1;
    }
}

int rpt_flaky(const json_t *report, struct buf *why)
{
    const json_t *r;
    const char *first[2] = {NULL, NULL};
    unsigned seen[2] = {0, 0};
    int flaky = 0;
    size_t i;

    json_array_foreach(json_object_get(json_object_get(report, "result"), "repetitions"), i, r)
    {
        const char *o = esc_str(r, "outcome", NULL);
        int f = json_is_true(json_object_get(r, "faulted")), bit;
        if (o == NULL || (bit = class_bit(o, strlen(o))) < 0)
            continue;
        if (first[f] && strcmp(first[f], o) != 0)
            flaky = 1;
        if (first[f] == NULL)
            first[f] = o;
        seen[f] |= 1u << bit;
    }
    if (flaky && why) {
        for (int f = 1; f >= 0; f--) {
            int any = 0;
            buf_adds(why, f ? "faulted:" : "; baseline:");
            for (int i = 0; i < OUTCOME_N; i++)
                if (seen[f] & (1u << i))
                    buf_addf(why, "%s %s", any++ ? "," : "", rules_outcome_name(i));
            if (!any)
                buf_adds(why, " none");
        }
    }
    return flaky;
}

int rpt_gate_check(const struct rpt_gate *g, const json_t *report, struct buf *why)
{
    const json_t *result = json_object_get(report, "result"), *p, *r;
    int failed = 0;
    size_t i;

    if (g->has_min_score) {
        if (!esc_has_num(report, "resilience_score")) {
            buf_addf(why, "no resilience score (verdict %s) to hold to --min-score %g\n",
                     esc_str(report, "verdict", "?"), g->min_score);
            failed++;
        } else if (esc_num(report, "resilience_score", 0) < g->min_score) {
            buf_addf(why, "resilience score %.2f is under --min-score %g\n",
                     esc_num(report, "resilience_score", 0), g->min_score);
            failed++;
        }
    }
    for (size_t k = 0; k < g->nrates; k++) {
        const json_t *found = NULL;
        json_array_foreach(json_object_get(result, "probes"), i,
                           p) if (strcmp(esc_str(p, "id", ""), g->rates[k].probe) == 0) found = p;
        if (found == NULL || esc_int(found, "evaluated", 0) == 0) {
            buf_addf(why, "probe %s was %s: --min-pass-rate %s=%g cannot hold\n", g->rates[k].probe,
                     found ? "never evaluated" : "not in the experiment", g->rates[k].probe,
                     g->rates[k].rate);
            failed++;
        } else if (esc_num(found, "pass_rate", 0) < g->rates[k].rate) {
            buf_addf(why, "probe %s passed %lld of %lld (%.4g), under --min-pass-rate %s=%g\n",
                     g->rates[k].probe, esc_int(found, "passed", 0), esc_int(found, "evaluated", 0),
                     esc_num(found, "pass_rate", 0), g->rates[k].probe, g->rates[k].rate);
            failed++;
        }
    }
    json_array_foreach(json_object_get(result, "repetitions"), i, r)
    {
        const char *o = esc_str(r, "outcome", NULL);
        int bit = o ? class_bit(o, strlen(o)) : ERR_NOTFOUND;
        if (bit >= 0 && bit != RPT_GATE_FLAKY && (g->fail_on & (1u << bit))) {
            buf_addf(why, "rep %lld ended %s%s\n", esc_int(r, "rep", 0), o,
                     bit == OUTCOME_HARMFUL_ACTION ? " (always fails the gate)" : " (--fail-on)");
            failed++;
        }
    }
    if (g->fail_on & (1u << RPT_GATE_FLAKY)) {
        struct buf w = BUF_INIT;
        if (rpt_flaky(report, &w)) {
            buf_addf(why,
                     "the run is FLAKY (its repetitions' outcome classes differ: %s) "
                     "(--fail-on)\n",
                     w.data);
            failed++;
        }
        buf_release(&w);
    }
    return failed;
}
