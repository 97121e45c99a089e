/*
 * decide: see decide.h.
 */
#include <stdio.h>
#include <string.h>

#include "events/ev.h"
#include "experiment/catalog.h"
#include "util/log.h"
#include "world/decide.h"
#include "util/banned.h"

static void warn(struct seam *s, const char *code, const char *fmt, const char *arg)
{
    char m[400];

    snprintf(m, sizeof(m), fmt, arg);
    log_warn("world", "%s", m);
    if (!seam_records(s))
        return;
    json_t *ev = ev_new(EVKIND_WARNING);
    ev_set_str(ev, "code", code);
    ev_set_str(ev, "message", m);
    seam_emit(s, ev);
    json_decref(ev);
}

void world_decide(struct world *w, struct seam *s, struct world_call *c, struct seam_decision *d)
{
    const struct catalog_fault *def;
    struct plan_call pc;
    json_t *copies, *stale;
    const char *reply;

    memset(d, 0, sizeof(*d));
    if (s == NULL)
        return;
    memset(&pc, 0, sizeof(pc));
    pc.component = CATALOG_INJ_WORLD;
    pc.tool = c->tool;
    pc.server = world_name(w);
    pc.args = c->args;
    pc.session_call = world_ncalls(w) + 1;
    if (seam_decide(s, &pc, d) < 0 || !d->inject)
        return;
    def = catalog_fault_find(d->kind);
    if (!seam_mutating_allowed(s) &&
        (d->safety > 0 || (d->safety < 0 && def && def->safety == CATALOG_MUTATING))) {
        warn(s, "fault_refused",
             "mutating fault '%s' refused: no sandbox is known here (a standalone world needs "
             "--i-have-a-sandbox; under a controller, the controller knows); the call goes "
             "through unfaulted",
             d->kind);
        goto not_injected;
    }
    if (strcmp(d->kind, "effect.timeout_before_effect") == 0) {
        c->mode = WORLD_FAULT_TIMEOUT_BEFORE;
    } else if (strcmp(d->kind, "effect.timeout_after_effect") == 0) {
        c->mode = WORLD_FAULT_TIMEOUT_AFTER;
    } else if (strcmp(d->kind, "effect.duplicate_delivery") == 0) {
        c->mode = WORLD_FAULT_DUPLICATE;
        copies = json_object_get(d->options, "copies");
        c->copies = json_is_integer(copies) ? (int)json_integer_value(copies) : 2;
    } else if (strcmp(d->kind, "tool.error") == 0) {
        c->mode = WORLD_FAULT_WITHHELD;
    } else if (strcmp(d->kind, "tool.timeout") == 0) {
        reply = json_string_value(json_object_get(d->options, "reply"));
        if (reply && strcmp(reply, "none") == 0) {
            /* the world answers its one client in order: a call never answered would hold
             * every later one */
            warn(s, "fault_unsupported",
                 "fault '%s' with reply none is not one the world injects (it answers in "
                 "order); the call goes through unfaulted",
                 d->kind);
            goto not_injected;
        }
        c->mode = WORLD_FAULT_WITHHELD;
    } else if (strcmp(d->kind, "tool.stale_data") == 0) {
        stale = json_object_get(d->options, "result");
        if ((stale == NULL || json_is_null(stale)) && !world_first_result(w, c->tool)) {
            warn(s, "fault_not_applied",
                 "tool.stale_data on '%s': no earlier result to return; the call goes through",
                 c->tool);
            goto not_injected;
        }
        c->mode = WORLD_FAULT_WITHHELD;
    } else if (strcmp(d->kind, "tool.silent_wrong_data") == 0 ||
               strcmp(d->kind, "inject.tool_result") == 0) {
        c->mode = WORLD_FAULT_OTHER;
    } else {
        warn(s, "fault_unsupported", "fault '%s' is not one the world injects", d->kind);
        goto not_injected;
    }
    c->fault = def ? def->id : NULL;
    return;
not_injected:
    json_decref(d->options);
    d->options = NULL;
    d->inject = 0;
}
