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
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "experiment/experiment.h"
#include "util/buf.h"
#include "util/utf8.h"
#include "util/banned.h"

/* --as-json for one file: its problems on stderr, its YAML as JSON on stdout. */
static int print_as_json(const char *path, const char *name)
{
    struct experiment_diags d = {0};
    struct err e = {0};
    struct buf out = BUF_INIT;
    json_t *j = experiment_load_as_json(path, &d, &e);
    char *s = NULL;
    int rc;

    experiment_diags_format(&d, name, &out);
    fputs(out.data, stderr);
    if (j == NULL && e.code == ERR_IO) {
        fprintf(stderr, "faultline validate: %s\n", e.msg);
        rc = EXIT_FAIL;
    } else if (j == NULL) {
        rc = EXIT_INVALID;
    } else if ((s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY)) == NULL) {
        fprintf(stderr, "faultline validate: out of memory printing '%s'\n", path);
        rc = EXIT_FAIL;
    } else {
        printf("%s\n", s);
        rc = d.nerrors ? EXIT_INVALID : EXIT_OK;
    }
    free(s);
    json_decref(j);
    buf_release(&out);
    experiment_diags_release(&d);
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
            int rc = print_as_json(path, name);
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
