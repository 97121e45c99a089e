/*
 * fuzz_mockscript: mock-model scripts and price files (both YAML through the JSON view of
 * util/yaml.h) on untrusted text. The first byte picks the loader: a mock script, a YAML price
 * file, or a JSON one.
 */
#include <stddef.h>
#include <stdint.h>

#include "model/mockscript.h"
#include "codec/pricing.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err e = {0};
    if (size == 0)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (data[0] % 3 == 0) {
        mockscript_free(mockscript_parse(text, len, "fuzz.yaml", &e));
    } else {
        struct pricing_table *t = pricing_new();
        pricing_load_text(t, text, len, "fuzz", data[0] % 3 == 2, &e);
        pricing_free(t);
    }
    return 0;
}
