/*
 * outq: the bounded queue of serialized events between the seam's caller thread (a boundary
 * component's loop: the MCP shim's relay) and its sender thread (controller mode,
 * src/seam/seam.c). Items are heap strings (one compact JSON object each, made on the
 * caller's thread: no jansson value crosses threads). Past cap items the oldest is dropped and
 * counted (the newest say most about where the run is now). Not thread-safe: the seam holds
 * its lock around every call.
 */
#ifndef FAULTLINE_SEAM_OUTQ_H
#define FAULTLINE_SEAM_OUTQ_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

struct seam_outq {
    char **items; /* ring of cap slots */
    size_t cap, head, len;
    uint64_t dropped; /* items dropped because the queue was full, over its life */
};

/* Initialises caller-owned storage for at most cap (> 0) items. */
void seam_outq_init(struct seam_outq *q, size_t cap);
/* Frees the items left and the ring. */
void seam_outq_release(struct seam_outq *q);
/* Appends line (takes ownership; heap, NUL-terminated). When full the oldest item is freed
 * first and counted in q->dropped; returns 1 then, else 0. */
int seam_outq_push(struct seam_outq *q, char *line);
/* Moves up to max items from the front to the end of out, as elements of a JSON array the
 * caller opens with '[' and closes with ']': each item is preceded by ',' unless out is empty
 * or ends with '['. Returns how many were moved (an item out cannot take stays queued). */
size_t seam_outq_take(struct seam_outq *q, size_t max, struct buf *out);

#endif
