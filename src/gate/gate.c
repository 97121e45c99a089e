/*
 * gate: the flow of one `faultline gate HARNESS` decision (the steps are in gate.h). The
 * policy decides first, always, here; the controller, when there is one, gets that decision
 * and may only make it stricter (a fault on an allowed call), never looser: a reply that is
 * not one of allow / deny / held is treated as no reply.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gate/gate.h"
#include "policy/policy.h"
#include "policy/shell.h"
#include "policy/tier.h"
#include "seam/client.h"
#include "util/banned.h"

void gate_result_init(struct gate_result *r)
{
    memset(r, 0, sizeof(*r));
    buf_init(&r->out, 0);
    buf_init(&r->err, 0);
}

void gate_result_release(struct gate_result *r)
{
    buf_release(&r->out);
    buf_release(&r->err);
}

/* The reason for the agent, always with the [faultline] prefix (and HELD: for a hold). */
static void set_reason(struct gate_answer *a, const char *held, const char *why)
{
    const char *p = "[faultline] ";

    if (strncmp(why, p, strlen(p)) == 0)
        why += strlen(p);
    snprintf(a->reason, sizeof(a->reason), "%s%s%s", p, held, why);
}

/* The local answer to a policy decision. */
static void answer_of_decision(const struct policy_decision *d, struct gate_answer *a)
{
    memset(a, 0, sizeof(*a));
    switch (d->effect) {
    case POLICY_BLOCK:
        a->verdict = GATE_DENY;
        set_reason(a, "", d->reason[0] ? d->reason : "blocked by policy");
        break;
    case POLICY_HOLD:
        a->verdict = GATE_HELD;
        set_reason(a, "HELD: ", d->reason[0] ? d->reason : "held for approval by policy");
        break;
    case POLICY_REDACT:
        a->verdict = GATE_ALLOW;
        if (d->redacted_input)
            a->updated_input = json_incref(d->redacted_input);
        break;
    default:
        a->verdict = GATE_ALLOW;
    }
}

/* The project: the git top-level above dir (a directory holding .git, a directory or a
 * workspace's file), or dir itself. */
static void project_of(const char *dir, char *out, size_t outsz)
{
    char p[PATH_MAX], probe[PATH_MAX + 8];
    struct stat st;
    char *slash;

    snprintf(out, outsz, "%s", dir);
    if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p) || p[0] != '/')
        return;
    for (;;) {
        snprintf(probe, sizeof(probe), "%s/.git", p[1] ? p : "");
        if (stat(probe, &st) == 0) {
            snprintf(out, outsz, "%s", p[1] ? p : "/");
            return;
        }
        slash = strrchr(p, '/');
        if (slash == NULL || slash == p)
            return;
        *slash = '\0';
    }
}

/* The controller's client for this run, made on first use (NULL when there is no URL or it
 * is bad: the message goes to stderr once). */
static struct seam_client *client(const struct gate_opts *o, struct seam_client **cl,
                                  struct gate_result *r)
{
    struct err e = {0};

    if (*cl || o->control_url == NULL || *o->control_url == '\0')
        return *cl;
    *cl = seam_client_new(o->control_url, &e);
    if (*cl == NULL)
        buf_addf(&r->err, "faultline gate: FAULTLINE_CONTROL_URL: %s\n", e.msg);
    else
        seam_client_set_limits(*cl, GATE_CONTROL_CONNECT_MS, GATE_CONTROL_IO_MS, GATE_INPUT_MAX);
    return *cl;
}

/* POST /_faultline/gate; 0 with *a filled from the controller's word, ERR_UNSUPPORTED when
 * the controller has no such endpoint (404: an older controller), or another error code. */
static int ask_controller(struct seam_client *cl, const struct gate_call *c,
                          const struct policy_decision *d, struct gate_answer *a, struct err *e)
{
    struct buf resp = BUF_INIT;
    json_t *body, *reply = NULL, *decided;
    const char *decision, *reason;
    char *text;
    int rc, status = 0;

    decided =
        json_pack("{ssssssss}", "effect", policy_effect_name(d->effect), "mode",
                  policy_mode_name(d->mode), "tier", policy_tier_name(d), "reason", d->reason);
    json_object_set_new(decided, "rule", d->rule[0] ? json_string(d->rule) : json_null());
    body =
        json_pack("{sssssOso}", "harness", gate_harness_name(c->harness), "tool", c->tool, "input",
                  c->input, "mcp_server", c->mcp_server ? json_string(c->mcp_server) : json_null());
    json_object_set_new(body, "decided", decided);
    text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text == NULL)
        return err_set(e, ERR_INVALID, "the call cannot be serialized");
    rc = seam_client_request(cl, "POST", "/_faultline/gate", text, strlen(text), &status, &resp, e);
    free(text);
    if (rc < 0)
        goto out;
    if (status == 404) {
        rc = err_set(e, ERR_UNSUPPORTED, "the controller has no /_faultline/gate (404)");
        goto out;
    }
    reply = json_loadb(resp.data, resp.len, 0, NULL);
    if (status != 200 || !json_is_object(reply)) {
        rc = err_set(e, ERR_PROTO, "the controller answered /_faultline/gate with %d%s", status,
                     json_is_object(reply) ? "" : " and no JSON object");
        goto out;
    }
    decision = json_string_value(json_object_get(reply, "decision"));
    reason = json_string_value(json_object_get(reply, "reason"));
    memset(a, 0, sizeof(*a));
    if (decision && strcmp(decision, "allow") == 0) {
        json_t *in = json_object_get(reply, "input");
        a->verdict = GATE_ALLOW;
        if (json_is_object(in))
            a->updated_input = json_incref(in);
        else if (d->effect == POLICY_REDACT && d->redacted_input)
            a->updated_input = json_incref(d->redacted_input);
    } else if (decision && strcmp(decision, "deny") == 0) {
        a->verdict = GATE_DENY;
        set_reason(a, "", reason && *reason ? reason : "denied");
    } else if (decision && strcmp(decision, "held") == 0) {
        a->verdict = GATE_HELD;
        if (reason && strstr(reason, "HELD:"))
            set_reason(a, "", reason);
        else
            set_reason(a, "HELD: ", reason && *reason ? reason : "held");
    } else {
        rc = err_set(e, ERR_PROTO, "the controller's answer has no decision allow, deny or held");
    }
out:
    json_decref(reply);
    buf_release(&resp);
    return rc;
}

/* One event through the controller (steals ev; best effort: the gate answers anyway). */
static void post_event(struct seam_client *cl, json_t *ev, struct gate_result *r)
{
    struct err e = {0};

    if (cl && seam_client_post_events(cl, ev, &e) < 0)
        buf_addf(&r->err, "faultline gate: the %s event could not be posted: %s\n",
                 json_string_value(json_object_get(ev, "kind")), e.msg);
    json_decref(ev);
}

static void post_warning(struct seam_client *cl, const char *code, const char *message,
                         struct gate_result *r)
{
    post_event(
        cl,
        json_pack("{ssssssss}", "kind", "warning", "src", "gate", "code", code, "message", message),
        r);
}

/* The gate_decision event, for a controller that does not write it itself (no
 * /_faultline/gate): what the gate answered, from the local decision. */
static void post_decision(struct seam_client *cl, const struct gate_call *c,
                          const struct policy_decision *d, const struct gate_answer *a,
                          struct gate_result *r)
{
    static const char *const verdicts[] = {"allow", "deny", "held"};
    json_t *ev = json_pack("{ssssssssssss}", "kind", "gate_decision", "src", "gate", "decision",
                           verdicts[a->verdict], "tier", policy_tier_name(d), "tool", c->tool,
                           "harness", gate_harness_name(c->harness));

    json_object_set_new(ev, "rule", d->rule[0] ? json_string(d->rule) : json_null());
    if (d->rule[0])
        json_object_set_new(ev, "mode", json_string(policy_mode_name(d->mode)));
    if (a->reason[0])
        json_object_set_new(ev, "reason", json_string(a->reason));
    post_event(cl, ev, r);
}

/* Step 4: the input could not be read. */
static void run_failsafe(const struct gate_opts *o, struct seam_client **cl, const char *text,
                         size_t len, const char *why, struct gate_result *r)
{
    struct gate_call c = {.harness = o->harness, .event = GATE_EV_PRE_TOOL};
    struct gate_answer a = {.verdict = GATE_ALLOW};
    struct tier_result t = {0};
    struct buf cmd = BUF_INIT;
    int found;

    r->failsafe = 1;
    found = gate_hook_recover_command(text, len > GATE_INPUT_MAX ? GATE_INPUT_MAX : len, &cmd);
    /* a cut input may leave a command longer than the parser takes: its start is judged */
    if (found)
        tier_of_command(cmd.data, cmd.len > SHELL_MAX_INPUT ? SHELL_MAX_INPUT : cmd.len, &t);
    if (found && t.level == TIER_DESTRUCTIVE) {
        a.verdict = GATE_DENY;
        snprintf(a.reason, sizeof(a.reason),
                 "[faultline] blocked: the hook input could not be read (%s) and its command is "
                 "destructive (%s: %s)",
                 why, t.pattern, t.command);
    } else {
        buf_addf(&r->err,
                 "faultline gate: %s; %s: allowed (the gate fails closed only on a destructive "
                 "command)\n",
                 why, found ? "its command is not destructive" : "no command in it");
    }
    r->verdict = a.verdict;
    gate_answer_render(&c, &a, 1, &r->out, &r->err, &r->exit_code);
    if (client(o, cl, r)) {
        char msg[600];
        snprintf(msg, sizeof(msg), "%s hook: %s (%s)", gate_harness_name(o->harness), why,
                 a.verdict == GATE_DENY ? "denied: destructive command" : "allowed");
        post_warning(*cl, "malformed_hook_input", msg, r);
    }
    buf_release(&cmd);
}

void gate_run(const struct gate_opts *o, const char *text, size_t len, struct gate_result *r)
{
    struct policy_decision d = {0};
    struct gate_answer a = {0};
    struct gate_call c;
    struct seam_client *cl = NULL;
    struct policy *p = NULL;
    struct err e = {0};
    char project[PATH_MAX], ppath[PATH_MAX + 32], cwd[PATH_MAX];
    const char *paths[2];
    size_t npaths = 0;
    int rc;

    if (gate_hook_parse(o->harness, text, len, &c, &e) < 0) {
        run_failsafe(o, &cl, text, len, e.msg, r);
        goto out;
    }
    if (c.event == GATE_EV_OTHER)
        goto out; /* not a call to decide: no opinion */
    if (o->project_dir && *o->project_dir)
        snprintf(project, sizeof(project), "%s", o->project_dir);
    else if (c.project_dir)
        snprintf(project, sizeof(project), "%s", c.project_dir);
    else if (c.cwd)
        project_of(c.cwd, project, sizeof(project));
    else if (getcwd(cwd, sizeof(cwd)))
        project_of(cwd, project, sizeof(project));
    else
        snprintf(project, sizeof(project), ".");
    snprintf(ppath, sizeof(ppath), "%s/%s", project, POLICY_PROJECT_FILE);
    paths[npaths++] = ppath;
    if (o->user_policy && *o->user_policy)
        paths[npaths++] = o->user_policy;
    if (policy_load(&p, paths, npaths, &e) < 0) {
        a.verdict = GATE_DENY;
        snprintf(a.reason, sizeof(a.reason), "[faultline] blocked: the policy cannot be used: %s",
                 e.msg);
        buf_addf(&r->err, "faultline gate: %s\n", e.msg);
        if (client(o, &cl, r))
            post_warning(cl, "policy_invalid", e.msg, r);
        goto answer;
    }
    {
        struct policy_call pc = {
            .tool = c.tool, .input = c.input, .mcp_server = c.mcp_server, .workdir = project};
        policy_decide(p, &pc, &d);
    }
    if (client(o, &cl, r)) {
        err_clear(&e);
        rc = ask_controller(cl, &c, &d, &a, &e);
        if (rc == 0) {
            r->controlled = 1;
            goto answer;
        }
        answer_of_decision(&d, &a);
        if (rc == ERR_UNSUPPORTED)
            post_decision(cl, &c, &d, &a, r); /* the decision is still recorded */
        else
            buf_addf(&r->err,
                     "faultline gate: the controller could not be asked (%s): decided here\n",
                     e.msg);
        goto answer;
    }
    answer_of_decision(&d, &a);
answer:
    r->verdict = a.verdict;
    gate_answer_render(&c, &a, 0, &r->out, &r->err, &r->exit_code);
out:
    gate_answer_release(&a);
    policy_decision_release(&d);
    policy_free(p);
    gate_call_release(&c);
    seam_client_free(cl);
}
