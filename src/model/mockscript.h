/*
 * mockscript: the mock model's script (YAML, docs/mock-model.md): rules matched against the
 * conversation of one request, and the reply the first matching rule renders.
 *
 * Pure and stateless: the reply is a function of the script and the request only (no clock,
 * no counters), so the same conversation always gets the same answer, whichever process or
 * retry asks. Sequencing comes from the conversation itself (turn count, last tool result).
 *
 *   name: resilient
 *   error_pattern: "exit code [1-9]|[Ee]rror"    # optional, POSIX ERE
 *   rules:
 *     - name: run
 *       when: {first_turn: true, tool_offered: Bash}
 *       reply:
 *         text: "Running it."
 *         tool_calls: [{name: Bash, input: {command: "echo hello > out.txt"}}]
 *     - when: {last_tool_result_error: true}
 *       reply: {text: "It failed: {{last_tool_result}}"}
 *   fallback: {text: "Done."}
 *
 * The conversation view (struct mockscript_view) is read from the request of each API:
 * Anthropic messages[] (tool_result blocks, is_error), chat messages[] (role "tool"),
 * Responses input[] (function_call_output and other *_call_output items).
 *
 * Codex offers MCP tools only through client-side tool search: tools[] holds
 * {"type": "tool_search", "execution": "client"}; the model answers with a tool_search_call item,
 * Codex sends back a tool_search_output item whose tools are namespaces
 * ({"type": "namespace", "name": "mcp__SERVER", "tools": [{"type": "function", "name": T}]}),
 * and the model then calls {"type": "function_call", "namespace": "mcp__SERVER", "name": T}. The
 * view names such a function "mcp__SERVER__T", as Codex does, so a script offers and calls it
 * by that name (docs/mock-model.md, "Codex and MCP tools").
 */
#ifndef FAULTLINE_MODEL_MOCKSCRIPT_H
#define FAULTLINE_MODEL_MOCKSCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "codec/wire.h"
#include "util/buf.h"
#include "util/err.h"

#define MOCKSCRIPT_FILE_MAX ((size_t)1 << 20) /* script files */
#define MOCKSCRIPT_RULES_MAX 1000
#define MOCKSCRIPT_TEXT_MAX ((size_t)1 << 20) /* conversation text a rule looks at */
#define MOCKSCRIPT_ECHO_MAX 4000              /* bytes of a tool result a template echoes */

struct mockscript;

/* Parses a script. name is used in messages ("NAME:LINE:COL: ..."). Caller frees with
 * mockscript_free. NULL with e set: ERR_PARSE (YAML), ERR_INVALID (unknown key, wrong type,
 * bad regex, unknown template variable, ...), ERR_LIMIT. */
struct mockscript *mockscript_parse(const char *text, size_t len, const char *name, struct err *e);
/* Reads and parses a file (at most MOCKSCRIPT_FILE_MAX bytes). ERR_IO when unreadable. */
struct mockscript *mockscript_load(const char *path, struct err *e);
/* mockscript_free(NULL) is a no-op. */
void mockscript_free(struct mockscript *s);
/* The script's name (its name: key, or "" when absent). Borrowed. */
const char *mockscript_name(const struct mockscript *s);
/* The model to report (its model: key), or NULL to echo the request's model. Borrowed. */
const char *mockscript_model(const struct mockscript *s);

/* The conversation of one request, as rules see it. */
struct mockscript_view {
    enum wire_api api;
    const char *model;      /* borrowed from the request; "" when absent */
    size_t turn;            /* assistant turns so far (0 on the first call) */
    size_t tool_results;    /* tool results in the conversation */
    int last_result_error;  /* the last tool result is an error (is_error, or error_pattern) */
    struct buf last_result; /* text of the last tool result ("" when none) */
    struct buf last_user;   /* text of the last user-authored message (not tool results) */
    struct buf user_text;   /* all user-authored text, "\n"-joined */
    struct buf all_results; /* every tool result's text, "\n"-joined */
    json_t *offered;        /* tool names offered by the request (array of strings) */
    json_t *namespaced;     /* Responses: "NS__NAME" -> {"namespace": NS, "name": NAME} for the
                               functions of namespace tools, offered in tools[] or loaded by a
                               tool_search_output item (Codex's MCP tools); also in offered */
    int client_tool_search; /* Responses: tools[] has {"type": "tool_search", "execution":
                               "client"}: a tool call named tool_search is a tool_search_call */
    json_t *last_call;      /* the last tool call made: {"name": N, "input": {...}}, or NULL */
    char canary[64];        /* the last canary-like token (E-XXXX-8 hex) in a tool result,
                               else in user text; "" when none */
};

/* Builds the view of req (borrowed) for api. error_pattern is the script's (NULL: the
 * default). Caller releases with mockscript_view_release. 0, or ERR_INVALID with e set when
 * req is not a conversation of that API (messages/input missing or of the wrong kind). */
int mockscript_view_init(struct mockscript_view *v, const struct mockscript *s, enum wire_api api,
                         const json_t *req, struct err *e);
void mockscript_view_release(struct mockscript_view *v);

/* A rendered reply. */
struct mockscript_reply {
    int rule;              /* index of the matching rule, -1 for the fallback */
    const char *rule_name; /* borrowed from the script: its name, or "" */
    struct buf text;       /* assistant text ("" for none) */
    json_t *tool_calls;    /* array of {"name": N, "input": {...}} (owned, may be empty) */
    int error_status;      /* > 0: answer with this HTTP error instead */
    struct buf error_message;
    int has_usage; /* the rule fixes some usage counts: */
    int64_t usage_input, usage_cache_write, usage_cache_read, usage_output; /* -1: computed */
};

void mockscript_reply_init(struct mockscript_reply *r);
void mockscript_reply_release(struct mockscript_reply *r);
/* Finds the first rule matching v and renders its reply into r (reset first). Returns 0;
 * when no rule matches and the script has no fallback, the reply is the text
 * "mock-model: no rule matched (turn N)". Never fails on input: templates render missing
 * values as "". */
int mockscript_reply(const struct mockscript *s, const struct mockscript_view *v,
                     struct mockscript_reply *r);

/* Tokens the mock charges: ceil(bytes / 4), at least 1. */
int64_t mockscript_tokens(size_t bytes);

#endif
