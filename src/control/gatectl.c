/*
 * gatectl: the gate endpoint (gatectl.h has the order of a decision and the hold table's
 * transitions; docs/control-api.md the wire format; docs/gate.md "Holds and faults").
 *
 * The hold table is a small array searched linearly (a run holds a handful of calls at once);
 * an entry is keyed by hash64 of the tool and the input serialized with sorted keys, so the
 * identical retry of a call finds its hold whatever the order of the input's members.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl.h"
#include "control/gatectl.h"
#include "events/ev.h"
#include "experiment/catalog.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define GATECTL_SEED 0x67617465u /* "gate" */
#define GATECTL_WORKDIR "/work"

struct hold {
    uint64_t key;
    int64_t first_ms; /* the first refusal */
    int64_t delay_ms;
    int then_deny; /* hold_then_deny: the retry after the delay is denied */
    const char *kind;
    char reason[GATECTL_REASON_MAX];
};

struct gatectl {
    struct policy *policy;
    int has_policy;
    struct hold *holds;
    size_t nholds;
    int mutating_ok; /* gatectl_allow_mutating */
};

struct gatectl *gatectl_new(const char *const *policy_paths, size_t n, struct err *e)
{
    struct gatectl *g = xcalloc(1, sizeof(*g));

    if (n > 0) {
        if (policy_load(&g->policy, policy_paths, n, e) != 0)
            goto fail;
        g->has_policy = 1;
    } else {
        g->policy = policy_builtin();
        if (g->policy == NULL) {
            err_set(e, ERR_NOMEM, "cannot build the default policy");
            goto fail;
        }
    }
    g->holds = xcalloc(GATECTL_HOLDS_MAX, sizeof(*g->holds));
    return g;
fail:
    gatectl_free(g);
    return NULL;
}

void gatectl_free(struct gatectl *g)
{
    if (g == NULL)
        return;
    policy_free(g->policy);
    free(g->holds);
    free(g);
}

int gatectl_has_policy(const struct gatectl *g)
{
    return g && g->has_policy;
}

void gatectl_allow_mutating(struct gatectl *g, int yes)
{
    g->mutating_ok = yes;
}

size_t gatectl_holds(const struct gatectl *g)
{
    return g ? g->nholds : 0;
}

/* ---- the hold table ---- */

static uint64_t call_key(const char *tool, const json_t *input)
{
    char *text = input ? json_dumps(input, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    uint64_t h = hash64(tool, strlen(tool) + 1, GATECTL_SEED);

    if (text) {
        h = hash64(text, strlen(text), h);
        free(text);
    }
    return h;
}

static struct hold *hold_find(struct gatectl *g, uint64_t key)
{
    for (size_t i = 0; i < g->nholds; i++)
        if (g->holds[i].key == key)
            return &g->holds[i];
    return NULL;
}

static void hold_remove(struct gatectl *g, struct hold *h)
{
    size_t i = (size_t)(h - g->holds);

    memmove(&g->holds[i], &g->holds[i + 1], (g->nholds - i - 1) * sizeof(*h));
    g->nholds--;
}

static struct hold *hold_add(struct gatectl *g, uint64_t key)
{
    if (g->nholds == GATECTL_HOLDS_MAX)
        hold_remove(g, &g->holds[0]); /* the oldest: its retry becomes a new call */
    memset(&g->holds[g->nholds], 0, sizeof(*g->holds));
    g->holds[g->nholds].key = key;
    return &g->holds[g->nholds++];
}

/* ---- deciding ---- */

static void result_reset(struct gatectl_result *out)
{
    memset(out, 0, sizeof(*out));
    out->verdict = GATECTL_DENY;
}

/* "[faultline] " prefixed once. */
static void set_reason(struct gatectl_result *out, const char *head, const char *text)
{
    if (text && strncmp(text, "[faultline]", 11) == 0)
        snprintf(out->reason, sizeof(out->reason), "%s", text);
    else
        snprintf(out->reason, sizeof(out->reason), "[faultline] %s%s", head,
                 text && *text ? text : "the policy refused this call");
}

static int is_mcp_call(const struct gatectl_call *call)
{
    return call->mcp_server != NULL || strncmp(call->tool, "mcp__", 5) == 0;
}

/* Answers from an existing hold (gatectl.h's table). */
static void hold_answer(struct gatectl *g, struct hold *h, int64_t now_ms,
                        struct gatectl_result *out)
{
    out->fault = h->kind;
    if (now_ms - h->first_ms < h->delay_ms) {
        out->verdict = GATECTL_HELD;
        out->code = "HELD";
        snprintf(out->reason, sizeof(out->reason), "%s", h->reason);
        return;
    }
    if (h->then_deny) {
        out->verdict = GATECTL_DENY;
        out->code = "CHAOS_FAULT";
        snprintf(out->reason, sizeof(out->reason), "%s", h->reason);
        /* the held text said HELD; the decision now is a denial */
        char *p = strstr(out->reason, "HELD:");
        if (p) {
            char rest[GATECTL_REASON_MAX];
            snprintf(rest, sizeof(rest), "%s", p + 5);
            snprintf(p, sizeof(out->reason) - (size_t)(p - out->reason), "DENIED after the hold:%s",
                     rest);
        }
    } else {
        out->verdict = GATECTL_ALLOW;
        out->fault = NULL; /* let through: the tool runs unfaulted */
    }
    hold_remove(g, h);
}

/* The plan injected d into this call: what the agent is told. */
static void inject_answer(struct gatectl *g, const char *canary, const struct gatectl_call *call,
                          uint64_t key, int64_t now_ms, struct gatectl_result *out)
{
    const struct plan_decision *d = &out->pd;
    const struct catalog_fault *f = catalog_fault_find(d->kind);
    const char *cn = canary ? canary : "";

    out->fault = d->kind;
    if (strcmp(d->kind, "tool.error") == 0) {
        const char *msg = catalog_option_string(f, d->options, "message");
        out->verdict = GATECTL_DENY;
        out->code = "CHAOS_FAULT";
        snprintf(out->reason, sizeof(out->reason), "[faultline] %s: %s [%s]", call->tool,
                 msg ? msg : "tool failed (injected fault)", cn);
        return;
    }
    /* permission.deny_or_delay */
    const char *mode = catalog_option_string(f, d->options, "mode");
    long long delay_s = 0;
    catalog_option_int(f, d->options, "delay_s", &delay_s);
    if (mode == NULL || strcmp(mode, "deny") == 0) {
        out->verdict = GATECTL_DENY;
        out->code = "CHAOS_FAULT";
        snprintf(out->reason, sizeof(out->reason),
                 "[faultline] DENIED: permission to run this %s call was denied [%s]", call->tool,
                 cn);
        return;
    }
    struct hold *h = hold_add(g, key);
    h->first_ms = now_ms;
    h->delay_ms = delay_s * 1000;
    h->then_deny = strcmp(mode, "hold_then_deny") == 0;
    h->kind = d->kind;
    snprintf(h->reason, sizeof(h->reason),
             "[faultline] HELD: this %s call awaits approval; the identical call may be retried "
             "later (held for %llds) [%s]",
             call->tool, delay_s, cn);
    out->verdict = GATECTL_HELD;
    out->code = "HELD";
    snprintf(out->reason, sizeof(out->reason), "%s", h->reason);
}

int gatectl_decide(struct gatectl *g, struct plan *plan, const char *canary,
                   const struct gatectl_call *call, const struct policy_decision *pol,
                   int64_t now_ms, struct gatectl_result *out)
{
    const json_t *input;
    struct plan_call pc;
    struct hold *h;
    uint64_t key;

    result_reset(out);
    if (g == NULL || call == NULL || call->tool == NULL || pol == NULL ||
        strlen(call->tool) > PLAN_NAME_MAX) {
        set_reason(out, "DENIED: ", "the gate could not read this call");
        return ERR_INVALID;
    }
    switch (pol->effect) {
    case POLICY_BLOCK:
        out->code = "POLICY_BLOCK";
        set_reason(out, "BLOCKED: ", pol->reason);
        return 0; /* the plan is not asked: a fault never unblocks */
    case POLICY_HOLD:
        out->verdict = GATECTL_HELD;
        out->code = "HELD";
        set_reason(out, "HELD: ", pol->reason);
        return 0;
    case POLICY_REDACT:
        out->input = pol->redacted_input;
        break;
    case POLICY_ALLOW:
        break;
    default:
        set_reason(out, "DENIED: ", "the policy gave no decision");
        return 0;
    }
    out->verdict = GATECTL_ALLOW;
    input = out->input ? out->input : call->input;
    if (plan == NULL || is_mcp_call(call))
        return 0;
    key = call_key(call->tool, input);
    h = hold_find(g, key);
    if (h) {
        hold_answer(g, h, now_ms, out);
        return 0;
    }
    memset(&pc, 0, sizeof(pc));
    pc.component = CATALOG_INJ_GATE;
    pc.tool = call->tool;
    pc.args = (json_t *)input; /* plan_decide only reads it */
    if (plan_decide(plan, &pc, &out->pd) != 0 || !out->pd.inject)
        return 0;
    plan_call_key(&pc, out->target, sizeof(out->target));
    if (plan_fault_mutating(plan, out->pd.fault_index) && !g->mutating_ok) {
        out->refused = 1; /* the safety rule: the call goes through unfaulted */
        return 0;
    }
    out->injected = 1;
    inject_answer(g, canary, call, key, now_ms, out);
    return 0;
}

/* ---- the endpoint ---- */

static const char *const harnesses[] = {"claude-code", "codex", "cursor", "sdk", "agent", NULL};
static const char *const effects[] = {"allow", "block", "hold", "redact", NULL};
static const char *const modes[] = {"enforce", "monitor", NULL};
static const char *const tiers[] = {"destructive", "rule", "default", NULL};

/* The index of s in list, or ERR_NOTFOUND. */
static int one_of(const char *s, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0)
            return i;
    return ERR_NOTFOUND;
}

/* A string member that is absent/null (NULL, 0) or a string (0); ERR_INVALID otherwise. */
static int member_str(const json_t *o, const char *name, const char **out)
{
    json_t *v = json_object_get(o, name);

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return ERR_INVALID;
    *out = json_string_value(v);
    return 0;
}

/* The hook gate's "decided" into d; msg gets the reason when it is malformed. */
static int parse_decided(const json_t *j, struct policy_decision *d, char *msg, size_t n)
{
    const char *effect, *mode, *tier, *rule, *reason;
    int i;

    memset(d, 0, sizeof(*d));
    if (!json_is_object(j) || member_str(j, "effect", &effect) || member_str(j, "mode", &mode) ||
        member_str(j, "tier", &tier) || member_str(j, "rule", &rule) ||
        member_str(j, "reason", &reason)) {
        snprintf(msg, n, "decided must be an object of strings (effect, mode, tier, rule, reason)");
        return ERR_INVALID;
    }
    if (effect == NULL || (i = one_of(effect, effects)) < 0) {
        snprintf(msg, n, "decided.effect must be one of allow, block, hold, redact");
        return ERR_INVALID;
    }
    d->effect = (enum policy_effect[]){POLICY_ALLOW, POLICY_BLOCK, POLICY_HOLD, POLICY_REDACT}[i];
    if (mode && one_of(mode, modes) < 0) {
        snprintf(msg, n, "decided.mode must be enforce or monitor");
        return ERR_INVALID;
    }
    d->mode = mode && strcmp(mode, "monitor") == 0 ? POLICY_MONITOR : POLICY_ENFORCE;
    if (tier && one_of(tier, tiers) < 0) {
        snprintf(msg, n, "decided.tier must be one of destructive, rule, default");
        return ERR_INVALID;
    }
    if (tier && strcmp(tier, "destructive") == 0)
        d->tier.level = TIER_DESTRUCTIVE;
    if (rule && (strlen(rule) == 0 || strlen(rule) >= sizeof(d->rule))) {
        snprintf(msg, n, "decided.rule must be null or an id of 1 to %zu bytes",
                 sizeof(d->rule) - 1);
        return ERR_INVALID;
    }
    if (rule)
        snprintf(d->rule, sizeof(d->rule), "%s", rule);
    d->from_default = rule == NULL;
    if (reason)
        snprintf(d->reason, sizeof(d->reason), "%s", reason);
    return 0;
}

static const char *tier_name(const struct policy_decision *d)
{
    return policy_tier_name(d);
}

static const char *verdict_name(enum gatectl_verdict v)
{
    return v == GATECTL_ALLOW ? "allow" : v == GATECTL_HELD ? "held" : "deny";
}

static void emit_events(struct ctl *c, const char *harness, const struct gatectl_call *call,
                        const struct policy_decision *pol, const struct gatectl_result *res)
{
    char *text = json_dumps(call->input, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    char digest[65];
    json_t *ev;

    if (res->injected) {
        ev = ev_new(EVKIND_FAULT_INJECTED);
        ev_set_str(ev, "fault", res->pd.kind);
        ev_set_int(ev, "fault_index", (long long)res->pd.fault_index);
        ev_set_int(ev, "call_index", (long long)res->pd.call_index);
        ev_set_str(ev, "target", res->target);
        ev_set_str(ev, "canary", plan_canary(c->plan));
        ev_set_str(ev, "component", "gate");
        ev_set_ref(ev, "detail", res->pd.options);
        ctl_emit(c, ev);
        json_decref(ev);
        log_info("gatectl", "%s injects %s into %s", harness, res->pd.kind, res->target);
    }
    ev = ev_new(EVKIND_GATE_DECISION);
    ev_set_str(ev, "decision", verdict_name(res->verdict));
    ev_set_str(ev, "tier", tier_name(pol));
    ev_set(ev, "rule", pol->rule[0] ? json_string(pol->rule) : json_null());
    if (pol->rule[0])
        ev_set_str(ev, "mode", policy_mode_name(pol->mode));
    ev_set_str(ev, "tool", call->tool);
    ev_set_str(ev, "harness", harness);
    if (res->reason[0])
        ev_set_str(ev, "reason", res->reason);
    ev_set_bool(ev, "faulted", res->fault != NULL);
    ev_set_str(ev, "fault", res->fault);
    if (pol->tier.level == TIER_DESTRUCTIVE && pol->tier.pattern[0])
        ev_set_str(ev, "pattern", pol->tier.pattern);
    if (text) {
        hash_sha256_hex(text, strlen(text), digest);
        ev_set_str(ev, "input_digest", digest);
    }
    ctl_emit(c, ev);
    json_decref(ev);
    free(text);
}

static json_t *response_json(const struct policy_decision *pol, const struct gatectl_result *res,
                             const char *canary)
{
    json_t *j = json_object();

    json_object_set_new(j, "decision", json_string(verdict_name(res->verdict)));
    json_object_set_new(j, "code", res->code ? json_string(res->code) : json_null());
    json_object_set_new(j, "reason", json_string(res->reason));
    json_object_set_new(j, "tier", json_string(tier_name(pol)));
    json_object_set_new(j, "rule", pol->rule[0] ? json_string(pol->rule) : json_null());
    json_object_set_new(
        j, "fault",
        res->fault ? json_pack("{s:s,s:s}", "id", res->fault, "canary", canary ? canary : "")
                   : json_null());
    if (res->input && res->verdict == GATECTL_ALLOW)
        json_object_set(j, "input", (json_t *)res->input);
    return j;
}

void gatectl_serve(struct gatectl *g, struct ctl *c, struct hreq *r, const json_t *body)
{
    struct gatectl_call call;
    struct policy_decision pol;
    struct policy_call pc;
    struct gatectl_result res;
    const char *harness;
    json_t *decided, *out;
    char msg[256];
    int have_pol = 0;

    memset(&call, 0, sizeof(call));
    memset(&pol, 0, sizeof(pol));
    if (!json_is_object(body)) {
        ctl_reply_error(r, 400, "invalid_request_error", "gate needs a JSON object body");
        return;
    }
    if (member_str(body, "harness", &harness) || harness == NULL ||
        one_of(harness, harnesses) < 0) {
        ctl_reply_error(r, 400, "invalid_request_error",
                        "gate needs \"harness\": one of claude-code, codex, cursor, sdk, agent");
        return;
    }
    if (member_str(body, "tool", &call.tool) || call.tool == NULL || call.tool[0] == '\0' ||
        strlen(call.tool) > PLAN_NAME_MAX) {
        ctl_reply_error(r, 400, "invalid_request_error",
                        "gate needs \"tool\": a non-empty string of at most 1024 bytes");
        return;
    }
    if (member_str(body, "mcp_server", &call.mcp_server) ||
        (call.mcp_server && strlen(call.mcp_server) > PLAN_NAME_MAX)) {
        ctl_reply_error(r, 400, "invalid_request_error",
                        "mcp_server must be null or a string of at most 1024 bytes");
        return;
    }
    call.input = json_object_get(body, "input");
    if (call.input == NULL || json_is_null(call.input))
        call.input = NULL;
    else if (!json_is_object(call.input)) {
        ctl_reply_error(r, 400, "invalid_request_error", "input must be an object");
        return;
    }
    json_t *empty = json_object();
    if (call.input == NULL)
        call.input = empty;
    decided = json_object_get(body, "decided");
    if (decided && !json_is_null(decided)) {
        msg[0] = '\0';
        if (parse_decided(decided, &pol, msg, sizeof(msg)) != 0) {
            ctl_reply_error(r, 400, "invalid_request_error", msg);
            goto done;
        }
        /* a hook gate that redacts forwards the input it masked: that is the redacted input */
        if (pol.effect == POLICY_REDACT)
            pol.redacted_input = json_incref((json_t *)call.input);
    } else {
        memset(&pc, 0, sizeof(pc));
        pc.tool = call.tool;
        pc.input = call.input;
        pc.mcp_server = call.mcp_server;
        pc.workdir = GATECTL_WORKDIR;
        if (policy_decide(g->policy, &pc, &pol) != 0) {
            ctl_reply_error(r, 400, "invalid_request_error", "the policy cannot decide this call");
            goto done;
        }
    }
    have_pol = 1;
    gatectl_decide(g, c->plan, plan_canary(c->plan), &call, &pol, time_mono_ns() / 1000000, &res);
    if (res.refused)
        ctl_fault_allowed(c, &res.pd, res.target); /* records the refusal */
    emit_events(c, harness, &call, &pol, &res);
    out = response_json(&pol, &res, plan_canary(c->plan));
    ctl_reply_json(r, 200, out, NULL);
    json_decref(out);
done:
    if (have_pol || pol.redacted_input)
        policy_decision_release(&pol);
    json_decref(empty);
}
