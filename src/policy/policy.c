/*
 * policy: minimal first version (the default policy only; the rule files follow).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/tier.h"
#include "util/buf.h"
#include "util/banned.h"

struct policy {
    size_t nrules;
};

struct policy *policy_builtin(void)
{
    return xcalloc(1, sizeof(struct policy));
}

int policy_load(struct policy **out, const char *const *paths, size_t npaths, struct err *err)
{
    (void)paths;
    (void)npaths;
    (void)err;
    *out = policy_builtin();
    return 0;
}

int policy_parse(struct policy **out, const char *name, const char *text, size_t len,
                 struct buf *diags, struct err *err)
{
    (void)name;
    (void)text;
    (void)len;
    (void)diags;
    (void)err;
    *out = policy_builtin();
    return 0;
}

size_t policy_nrules(const struct policy *p)
{
    return p ? p->nrules : 0;
}

void policy_free(struct policy *p)
{
    free(p);
}

const char *policy_call_command(const struct policy_call *call, struct buf *buf)
{
    const json_t *c = call->input ? json_object_get(call->input, "command") : NULL;
    size_t i;
    json_t *w;

    if (json_is_string(c))
        return json_string_value(c);
    if (!json_is_array(c) || json_array_size(c) == 0)
        return NULL;
    buf_reset(buf);
    json_array_foreach (c, i, w) {
        if (!json_is_string(w))
            return NULL;
        if (i)
            buf_addc(buf, ' ');
        buf_adds(buf, json_string_value(w));
    }
    return buf->data;
}

int policy_decide(const struct policy *p, const struct policy_call *call,
                  struct policy_decision *d)
{
    struct buf b = BUF_INIT;
    const char *cmd;

    (void)p;
    memset(d, 0, sizeof(*d));
    d->from_default = 1;
    cmd = policy_call_command(call, &b);
    if (cmd)
        tier_of_command(cmd, strlen(cmd), &d->tier);
    if (d->tier.level == TIER_DESTRUCTIVE) {
        d->effect = POLICY_BLOCK;
        snprintf(d->reason, sizeof(d->reason),
                 "[faultline] blocked: destructive command (%s): %s", d->tier.pattern,
                 d->tier.command);
    }
    buf_release(&b);
    return 0;
}

void policy_decision_release(struct policy_decision *d)
{
    json_decref(d->redacted_input);
    d->redacted_input = NULL;
}

const char *policy_effect_name(enum policy_effect e)
{
    static const char *const names[] = {"allow", "block", "hold", "redact"};
    return (unsigned)e < 4 ? names[e] : "allow";
}

const char *policy_mode_name(enum policy_mode m)
{
    return m == POLICY_MONITOR ? "monitor" : "enforce";
}

const char *policy_tier_name(const struct policy_decision *d)
{
    if (d->tier.level == TIER_DESTRUCTIVE)
        return "destructive";
    return d->from_default ? "default" : "rule";
}

json_t *policy_decision_json(const struct policy_decision *d)
{
    json_t *j = json_object();
    json_object_set_new(j, "effect", json_string(policy_effect_name(d->effect)));
    json_object_set_new(j, "mode", json_string(policy_mode_name(d->mode)));
    json_object_set_new(j, "tier", json_string(policy_tier_name(d)));
    json_object_set_new(j, "rule", *d->rule ? json_string(d->rule) : json_null());
    json_object_set_new(j, "reason", json_string(d->reason));
    return j;
}

json_t *policy_schema(void)
{
    return json_object();
}
