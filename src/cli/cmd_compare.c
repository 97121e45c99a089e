/*
 * cmd_compare: `faultline compare A B [--json | --format text|md|json] [--max-score-drop N]
 * [--max-cost-increase P%] [--history FILE]`. Two runs (history run ids, report files or run
 * folders: src/report/compare.c, docs/compare.md) side by side with the change from A to B.
 * With a --max-* flag it is a regression gate. Exit: 0 compared (the gate held); 1 an input
 * cannot be read or is not a report of this format, or stdout cannot be written; 8 the gate
 * failed (one `gate failed:` line on stderr per exceeded budget); 64 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "report/compare.h"
#include "report/history.h"
#include "util/buf.h"
#include "util/num.h"
#include "util/banned.h"

/* The regression gate failed: the same code as `faultline run`'s failed CI gate. */
#define EXIT_GATE 8

static int gate_score(const struct opt *o, const char *arg, struct err *e)
{
    struct compare_gate *g = o->value;

    if (num_parse_double(arg, 0, 100, &g->max_score_drop) < 0)
        return err_set(e, ERR_INVALID, "--max-score-drop '%.40s': expected a number in [0, 100]",
                       arg);
    g->has_score_drop = 1;
    return 0;
}

static int gate_cost(const struct opt *o, const char *arg, struct err *e)
{
    struct compare_gate *g = o->value;
    char num[64];
    size_t n = strlen(arg);

    if (n > 0 && arg[n - 1] == '%')
        n--;
    if (n == 0 || n >= sizeof(num))
        return err_set(e, ERR_INVALID, "--max-cost-increase '%.40s': expected a percentage", arg);
    memcpy(num, arg, n);
    num[n] = '\0';
    if (num_parse_double(num, 0, 1e9, &g->max_cost_increase) < 0)
        return err_set(e, ERR_INVALID,
                       "--max-cost-increase '%.40s': expected a percentage in [0, 1e9]", arg);
    g->has_cost_increase = 1;
    return 0;
}

int cmd_compare(int argc, char **argv)
{
    const char *file = NULL, *format = "text";
    int json = 0, nargs, rc, code = EXIT_FAIL, failed = 0;
    char path[1024];
    struct err e = {0};
    struct compare_gate gate = {0};
    struct compare_side a = {0}, b = {0};
    struct buf out = BUF_INIT, why = BUF_INIT;
    json_t *cmp = NULL;
    const struct opt opts[] = {
        OPT_BOOL("json", 0, &json, "print the comparison as JSON (= --format json)"),
        OPT_STRING("format", "text|md|json", &format, NULL, "the output's format"),
        OPT_CALL("max-score-drop", "N", gate_score, &gate,
                 "fail (exit 8) when B's resilience score is more than N points under A's"),
        OPT_CALL("max-cost-increase", "P%", gate_cost, &gate,
                 "fail (exit 8) when B's cost is more than P percent over A's"),
        OPT_STRING("history", "FILE", &file,
                   "$FAULTLINE_HISTORY or $XDG_STATE_HOME/faultline/history.db",
                   "the history database run ids are looked up in"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "compare",
        .usage = "A B [--json | --format text|md|json] [--max-score-drop N] "
                 "[--max-cost-increase P%] [--history FILE]",
        .about = "Compares two runs, each a run id of the history, a report file or a run\n"
                 "folder: score, probe pass rates, outcome classes, cost, cost multiplier and\n"
                 "tokens side by side with the change from A to B. The --max-* flags make it a\n"
                 "regression gate. Exit: 0 compared; 1 an input cannot be read or is not a\n"
                 "report; 8 the gate failed; 64 usage.\n",
        .opts = opts,
        .min_args = 2,
        .max_args = 2,
        .example = "compare 12 out/report.json --max-score-drop 5 --max-cost-increase 20%",
        .doc = "docs/compare.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (json)
        format = "json";
    if (strcmp(format, "text") != 0 && strcmp(format, "md") != 0 && strcmp(format, "json") != 0) {
        char msg[300];
        snprintf(msg, sizeof(msg), "--format: '%.100s' is not one of text, md, json", format);
        opt_usage_error(&cmd, msg);
        return EXIT_USAGE;
    }
    if (file == NULL && hist_default_path(path, sizeof(path)) == 0)
        file = path;
    if (compare_load(argv[0], file, &a, &e) < 0 || compare_load(argv[1], file, &b, &e) < 0) {
        fprintf(stderr, "faultline compare: %s\n", e.msg);
        goto done;
    }
    cmp = compare_build(&a, &b);
    failed = compare_check(cmp, &gate, &why);
    if (strcmp(format, "json") == 0) {
        char *s;
        json_t *lines = json_array();
        for (char *p = why.data, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
            json_t *l = json_stringn(p, (size_t)(nl - p));
            json_array_append_new(lines, l ? l : json_string("?"));
        }
        json_object_set_new(cmp, "gate_failed", lines);
        s = json_dumps(cmp, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
        if (s)
            printf("%s\n", s);
        free(s);
    } else {
        if (strcmp(format, "md") == 0)
            compare_render_md(cmp, &out);
        else
            compare_render_text(cmp, &out);
        fwrite(out.data, 1, out.len, stdout);
    }
    for (char *p = why.data, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1)
        fprintf(stderr, "faultline compare: gate failed: %.*s\n", (int)(nl - p), p);
    code = cli_stdout_status(cmd.name);
    if (code == EXIT_OK && failed)
        code = EXIT_GATE;
done:
    json_decref(cmp);
    compare_side_release(&a);
    compare_side_release(&b);
    buf_release(&out);
    buf_release(&why);
    return code;
}
