/*
 * hook: Claude Code PreToolUse hooks for the reference agent, so that a gate written for
 * Claude Code (faultline gate claude-code, or any other) applies to it unchanged.
 *
 * Configuration: `--hook COMMAND` (matches every tool), and the project's
 * .claude/settings.json and .claude/settings.local.json:
 *   {"hooks":{"PreToolUse":[{"matcher":"Bash|mcp__fs__.*",
 *                            "hooks":[{"type":"command","command":"/path/gate","timeout":600}]}]}}
 * A matcher is a POSIX extended regex over the whole tool name ("" or "*" or absent: every
 * tool); timeout is in seconds (default 600). Hook types other than "command" are skipped.
 *
 * Running: the command runs with `sh -c` in the working directory, CLAUDE_PROJECT_DIR set, and
 * on stdin:
 *   {"session_id","cwd","permission_mode":"default","hook_event_name":"PreToolUse",
 *    "tool_name","tool_input","tool_use_id"}
 * Matching hooks run one after the other, in configuration order; the first that blocks ends
 * the walk.
 *
 * Decisions (hook_decide, Claude Code semantics):
 *   exit 2                         DENY, stderr is the reason (given to the model)
 *   exit 0, JSON on stdout:
 *     hookSpecificOutput.permissionDecision "deny"   DENY, permissionDecisionReason
 *                                           "ask"    DENY: nobody can answer a question here
 *                                           "allow"  ALLOW (updatedInput, when an object, is
 *                                                    used as the tool input)
 *                                           "defer"  PROCEED
 *     "decision":"block" / "approve" (legacy)        DENY with "reason" / ALLOW
 *     "continue": false                              STOP the agent ("stopReason")
 *   exit 0 otherwise                PROCEED
 *   any other exit, timeout, a hook that cannot start: PROCEED, with a note (fail-open, as
 *   Claude Code does)
 */
#ifndef FAULTLINE_AGENT_HOOK_H
#define FAULTLINE_AGENT_HOOK_H

#include <regex.h>
#include <signal.h>
#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

#define HOOK_OUTPUT_MAX ((size_t)64 << 10) /* stdout / stderr kept per hook run */
#define HOOK_TIMEOUT_DEFAULT_MS 600000
#define HOOK_TIMEOUT_MAX_S 86400
#define HOOKS_MAX 64
#define HOOK_SETTINGS_MAX ((size_t)1 << 20)

struct hook_entry {
    char *matcher; /* as configured; "" for every tool */
    int match_all;
    regex_t re; /* compiled "^(matcher)$" unless match_all */
    char *command;
    int timeout_ms;
    char *source; /* "--hook" or the settings file */
};

struct hook_set {
    struct hook_entry *v;
    size_t n;
};

void hook_set_init(struct hook_set *s);
void hook_set_release(struct hook_set *s);
/* Adds a hook. matcher NULL, "" or "*" matches every tool. timeout_ms <= 0: the default.
 * 0, ERR_INVALID (bad regex, empty command) or ERR_LIMIT (HOOKS_MAX) with e set. */
int hook_set_add(struct hook_set *s, const char *matcher, const char *command, int timeout_ms,
                 const char *source, struct err *e);
/* Adds the PreToolUse command hooks of a Claude Code settings file. Returns 1 when the file
 * was read, 0 when it does not exist, or with e set: ERR_IO, ERR_LIMIT, ERR_PARSE
 * ("FILE:LINE:COL: ..."), ERR_INVALID (wrong shape, bad matcher). */
int hook_set_load_settings(struct hook_set *s, const char *path, struct err *e);
/* 1 when h applies to tool_name. */
int hook_matches(const struct hook_entry *h, const char *tool_name);

/* The PreToolUse input. tool_input is copied. New reference. */
json_t *hook_input(const char *session_id, const char *cwd, const char *tool_name,
                   const json_t *tool_input, const char *tool_use_id);

enum hook_verdict {
    HOOK_PROCEED = 0, /* no hook had an opinion (or one failed open) */
    HOOK_ALLOW,
    HOOK_DENY,
    HOOK_STOP
};

struct hook_decision {
    enum hook_verdict verdict;
    struct buf reason;     /* DENY / STOP: why (for the model); "" otherwise */
    json_t *updated_input; /* ALLOW with updatedInput (owned), else NULL */
    struct buf notes;      /* hooks that failed open, one line each */
    size_t ran;            /* hooks run */
};

void hook_decision_init(struct hook_decision *d);
void hook_decision_release(struct hook_decision *d);

/* What one hook run means (table in the file comment). exit_code is the shell's view; timed_out
 * or exit_code < 0 fails open. d is updated: a verdict is only raised (PROCEED < ALLOW < DENY
 * < STOP), a note added for a failure. Pure. */
void hook_decide(int exit_code, int timed_out, const char *out, size_t outlen, const char *err,
                 size_t errlen, struct hook_decision *d);

/* Runs the hooks of s that match tool_name, in order, with the input of hook_input; stops at
 * the first DENY or STOP. d (initialised) gets the outcome. Returns 0; a hook that cannot be
 * started fails open (a note). */
int hook_run(const struct hook_set *s, const char *session_id, const char *cwd,
             const char *tool_name, const json_t *tool_input, const char *tool_use_id,
             volatile sig_atomic_t *stop, struct hook_decision *d);

#endif
