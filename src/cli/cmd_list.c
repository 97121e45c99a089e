/*
 * cmd_list: `faultline list [--json | --markdown]` prints the catalog (faults with their
 * injectors, safety and options, probes, invariants, abort conditions) and where the example
 * experiments are. --markdown prints docs/faults.md exactly (an e2e test diffs the two);
 * --markdown-events PAGE prints PAGE with the event-kind regions regenerated (docs/events.md).
 *
 * The examples are looked for relative to the executable: <exe dir>/examples (a binary at the
 * repository root), <exe dir>/../share/faultline/examples (make install), then
 * <exe dir>/../../examples (build/<mode>/faultline).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "experiment/catalog.h"
#include "experiment/docgen.h"
#include "events/kinds.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

/* The examples directory's real path into out; 0, or -1 when none was found. */
static int find_examples(struct buf *out)
{
    static const char *const rel[] = {"/examples", "/../share/faultline/examples",
                                      "/../../examples"};
    struct buf dir = BUF_INIT, cand = BUF_INIT;
    int rc = -1;

    if (fs_exe_dir(&dir) < 0)
        goto out;
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        struct stat st;
        char real[PATH_MAX];
        buf_reset(&cand);
        buf_addf(&cand, "%s%s", dir.data, rel[i]);
        if (stat(cand.data, &st) == 0 && S_ISDIR(st.st_mode) && realpath(cand.data, real)) {
            buf_adds(out, real);
            rc = 0;
            break;
        }
    }
out:
    buf_release(&dir);
    buf_release(&cand);
    return rc;
}

static const char *const example_files[] = {"registry-down.yaml", "credential-revoked.yaml",
                                            "poisoned-readme.yaml"};

/* Hidden: docs/events.md (the page PAGE) with its generated regions refilled, on stdout. */
static int list_markdown_events(const char *page)
{
    struct buf in = BUF_INIT, out = BUF_INIT;
    struct err e = {0};
    int rc =
        fs_read_file(page, 1 << 20, &in, &e) < 0 || evkind_fill_page(in.data, in.len, &out, &e) < 0;

    if (rc)
        fprintf(stderr, "faultline list: %s\n", e.msg);
    else
        fputs(out.data, stdout);
    buf_release(&in);
    buf_release(&out);
    return rc ? EXIT_INVALID : cli_stdout_status("list");
}

int cmd_list(int argc, char **argv)
{
    int json = 0, markdown = 0, nargs, rc;
    const char *events_page = NULL;
    struct buf out = BUF_INIT, ex = BUF_INIT;
    const struct opt opts[] = {
        OPT_BOOL("json", 0, &json, "print the catalog as JSON"),
        OPT_BOOL("markdown", 0, &markdown, "print docs/faults.md"),
        OPT_STRING("markdown-events", "PAGE", &events_page, NULL,
                   "print PAGE (docs/events.md) with its generated regions refilled"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "list",
        .usage = "[--json | --markdown]",
        .about = "Prints the fault catalog (faults with their injectors, safety and options),\n"
                 "probes, invariants, abort conditions and where the example experiments are.\n",
        .opts = opts,
        .max_args = 0,
        .example = "list --json | jq -r '.faults[].id'",
        .doc = "docs/faults.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (events_page)
        return list_markdown_events(events_page);
    if (json && markdown) {
        opt_usage_error(&cmd, "--json and --markdown exclude each other");
        return EXIT_USAGE;
    }
    if (markdown) {
        docgen_faults_markdown(&out);
        fputs(out.data, stdout);
        buf_release(&out);
        return cli_stdout_status(cmd.name);
    }
    int found = find_examples(&ex) == 0;
    if (json) {
        json_t *j = catalog_to_json();
        json_t *e = json_array();
        json_object_set_new(j, "examples_dir", found ? json_string(ex.data) : json_null());
        for (size_t i = 0; found && i < sizeof(example_files) / sizeof(example_files[0]); i++)
            json_array_append_new(e, json_string(example_files[i]));
        json_object_set_new(j, "examples", e);
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s);
        free(s);
        json_decref(j);
    } else {
        docgen_list_text(&out);
        if (found) {
            buf_addf(&out, "\nEXAMPLES in %s\n", ex.data);
            for (size_t i = 0; i < sizeof(example_files) / sizeof(example_files[0]); i++)
                buf_addf(&out, "  %s\n", example_files[i]);
        } else {
            buf_adds(&out, "\nEXAMPLES: not found next to this faultline binary (looked in "
                           "<exe dir>/examples, <exe dir>/../share/faultline/examples and "
                           "<exe dir>/../../examples)\n");
        }
        fputs(out.data, stdout);
    }
    buf_release(&out);
    buf_release(&ex);
    return cli_stdout_status(cmd.name);
}
