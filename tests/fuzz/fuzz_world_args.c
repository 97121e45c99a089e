/*
 * fuzz_world_args: tool arguments against a schema. The input is "SCHEMA\nARGS": the schema
 * (JSON) through jschema_new (refused or compiled), then ARGS (JSON) through jschema_check; and
 * ARGS as the arguments of a call to a world tool with that schema, an effect and a dedupe key,
 * twice (the second a no-op or a conflict), through world_call.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/jschema.h"
#include "world/world.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *nl = memchr(p, '\n', size);
    char msg[256];
    struct err e = {0};
    json_t *schema, *args;

    if (nl == NULL)
        return 0;
    schema = json_loadb(p, (size_t)(nl - p), JSON_DECODE_ANY, NULL);
    args = json_loadb(nl + 1, size - (size_t)(nl - p) - 1, JSON_DECODE_ANY, NULL);
    if (schema && json_is_object(schema)) {
        struct jschema *s = jschema_new(schema, NULL, msg, sizeof(msg));
        if (s && args)
            jschema_check(s, args, msg, sizeof(msg));
        if (s) {
            json_t *spec = json_pack(
                "{s:s,s:[{s:s,s:s,s:O,s:{s:s,s:s,s:s,s:s}}]}", "name", "fz", "tools", "name", "t",
                "description", "", "input_schema", schema, "effect", "collection", "c",
                "business_key", "id", "dedupe_key", "key", "balance", "n");
            struct world *w = world_new(spec, &e);
            for (int i = 0; w && i < 2; i++) {
                struct world_call c;
                struct world_reply r;
                memset(&c, 0, sizeof(c));
                c.tool = "t";
                c.args = args;
                c.mode = i ? WORLD_FAULT_DUPLICATE : WORLD_FAULT_NONE;
                c.copies = 2;
                world_call(w, &c, &r);
                json_decref(r.result);
            }
            if (w)
                json_decref(world_snapshot_json(w));
            world_free(w);
            json_decref(spec);
        }
        jschema_free(s);
    }
    json_decref(schema);
    json_decref(args);
    return 0;
}
