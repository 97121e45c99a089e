/*
 * llm: one model turn for the reference agent, over the Anthropic Messages API, OpenAI Chat
 * Completions or the OpenAI Responses API.
 *
 * The conversation is kept in one neutral form (struct llm_conv) and rendered per API only
 * when a request is built, so the loop never cares which API it talks to:
 *
 *   neutral item                                  Anthropic / chat / Responses
 *   {"role":"user","text":T}                      user message / user message / user message
 *   {"role":"assistant","text":T,"calls":[C..]}   text + tool_use blocks / content + tool_calls
 *                                                 / assistant message + function_call items
 *   {"role":"tool","results":[R..]}               one user message of tool_result blocks
 *                                                 (is_error) / one "tool" message per result /
 *                                                 function_call_output items
 *   C = {"id","name","input":{..},"arguments":"raw JSON text as the model sent it"}
 *   R = {"id","name","content":T,"is_error":bool}
 *
 * OpenAI has no is_error flag: an error result's text is sent as "Error: " + text there.
 * Tools are offered in one neutral form too: [{"name","description","input_schema"}].
 *
 * Answers are read into struct llm_reply either from a whole body (llm_reply_from_body) or
 * from a server-sent-events stream as it arrives (struct llm_stream: text deltas are handed
 * to a callback at once, tool calls are assembled from their pieces: Anthropic
 * input_json_delta by block index, chat tool_calls[].function.arguments by index, Responses
 * function_call_arguments.delta by output index, with response.completed authoritative).
 * Usage and completeness come from src/codec/wire.h. Errors (an error status, an error event
 * mid-stream, a stream cut before its terminal event) set reply->error with the HTTP status,
 * the provider's error type and its whole message (which carries faultline's canary when a
 * fault was injected).
 */
#ifndef FAULTLINE_AGENT_LLM_H
#define FAULTLINE_AGENT_LLM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "codec/httpc.h"
#include "codec/wire.h"
#include "util/buf.h"
#include "util/err.h"

#define LLM_TEXT_MAX ((size_t)1 << 20)        /* assistant text kept per reply */
#define LLM_CALLS_MAX 128                     /* tool calls per reply */
#define LLM_ERROR_MAX 4096                    /* error message bytes kept */
#define LLM_RESPONSE_MAX ((uint64_t)32 << 20) /* default response body limit */

enum llm_api { LLM_API_ANTHROPIC = 0, LLM_API_CHAT, LLM_API_RESPONSES };

/* "anthropic", "openai" (chat), "responses". Static. */
const char *llm_api_name(enum llm_api api);
/* Accepts "anthropic", "openai", "chat", "openai-chat", "responses", "openai-responses".
 * 0 or ERR_INVALID. */
int llm_api_parse(const char *s, enum llm_api *out);
enum wire_api llm_wire_api(enum llm_api api);

/* A JSON string of s[0..n) with every invalid UTF-8 sequence replaced by U+FFFD (tool
 * output may be any bytes). New reference; never NULL. */
json_t *llm_text_json(const char *s, size_t n);

/* ---- conversation ---- */

struct llm_conv {
    json_t *items; /* array of neutral items (owned) */
};

struct llm_reply;

void llm_conv_init(struct llm_conv *c);
void llm_conv_release(struct llm_conv *c);
void llm_conv_add_user(struct llm_conv *c, const char *text);
/* Records the assistant's text and tool calls of r (copied). */
void llm_conv_add_assistant(struct llm_conv *c, const struct llm_reply *r);
/* Appends one tool result; consecutive results share one "tool" item. Strings are copied. */
void llm_conv_add_result(struct llm_conv *c, const char *call_id, const char *name,
                         const char *content, int is_error);

/* ---- requests ---- */

struct llm_params {
    enum llm_api api;
    const char *model;
    const char *system; /* NULL or "": none */
    int max_tokens;     /* > 0 */
    int stream;
    const json_t *tools; /* neutral tool array (borrowed), may be NULL or empty */
};

/* The request body for p and c. New reference. Never fails (strings are copied). */
json_t *llm_build_request(const struct llm_params *p, const struct llm_conv *c);

/* ---- replies ---- */

struct llm_call {
    char *id;          /* never NULL ("call_N" made up when the model gave none) */
    char *name;        /* never NULL ("" when the model gave none) */
    char *args;        /* the arguments' JSON text as received ("{}" when none) */
    json_t *input;     /* the parsed arguments (an object, owned), or NULL when invalid */
    char *input_error; /* why input is NULL, else NULL */
};

struct llm_reply {
    struct buf text; /* assistant text, at most LLM_TEXT_MAX bytes */
    int text_truncated;
    struct llm_call *calls;
    size_t ncalls;
    size_t calls_dropped; /* tool calls past LLM_CALLS_MAX, not kept */
    char stop_reason[32]; /* stop_reason / finish_reason / Responses status */
    struct wire_usage usage;
    char model[WIRE_MODEL_MAX];
    int streamed; /* the answer came as an event stream (text went to on_text) */
    /* outcome */
    int status;               /* HTTP status, 0 when no response was read */
    int error;                /* an API error: error status, error event, cut stream */
    char error_type[64];      /* provider's error.type (or code), "" when none */
    struct buf error_message; /* the provider's message, whole (up to LLM_ERROR_MAX) */
    int64_t retry_after_ms;   /* from retry-after-ms / retry-after, LLM_NO_RETRY_AFTER if none */
    int should_retry;         /* x-should-retry: 1 true, 0 false, LLM_SHOULD_RETRY_ABSENT */
};

/* retry_after_ms when the server gave no (readable) retry-after, and should_retry when it sent
 * no x-should-retry: values below every real one, not error codes. */
#define LLM_NO_RETRY_AFTER ((int64_t)-1)
#define LLM_SHOULD_RETRY_ABSENT (-1)

void llm_reply_init(struct llm_reply *r);
void llm_reply_release(struct llm_reply *r);
/* Empties r for reuse. */
void llm_reply_reset(struct llm_reply *r);

/* Reads a whole response body with HTTP status into r (reset first). An error status, an
 * error body, or a 2xx body that is not the API's JSON sets r->error; nothing else fails. */
void llm_reply_from_body(enum llm_api api, int status, const char *body, size_t len,
                         struct llm_reply *r);

/* Receives assistant text as it streams in. */
typedef void (*llm_text_fn)(const char *text, size_t n, void *arg);

struct llm_stream;

/* A stream reader filling r (reset here; borrowed until llm_stream_free). on_text may be
 * NULL. Caller frees with llm_stream_free. */
struct llm_stream *llm_stream_new(enum llm_api api, struct llm_reply *r, llm_text_fn on_text,
                                  void *arg);
void llm_stream_free(struct llm_stream *s);
/* Feeds stream bytes. 0, or ERR_PARSE / ERR_LIMIT with e set when the SSE framing is broken
 * (over-long line, invalid UTF-8). Malformed event data is skipped (and counted). */
int llm_stream_feed(struct llm_stream *s, const char *data, size_t n, struct err *e);
/* The stream ended: finishes the tool calls, and sets r->error ("stream ended before ...")
 * when no terminal event and no error was seen. */
void llm_stream_finish(struct llm_stream *s);

/* ---- one exchange over HTTP ---- */

struct llm_endpoint {
    enum llm_api api;
    struct url url;                 /* base URL */
    char target[URL_PATH_MAX + 32]; /* url.path + "/v1/messages", "/chat/completions", ... */
    const char *api_key;            /* borrowed; NULL or "": none sent */
    int bearer; /* Anthropic: send Authorization: Bearer (ANTHROPIC_AUTH_TOKEN) */
    int connect_timeout_ms, idle_timeout_ms, total_timeout_ms;
    uint64_t max_response; /* 0: LLM_RESPONSE_MAX */
    volatile sig_atomic_t *stop;
    struct ssl_ctx_st *tls; /* https: a TLS context for every call (borrowed, the caller's,
                             * from tls_client_ctx_new); NULL: one per call */
};

/* The default base URL of an API ("https://api.anthropic.com", "https://api.openai.com/v1"). */
const char *llm_default_base(enum llm_api api);
/* Sets ep up for api at base_url (NULL: the default). Anthropic appends "/v1/messages" (the
 * base has no /v1, as for ANTHROPIC_BASE_URL), OpenAI "/chat/completions" or "/responses"
 * (the base includes /v1, as for OPENAI_BASE_URL). Timeouts get defaults (10 s, 300 s,
 * 900 s). 0 or ERR_INVALID (bad URL). */
int llm_endpoint_init(struct llm_endpoint *ep, enum llm_api api, const char *base_url,
                      struct err *e);

/* Sends req (borrowed) and reads the answer into r (reset first), streaming text to on_text
 * when the answer is an event stream. Returns 0 when a response was read, whatever it says
 * (look at r->error), or a negative code with e set when none could be (connect refused,
 * timeout, malformed HTTP, response too large: see httpc_call_run). Never retries and never
 * logs the API key. */
int llm_exchange(const struct llm_endpoint *ep, const json_t *req, llm_text_fn on_text, void *arg,
                 struct llm_reply *r, struct err *e);

/* ---- retries ---- */

/* Whether a failed exchange is worth retrying: transport errors other than a bad URL or an
 * interruption (transport_rc < 0), and API errors with status 408, 409, 429 or >= 500, unless
 * x-should-retry says otherwise or the error is a spend or quota limit. Errors inside a 200
 * stream are not retried. */
int llm_retryable(const struct llm_reply *r, int transport_rc);
/* How long to wait before retry number attempt (1-based): retry-after when the server gave
 * one, else 500 ms * 2^(attempt-1) up to 8 s; never above max_ms. */
int64_t llm_retry_delay_ms(const struct llm_reply *r, int attempt, int64_t max_ms);
/* Parses a retry-after value (seconds, possibly fractional, or an HTTP-date relative to
 * now_s) into milliseconds; LLM_NO_RETRY_AFTER when v is NULL or unparseable. */
int64_t llm_parse_retry_after(const char *v, int64_t now_s);

#endif
