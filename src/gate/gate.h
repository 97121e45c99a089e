/*
 * gate: one decision of `faultline gate HARNESS` (docs/gate.md), from the hook input to the
 * answer, with no I/O of the process's own (the caller reads stdin and prints the result):
 *
 *   1. read the input (hook.h); malformed, cut or oversized: the fail-safe answer (4)
 *   2. load the policy: the project's .faultline/policy.yaml (the project is the git
 *      top-level of the input's cwd, or that cwd), then the user's file; decide the call with
 *      policy_decide (src/policy)
 *   3. with a controller URL: POST /_faultline/gate with the call and the decision
 *      ("decided"); the controller writes the gate_decision event, asks the plan for a fault
 *      when the policy allowed the call, and says what to answer (allow, deny, held). When it
 *      cannot be reached or answers badly: the local decision, and a note on stderr
 *   4. fail-safe (input not readable): the first "command" string that can be recovered is
 *      put to the destructive tier: destructive -> deny, anything else (or none) -> allow;
 *      the reason on stderr and, with a controller, a `warning` event
 *      (code malformed_hook_input)
 *
 * A policy file that cannot be loaded denies every call with its FILE:LINE:COL message (a
 * governance gate whose rules are broken does not let calls through as if it had none).
 *
 * The controller is spoken to through the control API client (seam/client.h) directly, not
 * through the seam: a gate is a process per call that makes one request and exits, so the
 * seam's sender thread, queue and breaker have nothing to do here.
 */
#ifndef FAULTLINE_GATE_GATE_H
#define FAULTLINE_GATE_GATE_H

#include <stddef.h>

#include "gate/hook.h"
#include "util/buf.h"

/* Deadlines for the controller: a gate never waits long (an unanswered hook runs the call in
 * every harness once its own timeout passes, so failing fast keeps the local decision). */
#define GATE_CONTROL_CONNECT_MS 1000
#define GATE_CONTROL_IO_MS 5000

struct gate_opts {
    enum gate_harness harness;
    const char *control_url; /* FAULTLINE_CONTROL_URL; NULL or "": decide locally */
    const char *user_policy; /* the user's policy file (may not exist); NULL: none */
    const char *project_dir; /* the project (CLAUDE_PROJECT_DIR); NULL: from the input */
};

struct gate_result {
    struct buf out;  /* for stdout */
    struct buf err;  /* for stderr */
    int exit_code;   /* the process's exit code */
    enum gate_verdict verdict;
    int failsafe;    /* the input could not be read */
    int controlled;  /* the controller decided the answer */
};

void gate_result_init(struct gate_result *r);
void gate_result_release(struct gate_result *r);

/* Decides the hook input text[0..len) (len may be over GATE_INPUT_MAX: then only the first
 * GATE_INPUT_MAX bytes are looked at, as oversized input) and fills *r (initialised by the
 * caller with gate_result_init). Always answers: every failure has an answer (above). */
void gate_run(const struct gate_opts *o, const char *text, size_t len, struct gate_result *r);

#endif
