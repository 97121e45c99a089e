/*
 * backend: see backend.h.
 */
#include <string.h>

#include "mcp/backend.h"
#include "util/banned.h"

static int bk_decide(void *ctx, const struct plan_call *call, struct seam_decision *out)
{
    return seam_decide(ctx, call, out);
}

/* The session builds ev for this call and drops its reference after it: the seam may stamp it
 * and keep a reference (seam_emit borrows). */
static void bk_emit(void *ctx, json_t *ev)
{
    seam_emit(ctx, ev);
}

static const char *bk_canary(void *ctx)
{
    return seam_canary(ctx);
}

static json_t *bk_plan_faults(void *ctx)
{
    return seam_plan_faults(ctx);
}

static int bk_select(void *ctx, size_t fault_index, const char *key, uint64_t index,
                     double probability)
{
    return seam_select(ctx, fault_index, key, index, probability);
}

static int bk_mutating_allowed(void *ctx)
{
    return seam_mutating_allowed(ctx);
}

void mcp_backend_init(struct mcp_backend *b, struct seam *s)
{
    memset(b, 0, sizeof(*b));
    b->ctx = s;
    b->decide = bk_decide;
    b->emit = seam_records(s) ? bk_emit : NULL;
    b->canary = bk_canary;
    b->plan_faults = bk_plan_faults;
    b->select = bk_select;
    b->mutating_allowed = bk_mutating_allowed;
    b->raw_events = 1; /* seam_emit writes them (events_append) or sends their text */
    b->args_unused = !seam_decide_reads_args(s);
}

void mcp_backend_flush(void *ctx)
{
    seam_flush(ctx);
}
