/*
 * agent: the reference agent's loop (see agent.h for the loop and the output format).
 *
 * The tool table maps each offered name to what runs it: the shell (cmdrun) or one MCP
 * client and the server's own tool name. It is rebuilt when an MCP server says its tool list
 * changed. Printing goes through one small printer that remembers whether the last byte
 * written ended a line, so step lines always start on their own line even after streamed
 * assistant text.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/gateask.h"
#include "agent/cmdrun.h"
#include "agent/mcpclient.h"
#include "codec/pricing.h"
#include "codec/tls.h"
#include "util/hash.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define SHELL_OUTPUT_MAX ((size_t)256 << 10)

static const char default_system[] =
    "You are a coding agent working non-interactively in the directory %s. Use the tools you "
    "are offered to do the user's task, then give a short final answer.";

void agent_opts_defaults(struct agent_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->api = LLM_API_ANTHROPIC;
    o->max_turns = 20;
    o->max_tokens = 4096;
    o->stream = 1;
    o->shell_timeout_ms = 120000;
    o->mcp_start_timeout_ms = 30000;
    o->mcp_call_timeout_ms = 60000;
    o->retries = 2;
    o->retry_max_wait_ms = 60000;
    o->connect_timeout_ms = 10000;
    o->read_timeout_ms = 300000;
    o->total_timeout_ms = 900000;
    o->out = stdout;
}

/* ---- provider ---- */

static const char *env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int agent_resolve_provider(struct agent_opts *o, const char *api, struct err *e)
{
    /* the API: the flag, else the one whose base URL is set, else Anthropic */
    if (api) {
        if (llm_api_parse(api, &o->api) < 0)
            return err_set(e, ERR_INVALID, "--api: expected anthropic, openai or responses");
    } else if (!env_set("ANTHROPIC_BASE_URL") && env_set("OPENAI_BASE_URL")) {
        o->api = LLM_API_CHAT;
    }
    o->bearer = 0;
    if (o->api == LLM_API_ANTHROPIC) {
        if (o->base_url == NULL)
            o->base_url = env_set("ANTHROPIC_BASE_URL");
        o->api_key = env_set("ANTHROPIC_API_KEY");
        if (o->api_key == NULL && (o->api_key = env_set("ANTHROPIC_AUTH_TOKEN")) != NULL)
            o->bearer = 1;
        if (o->model == NULL)
            o->model =
                env_set("ANTHROPIC_MODEL") ? env_set("ANTHROPIC_MODEL") : AGENT_MODEL_ANTHROPIC;
    } else {
        if (o->base_url == NULL)
            o->base_url = env_set("OPENAI_BASE_URL");
        o->api_key = env_set("OPENAI_API_KEY");
        if (o->model == NULL)
            o->model = env_set("OPENAI_MODEL") ? env_set("OPENAI_MODEL") : AGENT_MODEL_OPENAI;
    }
    return 0;
}

/* ---- text helpers ---- */

void agent_mcp_tool_name(const char *server, const char *tool, char *out, size_t n)
{
    struct buf b = BUF_INIT;

    buf_addf(&b, "mcp__%s__%s", server, tool);
    if (b.len > AGENT_NAME_MAX)
        buf_truncate(&b, AGENT_NAME_MAX);
    for (size_t i = 0; i < b.len; i++) {
        char c = b.data[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            b.data[i] = '_';
    }
    snprintf(out, n, "%s", b.data);
    buf_release(&b);
}

void agent_line_text(struct buf *out, const char *s, size_t n, size_t max)
{
    size_t cut = n;

    if (n > max) {
        cut = max;
        while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
            cut--; /* do not split a UTF-8 sequence */
    }
    for (size_t i = 0; i < cut; i++) {
        unsigned char c = (unsigned char)s[i];
        buf_addc(out, c < 0x20 || c == 0x7f ? ' ' : (char)c);
    }
    if (cut < n)
        buf_adds(out, "...");
}

/* ---- printing ---- */

struct printer {
    FILE *f;
    int quiet;
    int mid_line; /* the last byte written was not '\n' */
};

static void p_raw(struct printer *p, const char *s, size_t n)
{
    if (n == 0)
        return;
    fwrite(s, 1, n, p->f);
    p->mid_line = s[n - 1] != '\n';
    fflush(p->f);
}

static void p_newline(struct printer *p)
{
    if (p->mid_line)
        p_raw(p, "\n", 1);
}

/* A step line: "[tag] " + head + detail (cleaned, cut to max; max 0: not cut). */
static void p_step(struct printer *p, int always, const char *tag, const char *head,
                   const char *detail, size_t dlen, size_t max)
{
    struct buf b = BUF_INIT;

    if (p->quiet && !always)
        return;
    p_newline(p);
    buf_addf(&b, "[%s] ", tag);
    agent_line_text(&b, head, strlen(head), AGENT_LINE_MAX);
    if (detail)
        agent_line_text(&b, detail, dlen, max ? max : dlen);
    buf_addc(&b, '\n');
    p_raw(p, b.data, b.len);
    buf_release(&b);
}

static void p_stepf(struct printer *p, int always, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void p_stepf(struct printer *p, int always, const char *tag, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;

    va_start(ap, fmt);
    buf_vaddf(&b, fmt, ap);
    va_end(ap);
    p_step(p, always, tag, "", b.data, b.len, b.len);
    buf_release(&b);
}

static void on_text(const char *t, size_t n, void *arg)
{
    p_raw(arg, t, n);
}

/* ---- tools ---- */

enum tool_kind { TOOL_SHELL, TOOL_MCP };

struct tool {
    char name[AGENT_NAME_MAX + 1]; /* offered to the model */
    const char *hook_name;         /* what hooks see ("Bash" for the shell) */
    enum tool_kind kind;
    struct mcpclient *mc;
    char *mcp_tool; /* the server's own name */
};

struct run {
    const struct agent_opts *o;
    struct printer pr;
    struct agent_stats *st;
    struct mcpclient *mc[AGENT_MCP_MAX];
    size_t nmc;
    struct tool *tools;
    size_t ntools;
    json_t *offered;      /* neutral tool array for llm_build_request */
    struct gateask *gate; /* o->control_url's, or NULL */
    char session[40];
    struct pricing_table *prices;
};

static void tools_clear(struct run *r)
{
    for (size_t i = 0; i < r->ntools; i++)
        free(r->tools[i].mcp_tool);
    free(r->tools);
    r->tools = NULL;
    r->ntools = 0;
    json_decref(r->offered);
    r->offered = NULL;
}

static int tool_add(struct run *r, const char *name, const char *desc, const json_t *schema,
                    struct tool *t)
{
    for (size_t i = 0; i < r->ntools; i++) {
        if (strcmp(r->tools[i].name, name) == 0) {
            p_stepf(&r->pr, 0, "warn", "two tools are both offered as '%s'; the second is left out",
                    name);
            free(t->mcp_tool);
            return 0;
        }
    }
    if (r->ntools >= AGENT_TOOLS_MAX) {
        p_stepf(&r->pr, 0, "warn", "more than %d tools; '%s' is left out", AGENT_TOOLS_MAX, name);
        free(t->mcp_tool);
        return 0;
    }
    snprintf(t->name, sizeof(t->name), "%s", name);
    r->tools = xrealloc(r->tools, (r->ntools + 1) * sizeof(*r->tools));
    r->tools[r->ntools++] = *t;
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    if (desc)
        json_object_set_new(o, "description", llm_text_json(desc, strlen(desc)));
    json_object_set_new(o, "input_schema",
                        json_is_object(schema) ? json_deep_copy(schema)
                                               : json_pack("{s:s}", "type", "object"));
    json_array_append_new(r->offered, o);
    return 1;
}

static void tools_build(struct run *r)
{
    tools_clear(r);
    r->offered = json_array();
    if (r->o->shell) {
        struct buf desc = BUF_INIT;
        struct tool t = {.hook_name = "Bash", .kind = TOOL_SHELL};
        buf_addf(&desc,
                 "Run a shell command with sh -c in the working directory %s. Returns its "
                 "standard output and standard error, and the exit code when it is not 0.",
                 r->o->cwd);
        json_t *schema =
            json_pack("{s:s,s:{s:{s:s,s:s}},s:[s]}", "type", "object", "properties", "command",
                      "type", "string", "description", "The command to run", "required", "command");
        tool_add(r, "shell", desc.data, schema, &t);
        json_decref(schema);
        buf_release(&desc);
    }
    for (size_t i = 0; i < r->nmc; i++) {
        const json_t *list = mcpclient_tools(r->mc[i]);
        size_t k;
        json_t *mt;
        json_array_foreach(list, k, mt)
        {
            const char *tn = json_string_value(json_object_get(mt, "name"));
            char name[AGENT_NAME_MAX + 1];
            agent_mcp_tool_name(mcpclient_name(r->mc[i]), tn, name, sizeof(name));
            struct tool t = {.kind = TOOL_MCP, .mc = r->mc[i], .mcp_tool = xstrdup(tn)};
            if (tool_add(r, name, json_string_value(json_object_get(mt, "description")),
                         json_object_get(mt, "inputSchema"), &t))
                r->tools[r->ntools - 1].hook_name = r->tools[r->ntools - 1].name;
        }
    }
}

static const struct tool *tool_find(const struct run *r, const char *name)
{
    for (size_t i = 0; i < r->ntools; i++)
        if (strcmp(r->tools[i].name, name) == 0)
            return &r->tools[i];
    return NULL;
}

/* Cuts a result to AGENT_RESULT_MAX with a note. */
static void cap_result(struct buf *b)
{
    if (b->len <= AGENT_RESULT_MAX)
        return;
    size_t cut = AGENT_RESULT_MAX, more;
    while (cut > 0 && ((unsigned char)b->data[cut] & 0xc0) == 0x80)
        cut--;
    more = b->len - cut;
    buf_truncate(b, cut);
    buf_addf(b, "\n[... %zu more bytes cut]", more);
}

static void run_shell(struct run *r, const json_t *input, struct buf *out, int *is_error)
{
    const char *cmd = json_string_value(json_object_get(input, "command"));
    struct cmdrun_opts co;
    struct cmdrun_result res;
    struct err e = {0};

    if (cmd == NULL || *cmd == '\0') {
        buf_adds(out, "shell: the input needs a non-empty string 'command'");
        *is_error = 1;
        return;
    }
    memset(&co, 0, sizeof(co));
    co.command = cmd;
    co.cwd = r->o->cwd;
    co.timeout_ms = r->o->shell_timeout_ms;
    co.max_output = SHELL_OUTPUT_MAX;
    co.merge_stderr = 1;
    co.stop = r->o->stop;
    cmdrun_result_init(&res);
    if (cmdrun(&co, &res, &e) < 0) {
        buf_addf(out, "shell: cannot run the command: %s", e.msg);
        *is_error = 1;
        cmdrun_result_release(&res);
        return;
    }
    buf_add(out, res.out.data, res.out.len);
    if (res.out_total > res.out.len)
        buf_addf(out, "\n[... %llu more bytes of output not kept]",
                 (unsigned long long)(res.out_total - res.out.len));
    if (res.timed_out) {
        buf_addf(out, "%sCommand timed out after %d s and was killed", out->len ? "\n" : "",
                 r->o->shell_timeout_ms / 1000);
        *is_error = 1;
    } else if (res.interrupted) {
        buf_addf(out, "%sCommand interrupted", out->len ? "\n" : "");
        *is_error = 1;
    } else if (res.exit_code != 0) {
        buf_addf(out, "%sExit code %d", out->len ? "\n" : "", res.exit_code);
        *is_error = 1;
    }
    if (out->len == 0)
        buf_adds(out, "(no output)");
    cmdrun_result_release(&res);
}

/* Runs one tool call; the result goes into the conversation. Returns 0, or AGENT_ERROR when a
 * hook stopped the agent. */
static int run_call(struct run *r, const struct llm_call *k, struct llm_conv *conv, struct err *e)
{
    const struct agent_opts *o = r->o;
    struct buf out = BUF_INIT;
    int is_error = 0, rc = 0;
    const struct tool *t = tool_find(r, k->name);
    const json_t *input = k->input;
    struct hook_decision d;
    struct gateask_answer ga;

    hook_decision_init(&d);
    gateask_answer_init(&ga);
    r->st->tool_calls++;
    {
        struct buf head = BUF_INIT;
        buf_addf(&head, "%s ", k->name);
        p_step(&r->pr, 0, "tool", head.data, k->args, strlen(k->args), AGENT_LINE_MAX);
        buf_release(&head);
    }
    if (k->input_error) {
        buf_addf(&out, "invalid tool call: %s", k->input_error);
        is_error = 1;
        goto done;
    }
    if (t == NULL) {
        buf_addf(&out, "unknown tool '%s'", k->name);
        is_error = 1;
        goto done;
    }
    if (o->hooks && o->hooks->n > 0) {
        hook_run(o->hooks, r->session, o->cwd, t->hook_name, input, k->id, o->stop, &d);
        if (d.notes.len) {
            char *s = d.notes.data, *nl;
            while ((nl = strchr(s, '\n')) != NULL) {
                p_step(&r->pr, 0, "hook", "", s, (size_t)(nl - s), AGENT_LINE_MAX);
                s = nl + 1;
            }
        }
        if (d.verdict == HOOK_STOP) {
            p_step(&r->pr, 1, "stopped", "a hook stopped the agent: ", d.reason.data, d.reason.len,
                   0);
            rc = err_set(e, ERR_INVALID, "a PreToolUse hook stopped the agent");
            buf_add(&out, d.reason.data, d.reason.len);
            is_error = 1;
            goto done;
        }
        if (d.verdict == HOOK_DENY) {
            struct buf head = BUF_INIT;
            buf_addf(&head, "%s: ", k->name);
            p_step(&r->pr, 0, "blocked", head.data, d.reason.data, d.reason.len, AGENT_LINE_MAX);
            buf_release(&head);
            buf_add(&out, d.reason.data, d.reason.len);
            if (out.len == 0)
                buf_adds(&out, "blocked by a PreToolUse hook");
            is_error = 1;
            r->st->blocked++;
            goto done;
        }
        if (d.updated_input) {
            char *s = json_dumps(d.updated_input, JSON_COMPACT);
            p_step(&r->pr, 0, "hook", "input replaced: ", s, s ? strlen(s) : 0, AGENT_LINE_MAX);
            free(s);
            input = d.updated_input;
        }
    }
    if (r->gate && t->kind == TOOL_SHELL) {
        gateask_ask(r->gate, t->hook_name, input, &ga);
        if (ga.unreachable)
            p_step(&r->pr, 0, "gate", "", ga.reason.data, ga.reason.len, AGENT_LINE_MAX);
        if (ga.verdict != GATEASK_ALLOW) {
            struct buf head = BUF_INIT;
            buf_addf(&head, "%s: ", k->name);
            p_step(&r->pr, 0, "blocked", head.data, ga.reason.data, ga.reason.len, AGENT_LINE_MAX);
            buf_release(&head);
            buf_add(&out, ga.reason.data, ga.reason.len);
            is_error = 1;
            r->st->blocked++;
            goto done;
        }
        if (ga.input) {
            p_step(&r->pr, 0, "gate", "input redacted", NULL, 0, 0);
            input = ga.input;
        }
    }
    if (o->stop && *o->stop) {
        buf_adds(&out, "interrupted");
        is_error = 1;
        goto done;
    }
    if (t->kind == TOOL_SHELL) {
        run_shell(r, input, &out, &is_error);
    } else {
        struct err ce = {0};
        if (mcpclient_call(t->mc, t->mcp_tool, input, o->mcp_call_timeout_ms, &out, &is_error,
                           &ce) < 0) {
            buf_reset(&out);
            buf_adds(&out, ce.msg);
            is_error = 1;
        }
        if (out.len == 0)
            buf_adds(&out, "(no output)");
    }
done:
    cap_result(&out);
    if (is_error)
        r->st->tool_errors++;
    {
        struct buf head = BUF_INIT;
        buf_addf(&head, "%s %s: ", k->name, is_error ? "error" : "ok");
        p_step(&r->pr, 0, "result", head.data, out.data, out.len, AGENT_LINE_MAX);
        buf_release(&head);
    }
    llm_conv_add_result(conv, k->id, k->name, out.data, is_error);
    hook_decision_release(&d);
    gateask_answer_release(&ga);
    buf_release(&out);
    return rc;
}

/* ---- model calls ---- */

static void describe_api_error(const struct llm_reply *rep, int rc, const struct err *te,
                               struct buf *out)
{
    if (rc < 0) {
        buf_adds(out, te->msg);
        return;
    }
    if (rep->status)
        buf_addf(out, "HTTP %d", rep->status);
    if (rep->error_type[0])
        buf_addf(out, "%s%s", out->len ? " " : "", rep->error_type);
    if (rep->status >= 200 && rep->status <= 299 && rep->streamed)
        buf_adds(out, " (in the response stream)");
    buf_addf(out, ": %s", rep->error_message.len ? rep->error_message.data : "(no message)");
}

/* Sleeps ms, waking every 100 ms to look at o->stop. Returns 0, or ERR_SYS when a signal
 * asked the agent to stop. */
static int interruptible_sleep(const struct agent_opts *o, int64_t ms)
{
    int64_t end = time_mono_ns() + ms * 1000000;
    while (time_mono_ns() < end) {
        if (o->stop && *o->stop)
            return ERR_SYS;
        int64_t left = (end - time_mono_ns()) / 1000000;
        time_sleep_ms(left > 100 ? 100 : left > 0 ? left : 0);
    }
    return 0;
}

/* Asks the model, retrying as allowed. 0 with rep filled, or AGENT_ERROR (printed). */
static int ask_model(struct run *r, const struct llm_endpoint *ep, const json_t *req,
                     struct llm_reply *rep, struct err *e)
{
    const struct agent_opts *o = r->o;
    struct buf why = BUF_INIT;
    int rc;

    for (int attempt = 0;; attempt++) {
        struct err te = {0};
        int stream_out = o->stream && !o->quiet;
        r->st->requests++;
        rc = llm_exchange(ep, req, stream_out ? on_text : NULL, &r->pr, rep, &te);
        if (rc == 0 && !rep->error)
            break;
        p_newline(&r->pr);
        buf_reset(&why);
        describe_api_error(rep, rc, &te, &why);
        if (o->stop && *o->stop) {
            p_step(&r->pr, 1, "error", "interrupted while calling the model API", NULL, 0, 0);
            err_set(e, ERR_SYS, "interrupted");
            rc = AGENT_ERROR;
            goto out;
        }
        if (attempt < o->retries && llm_retryable(rep, rc)) {
            int64_t wait =
                llm_retry_delay_ms(rc < 0 ? NULL : rep, attempt + 1, o->retry_max_wait_ms);
            p_stepf(&r->pr, 0, "retry", "model API: %s (retry %d of %d in %.1f s)", why.data,
                    attempt + 1, o->retries, (double)wait / 1000.0);
            if (interruptible_sleep(o, wait) < 0) {
                p_step(&r->pr, 1, "error", "interrupted", NULL, 0, 0);
                err_set(e, ERR_SYS, "interrupted");
                rc = AGENT_ERROR;
                goto out;
            }
            continue;
        }
        p_step(&r->pr, 1, "error", "model API: ", why.data, why.len, 0);
        err_set(e, rc < 0 ? rc : ERR_PROTO, "model API: %.200s", why.data);
        rc = AGENT_ERROR;
        goto out;
    }
    rc = 0;
out:
    buf_release(&why);
    return rc;
}

static void account(struct run *r, const struct llm_reply *rep)
{
    struct agent_stats *st = r->st;
    const char *model = rep->model[0] ? rep->model : r->o->model;
    int known = 0;

    st->turns++;
    st->usage.input_tokens += rep->usage.input_tokens;
    st->usage.cache_write_tokens += rep->usage.cache_write_tokens;
    st->usage.cache_write_1h_tokens += rep->usage.cache_write_1h_tokens;
    st->usage.cache_read_tokens += rep->usage.cache_read_tokens;
    st->usage.output_tokens += rep->usage.output_tokens;
    st->usage.reasoning_tokens += rep->usage.reasoning_tokens;
    st->usage.present |= rep->usage.present;
    st->cost_usd += pricing_cost(r->prices, model, &rep->usage, &known);
    if (!known)
        st->cost_known = 0;
    snprintf(st->model, sizeof(st->model), "%s", model);
}

/* ---- the loop ---- */

static int start_servers(struct run *r, struct err *e)
{
    for (size_t i = 0; i < r->o->nmcp; i++) {
        struct mcpclient_opts mo = {.name = r->o->mcp[i].name,
                                    .command = r->o->mcp[i].command,
                                    .cwd = r->o->cwd,
                                    .timeout_ms = r->o->mcp_start_timeout_ms,
                                    .stop = r->o->stop};
        struct err me = {0};
        struct mcpclient *c = mcpclient_start(&mo, &me);
        if (c == NULL) {
            p_stepf(&r->pr, 1, "error", "MCP server '%s': %s", mo.name, me.msg);
            return err_set(e, me.code ? me.code : ERR_IO, "MCP server '%s': %.200s", mo.name,
                           me.msg);
        }
        r->mc[r->nmc++] = c;
        p_stepf(&r->pr, 0, "mcp", "%s: %zu tools (%s)", mo.name,
                json_array_size(mcpclient_tools(c)), mcpclient_server_info(c));
    }
    return 0;
}

static void refresh_changed(struct run *r)
{
    int any = 0;
    for (size_t i = 0; i < r->nmc; i++) {
        mcpclient_poll(r->mc[i]);
        if (!mcpclient_tools_changed(r->mc[i]))
            continue;
        struct err e = {0};
        if (mcpclient_refresh_tools(r->mc[i], r->o->mcp_start_timeout_ms, &e) < 0)
            p_stepf(&r->pr, 0, "warn", "MCP server '%s': cannot list tools again: %s",
                    mcpclient_name(r->mc[i]), e.msg);
        else
            any = 1;
    }
    if (any)
        tools_build(r);
}

int agent_run(const struct agent_opts *o, struct agent_stats *st_out, struct err *e)
{
    struct run r;
    struct agent_stats st_local;
    struct llm_endpoint ep;
    struct llm_conv conv;
    struct llm_reply rep;
    struct buf sys = BUF_INIT;
    int rc = AGENT_ERROR;

    memset(&r, 0, sizeof(r));
    memset(&ep, 0, sizeof(ep));
    r.o = o;
    r.pr.f = o->out ? o->out : stdout;
    r.pr.quiet = o->quiet;
    r.st = st_out ? st_out : &st_local;
    memset(r.st, 0, sizeof(*r.st));
    r.st->cost_known = 1;
    r.prices = pricing_new();
    {
        uint64_t h = hash64(o->prompt, strlen(o->prompt),
                            (uint64_t)time_now_ms() ^ ((uint64_t)getpid() << 32));
        snprintf(r.session, sizeof(r.session), "faultline-agent-%016llx", (unsigned long long)h);
    }
    llm_conv_init(&conv);
    llm_reply_init(&rep);

    if (llm_endpoint_init(&ep, o->api, o->base_url, e) < 0) {
        p_stepf(&r.pr, 1, "error", "%s", e->msg);
        goto out;
    }
    ep.api_key = o->api_key;
    ep.bearer = o->bearer;
    ep.connect_timeout_ms = o->connect_timeout_ms;
    ep.idle_timeout_ms = o->read_timeout_ms;
    ep.total_timeout_ms = o->total_timeout_ms;
    ep.max_response = o->max_response;
    ep.stop = o->stop;
    /* one TLS context for the run: loading the trust store once, not once per model call */
    if (ep.url.tls && (ep.tls = tls_client_ctx_new(NULL, e)) == NULL) {
        p_stepf(&r.pr, 1, "error", "%s", e->msg);
        goto out;
    }

    if (o->control_url && o->shell) {
        struct err ge = {0};
        if ((r.gate = gateask_new(o->control_url, &ge)) == NULL)
            p_stepf(&r.pr, 1, "warn", "FAULTLINE_CONTROL_URL: %s: shell calls are not gated",
                    ge.msg);
    }
    if (start_servers(&r, e) < 0)
        goto out;
    tools_build(&r);
    {
        char where[HTTPC_HOST_MAX + 16];
        url_authority(&ep.url, where, sizeof(where));
        p_stepf(&r.pr, 0, "agent", "%s model %s at %s://%s%s, %zu tools%s", llm_api_name(o->api),
                o->model, ep.url.tls ? "https" : "http", where, ep.target, r.ntools,
                o->hooks && o->hooks->n ? ", hooks on" : "");
    }
    if (o->system == NULL)
        buf_addf(&sys, default_system, o->cwd);
    else
        buf_adds(&sys, o->system);
    llm_conv_add_user(&conv, o->prompt);

    for (int turn = 1;; turn++) {
        if (o->stop && *o->stop) {
            p_step(&r.pr, 1, "error", "interrupted", NULL, 0, 0);
            err_set(e, ERR_SYS, "interrupted");
            goto out;
        }
        if (turn > o->max_turns) {
            p_stepf(&r.pr, 1, "stopped", "max turns (%d) reached; the model still wanted tools",
                    o->max_turns);
            rc = AGENT_MAX_TURNS;
            goto out;
        }
        refresh_changed(&r);
        struct llm_params lp = {.api = o->api,
                                .model = o->model,
                                .system = sys.data,
                                .max_tokens = o->max_tokens,
                                .stream = o->stream,
                                .tools = r.offered};
        json_t *req = llm_build_request(&lp, &conv);
        int arc = ask_model(&r, &ep, req, &rep, e);
        json_decref(req);
        if (arc != 0)
            goto out;
        p_newline(&r.pr);
        account(&r, &rep);
        if (rep.text_truncated)
            p_stepf(&r.pr, 0, "warn", "the answer's text was cut at %zu bytes", LLM_TEXT_MAX);
        if (rep.calls_dropped)
            p_stepf(&r.pr, 0, "warn", "%zu tool calls past %d were ignored", rep.calls_dropped,
                    LLM_CALLS_MAX);
        llm_conv_add_assistant(&conv, &rep);
        if (rep.ncalls == 0) {
            if (!rep.streamed || o->quiet) {
                p_raw(&r.pr, rep.text.data, rep.text.len);
                p_newline(&r.pr);
            }
            if (strcmp(rep.stop_reason, "max_tokens") == 0 ||
                strcmp(rep.stop_reason, "length") == 0 ||
                strcmp(rep.stop_reason, "incomplete") == 0)
                p_stepf(&r.pr, 0, "warn", "the model stopped at its token limit (%s)",
                        rep.stop_reason);
            rc = AGENT_DONE;
            goto out;
        }
        if (!rep.streamed && !o->quiet && rep.text.len) {
            p_raw(&r.pr, rep.text.data, rep.text.len);
            p_newline(&r.pr);
        }
        for (size_t i = 0; i < rep.ncalls; i++) {
            if (run_call(&r, &rep.calls[i], &conv, e) != 0)
                goto out;
        }
    }
out:
    p_newline(&r.pr);
    for (size_t i = 0; i < r.nmc; i++)
        mcpclient_free(r.mc[i]);
    tools_clear(&r);
    gateask_free(r.gate);
    pricing_free(r.prices);
    SSL_CTX_free(ep.tls);
    llm_reply_release(&rep);
    llm_conv_release(&conv);
    buf_release(&sys);
    return rc;
}
