/*
 * breaker: see breaker.h (the state table is there).
 */
#include <string.h>

#include "seam/breaker.h"
#include "util/banned.h"

void seam_breaker_init(struct seam_breaker *b, int probe_ms)
{
    memset(b, 0, sizeof(*b));
    b->probe_ms = probe_ms > 0 ? probe_ms : 250;
}

int seam_breaker_allow(struct seam_breaker *b)
{
    if (!b->open)
        return 1;
    b->skipped++;
    return 0;
}

int seam_breaker_trip(struct seam_breaker *b, int64_t now_ms)
{
    if (b->open)
        return 0;
    b->open = 1;
    b->skipped = 0;
    b->trips++;
    b->next_probe_ms = now_ms + b->probe_ms;
    return 1;
}

int seam_breaker_probe_due(struct seam_breaker *b, int64_t now_ms)
{
    if (!b->open || now_ms < b->next_probe_ms)
        return 0;
    b->next_probe_ms = now_ms + b->probe_ms;
    return 1;
}

int64_t seam_breaker_wait_ms(const struct seam_breaker *b, int64_t now_ms)
{
    if (!b->open)
        return SEAM_BREAKER_CLOSED;
    return b->next_probe_ms > now_ms ? b->next_probe_ms - now_ms : 0;
}

uint64_t seam_breaker_reset(struct seam_breaker *b)
{
    uint64_t n = b->open ? b->skipped : 0;

    b->open = 0;
    b->skipped = 0;
    return n;
}
