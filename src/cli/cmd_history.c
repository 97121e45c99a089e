/*
 * cmd_history: `faultline history [--json] [--experiment NAME] [--limit N] [--history FILE]`.
 * The runs `faultline run` recorded (src/report/history.c, docs/history.md), newest first: a
 * table, or a JSON array with --json. Exit: 0 printed (also none); 1 the database cannot be
 * opened or read, or stdout written; 64 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "report/history.h"
#include "util/banned.h"

int cmd_history(int argc, char **argv)
{
    const char *file = NULL, *experiment = NULL;
    int json = 0, limit = 20, nargs, rc, code = EXIT_FAIL;
    char path[1024];
    struct err e = {0};
    struct hist *h = NULL;
    json_t *runs = NULL, *r;
    size_t i;
    const struct opt opts[] = {
        OPT_BOOL("json", 0, &json, "print the runs as a JSON array"),
        OPT_STRING("experiment", "NAME", &experiment, NULL, "only the runs of experiment NAME"),
        OPT_INT("limit", "N", &limit, 1, HIST_LIMIT_MAX, "at most N runs"),
        OPT_STRING("history", "FILE", &file,
                   "$FAULTLINE_HISTORY or $XDG_STATE_HOME/faultline/history.db",
                   "the history database"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "history",
        .usage = "[--json] [--experiment NAME] [--limit N] [--history FILE]",
        .about = "Lists the runs `faultline run` recorded, newest first: id, time, experiment,\n"
                 "verdict, score, cost, outcome counts, report. Exit: 0 printed; 1 the\n"
                 "database cannot be opened or read; 64 usage.\n",
        .opts = opts,
        .min_args = 0,
        .max_args = 0,
        .example = "history --experiment demo-tool-error --limit 5",
        .doc = "docs/history.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (file == NULL && hist_default_path(path, sizeof(path)) < 0) {
        fprintf(stderr, "faultline history: no database: set --history, FAULTLINE_HISTORY, "
                        "XDG_STATE_HOME or HOME\n");
        return EXIT_FAIL;
    }
    h = hist_open(file ? file : path, &e);
    if (h == NULL || (runs = hist_list(h, experiment, limit, &e)) == NULL) {
        fprintf(stderr, "faultline history: %s\n", e.msg);
        goto done;
    }
    if (json) {
        char *s = json_dumps(runs, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
        if (s)
            printf("%s\n", s);
        free(s);
    } else {
        printf("%-6s %-20s %-24s %-8s %7s %10s %9s %-7s  %s\n", "id", "recorded (UTC)",
               "experiment", "verdict", "score", "cost USD", "tokens", "commit", "outcomes");
        json_array_foreach(runs, i, r)
        {
            char when[32] = "?", score[16] = "-", tokens[24] = "-";
            const json_t *in = json_object_get(r, "input_tokens");
            const json_t *out = json_object_get(r, "output_tokens");
            const char *commit = json_string_value(json_object_get(r, "git_commit"));
            time_t t = (time_t)json_integer_value(json_object_get(r, "recorded_at"));
            struct tm tm;
            if (gmtime_r(&t, &tm))
                strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
            if (json_is_number(json_object_get(r, "resilience_score")))
                snprintf(score, sizeof(score), "%.2f",
                         json_number_value(json_object_get(r, "resilience_score")));
            if (json_is_integer(in) && json_is_integer(out))
                snprintf(tokens, sizeof(tokens), "%lld",
                         (long long)(json_integer_value(in) + json_integer_value(out)));
            printf("%-6lld %-20s %-24.24s %-8s %7s %10.4f %9s %-7.7s  %s\n",
                   (long long)json_integer_value(json_object_get(r, "id")), when,
                   json_string_value(json_object_get(r, "experiment")),
                   json_string_value(json_object_get(r, "verdict")), score,
                   json_number_value(json_object_get(r, "cost_usd")), tokens, commit ? commit : "-",
                   json_is_string(json_object_get(r, "outcomes"))
                       ? json_string_value(json_object_get(r, "outcomes"))
                       : "");
        }
    }
    code = cli_stdout_status(cmd.name);
done:
    json_decref(runs);
    hist_close(h);
    return code;
}
