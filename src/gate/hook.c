/*
 * hook: reading each harness's pre-tool hook input and writing its answer (the tables are in
 * hook.h). jansson parses the input (with JSON_REJECT_DUPLICATES: a second `command` member
 * must not hide the first from the policy); gate_hook_recover_command is the lax reader for
 * input jansson refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate/hook.h"
#include "util/utf8.h"
#include "util/banned.h"

static const char *const harness_names[GATE_NHARNESS] = {"claude-code", "codex", "cursor"};

const char *gate_harness_name(enum gate_harness h)
{
    return (unsigned)h < GATE_NHARNESS ? harness_names[h] : "?";
}

int gate_harness_find(const char *name, enum gate_harness *out)
{
    for (int i = 0; i < GATE_NHARNESS; i++)
        if (strcmp(name, harness_names[i]) == 0) {
            *out = (enum gate_harness)i;
            return 0;
        }
    return ERR_NOTFOUND;
}

void gate_call_release(struct gate_call *c)
{
    free(c->event_name);
    free(c->tool);
    json_decref(c->input);
    free(c->mcp_server);
    free(c->cwd);
    free(c->project_dir);
    free(c->tool_use_id);
    memset(c, 0, sizeof(*c));
}

void gate_answer_release(struct gate_answer *a)
{
    json_decref(a->updated_input);
    a->updated_input = NULL;
}

/* An optional string member: 0 (absent or null: *out stays NULL), or ERR_INVALID. */
static int opt_string(const json_t *o, const char *key, char **out, struct err *e)
{
    const json_t *v = json_object_get(o, key);

    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return err_set(e, ERR_INVALID, "hook input: '%s' is not a string", key);
    *out = xstrndup(json_string_value(v), json_string_length(v));
    return 0;
}

/* mcp__SERVER__TOOL -> SERVER (NULL for any other name). */
static char *mcp_server_of(const char *tool)
{
    const char *s, *end;

    if (strncmp(tool, "mcp__", 5) != 0)
        return NULL;
    s = tool + 5;
    end = strstr(s, "__");
    if (end == NULL || end == s)
        return NULL;
    return xstrndup(s, (size_t)(end - s));
}

/* tool_name and tool_input of a pre-tool event. */
static int read_tool(json_t *root, struct gate_call *c, struct err *e)
{
    json_t *in;
    int rc;

    if ((rc = opt_string(root, "tool_name", &c->tool, e)) < 0)
        return rc;
    if (c->tool == NULL || c->tool[0] == '\0')
        return err_set(e, ERR_INVALID, "hook input: no 'tool_name'");
    in = json_object_get(root, "tool_input");
    if (json_is_string(in)) {
        /* Cursor has sent MCP arguments as a JSON text: read it as the object it holds */
        json_t *parsed =
            json_loadb(json_string_value(in), json_string_length(in), JSON_REJECT_DUPLICATES, NULL);
        if (json_is_object(parsed))
            c->input = parsed;
        else {
            json_decref(parsed);
            c->input = json_pack("{sO}", "input", in);
        }
    } else if (in == NULL || json_is_null(in)) {
        c->input = json_object();
    } else if (json_is_object(in)) {
        c->input = json_deep_copy(in);
    } else {
        return err_set(e, ERR_INVALID, "hook input: 'tool_input' is not an object");
    }
    if (c->input == NULL)
        return err_set(e, ERR_NOMEM, "hook input: out of memory");
    c->mcp_server = mcp_server_of(c->tool);
    return 0;
}

static int parse_cursor(json_t *root, struct gate_call *c, struct err *e)
{
    json_t *roots = json_object_get(root, "workspace_roots");
    int rc;

    if (json_is_array(roots) && json_is_string(json_array_get(roots, 0)))
        c->project_dir = xstrdup(json_string_value(json_array_get(roots, 0)));
    if (strcmp(c->event_name, "beforeShellExecution") == 0) {
        const json_t *cmd = json_object_get(root, "command");
        c->event = GATE_EV_SHELL;
        if (!json_is_string(cmd))
            return err_set(e, ERR_INVALID, "hook input: no 'command' string");
        c->tool = xstrdup("Shell");
        c->input = json_pack("{sO}", "command", cmd);
        return c->input ? 0 : err_set(e, ERR_NOMEM, "hook input: out of memory");
    }
    if (strcmp(c->event_name, "beforeMCPExecution") == 0) {
        static const char *const server_keys[] = {"server", "url", "command"};
        c->event = GATE_EV_MCP;
        if ((rc = read_tool(root, c, e)) < 0)
            return rc;
        for (size_t i = 0; i < 3 && c->mcp_server == NULL; i++)
            if ((rc = opt_string(root, server_keys[i], &c->mcp_server, e)) < 0)
                return rc;
        if (c->mcp_server == NULL)
            c->mcp_server = xstrdup("");
        return 0;
    }
    if (strcmp(c->event_name, "preToolUse") == 0) {
        c->event = GATE_EV_PRE_TOOL;
        return read_tool(root, c, e);
    }
    c->event = GATE_EV_OTHER;
    return 0;
}

int gate_hook_parse(enum gate_harness h, const char *text, size_t len, struct gate_call *out,
                    struct err *e)
{
    json_error_t je;
    json_t *root;
    int rc;

    memset(out, 0, sizeof(*out));
    out->harness = h;
    if (len > GATE_INPUT_MAX)
        return err_set(e, ERR_LIMIT, "hook input: %zu bytes, over the limit of %zu", len,
                       GATE_INPUT_MAX);
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL)
        return err_set(e, ERR_PARSE, "hook input: not JSON: line %d column %d: %s", je.line,
                       je.column, je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return err_set(e, ERR_PARSE, "hook input: not a JSON object");
    }
    if ((rc = opt_string(root, "hook_event_name", &out->event_name, e)) < 0 ||
        (rc = opt_string(root, "cwd", &out->cwd, e)) < 0 ||
        (rc = opt_string(root, "tool_use_id", &out->tool_use_id, e)) < 0)
        goto out;
    if (h == GATE_CURSOR) {
        if (out->event_name == NULL) {
            rc = err_set(e, ERR_INVALID, "hook input: no 'hook_event_name'");
            goto out;
        }
        rc = parse_cursor(root, out, e);
        goto out;
    }
    if (out->event_name == NULL)
        out->event_name = xstrdup("PreToolUse");
    if (strcmp(out->event_name, "PreToolUse") != 0) {
        out->event = GATE_EV_OTHER;
        rc = 0;
        goto out;
    }
    out->event = GATE_EV_PRE_TOOL;
    rc = read_tool(root, out, e);
out:
    if (rc == 0 && out->tool == NULL)
        out->tool = xstrdup("");
    if (rc == 0 && out->input == NULL)
        out->input = json_object();
    json_decref(root);
    return rc;
}

/* Decodes the JSON string starting after its opening quote at p, up to its closing quote or
 * end; invalid escapes are kept as written. */
static void decode_string(const char *p, const char *end, struct buf *out)
{
    while (p < end && *p != '"') {
        if (*p != '\\') {
            buf_addc(out, *p++);
            continue;
        }
        if (++p >= end)
            break;
        switch (*p) {
        case 'n':
            buf_addc(out, '\n');
            break;
        case 't':
            buf_addc(out, '\t');
            break;
        case 'r':
            buf_addc(out, '\r');
            break;
        case 'b':
            buf_addc(out, '\b');
            break;
        case 'f':
            buf_addc(out, '\f');
            break;
        case 'u': {
            unsigned cp = 0;
            int k;
            for (k = 1; k <= 4 && p + k < end; k++) {
                char h = p[k];
                cp = cp * 16 + (unsigned)(h >= '0' && h <= '9'   ? h - '0'
                                          : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                          : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                                 : 0);
            }
            if (k != 5)
                return; /* cut inside the escape: the text ends here */
            {
                char u[4];
                size_t n = utf8_put(cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp, u);
                buf_add(out, u, n);
                p += 4;
            }
            break;
        }
        default: /* \" \\ \/ and anything else: the character itself */
            buf_addc(out, *p);
        }
        p++;
    }
}

int gate_hook_recover_command(const char *text, size_t len, struct buf *out)
{
    static const char *const keys[] = {"\"command\"", "\"cmd\""};
    const char *end = text + len;

    for (size_t k = 0; k < 2; k++) {
        size_t klen = strlen(keys[k]);
        for (const char *p = text; p + klen <= end; p++) {
            const char *q;
            p = memchr(p, '"', (size_t)(end - p));
            if (p == NULL || p + klen > end)
                break;
            if (memcmp(p, keys[k], klen) != 0)
                continue;
            q = p + klen;
            while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
                q++;
            if (q >= end || *q != ':')
                continue;
            q++;
            while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
                q++;
            if (q >= end || *q != '"')
                continue;
            decode_string(q + 1, end, out);
            return 1;
        }
    }
    return 0;
}

/* Claude Code's and Codex's hookSpecificOutput for PreToolUse. */
static void render_pre_tool_use(const struct gate_call *c, const struct gate_answer *a,
                                struct buf *out)
{
    json_t *hso = json_object(), *root;
    char *text;

    json_object_set_new(hso, "hookEventName", json_string("PreToolUse"));
    if (a->verdict == GATE_ALLOW) {
        json_object_set_new(hso, "permissionDecision", json_string("allow"));
        /* Codex refuses fields it does not know: updatedInput only */
        if (c->harness != GATE_CODEX && a->reason[0])
            json_object_set_new(hso, "permissionDecisionReason", json_string(a->reason));
        json_object_set(hso, "updatedInput", a->updated_input);
    } else {
        json_object_set_new(hso, "permissionDecision", json_string("deny"));
        json_object_set_new(hso, "permissionDecisionReason", json_string(a->reason));
    }
    root = json_pack("{so}", "hookSpecificOutput", hso);
    text = json_dumps(root, JSON_COMPACT);
    buf_adds(out, text);
    buf_addc(out, '\n');
    free(text);
    json_decref(root);
}

static void render_cursor(const struct gate_call *c, const struct gate_answer *a, struct buf *out)
{
    json_t *root = json_object();
    char *text;

    if (a->verdict == GATE_ALLOW && a->updated_input && c->event != GATE_EV_PRE_TOOL) {
        /* only preToolUse takes a new input: a secret the policy masks must not pass */
        json_object_set_new(root, "permission", json_string("deny"));
        json_object_set_new(root, "user_message",
                            json_string("[faultline] the policy redacts this call's input, and "
                                        "this hook cannot pass a changed input on"));
        json_object_set(root, "agent_message", json_object_get(root, "user_message"));
    } else if (a->verdict == GATE_ALLOW) {
        json_object_set_new(root, "permission", json_string("allow"));
        if (a->updated_input)
            json_object_set(root, "updated_input", a->updated_input);
    } else {
        json_object_set_new(root, "permission", json_string("deny"));
        json_object_set_new(root, "user_message", json_string(a->reason));
        json_object_set_new(root, "agent_message", json_string(a->reason));
    }
    text = json_dumps(root, JSON_COMPACT);
    buf_adds(out, text);
    buf_addc(out, '\n');
    free(text);
    json_decref(root);
}

void gate_answer_render(const struct gate_call *c, const struct gate_answer *a, int failsafe,
                        struct buf *out, struct buf *errb, int *exit_code)
{
    *exit_code = 0;
    if (failsafe) {
        if (a->verdict != GATE_ALLOW) {
            buf_adds(errb, a->reason);
            buf_addc(errb, '\n');
            *exit_code = 2;
        }
        return;
    }
    if (c->event == GATE_EV_OTHER)
        return;
    if (c->harness == GATE_CURSOR) {
        render_cursor(c, a, out);
        return;
    }
    if (a->verdict == GATE_ALLOW && a->updated_input == NULL)
        return; /* no opinion: the harness's own permissions apply */
    render_pre_tool_use(c, a, out);
}
