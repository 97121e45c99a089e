/*
 * hook: the pre-tool hook formats of the harnesses `faultline gate` serves (docs/gate.md,
 * "Harness answers"): reading a hook's JSON input into one neutral call, and writing an answer
 * back in the harness's own format. Pure: no I/O, no policy, no controller (gate.h does the
 * flow).
 *
 * Input (stdin of the hook process, one JSON object; unknown fields are ignored):
 *
 *   harness      event                      tool              input           mcp server
 *   claude-code  PreToolUse (or absent)     tool_name         tool_input      mcp__S__T -> S
 *   codex        PreToolUse (or absent)     tool_name         tool_input      mcp__S__T -> S
 *   cursor       beforeShellExecution       "Shell"           {"command"}     -
 *   cursor       beforeMCPExecution         tool_name         tool_input      server|url|command
 *   cursor       preToolUse                 tool_name         tool_input      mcp__S__T -> S
 *
 * Any other event is passed through (answered with "no opinion"). The input is kept as the
 * harness sent it (a `command` given as an array of words is the policy's to join).
 *
 * Answers (gate_answer_render), per verdict:
 *
 *   harness      allow                     allow + new input         deny / held
 *   claude-code  exit 0, no output         permissionDecision allow  permissionDecision deny
 *                                          + updatedInput            + the reason
 *   codex        exit 0, no output         permissionDecision allow  permissionDecision deny
 *                                          + updatedInput            + the reason (never ask)
 *   cursor       permission allow          preToolUse: allow +       permission deny,
 *                                          updated_input; others:    user_message and
 *                                          deny (cannot redact)      agent_message the reason
 *
 * A malformed or oversized input is answered with exit 2 and the reason on stderr, which all
 * three read as a block (gate_answer_render's `failsafe`).
 */
#ifndef FAULTLINE_GATE_HOOK_H
#define FAULTLINE_GATE_HOOK_H

#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

/* The limit on a hook's input: more is refused as oversized (docs/gate.md). */
#define GATE_INPUT_MAX ((size_t)1 << 20)

enum gate_harness { GATE_CLAUDE_CODE = 0, GATE_CODEX, GATE_CURSOR, GATE_NHARNESS };

/* What kind of hook event the input was. */
enum gate_event {
    GATE_EV_PRE_TOOL = 0, /* a tool call about to run: decided */
    GATE_EV_SHELL,        /* Cursor beforeShellExecution: decided */
    GATE_EV_MCP,          /* Cursor beforeMCPExecution: decided */
    GATE_EV_OTHER         /* any other event: passed through */
};

/* One tool call as the gate decides it. Every pointer is owned (gate_call_release). */
struct gate_call {
    enum gate_harness harness;
    enum gate_event event;
    char *event_name;  /* hook_event_name as given, or the harness's pre-tool event name */
    char *tool;        /* "" for GATE_EV_OTHER */
    json_t *input;     /* always an object */
    char *mcp_server;  /* NULL for a built-in tool */
    char *cwd;         /* NULL when the input gives none */
    char *project_dir; /* Cursor: workspace_roots[0]; NULL otherwise */
    char *tool_use_id; /* NULL when the input gives none */
};

enum gate_verdict { GATE_ALLOW = 0, GATE_DENY, GATE_HELD };

/* What the gate answers. */
struct gate_answer {
    enum gate_verdict verdict;
    char reason[1024];     /* for deny and held: the text for the agent ("" for allow) */
    json_t *updated_input; /* allow only: the input to run instead (a reference the answer
                              owns; gate_answer_release drops it), or NULL */
};

/* "claude-code", "codex", "cursor". */
const char *gate_harness_name(enum gate_harness h);
/* 0 with *out set, or ERR_NOTFOUND. */
int gate_harness_find(const char *name, enum gate_harness *out);

/* Reads one hook input (text[0..len), not NUL-terminated) of harness h into *out (zeroed
 * first; release with gate_call_release, also after an error). ERR_PARSE when it is not one
 * JSON object, ERR_INVALID when a field the event needs is missing or of the wrong type (the
 * message names it), ERR_LIMIT when len is over GATE_INPUT_MAX. */
int gate_hook_parse(enum gate_harness h, const char *text, size_t len, struct gate_call *out,
                    struct err *e);
void gate_call_release(struct gate_call *c);

/* For an input gate_hook_parse refused (malformed, cut, oversized): looks for the first
 * `"command"` or `"cmd"` member whose value is a JSON string and appends the string, decoded
 * (up to the end of text when it is cut), to out. 1 when one was found, 0 when not. Never
 * fails on any bytes. */
int gate_hook_recover_command(const char *text, size_t len, struct buf *out);

/* Writes answer a to call c in c->harness's format: the JSON to print on stdout (appended to
 * out; nothing for "no opinion"), the text for stderr (appended to errb) and the process's
 * exit code. failsafe: the input could not be read, so the answer must not depend on the
 * harness parsing stdout: a deny is exit 2 with the reason on stderr. */
void gate_answer_render(const struct gate_call *c, const struct gate_answer *a, int failsafe,
                        struct buf *out, struct buf *errb, int *exit_code);
void gate_answer_release(struct gate_answer *a);

#endif
