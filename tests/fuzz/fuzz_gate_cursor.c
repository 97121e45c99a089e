/*
 * fuzz_gate_cursor: `faultline gate cursor`'s hook input, untrusted (tests/fuzz/fuzz_gate_common.h).
 */
#include "fuzz_gate_common.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_gate(GATE_CURSOR, data, size);
}
