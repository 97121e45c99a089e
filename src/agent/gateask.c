/*
 * gateask: the reference agent's gate (gateask.h): one seam_gate (seam.h), one POST per shell
 * call.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/gateask.h"
#include "policy/tier.h"
#include "seam/seam.h"
#include "util/banned.h"

struct gateask {
    struct seam_gate *c;
};

void gateask_answer_init(struct gateask_answer *a)
{
    memset(a, 0, sizeof(*a));
    buf_init(&a->reason, 64 << 10);
}

void gateask_answer_release(struct gateask_answer *a)
{
    buf_release(&a->reason);
    json_decref(a->input);
    a->input = NULL;
}

struct gateask *gateask_new(const char *url, struct err *e)
{
    struct seam_gate *c = seam_gate_new(url, e);
    struct gateask *g;

    if (c == NULL)
        return NULL;
    g = xcalloc(1, sizeof(*g));
    g->c = c;
    return g;
}

void gateask_free(struct gateask *g)
{
    if (g == NULL)
        return;
    seam_gate_free(g->c);
    free(g);
}

/* The controller could not say: fail closed for a destructive command, open otherwise. */
static void decide_here(const json_t *input, const char *why, struct gateask_answer *a)
{
    const char *cmd = json_string_value(json_object_get(input, "command"));
    struct tier_result t;

    memset(&t, 0, sizeof(t));
    a->unreachable = 1;
    if (cmd)
        tier_of_command(cmd, strlen(cmd), &t);
    if (t.level == TIER_DESTRUCTIVE) {
        a->verdict = GATEASK_DENY;
        snprintf(a->code, sizeof(a->code), "POLICY_BLOCK");
        buf_addf(&a->reason,
                 "[faultline] BLOCKED: destructive command (%s) and the gate could not be asked "
                 "(%s)",
                 t.pattern, why);
    } else {
        a->verdict = GATEASK_ALLOW;
        buf_addf(&a->reason, "the gate could not be asked (%s): allowed", why);
    }
}

void gateask_ask(struct gateask *g, const char *tool, const json_t *input, struct gateask_answer *a)
{
    json_t *body, *reply = NULL;
    const char *dec, *reason, *code;
    struct err e = {0};

    buf_reset(&a->reason);
    json_decref(a->input);
    a->input = NULL;
    a->code[0] = '\0';
    a->unreachable = 0;
    a->verdict = GATEASK_ALLOW;
    body = json_pack("{s:s,s:s,s:O,s:n}", "harness", "agent", "tool", tool, "input",
                     (json_t *)input, "mcp_server");
    if (body == NULL || seam_gate_post(g->c, body, &reply, &e) < 0) {
        decide_here(input, e.msg[0] ? e.msg : "out of memory", a);
        goto out;
    }
    dec = json_string_value(json_object_get(reply, "decision"));
    reason = json_string_value(json_object_get(reply, "reason"));
    code = json_string_value(json_object_get(reply, "code"));
    if (dec == NULL) {
        decide_here(input, "the controller's answer has no decision", a);
        goto out;
    }
    if (strcmp(dec, "allow") == 0) {
        json_t *in = json_object_get(reply, "input");
        if (json_is_object(in))
            a->input = json_incref(in);
    } else {
        a->verdict = strcmp(dec, "held") == 0 ? GATEASK_HELD : GATEASK_DENY;
    }
    if (code)
        snprintf(a->code, sizeof(a->code), "%s", code);
    if (reason)
        buf_adds(&a->reason, reason);
    if (a->verdict != GATEASK_ALLOW && a->reason.len == 0)
        buf_adds(&a->reason, "[faultline] refused by the gate");
out:
    json_decref(reply);
    json_decref(body);
}
