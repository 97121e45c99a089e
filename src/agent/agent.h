/*
 * agent: the reference agent's loop (`faultline agent`): a model (llm.h), tools from MCP
 * servers (mcpclient.h) and an optional shell tool, PreToolUse hooks (hook.h) before every
 * tool call, and a running account of what happens on an output stream.
 *
 *   start the MCP servers, list their tools (offered as mcp__SERVER__TOOL)
 *   conversation = [prompt]
 *   turn 1..max_turns:
 *     ask the model (streamed text goes out as it arrives; retryable errors are retried at
 *       most `retries` times, honouring retry-after)
 *     no tool calls: print the final answer, DONE
 *     for each tool call: [tool] line; hooks (a block becomes an is_error result holding the
 *       hook's reason); for the shell with a control URL, the gate (gateask.h: a deny or a
 *       hold becomes an is_error result holding the gate's reason); run it; [result] line;
 *       the result goes back to the model
 *   the model still wants tools after max_turns: MAX_TURNS
 *
 * Output lines (one per step, cut to AGENT_LINE_MAX bytes, control characters blanked):
 *   [agent] API model URL, tools     [mcp] NAME: N tools (server info)
 *   [tool] NAME {json input}         [hook] note      [blocked] NAME: reason
 *   [gate] note
 *   [result] NAME ok: text           [result] NAME error: text
 *   [retry] why (n/N, in S s)        [warn] ...       [error] why (whole, never cut)
 *   [stopped] why
 * Assistant text is written as it is, as it streams; the final answer is the text of the last
 * turn, written verbatim (a newline is added when it does not end with one).
 *
 * The shell tool ("shell", input {"command"}) runs `sh -c COMMAND` in the working directory.
 * Hooks see it as Claude Code's "Bash" tool (tool_name "Bash", tool_input {"command": ...}),
 * so matchers and gates written for Claude Code apply; MCP tools keep their mcp__ names.
 */
#ifndef FAULTLINE_AGENT_AGENT_H
#define FAULTLINE_AGENT_AGENT_H

#include <signal.h>
#include <stdio.h>

#include "agent/hook.h"
#include "agent/llm.h"
#include "codec/wire.h"
#include "util/err.h"

#define AGENT_MCP_MAX 16
#define AGENT_TOOLS_MAX 512
#define AGENT_RESULT_MAX ((size_t)100 << 10) /* tool result text sent to the model */
#define AGENT_LINE_MAX 300                   /* bytes of detail in a step line */
#define AGENT_NAME_MAX 64                    /* tool names offered (OpenAI's limit) */

/* The model when neither --model nor ANTHROPIC_MODEL / OPENAI_MODEL gives one. */
#define AGENT_MODEL_ANTHROPIC "claude-sonnet-4-5"
#define AGENT_MODEL_OPENAI "gpt-5-mini"

/* What agent_run ended with; cmd_agent's exit codes (docs/agent.md). */
enum agent_outcome {
    AGENT_DONE = 0,     /* the model ended its turn */
    AGENT_ERROR = 1,    /* model API error, MCP start failure, a hook stopped it, interrupt */
    AGENT_MAX_TURNS = 3 /* still calling tools when max_turns was reached */
};

struct agent_mcp_spec {
    const char *name;    /* [A-Za-z0-9_-]+ */
    const char *command; /* sh -c COMMAND */
};

struct agent_opts {
    const char *prompt;
    enum llm_api api;
    const char *model;
    const char *base_url; /* NULL: the API's default */
    const char *api_key;  /* NULL or "": none sent; never printed */
    int bearer;           /* Anthropic: Authorization: Bearer instead of x-api-key */
    const char *system;   /* NULL: the built-in system prompt; "": none */
    int max_turns;        /* > 0 */
    int max_tokens;       /* > 0 */
    int stream;
    int shell; /* offer the shell tool */
    int shell_timeout_ms;
    struct agent_mcp_spec mcp[AGENT_MCP_MAX];
    size_t nmcp;
    int mcp_start_timeout_ms;
    int mcp_call_timeout_ms;
    const struct hook_set *hooks; /* borrowed; NULL or empty: none */
    const char *cwd;              /* the working directory (absolute) */
    int retries;                  /* model API retries (0: none) */
    int retry_max_wait_ms;        /* cap on one wait, retry-after included */
    int connect_timeout_ms, read_timeout_ms, total_timeout_ms;
    uint64_t max_response;       /* model response body limit, 0: LLM_RESPONSE_MAX */
    int quiet;                   /* only the final answer and [error] lines */
    FILE *out;                   /* where the steps and the answer go */
    volatile sig_atomic_t *stop; /* set by a signal handler: stop at the next step */
    const char *control_url;     /* FAULTLINE_CONTROL_URL: each shell call asks the gate
                                    (gateask.h) after the hooks; NULL: no gate */
};

struct agent_stats {
    int turns;    /* model calls that got an answer */
    int requests; /* HTTP exchanges, retries included */
    size_t tool_calls, tool_errors, blocked;
    struct wire_usage usage; /* summed over turns */
    double cost_usd;
    int cost_known; /* every model seen is in the price table */
    char model[WIRE_MODEL_MAX];
};

/* Fills o with defaults: anthropic, stream, 20 turns, 4096 tokens, 120 s shell timeout, 30 s
 * MCP start and 60 s MCP call timeouts, 2 retries waiting at most 60 s, timeouts 10 s connect,
 * 300 s read, 900 s per request, output to stdout. */
void agent_opts_defaults(struct agent_opts *o);

/* Which model API the agent talks to, where, with which key and model, from the flags and the
 * environment (docs/agent.md). api: the --api flag's value or NULL; then the API whose base URL
 * is set (OPENAI_BASE_URL alone: openai chat), else anthropic. o->base_url and o->model hold
 * the --base-url and --model flags (NULL: not given) and are kept when set; else
 * ANTHROPIC_BASE_URL / OPENAI_BASE_URL and ANTHROPIC_MODEL / OPENAI_MODEL, else the API's
 * default model. The key: ANTHROPIC_API_KEY, else ANTHROPIC_AUTH_TOKEN (sent as Bearer, sets
 * o->bearer), or OPENAI_API_KEY. Empty variables count as unset. Sets o->api, o->base_url,
 * o->api_key, o->bearer and o->model, borrowed from api and the environment. 0, or
 * ERR_INVALID for an unknown api (e says). */
int agent_resolve_provider(struct agent_opts *o, const char *api, struct err *e);

/* Runs the agent. Returns an agent_outcome; on AGENT_ERROR e says why (the [error] line has
 * already been written). The model name, MCP names and cwd must be set. st may be NULL. */
int agent_run(const struct agent_opts *o, struct agent_stats *st, struct err *e);

/* The tool name offered for tool of MCP server: "mcp__SERVER__TOOL" with characters outside
 * [A-Za-z0-9_-] replaced by '_' and cut to AGENT_NAME_MAX, into out (n > AGENT_NAME_MAX). */
void agent_mcp_tool_name(const char *server, const char *tool, char *out, size_t n);
/* s without control characters (blanked) and cut to max bytes (at a UTF-8 boundary, "..."
 * appended when cut), appended to out: the form of a step line. */
void agent_line_text(struct buf *out, const char *s, size_t n, size_t max);

#endif
