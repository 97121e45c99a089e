/*
 * connect: the hook settings `faultline connect` writes into a project (docs/gate.md,
 * "`faultline connect`"), so that each harness runs `faultline gate HARNESS` before every tool
 * call:
 *   claude-code  .claude/settings.json  hooks.PreToolUse[] += {"matcher": "*", "hooks":
 *                [{"type": "command", "command": "FAULTLINE gate claude-code", "timeout": 30}]}
 *   codex        .codex/hooks.json      hooks.PreToolUse[] += {"hooks": [{"type": "command",
 *                "command": "FAULTLINE gate codex", "timeout": 30}]} (no matcher: every tool)
 *   cursor       .cursor/hooks.json     {"version": 1} and hooks.beforeShellExecution[],
 *                hooks.beforeMCPExecution[], hooks.preToolUse[] += {"command": "FAULTLINE gate
 *                cursor"}
 * FAULTLINE is the absolute path of the faultline binary, shell-quoted when it needs it.
 *
 * The merge keeps every other key and entry of the file as it was (their order included) and
 * recognises faultline's own entries by their command (a program named faultline run as
 * `gate HARNESS`), so adding twice changes nothing, a moved binary updates the entry in place,
 * and removing takes out only those entries (and the arrays and objects it leaves empty).
 * Pure functions over the file's text: the command (src/cli/cmd_connect.c) reads, backs up
 * and writes.
 */
#ifndef FAULTLINE_RUN_CONNECT_H
#define FAULTLINE_RUN_CONNECT_H

#include <stddef.h>

#include "util/buf.h"
#include "util/err.h"

enum connect_harness { CONNECT_CLAUDE_CODE, CONNECT_CODEX, CONNECT_CURSOR };
#define CONNECT_NHARNESS 3
#define CONNECT_FILE_MAX ((size_t)1 << 20) /* bytes of a settings file read */
#define CONNECT_TIMEOUT_S 30               /* the hook timeout written (claude-code, codex) */

/* What connect_apply does to faultline's gate entries: add them (an entry already there gets
 * the binary's path), take them out, or only point the entries already there at the binary
 * (the runner's carry-in: the sandbox's faultline is SANDBOX_BINDIR/faultline), leaving an
 * entry whose program has no directory (PATH finds it). */
enum connect_op { CONNECT_ADD, CONNECT_REMOVE, CONNECT_RETARGET };

/* "claude-code", "codex", "cursor". */
const char *connect_harness_name(enum connect_harness h);
/* The settings file, relative to the project: ".claude/settings.json", ... */
const char *connect_settings_path(enum connect_harness h);
/* 0 and *h for a harness name, ERR_NOTFOUND otherwise. */
int connect_harness_find(const char *name, enum connect_harness *h);

/*
 * The text of h's settings file after op: faultline's hooks added (CONNECT_ADD), taken out
 * (CONNECT_REMOVE) or, where there are some, pointed at faultline (CONNECT_RETARGET).
 * old[0..len) is the file as it is (len 0: missing or empty); faultline the
 * absolute path of the binary the hooks run. out gets the new text (JSON indented by 2, keys
 * in their order, a final newline); *changed is 1 when it means something else than old (0:
 * leave the file alone, out then holds old unchanged). name is used in messages. 0, or
 * ERR_PARSE ("NAME:LINE:COL: ..." for text that is not JSON, duplicate keys included) or
 * ERR_INVALID (a JSON value where an object or array must be: "NAME: hooks.PreToolUse is not
 * a list") with e set; the file is then not to be written.
 */
int connect_apply(enum connect_harness h, const char *name, const char *old, size_t len,
                  const char *faultline, enum connect_op op, struct buf *out, int *changed,
                  struct err *e);

/* Appends a unified diff (3 lines of context) of a -> b, "--- A_NAME" / "+++ B_NAME" heads
 * (a_name "/dev/null" for a new file); nothing when they are equal. Files over 2000 lines
 * are shown as one hunk replacing every line. */
void connect_diff(const char *a_name, const char *a, const char *b_name, const char *b,
                  struct buf *out);

#endif
