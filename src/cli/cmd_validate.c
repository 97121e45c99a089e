/*
 * cmd_validate: `faultline validate [--json | --as-json] [--quiet] FILE...`.
 *
 * Checks each experiment file and prints every problem as FILE:LINE:COL: error|warning:
 * message on stderr, then "FILE: ok (sha256 HASH)" on stdout for a valid file. --json prints,
 * instead of the ok line, one JSON object a line: {"file", "hash", "experiment": normal form}
 * ("file" with bytes that are not UTF-8 replaced by U+FFFD).
 * --as-json prints the YAML document as JSON as written, without validating it (a debugging
 * aid: it shows what the parser read). FILE "-" reads standard input. Exit: 0 every file valid,
 * 2 some file invalid, 1 some file could not be read or stdout could not be written (this wins
 * over 2), 64 a usage error.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "experiment/experiment.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/utf8.h"
#include "util/yaml.h"
#include "util/banned.h"

static int print_as_json(const char *path)
{
    static const struct ydoc_limits yaml_limits = {.kind = "an experiment file"};
    struct buf b = BUF_INIT;
    struct err e = {0};
    struct ydoc doc;
    struct ydoc_problem fatal;
    int rc;

    if (strcmp(path, "-") == 0) {
        path = EXPERIMENT_STDIN_NAME;
        rc = fs_read_fd(0, path, EXPERIMENT_FILE_MAX, &b, &e);
    } else {
        rc = fs_read_file(path, EXPERIMENT_FILE_MAX, &b, &e);
    }
    if (rc == ERR_LIMIT) {
        fprintf(stderr, "%s:1:1: error: the file is over the limit of %zu bytes\n", path,
                EXPERIMENT_FILE_MAX);
        buf_release(&b);
        return EXIT_INVALID;
    }
    if (rc < 0) {
        fprintf(stderr, "faultline validate: %s\n", e.msg);
        buf_release(&b);
        return EXIT_FAIL;
    }
    rc = ydoc_parse(b.data, b.len, &yaml_limits, &doc, &fatal);
    buf_release(&b);
    for (size_t i = 0; i < doc.nproblems; i++)
        fprintf(stderr, "%s:%d:%d: error: %s\n", path, doc.problems[i].line, doc.problems[i].col,
                doc.problems[i].msg);
    if (rc < 0) {
        fprintf(stderr, "%s:%d:%d: error: %s\n", path, fatal.line, fatal.col, fatal.msg);
        ydoc_release(&doc);
        return EXIT_INVALID;
    }
    const struct ynode *bad = NULL;
    json_t *j = doc.root ? ynode_to_json(doc.root, &bad) : json_null();
    if (j == NULL) {
        fprintf(stderr, "%s:%d:%d: error: not representable as JSON (infinite or NaN number)\n",
                path, bad->line, bad->col);
        ydoc_release(&doc);
        return EXIT_INVALID;
    }
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL) {
        fprintf(stderr, "faultline validate: out of memory printing '%s'\n", path);
        json_decref(j);
        ydoc_release(&doc);
        return EXIT_FAIL;
    }
    printf("%s\n", s);
    free(s);
    json_decref(j);
    rc = doc.nproblems ? EXIT_INVALID : EXIT_OK;
    ydoc_release(&doc);
    return rc;
}

int cmd_validate(int argc, char **argv)
{
    int json = 0, as_json = 0, quiet = 0, any_invalid = 0, any_unreadable = 0, nargs, rc, i;
    const struct opt opts[] = {
        OPT_BOOL("json", 0, &json, "print each valid file's normal form and hash as one JSON line"),
        OPT_BOOL("as-json", 0, &as_json, "print each file's YAML as JSON, as written (no checks)"),
        OPT_BOOL("quiet", 'q', &quiet, "print problems only"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "validate",
        .usage = "[--json | --as-json] [--quiet] FILE...",
        .about = "Checks experiment files (- reads one from stdin): every problem as\n"
                 "FILE:LINE:COL: error|warning: message on stderr, \"FILE: ok (sha256 HASH)\" on\n"
                 "stdout for a valid file. Exit: 0 all valid, 1 some file unreadable (wins),\n"
                 "2 some file invalid, 64 usage.\n",
        .opts = opts,
        .min_args = 1,
        .max_args = -1,
        .example = "validate examples/*.yaml",
        .doc = "docs/experiment-format.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (json && as_json) {
        opt_usage_error(&cmd, "--json and --as-json exclude each other");
        return EXIT_USAGE;
    }
    argc = nargs;
    for (i = 0; i < argc; i++) {
        const char *path = argv[i];
        const char *name = strcmp(path, "-") == 0 ? EXPERIMENT_STDIN_NAME : path;
        if (as_json) {
            int rc = print_as_json(path);
            any_invalid |= rc == EXIT_INVALID;
            any_unreadable |= rc == EXIT_FAIL;
            continue;
        }
        struct experiment_diags d = {0};
        struct err e = {0};
        struct buf out = BUF_INIT;
        struct experiment *x = experiment_load(path, &d, &e);

        experiment_diags_format(&d, name, &out);
        fputs(out.data, stderr);
        buf_release(&out);
        if (x == NULL && e.code == ERR_IO) {
            fprintf(stderr, "faultline validate: %s\n", e.msg);
            any_unreadable = 1;
        } else if (x == NULL) {
            any_invalid = 1;
        } else if (json) {
            /* a file name is bytes: invalid UTF-8 becomes U+FFFD so the line stays JSON */
            struct buf uname = BUF_INIT;
            utf8_sanitize(name, strlen(name), &uname);
            json_t *j = json_pack("{s:s%,s:s,s:o}", "file", uname.data, uname.len, "hash", x->hash,
                                  "experiment", experiment_to_json(x));
            char *s =
                j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15)) : NULL;
            if (s == NULL) {
                fprintf(stderr, "faultline validate: cannot print '%s' as JSON\n", path);
                any_unreadable = 1;
            } else {
                printf("%s\n", s);
            }
            free(s);
            json_decref(j);
            buf_release(&uname);
        } else if (!quiet) {
            printf("%s: ok (sha256 %s)\n", name, x->hash);
        }
        experiment_free(x);
        experiment_diags_release(&d);
    }
    if (cli_stdout_status(cmd.name) != EXIT_OK || any_unreadable)
        return EXIT_FAIL;
    return any_invalid ? EXIT_INVALID : EXIT_OK;
}
