/*
 * gatecheck: the runner's warning that a project's harnesses would run ungoverned in the
 * sandbox (seed 000, "Bring your agent"; docs/run.md, "A repetition"): the project has no
 * gates (none of the hook settings the runner carries in runs `faultline gate`), or the gates
 * have no policy (neither the project's .faultline/policy.yaml nor the user's policy file
 * exists, so only the default policy, the destructive tier, applies).
 *
 * A hook settings file names a gate when its text holds `gate claude-code`, `gate codex` or
 * `gate cursor` (what `faultline connect` writes, whatever path the program has).
 */
#ifndef FAULTLINE_RUN_GATECHECK_H
#define FAULTLINE_RUN_GATECHECK_H

#include "util/buf.h"

/* Checks project (an absolute directory) and the user's policy file user_policy (NULL: none).
 * Appends one line (no trailing newline inside, each ended by '\n') per warning to out and
 * returns how many there are (0, 1). Never fails: a file that cannot be read counts as absent. */
int gatecheck_project(const char *project, const char *user_policy, struct buf *out);
/* gatecheck_project with the user's policy file the gates would read: $FAULTLINE_USER_POLICY,
 * else ~/.config/faultline/policy.yaml. */
int gatecheck_warnings(const char *project, struct buf *out);

#endif
