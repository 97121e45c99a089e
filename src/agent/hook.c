/*
 * hook: PreToolUse hooks in Claude Code's format (see hook.h for the configuration, the input
 * and the decision table). Loading compiles each matcher once; running feeds the JSON input to
 * `sh -c COMMAND` through cmdrun and reads the decision from its exit code, stdout and stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/cmdrun.h"
#include "agent/hook.h"
#include "util/fs.h"
#include "util/text.h"
#include "util/banned.h"

void hook_set_init(struct hook_set *s)
{
    s->v = NULL;
    s->n = 0;
}

void hook_set_release(struct hook_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        struct hook_entry *h = &s->v[i];
        if (!h->match_all)
            regfree(&h->re);
        free(h->matcher);
        free(h->command);
        free(h->source);
    }
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

int hook_set_add(struct hook_set *s, const char *matcher, const char *command, int timeout_ms,
                 const char *source, struct err *e)
{
    struct hook_entry h;

    if (command == NULL || *command == '\0')
        return err_set(e, ERR_INVALID, "%s: empty hook command", source);
    if (s->n >= HOOKS_MAX)
        return err_set(e, ERR_LIMIT, "%s: more than %d hooks", source, HOOKS_MAX);
    memset(&h, 0, sizeof(h));
    if (matcher == NULL || *matcher == '\0' || strcmp(matcher, "*") == 0) {
        h.match_all = 1;
        matcher = "";
    } else {
        struct buf pat = BUF_INIT;
        buf_addf(&pat, "^(%s)$", matcher);
        int rc = regcomp(&h.re, pat.data, REG_EXTENDED | REG_NOSUB);
        buf_release(&pat);
        if (rc != 0) {
            char why[128];
            regerror(rc, &h.re, why, sizeof(why));
            return err_set(e, ERR_INVALID, "%s: bad matcher '%.100s': %s", source, matcher, why);
        }
    }
    h.matcher = xstrdup(matcher);
    h.command = xstrdup(command);
    h.timeout_ms = timeout_ms > 0 ? timeout_ms : HOOK_TIMEOUT_DEFAULT_MS;
    h.source = xstrdup(source);
    s->v = xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
    s->v[s->n++] = h;
    return 0;
}

int hook_set_load_settings(struct hook_set *s, const char *path, struct err *e)
{
    struct buf text = BUF_INIT;
    struct stat st;
    json_error_t je;
    json_t *root = NULL, *pre, *group;
    size_t i, k;
    int rc = 0;

    if (stat(path, &st) < 0 && errno == ENOENT)
        return 0;
    if ((rc = fs_read_file(path, HOOK_SETTINGS_MAX, &text, e)) < 0)
        goto out;
    root = json_loadb(text.data, text.len, 0, &je);
    if (root == NULL) {
        rc = err_set(e, ERR_PARSE, "%s:%d:%d: %s", path, je.line, je.column, JE_TEXT(je));
        goto out;
    }
    if (!json_is_object(root)) {
        rc = err_set(e, ERR_INVALID, "%s: settings must be a JSON object", path);
        goto out;
    }
    json_t *hooks = json_object_get(root, "hooks");
    if (hooks == NULL || json_is_null(hooks)) {
        rc = 1;
        goto out;
    }
    if (!json_is_object(hooks)) {
        rc = err_set(e, ERR_INVALID, "%s: \"hooks\" must be an object", path);
        goto out;
    }
    pre = json_object_get(hooks, "PreToolUse");
    if (pre == NULL) {
        rc = 1;
        goto out;
    }
    if (!json_is_array(pre)) {
        rc = err_set(e, ERR_INVALID, "%s: hooks.PreToolUse must be an array", path);
        goto out;
    }
    json_array_foreach(pre, i, group)
    {
        json_t *m = json_object_get(group, "matcher"), *list = json_object_get(group, "hooks"), *h;
        if (!json_is_object(group) || (m && !json_is_string(m) && !json_is_null(m)) ||
            !json_is_array(list)) {
            rc =
                err_set(e, ERR_INVALID,
                        "%s: hooks.PreToolUse[%zu] must be {\"matcher\": string, \"hooks\": [...]}",
                        path, i);
            goto out;
        }
        json_array_foreach(list, k, h)
        {
            const char *type = json_string_value(json_object_get(h, "type"));
            const char *cmd = json_string_value(json_object_get(h, "command"));
            json_t *t = json_object_get(h, "timeout");
            int timeout_ms = 0;
            if (type && strcmp(type, "command") != 0)
                continue; /* http, prompt, agent, ...: not supported here */
            if (cmd == NULL) {
                rc = err_set(e, ERR_INVALID, "%s: hooks.PreToolUse[%zu].hooks[%zu]: no \"command\"",
                             path, i, k);
                goto out;
            }
            if (t && !json_is_null(t)) {
                double v = json_number_value(t);
                if (!json_is_number(t) || v <= 0 || v > HOOK_TIMEOUT_MAX_S) {
                    rc = err_set(e, ERR_INVALID,
                                 "%s: hooks.PreToolUse[%zu].hooks[%zu]: timeout must be 1..%d s",
                                 path, i, k, HOOK_TIMEOUT_MAX_S);
                    goto out;
                }
                timeout_ms = (int)(v * 1000);
            }
            if ((rc = hook_set_add(s, json_string_value(m), cmd, timeout_ms, path, e)) < 0)
                goto out;
        }
    }
    rc = 1;
out:
    json_decref(root);
    buf_release(&text);
    return rc;
}

int hook_matches(const struct hook_entry *h, const char *tool_name)
{
    return h->match_all || regexec(&h->re, tool_name, 0, NULL, 0) == 0;
}

json_t *hook_input(const char *session_id, const char *cwd, const char *tool_name,
                   const json_t *tool_input, const char *tool_use_id)
{
    json_t *o = json_object();

    json_object_set_new(o, "session_id", json_string(session_id ? session_id : ""));
    json_object_set_new(o, "cwd", json_string(cwd ? cwd : ""));
    json_object_set_new(o, "permission_mode", json_string("default"));
    json_object_set_new(o, "hook_event_name", json_string("PreToolUse"));
    json_object_set_new(o, "tool_name", json_string(tool_name ? tool_name : ""));
    json_object_set_new(o, "tool_input", tool_input ? json_deep_copy(tool_input) : json_object());
    json_object_set_new(o, "tool_use_id", json_string(tool_use_id ? tool_use_id : ""));
    return o;
}

void hook_decision_init(struct hook_decision *d)
{
    memset(d, 0, sizeof(*d));
    buf_init(&d->reason, HOOK_OUTPUT_MAX);
    buf_init(&d->notes, HOOK_OUTPUT_MAX);
}

void hook_decision_release(struct hook_decision *d)
{
    buf_release(&d->reason);
    buf_release(&d->notes);
    json_decref(d->updated_input);
    d->updated_input = NULL;
}

/* s[0..n) without leading and trailing white space. */
static void trim(const char **s, size_t *n)
{
    while (*n > 0 && strchr(" \t\r\n", (*s)[0])) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && strchr(" \t\r\n", (*s)[*n - 1]))
        (*n)--;
}

static void raise_to(struct hook_decision *d, enum hook_verdict v, const char *reason, size_t n)
{
    if (v <= d->verdict)
        return;
    d->verdict = v;
    buf_reset(&d->reason);
    if (reason && buf_add(&d->reason, reason, n) < 0)
        buf_add(&d->reason, reason, d->reason.max);
}

/* Adds one note line: prefix, the first line of detail (at most 200 bytes), suffix. */
static void add_note(struct hook_decision *d, const char *prefix, const char *detail, size_t n,
                     const char *suffix)
{
    const char *nl = memchr(detail, '\n', n);
    if (nl)
        n = (size_t)(nl - detail);
    if (n > 200)
        n = 200;
    buf_addf(&d->notes, "%s%.*s%s\n", prefix, (int)n, detail, suffix);
}

void hook_decide(int exit_code, int timed_out, const char *out, size_t outlen, const char *err,
                 size_t errlen, struct hook_decision *d)
{
    json_error_t je;
    json_t *j;
    char tmp[96];

    trim(&out, &outlen);
    trim(&err, &errlen);
    if (timed_out || exit_code < 0) {
        add_note(d, "hook timed out or did not finish", "", 0, "; the call proceeds");
        return;
    }
    if (exit_code == 2) {
        if (errlen == 0)
            raise_to(d, HOOK_DENY, "blocked by a PreToolUse hook (exit 2)", 37);
        else
            raise_to(d, HOOK_DENY, err, errlen);
        return;
    }
    if (exit_code != 0) {
        snprintf(tmp, sizeof(tmp), "hook exited with status %d: ", exit_code);
        add_note(d, tmp, err, errlen, "; the call proceeds");
        return;
    }
    if (outlen == 0 || out[0] != '{')
        return;
    j = json_loadb(out, outlen, 0, &je);
    if (!json_is_object(j)) {
        char why[JSON_ERROR_TEXT_LENGTH];
        text_parse_error(je.text, why, sizeof(why));
        add_note(d, "hook printed invalid JSON: ", why, strlen(why), "; the call proceeds");
        json_decref(j);
        return;
    }
    json_t *hso = json_object_get(j, "hookSpecificOutput");
    const char *pd = json_string_value(json_object_get(hso, "permissionDecision"));
    const char *pdr = json_string_value(json_object_get(hso, "permissionDecisionReason"));
    const char *legacy = json_string_value(json_object_get(j, "decision"));
    const char *lreason = json_string_value(json_object_get(j, "reason"));
    json_t *cont = json_object_get(j, "continue");

    if (json_is_false(cont)) {
        const char *why = json_string_value(json_object_get(j, "stopReason"));
        if (why == NULL || *why == '\0')
            why = "a PreToolUse hook stopped the agent";
        raise_to(d, HOOK_STOP, why, strlen(why));
    } else if (pd && strcmp(pd, "deny") == 0) {
        const char *why = pdr && *pdr ? pdr : "denied by a PreToolUse hook";
        raise_to(d, HOOK_DENY, why, strlen(why));
    } else if (pd && strcmp(pd, "ask") == 0) {
        struct buf b = BUF_INIT;
        buf_addf(&b,
                 "a PreToolUse hook asked for the user's confirmation, which this "
                 "non-interactive agent cannot get%s%s",
                 pdr && *pdr ? ": " : "", pdr ? pdr : "");
        raise_to(d, HOOK_DENY, b.data, b.len);
        buf_release(&b);
    } else if (legacy && strcmp(legacy, "block") == 0) {
        const char *why = lreason && *lreason ? lreason : "blocked by a PreToolUse hook";
        raise_to(d, HOOK_DENY, why, strlen(why));
    } else if ((pd && strcmp(pd, "allow") == 0) || (legacy && strcmp(legacy, "approve") == 0)) {
        json_t *upd = json_object_get(hso, "updatedInput");
        raise_to(d, HOOK_ALLOW, NULL, 0);
        if (json_is_object(upd) && d->updated_input == NULL)
            d->updated_input = json_deep_copy(upd);
    }
    json_decref(j);
}

int hook_run(const struct hook_set *s, const char *session_id, const char *cwd,
             const char *tool_name, const json_t *tool_input, const char *tool_use_id,
             volatile sig_atomic_t *stop, struct hook_decision *d)
{
    json_t *in = NULL;
    char *text = NULL;
    struct buf env = BUF_INIT;

    for (size_t i = 0; i < s->n && d->verdict < HOOK_DENY; i++) {
        const struct hook_entry *h = &s->v[i];
        struct cmdrun_opts o;
        struct cmdrun_result r;
        struct err e = {0};
        if (!hook_matches(h, tool_name))
            continue;
        if (text == NULL) {
            in = hook_input(session_id, cwd, tool_name, tool_input, tool_use_id);
            text = json_dumps(in, JSON_COMPACT);
            buf_addf(&env, "CLAUDE_PROJECT_DIR=%s", cwd ? cwd : ".");
        }
        const char *envv[] = {env.data, NULL};
        memset(&o, 0, sizeof(o));
        o.command = h->command;
        o.cwd = cwd;
        o.env_add = envv;
        o.input = text ? text : "{}";
        o.input_len = strlen(o.input);
        o.timeout_ms = h->timeout_ms;
        o.max_output = HOOK_OUTPUT_MAX;
        o.stop = stop;
        cmdrun_result_init(&r);
        d->ran++;
        if (cmdrun(&o, &r, &e) < 0)
            add_note(d, "hook could not start: ", e.msg, strlen(e.msg), "; the call proceeds");
        else
            hook_decide(r.exit_code, r.timed_out || r.interrupted, r.out.data, r.out.len,
                        r.err.data, r.err.len, d);
        cmdrun_result_release(&r);
    }
    free(text);
    json_decref(in);
    buf_release(&env);
    return 0;
}
