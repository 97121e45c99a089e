/*
 * cmd_schema: `faultline schema` prints the JSON Schema (draft 2020-12) of the experiment
 * format, generated from the same tables as `faultline validate` (src/experiment/schema.c);
 * `faultline schema --report` that of `faultline run`'s report (src/run/report.c);
 * `faultline schema --policy` that of the gates' policy files (src/policy/policy.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "experiment/schema.h"
#include "policy/policy.h"
#include "run/report.h"
#include "util/banned.h"

int cmd_schema(int argc, char **argv)
{
    int nargs, rc, report = 0, policy = 0;
    const struct opt opts[] = {
        OPT_BOOL("report", 0, &report, "the schema of `faultline run`'s report instead"),
        OPT_BOOL("policy", 0, &policy, "the schema of a policy file (docs/gate.md) instead"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "schema",
        .usage = "[--report | --policy]",
        .about =
            "Prints the JSON Schema (draft 2020-12) of experiment files, for\n"
            "yaml-language-server: put '# yaml-language-server: $schema=experiment.schema.json'\n"
            "atop an experiment file. --report: the schema of the report `faultline run`\n"
            "writes (docs/report.md). --policy: that of a gates' policy file\n"
            "(.faultline/policy.yaml, docs/gate.md).\n",
        .opts = opts,
        .max_args = 0,
        .example = "schema > experiment.schema.json",
        .doc = "docs/experiment-format.md",
    };

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (report && policy) {
        opt_usage_error(&cmd, "--report and --policy exclude each other");
        return EXIT_USAGE;
    }
    json_t *s = report ? report_schema() : policy ? policy_schema() : schema_experiment();
    char *text = json_dumps(s, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(s);
    if (text == NULL) {
        fprintf(stderr, "faultline schema: cannot render the schema\n");
        return EXIT_FAIL;
    }
    printf("%s\n", text);
    free(text);
    return cli_stdout_status(cmd.name);
}
