/*
 * cmd_list: `faultline list [--json | --markdown]` prints the catalog (faults with their
 * injectors, safety and options, probes, invariants, abort conditions) and where the example
 * experiments are. --markdown prints docs/faults.md exactly (an e2e test diffs the two);
 * --markdown-events PAGE prints PAGE with the event-kind regions regenerated (docs/events.md).
 * Where the examples are is docgen's (docgen_examples_text / _json).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "experiment/catalog.h"
#include "experiment/docgen.h"
#include "events/kinds.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

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
    struct buf out = BUF_INIT;
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
    if (json) {
        json_t *j = catalog_to_json();
        docgen_examples_json(j);
        char *t = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", t);
        free(t);
        json_decref(j);
    } else {
        docgen_list_text(&out);
        docgen_examples_text(&out);
        fputs(out.data, stdout);
    }
    buf_release(&out);
    return cli_stdout_status(cmd.name);
}
