/*
 * fuzz_redact: the redaction engine (src/util/redact.c) on untrusted text.
 *
 * For every input: the first line, when 8 bytes or more, is registered as a literal secret;
 * the rest is the text. Checks:
 *   1. the dry run (out NULL) finds something exactly when the full run does;
 *   2. the output is at most the input plus one "[REDACTED]" per credential found, and it
 *      changed only when something was found;
 *   3. the output scans again without a crash (a literal is not checked to be gone: one may
 *      sit inside a kept header name).
 * A disagreement aborts (a crash for libFuzzer, a failed replay in `make check`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/redact.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data, *nl = memchr(data, '\n', size);
    struct redact_lits *l = redact_lits_new();
    struct buf out = BUF_INIT, again = BUF_INIT;
    size_t dry, full;

    if (nl != NULL && (size_t)(nl - s) >= REDACT_LIT_MIN && (size_t)(nl - s) < 256) {
        char lit[256];
        memcpy(lit, s, (size_t)(nl - s));
        lit[nl - s] = '\0';
        if (strlen(lit) >= REDACT_LIT_MIN)
            redact_lits_add(l, lit);
    }
    dry = redact_text(l, s, size, NULL);
    full = redact_text(l, s, size, &out);
    if ((dry > 0) != (full > 0) || dry > 1)
        abort();
    if (out.len > size + full * (sizeof(REDACT_MARK) - 1))
        abort();
    if (full == 0 && (out.len != size || memcmp(out.data, s, size) != 0))
        abort();
    redact_text(l, out.data, out.len, &again);
    buf_release(&again);
    buf_release(&out);
    redact_lits_free(l);
    return 0;
}
