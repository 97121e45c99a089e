/*
 * breaker: the controller-mode circuit breaker of the seam (src/seam/seam.c). A decision the
 * controller did not give in time (or could not be asked for) opens it; while it is open,
 * decisions are not asked for at all (each call passes unfaulted at once, counted); a
 * background probe (the seam's sender thread, every probe_ms) closes it when the controller
 * answers again. Pure state with the time passed in, so tests drive it with a fake clock; not
 * thread-safe (the seam holds its lock around every call).
 *
 *   CLOSED --seam_breaker_trip--> OPEN           (returns 1: the caller warns once)
 *   OPEN   --seam_breaker_allow--> OPEN          (returns 0, skipped++)
 *   OPEN   --seam_breaker_probe_due, probe_ms since the trip or the last probe--> OPEN (probe)
 *   OPEN   --seam_breaker_reset--> CLOSED        (returns skipped, for the warning)
 */
#ifndef FAULTLINE_SEAM_BREAKER_H
#define FAULTLINE_SEAM_BREAKER_H

#include <stdint.h>

struct seam_breaker {
    int open;
    int probe_ms;          /* between probes while open */
    int64_t next_probe_ms; /* when open: the earliest time of the next probe */
    uint64_t skipped;      /* decisions not asked for since the breaker opened */
    uint64_t trips;        /* over the breaker's life */
};

/* Initialises caller-owned storage, closed; probe_ms <= 0 means 250. */
void seam_breaker_init(struct seam_breaker *b, int probe_ms);
/* 1: ask the controller. 0: the breaker is open; the decision is skipped (counted). */
int seam_breaker_allow(struct seam_breaker *b);
/* A decision failed for want of the controller (timeout, no connection) at now_ms: opens the
 * breaker. 1 when this opened it, 0 when it was open already. */
int seam_breaker_trip(struct seam_breaker *b, int64_t now_ms);
/* 1 when the breaker is open and a probe is due at now_ms (the next one is then scheduled
 * probe_ms later); 0 otherwise. */
int seam_breaker_probe_due(struct seam_breaker *b, int64_t now_ms);
/* seam_breaker_wait_ms's "closed, no probe to wait for": below every wait, not an error code. */
#define SEAM_BREAKER_CLOSED ((int64_t)-1)

/* Milliseconds from now_ms until the next probe is due (0: due now), or SEAM_BREAKER_CLOSED. */
int64_t seam_breaker_wait_ms(const struct seam_breaker *b, int64_t now_ms);
/* A probe found the controller answering: closes the breaker. Returns how many decisions were
 * skipped while it was open (0 when it was closed). */
uint64_t seam_breaker_reset(struct seam_breaker *b);

#endif
