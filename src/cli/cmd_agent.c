/*
 * cmd_agent: `faultline agent`, the reference agent (src/agent/agent.h; docs/agent.md).
 *
 * Reads the flags, leaves the provider (API, base URL, key, model from the flags and the
 * environment) to agent_resolve_provider, loads the project's Claude Code hook settings, runs the
 * loop with SIGINT/SIGTERM turned into a clean stop, prints a one-line summary on stderr, and maps
 * the outcome to the exit code: 0 the model ended its turn, 1 error, 2 bad settings, 3 max turns
 * reached, 64 usage.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/hook.h"
#include "cli/cli.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/text.h"
#include "util/banned.h"

#define EXIT_MAX_TURNS 3
#define PROMPT_MAX ((size_t)1 << 20)

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    stop_flag = 1;
}

static int valid_server_name(const char *s, size_t n)
{
    if (n == 0 || n > 32)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* What the repeatable and compound flags fill in (OPT_CALL contexts). */
struct agent_flags {
    struct agent_opts *o;
    char **names;
    const char **hook_cmds;
    size_t nhooks;
    const char *prompt, *prompt_file; /* the last of --prompt / --prompt-file wins */
};

static int on_prompt(const struct opt *op, const char *v, struct err *e)
{
    struct agent_flags *f = op->value;
    f->prompt = v;
    f->prompt_file = NULL;
    return 0;
}

static int on_prompt_file(const struct opt *op, const char *v, struct err *e)
{
    struct agent_flags *f = op->value;
    f->prompt_file = v;
    f->prompt = NULL;
    return 0;
}

static int on_mcp(const struct opt *op, const char *v, struct err *e)
{
    struct agent_flags *f = op->value;
    struct agent_opts *o = f->o;
    const char *eq = strchr(v, '=');
    char shown[TEXT_SHOWN_SIZE];

    text_shown(v, strlen(v), shown);
    if (eq == NULL || !valid_server_name(v, (size_t)(eq - v)) || eq[1] == '\0')
        return err_set(e, ERR_INVALID,
                       "--mcp: expected NAME=COMMAND (NAME of 1..32 [A-Za-z0-9_-]), got '%s'",
                       shown);
    if (o->nmcp >= AGENT_MCP_MAX)
        return err_set(e, ERR_INVALID, "--mcp: at most %d servers", AGENT_MCP_MAX);
    for (size_t k = 0; k < o->nmcp; k++)
        if (strlen(f->names[k]) == (size_t)(eq - v) &&
            strncmp(f->names[k], v, (size_t)(eq - v)) == 0)
            return err_set(e, ERR_INVALID, "--mcp: two servers named '%s'", f->names[k]);
    f->names[o->nmcp] = xstrndup(v, (size_t)(eq - v));
    o->mcp[o->nmcp].name = f->names[o->nmcp];
    o->mcp[o->nmcp].command = eq + 1;
    o->nmcp++;
    return 0;
}

static int on_hook(const struct opt *op, const char *v, struct err *e)
{
    struct agent_flags *f = op->value;
    if (f->nhooks >= HOOKS_MAX)
        return err_set(e, ERR_INVALID, "--hook: at most %d commands", HOOKS_MAX);
    f->hook_cmds[f->nhooks++] = v;
    return 0;
}

int cmd_agent(int argc, char **argv)
{
    struct agent_opts o;
    struct agent_stats st;
    struct hook_set hooks;
    struct err e = {0};
    struct buf prompt = BUF_INIT;
    char cwd[PATH_MAX];
    char *names[AGENT_MCP_MAX] = {0};
    const char *api_s = NULL, *dir = NULL, *log_file = NULL, *level = NULL;
    const char *hook_cmds[HOOKS_MAX];
    int no_settings = 0, no_stream = 0, rc, max_resp, nargs;
    struct agent_flags fl = {.o = &o, .names = names, .hook_cmds = hook_cmds};

    agent_opts_defaults(&o);
    hook_set_init(&hooks);
    max_resp = (int)LLM_RESPONSE_MAX;
    const struct opt opts[] = {
        OPT_CALL("prompt", "TEXT", on_prompt, &fl, "the task (this or --prompt-file is required)"),
        OPT_CALL("prompt-file", "F", on_prompt_file, &fl, "read the task from F"),
        OPT_STRING("api", "API", &api_s, "anthropic, or openai if only OPENAI_BASE_URL is set",
                   "anthropic, openai (chat completions) or responses"),
        OPT_STRING("model", "M", &o.model, "$ANTHROPIC_MODEL or $OPENAI_MODEL, else per API",
                   "the model"),
        OPT_STRING("base-url", "URL", &o.base_url, "$ANTHROPIC_BASE_URL or $OPENAI_BASE_URL",
                   "the API's base URL"),
        OPT_BOOL("shell", 0, &o.shell, "offer the shell tool"),
        OPT_CALL("mcp", "NAME=COMMAND", on_mcp, &fl, "an MCP stdio server (repeatable)"),
        OPT_CALL("hook", "COMMAND", on_hook, &fl, "a PreToolUse hook command (repeatable)"),
        OPT_BOOL("no-settings", 0, &no_settings, "ignore .claude/settings*.json hooks"),
        OPT_INT("max-turns", "N", &o.max_turns, 1, 10000, "model turns before giving up"),
        OPT_INT("max-tokens", "N", &o.max_tokens, 1, 1000000, "output tokens per response"),
        OPT_BOOL("no-stream", 0, &no_stream, "ask for whole responses, not SSE"),
        OPT_STRING("system", "TEXT", &o.system, NULL, "the system prompt"),
        OPT_STRING("cwd", "DIR", &dir, "the current directory", "work in DIR"),
        OPT_INT("retries", "N", &o.retries, 0, 10, "model API retries on 429/5xx"),
        OPT_SECS("retry-max-wait", "S", &o.retry_max_wait_ms, 1, 86400000,
                 "longest backoff or retry-after honoured"),
        OPT_SECS("connect-timeout", "S", &o.connect_timeout_ms, 1, 86400000, "connect and TLS"),
        OPT_SECS("read-timeout", "S", &o.read_timeout_ms, 1, 86400000, "silence in a response"),
        OPT_SECS("request-timeout", "S", &o.total_timeout_ms, 1, 86400000, "a whole request"),
        OPT_SECS("shell-timeout", "S", &o.shell_timeout_ms, 1, 86400000, "a shell command"),
        OPT_SECS("mcp-timeout", "S", &o.mcp_call_timeout_ms, 1, 86400000, "an MCP tool call"),
        OPT_SECS("mcp-start-timeout", "S", &o.mcp_start_timeout_ms, 1, 86400000,
                 "an MCP server's start and initialize"),
        OPT_INT("max-response", "BYTES", &max_resp, 1024, 1 << 30, "model response body limit"),
        OPT_BOOL("quiet", 0, &o.quiet, "print no transcript"),
        OPT_STRING("log", "F", &log_file, "stderr", "log here"),
        OPT_STRING("log-level", "LEVEL", &level, "warn", "error, warn, info or debug"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "agent",
        .usage = "--prompt TEXT | --prompt-file F [options]",
        .about = "The reference agent: a model loop with a shell tool, MCP stdio servers and\n"
                 "Claude Code PreToolUse hooks. Reads ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY,\n"
                 "ANTHROPIC_AUTH_TOKEN, ANTHROPIC_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY and\n"
                 "OPENAI_MODEL. Exit: 0 the model ended its turn, 1 error, 2 bad settings,\n"
                 "3 max turns reached, 64 usage.\n",
        .opts = opts,
        .max_args = 0,
        .example = "agent --shell --prompt 'run the tests and fix what fails'",
        .doc = "docs/agent.md",
    };

    rc = cli_parse(&cmd, argc, argv, &nargs);
    if (rc >= 0)
        goto out;
    rc = EXIT_INVALID;
    if (no_stream)
        o.stream = 0;
    o.max_response = (uint64_t)max_resp;
    if (fl.prompt_file) {
        if (fs_read_file(fl.prompt_file, PROMPT_MAX, &prompt, &e) < 0) {
            fprintf(stderr, "faultline agent: %s\n", e.msg);
            goto out;
        }
    } else if (fl.prompt) {
        buf_adds(&prompt, fl.prompt);
    }
    if (prompt.len == 0) {
        opt_usage_error(&cmd, "--prompt TEXT (or --prompt-file F) is required");
        rc = EXIT_USAGE;
        goto out;
    }
    if (memchr(prompt.data, '\0', prompt.len)) {
        fprintf(stderr, "faultline agent: the prompt contains a NUL byte\n");
        goto out;
    }
    if (level && log_set_level_name(level) < 0) {
        opt_usage_error(&cmd, "--log-level: expected error, warn, info or debug");
        rc = EXIT_USAGE;
        goto out;
    }
    if (log_file && log_open_file(log_file) < 0) {
        fprintf(stderr, "faultline agent: cannot open log file '%s'\n", log_file);
        rc = EXIT_FAIL;
        goto out;
    }

    if (agent_resolve_provider(&o, api_s, &e) < 0) {
        opt_usage_error(&cmd, e.msg);
        rc = EXIT_USAGE;
        goto out;
    }

    if (dir && chdir(dir) < 0) {
        fprintf(stderr, "faultline agent: cannot enter '%s': %s\n", dir, strerror(errno));
        goto out;
    }
    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        fprintf(stderr, "faultline agent: cannot read the working directory: %s\n",
                strerror(errno));
        rc = EXIT_FAIL;
        goto out;
    }
    o.cwd = cwd;
    o.prompt = prompt.data;

    for (size_t k = 0; k < fl.nhooks; k++) {
        if (hook_set_add(&hooks, NULL, hook_cmds[k], 0, "--hook", &e) < 0) {
            fprintf(stderr, "faultline agent: %s\n", e.msg);
            goto out;
        }
    }
    if (!no_settings) {
        static const char *const files[] = {".claude/settings.json", ".claude/settings.local.json"};
        for (size_t k = 0; k < 2; k++) {
            if (hook_set_load_settings(&hooks, files[k], &e) < 0) {
                fprintf(stderr, "faultline agent: %s\n", e.msg);
                goto out;
            }
        }
    }
    o.hooks = &hooks;
    o.stop = &stop_flag;
    {
        const char *cu = getenv("FAULTLINE_CONTROL_URL");
        o.control_url = cu && *cu ? cu : NULL;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal; /* no SA_RESTART: waits wake up and see the flag */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    int outcome = agent_run(&o, &st, &e);
    fprintf(stderr,
            "faultline agent: %s after %d turn%s (%d request%s), %zu tool call%s (%zu failed, "
            "%zu blocked); tokens: %lld in, %lld cache write, %lld cache read, %lld out; "
            "~$%.6f%s\n",
            outcome == AGENT_DONE        ? "done"
            : outcome == AGENT_MAX_TURNS ? "max turns reached"
                                         : "failed",
            st.turns, st.turns == 1 ? "" : "s", st.requests, st.requests == 1 ? "" : "s",
            st.tool_calls, st.tool_calls == 1 ? "" : "s", st.tool_errors, st.blocked,
            (long long)st.usage.input_tokens, (long long)st.usage.cache_write_tokens,
            (long long)st.usage.cache_read_tokens, (long long)st.usage.output_tokens, st.cost_usd,
            st.cost_known ? "" : " (a model not in the price table: default rates)");
    rc = outcome == AGENT_DONE ? EXIT_OK : outcome == AGENT_MAX_TURNS ? EXIT_MAX_TURNS : EXIT_FAIL;
out:
    hook_set_release(&hooks);
    for (size_t k = 0; k < AGENT_MCP_MAX; k++)
        free(names[k]);
    buf_release(&prompt);
    return rc;
}
