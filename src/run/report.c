/* report: see report.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/report.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

json_t *report_build(const struct experiment *x, const char *commit, const char *dir,
                     const char *status, const char *error, const char *backend, json_t *reps,
                     json_t *score)
{
    json_t *j = json_object(), *xj = json_object(), *v;

    json_object_set_new(xj, "name", json_string(x->name));
    json_object_set_new(xj, "hash", json_string(x->hash));
    json_object_set_new(xj, "path", json_string(x->path));
    json_object_set_new(xj, "repeat", json_integer(x->repeat));
    json_object_set_new(xj, "commit", commit && commit[0] ? json_string(commit) : json_null());
    json_object_set_new(j, "format", json_integer(REPORT_FORMAT));
    json_object_set_new(j, "experiment", xj);
    json_object_set_new(j, "status", json_string(status));
    json_object_set_new(j, "error", error ? json_string(error) : json_null());
    json_object_set_new(j, "sandbox", json_string(backend));
    json_object_set_new(j, "run_dir", json_string(dir));
    v = json_object_get(score, "verdict");
    json_object_set(j, "verdict", json_object_get(v, "verdict"));
    json_object_set(j, "verdict_reason", json_object_get(v, "reason"));
    json_object_set(j, "resilience_score", json_object_get(score, "resilience_score"));
    json_object_set(j, "warnings", json_object_get(score, "warnings"));
    json_object_set(j, "repetitions", reps);
    json_object_set(j, "result", score);
    return j;
}

int report_write(const json_t *report, const char *path, struct err *e)
{
    return report_write_json(report, path, e);
}

int report_write_json(const json_t *j, const char *path, struct err *e)
{
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    struct buf b = BUF_INIT;
    int rc;

    if (s == NULL)
        return err_set(e, ERR_NOMEM, "cannot render '%s'", path);
    buf_adds(&b, s);
    buf_addc(&b, '\n');
    free(s);
    rc = fs_write_file(path, b.data, b.len, e);
    buf_release(&b);
    return rc;
}

int report_run_dir(const char *report, char *out, size_t size)
{
    size_t n = strlen(report);
    int w;
    if (n > 5 && strcmp(report + n - 5, ".json") == 0)
        w = snprintf(out, size, "%.*s", (int)(n - 5), report);
    else
        w = snprintf(out, size, "%s.d", report);
    return w < 0 || (size_t)w >= size ? ERR_LIMIT : 0;
}

static const char schema_text[] =
    "{\"$schema\": \"https://json-schema.org/draft/2020-12/schema\","
    " \"$id\": \"https://faultline.dev/schema/report-1.json\","
    " \"title\": \"faultline run report\","
    " \"description\": \"The report of one `faultline run` (docs/report.md).\","
    " \"type\": \"object\","
    " \"required\": [\"format\", \"experiment\", \"status\", \"error\", \"sandbox\", \"run_dir\","
    "  \"verdict\", \"verdict_reason\", \"resilience_score\", \"warnings\", \"repetitions\", \"result\"],"
    " \"properties\": {"
    "  \"format\": {\"const\": 1},"
    "  \"experiment\": {\"type\": \"object\", \"required\": [\"name\", \"hash\", \"path\", \"repeat\"],"
    "   \"properties\": {\"name\": {\"type\": \"string\"}, \"hash\": {\"type\": \"string\"},"
    "    \"path\": {\"type\": \"string\"}, \"repeat\": {\"type\": \"integer\", \"minimum\": 1},"
    "    \"commit\": {\"type\": [\"string\", \"null\"], \"description\": \"the project's HEAD the"
    " repetitions ran on\"}}},"
    "  \"status\": {\"enum\": [\"complete\", \"aborted\", \"error\"]},"
    "  \"error\": {\"type\": [\"string\", \"null\"]},"
    "  \"sandbox\": {\"type\": \"string\"},"
    "  \"run_dir\": {\"type\": \"string\"},"
    "  \"verdict\": {\"enum\": [\"scored\", \"aborted\", \"invalid\"]},"
    "  \"verdict_reason\": {\"type\": \"string\"},"
    "  \"resilience_score\": {\"type\": [\"number\", \"null\"]},"
    "  \"warnings\": {\"type\": \"array\"},"
    "  \"repetitions\": {\"type\": \"array\", \"items\": {\"$ref\": \"#/$defs/rep\"}},"
    "  \"result\": {\"type\": \"object\", \"description\": \"`faultline score --json` of run_dir"
    " (docs/scoring.md)\", \"required\": [\"verdict\", \"repetitions\", \"probes\"],"
    "   \"properties\": {\"verdict\": {\"type\": \"object\"}, \"repetitions\": {\"type\": \"array\"},"
    "    \"probes\": {\"type\": \"array\"}}}"
    " },"
    " \"$defs\": {"
    "  \"exit\": {\"type\": \"object\", \"required\": [\"ran\", \"exit_code\", \"signal\", \"duration_ms\"],"
    "   \"properties\": {\"ran\": {\"type\": \"boolean\"}, \"exit_code\": {\"type\": [\"integer\", \"null\"]},"
    "    \"signal\": {\"type\": [\"integer\", \"null\"]}, \"duration_ms\": {\"type\": [\"integer\", \"null\"]}}},"
    "  \"rep\": {\"type\": \"object\", \"required\": [\"status\", \"rep\", \"faulted\"],"
    "   \"properties\": {"
    "    \"status\": {\"enum\": [\"complete\", \"aborted\", \"error\", \"skipped\"]},"
    "    \"error\": {\"type\": [\"string\", \"null\"]},"
    "    \"rep\": {\"type\": \"integer\", \"minimum\": 0},"
    "    \"faulted\": {\"type\": \"boolean\"},"
    "    \"run\": {\"type\": \"string\"}, \"canary\": {\"type\": \"string\"},"
    "    \"seed\": {\"type\": \"integer\"}, \"sandbox\": {\"type\": \"string\"},"
    "    \"agent\": {\"$ref\": \"#/$defs/exit\"}, \"verify\": {\"$ref\": \"#/$defs/exit\"},"
    "    \"cost_usd\": {\"type\": \"number\", \"minimum\": 0},"
    "    \"tokens\": {\"type\": \"object\", \"required\": [\"input\", \"output\"],"
    "     \"properties\": {\"input\": {\"type\": \"integer\", \"minimum\": 0},"
    "      \"output\": {\"type\": \"integer\", \"minimum\": 0}}},"
    "    \"agent_out_dropped\": {\"type\": \"integer\", \"minimum\": 0},"
    "    \"duration_ms\": {\"type\": \"integer\", \"minimum\": 0},"
    "    \"workspace\": {\"type\": [\"string\", \"null\"]},"
    "    \"abort\": {\"oneOf\": [{\"type\": \"null\"}, {\"type\": \"object\", \"required\": [\"reason\"],"
    "     \"properties\": {\"reason\": {\"enum\": [\"destructive_attempt\", \"cost_usd_above\","
    "      \"wall_clock_s_above\", \"interrupted\"]}, \"detail\": {\"type\": \"string\"},"
    "      \"value\": {\"type\": \"number\"}, \"limit\": {\"type\": \"number\"}}}]}"
    "   }}"
    " }}";

json_t *report_schema(void)
{
    json_error_t je;
    return json_loads(schema_text, 0, &je);
}
