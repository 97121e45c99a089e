/*
 * render: the renderers of a struct score_result (score.h). Each reads the struct only: the
 * canonical JSON (docs/scoring.md gives its fields) and the text summary. A new format (HTML,
 * Markdown, JUnit) is one more function here over the same struct.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score/score.h"
#include "util/banned.h"

/* ---- canonical JSON ---- */

/* A JSON string of s. The result's strings are valid UTF-8 already; rundir's are too (read by
 * jansson); the fallback is for safety only. */
static json_t *jstr(const char *s)
{
    json_t *j = json_string(s);
    if (j == NULL) {
        char *c = xstrdup(s);
        for (unsigned char *p = (unsigned char *)c; *p; p++)
            if (*p >= 0x80)
                *p = '?';
        j = json_string(c);
        free(c);
    }
    return j;
}

/* A JSON number, or null when x is not finite (an absurd cost can sum to infinity). */
static json_t *jreal(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static int cost_known(const struct repsum *s)
{
    return (s->seen & EVKIND_SRC_CONTROLLER_MODEL) || s->model_responses > 0;
}

static json_t *evid_json(const struct rundir_rep *rep, const struct evid *ev)
{
    char file[64];
    json_t *j;

    switch (ev->kind) {
    case EVID_EVENT:
        snprintf(file, sizeof(file), "%s/events.jsonl", rep->dir);
        j = json_pack("{s:s,s:I,s:s}", "file", file, "line", (json_int_t)ev->line, "kind",
                      ev->ekind);
        if (ev->seq >= 0)
            json_object_set_new(j, "seq", json_integer(ev->seq));
        return j;
    case EVID_LEDGER:
        snprintf(file, sizeof(file), "%s/ledger.json", rep->dir);
        return json_pack("{s:s,s:I}", "file", file, "index", (json_int_t)ev->index);
    case EVID_LEDGER_CALL:
        snprintf(file, sizeof(file), "%s/ledger.json", rep->dir);
        return json_pack("{s:s,s:I}", "file", file, "call_index", (json_int_t)ev->index);
    case EVID_AGENT_OUT:
        snprintf(file, sizeof(file), "%s/agent.out", rep->dir);
        j = json_pack("{s:s}", "file", file);
        if (ev->offset >= 0)
            json_object_set_new(j, "offset", json_integer(ev->offset));
        return j;
    case EVID_FILE:
        snprintf(file, sizeof(file), "%s/%s", rep->dir, ev->file);
        return json_pack("{s:s}", "file", file);
    default:
        return NULL;
    }
}

static json_t *rule_json(const struct rundir_rep *rep, const struct score_rule *o)
{
    json_t *j = json_pack("{s:s,s:s,s:o}", "id", o->id, "result", rules_result_name(o->out.result),
                          "reason", jstr(o->out.reason));
    json_t *ev = evid_json(rep, &o->out.ev);
    if (ev)
        json_object_set_new(j, "evidence", ev);
    if (o->probe && o->probe->has_value)
        json_object_set_new(j, "value", json_real(o->probe->value));
    if (o->decl) {
        const struct rundir_world_inv *d = o->decl;
        json_t *params = json_object();
        if (d->collection[0])
            json_object_set_new(params, "collection", json_string(d->collection));
        if (d->kind == RUNDIR_INV_UNIQUE)
            json_object_set_new(params, "key", json_string(d->key));
        if (d->kind == RUNDIR_INV_COUNT) {
            if (d->min >= 0)
                json_object_set_new(params, "min", json_integer(d->min));
            if (d->max >= 0)
                json_object_set_new(params, "max", json_integer(d->max));
            json_object_set_new(params, "when_approved", json_boolean(d->when_approved));
        }
        json_object_set_new(j, "params", params);
    }
    return j;
}

static json_t *components_json(unsigned bits)
{
    json_t *a = json_array();
    for (unsigned b = 1; b <= EVKIND_SRC_AGENT; b <<= 1)
        if (bits & b)
            json_array_append_new(a, json_string(evkind_component_name(b)));
    return a;
}

/* Recovery metrics from the first fault (docs/scoring.md). */
static json_t *recovery_json(const struct repsum *s)
{
    if (!s->recovered)
        return json_pack("{s:b,s:I}", "recovered", 0, "calls", (json_int_t)s->rec_calls);
    return json_pack("{s:b,s:I,s:I,s:o}", "recovered", 1, "calls", (json_int_t)s->rec_calls,
                     "turns", (json_int_t)s->rec_turns, "seconds",
                     s->rec_ms >= 0 ? json_real(score_round((double)s->rec_ms / 1000.0, 3))
                                    : json_null());
}

static json_t *rep_json(const struct score_rep *sr)
{
    const struct rundir_rep *rep = sr->rep;
    const struct repsum *s = &sr->sum;
    json_t *j = json_object(), *a;

    json_object_set_new(j, "rep", json_integer(rep->index));
    json_object_set_new(j, "dir", json_string(rep->dir));
    json_object_set_new(j, "faulted", json_boolean(rep->faulted));
    json_object_set_new(j, "status", json_string(rules_rep_status_name(sr->status)));
    if (sr->status_reason[0])
        json_object_set_new(j, "status_reason", jstr(sr->status_reason));
    if (!sr->evaluated)
        return j;
    json_object_set_new(j, "run", jstr(rep->run_id));
    json_object_set_new(j, "canary", jstr(rep->canary));
    json_object_set_new(j, "events", json_integer(s->events));
    json_object_set_new(j, "malformed", json_integer(s->malformed));
    json_object_set_new(j, "plan_loaded", components_json(s->loaded));
    json_object_set_new(j, "verify_exit",
                        s->verify_known && s->verify_has_exit ? json_integer(s->verify_exit)
                                                              : json_null());
    json_object_set_new(j, "cost_usd",
                        cost_known(s) ? jreal(score_round(s->cost, 6)) : json_null());
    json_object_set_new(j, "faults_fired", json_integer(s->faults_fired));
    if (rep->faulted) {
        a = json_array();
        for (size_t p = 0; p < sr->nprobes; p++)
            json_array_append_new(a, rule_json(rep, &sr->probes[p]));
        json_object_set_new(j, "probes", a);
        if (s->faults_fired > 0)
            json_object_set_new(j, "recovery", recovery_json(s));
    }
    a = json_array();
    for (size_t k = 0; k < sr->ninvs; k++)
        json_array_append_new(a, rule_json(rep, &sr->invs[k]));
    json_object_set_new(j, "invariants", a);
    json_object_set_new(j, "outcome", json_string(rules_outcome_name(sr->outcome)));
    a = json_array();
    for (size_t k = 0; k < sr->nreasons; k++)
        json_array_append_new(a, jstr(sr->reasons[k]));
    json_object_set_new(j, "outcome_reasons", a);
    return j;
}

static json_t *probe_agg_json(const struct score_result *res, size_t p)
{
    const struct score_probe_agg *pa = &res->probes[p];
    const struct rundir_probe *pr = pa->probe;
    json_t *pj = json_pack("{s:s,s:f,s:I,s:I}", "id", pr->id, "weight", pr->weight, "evaluated",
                           (json_int_t)pa->agg.evaluated, "passed", (json_int_t)pa->agg.passed);
    json_t *ne = json_array();

    if (pr->has_value)
        json_object_set_new(pj, "value", json_real(pr->value));
    if (pa->agg.evaluated > 0) {
        json_object_set_new(pj, "pass_rate", json_real(pa->rate));
        json_object_set_new(pj, "wilson", json_pack("[f,f]", pa->lo, pa->hi));
        json_object_set_new(pj, "pass_k", json_boolean(pa->agg.passed == pa->agg.evaluated));
    } else {
        json_object_set_new(pj, "pass_rate", json_null());
        json_object_set_new(pj, "wilson", json_null());
        json_object_set_new(pj, "pass_k", json_false());
    }
    for (size_t i = 0; i < res->run.nreps; i++) {
        const struct score_rep *sr = &res->reps[i];
        if (!sr->evaluated || p >= sr->nprobes || sr->probes[p].out.result != RULE_NOT_EVALUATED)
            continue;
        json_array_append_new(ne, json_pack("{s:s,s:o}", "dir", sr->rep->dir, "reason",
                                            jstr(sr->probes[p].out.reason)));
    }
    json_object_set_new(pj, "not_evaluated", ne);
    return pj;
}

static json_t *warning_json(const struct score_result *res, const struct score_warning *w)
{
    json_t *j = json_pack("{s:s,s:o}", "code", w->code, "message", jstr(w->message));
    json_t *a;

    if (w->has_fault) {
        json_object_set_new(j, "fault_index", json_integer(w->fault_index));
        json_object_set_new(j, "fault", json_string(w->fault));
    }
    if (w->injectors)
        json_object_set_new(j, "injectors", components_json(w->injectors));
    if (w->has_count)
        json_object_set_new(j, "count", json_integer(w->count));
    switch (w->reps_kind) {
    case SCORE_WREPS_DIRS:
        a = json_array();
        for (size_t i = 0; i < res->run.nreps; i++)
            if (w->per_rep[i])
                json_array_append_new(a, json_string(res->run.reps[i].dir));
        json_object_set_new(j, "reps", a);
        break;
    case SCORE_WREPS_COUNTS:
        a = json_object();
        for (size_t i = 0; i < res->run.nreps; i++)
            if (w->per_rep[i] > 0)
                json_object_set_new(a, res->run.reps[i].dir, json_integer(w->per_rep[i]));
        json_object_set_new(j, "reps", a);
        break;
    case SCORE_WREPS_NONE:
        break;
    }
    return j;
}

json_t *score_render_json(const struct score_result *res)
{
    const struct rundir *r = &res->run;
    json_t *out = json_object(), *a;

    json_object_set_new(out, "format", json_integer(1));
    json_object_set_new(
        out, "experiment",
        json_pack("{s:s,s:s,s:i}", "name", r->name, "hash", r->hash, "repeat", r->repeat));
    json_object_set_new(out, "status",
                        json_string(r->status == RUNDIR_RUN_COMPLETE  ? "complete"
                                    : r->status == RUNDIR_RUN_ABORTED ? "aborted"
                                                                      : "error"));
    if (r->error[0])
        json_object_set_new(out, "error", jstr(r->error));
    json_object_set_new(out, "verdict",
                        json_pack("{s:s,s:i,s:o}", "verdict", score_verdict_name(res->verdict),
                                  "exit_code", (int)res->verdict, "reason",
                                  jstr(res->verdict_reason)));
    json_object_set_new(out, "resilience_score",
                        res->has_score ? json_real(res->score) : json_null());
    json_object_set_new(out, "score_weight_share",
                        res->has_score && res->weight_total > 0
                            ? json_real(score_round(res->weight_sum / res->weight_total, 4))
                            : json_null());
    a = json_array();
    for (size_t p = 0; p < r->nprobes; p++)
        json_array_append_new(a, probe_agg_json(res, p));
    json_object_set_new(out, "probes", a);
    a = json_array();
    for (size_t k = 0; k < res->ninvs; k++) {
        const struct score_inv_agg *ia = &res->invs[k];
        json_t *ij =
            json_pack("{s:s,s:I,s:I,s:I}", "id", ia->id, "evaluated", (json_int_t)ia->agg.evaluated,
                      "passed", (json_int_t)ia->agg.passed, "failed", (json_int_t)ia->agg.failed);
        if (ia->decl && ia->decl->collection[0])
            json_object_set_new(ij, "collection", json_string(ia->decl->collection));
        json_array_append_new(a, ij);
    }
    json_object_set_new(out, "invariants", a);
    a = json_object();
    for (int k = 0; k < OUTCOME_N; k++)
        json_object_set_new(a, rules_outcome_name((enum rules_outcome)k),
                            json_integer(res->outcomes[k]));
    json_object_set_new(out, "outcomes", a);
    json_object_set_new(out, "malformed_events", json_integer(res->malformed));
    a = json_array();
    for (size_t i = 0; i < r->nreps; i++)
        json_array_append_new(a, rep_json(&res->reps[i]));
    json_object_set_new(out, "repetitions", a);
    a = json_array();
    for (size_t k = 0; k < res->nwarnings; k++)
        json_array_append_new(a, warning_json(res, &res->warnings[k]));
    json_object_set_new(out, "warnings", a);
    return out;
}

int score_dump(const json_t *result, struct buf *out)
{
    char *s = json_dumps(result, JSON_SORT_KEYS | JSON_INDENT(2) | JSON_REAL_PRECISION(12));
    int rc;
    if (s == NULL)
        return ERR_NOMEM;
    rc = buf_adds(out, s);
    if (rc == 0)
        rc = buf_addc(out, '\n');
    free(s);
    return rc;
}

/* ---- text ---- */

void score_render_text(const struct score_result *res, struct buf *out)
{
    const struct rundir *r = &res->run;

    buf_addf(out, "%s: %s (exit %d): %s\n", r->name, score_verdict_name(res->verdict),
             (int)res->verdict, res->verdict_reason);
    if (res->has_score)
        buf_addf(out, "resilience score: %.2f over %.0f%% of the weight\n", res->score,
                 res->weight_total > 0 ? res->weight_sum / res->weight_total * 100.0 : 0.0);
    else
        buf_addf(out, "resilience score: none\n");
    buf_addf(out, "\nprobes (faulted repetitions):\n");
    for (size_t p = 0; p < r->nprobes; p++) {
        const struct score_probe_agg *pa = &res->probes[p];
        buf_addf(out, "  %-24s weight %-4g %ld/%ld passed", pa->probe->id, pa->probe->weight,
                 pa->agg.passed, pa->agg.evaluated);
        if (pa->agg.evaluated > 0)
            buf_addf(out, "  rate %.4f  95%% [%.4f, %.4f]%s", pa->rate, pa->lo, pa->hi,
                     pa->agg.passed == pa->agg.evaluated ? "  pass^k" : "");
        else
            buf_addf(out, "  not evaluated");
        buf_addc(out, '\n');
    }
    buf_addf(out, "\nrepetitions:\n");
    for (size_t i = 0; i < r->nreps; i++) {
        const struct score_rep *sr = &res->reps[i];
        buf_addf(out, "  %s %-8s %-9s %s\n", sr->rep->dir,
                 sr->rep->faulted ? "faulted" : "baseline", rules_rep_status_name(sr->status),
                 sr->evaluated ? rules_outcome_name(sr->outcome) : "");
        if (sr->status_reason[0])
            buf_addf(out, "      %s\n", sr->status_reason);
        if (!sr->evaluated)
            continue;
        for (size_t k = 0; k < sr->nprobes; k++)
            if (sr->probes[k].out.result != RULE_PASS)
                buf_addf(out, "      probe %s: %s: %s\n", sr->probes[k].id,
                         rules_result_name(sr->probes[k].out.result), sr->probes[k].out.reason);
        for (size_t k = 0; k < sr->ninvs; k++)
            if (sr->invs[k].out.result == RULE_FAIL)
                buf_addf(out, "      invariant %s: fail: %s\n", sr->invs[k].id,
                         sr->invs[k].out.reason);
    }
    if (res->nwarnings > 0) {
        buf_addf(out, "\nwarnings:\n");
        for (size_t k = 0; k < res->nwarnings; k++)
            buf_addf(out, "  %s: %s\n", res->warnings[k].code, res->warnings[k].message);
    }
}
