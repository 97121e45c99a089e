/*
 * docgen: renders the catalog for people: docs/faults.md (Markdown) and the plain text of
 * `faultline list`. Both are generated from catalog.h's tables only, so they cannot drift;
 * tests/e2e/t0101-list-markdown.sh fails when docs/faults.md differs from the Markdown here.
 */
#ifndef FAULTLINE_EXPERIMENT_DOCGEN_H
#define FAULTLINE_EXPERIMENT_DOCGEN_H

#include "util/buf.h"

/* Appends docs/faults.md to out. */
void docgen_faults_markdown(struct buf *out);
/* Appends the catalog as plain text (faults with options, probes, invariants, abort
 * conditions) to out. */
void docgen_list_text(struct buf *out);

#endif
