/*
 * fuzz_experiment: libFuzzer target for the experiment parser (util/yaml + validator + normal
 * form). Any input must end in an experiment or in diagnostics, never a crash, leak or hang; a
 * valid one must also render its normal form and build the plans of a baseline and a faulted
 * repetition that survive plan_to_json -> plan_from_json unchanged, and the YAML tree must
 * convert to JSON or say why not.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "experiment/experiment.h"
#include "plan/plan.h"
#include "util/buf.h"
#include "util/yaml.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Builds repetition rep's plan and checks its JSON round trip. */
static void plan_round_trip(const struct experiment *x, int rep)
{
    struct err e = {0};
    struct plan *p = plan_build(x, rep, 0, 0, NULL, NULL, &e);
    if (p == NULL)
        abort(); /* a valid experiment always has a plan */
    json_t *a = plan_to_json(p);
    struct plan *q = plan_from_json(a, &e);
    if (q == NULL)
        abort();
    json_t *b = plan_to_json(q);
    if (!json_equal(a, b))
        abort();
    json_decref(a);
    json_decref(b);
    plan_free(q);
    plan_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct experiment_diags d = {0};
    struct err e = {0};
    struct experiment *x = experiment_parse("fuzz.yaml", (const char *)data, size, &d, &e);
    struct buf out = BUF_INIT;

    experiment_diags_format(&d, "fuzz.yaml", &out);
    if (x) {
        json_t *j = experiment_to_json(x);
        char *s = json_dumps(j, EXPERIMENT_JSON_FLAGS);
        if (s == NULL || strlen(x->hash) != 64 || d.nerrors != 0)
            abort();
        free(s);
        json_decref(j);
        plan_round_trip(x, 0);
        plan_round_trip(x, x->repeat);
    } else if (d.nerrors == 0) {
        abort(); /* an invalid file always says why */
    }
    experiment_free(x);
    experiment_diags_release(&d);
    buf_release(&out);

    struct ydoc doc;
    struct ydoc_problem fatal;
    if (ydoc_parse((const char *)data, size, NULL, &doc, &fatal) == 0 && doc.root) {
        const struct ynode *bad = NULL;
        json_t *j = ynode_to_json(doc.root, &bad);
        if (j == NULL && bad == NULL)
            abort();
        json_decref(j);
    }
    ydoc_release(&doc);
    return 0;
}
