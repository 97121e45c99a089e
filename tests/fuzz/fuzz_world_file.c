/*
 * fuzz_world_file: world files (docs/world.md) on untrusted text: experiment_world_parse (the
 * YAML reader, the world tables, the input schemas through util/jschema), and, when the text
 * is a valid world, world_new and a tools/list, a context and a report through the server's
 * line handler, with the ledger built as JSON.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "experiment/experiment.h"
#include "util/buf.h"
#include "world/serve.h"
#include "world/world.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct experiment_diags d = {0};
    struct err e = {0};
    json_t *spec = experiment_world_parse("fuzz.yaml", (const char *)data, size, &d, &e);
    experiment_diags_release(&d);
    if (spec == NULL)
        return 0;
    struct world *w = world_new(spec, &e);
    if (w) {
        struct world_serve_opts o;
        struct buf out = BUF_INIT;
        static const char *const lines[] = {
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"world_context\",\"arguments\":{}}}",
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"world_report\",\"arguments\":{}}}",
        };
        memset(&o, 0, sizeof(o));
        for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
            world_serve_line(w, &o, lines[i], strlen(lines[i]), &out);
        json_decref(world_ledger_json(w));
        buf_release(&out);
        world_free(w);
    }
    json_decref(spec);
    return 0;
}
