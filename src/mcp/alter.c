/*
 * alter: see alter.h. Pure functions over jansson values; the number-token scanner is the only
 * part with rules of its own (number_token_at).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/alter.h"
#include "codec/jsonrpc.h"
#include "events/view.h"
#include "util/err.h"
#include "util/banned.h"

/* ---- results: the shared code of codec/toolres.h (the world changes its results by it) ---- */

void mcp_alter_canary_text(struct buf *out, const char *message, const char *canary)
{
    toolres_canary_text(out, message, canary);
}

json_t *mcp_alter_text_result(const char *text, int is_error, int stateless)
{
    return toolres_text_result(text, is_error, stateless);
}

const char *mcp_alter_sc_name(enum mcp_sc_change c)
{
    return toolres_sc_name((enum toolres_sc_change)c);
}

size_t mcp_alter_omit(json_t *result, int truncate, size_t keep_bytes)
{
    return toolres_omit(result, truncate, keep_bytes);
}

size_t mcp_alter_wrong_data(json_t *result, enum mcp_wrong_mode mode, double by, const char *find,
                            const char *replace_with)
{
    return toolres_wrong_data(result, (enum toolres_wrong_mode)mode, by, find, replace_with);
}

size_t mcp_alter_numbers_in_text(const char *s, size_t n, enum mcp_wrong_mode mode, double by,
                                 struct buf *out)
{
    return toolres_numbers_in_text(s, n, (enum toolres_wrong_mode)mode, by, out);
}

int mcp_alter_inject(json_t *result, const char *payload, enum mcp_inject_pos pos,
                     enum mcp_sc_change *sc_change)
{
    enum toolres_sc_change how;
    int rc = toolres_inject(result, payload, (enum toolres_inject_pos)pos, &how);

    if (sc_change)
        *sc_change = (enum mcp_sc_change)how;
    return rc;
}

const char *mcp_alter_violate(json_t *result, const json_t *output_schema,
                              enum mcp_violate_mode mode, const char *canary)
{
    return toolres_violate(result, output_schema, (enum toolres_violate_mode)mode, canary);
}

void mcp_alter_malformed(struct buf *out, const json_t *id, const json_t *result,
                         enum mcp_malformed_mode mode, const char *canary)
{
    toolres_malformed(out, id, result, (enum toolres_malformed_mode)mode, canary);
}

void mcp_alter_result_text(const json_t *result, struct buf *out, size_t max)
{
    toolres_result_text(result, out, max);
}

void mcp_alter_result_text_scan(const char *line, const struct jsonrpc_span *result,
                                struct buf *out, size_t max)
{
    toolres_result_text_scan(line, result, out, max);
}

/* ---- tool definitions ---- */

int mcp_alter_annotations(json_t *tool, const json_t *annotations)
{
    json_t *a = json_object_get(tool, "annotations");
    const char *k;
    json_t *v;
    int changed = 0;

    if (!json_is_object(tool) || !json_is_object(annotations))
        return 0;
    if (!json_is_object(a)) {
        a = json_object();
        json_object_set_new(tool, "annotations", a);
    }
    json_object_foreach((json_t *)annotations, k, v)
    {
        if (!json_equal(json_object_get(a, k), v)) {
            json_object_set_new(a, k, json_deep_copy(v));
            changed = 1;
        }
    }
    return changed;
}

int mcp_alter_redefine(json_t *tool, const json_t *fields)
{
    const char *k;
    json_t *v;
    int changed = 0;

    if (!json_is_object(tool) || !json_is_object(fields))
        return 0;
    json_object_foreach((json_t *)fields, k, v)
    {
        if (strcmp(k, "name") == 0)
            continue;
        if (!json_equal(json_object_get(tool, k), v)) {
            json_object_set_new(tool, k, json_deep_copy(v));
            changed = 1;
        }
    }
    return changed;
}

json_t *mcp_alter_default_rename(const json_t *tool)
{
    json_t *schema = json_object_get(tool, "inputSchema");
    json_t *required = json_object_get(schema, "required");
    json_t *props = json_object_get(schema, "properties");
    const char *name = NULL;
    char buf[256];

    if (json_array_size(required) > 0)
        name = json_string_value(json_array_get(required, 0));
    if (name == NULL && json_object_size(props) > 0)
        name = json_object_iter_key(json_object_iter(props));
    if (name == NULL)
        return NULL;
    snprintf(buf, sizeof(buf), "%s_v2", name);
    return json_pack("{s:s}", name, buf);
}

int mcp_alter_rename_schema(json_t *tool, const json_t *rename)
{
    json_t *schema = json_object_get(tool, "inputSchema");
    json_t *props = json_object_get(schema, "properties");
    json_t *required = json_object_get(schema, "required");
    const char *old;
    json_t *nv;
    int n = 0;

    if (!json_is_object(props))
        return 0;
    json_object_foreach((json_t *)rename, old, nv)
    {
        json_t *p = json_object_get(props, old);
        if (p == NULL || !json_is_string(nv))
            continue;
        json_object_set(props, json_string_value(nv), p);
        json_object_del(props, old);
        n++;
        for (size_t i = 0; i < json_array_size(required); i++) {
            const char *r = json_string_value(json_array_get(required, i));
            if (r && strcmp(r, old) == 0)
                json_array_set_new(required, i, json_string(json_string_value(nv)));
        }
    }
    return n;
}

const char *mcp_alter_check_args(const json_t *args, const json_t *rename, json_t **reverse_into)
{
    const char *old;
    json_t *nv;

    if (reverse_into)
        *reverse_into = NULL;
    json_object_foreach((json_t *)rename, old, nv)
    {
        if (json_object_get(args, old))
            return old;
    }
    if (reverse_into && json_is_object(args)) {
        json_t *copy = json_deep_copy(args);
        json_object_foreach((json_t *)rename, old, nv)
        {
            const char *newname = json_string_value(nv);
            json_t *v = newname ? json_object_get(copy, newname) : NULL;
            if (v) {
                json_object_set(copy, old, v);
                json_object_del(copy, newname);
            }
        }
        *reverse_into = copy;
    }
    return NULL;
}
