/*
 * fuzz_gate_common: the body of fuzz_gate_claude, fuzz_gate_codex and fuzz_gate_cursor: one
 * harness's hook input, untrusted, through what `faultline gate HARNESS` does with it: the
 * parse, the lax command recovery, and the whole local decision (policy, tier, the answer in
 * the harness's format; no controller, no policy file). The answer must be JSON whenever
 * stdout is not empty, and a fail-safe answer must never print on stdout.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "gate/gate.h"
#include "gate/hook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fuzz_gate(enum gate_harness h, const uint8_t *data, size_t size)
{
    struct gate_opts o = {.harness = h, .project_dir = "/nonexistent-fuzz"};
    struct gate_call c;
    struct gate_result r;
    struct buf cmd = BUF_INIT;
    struct err e = {0};

    gate_hook_parse(h, (const char *)data, size, &c, &e);
    gate_call_release(&c);
    gate_hook_recover_command((const char *)data, size, &cmd);
    buf_release(&cmd);
    gate_result_init(&r);
    gate_run(&o, (const char *)data, size, &r);
    if (r.out.len > 0) {
        json_t *v = json_loadb(r.out.data, r.out.len, 0, NULL);
        if (!json_is_object(v) || r.failsafe)
            abort();
        json_decref(v);
    }
    if (r.exit_code != 0 && r.exit_code != 2)
        abort();
    gate_result_release(&r);
    return 0;
}
