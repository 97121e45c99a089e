/*
 * faults: the llm.* fault transforms, as pure functions of a request or of the fault's
 * options. The controller (model proxy) decides whether to inject; these say what injecting
 * means. No I/O, no clock: the proxy applies llm.latency itself (a timer) and counts stream
 * chunks itself (sse.h) for llm.upstream_5xx's stream_cut_after_chunks.
 *
 * Every error message carries the repetition's canary, in the provider's own error format,
 * so an agent that reports the failure repeats it:
 *   "faultline injected llm.rate_limit: rate limit exceeded, retry after 5 s [E-FAULTLINE-..]"
 *
 * llm.context_trim, for each API (req is modified in place):
 *   "messages" are messages[] (Anthropic, chat) or input[] items (Responses); entries with
 *   role "system" or "developer" are not counted among them: drop_system governs those.
 *   drop_system removes Anthropic "system", Responses "instructions", and every messages[] /
 *   input[] entry with role "system" or "developer".
 *   drop_oldest removes the oldest N of the other entries, but never the last one. Then the
 *   tool pairing is repaired so the request stays valid:
 *     - Anthropic: leading assistant messages are dropped too (a conversation starts with a
 *       user turn); a tool_result block whose tool_use is gone becomes a text block
 *       "[result of an earlier tool call] TEXT" (so the content survives, unpaired).
 *     - chat: a role "tool" message whose assistant tool_call is gone becomes a role "user"
 *       message with that text.
 *     - Responses: an item of type "*_call_output" whose "*_call" item (same call_id) is gone
 *       becomes a user message item with that text.
 *   Dropped and converted entries are counted in struct faults_trim.
 */
#ifndef FAULTLINE_CONTROL_FAULTS_H
#define FAULTLINE_CONTROL_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "codec/wire.h"
#include "util/buf.h"
#include "util/err.h"

struct faults_trim {
    size_t dropped;     /* entries removed by drop_oldest (and the repair) */
    size_t converted;   /* orphaned tool results turned into user text */
    int dropped_system; /* 1 when a system prompt / instructions / system entry was removed */
};

/* llm.context_trim on req (borrowed, modified in place). out may be NULL. 0, or ERR_INVALID
 * with e set (api not MESSAGES/CHAT/RESPONSES, req not an object, messages not an array);
 * req is unchanged on error. Trimming a request with nothing to trim is 0 with zero counts. */
int faults_context_trim(enum wire_api api, json_t *req, size_t drop_oldest, int drop_system,
                        struct faults_trim *out, struct err *e);

/* llm.model_degrade: sets req's "model" to to_model. The previous model (or "") is copied
 * into from (NUL-terminated, cut to from_size; from may be NULL). 0, or ERR_INVALID with e set
 * (req not an object, to_model NULL or empty). */
int faults_model_degrade(json_t *req, const char *to_model, char *from, size_t from_size,
                         struct err *e);

/* An injected error response. */
struct faults_error {
    int status;        /* HTTP status */
    int retry_after_s; /* value of the retry-after header to send; -1: send none */
    struct buf body;   /* the JSON body (content-type: application/json) */
};

/* Initialises caller-owned storage; faults_error_release frees it. */
void faults_error_init(struct faults_error *fe);
void faults_error_release(struct faults_error *fe);

/* llm.rate_limit: 429, retry-after retry_after_s (clamped to 0..86400), the provider's rate
 * limit error body for api with the canary in the message. canary may be NULL (omitted).
 * 0, or ERR_INVALID (api UNKNOWN). out is reset first. */
int faults_rate_limit(enum wire_api api, const char *canary, int retry_after_s,
                      struct faults_error *out);
/* llm.upstream_5xx: status (500, 502, 503, 529; any 500..599 is accepted, others give
 * ERR_INVALID) with the provider's error body for that status, canary in the message. */
int faults_upstream_5xx(enum wire_api api, int status, const char *canary,
                        struct faults_error *out);
/* llm.upstream_5xx with stream_cut_after_chunks: the SSE bytes to send after the allowed
 * chunks, before closing: the provider's mid-stream error event (wire_stream_error) for status,
 * with the canary. sequence_number: the last one forwarded + 1 (Responses only). Appended to
 * out. 0, ERR_INVALID or ERR_LIMIT. */
int faults_stream_cut(struct buf *out, enum wire_api api, int status, const char *canary,
                      int64_t sequence_number);
/* The message text the functions above use, appended to out:
 * "faultline injected KIND: DETAIL [CANARY]" ("" parts omitted). 0 or ERR_LIMIT. */
int faults_message(struct buf *out, const char *kind, const char *detail, const char *canary);

#endif
