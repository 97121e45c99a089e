/*
 * evwriter: the standalone seam's events writer, a thread of its own, so that appending the
 * events (stamping the line, the redaction check of every string, the dump, the write(2)) is
 * never on the round trip of what the component relays, nor delays its next read.
 *
 * The caller's thread hands over batches of event objects (seam_evwriter_push, from seam_flush
 * once the component has written what its peers wait for); the thread appends them in the
 * order handed over, each batch in one write(2) (events_hold). It is started at the first
 * batch, so a component that forks its children at start (the shim's MCP server) does so
 * before it exists. The events cross threads as jansson objects: an emitted event is not
 * changed afterwards (seam.h), and jansson's reference counts are atomic
 * (JANSSON_THREAD_SAFE_REFCOUNT, checked at build time).
 *
 * Waking: the thread, after a batch, waits for the next one in short naps (NAP_MS) for a while
 * (LINGER_MS) before it sleeps until woken, so a busy caller hands batches over without a
 * system call; it wakes the thread only when the thread sleeps or WAKE_AT events wait. The
 * queue is bounded: with MAX_PENDING events waiting the caller waits for room (the file is
 * the record: nothing is dropped). Without a thread (pthread_create failed) push writes at
 * once, on the caller's thread.
 */
#ifndef FAULTLINE_SEAM_EVWRITER_H
#define FAULTLINE_SEAM_EVWRITER_H

#include <jansson.h>

#include "events/events.h"

struct seam_evwriter;

/* A writer for ew (borrowed: it must outlive the writer; once a batch was pushed only the
 * writer's thread uses it). component names the log lines. Caller frees with
 * seam_evwriter_free. */
struct seam_evwriter *seam_evwriter_new(struct events_writer *ew, const char *component);
/* Hands the events of batch (a JSON array, borrowed: its elements are referenced, the caller
 * may clear it) over to be appended in order. Waits only while the queue is full. */
void seam_evwriter_push(struct seam_evwriter *w, json_t *batch);
/* Appends what is still queued, stops the thread and frees. NULL is a no-op. */
void seam_evwriter_free(struct seam_evwriter *w);

#endif
