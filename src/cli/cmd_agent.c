/*
 * cmd_agent: `faultline agent`, the reference agent (src/agent/agent.h; docs/agent.md).
 *
 * Reads the flags and the environment (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY,
 * ANTHROPIC_AUTH_TOKEN, ANTHROPIC_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL), loads
 * the project's Claude Code hook settings, runs the loop with SIGINT/SIGTERM turned into a
 * clean stop, prints a one-line summary on stderr, and maps the outcome to the exit code:
 * 0 the model ended its turn, 1 error, 2 usage or bad settings, 3 max turns reached.
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
#include "util/httpc.h"
#include "cli/cli.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/num.h"
#include "util/banned.h"

#define EXIT_MAX_TURNS 3
#define PROMPT_MAX ((size_t)1 << 20)

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    stop_flag = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: faultline agent --prompt TEXT | --prompt-file F\n"
            "         [--api anthropic|openai|responses] [--model M] [--base-url URL]\n"
            "         [--shell] [--mcp NAME=COMMAND]... [--hook COMMAND]... [--no-settings]\n"
            "         [--max-turns N] [--max-tokens N] [--no-stream] [--system TEXT] [--cwd DIR]\n"
            "         [--retries N] [--retry-max-wait S] [--connect-timeout S] [--read-timeout S]\n"
            "         [--request-timeout S] [--shell-timeout S] [--mcp-timeout S]\n"
            "         [--mcp-start-timeout S] [--max-response BYTES] [--quiet]\n"
            "         [--log F] [--log-level error|warn|info|debug]\n"
            "exit: 0 the model ended its turn, 1 error, 2 usage, 3 max turns reached\n");
}

static int parse_secs(const char *flag, const char *v, int *out_ms)
{
    double s;
    if (num_parse_double(v, 0.001, 86400, &s) < 0) {
        fprintf(stderr, "faultline agent: bad %s '%s' (seconds, 0.001..86400)\n", flag, v);
        return -1;
    }
    *out_ms = (int)(s * 1000.0 + 0.5);
    if (*out_ms < 1)
        *out_ms = 1;
    return 0;
}

static int parse_int(const char *flag, const char *v, long long min, long long max, int *out)
{
    long long n;
    if (num_parse_ll(v, min, max, &n) < 0) {
        fprintf(stderr, "faultline agent: bad %s '%s' (%lld..%lld)\n", flag, v, min, max);
        return -1;
    }
    *out = (int)n;
    return 0;
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

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
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
    size_t nhooks = 0;
    int no_settings = 0, have_prompt = 0, rc = EXIT_INVALID, max_resp = 0;

    agent_opts_defaults(&o);
    hook_set_init(&hooks);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            rc = EXIT_OK;
            goto out;
        }
        if (strcmp(a, "--shell") == 0) {
            o.shell = 1;
            continue;
        }
        if (strcmp(a, "--no-settings") == 0) {
            no_settings = 1;
            continue;
        }
        if (strcmp(a, "--no-stream") == 0) {
            o.stream = 0;
            continue;
        }
        if (strcmp(a, "--quiet") == 0) {
            o.quiet = 1;
            continue;
        }
        if (v == NULL || strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "faultline agent: '%s' needs a value or is unknown\n", a);
            usage(stderr);
            goto out;
        }
        i++;
        if (strcmp(a, "--prompt") == 0) {
            buf_reset(&prompt);
            buf_adds(&prompt, v);
            have_prompt = 1;
        } else if (strcmp(a, "--prompt-file") == 0) {
            buf_reset(&prompt);
            if (fs_read_file(v, PROMPT_MAX, &prompt, &e) < 0) {
                fprintf(stderr, "faultline agent: %s\n", e.msg);
                goto out;
            }
            have_prompt = 1;
        } else if (strcmp(a, "--api") == 0) {
            api_s = v;
        } else if (strcmp(a, "--model") == 0) {
            o.model = v;
        } else if (strcmp(a, "--base-url") == 0) {
            o.base_url = v;
        } else if (strcmp(a, "--system") == 0) {
            o.system = v;
        } else if (strcmp(a, "--cwd") == 0) {
            dir = v;
        } else if (strcmp(a, "--mcp") == 0) {
            const char *eq = strchr(v, '=');
            if (eq == NULL || !valid_server_name(v, (size_t)(eq - v)) || eq[1] == '\0') {
                fprintf(stderr,
                        "faultline agent: bad --mcp '%s' (NAME=COMMAND, NAME of 1..32 "
                        "[A-Za-z0-9_-])\n",
                        v);
                goto out;
            }
            if (o.nmcp >= AGENT_MCP_MAX) {
                fprintf(stderr, "faultline agent: at most %d --mcp servers\n", AGENT_MCP_MAX);
                goto out;
            }
            names[o.nmcp] = xstrndup(v, (size_t)(eq - v));
            for (size_t k = 0; k < o.nmcp; k++) {
                if (strcmp(names[k], names[o.nmcp]) == 0) {
                    fprintf(stderr, "faultline agent: two --mcp servers named '%s'\n", names[k]);
                    free(names[o.nmcp]);
                    names[o.nmcp] = NULL;
                    goto out;
                }
            }
            o.mcp[o.nmcp].name = names[o.nmcp];
            o.mcp[o.nmcp].command = eq + 1;
            o.nmcp++;
        } else if (strcmp(a, "--hook") == 0) {
            if (nhooks >= HOOKS_MAX) {
                fprintf(stderr, "faultline agent: at most %d --hook commands\n", HOOKS_MAX);
                goto out;
            }
            hook_cmds[nhooks++] = v;
        } else if (strcmp(a, "--max-turns") == 0) {
            if (parse_int(a, v, 1, 10000, &o.max_turns) < 0)
                goto out;
        } else if (strcmp(a, "--max-tokens") == 0) {
            if (parse_int(a, v, 1, 1000000, &o.max_tokens) < 0)
                goto out;
        } else if (strcmp(a, "--retries") == 0) {
            if (parse_int(a, v, 0, 10, &o.retries) < 0)
                goto out;
        } else if (strcmp(a, "--max-response") == 0) {
            if (parse_int(a, v, 1024, 1 << 30, &max_resp) < 0)
                goto out;
            o.max_response = (uint64_t)max_resp;
        } else if (strcmp(a, "--retry-max-wait") == 0) {
            if (parse_secs(a, v, &o.retry_max_wait_ms) < 0)
                goto out;
        } else if (strcmp(a, "--connect-timeout") == 0) {
            if (parse_secs(a, v, &o.connect_timeout_ms) < 0)
                goto out;
        } else if (strcmp(a, "--read-timeout") == 0) {
            if (parse_secs(a, v, &o.read_timeout_ms) < 0)
                goto out;
        } else if (strcmp(a, "--request-timeout") == 0) {
            if (parse_secs(a, v, &o.total_timeout_ms) < 0)
                goto out;
        } else if (strcmp(a, "--shell-timeout") == 0) {
            if (parse_secs(a, v, &o.shell_timeout_ms) < 0)
                goto out;
        } else if (strcmp(a, "--mcp-timeout") == 0) {
            if (parse_secs(a, v, &o.mcp_call_timeout_ms) < 0)
                goto out;
        } else if (strcmp(a, "--mcp-start-timeout") == 0) {
            if (parse_secs(a, v, &o.mcp_start_timeout_ms) < 0)
                goto out;
        } else if (strcmp(a, "--log") == 0) {
            log_file = v;
        } else if (strcmp(a, "--log-level") == 0) {
            level = v;
        } else {
            fprintf(stderr, "faultline agent: unknown option '%s'\n", a);
            usage(stderr);
            goto out;
        }
    }
    if (!have_prompt || prompt.len == 0) {
        fprintf(stderr, "faultline agent: --prompt TEXT (or --prompt-file F) is required\n");
        usage(stderr);
        goto out;
    }
    if (memchr(prompt.data, '\0', prompt.len)) {
        fprintf(stderr, "faultline agent: the prompt contains a NUL byte\n");
        goto out;
    }
    if (level && log_set_level_name(level) < 0) {
        fprintf(stderr, "faultline agent: bad --log-level '%s'\n", level);
        goto out;
    }
    if (log_file && log_open_file(log_file) < 0) {
        fprintf(stderr, "faultline agent: cannot open log file '%s'\n", log_file);
        rc = EXIT_FAIL;
        goto out;
    }

    /* the API: the flag, else the one whose base URL is set, else Anthropic */
    if (api_s) {
        if (llm_api_parse(api_s, &o.api) < 0) {
            fprintf(stderr, "faultline agent: bad --api '%s' (anthropic, openai, responses)\n",
                    api_s);
            goto out;
        }
    } else if (!env("ANTHROPIC_BASE_URL") && env("OPENAI_BASE_URL")) {
        o.api = LLM_API_CHAT;
    }
    if (o.api == LLM_API_ANTHROPIC) {
        if (o.base_url == NULL)
            o.base_url = env("ANTHROPIC_BASE_URL");
        o.api_key = env("ANTHROPIC_API_KEY");
        if (o.api_key == NULL && (o.api_key = env("ANTHROPIC_AUTH_TOKEN")) != NULL)
            o.bearer = 1;
        if (o.model == NULL)
            o.model = env("ANTHROPIC_MODEL") ? env("ANTHROPIC_MODEL") : "claude-sonnet-4-5";
    } else {
        if (o.base_url == NULL)
            o.base_url = env("OPENAI_BASE_URL");
        o.api_key = env("OPENAI_API_KEY");
        if (o.model == NULL)
            o.model = env("OPENAI_MODEL") ? env("OPENAI_MODEL") : "gpt-5-mini";
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

    for (size_t k = 0; k < nhooks; k++) {
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
    httpc_global_cleanup();
    return rc;
}
