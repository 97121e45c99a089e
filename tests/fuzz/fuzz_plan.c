/*
 * fuzz_plan: libFuzzer target for the plan loader and decision engine. Any JSON input must end
 * in a plan or an error with a message, never a crash, leak or hang. An accepted plan must
 * survive plan_to_json -> plan_from_json unchanged, and answer plan_decide for one call per
 * injector (and refuse a call naming no single injector) without touching anything else.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "experiment/catalog.h"
#include "plan/plan.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decide_some(struct plan *p)
{
    static const unsigned comps[] = {CATALOG_INJ_CONTROLLER_MODEL, CATALOG_INJ_CONTROLLER_EGRESS,
                                     CATALOG_INJ_MCP, CATALOG_INJ_GATE, CATALOG_INJ_WORLD};
    json_t *args = json_pack("{s:s,s:[i,s],s:{s:b}}", "path", "README.md", "items", 1, "x", "a",
                             "b", 1);
    struct plan_decision d;

    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < sizeof(comps) / sizeof(comps[0]); i++) {
            struct plan_call c = {comps[i], "mcp__fs__read_text_file", "fs", "registry.npmjs.org",
                                  "claude-haiku-4-5", args, 0};
            if (plan_decide(p, &c, &d) != 0)
                abort();
            if (d.inject && (d.kind == NULL || d.fault_index >= plan_nfaults(p)))
                abort();
            if (!d.inject && d.kind != NULL)
                abort();
            struct plan_call bare = {comps[i], NULL, NULL, NULL, NULL, NULL, 0};
            if (plan_decide(p, &bare, &d) != 0)
                abort();
        }
    }
    struct plan_call bad = {CATALOG_INJ_MCP | CATALOG_INJ_GATE, "t", NULL, NULL, NULL, NULL, 0};
    if (plan_decide(p, &bad, &d) != ERR_INVALID || d.inject)
        abort();
    json_decref(args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err e = {0};
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    struct plan *p;

    if (j == NULL)
        return 0;
    p = plan_from_json(j, &e);
    json_decref(j);
    if (p == NULL) {
        if (e.code == 0 || e.msg[0] == '\0')
            abort(); /* a refused plan always says why */
        return 0;
    }
    /* round trip: what plan_to_json writes, plan_from_json reads back to the same JSON */
    json_t *a = plan_to_json(p);
    struct err e2 = {0};
    struct plan *q = plan_from_json(a, &e2);
    if (q == NULL)
        abort();
    json_t *b = plan_to_json(q);
    if (!json_equal(a, b))
        abort();
    json_decref(a);
    json_decref(b);
    decide_some(p);
    plan_free(q);
    plan_free(p);
    return 0;
}
