/* render: the format table of rpt.h, rpt_render's dispatch and rpt_write_all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/rpt.h"
#include "util/fs.h"
#include "util/banned.h"

static const struct {
    const char *name, *suffix;
} formats[RPT_NFORMATS] = {
    [RPT_JSON] = {"json", ".json"},
    [RPT_HTML] = {"html", ".html"},
    [RPT_MD] = {"md", ".md"},
    [RPT_JUNIT] = {"junit", ".junit.xml"},
    [RPT_BADGE] = {"badge", ".badge.svg"},
    [RPT_OTLP] = {"otlp", ".otlp.json"},
};

int rpt_format_parse(const char *name, enum rpt_format *f)
{
    for (int i = 0; i < RPT_NFORMATS; i++)
        if (strcmp(name, formats[i].name) == 0) {
            *f = (enum rpt_format)i;
            return 0;
        }
    return ERR_INVALID;
}

const char *rpt_format_name(enum rpt_format f)
{
    return formats[f].name;
}

const char *rpt_format_suffix(enum rpt_format f)
{
    return formats[f].suffix;
}

int rpt_render(const json_t *report, const char *run_dir, enum rpt_format f, struct buf *out,
               struct err *e)
{
    int rc;
    char *s;

    switch (f) {
    case RPT_HTML:
        rc = rpt_render_html(report, run_dir, out);
        break;
    case RPT_MD:
        rc = rpt_render_md(report, out);
        break;
    case RPT_JUNIT:
        rc = rpt_render_junit(report, out);
        break;
    case RPT_BADGE:
        rc = rpt_render_badge(report, out);
        break;
    case RPT_OTLP:
        rc = rpt_render_otlp(report, run_dir, out);
        break;
    default:
        s = json_dumps(report, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
        rc = s ? buf_adds(out, s) : ERR_NOMEM;
        if (rc == 0)
            rc = buf_addc(out, '\n');
        free(s);
        break;
    }
    if (rc < 0)
        return err_set(e, rc, "cannot render the %s report", formats[f].name);
    return 0;
}

int rpt_path(const char *report_path, enum rpt_format f, char *out, size_t size)
{
    size_t n = strlen(report_path);

    if (n > 5 && strcmp(report_path + n - 5, ".json") == 0)
        n -= 5;
    if ((size_t)snprintf(out, size, "%.*s%s", (int)n, report_path, formats[f].suffix) >= size)
        return ERR_LIMIT;
    return 0;
}

int rpt_write_all(const json_t *report, const char *report_path, const char *run_dir, struct err *e)
{
    int first = 0;

    for (int f = RPT_HTML; f <= RPT_BADGE; f++) {
        char path[4096];
        struct buf b = BUF_INIT;
        struct err fe = {0};
        int rc;

        if (rpt_path(report_path, (enum rpt_format)f, path, sizeof(path)) < 0)
            rc = err_set(&fe, ERR_LIMIT, "the report path '%.200s' is too long", report_path);
        else if ((rc = rpt_render(report, run_dir, (enum rpt_format)f, &b, &fe)) == 0)
            rc = fs_write_file(path, b.data, b.len, &fe);
        buf_release(&b);
        if (rc < 0 && first == 0) {
            first = rc;
            err_set(e, rc, "%s", fe.msg);
        }
    }
    return first;
}
