/*
 * history: every `faultline run`'s report recorded in a SQLite database (docs/history.md), and
 * the runs read back newest first (`faultline history`).
 *
 * The database: $FAULTLINE_HISTORY, else $XDG_STATE_HOME/faultline/history.db, else
 * ~/.local/state/faultline/history.db (hist_default_path). WAL mode and a busy timeout
 * (HIST_BUSY_MS) so parallel runs (`--jobs`, several terminals) wait for each other instead of
 * failing; each run is one IMMEDIATE transaction (its run, repetitions and probes rows, or
 * none). The schema is versioned with PRAGMA user_version and migrated forward on open, one
 * step per version (migrations[] in history.c); a database of a newer version is refused.
 *
 * Errors are ERR_IO with the database's path and SQLite's message (a corrupt file, a lock
 * held past the timeout): the caller warns and goes on, a run never fails for its history.
 */
#ifndef FAULTLINE_REPORT_HISTORY_H
#define FAULTLINE_REPORT_HISTORY_H

#include <stddef.h>

#include <jansson.h>

#include "util/err.h"

#define HIST_SCHEMA_VERSION 2
#define HIST_BUSY_MS 10000
#define HIST_LIMIT_MAX 100000

struct hist;

/* The default database path into out (see above). 0, or ERR_NOTFOUND (no HOME either) /
 * ERR_LIMIT. */
int hist_default_path(char *out, size_t size);
/* Opens (creating it and its folder) and migrates the database at path. NULL with e set.
 * Caller frees with hist_close. */
struct hist *hist_open(const char *path, struct err *e);
void hist_close(struct hist *h);
/* The schema version of the open database. */
int hist_version(struct hist *h);
/* Records report (`faultline run`'s, borrowed) written at report_path by faultline
 * version_text: one run row (the whole report with it), its repetitions, probes, invariants
 * and outcome counts, in one transaction. *id (may be NULL) gets the run's id. 0 or ERR_IO. */
int hist_record(struct hist *h, const json_t *report, const char *report_path,
                const char *version_text, long long *id, struct err *e);
/* The runs, newest first, at most limit (1..HIST_LIMIT_MAX), of experiment name (NULL: all),
 * as a JSON array of objects (new reference; caller decrefs). NULL with e set. */
json_t *hist_list(struct hist *h, const char *experiment, int limit, struct err *e);
/* The report recorded as run id (its report_json, parsed: new reference, caller decrefs).
 * NULL with e set: ERR_NOTFOUND when there is no such run, ERR_IO / ERR_PARSE otherwise. */
json_t *hist_report(struct hist *h, long long id, struct err *e);

#endif
