/*
 * gatectl: the controller's gate endpoint, POST /_faultline/gate (docs/control-api.md), for the
 * hook gates (which ran the policy themselves and send it as "decided") and for the agents
 * with no hook file (the gate SDKs, the reference agent: the controller runs the policy).
 *
 * One call, in this order (gatectl_decide):
 *   1. the policy decision (policy_decide, or the hook gate's "decided");
 *   2. block -> deny, code POLICY_BLOCK; hold -> held, code HELD: the plan is not asked, so a
 *      fault never turns a block or a hold into an allow;
 *   3. allow, or redact (then on the redacted input): a retry of a held call (same tool, same
 *      input) is answered from the hold table; any other call asks the plan (component gate)
 *      for permission.deny_or_delay or tool.error; calls to MCP tools are the shim's and are
 *      not asked (one call is never injected twice).
 *
 * The hold table (permission.deny_or_delay, modes delay and hold_then_deny), one entry per
 * held call, keyed by tool and input:
 *   no entry, plan injects     -> held (HELD, canary); entry {first refusal = now}; one
 *                                 fault_injected                      (gatectl_decide)
 *   entry, now - first < delay -> held again, no new injection        (hold_answer)
 *   entry, now - first >= delay-> delay: allowed; hold_then_deny: denied with the canary
 *                                 (CHAOS_FAULT); the entry is removed: the hold is over
 *   a different call           -> its own decision; the entry stays
 * delay_s 0 therefore decides at the immediate retry. The table lives in the controller, so
 * it outlives the separate gate processes of a harness.
 */
#ifndef FAULTLINE_CONTROL_GATECTL_H
#define FAULTLINE_CONTROL_GATECTL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "plan/plan.h"
#include "policy/policy.h"
#include "util/err.h"

/* Most held calls remembered at once; past it the oldest hold is forgotten (its retry is then
 * a new call). */
#define GATECTL_HOLDS_MAX 1024
#define GATECTL_REASON_MAX 512

struct gatectl;
struct ctl;
struct hreq;

enum gatectl_verdict { GATECTL_ALLOW, GATECTL_DENY, GATECTL_HELD };

/* One call as the endpoint received it (borrowed). */
struct gatectl_call {
    const char *tool;
    const json_t *input; /* an object */
    const char *mcp_server;
};

/* What gatectl_decide answered. */
struct gatectl_result {
    enum gatectl_verdict verdict;
    const char *code;                /* NULL, "POLICY_BLOCK", "HELD" or "CHAOS_FAULT" (static) */
    char reason[GATECTL_REASON_MAX]; /* for the agent, "[faultline] ..."; "" for a plain allow */
    const char *fault;               /* catalog id of the fault that produced the answer, or NULL */
    int injected;                    /* 1: this call is a new injection (pd and target say which) */
    int refused; /* 1: the plan chose a mutating fault the safety rule refuses (pd and
                    target say which); the call was allowed unfaulted */
    struct plan_decision pd;
    char target[PLAN_NAME_MAX + 8];
    const json_t *input; /* the input the tool gets when redacted (borrowed from the policy
                            decision), else NULL */
};

/* Loads the policy files (policy_load: the project's first, then the user's snapshot; a
 * missing path is skipped); n 0: the built-in default policy. NULL with e set for a bad file
 * (FILE:LINE:COL). Caller frees with gatectl_free. */
struct gatectl *gatectl_new(const char *const *policy_paths, size_t n, struct err *e);
void gatectl_free(struct gatectl *g);
/* 1 when it was given policy files (the controller is then the run's gate: plan_loaded). */
int gatectl_has_policy(const struct gatectl *g);
/* Whether a fault the plan marks mutating may be applied (the controller's safety rule,
 * controller.h: it knows a sandbox). Default 0: refused (gatectl_result.refused). */
void gatectl_allow_mutating(struct gatectl *g, int yes);
/* Held calls remembered now. */
size_t gatectl_holds(const struct gatectl *g);

/* Decides one call given its policy decision pol (borrowed; out->input may point into it), at
 * now_ms (a monotonic clock). plan and canary may be NULL (no faults). 0, or ERR_INVALID (a
 * NULL argument, a tool over PLAN_NAME_MAX) with *out a deny. Pure but for the hold table and
 * the plan's counters. */
int gatectl_decide(struct gatectl *g, struct plan *plan, const char *canary,
                   const struct gatectl_call *call, const struct policy_decision *pol,
                   int64_t now_ms, struct gatectl_result *out);

/* Serves POST /_faultline/gate with its parsed body (borrowed): checks it, decides, writes
 * gate_decision (and fault_injected), answers (docs/control-api.md). 400 for a malformed body. */
void gatectl_serve(struct gatectl *g, struct ctl *c, struct hreq *r, const json_t *body);

#endif
