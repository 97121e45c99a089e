/*
 * schema: the JSON Schema (draft 2020-12) of the experiment file, generated from the format
 * tables (format.h) and the catalog (catalog.h), for editors (yaml-language-server) and other
 * tools. `faultline validate` stays the authority: it also checks what a schema cannot say
 * (options across each other, world cross-references, warnings).
 */
#ifndef FAULTLINE_EXPERIMENT_SCHEMA_H
#define FAULTLINE_EXPERIMENT_SCHEMA_H

#include <jansson.h>

#define SCHEMA_DIALECT "https://json-schema.org/draft/2020-12/schema"

/* The schema (new reference). Key order is stable: print it with JSON_PRESERVE_ORDER. */
json_t *schema_experiment(void);

#endif
