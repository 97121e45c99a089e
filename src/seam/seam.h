/*
 * seam: where a boundary component (the MCP shim today; the gates, the egress side and the
 * world to come) gets its fault decisions and sends its events. One client, one API, two
 * modes chosen at seam_new:
 *
 *   controller  control_url is set (FAULTLINE_CONTROL_URL): each call is decided by POST
 *               /_faultline/decide within a short deadline (decide_ms, default 400 ms; then
 *               the call goes through unfaulted, and a circuit breaker, breaker.h, stops
 *               asking until a background probe finds the controller answering again); events
 *               are serialized on the caller's thread into a bounded queue (outq.h) and posted
 *               in batches by POST /_faultline/events from a sender thread (woken by
 *               seam_flush), so nothing on the caller's path waits for the controller past the
 *               deadline. A plan file, when given, is only read for what is decided outside
 *               calls (seam_plan_faults, seam_select: faults applied to a list a component
 *               hands out rather than to a call); the counters live in the controller.
 *   standalone  the plan is loaded in-process (plan_decide keeps the counters) and events are
 *               appended to the events file by this process, on a writer thread of the seam's
 *               (evwriter.h), off the component's loop. Without a plan: no faults; without
 *               an events file: no events.
 *
 * Plans are read only through src/plan's validated loader (plan_load), in both modes. A
 * controller that is down, stopped or slow never holds a call up for longer than the decision
 * deadline (once; then not at all while the breaker is open), and never injects: a failed
 * decision lets the call through. Mutating faults apply only where a sandbox is known
 * (seam_mutating_allowed).
 *
 * Layer: the seam sits below every boundary component and above plan, events and util. A
 * component uses only this header; the control API client (client.h), the breaker and the
 * queue are the seam's own. Nothing here knows a protocol: a call is a struct plan_call, a
 * decision a struct seam_decision, an event a JSON object.
 *
 * Threads: every function but seam_free is for the one thread that made the seam (a
 * component's loop); the sender thread is internal.
 */
#ifndef FAULTLINE_SEAM_SEAM_H
#define FAULTLINE_SEAM_SEAM_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "plan/plan.h"
#include "util/err.h"

/* One fault decision, whoever made it (the plan in-process, or the controller). */
struct seam_decision {
    int inject;          /* 1: inject `kind` into this call */
    size_t fault_index;  /* index in the plan's faults */
    char kind[64];       /* catalog id, e.g. "tool.error" */
    json_t *options;     /* the fault's options: a reference the caller owns, or NULL */
    uint64_t call_index; /* the call's index among the fault's matching calls */
    int safety;          /* 1 mutating, 0 fail-safe, -1 unknown (the catalog then says) */
};

struct seam_opts {
    const char *component;   /* "mcp", "gate"...: events' src, plan_loaded's component, logs */
    const char *control_url; /* non-NULL: controller mode */
    const char *plan_path;   /* may be NULL */
    const char *events_path; /* standalone only; may be NULL */
    int decide_ms;        /* controller: decision deadline; 0: FAULTLINE_CONTROL_DECIDE_MS or 400 */
    int i_have_a_sandbox; /* standalone: whoever started it says it runs in a sandbox (the
                             controller decides that for itself: ignored in controller mode) */
};

struct seam;

/* Sets the seam up. Emits plan_loaded when a plan is in use (controller mode: once the
 * controller answered the health check). NULL with e set when the plan cannot be loaded or is
 * not valid (ERR_PARSE, ERR_INVALID, ERR_LIMIT), the events file cannot be opened (ERR_IO) or
 * the control URL is bad (ERR_INVALID). Caller frees with seam_free. */
struct seam *seam_new(const struct seam_opts *o, struct err *e);
/* Flushes and frees. Controller mode: the sender gets at most 2 s to post what is queued; what
 * it could not is logged. NULL is a no-op. */
void seam_free(struct seam *s);

/* Decides for one call: 0 with *out filled (out->options a new reference when set), or a
 * negative code (ERR_TIMEOUT: no answer within the deadline, or the breaker is open; ERR_IO,
 * ERR_PROTO: the controller could not be asked or answered badly; ERR_INVALID: the call is
 * not one the plan can decide): the call then goes through unfaulted, and *out says no inject.
 * Controller mode blocks for at most the decision deadline. */
int seam_decide(struct seam *s, const struct plan_call *call, struct seam_decision *out);
/* 1 when seam_emit records events (an events file or a controller), 0 when it drops them:
 * a caller may then skip building them. */
int seam_records(const struct seam *s);
/* 1 when a decision may read the call's arguments (a plan fault with `when`, or a controller
 * that decides): a caller that has not parsed them must then pass them. */
int seam_decide_reads_args(const struct seam *s);
/* Records one event (borrowed: the seam may add "t", "t_us" (the time it happened: now, unless
 * the caller stamped it earlier with events_stamp) and "src" to it and keep a reference, so
 * the caller must not change it afterwards). Never blocks on the controller. */
void seam_emit(struct seam *s, json_t *ev);

/* The pair of the plan_loaded event seam_new wrote: a component_end event (its pid, server
 * when not NULL, reason `error` when failed, else `end`), written as the component exits. A
 * component that loaded its plan and never wrote it was killed; the runner makes that an
 * error (docs/run.md). */
void seam_end(struct seam *s, const char *server, int failed);
/* Standalone: hands the queued events to the events writer thread (evwriter.h; waits only
 * while a full queue of them is still unwritten); controller mode: wakes the sender thread
 * (never waits for it). For a component's idle hook, once what its peers were waiting for is
 * written. */
void seam_flush(struct seam *s);

/* The safety rule (docs/mcp-shim.md): 1 when mutating faults may be applied here. Controller
 * mode: the controller's latest word, from its health answer and then from each decision (it
 * knows its sandbox, and refuses mutating decisions itself otherwise); 0 until it answered.
 * Standalone: the seam was opened with i_have_a_sandbox. */
int seam_mutating_allowed(const struct seam *s);
/* The repetition's canary (borrowed, valid until the next seam call), or NULL while unknown. */
const char *seam_canary(struct seam *s);
/* The plan's faults array (docs/plan.md; borrowed, valid until seam_free), or NULL when no
 * plan is known here. For faults decided outside calls. */
json_t *seam_plan_faults(struct seam *s);
/* plan_select with the plan's seed (0 without a plan): 1 inject, 0 not. */
int seam_select(struct seam *s, size_t fault_index, const char *key, uint64_t index,
                double probability);

/* The gate endpoint (POST /_faultline/gate, docs/control-api.md) for the components that ask
 * it one call at a time (the reference agent's gate): a kept connection to the controller at
 * url (seam_gate.c). seam_gate_new: NULL with e set for a bad URL; free with seam_gate_free
 * (NULL: no-op). seam_gate_post: POSTs body (borrowed) and parses the reply into *reply (new
 * reference), 0 or the client's errors (ERR_IO, ERR_TIMEOUT, ERR_PROTO for a status other than
 * 200 or a reply that is not JSON, with the controller's message). Blocking, bounded. */
struct seam_gate;
struct seam_gate *seam_gate_new(const char *url, struct err *e);
void seam_gate_free(struct seam_gate *g);
int seam_gate_post(struct seam_gate *g, const json_t *body, json_t **reply, struct err *e);

#endif
