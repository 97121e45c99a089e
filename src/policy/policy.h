/*
 * policy: the policy engine of the gates (docs/gate.md, "Policy files"). A policy is the rules
 * of the project's `.faultline/policy.yaml`, then those of the user's
 * `~/.config/faultline/policy.yaml`, then the builtin default (the destructive tier is blocked,
 * the rest allowed). A call (tool name, input object, MCP server, workdir) is decided by the
 * first enforce rule that matches it, in that order; a monitor rule that matches first is
 * reported next to the decision and changes nothing.
 *
 * A rule matches on any of: tool (exact name or glob), command (program and argument globs over
 * the simple commands of the parsed shell command, src/policy/shell.h), paths (globs over the
 * file paths in the input, resolved against workdir), mcp_server (exact or glob). Every key a
 * rule has must match; a rule with none matches every call. Effects: allow, block, hold (an
 * approval hold, carried out by the controller) and redact (credentials in the input masked,
 * the masked input handed back).
 *
 * Pure code: no I/O but reading the policy files in policy_load. Files are checked by the same
 * validation machinery as experiment files (format.h's tables, FILE:LINE:COL diagnostics with
 * "did you mean"); `faultline schema --policy` prints their JSON Schema.
 */
#ifndef FAULTLINE_POLICY_POLICY_H
#define FAULTLINE_POLICY_POLICY_H

#include <stddef.h>

#include <jansson.h>

#include "policy/tier.h"
#include "util/err.h"

enum policy_effect { POLICY_ALLOW, POLICY_BLOCK, POLICY_HOLD, POLICY_REDACT };
enum policy_mode { POLICY_ENFORCE, POLICY_MONITOR };

#define POLICY_FILE_MAX ((size_t)1 << 20) /* bytes of one policy file */
#define POLICY_RULES_MAX 1000             /* rules of one policy (all its files) */
#define POLICY_ID_MAX 63                  /* bytes of a rule id */
#define POLICY_REASON_MAX 255             /* bytes of a rule's reason */

/* The project's and the user's policy file, relative to the project root and to $HOME. */
#define POLICY_PROJECT_FILE ".faultline/policy.yaml"
#define POLICY_USER_FILE ".config/faultline/policy.yaml"

struct policy_call {
    const char *tool;       /* as the harness names it: Bash, Edit, Write, apply_patch, Shell,
                               shell, mcp__srv__tool ... */
    const json_t *input;    /* the tool input object (borrowed; may be NULL) */
    const char *mcp_server; /* NULL for built-in tools (then taken from an mcp__srv__tool name) */
    const char *workdir;    /* paths resolved against it; "/work" in a run; NULL: "/" */
};

struct policy_decision {
    enum policy_effect effect; /* what applies (monitor rules never change it) */
    enum policy_mode mode;     /* of the rule in rule[] */
    struct tier_result tier;   /* of the call's shell command (TIER_NORMAL when it has none) */
    char rule[64];    /* id of the enforce rule that decided; when none did, of the monitor rule
                         that matched (mode POLICY_MONITOR); "" when no rule matched */
    char reason[256]; /* human text for the agent */
    json_t *redacted_input; /* new reference when effect == POLICY_REDACT, else NULL */
    int from_default;       /* no enforce rule matched: the builtin default decided */
    /* The first monitor rule that matched before the deciding rule (or the default): */
    int monitored;                     /* 1 when there was one */
    char monitor_rule[64];             /* its id */
    enum policy_effect monitor_effect; /* what it would have done */
};

struct policy;

/*
 * Loads the files of paths in order (project first, then user); a path that does not exist is
 * skipped, an unreadable or invalid one is an error. Every problem of a file is reported as
 * "FILE:LINE:COL: error: message"; err->msg gets the first one (all of them: policy_load_diags).
 * *out gets a new policy (caller frees with policy_free) also when npaths is 0 (only the default).
 * 0, ERR_IO (unreadable), ERR_INVALID (a bad file), ERR_LIMIT (more than POLICY_RULES_MAX rules in
 * all), ERR_NOMEM.
 */
int policy_load(struct policy **out, const char *const *paths, size_t npaths, struct err *err);
/* policy_load, every diagnostic of every file also appended to diags (one a line). */
struct buf;
int policy_load_diags(struct policy **out, const char *const *paths, size_t npaths,
                      struct buf *diags, struct err *err);

/* Same, one file from a buffer (tests, fuzzing): name is used in messages. Every diagnostic
 * is appended to diags when it is non-NULL ("FILE:LINE:COL: error: message" lines). */
int policy_parse(struct policy **out, const char *name, const char *text, size_t len,
                 struct buf *diags, struct err *err);

/* The default policy alone: blocks the destructive tier, allows the rest. Caller frees with
 * policy_free. */
struct policy *policy_builtin(void);

/* Number of rules (all files). */
size_t policy_nrules(const struct policy *p);

/*
 * Decides call under p (NULL: the builtin default alone). Pure; fills *d (caller releases
 * with policy_decision_release). 0, or ERR_NOMEM (d then holds a block).
 */
int policy_decide(const struct policy *p, const struct policy_call *call,
                  struct policy_decision *d);
void policy_decision_release(struct policy_decision *d);
/* policy_free(NULL) is a no-op. */
void policy_free(struct policy *p);

/* "allow", "block", "hold", "redact". */
const char *policy_effect_name(enum policy_effect e);
/* "enforce", "monitor". */
const char *policy_mode_name(enum policy_mode m);
/* The gate_decision event's tier: "destructive" (tier.level == TIER_DESTRUCTIVE), "rule" (a
 * file rule decided), "default". */
const char *policy_tier_name(const struct policy_decision *d);
/* The decision as JSON (new reference): effect, mode, tier, tier_pattern, command, rule,
 * reason, monitor {rule, effect} or null, redacted_input when redacted. */
json_t *policy_decision_json(const struct policy_decision *d);

/* The shell command of a call's input, or NULL: input.command as a string, or an argv array
 * of strings joined with blanks (borrowed or written into buf; valid while both live). */
const char *policy_call_command(const struct policy_call *call, struct buf *buf);

/* The JSON Schema of a policy file (new reference), from the same tables as the validator. */
json_t *policy_schema(void);

#endif
