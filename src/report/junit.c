/*
 * junit: rpt_render_junit (rpt.h), JUnit XML for CI (the Ant/Jenkins dialect CI systems read;
 * tests/data/junit/junit.xsd is the schema the tests validate it against):
 *
 *   <testsuites>        one, named faultline
 *     <testsuite>       one per experiment: properties (verdict, score, hash, and per
 *                       repetition its seed, canary and cost)
 *       <testcase>      one per probe (classname EXPERIMENT.probe): <failure> when a faulted
 *                       repetition failed it, with the first failing one's reason and evidence;
 *                       <skipped> when none evaluated it
 *       <testcase>      one per invariant (EXPERIMENT.invariant), the same way
 *       <testcase>      one per repetition that ended in a runner error (EXPERIMENT.repetition):
 *                       <error> with the runner's message
 *
 * Times are seconds (the repetitions' durations for the suite). Every string is escaped
 * (esc_xml: entities, no control bytes, no invalid UTF-8).
 */
#include <stdio.h>
#include <string.h>

#include "report/esc.h"
#include "report/rpt.h"
#include "util/banned.h"

/* The first repetition of result whose rule id (in member "probes" or "invariants") failed;
 * *rule gets its entry. */
static const json_t *first_failure(const json_t *result, const char *member, const char *id,
                                   const json_t **rule)
{
    const json_t *r, *o;
    size_t i, j;

    json_array_foreach(json_object_get(result, "repetitions"), i, r) json_array_foreach(
        json_object_get(r, member), j, o) if (strcmp(esc_str(o, "id", ""), id) == 0 &&
                                              strcmp(esc_str(o, "result", ""), "fail") == 0)
    {
        *rule = o;
        return r;
    }
    return NULL;
}

static void evidence(struct buf *b, const json_t *ev)
{
    if (!json_is_object(ev))
        return;
    buf_adds(b, "; earliest violating event: ");
    esc_xmls(b, esc_str(ev, "file", "?"));
    if (esc_has_num(ev, "line"))
        buf_addf(b, " line %lld", esc_int(ev, "line", 0));
    if (esc_has_num(ev, "index"))
        buf_addf(b, " entry %lld", esc_int(ev, "index", 0));
    if (esc_str(ev, "kind", NULL)) {
        buf_adds(b, " (");
        esc_xmls(b, esc_str(ev, "kind", ""));
        buf_adds(b, ")");
    }
}

/* One testcase for a probe (probe 1) or invariant aggregate a. */
static void testcase(struct buf *b, const char *suite, const json_t *result, const json_t *a,
                     int probe)
{
    const char *id = esc_str(a, "id", "?");
    const json_t *rule = NULL, *rep;
    long long ev = esc_int(a, "evaluated", 0), failed;

    failed = probe ? ev - esc_int(a, "passed", 0) : esc_int(a, "failed", 0);
    buf_adds(b, "    <testcase classname=\"");
    esc_xmls(b, suite);
    buf_addf(b, ".%s\" name=\"", probe ? "probe" : "invariant");
    esc_xmls(b, id);
    if (esc_str(a, "collection", NULL)) {
        buf_adds(b, " (");
        esc_xmls(b, esc_str(a, "collection", ""));
        buf_adds(b, ")");
    }
    buf_adds(b, "\" time=\"0\"");
    if (ev == 0) {
        buf_adds(b,
                 ">\n      <skipped message=\"no repetition evaluated it\"/>\n    </testcase>\n");
        return;
    }
    if (failed <= 0) {
        buf_adds(b, "/>\n");
        return;
    }
    rep = first_failure(result, probe ? "probes" : "invariants", id, &rule);
    buf_addf(b, ">\n      <failure type=\"%s\" message=\"failed in %lld of %lld repetitions",
             probe ? "probe" : "invariant", failed, ev);
    if (rep) {
        buf_addf(b, "; first rep %lld: ", esc_int(rep, "rep", 0));
        esc_xmls(b, esc_str(rule, "reason", ""));
        evidence(b, json_object_get(rule, "evidence"));
    }
    buf_adds(b, "\">");
    if (rep) {
        buf_addf(b, "rep %lld (%s) ", esc_int(rep, "rep", 0), esc_str(rep, "dir", "?"));
        esc_xmls(b, esc_str(rule, "reason", ""));
        evidence(b, json_object_get(rule, "evidence"));
    }
    buf_adds(b, "</failure>\n    </testcase>\n");
}

static void property(struct buf *b, const char *name, const char *value)
{
    buf_adds(b, "      <property name=\"");
    esc_xmls(b, name);
    buf_adds(b, "\" value=\"");
    esc_xmls(b, value);
    buf_adds(b, "\"/>\n");
}

int rpt_render_junit(const json_t *report, struct buf *out)
{
    const json_t *result = json_object_get(report, "result"), *a, *r;
    const char *suite = esc_str(json_object_get(report, "experiment"), "name", "experiment");
    long long tests = 0, failures = 0, errors = 0, skipped = 0;
    double secs = 0;
    struct buf cases = BUF_INIT;
    char v[64];
    size_t i;

    json_array_foreach(json_object_get(result, "probes"), i, a)
    {
        tests++;
        if (esc_int(a, "evaluated", 0) == 0)
            skipped++;
        else if (esc_int(a, "passed", 0) < esc_int(a, "evaluated", 0))
            failures++;
        testcase(&cases, suite, result, a, 1);
    }
    json_array_foreach(json_object_get(result, "invariants"), i, a)
    {
        tests++;
        if (esc_int(a, "evaluated", 0) == 0)
            skipped++;
        else if (esc_int(a, "failed", 0) > 0)
            failures++;
        testcase(&cases, suite, result, a, 0);
    }
    json_array_foreach(json_object_get(result, "repetitions"), i, r)
    {
        const json_t *f = esc_runner_rep(report, esc_int(r, "rep", -1));
        secs += esc_num(f, "duration_ms", 0) / 1000.0;
        if (strcmp(esc_str(r, "status", ""), "error") != 0)
            continue;
        tests++;
        errors++;
        buf_adds(&cases, "    <testcase classname=\"");
        esc_xmls(&cases, suite);
        buf_addf(&cases,
                 ".repetition\" name=\"%s\" time=\"%.3f\">\n      <error type=\"runner\" "
                 "message=\"",
                 esc_str(r, "dir", "rep"), esc_num(f, "duration_ms", 0) / 1000.0);
        esc_xmls(&cases, esc_str(r, "status_reason", esc_str(f, "error", "runner error")));
        buf_adds(&cases, "\"/>\n    </testcase>\n");
    }
    buf_adds(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    buf_addf(out,
             "<testsuites name=\"faultline\" tests=\"%lld\" failures=\"%lld\" errors=\"%lld\" "
             "time=\"%.3f\">\n",
             tests, failures, errors, secs);
    buf_adds(out, "  <testsuite name=\"");
    esc_xmls(out, suite);
    buf_addf(out,
             "\" tests=\"%lld\" failures=\"%lld\" errors=\"%lld\" skipped=\"%lld\" "
             "time=\"%.3f\">\n    <properties>\n",
             tests, failures, errors, skipped, secs);
    property(out, "verdict", esc_str(report, "verdict", "?"));
    property(out, "verdict_reason", esc_str(report, "verdict_reason", ""));
    if (esc_has_num(report, "resilience_score")) {
        snprintf(v, sizeof(v), "%.2f", esc_num(report, "resilience_score", 0));
        property(out, "resilience_score", v);
    }
    property(out, "experiment_hash", esc_str(json_object_get(report, "experiment"), "hash", ""));
    json_array_foreach(json_object_get(report, "repetitions"), i, r)
    {
        char name[64];
        long long n = esc_int(r, "rep", (long long)i);
        if (esc_has_num(r, "seed")) {
            snprintf(name, sizeof(name), "rep-%03lld.seed", n);
            snprintf(v, sizeof(v), "%lld", esc_int(r, "seed", 0));
            property(out, name, v);
        }
        if (esc_str(r, "canary", NULL)) {
            snprintf(name, sizeof(name), "rep-%03lld.canary", n);
            property(out, name, esc_str(r, "canary", ""));
        }
        if (esc_has_num(r, "cost_usd")) {
            snprintf(name, sizeof(name), "rep-%03lld.cost_usd", n);
            snprintf(v, sizeof(v), "%.6f", esc_num(r, "cost_usd", 0));
            property(out, name, v);
        }
    }
    buf_adds(out, "    </properties>\n");
    buf_add(out, cases.data, cases.len);
    buf_release(&cases);
    return buf_adds(out, "  </testsuite>\n</testsuites>\n");
}
