/*
 * score: scores a run folder (docs/run-folder.md) into the result the runner embeds in its
 * report (docs/scoring.md): per repetition the probes, invariants, recovery metrics and outcome
 * class; for the run the probe pass rates with Wilson intervals, the resilience score, the
 * verdict and the silence warnings.
 *
 * Reads only files: any folder can be re-scored later. The result is canonical: the same folder
 * gives the same JSON (no clock, no absolute paths, rounded numbers, sorted keys when dumped
 * with score_dump).
 */
#ifndef FAULTLINE_SCORE_SCORE_H
#define FAULTLINE_SCORE_SCORE_H

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

enum score_verdict { SCORE_SCORED = 0, SCORE_ABORTED = 1, SCORE_INVALID = 2 };

/*
 * Scores the run folder dir. Returns the result (new reference; caller decrefs) and sets
 * *exit_code to the verdict's (0 scored, 1 aborted, 2 invalid). Returns NULL with e set when
 * the folder cannot be read (no run.json, malformed run.json, unknown format): then the exit
 * code is 1.
 */
json_t *score_run(const char *dir, int *exit_code, struct err *e);

/* Appends the canonical text of result (sorted keys, 2-space indent, newline) to out. */
int score_dump(const json_t *result, struct buf *out);

/* Appends a summary of result for people to out. */
void score_render_text(const json_t *result, struct buf *out);

#endif
