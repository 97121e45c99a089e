/*
 * carry: the project's uncommitted hook settings and gate files, carried into a repetition's
 * workspace (seed 000, "Bring your agent"; docs/run.md, "A repetition", step 2).
 *
 * A workspace is a copy of HEAD, so what a user keeps out of git (Claude Code's
 * settings.local.json, a gate's config under .faultline/) would reach no repetition. carry_in
 * copies these paths of the project into the workspace:
 *
 *   .claude/settings.json  .claude/settings.local.json  .codex/hooks.json  .cursor/hooks.json
 *   .faultline/  (every regular file below it)
 *
 * A file the workspace already has (the commit holds it) is never replaced. In every carried or
 * committed file, the project's absolute path is rewritten to /work, where the workspace sits
 * inside the sandbox, so a hook command such as "/home/me/proj/.faultline/gate.sh" still
 * resolves. In the three harnesses' hook files, faultline's own gate entries (`faultline
 * connect` wrote them with the absolute path of a binary on the host, which the sandbox may
 * not have) are pointed at the sandbox's faultline, CARRY_FAULTLINE (src/run/connect.h,
 * CONNECT_RETARGET; a bare "faultline gate ..." is left, PATH finds it); a file that is not
 * JSON is carried as it is. Each file carried in or
 * rewritten gets one line in the log.
 *
 * Limits: a file over CARRY_FILE_MAX bytes is refused (ERR_LIMIT), as is more than
 * CARRY_FILES_MAX files under .faultline/ or a depth over CARRY_DEPTH_MAX; symbolic links and
 * other non-regular files are skipped with a log line (a link could point anywhere on the
 * host).
 */
#ifndef FAULTLINE_RUN_CARRY_H
#define FAULTLINE_RUN_CARRY_H

#include <stddef.h>

#include "util/buf.h"
#include "util/err.h"

#define CARRY_FILE_MAX ((size_t)1 << 20)
#define CARRY_FILES_MAX 256
#define CARRY_DEPTH_MAX 8
/* The workspace's path inside the sandbox (sandbox.h's SANDBOX_WORKDIR, repeated here so that
 * carry stays testable without a sandbox). */
#define CARRY_WORKDIR "/work"
/* The faultline binary inside the sandbox (sandbox.h's SANDBOX_BINDIR "/faultline"). */
#define CARRY_FAULTLINE "/opt/faultline/bin/faultline"

/* 1 when rel (a path relative to the project root, '/'-separated) is one of the carried paths
 * or lies below .faultline/: what the clean-tree check tolerates as untracked. */
int carry_is_carried(const char *rel);

/* Carries project's files into work (the workspace) as described above (both absolute directory
 * paths, project without a trailing '/'). Appends one line per file to log ("carried in
 * .claude/settings.local.json (2 paths rewritten to /work)", "rewrote .claude/settings.json (1
 * path to /work)", "... (1 path to /work, gate hooks to /opt/faultline/bin/faultline)"). *ncarried
 * (may be NULL) gets how many files were copied. 0, or ERR_IO / ERR_LIMIT with e naming the file.
 */
int carry_in(const char *project, const char *work, struct buf *log, int *ncarried, struct err *e);

/* Replaces in text[0..len) every occurrence of root that ends at a path boundary (followed by
 * '/', the end, or a byte that cannot continue a file name: not a letter, digit, '.', '_' or
 * '-') with to; appends the result to out. Returns how many were replaced, or ERR_LIMIT from
 * out. */
int carry_rewrite(const char *text, size_t len, const char *root, const char *to, struct buf *out);

#endif
