/*
 * score: see score.h. The four stages, each a function over struct score_result:
 *
 *   stage_scan       rundir_load has read the small files; repscan reduces each repetition's
 *                    streams to a struct repsum (one at a time, one reused working state) and
 *                    its status
 *   stage_rules      the baseline cost first (a probe needs it), then each repetition's
 *                    probes, invariants (in the catalog's order, then the world's) and outcome
 *   stage_aggregate  the run's pass rates with Wilson intervals, weighted probe rates,
 *                    outcome counts and warnings
 *   stage_verdict    the verdict and its reason, and the resilience score (none when invalid)
 *
 * Numbers are rounded when they are stored, so every renderer prints the same ones.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score/repscan.h"
#include "score/rules.h"
#include "score/rundir.h"
#include "score/score.h"
#include "util/utf8.h"
#include "util/banned.h"

double score_round(double x, int decimals)
{
    double m = pow(10, decimals);
    double r = round(x * m) / m;
    return r == 0 ? 0 : r; /* no -0 */
}

/* Text cut from events can end inside a UTF-8 sequence, and JSON strings must be valid: the
 * bytes of an invalid string become '?' (all of its non-ASCII bytes, as before renderers read
 * the struct). */
static void clean(char *s)
{
    if (utf8_valid(s, strlen(s)))
        return;
    for (unsigned char *p = (unsigned char *)s; *p; p++)
        if (*p >= 0x80)
            *p = '?';
}

static int cost_known(const struct repsum *s)
{
    return (s->seen & EVKIND_SRC_CONTROLLER_MODEL) || s->model_responses > 0;
}

/* ---- scan ---- */

static void stage_scan(struct score_result *res)
{
    struct rundir *r = &res->run;
    struct repscan *sc = repscan_new();

    for (size_t i = 0; i < r->nreps; i++) {
        struct score_rep *sr = &res->reps[i];
        const struct rundir_rep *rep = &r->reps[i];
        struct err re = {0};

        sr->rep = rep;
        if (rep->plan_ok && rep->status != RUNDIR_STATUS_SKIPPED) {
            /* a read error is the repetition's: sum.read_error, then its status */
            repscan_run(sc, r, rep, &sr->sum, &re);
            sr->evaluated = 1;
        } else {
            memset(&sr->sum, 0, sizeof(sr->sum));
            sr->sum.ledger_effects = -1;
        }
        sr->status = rules_rep_status(rep, &sr->sum, sr->status_reason, sizeof(sr->status_reason));
        clean(sr->status_reason);
    }
    repscan_free(sc);
}

/* ---- rules ---- */

static void put_rule(struct score_rule *out, const char *id, const struct rule_out *o,
                     const struct rundir_probe *probe, const struct rundir_world_inv *decl)
{
    out->id = id;
    out->out = *o;
    clean(out->out.reason);
    out->probe = probe;
    out->decl = decl;
}

static void rules_of_rep(struct score_result *res, struct score_rep *sr,
                         const enum rules_inv_id *order, size_t n_inv)
{
    const struct rundir *r = &res->run;
    const struct rundir_rep *rep = sr->rep;
    const struct repsum *s = &sr->sum;
    struct rule_out inv[RULES_INV_N], winv[RUNDIR_MAX_WORLD_INV], o;
    struct rundir_probe tp = {"", 1, 0, 0}, dp = {"", 1, 0, 0};

    snprintf(tp.id, sizeof(tp.id), "%s", rules_probe_name(RULES_PROBE_TASK_SUCCESS));
    snprintf(dp.id, sizeof(dp.id), "%s", rules_probe_name(RULES_PROBE_NO_DESTRUCTIVE));
    rules_probe(r, rep, s, &tp, &res->ctx, &sr->task);
    rules_probe(r, rep, s, &dp, &res->ctx, &sr->destructive);

    /* probes: faulted repetitions only */
    if (rep->faulted) {
        sr->probes = xcalloc(r->nprobes ? r->nprobes : 1, sizeof(*sr->probes));
        for (size_t p = 0; p < r->nprobes; p++) {
            rules_probe(r, rep, s, &r->probes[p], &res->ctx, &o);
            put_rule(&sr->probes[sr->nprobes++], r->probes[p].id, &o, &r->probes[p], NULL);
        }
    }

    /* invariants: every repetition; the world's after the others, by kind */
    sr->invs = xcalloc(n_inv + r->ninvs + 3, sizeof(*sr->invs));
    for (size_t k = 0; k < RULES_INV_N; k++)
        inv[k].result = RULE_NOT_EVALUATED;
    for (size_t k = 0; k < n_inv; k++) {
        rules_invariant(r, rep, s, order[k], &inv[order[k]]);
        put_rule(&sr->invs[sr->ninvs++], rules_inv_name(order[k]), &inv[order[k]], NULL, NULL);
    }
    for (int kind = RUNDIR_INV_UNIQUE; kind <= RUNDIR_INV_COUNT; kind++) {
        int any = 0;
        for (size_t k = 0; k < r->ninvs; k++) {
            if ((int)r->invs[k].kind != kind)
                continue;
            any = 1;
            rules_world_invariant(r, rep, s, k, &winv[k]);
            put_rule(&sr->invs[sr->ninvs++], rules_world_kind_name(kind), &winv[k], NULL,
                     &r->invs[k]);
        }
        if (!any) {
            rules_world_missing(r, rules_world_kind_name(kind), &o);
            put_rule(&sr->invs[sr->ninvs++], rules_world_kind_name(kind), &o, NULL, NULL);
        }
    }

    sr->outcome = rules_outcome(r, rep, s, inv, winv, &sr->task, &sr->destructive, sr->reasons,
                                &sr->nreasons);
    for (size_t k = 0; k < sr->nreasons; k++)
        clean(sr->reasons[k]);
    clean(sr->task.reason);
    clean(sr->destructive.reason);
}

static void stage_rules(struct score_result *res, const enum rules_inv_id *order, size_t n_inv)
{
    double base_sum = 0;
    long base_n = 0;

    /* the baseline cost: the mean over baseline repetitions that ran with a known cost */
    for (size_t i = 0; i < res->run.nreps; i++) {
        const struct score_rep *sr = &res->reps[i];
        if (sr->evaluated && !sr->rep->faulted && cost_known(&sr->sum) &&
            sr->status >= RULES_REP_ABORTED) {
            base_sum += sr->sum.cost;
            base_n++;
        }
    }
    res->ctx.baseline_cost_known = base_n > 0;
    res->ctx.baseline_cost_mean = base_n > 0 ? base_sum / (double)base_n : 0;

    for (size_t i = 0; i < res->run.nreps; i++)
        if (res->reps[i].evaluated)
            rules_of_rep(res, &res->reps[i], order, n_inv);
}

/* ---- aggregate ---- */

static void agg_add(struct score_agg *a, enum rule_result r)
{
    if (r == RULE_NOT_EVALUATED)
        return;
    a->evaluated++;
    if (r == RULE_PASS)
        a->passed++;
    else
        a->failed++;
}

static struct score_warning *warning(struct score_result *res, const char *code, const char *fmt,
                                     ...) __attribute__((format(printf, 3, 4)));
static struct score_warning *warning(struct score_result *res, const char *code, const char *fmt,
                                     ...)
{
    struct score_warning *w;
    va_list ap;

    res->warnings = xrealloc(res->warnings, (res->nwarnings + 1) * sizeof(*res->warnings));
    w = &res->warnings[res->nwarnings++];
    memset(w, 0, sizeof(*w));
    w->code = code;
    va_start(ap, fmt);
    vsnprintf(w->message, sizeof(w->message), fmt, ap);
    va_end(ap);
    clean(w->message);
    return w;
}

static int warning_cmp(const void *a, const void *b)
{
    const struct score_warning *x = a, *y = b;
    int c = strcmp(x->code, y->code);
    int fx = x->has_fault ? x->fault_index : 0, fy = y->has_fault ? y->fault_index : 0;
    if (c)
        return c;
    if (fx != fy)
        return (fx > fy) - (fx < fy);
    return strcmp(x->message, y->message);
}

/* Appends rep dirs as "rep-003, rep-004" to b. */
static void dirs_list(struct buf *b, const struct rundir *r, const long *mark)
{
    int first = 1;
    for (size_t i = 0; i < r->nreps; i++)
        if (mark[i]) {
            buf_addf(b, "%s%s", first ? "" : ", ", r->reps[i].dir);
            first = 0;
        }
}

/* Per fault of the plans (by index and kind), over the faulted repetitions that were read:
 * plan_not_loaded and fault_never_injected. */
static void warn_faults(struct score_result *res)
{
    const struct rundir *r = &res->run;
    struct fault_row {
        int used;
        int index;
        char kind[64];
        unsigned injectors;
        long fired;
    } rows[RUNDIR_MAX_FAULTS];
    size_t nmark = r->nreps ? r->nreps : 1;

    memset(rows, 0, sizeof(rows));
    for (size_t i = 0; i < r->nreps; i++) {
        const struct rundir_rep *rep = &r->reps[i];
        if (!res->reps[i].evaluated || !rep->faulted)
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
                row->fired += res->reps[i].sum.fired[f];
        }
    }
    for (size_t k = 0; k < RUNDIR_MAX_FAULTS; k++) {
        struct fault_row *row = &rows[k];
        struct buf names = BUF_INIT, list = BUF_INIT;
        long *mark;
        int any = 0;

        if (!row->used)
            continue;
        for (unsigned b = 1; b <= EVKIND_SRC_WORLD; b <<= 1)
            if (row->injectors & b)
                buf_addf(&names, "%s%s", names.len ? ", " : "", evkind_component_name(b));
        mark = xcalloc(nmark, sizeof(*mark));
        for (size_t i = 0; i < r->nreps; i++) {
            const struct rundir_rep *rep = &r->reps[i];
            int has = 0;
            if (!res->reps[i].evaluated || !rep->faulted)
                continue;
            for (size_t f = 0; f < rep->nfaults; f++)
                if (rep->faults[f].index == row->index &&
                    strcmp(rep->faults[f].kind, row->kind) == 0)
                    has = 1;
            if (has && !(res->reps[i].sum.loaded & row->injectors)) {
                mark[i] = 1;
                any = 1;
            }
        }
        if (any) {
            dirs_list(&list, r, mark);
            struct score_warning *w = warning(
                res, "plan_not_loaded",
                "fault %d (%s) could not fire in %s: none of its injectors (%s) reported plan_loaded",
                row->index, row->kind, list.data, names.data);
            w->has_fault = 1;
            w->fault_index = row->index;
            snprintf(w->fault, sizeof(w->fault), "%s", row->kind);
            w->injectors = row->injectors;
            w->reps_kind = SCORE_WREPS_DIRS;
            w->per_rep = mark;
            mark = NULL;
        }
        free(mark);
        /* fired where the agent could not see it: never a silent pass (issue 11) */
        mark = xcalloc(nmark, sizeof(*mark));
        any = 0;
        for (size_t i = 0; i < r->nreps; i++) {
            const struct rundir_rep *rep = &r->reps[i];
            if (!res->reps[i].evaluated || !rep->faulted)
                continue;
            for (size_t f = 0; f < rep->nfaults; f++)
                if (rep->faults[f].index == row->index &&
                    strcmp(rep->faults[f].kind, row->kind) == 0 &&
                    res->reps[i].sum.not_received[f]) {
                    mark[i] = 1;
                    any = 1;
                }
        }
        if (any) {
            buf_reset(&list);
            dirs_list(&list, r, mark);
            struct score_warning *w = warning(
                res, "fault_not_received",
                "fault %d (%s) was injected but the agent's model never received it in %s: no later model request carried its marker",
                row->index, row->kind, list.data);
            w->has_fault = 1;
            w->fault_index = row->index;
            snprintf(w->fault, sizeof(w->fault), "%s", row->kind);
            w->reps_kind = SCORE_WREPS_DIRS;
            w->per_rep = mark;
            mark = NULL;
        }
        free(mark);
        if (row->fired == 0) {
            struct score_warning *w = warning(
                res, "fault_never_injected",
                "fault %d (%s) never produced a fault_injected event: its probes measured an agent that never met it",
                row->index, row->kind);
            w->has_fault = 1;
            w->fault_index = row->index;
            snprintf(w->fault, sizeof(w->fault), "%s", row->kind);
        }
        buf_release(&names);
        buf_release(&list);
    }
}

/* A warning with a count per repetition (malformed_events, untrusted_events) when the total is
 * not 0; which count by its offset in struct repsum. */
static void warn_counts(struct score_result *res, const char *code, const char *fmt, size_t offset)
{
    const struct rundir *r = &res->run;
    long total = 0;
    long *per;

    for (size_t i = 0; i < r->nreps; i++)
        total += *(const long *)((const char *)&res->reps[i].sum + offset);
    if (total == 0)
        return;
    per = xcalloc(r->nreps ? r->nreps : 1, sizeof(*per));
    for (size_t i = 0; i < r->nreps; i++)
        per[i] = *(const long *)((const char *)&res->reps[i].sum + offset);
    struct score_warning *w = warning(res, code, fmt, total);
    w->has_count = 1;
    w->count = total;
    w->reps_kind = SCORE_WREPS_COUNTS;
    w->per_rep = per;
}

/* Every probe no faulted repetition evaluated, with its weight and the first reason given: the
 * score stands over the probes that were, and says over how much of the weight (issue 11). */
static void warn_probes_not_evaluated(struct score_result *res)
{
    const struct rundir *r = &res->run;

    for (size_t p = 0; p < r->nprobes; p++) {
        const char *why = NULL;
        if (res->probes[p].agg.evaluated > 0 || !rules_probe_known(r->probes[p].id))
            continue;
        if (rules_probe_find(r->probes[p].id) == RULES_PROBE_COST_MULTIPLIER &&
            !(res->ctx.baseline_cost_known && res->ctx.baseline_cost_mean > 0))
            continue; /* cost_multiplier_unevaluable (seed 000's own warning) says it */
        for (size_t i = 0; i < r->nreps && why == NULL; i++) {
            const struct score_rep *sr = &res->reps[i];
            if (sr->evaluated && p < sr->nprobes && sr->probes[p].out.reason[0])
                why = sr->probes[p].out.reason;
        }
        warning(res, "probe_not_evaluated",
                "probe %s (weight %g) was not evaluated in any faulted repetition: %.300s",
                r->probes[p].id, r->probes[p].weight, why ? why : "no faulted repetition ran");
    }
}

static void stage_warnings(struct score_result *res)
{
    const struct rundir *r = &res->run;

    warn_faults(res);
    for (size_t p = 0; p < r->nprobes; p++) {
        if (rules_probe_find(r->probes[p].id) == RULES_PROBE_COST_MULTIPLIER &&
            !(res->ctx.baseline_cost_known && res->ctx.baseline_cost_mean > 0)) {
            warning(res, "cost_multiplier_unevaluable", "%s could not be evaluated: %s",
                    r->probes[p].id,
                    res->ctx.baseline_cost_known ? "the mean baseline cost is 0"
                                                 : "no baseline repetition has a known cost");
            break;
        }
    }
    warn_probes_not_evaluated(res);
    for (size_t p = 0; p < r->nprobes; p++)
        if (!rules_probe_known(r->probes[p].id))
            warning(
                res, "unknown_probe",
                "the experiment names probe '%s', which this scorer does not know: it is not evaluated",
                r->probes[p].id);
    warn_counts(res, "malformed_events", "%ld malformed event line(s) were ignored",
                offsetof(struct repsum, malformed));
    warn_counts(
        res, "fault_refused",
        "%ld mutating fault decision(s) were refused because no sandbox was known: those calls went through unfaulted",
        offsetof(struct repsum, faults_refused));
    warn_counts(res, "fault_partly_visible",
                "%ld injected result change(s) reached the agent's model only in part (the "
                "result's structuredContent had no place for them: see docs/mcp-shim.md)",
                offsetof(struct repsum, faults_partly_visible));
    warn_counts(
        res, "untrusted_events",
        "%ld event(s) posted through the control API claimed what only the controller or the runner observes and were ignored",
        offsetof(struct repsum, untrusted));
    for (size_t i = 0; i < r->nreps; i++) {
        const struct repsum *s = &res->reps[i].sum;
        if (res->reps[i].evaluated && s->ledger_effects >= 0 && s->effect_events > 0 &&
            s->ledger_effects != s->effects)
            warning(res, "ledger_mismatch", "%s: ledger.json holds %ld effect(s), the events %ld",
                    r->reps[i].dir, s->ledger_effects, s->effects);
    }
    if (r->status == RUNDIR_RUN_COMPLETE && r->repeat > 0) {
        struct buf list = BUF_INIT;
        for (int k = 0; k < 2 * r->repeat; k++) {
            int found = 0;
            for (size_t i = 0; i < r->nreps && !found; i++)
                found = r->reps[i].index == k;
            if (!found)
                buf_addf(&list, "%srep-%03d", list.len ? ", " : "", k);
        }
        if (list.len)
            warning(res, "repetition_missing", "planned repetitions with no folder: %s", list.data);
        buf_release(&list);
    }
    if (res->nwarnings > 1)
        qsort(res->warnings, res->nwarnings, sizeof(*res->warnings), warning_cmp);
}

static void stage_aggregate(struct score_result *res, const enum rules_inv_id *order, size_t n_inv)
{
    const struct rundir *r = &res->run;

    res->probes = xcalloc(r->nprobes ? r->nprobes : 1, sizeof(*res->probes));
    for (size_t p = 0; p < r->nprobes; p++)
        res->probes[p].probe = &r->probes[p];
    res->invs = xcalloc(n_inv + r->ninvs + 1, sizeof(*res->invs));
    for (size_t k = 0; k < n_inv; k++)
        res->invs[res->ninvs++].id = rules_inv_name(order[k]);
    for (size_t k = 0; k < r->ninvs; k++) {
        res->invs[res->ninvs].id = rules_world_kind_name(r->invs[k].kind);
        res->invs[res->ninvs++].decl = &r->invs[k];
    }

    for (size_t i = 0; i < r->nreps; i++) {
        const struct score_rep *sr = &res->reps[i];
        res->malformed += sr->sum.malformed;
        if (!sr->evaluated)
            continue;
        for (size_t p = 0; p < sr->nprobes; p++)
            agg_add(&res->probes[p].agg, sr->probes[p].out.result);
        for (size_t k = 0; k < sr->ninvs; k++) {
            const struct score_rule *o = &sr->invs[k];
            if (k < n_inv)
                agg_add(&res->invs[k].agg, o->out.result);
            else if (o->decl)
                agg_add(&res->invs[n_inv + (size_t)(o->decl - r->invs)].agg, o->out.result);
        }
        res->outcomes[sr->outcome]++;
    }

    for (size_t p = 0; p < r->nprobes; p++) {
        struct score_probe_agg *pa = &res->probes[p];
        res->weight_total += r->probes[p].weight;
        if (pa->agg.evaluated > 0) {
            double lo, hi, rate = (double)pa->agg.passed / (double)pa->agg.evaluated;
            rules_wilson(pa->agg.passed, pa->agg.evaluated, &lo, &hi);
            pa->rate = score_round(rate, 4);
            pa->lo = score_round(lo, 4);
            pa->hi = score_round(hi, 4);
            res->weight_sum += r->probes[p].weight;
            res->weighted_rate += r->probes[p].weight * rate;
        }
    }
    stage_warnings(res);
}

/* ---- verdict (docs/scoring.md, Verdict) ---- */

static void stage_verdict(struct score_result *res)
{
    const struct rundir *r = &res->run;
    char *why = res->verdict_reason;
    size_t cap = sizeof(res->verdict_reason);
    int baseline_failed = 0, rep_stopped = 0;
    long fired_total = 0, faulted_evaluated = 0;

    why[0] = '\0';
    for (size_t i = 0; i < r->nreps; i++) {
        const struct score_rep *sr = &res->reps[i];
        if (sr->status == RULES_REP_ABORTED || sr->status == RULES_REP_ERROR) {
            rep_stopped = 1;
            if (why[0] == '\0')
                snprintf(why, cap, "%s: %s%.400s", sr->rep->dir,
                         sr->status == RULES_REP_ERROR ? "runner error: " : "", sr->status_reason);
        }
        if (!sr->evaluated)
            continue;
        if (!sr->rep->faulted && sr->task.result == RULE_FAIL) {
            if (!baseline_failed)
                snprintf(why, cap, "baseline %s failed verify (%.400s)", sr->rep->dir,
                         sr->task.reason);
            baseline_failed = 1;
        }
        if (sr->rep->faulted) {
            faulted_evaluated++;
            fired_total += sr->sum.faults_fired;
        }
    }

    if (baseline_failed) {
        res->verdict = SCORE_INVALID;
    } else if (r->status != RUNDIR_RUN_COMPLETE || rep_stopped) {
        res->verdict = SCORE_ABORTED;
        if (r->status != RUNDIR_RUN_COMPLETE)
            snprintf(why, cap, "the run %s%s%.255s",
                     r->status == RUNDIR_RUN_ABORTED ? "was aborted" : "stopped on a runner error",
                     r->error[0] ? ": " : "", r->error);
    } else if (fired_total == 0) {
        res->verdict = SCORE_INVALID;
        snprintf(
            why, cap, "%s",
            faulted_evaluated == 0
                ? "no faulted repetition ran"
                : "no fault fired in any faulted repetition: its probes measured the agent without any fault");
    } else {
        res->verdict = SCORE_SCORED;
        snprintf(why, cap, "every repetition ran");
    }
    clean(why);

    res->has_score = res->verdict != SCORE_INVALID && res->weight_sum > 0;
    if (res->has_score)
        res->score = score_round(res->weighted_rate / res->weight_sum * 100.0, 2);
}

/* ---- the result ---- */

struct score_result *score_compute(const char *dir, struct err *e)
{
    struct score_result *res = xcalloc(1, sizeof(*res));
    enum rules_inv_id order[RULES_INV_N];
    size_t n_inv = 0;

    if (rundir_load(&res->run, dir, e) < 0) {
        rundir_release(&res->run);
        free(res);
        return NULL;
    }
    clean(res->run.error);
    rules_inv_order(order, &n_inv);
    res->reps = xcalloc(res->run.nreps ? res->run.nreps : 1, sizeof(*res->reps));
    stage_scan(res);
    stage_rules(res, order, n_inv);
    stage_aggregate(res, order, n_inv);
    stage_verdict(res);
    return res;
}

void score_result_free(struct score_result *res)
{
    if (res == NULL)
        return;
    for (size_t i = 0; i < res->run.nreps; i++) {
        free(res->reps[i].probes);
        free(res->reps[i].invs);
    }
    for (size_t k = 0; k < res->nwarnings; k++)
        free(res->warnings[k].per_rep);
    free(res->warnings);
    free(res->invs);
    free(res->probes);
    free(res->reps);
    rundir_release(&res->run);
    free(res);
}

int score_exit_code(const struct score_result *res)
{
    return (int)res->verdict;
}

const char *score_verdict_name(enum score_verdict v)
{
    return v == SCORE_SCORED ? "scored" : v == SCORE_ABORTED ? "aborted" : "invalid";
}

json_t *score_run(const char *dir, int *exit_code, struct err *e)
{
    struct score_result *res = score_compute(dir, e);
    json_t *j;

    *exit_code = 1;
    if (res == NULL)
        return NULL;
    j = score_render_json(res);
    *exit_code = score_exit_code(res);
    score_result_free(res);
    return j;
}
