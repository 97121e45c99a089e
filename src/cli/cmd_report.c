/*
 * cmd_report: `faultline report REPORT.json|RUN_DIR [--format F] [-o FILE]`. Renders the
 * report of a run (src/report, docs/report.md) as html (the default), md, junit, badge or
 * json, to FILE (written atomically) or stdout. A run folder, or a report whose run folder is
 * still there, is scored again first. Exit: 0 written; 1 the input cannot be read or is not a
 * report, or the output cannot be written; 64 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "report/rpt.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

int cmd_report(int argc, char **argv)
{
    const char *format = "html", *out = NULL;
    int nargs, rc, code = EXIT_FAIL;
    enum rpt_format f;
    struct err e = {0};
    struct buf b = BUF_INIT;
    char *run_dir = NULL;
    json_t *report = NULL;
    const struct opt opts[] = {
        OPT_STRING("format", "html|md|junit|badge|json", &format, NULL, "the format"),
        {.type = OPT_T_STRING,
         .name = "out",
         .alias = 'o',
         .argh = "FILE",
         .help = "write to FILE (atomically) instead of stdout",
         .value = &out,
         .def = "stdout"},
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "report",
        .usage = "REPORT.json|RUN_DIR [--format html|md|junit|badge|json] [-o FILE]",
        .about = "Renders the report of a run: a self-contained HTML page, Markdown for a pull\n"
                 "request, JUnit XML for CI, an SVG badge, or the JSON report. A run folder, or\n"
                 "a report whose run folder is still there, is scored again first. Exit: 0\n"
                 "written; 1 unreadable input or output; 64 usage.\n",
        .opts = opts,
        .min_args = 1,
        .max_args = 1,
        .example = "report out/report.json --format junit -o junit.xml",
        .doc = "docs/report.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (rpt_format_parse(format, &f) < 0) {
        char msg[300];
        snprintf(msg, sizeof(msg), "--format: '%.100s' is not one of html, md, junit, badge, json",
                 format);
        opt_usage_error(&cmd, msg);
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
