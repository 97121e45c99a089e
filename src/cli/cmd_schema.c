/*
 * cmd_schema: `faultline schema` prints the JSON Schema (draft 2020-12) of the experiment
 * format, generated from the same tables as `faultline validate` (src/experiment/schema.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "experiment/schema.h"
#include "util/banned.h"

int cmd_schema(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: faultline schema\n"
                   "  prints the JSON Schema of experiment files (for yaml-language-server:\n"
                   "  faultline schema > experiment.schema.json, then put\n"
                   "  '# yaml-language-server: $schema=experiment.schema.json' atop a file)\n");
            return EXIT_OK;
        }
        fprintf(stderr, "faultline schema: unexpected argument '%s'\n", argv[i]);
        return EXIT_INVALID;
    }
    json_t *s = schema_experiment();
    char *text = json_dumps(s, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(s);
    if (text == NULL) {
        fprintf(stderr, "faultline schema: cannot render the schema\n");
        return EXIT_FAIL;
    }
    printf("%s\n", text);
    free(text);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
}
