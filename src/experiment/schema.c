/*
 * schema: builds the experiment file's JSON Schema from the tables (see schema.h).
 *
 * How: each format section becomes a closed object schema (additionalProperties: false) in
 * $defs; each key's row maps to a type with its range, pattern, enum and default. Faults are
 * one $defs entry per catalog row (fault.<id>: the common keys, a match restricted to the keys
 * its injectors see, `when` only for tool-call faults, and its options), chosen by an if/then
 * on id. Probes and abort conditions come from their catalog tables; the mandatory
 * cost_usd_above becomes a `contains`.
 */
#include <math.h>
#include <string.h>

#include "experiment/catalog.h"
#include "experiment/experiment.h"
#include "experiment/format.h"
#include "experiment/schema.h"
#include "util/buf.h"
#include "util/banned.h"

static void set_num(json_t *o, const char *k, double v)
{
    if (v == floor(v) && fabs(v) < 9.2e18)
        json_object_set_new(o, k, json_integer((json_int_t)v));
    else
        json_object_set_new(o, k, json_real(v));
}

static json_t *ref(const char *def)
{
    struct buf b = BUF_INIT;
    json_t *j;
    buf_addf(&b, "#/$defs/%s", def);
    j = json_pack("{s:s}", "$ref", b.data);
    buf_release(&b);
    return j;
}

static json_t *str_array(const char *const *v)
{
    json_t *a = json_array();
    for (; v && *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

static void describe(json_t *s, const char *doc)
{
    if (doc)
        json_object_set_new(s, "description", json_string(doc));
}

static json_t *parse_default(const char *def, enum format_type t)
{
    if (def == NULL)
        return NULL;
    if (t == FORMAT_STRING || t == FORMAT_ENUM)
        return json_string(def);
    return json_loads(def, JSON_DECODE_ANY, NULL);
}

static json_t *special_schema(const char *section, const struct format_key *k);

static json_t *key_schema(const char *section, const struct format_key *k)
{
    json_t *s = json_object(), *d;
    int ranged = k->min <= k->max;

    switch (k->type) {
    case FORMAT_STRING:
        json_object_set_new(s, "type", json_string("string"));
        if (ranged) {
            set_num(s, "minLength", k->min);
            set_num(s, "maxLength", k->max);
        }
        if (k->pattern)
            json_object_set_new(s, "pattern", json_string(k->pattern));
        break;
    case FORMAT_INT:
    case FORMAT_NUMBER:
        json_object_set_new(s, "type", json_string(k->type == FORMAT_INT ? "integer" : "number"));
        if (ranged) {
            set_num(s, k->min_exclusive ? "exclusiveMinimum" : "minimum", k->min);
            set_num(s, "maximum", k->max);
        }
        break;
    case FORMAT_BOOL:
        json_object_set_new(s, "type", json_string("boolean"));
        break;
    case FORMAT_ENUM:
        json_object_set_new(s, "enum", str_array(k->values));
        break;
    case FORMAT_STRING_LIST: {
        json_t *it = json_pack("{s:s,s:i}", "type", "string", "minLength", 1);
        if (k->pattern)
            json_object_set_new(it, "pattern", json_string(k->pattern));
        json_object_set_new(s, "type", json_string("array"));
        json_object_set_new(s, "items", it);
        json_object_set_new(s, "uniqueItems", json_true());
        if (ranged) {
            set_num(s, "minItems", k->min);
            set_num(s, "maxItems", k->max);
        }
        break;
    }
    case FORMAT_MAP:
        json_decref(s);
        s = ref(k->section);
        break;
    case FORMAT_LIST:
        json_object_set_new(s, "type", json_string("array"));
        json_object_set_new(s, "items", ref(k->section));
        if (ranged) {
            set_num(s, "minItems", k->min);
            set_num(s, "maxItems", k->max);
        }
        break;
    case FORMAT_DICT:
        json_object_set_new(s, "type", json_string("object"));
        json_object_set_new(
            s, "propertyNames",
            json_pack("{s:s,s:i,s:i}", "pattern", k->pattern, "minLength", 1, "maxLength", 64));
        json_object_set_new(s, "additionalProperties", ref(k->section));
        if (ranged)
            set_num(s, "maxProperties", k->max);
        break;
    case FORMAT_ANY:
        break;
    case FORMAT_SPECIAL:
        json_decref(s);
        s = special_schema(section, k);
        break;
    }
    describe(s, k->doc);
    if ((d = parse_default(k->def, k->type)) != NULL)
        json_object_set_new(s, "default", d);
    return s;
}

/* A closed object schema for the section sec; skip names a key left out (or NULL). */
static json_t *section_schema_of(const struct format_section *sec, const char *skip)
{
    const char *name = sec->name;
    json_t *props = json_object(), *req = json_array();
    for (const struct format_key *k = sec->keys; k->name; k++) {
        if (skip && strcmp(skip, k->name) == 0)
            continue;
        json_object_set_new(props, k->name, key_schema(name, k));
        if (k->required)
            json_array_append_new(req, json_string(k->name));
    }
    json_t *s = json_pack("{s:s,s:s,s:o,s:b}", "description", sec->doc, "type", "object",
                          "properties", props, "additionalProperties", 0);
    if (json_array_size(req))
        json_object_set_new(s, "required", req);
    else
        json_decref(req);
    return s;
}

static json_t *section_schema(const char *name, const char *skip)
{
    return section_schema_of(format_section_find(name), skip);
}

json_t *schema_section(const struct format_section *sec)
{
    return section_schema_of(sec, NULL);
}

static json_t *value_schema(enum catalog_opt_type t, double min, double max, int excl,
                            const char *doc)
{
    json_t *s = json_pack("{s:s}", "type", t == CATALOG_OPT_INT ? "integer" : "number");
    set_num(s, excl ? "exclusiveMinimum" : "minimum", min);
    set_num(s, "maximum", max);
    describe(s, doc);
    return s;
}

static json_t *option_schema(const struct catalog_option *o)
{
    json_t *s = json_object(), *d;
    switch (o->type) {
    case CATALOG_OPT_INT:
        if (o->values) {
            json_t *e = json_array();
            for (const char *const *p = o->values; *p; p++)
                json_array_append_new(e, json_loads(*p, JSON_DECODE_ANY, NULL));
            json_object_set_new(s, "enum", e);
            break;
        }
        json_object_set_new(s, "type", json_string("integer"));
        if (o->min <= o->max) {
            set_num(s, "minimum", o->min);
            set_num(s, "maximum", o->max);
        }
        break;
    case CATALOG_OPT_NUMBER:
        json_object_set_new(s, "type", json_string("number"));
        if (o->min <= o->max) {
            set_num(s, "minimum", o->min);
            set_num(s, "maximum", o->max);
        }
        break;
    case CATALOG_OPT_STRING:
        json_object_set_new(s, "type", json_string("string"));
        set_num(s, "maxLength", CATALOG_STRING_MAX);
        if (o->required)
            set_num(s, "minLength", 1);
        break;
    case CATALOG_OPT_BOOL:
        json_object_set_new(s, "type", json_string("boolean"));
        break;
    case CATALOG_OPT_ENUM:
        json_object_set_new(s, "enum", str_array(o->values));
        break;
    case CATALOG_OPT_STRING_LIST:
        json_object_set_new(s, "type", json_string("array"));
        json_object_set_new(s, "items", json_pack("{s:s,s:i}", "type", "string", "minLength", 1));
        json_object_set_new(s, "uniqueItems", json_true());
        set_num(s, "maxItems", CATALOG_LIST_MAX);
        break;
    case CATALOG_OPT_JSON:
        break;
    case CATALOG_OPT_OBJECT:
        json_object_set_new(s, "type", json_string("object"));
        break;
    }
    describe(s, o->doc);
    if ((d = catalog_option_default(o)) != NULL)
        json_object_set_new(s, "default", d);
    return s;
}

/* The schema of one fault: common keys, its match, `when` if it sees arguments, options. */
static json_t *fault_schema(const struct catalog_fault *f)
{
    const struct format_section *fs = format_section_find("fault");
    const struct format_section *ms = format_section_find("match");
    json_t *props = json_object(), *req = json_array(), *mprops = json_object(), *match;
    unsigned mk = catalog_match_keys(f->injectors);

    json_object_set_new(props, "id", json_pack("{s:s}", "const", f->id));
    json_array_append_new(req, json_string("id"));
    for (const struct format_key *k = ms->keys; k->name; k++) {
        unsigned bit = 0;
        for (unsigned b = 1; b <= CATALOG_MATCH_SERVER; b <<= 1)
            if (strcmp(catalog_match_key_name(b), k->name) == 0)
                bit = b;
        if (mk & bit)
            json_object_set_new(mprops, k->name, key_schema("match", k));
    }
    match = json_pack("{s:s,s:s,s:o,s:b}", "description", "which calls the fault applies to",
                      "type", "object", "properties", mprops, "additionalProperties", 0);
    if (f->requires_host || f->requires_tool) {
        json_object_set_new(match, "required",
                            json_pack("[s]", f->requires_host ? "host" : "tool"));
        json_array_append_new(req, json_string("match"));
    }
    json_object_set_new(props, "match", match);
    for (const struct format_key *k = fs->keys; k->name; k++) {
        if (!strcmp(k->name, "id") || !strcmp(k->name, "match"))
            continue;
        if (!strcmp(k->name, "when") && !catalog_fault_sees_args(f))
            continue;
        json_object_set_new(props, k->name, key_schema("fault", k));
    }
    for (const struct catalog_option *o = f->options; o->name; o++) {
        json_object_set_new(props, o->name, option_schema(o));
        if (o->required)
            json_array_append_new(req, json_string(o->name));
    }
    return json_pack("{s:s,s:s,s:o,s:o,s:b}", "description", f->effect, "type", "object",
                     "properties", props, "required", req, "additionalProperties", 0);
}

static json_t *faults_item_schema(json_t *defs)
{
    size_t n;
    const struct catalog_fault *all = catalog_faults(&n);
    json_t *ids = json_array(), *branches = json_array();
    struct buf name = BUF_INIT;

    for (size_t i = 0; i < n; i++) {
        json_array_append_new(ids, json_string(all[i].id));
        buf_reset(&name);
        buf_addf(&name, "fault.%s", all[i].id);
        json_object_set_new(defs, name.data, fault_schema(&all[i]));
        json_array_append_new(branches, json_pack("{s:{s:{s:{s:s}},s:[s]},s:o}", "if", "properties",
                                                  "id", "const", all[i].id, "required", "id",
                                                  "then", ref(name.data)));
    }
    buf_release(&name);
    return json_pack("{s:s,s:s,s:[s],s:{s:{s:o,s:s}},s:o}", "description",
                     "a fault from the catalog, its where and when, and its options beside them",
                     "type", "object", "required", "id", "properties", "id", "enum", ids,
                     "description", "the fault's id in the catalog (`faultline list`)", "allOf",
                     branches);
}

static json_t *probe_item_schema(void)
{
    size_t n;
    const struct catalog_probe *all = catalog_probes(&n);
    const struct format_section *ps = format_section_find("probe");
    json_t *bare = json_array(), *ids = json_array(), *branches = json_array();

    for (size_t i = 0; i < n; i++) {
        const struct catalog_probe *p = &all[i];
        json_t *props = json_object(), *req = json_pack("[s]", "id");
        json_array_append_new(ids, json_string(p->id));
        if (!p->takes_value)
            json_array_append_new(bare, json_string(p->id));
        json_object_set_new(props, "id", json_pack("{s:s}", "const", p->id));
        json_object_set_new(props, "weight", key_schema("probe", format_key_find(ps, "weight")));
        if (p->takes_value) {
            json_object_set_new(props, "value",
                                value_schema(p->value_type, p->value_min, p->value_max,
                                             p->value_min_exclusive, p->value_doc));
            json_array_append_new(req, json_string("value"));
        }
        json_t *then =
            json_pack("{s:s,s:s,s:o,s:o,s:b}", "description", p->passes_when, "type", "object",
                      "properties", props, "required", req, "additionalProperties", 0);
        json_array_append_new(branches,
                              json_pack("{s:{s:{s:{s:s}},s:[s]},s:o}", "if", "properties", "id",
                                        "const", p->id, "required", "id", "then", then));
    }
    return json_pack("{s:[{s:o,s:s},{s:s,s:[s],s:{s:{s:o}},s:o}]}", "anyOf", "enum", bare,
                     "description", "a probe that takes no value, weight 1", "type", "object",
                     "required", "id", "properties", "id", "enum", ids, "allOf", branches);
}

static json_t *abort_schema(const struct format_key *k)
{
    size_t n;
    const struct catalog_abort *all = catalog_aborts(&n);
    json_t *bare = json_array(), *props = json_object(), *all_of = json_array();

    for (size_t i = 0; i < n; i++) {
        const struct catalog_abort *c = &all[i];
        if (!c->takes_value) {
            json_array_append_new(bare, json_string(c->id));
            continue;
        }
        json_t *vs = value_schema(c->value_type, c->value_min, c->value_max, c->value_min_exclusive,
                                  c->met_when);
        json_object_set_new(props, c->id, vs);
        if (c->required)
            json_array_append_new(all_of,
                                  json_pack("{s:{s:s,s:{s:{}},s:[s]}}", "contains", "type",
                                            "object", "properties", c->id, "required", c->id));
    }
    json_t *s = json_pack("{s:s,s:{s:[{s:o},{s:s,s:i,s:i,s:o,s:b}]}}", "type", "array", "items",
                          "anyOf", "enum", bare, "type", "object", "minProperties", 1,
                          "maxProperties", 1, "properties", props, "additionalProperties", 0);
    set_num(s, "minItems", k->min);
    set_num(s, "maxItems", k->max);
    json_object_set_new(s, "allOf", all_of);
    return s;
}

static json_t *special_schema(const char *section, const struct format_key *k)
{
    if (!strcmp(section, "experiment") && !strcmp(k->name, "seed"))
        return json_pack("{s:[{s:s,s:i,s:I},{s:s,s:s}]}", "anyOf", "type", "integer", "minimum", 0,
                         "maximum", (json_int_t)0x7fffffffffffffffLL, "type", "string", "pattern",
                         "^(0x[0-9a-fA-F]{1,16}|[0-9]{1,19})$");
    if (!strcmp(section, "experiment") && !strcmp(k->name, "probes")) {
        json_t *s = json_pack("{s:s,s:o}", "type", "array", "items", ref("probe"));
        set_num(s, "minItems", k->min);
        set_num(s, "maxItems", k->max);
        return s;
    }
    if (!strcmp(section, "experiment") && !strcmp(k->name, "abort"))
        return abort_schema(k);
    if (!strcmp(section, "experiment") && !strcmp(k->name, "model"))
        return json_pack("{s:[{s:[s,s]},{s:s,s:s,s:i},o]}", "anyOf", "enum", "anthropic", "openai",
                         "type", "string", "pattern", "^https?://[^ \t\r\n]+$", "maxLength", 2048,
                         ref("model"));
    if (!strcmp(section, "world_invariant") && !strcmp(k->name, "id")) {
        size_t n;
        const struct catalog_invariant *all = catalog_invariants(&n);
        json_t *e = json_array();
        for (size_t i = 0; i < n; i++)
            if (all[i].world_declared)
                json_array_append_new(e, json_string(all[i].id));
        return json_pack("{s:o}", "enum", e);
    }
    if (!strcmp(section, "egress") && !strcmp(k->name, "host_ports")) {
        static const int reserved[] = EXPERIMENT_HOST_PORTS_RESERVED;
        json_t *not = json_array();
        for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
            json_array_append_new(not, json_integer(reserved[i]));
        json_t *s = json_pack("{s:s,s:{s:s,s:i,s:i,s:{s:o}},s:b}", "type", "array", "items", "type",
                              "integer", "minimum", 1, "maximum", 65535, "not", "enum", not,
                              "uniqueItems", 1);
        set_num(s, "minItems", k->min);
        set_num(s, "maxItems", k->max);
        return s;
    }
    return json_object(); /* fault.id, probe.id, probe.value: handled by their parents */
}

json_t *schema_experiment(void)
{
    json_t *defs = json_object(), *root;
    size_t n;
    const struct format_section *secs = format_sections(&n);

    root = json_pack(
        "{s:s,s:s,s:s,s:s}", "$schema", SCHEMA_DIALECT, "$id", "urn:faultline:experiment", "title",
        "faultline experiment", "description",
        "An experiment file for faultline validate/run (docs/experiment-format.md). Generated by `faultline schema` from the same tables as `faultline validate`, which also checks rules a schema cannot state.");
    json_object_set_new(defs, "fault", faults_item_schema(defs));
    json_object_set_new(defs, "probe", probe_item_schema());
    for (size_t i = 0; i < n; i++) {
        const char *name = secs[i].name;
        if (!strcmp(name, "experiment") || !strcmp(name, "fault") || !strcmp(name, "match") ||
            !strcmp(name, "probe"))
            continue;
        json_object_set_new(defs, name, section_schema(name, NULL));
    }
    json_t *top = section_schema("experiment", NULL);
    json_object_update(root, top);
    json_decref(top);
    json_object_set_new(
        root, "description",
        json_string(
            "An experiment file for faultline (docs/experiment-format.md). Generated by `faultline schema` from the same tables as `faultline validate`, which also checks rules a schema cannot state."));
    json_object_set_new(root, "$defs", defs);
    return root;
}
