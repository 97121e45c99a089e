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

/* A closed object schema of one format section (format.h) of another file described by format
 * tables (a policy file): its keys with types, ranges, patterns, enums, defaults and docs; MAP and
 * LIST keys refer to "#/$defs/SECTION" (new reference). */
struct format_section;
json_t *schema_section(const struct format_section *sec);

#endif
