/*
 * docgen: renders the catalog for people: docs/faults.md (Markdown) and the plain text of
 * `faultline list`. Both are generated from catalog.h's tables only, so they cannot drift;
 * tests/e2e/t0101-list-markdown.sh fails when docs/faults.md differs from the Markdown here.
 */
#ifndef FAULTLINE_EXPERIMENT_DOCGEN_H
#define FAULTLINE_EXPERIMENT_DOCGEN_H

#include <jansson.h>

#include "util/buf.h"

/* Appends docs/faults.md to out. */
void docgen_faults_markdown(struct buf *out);
/* Appends the catalog as plain text (faults with options, probes, invariants, abort
 * conditions) to out. */
void docgen_list_text(struct buf *out);

/* The example experiments shipped with faultline (examples/), looked for relative to the
 * running executable: <exe dir>/examples (a binary at the repository root),
 * <exe dir>/../share/faultline/examples (make install), then <exe dir>/../../examples
 * (build/<mode>/faultline). docgen_examples_dir: the first that is a directory, as a real
 * path, appended to dir; 0, or ERR_NOTFOUND (dir unchanged). docgen_examples_text: the
 * "EXAMPLES in DIR" block of `faultline list` (or where it looked), appended to out.
 * docgen_examples_json: sets "examples_dir" (the directory, or null) and "examples" (the file
 * names, empty when not found) in obj. */
int docgen_examples_dir(struct buf *dir);
void docgen_examples_text(struct buf *out);
void docgen_examples_json(json_t *obj);

#endif
