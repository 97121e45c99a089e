/*
 * cmd_report: `faultline report REPORT.json|RUN_DIR [--format F] [-o FILE]`. Renders the
 * report of a run (src/report, docs/report.md) as html (the default), md, junit, badge or
 * json, to FILE (written atomically) or stdout. A run folder, or a report whose run folder is
 * still there, is scored again first. Exit: 0 written; 1 the input cannot be read or is not a
 * report, or the output cannot be written; 64 usage.
 *
 * `--index DIR...` and `--index-history` write the campaign index instead (report/index.h):
 * html, md or json. Exit: 0 every entry indexed; 2 some entries could not be (each named on
 * stderr; the index of the rest is written); 1 none could, the history cannot be read, or the
 * output cannot be written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "report/history.h"
#include "report/index.h"
#include "report/rpt.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

/* Writes b to out (atomically) or stdout: EXIT_OK, or EXIT_FAIL with the error printed. */
static int emit(const char *name, const char *out, const struct buf *b)
{
    struct err e = {0};

    if (out == NULL) {
        fwrite(b->data, 1, b->len, stdout);
        return cli_stdout_status(name);
    }
    if (fs_write_file(out, b->data, b->len, &e) < 0) {
        fprintf(stderr, "faultline report: %s\n", e.msg);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

/* The campaign index of argv[0..argc) (or of the history db when db is not NULL). */
static int index_run(enum rpt_format f, int argc, char **argv, const char *db,
                     const char *experiment, int limit, const char *out)
{
    struct rpt_index ix;
    struct buf b = BUF_INIT;
    struct err e = {0};
    const json_t *r;
    size_t i;
    int code = EXIT_FAIL;

    rpt_index_init(&ix, f, out);
    if (db && rpt_index_add_history(&ix, db, experiment, limit, &e) < 0) {
        fprintf(stderr, "faultline report: %s\n", e.msg);
        goto done;
    }
    for (int a = 0; a < argc; a++)
        rpt_index_add_path(&ix, argv[a]);
    json_array_foreach(ix.errors, i, r)
    {
        fprintf(stderr, "faultline report: not indexed: %s: %s\n",
                json_string_value(json_object_get(r, "entry")),
                json_string_value(json_object_get(r, "error")));
    }
    if (db == NULL && json_array_size(ix.rows) == 0) {
        fprintf(stderr, "faultline report: nothing to index\n");
        goto done;
    }
    if (rpt_index_render(&ix, &b) < 0) {
        fprintf(stderr, "faultline report: cannot render the index\n");
        goto done;
    }
    code = emit("report", out, &b);
    if (code == EXIT_OK && json_array_size(ix.errors))
        code = EXIT_INVALID;
done:
    buf_release(&b);
    rpt_index_release(&ix);
    return code;
}

int cmd_report(int argc, char **argv)
{
    const char *format = "html", *out = NULL, *file = NULL, *experiment = NULL;
    int nargs, rc, code = EXIT_FAIL, index = 0, index_history = 0, limit = 100;
    char dbpath[1024];
    enum rpt_format f;
    struct err e = {0};
    struct buf b = BUF_INIT;
    char *run_dir = NULL;
    json_t *report = NULL;
    const struct opt opts[] = {
        OPT_STRING("format", "html|md|junit|badge|otlp|json", &format, NULL, "the format"),
        {.type = OPT_T_STRING,
         .name = "out",
         .alias = 'o',
         .argh = "FILE",
         .help = "write to FILE (atomically) instead of stdout",
         .value = &out,
         .def = "stdout"},
        OPT_BOOL("index", 0, &index,
                 "the campaign index of the arguments: run folders, report files, folders of them"),
        OPT_BOOL("index-history", 0, &index_history, "the campaign index of the history database"),
        OPT_STRING("experiment", "NAME", &experiment, NULL,
                   "--index-history: only the runs of experiment NAME"),
        OPT_INT("limit", "N", &limit, 1, HIST_LIMIT_MAX, "--index-history: at most N runs"),
        OPT_STRING("history", "FILE", &file,
                   "$FAULTLINE_HISTORY or $XDG_STATE_HOME/faultline/history.db",
                   "--index-history: the history database"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "report",
        .usage = "REPORT.json|RUN_DIR | --index DIR... | --index-history [--format F] [-o FILE]",
        .about =
            "Renders the report of a run: a self-contained HTML page, Markdown for a pull\n"
            "request, JUnit XML for CI, an SVG badge, OpenTelemetry traces (otlp: OTLP/JSON),\n"
            "or the JSON report. A run folder, or\n"
            "a report whose run folder is still there, is scored again first. Exit: 0\n"
            "written; 1 unreadable input or output; 64 usage.\n"
            "With --index (run folders, reports, folders holding them) or --index-history,\n"
            "the campaign index: one row per run, newest first. Exit: 0 every entry\n"
            "indexed; 2 some were not (the rest is); 1 none, or unreadable output.\n",
        .opts = opts,
        .min_args = 0,
        .max_args = -1,
        .example = "report out/report.json --format junit -o junit.xml",
        .doc = "docs/report.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (rpt_format_parse(format, &f) < 0) {
        char msg[300];
        snprintf(msg, sizeof(msg),
                 "--format: '%.100s' is not one of html, md, junit, badge, otlp, json", format);
        opt_usage_error(&cmd, msg);
        return EXIT_USAGE;
    }
    if (index || index_history) {
        if (f != RPT_HTML && f != RPT_MD && f != RPT_JSON) {
            opt_usage_error(&cmd, "--format: the index is html, md or json");
            return EXIT_USAGE;
        }
        if (index_history && nargs > 0) {
            opt_usage_error(&cmd, "--index-history takes no argument (use --index DIR...)");
            return EXIT_USAGE;
        }
        if (index && nargs == 0) {
            opt_usage_error(&cmd,
                            "--index: missing argument (a run folder or a folder of reports)");
            return EXIT_USAGE;
        }
        if (index_history && file == NULL && hist_default_path(dbpath, sizeof(dbpath)) < 0) {
            fprintf(stderr, "faultline report: no database: set --history, FAULTLINE_HISTORY, "
                            "XDG_STATE_HOME or HOME\n");
            return EXIT_FAIL;
        }
        return index_run(f, nargs, argv, index_history ? (file ? file : dbpath) : NULL, experiment,
                         limit, out);
    }
    if (nargs != 1) {
        opt_usage_error(&cmd, nargs == 0 ? "missing argument" : "too many arguments");
        return EXIT_USAGE;
    }
    report = rpt_load(argv[0], &run_dir, &e);
    if (report == NULL || rpt_render(report, run_dir, f, &b, &e) < 0)
        goto fail;
    if (out) {
        if (fs_write_file(out, b.data, b.len, &e) < 0)
            goto fail;
        code = EXIT_OK;
    } else {
        fwrite(b.data, 1, b.len, stdout);
        code = cli_stdout_status(cmd.name);
    }
    goto done;
fail:
    fprintf(stderr, "faultline report: %s\n", e.msg);
done:
    json_decref(report);
    free(run_dir);
    buf_release(&b);
    return code;
}
