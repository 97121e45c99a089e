/*
 * tier: the destructive-command tier (docs/gate.md, "The destructive-command tier").
 *
 * tier_of_command parses a shell command line (policy/shell.h) and looks at every simple
 * command in it, nested ones included, after unwrapping the prefixes that run another command
 * (sudo, env, nice, timeout, nohup, command, exec, xargs, time, absolute paths: /usr/bin/rm is
 * rm). A simple command that matches one of the patterns of the table makes the whole line
 * TIER_DESTRUCTIVE; res names the first such pattern by its id and quotes the simple command.
 * Destructive is a tier, not a decision: the policy decides what to do with it.
 */
#ifndef FAULTLINE_POLICY_TIER_H
#define FAULTLINE_POLICY_TIER_H

#include <stddef.h>

enum tier_level { TIER_NORMAL = 0, TIER_DESTRUCTIVE = 1, TIER_UNPARSED = 2 };

struct tier_result {
    enum tier_level level;
    char pattern[48];  /* id of the destructive pattern, e.g. "rm-recursive-root"; "" if normal */
    char command[160]; /* the simple command that matched, quoted for messages ("" if normal) */
};

/*
 * Classifies cmd[0..len). Returns 0 with res->level TIER_NORMAL or TIER_DESTRUCTIVE, or
 * ERR_INVALID when the command cannot be parsed (res->level = TIER_UNPARSED, res->command
 * holds the parser's message). Pure; allocates only inside the parser.
 */
int tier_of_command(const char *cmd, size_t len, struct tier_result *res);
/* The ids of the table, in order (borrowed, static); *n receives the count. */
const char *const *tier_pattern_ids(size_t *n);

#endif
