/*
 * report: the report of one `faultline run` (docs/report.md), and its JSON Schema
 * (`faultline schema --report`).
 *
 * The report is the score of the run folder exactly as `faultline score --json` prints it
 * (`result`), with what only the runner knows around it: the run's status and error, the
 * sandbox backend, the run folder, and per repetition the runner's facts (rep.json: exit
 * codes and signals of the agent and verify, durations, cost, abort, error). The verdict and
 * the resilience score are repeated at the top for a reader that wants only those.
 */
#ifndef FAULTLINE_RUN_REPORT_H
#define FAULTLINE_RUN_REPORT_H

#include <jansson.h>

#include "experiment/experiment.h"
#include "util/err.h"

#define REPORT_FORMAT 1

/* A new report (caller decrefs). reps (borrowed) is the runner's facts per repetition, score
 * (borrowed) score_render_json's result for dir. error may be NULL. */
json_t *report_build(const struct experiment *x, const char *commit, const char *dir,
                     const char *status, const char *error, const char *backend, json_t *reps,
                     json_t *score);
/* Writes the report (indented, sorted keys, a final newline) to path atomically. 0 or ERR_IO. */
int report_write(const json_t *report, const char *path, struct err *e);
/* Any of the run's JSON files (run.json, rep.json, verify.json, the report) as people read
 * them: indented, keys sorted, a final newline, written atomically (fs_write_file). */
int report_write_json(const json_t *j, const char *path, struct err *e);
/* The report's run folder, "a directory named after the report": report without its ".json"
 * suffix, else report + ".d". Into out; 0 or ERR_LIMIT. */
int report_run_dir(const char *report, char *out, size_t size);
/* The JSON Schema (draft 2020-12) of the report, new reference. */
json_t *report_schema(void);

#endif
