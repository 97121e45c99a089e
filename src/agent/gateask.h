/*
 * gateask: the reference agent's gate. With FAULTLINE_CONTROL_URL set, the agent asks the
 * controller (POST /_faultline/gate without "decided", docs/control-api.md, through
 * the seam's seam_gate) before each shell call: the controller runs the policy and the plan's
 * gate faults (permission.deny_or_delay, tool.error) and answers allow, deny or held with the
 * text the agent's model is told. When the controller cannot be asked, the call is let
 * through unless the destructive tier (src/policy/tier.h) marks its command: then it is
 * refused (fail closed for what could do harm, open for the rest, as the hook gates do).
 */
#ifndef FAULTLINE_AGENT_GATEASK_H
#define FAULTLINE_AGENT_GATEASK_H

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

struct gateask;

enum gateask_verdict { GATEASK_ALLOW, GATEASK_DENY, GATEASK_HELD };

struct gateask_answer {
    enum gateask_verdict verdict;
    char code[16];     /* "", "POLICY_BLOCK", "HELD", "CHAOS_FAULT" */
    struct buf reason; /* for the model ("[faultline] ..."); a note when the controller
                          could not be asked */
    json_t *input;     /* the redacted input to run with (new reference), or NULL */
    int unreachable;   /* 1: decided here, without the controller */
};

void gateask_answer_init(struct gateask_answer *a);
void gateask_answer_release(struct gateask_answer *a);

/* A gate for the controller at url ("http://HOST:PORT"). NULL with e set for a bad URL.
 * Caller frees with gateask_free (NULL: no-op). */
struct gateask *gateask_new(const char *url, struct err *e);
void gateask_free(struct gateask *g);

/* Asks for one call of tool (as hooks name it: "Bash") with input (borrowed). Always fills a
 * (reset first): an unreachable controller or a malformed answer is decided here (see above)
 * with a->unreachable set and the reason in a->reason. Blocking, bounded by the seam client's
 * timeouts. */
void gateask_ask(struct gateask *g, const char *tool, const json_t *input,
                 struct gateask_answer *a);

#endif
