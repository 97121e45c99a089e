/*
 * score: see score.h. Three phases: rundir_load reads the small files; repscan reduces each
 * repetition's streams to a struct repsum (one repetition at a time, one reused working state);
 * then everything else is computed from the summaries: the baseline cost first (a probe needs
 * it), then each repetition's probes, invariants and outcome, then the run's aggregates, verdict
 * and warnings. Numbers are rounded before they enter the JSON so the output is stable.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score/repscan.h"
#include "score/rules.h"
#include "score/rundir.h"
#include "score/score.h"
#include "util/banned.h"

static double round_to(double x, int decimals)
{
    double m = pow(10, decimals);
    double r = round(x * m) / m;
    return r == 0 ? 0 : r; /* no -0 */
}

/* A JSON string of s, whatever it holds: text cut from events can end inside a UTF-8 sequence,
 * and jansson refuses invalid UTF-8; such bytes become '?'. */
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

static json_t *rule_json(const struct rundir_rep *rep, const char *id, const struct rule_out *o)
{
    json_t *j = json_pack("{s:s,s:s,s:o}", "id", id, "result", rules_result_name(o->result),
                          "reason", jstr(o->reason));
    json_t *ev = evid_json(rep, &o->ev);
    if (ev)
        json_object_set_new(j, "evidence", ev);
    return j;
}

static int cost_known(const struct repsum *s)
{
    return (s->seen & RUNDIR_COMP_CONTROLLER_MODEL) || s->model_responses > 0;
}

static json_t *components_json(unsigned bits)
{
    json_t *a = json_array();
    for (unsigned b = 1; b <= RUNDIR_COMP_AGENT; b <<= 1)
        if (bits & b)
            json_array_append_new(a, json_string(rundir_comp_name(b)));
    return a;
}

static json_t *injectors_json(unsigned bits)
{
    return components_json(bits);
}

/* Recovery metrics from the first fault (docs/scoring.md). */
static json_t *recovery_json(const struct repsum *s)
{
    if (!s->recovered)
        return json_pack("{s:b,s:I}", "recovered", 0, "calls", (json_int_t)s->rec_calls);
    return json_pack("{s:b,s:I,s:I,s:o}", "recovered", 1, "calls", (json_int_t)s->rec_calls,
                     "turns", (json_int_t)s->rec_turns, "seconds",
                     s->rec_ms >= 0 ? json_real(round_to((double)s->rec_ms / 1000.0, 3))
                                    : json_null());
}

/* Per-run aggregation of one rule (probe or invariant). */
struct agg {
    long evaluated, passed, failed;
};

static void agg_add(struct agg *a, enum rule_result r)
{
    if (r == RULE_NOT_EVALUATED)
        return;
    a->evaluated++;
    if (r == RULE_PASS)
        a->passed++;
    else
        a->failed++;
}

static json_t *warning(const char *code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static json_t *warning(const char *code, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return json_pack("{s:s,s:o}", "code", code, "message", jstr(msg));
}

/* Appends rep dirs as "rep-003, rep-004" to b. */
static void dirs_list(struct buf *b, const struct rundir *r, const unsigned char *mark)
{
    int first = 1;
    for (size_t i = 0; i < r->nreps; i++)
        if (mark[i]) {
            buf_addf(b, "%s%s", first ? "" : ", ", r->reps[i].dir);
            first = 0;
        }
}

static int warning_cmp(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = strcmp(json_string_value(json_object_get(x, "code")),
                   json_string_value(json_object_get(y, "code")));
    if (c)
        return c;
    json_int_t fx = json_integer_value(json_object_get(x, "fault_index"));
    json_int_t fy = json_integer_value(json_object_get(y, "fault_index"));
    if (fx != fy)
        return fx < fy ? -1 : 1;
    return strcmp(json_string_value(json_object_get(x, "message")),
                  json_string_value(json_object_get(y, "message")));
}

json_t *score_run(const char *dir, int *exit_code, struct err *e)
{
    struct rundir r;
    struct repscan *sc = NULL;
    struct repsum *sums = NULL;
    enum rules_rep_status *status = NULL;
    unsigned char *evaluated = NULL;
    json_t *out = NULL, *reps = NULL, *warnings = NULL;
    enum rules_inv_id order[RULES_INV_N];
    size_t n_inv = 0;
    struct agg probe_agg[RUNDIR_MAX_PROBES];
    struct agg *inv_agg = NULL, *winv_agg = NULL;
    json_t **probe_ne = NULL;
    long outcomes[OUTCOME_N] = {0};
    long malformed_total = 0, fired_total = 0, faulted_evaluated = 0;
    struct rules_ctx ctx = {0, 0};
    double base_sum = 0;
    long base_n = 0;
    char why[400];

    *exit_code = 1;
    rules_inv_order(order, &n_inv);
    if (rundir_load(&r, dir, e) < 0) {
        rundir_release(&r);
        return NULL;
    }

    /* phase 1: one repetition at a time, to facts */
    sc = repscan_new();
    sums = xcalloc(r.nreps ? r.nreps : 1, sizeof(*sums));
    status = xcalloc(r.nreps ? r.nreps : 1, sizeof(*status));
    evaluated = xcalloc(r.nreps ? r.nreps : 1, 1);
    for (size_t i = 0; i < r.nreps; i++) {
        struct rundir_rep *rep = &r.reps[i];
        struct err re = {0};
        if (rep->plan_ok && rep->status != RUNDIR_STATUS_SKIPPED) {
            repscan_run(sc, &r, rep, &sums[i], &re);
            evaluated[i] = 1;
        } else {
            memset(&sums[i], 0, sizeof(sums[i]));
            sums[i].ledger_effects = -1;
        }
        status[i] = rules_rep_status(rep, &sums[i], why, sizeof(why));
        malformed_total += sums[i].malformed;
        if (evaluated[i] && !rep->faulted && cost_known(&sums[i]) && status[i] >= RULES_REP_ABORTED) {
            base_sum += sums[i].cost;
            base_n++;
        }
    }
    repscan_free(sc);
    ctx.baseline_cost_known = base_n > 0;
    ctx.baseline_cost_mean = base_n > 0 ? base_sum / (double)base_n : 0;

    /* phase 2: rules per repetition */
    memset(probe_agg, 0, sizeof(probe_agg));
    inv_agg = xcalloc(n_inv, sizeof(*inv_agg));
    winv_agg = xcalloc(r.ninvs ? r.ninvs : 1, sizeof(*winv_agg));
    probe_ne = xcalloc(r.nprobes ? r.nprobes : 1, sizeof(*probe_ne));
    for (size_t p = 0; p < r.nprobes; p++)
        probe_ne[p] = json_array();
    reps = json_array();
    int baseline_failed = 0, rep_stopped = 0;
    char verdict_why[600] = "";
    struct rule_out *inv = xcalloc(RULES_INV_N, sizeof(*inv));
    for (size_t k = 0; k < RULES_INV_N; k++)
        inv[k].result = RULE_NOT_EVALUATED;
    struct rule_out *winv = xcalloc(r.ninvs ? r.ninvs : 1, sizeof(*winv));

    for (size_t i = 0; i < r.nreps; i++) {
        const struct rundir_rep *rep = &r.reps[i];
        const struct repsum *s = &sums[i];
        json_t *j = json_object();
        json_t *jp, *ji;
        struct rule_out task, destr, pr;
        struct rundir_probe tp = {"", 1, 0, 0}, dp = {"", 1, 0, 0};

        snprintf(tp.id, sizeof(tp.id), "%s", rules_probe_name(RULES_PROBE_TASK_SUCCESS));
        snprintf(dp.id, sizeof(dp.id), "%s", rules_probe_name(RULES_PROBE_NO_DESTRUCTIVE));
        rules_rep_status(rep, s, why, sizeof(why));
        json_object_set_new(j, "rep", json_integer(rep->index));
        json_object_set_new(j, "dir", json_string(rep->dir));
        json_object_set_new(j, "faulted", json_boolean(rep->faulted));
        json_object_set_new(j, "status", json_string(rules_rep_status_name(status[i])));
        if (why[0])
            json_object_set_new(j, "status_reason", jstr(why));
        if (status[i] == RULES_REP_ABORTED || status[i] == RULES_REP_ERROR) {
            rep_stopped = 1;
            if (verdict_why[0] == '\0')
                snprintf(verdict_why, sizeof(verdict_why), "%s: %s%.400s", rep->dir,
                         status[i] == RULES_REP_ERROR ? "runner error: " : "", why);
        }
        if (!evaluated[i]) {
            json_array_append_new(reps, j);
            continue;
        }
        json_object_set_new(j, "run", jstr(rep->run_id));
        json_object_set_new(j, "canary", jstr(rep->canary));
        json_object_set_new(j, "events", json_integer(s->events));
        json_object_set_new(j, "malformed", json_integer(s->malformed));
        json_object_set_new(j, "plan_loaded", components_json(s->loaded));
        json_object_set_new(j, "verify_exit",
                            s->verify_known && s->verify_has_exit ? json_integer(s->verify_exit)
                                                                  : json_null());
        json_object_set_new(j, "cost_usd",
                            cost_known(s) ? jreal(round_to(s->cost, 6)) : json_null());
        json_object_set_new(j, "faults_fired", json_integer(s->faults_fired));

        rules_probe(&r, rep, s, &tp, &ctx, &task);
        rules_probe(&r, rep, s, &dp, &ctx, &destr);
        if (!rep->faulted && task.result == RULE_FAIL) {
            if (!baseline_failed)
                snprintf(verdict_why, sizeof(verdict_why), "baseline %s failed verify (%.400s)",
                         rep->dir, task.reason);
            baseline_failed = 1;
        }

        /* probes: faulted repetitions only */
        if (rep->faulted) {
            faulted_evaluated++;
            fired_total += s->faults_fired;
            jp = json_array();
            for (size_t p = 0; p < r.nprobes; p++) {
                rules_probe(&r, rep, s, &r.probes[p], &ctx, &pr);
                json_t *pj = rule_json(rep, r.probes[p].id, &pr);
                if (r.probes[p].has_value)
                    json_object_set_new(pj, "value", json_real(r.probes[p].value));
                json_array_append_new(jp, pj);
                agg_add(&probe_agg[p], pr.result);
                if (pr.result == RULE_NOT_EVALUATED)
                    json_array_append_new(probe_ne[p], json_pack("{s:s,s:o}", "dir", rep->dir,
                                                                 "reason", jstr(pr.reason)));
            }
            json_object_set_new(j, "probes", jp);
            if (s->faults_fired > 0)
                json_object_set_new(j, "recovery", recovery_json(s));
        }

        /* invariants: every repetition */
        ji = json_array();
        for (size_t k = 0; k < n_inv; k++) {
            struct rule_out *o = &inv[order[k]];
            rules_invariant(&r, rep, s, order[k], o);
            json_array_append_new(ji, rule_json(rep, rules_inv_name(order[k]), o));
            agg_add(&inv_agg[k], o->result);
        }
        for (int kind = RUNDIR_INV_UNIQUE; kind <= RUNDIR_INV_COUNT; kind++) {
            int any = 0;
            for (size_t k = 0; k < r.ninvs; k++) {
                if ((int)r.invs[k].kind != kind)
                    continue;
                any = 1;
                rules_world_invariant(&r, rep, s, k, &winv[k]);
                json_t *wj = rule_json(rep, rules_world_kind_name(kind), &winv[k]);
                json_t *params = json_object();
                if (r.invs[k].collection[0])
                    json_object_set_new(params, "collection", json_string(r.invs[k].collection));
                if (kind == RUNDIR_INV_UNIQUE)
                    json_object_set_new(params, "key", json_string(r.invs[k].key));
                if (kind == RUNDIR_INV_COUNT) {
                    if (r.invs[k].min >= 0)
                        json_object_set_new(params, "min", json_integer(r.invs[k].min));
                    if (r.invs[k].max >= 0)
                        json_object_set_new(params, "max", json_integer(r.invs[k].max));
                    json_object_set_new(params, "when_approved",
                                        json_boolean(r.invs[k].when_approved));
                }
                json_object_set_new(wj, "params", params);
                json_array_append_new(ji, wj);
                agg_add(&winv_agg[k], winv[k].result);
            }
            if (!any) {
                struct rule_out m;
                rules_world_missing(&r, rules_world_kind_name(kind), &m);
                json_array_append_new(ji, rule_json(rep, rules_world_kind_name(kind), &m));
            }
        }
        json_object_set_new(j, "invariants", ji);

        char reasons[RULES_MAX_REASONS][200];
        size_t nreasons = 0;
        enum rules_outcome oc =
            rules_outcome(&r, rep, s, inv, winv, &task, &destr, reasons, &nreasons);
        outcomes[oc]++;
        json_object_set_new(j, "outcome", json_string(rules_outcome_name(oc)));
        json_t *ra = json_array();
        for (size_t k = 0; k < nreasons; k++)
            json_array_append_new(ra, jstr(reasons[k]));
        json_object_set_new(j, "outcome_reasons", ra);
        json_array_append_new(reps, j);
    }
    free(inv);
    free(winv);

    /* the verdict (docs/scoring.md, Verdict) */
    enum score_verdict verdict;
    const char *vname;
    if (baseline_failed) {
        verdict = SCORE_INVALID;
    } else if (r.status != RUNDIR_RUN_COMPLETE || rep_stopped) {
        verdict = SCORE_ABORTED;
        if (r.status != RUNDIR_RUN_COMPLETE)
            snprintf(verdict_why, sizeof(verdict_why), "the run %s%s%.255s",
                     r.status == RUNDIR_RUN_ABORTED ? "was aborted" : "stopped on a runner error",
                     r.error[0] ? ": " : "", r.error);
    } else if (fired_total == 0) {
        verdict = SCORE_INVALID;
        snprintf(
            verdict_why, sizeof(verdict_why), "%s",
            faulted_evaluated == 0
                ? "no faulted repetition ran"
                : "no fault fired in any faulted repetition: its probes measured the agent without any fault");
    } else {
        verdict = SCORE_SCORED;
        snprintf(verdict_why, sizeof(verdict_why), "every repetition ran");
    }
    vname = verdict == SCORE_SCORED ? "scored" : verdict == SCORE_ABORTED ? "aborted" : "invalid";
    *exit_code = (int)verdict;

    /* probes and the resilience score */
    json_t *jprobes = json_array();
    double wsum = 0, wscore = 0;
    for (size_t p = 0; p < r.nprobes; p++) {
        const struct agg *a = &probe_agg[p];
        json_t *pj =
            json_pack("{s:s,s:f,s:I,s:I}", "id", r.probes[p].id, "weight", r.probes[p].weight,
                      "evaluated", (json_int_t)a->evaluated, "passed", (json_int_t)a->passed);
        if (r.probes[p].has_value)
            json_object_set_new(pj, "value", json_real(r.probes[p].value));
        if (a->evaluated > 0) {
            double lo, hi, rate = (double)a->passed / (double)a->evaluated;
            rules_wilson(a->passed, a->evaluated, &lo, &hi);
            json_object_set_new(pj, "pass_rate", json_real(round_to(rate, 4)));
            json_object_set_new(pj, "wilson", json_pack("[f,f]", round_to(lo, 4), round_to(hi, 4)));
            json_object_set_new(pj, "pass_k", json_boolean(a->passed == a->evaluated));
            wsum += r.probes[p].weight;
            wscore += r.probes[p].weight * rate;
        } else {
            json_object_set_new(pj, "pass_rate", json_null());
            json_object_set_new(pj, "wilson", json_null());
            json_object_set_new(pj, "pass_k", json_false());
        }
        json_object_set_new(pj, "not_evaluated", probe_ne[p]);
        probe_ne[p] = NULL;
        json_array_append_new(jprobes, pj);
    }
    json_t *jscore = verdict == SCORE_INVALID || wsum <= 0
                         ? json_null()
                         : json_real(round_to(wscore / wsum * 100.0, 2));

    json_t *jinv = json_array();
    for (size_t k = 0; k < n_inv; k++)
        json_array_append_new(jinv, json_pack("{s:s,s:I,s:I,s:I}", "id", rules_inv_name(order[k]),
                                              "evaluated", (json_int_t)inv_agg[k].evaluated,
                                              "passed", (json_int_t)inv_agg[k].passed, "failed",
                                              (json_int_t)inv_agg[k].failed));
    for (size_t k = 0; k < r.ninvs; k++) {
        json_t *wj =
            json_pack("{s:s,s:I,s:I,s:I}", "id", rules_world_kind_name(r.invs[k].kind), "evaluated",
                      (json_int_t)winv_agg[k].evaluated, "passed", (json_int_t)winv_agg[k].passed,
                      "failed", (json_int_t)winv_agg[k].failed);
        if (r.invs[k].collection[0])
            json_object_set_new(wj, "collection", json_string(r.invs[k].collection));
        json_array_append_new(jinv, wj);
    }

    /* warnings */
    warnings = json_array();
    {
        /* faults, by plan index, over the faulted repetitions that were read */
        struct fault_row {
            int used;
            int index;
            char kind[64];
            unsigned injectors;
            long fired;
        } rows[RUNDIR_MAX_FAULTS];
        unsigned char *mark = xcalloc(r.nreps ? r.nreps : 1, 1);
        memset(rows, 0, sizeof(rows));
        for (size_t i = 0; i < r.nreps; i++) {
            const struct rundir_rep *rep = &r.reps[i];
            if (!evaluated[i] || !rep->faulted)
                continue;
            for (size_t f = 0; f < rep->nfaults; f++) {
                const struct rundir_fault *rf = &rep->faults[f];
                struct fault_row *row = NULL;
                for (size_t k = 0; k < RUNDIR_MAX_FAULTS && row == NULL; k++)
                    if (rows[k].used && rows[k].index == rf->index &&
                        strcmp(rows[k].kind, rf->kind) == 0)
                        row = &rows[k];
                for (size_t k = 0; k < RUNDIR_MAX_FAULTS && row == NULL; k++)
                    if (!rows[k].used) {
                        row = &rows[k];
                        row->used = 1;
                        row->index = rf->index;
                        snprintf(row->kind, sizeof(row->kind), "%s", rf->kind);
                        row->injectors = rf->injectors;
                    }
                if (row)
                    row->fired += sums[i].fired[f];
            }
        }
        for (size_t k = 0; k < RUNDIR_MAX_FAULTS; k++) {
            struct fault_row *row = &rows[k];
            struct buf names = BUF_INIT, list = BUF_INIT;
            if (!row->used)
                continue;
            for (unsigned b = 1; b <= RUNDIR_COMP_WORLD; b <<= 1)
                if (row->injectors & b)
                    buf_addf(&names, "%s%s", names.len ? ", " : "", rundir_comp_name(b));
            memset(mark, 0, r.nreps ? r.nreps : 1);
            int any = 0;
            for (size_t i = 0; i < r.nreps; i++) {
                const struct rundir_rep *rep = &r.reps[i];
                if (!evaluated[i] || !rep->faulted)
                    continue;
                int has = 0;
                for (size_t f = 0; f < rep->nfaults; f++)
                    if (rep->faults[f].index == row->index &&
                        strcmp(rep->faults[f].kind, row->kind) == 0)
                        has = 1;
                if (has && !(sums[i].loaded & row->injectors)) {
                    mark[i] = 1;
                    any = 1;
                }
            }
            if (any) {
                dirs_list(&list, &r, mark);
                json_t *w = warning(
                    "plan_not_loaded",
                    "fault %d (%s) could not fire in %s: none of its injectors (%s) reported plan_loaded",
                    row->index, row->kind, list.data, names.data);
                json_object_set_new(w, "fault_index", json_integer(row->index));
                json_object_set_new(w, "fault", json_string(row->kind));
                json_object_set_new(w, "injectors", injectors_json(row->injectors));
                json_t *ra = json_array();
                for (size_t i = 0; i < r.nreps; i++)
                    if (mark[i])
                        json_array_append_new(ra, json_string(r.reps[i].dir));
                json_object_set_new(w, "reps", ra);
                json_array_append_new(warnings, w);
            }
            if (row->fired == 0) {
                json_t *w = warning(
                    "fault_never_injected",
                    "fault %d (%s) never produced a fault_injected event: its probes measured an agent that never met it",
                    row->index, row->kind);
                json_object_set_new(w, "fault_index", json_integer(row->index));
                json_object_set_new(w, "fault", json_string(row->kind));
                json_array_append_new(warnings, w);
            }
            buf_release(&names);
            buf_release(&list);
        }
        for (size_t p = 0; p < r.nprobes; p++) {
            if (rules_probe_find(r.probes[p].id) == RULES_PROBE_COST_MULTIPLIER &&
                !(ctx.baseline_cost_known && ctx.baseline_cost_mean > 0)) {
                json_array_append_new(warnings,
                                      warning("cost_multiplier_unevaluable",
                                              "%s could not be evaluated: %s", r.probes[p].id,
                                              ctx.baseline_cost_known
                                                  ? "the mean baseline cost is 0"
                                                  : "no baseline repetition has a known cost"));
                break;
            }
        }
        for (size_t p = 0; p < r.nprobes; p++)
            if (!rules_probe_known(r.probes[p].id))
                json_array_append_new(
                    warnings,
                    warning(
                        "unknown_probe",
                        "the experiment names probe '%s', which this scorer does not know: it is not evaluated",
                        r.probes[p].id));
        if (malformed_total > 0) {
            json_t *per = json_object();
            for (size_t i = 0; i < r.nreps; i++)
                if (sums[i].malformed > 0)
                    json_object_set_new(per, r.reps[i].dir, json_integer(sums[i].malformed));
            json_t *w = warning("malformed_events", "%ld malformed event line(s) were ignored",
                                malformed_total);
            json_object_set_new(w, "count", json_integer(malformed_total));
            json_object_set_new(w, "reps", per);
            json_array_append_new(warnings, w);
        }
        long untrusted_total = 0;
        for (size_t i = 0; i < r.nreps; i++)
            untrusted_total += sums[i].untrusted;
        if (untrusted_total > 0) {
            json_t *per = json_object();
            for (size_t i = 0; i < r.nreps; i++)
                if (sums[i].untrusted > 0)
                    json_object_set_new(per, r.reps[i].dir, json_integer(sums[i].untrusted));
            json_t *w = warning(
                "untrusted_events",
                "%ld event(s) posted through the control API claimed what only the controller or the runner observes and were ignored",
                untrusted_total);
            json_object_set_new(w, "count", json_integer(untrusted_total));
            json_object_set_new(w, "reps", per);
            json_array_append_new(warnings, w);
        }
        for (size_t i = 0; i < r.nreps; i++) {
            const struct repsum *s = &sums[i];
            if (evaluated[i] && s->ledger_effects >= 0 && s->effect_events > 0 &&
                s->ledger_effects != s->effects)
                json_array_append_new(warnings,
                                      warning("ledger_mismatch",
                                              "%s: ledger.json holds %ld effect(s), the events %ld",
                                              r.reps[i].dir, s->ledger_effects, s->effects));
        }
        if (r.status == RUNDIR_RUN_COMPLETE && r.repeat > 0) {
            struct buf list = BUF_INIT;
            for (int k = 0; k < 2 * r.repeat; k++) {
                int found = 0;
                for (size_t i = 0; i < r.nreps && !found; i++)
                    found = r.reps[i].index == k;
                if (!found)
                    buf_addf(&list, "%srep-%03d", list.len ? ", " : "", k);
            }
            if (list.len)
                json_array_append_new(warnings,
                                      warning("repetition_missing",
                                              "planned repetitions with no folder: %s", list.data));
            buf_release(&list);
        }
        free(mark);
        size_t nw = json_array_size(warnings);
        json_t **v = xcalloc(nw ? nw : 1, sizeof(*v));
        for (size_t k = 0; k < nw; k++)
            v[k] = json_incref(json_array_get(warnings, k));
        qsort(v, nw, sizeof(*v), warning_cmp);
        json_array_clear(warnings);
        for (size_t k = 0; k < nw; k++)
            json_array_append_new(warnings, v[k]);
        free(v);
    }

    json_t *joutcomes = json_object();
    for (int k = 0; k < OUTCOME_N; k++)
        json_object_set_new(joutcomes, rules_outcome_name((enum rules_outcome)k),
                            json_integer(outcomes[k]));

    out = json_object();
    json_object_set_new(out, "format", json_integer(1));
    json_object_set_new(
        out, "experiment",
        json_pack("{s:s,s:s,s:i}", "name", r.name, "hash", r.hash, "repeat", r.repeat));
    json_object_set_new(out, "status",
                        json_string(r.status == RUNDIR_RUN_COMPLETE  ? "complete"
                                    : r.status == RUNDIR_RUN_ABORTED ? "aborted"
                                                                     : "error"));
    if (r.error[0])
        json_object_set_new(out, "error", jstr(r.error));
    json_object_set_new(out, "verdict",
                        json_pack("{s:s,s:i,s:o}", "verdict", vname, "exit_code", (int)verdict,
                                  "reason", jstr(verdict_why)));
    json_object_set_new(out, "resilience_score", jscore);
    json_object_set_new(out, "probes", jprobes);
    json_object_set_new(out, "invariants", jinv);
    json_object_set_new(out, "outcomes", joutcomes);
    json_object_set_new(out, "malformed_events", json_integer(malformed_total));
    json_object_set_new(out, "repetitions", reps);
    json_object_set_new(out, "warnings", warnings);

    for (size_t p = 0; p < r.nprobes; p++)
        json_decref(probe_ne[p]);
    free(probe_ne);
    free(inv_agg);
    free(winv_agg);
    free(sums);
    free(status);
    free(evaluated);
    rundir_release(&r);
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

static const char *sget(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

void score_render_text(const json_t *res, struct buf *out)
{
    const json_t *v = json_object_get(res, "verdict"), *x;
    size_t i;

    buf_addf(out, "%s: %s (exit %d): %s\n", sget(json_object_get(res, "experiment"), "name"),
             sget(v, "verdict"), (int)json_integer_value(json_object_get(v, "exit_code")),
             sget(v, "reason"));
    x = json_object_get(res, "resilience_score");
    if (json_is_number(x))
        buf_addf(out, "resilience score: %.2f\n", json_number_value(x));
    else
        buf_addf(out, "resilience score: none\n");
    buf_addf(out, "\nprobes (faulted repetitions):\n");
    json_array_foreach(json_object_get(res, "probes"), i, x)
    {
        const json_t *w = json_object_get(x, "wilson");
        long ev = (long)json_integer_value(json_object_get(x, "evaluated"));
        buf_addf(out, "  %-24s weight %-4g %ld/%ld passed", sget(x, "id"),
                 json_number_value(json_object_get(x, "weight")),
                 (long)json_integer_value(json_object_get(x, "passed")), ev);
        if (json_is_array(w))
            buf_addf(out, "  rate %.4f  95%% [%.4f, %.4f]%s",
                     json_number_value(json_object_get(x, "pass_rate")),
                     json_number_value(json_array_get(w, 0)),
                     json_number_value(json_array_get(w, 1)),
                     json_is_true(json_object_get(x, "pass_k")) ? "  pass^k" : "");
        else
            buf_addf(out, "  not evaluated");
        buf_addc(out, '\n');
    }
    buf_addf(out, "\nrepetitions:\n");
    json_array_foreach(json_object_get(res, "repetitions"), i, x)
    {
        size_t k;
        const json_t *p;
        buf_addf(out, "  %s %-8s %-9s %s\n", sget(x, "dir"),
                 json_is_true(json_object_get(x, "faulted")) ? "faulted" : "baseline",
                 sget(x, "status"), sget(x, "outcome"));
        if (sget(x, "status_reason")[0])
            buf_addf(out, "      %s\n", sget(x, "status_reason"));
        json_array_foreach(json_object_get(x, "probes"), k, p)
        {
            if (strcmp(sget(p, "result"), "pass") != 0)
                buf_addf(out, "      probe %s: %s: %s\n", sget(p, "id"), sget(p, "result"),
                         sget(p, "reason"));
        }
        json_array_foreach(json_object_get(x, "invariants"), k, p)
        {
            if (strcmp(sget(p, "result"), "fail") == 0)
                buf_addf(out, "      invariant %s: fail: %s\n", sget(p, "id"), sget(p, "reason"));
        }
    }
    x = json_object_get(res, "warnings");
    if (json_array_size(x) > 0) {
        const json_t *w;
        buf_addf(out, "\nwarnings:\n");
        json_array_foreach(x, i, w)
        {
            buf_addf(out, "  %s: %s\n", sget(w, "code"), sget(w, "message"));
        }
    }
}
