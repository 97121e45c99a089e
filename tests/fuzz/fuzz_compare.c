/*
 * fuzz_compare: two hostile reports side by side. The input is "A\nB": each JSON (any value)
 * as a side's report, then compare_build, compare_check with both budgets, the text and
 * Markdown tables, and compare_drift of A against B's result (a stored report against a
 * regrade) with its text.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "report/compare.h"
#include "util/buf.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *nl = memchr(p, '\n', size);
    struct compare_side a = {0}, b = {0};
    struct compare_gate g = {1, 5, 1, 20};
    struct buf out = BUF_INIT;
    json_t *cmp, *diffs;

    if (nl == NULL)
        return 0;
    a.report = json_loadb(p, (size_t)(nl - p), JSON_DECODE_ANY, NULL);
    b.report = json_loadb(nl + 1, size - (size_t)(nl - p) - 1, JSON_DECODE_ANY, NULL);
    if (a.report == NULL || b.report == NULL)
        goto done;
    memcpy(a.label, "A", 2);
    memcpy(b.label, "B\x01", 3);
    cmp = compare_build(&a, &b);
    compare_check(cmp, &g, &out);
    compare_render_text(cmp, &out);
    compare_render_md(cmp, &out);
    json_decref(cmp);
    diffs = json_array();
    compare_drift(a.report, json_object_get(b.report, "result"), diffs, NULL);
    compare_drift_text(diffs, &out);
    json_decref(diffs);
done:
    compare_side_release(&a);
    compare_side_release(&b);
    buf_release(&out);
    return 0;
}
