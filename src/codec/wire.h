/*
 * wire: the Anthropic Messages and OpenAI Chat Completions / Responses wire formats, as far as
 * faultline needs them: which API a path is, what a request asks for (model, stream), what a
 * response cost (usage, from a body or incrementally from stream events), and how each
 * provider spells an error (as a JSON body, and as a mid-stream SSE event).
 *
 * Usage is normalised into struct wire_usage so that pricing is one formula for every API:
 *
 *   field                  Anthropic                         OpenAI chat / Responses
 *   input_tokens           usage.input_tokens (uncached)     prompt_tokens|input_tokens - cached
 *   cache_write_tokens     cache_creation_input_tokens       0
 *   cache_write_1h_tokens  cache_creation.ephemeral_1h_...   0
 *   cache_read_tokens      cache_read_input_tokens           *_tokens_details.cached_tokens
 *   output_tokens          output_tokens                     completion_tokens|output_tokens
 *   reasoning_tokens       output_tokens_details.thinking_.. completion|output_tokens_details.
 *                          (already inside output_tokens)    reasoning_tokens (inside output)
 *
 * Stream accounting (wire_result_stream_event): Anthropic message_start carries the input and
 * cache counts, each message_delta the cumulative output_tokens (and, in newer streams, the
 * input and cache counts again): the last value seen wins, never a sum. OpenAI chat with
 * stream_options.include_usage puts the totals in one final chunk with "choices": []; the
 * stream ends with "data: [DONE]". Responses put them in response.completed (also
 * response.incomplete / response.failed) under response.usage.
 */
#ifndef FAULTLINE_CODEC_WIRE_H
#define FAULTLINE_CODEC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "codec/sse.h"
#include "util/buf.h"
#include "util/err.h"

enum wire_api {
    WIRE_API_UNKNOWN = 0,
    WIRE_API_ANTHROPIC_MESSAGES,     /* POST /v1/messages */
    WIRE_API_ANTHROPIC_COUNT_TOKENS, /* POST /v1/messages/count_tokens */
    WIRE_API_OPENAI_CHAT,            /* POST /v1/chat/completions */
    WIRE_API_OPENAI_RESPONSES        /* POST /v1/responses */
};

enum wire_provider { WIRE_PROVIDER_NONE = 0, WIRE_PROVIDER_ANTHROPIC, WIRE_PROVIDER_OPENAI };

/* Request bodies larger than this are refused (413) by the mock; callers may use it too. */
#define WIRE_BODY_MAX ((size_t)32 << 20)
#define WIRE_MODEL_MAX 128 /* model names, with the NUL; longer ones are cut */
#define WIRE_TEXT_MAX ((size_t)64 << 10)

/* The API a request path names. The query string is ignored ("/v1/messages?beta=true"), as is
 * one trailing '/'. Accepted: "/v1/messages", "/v1/messages/count_tokens",
 * "/v1/chat/completions", "/v1/responses", and the same without the "/v1" prefix (an OpenAI
 * base URL given without /v1). Anything else, or NULL, is WIRE_API_UNKNOWN. */
enum wire_api wire_api_from_path(const char *path);
/* The provider of an API (NONE for UNKNOWN). */
enum wire_provider wire_api_provider(enum wire_api api);
/* Stable names: "anthropic.messages", "anthropic.count_tokens", "openai.chat",
 * "openai.responses", "unknown". Static strings. */
const char *wire_api_name(enum wire_api api);
/* "anthropic", "openai", "none". Static strings. */
const char *wire_provider_name(enum wire_provider p);

/* Parses a request or response body that must be a JSON object. Returns a new reference
 * (caller decrefs), or NULL with e set: ERR_LIMIT (len > WIRE_BODY_MAX), ERR_PARSE ("invalid
 * JSON at line L column C: ..."), ERR_INVALID (valid JSON, not an object). */
json_t *wire_json_parse(const char *body, size_t len, struct err *e);

/* What a request asks for. */
struct wire_request_info {
    const char *model; /* borrowed from the request; "" when absent */
    int stream;        /* "stream": true */
    int include_usage; /* chat: stream_options.include_usage is true */
    size_t n_messages; /* messages[], or Responses input[] items (1 for a string input) */
    size_t n_tools;    /* tools[] */
};

/* Fills info from req (borrowed; info->model points into it). 0, or ERR_INVALID with e set
 * when req is not an object or a known field has the wrong type (model not a string, stream
 * not a boolean, messages/input/tools of the wrong kind). Unknown fields are ignored. */
int wire_request_info(enum wire_api api, const json_t *req, struct wire_request_info *info,
                      struct err *e);

/* Token usage of one model call, normalised (table in the file comment). */
struct wire_usage {
    int64_t input_tokens;          /* uncached input */
    int64_t cache_write_tokens;    /* all cache writes (5-minute and 1-hour) */
    int64_t cache_write_1h_tokens; /* the part of cache_write_tokens written for 1 hour */
    int64_t cache_read_tokens;
    int64_t output_tokens;    /* includes reasoning/thinking tokens */
    int64_t reasoning_tokens; /* informational, already counted in output_tokens */
    int present;              /* 1 once any usage was read */
};

/* Reads a provider's usage object (borrowed; the "usage" member's value, not the whole body)
 * into u, overwriting the fields the object has (so the last of several cumulative reports
 * wins). Returns 1 when it held at least one count, 0 when usage is NULL, not an object or
 * has none. Negative or non-integer counts are ignored. */
int wire_usage_read(enum wire_api api, const json_t *usage, struct wire_usage *u);
/* {"input_tokens":..,"cache_write_tokens":..,"cache_read_tokens":..,"output_tokens":..}
 * (cache_write_1h_tokens and reasoning_tokens added when non-zero). New reference. */
json_t *wire_usage_to_json(const struct wire_usage *u);

/* What one model call answered, from a whole body or accumulated from stream events. */
struct wire_result {
    struct wire_usage usage;
    char model[WIRE_MODEL_MAX]; /* as the response names it, "" when not seen */
    char id[WIRE_MODEL_MAX];    /* message / completion / response id, "" when not seen */
    char stop_reason[32];       /* stop_reason / finish_reason / Responses status */
    struct buf text;            /* assistant text, at most WIRE_TEXT_MAX bytes */
    int text_truncated;         /* 1 when text was cut at WIRE_TEXT_MAX */
    size_t tool_calls;          /* tool_use blocks / tool_calls / function_call items */
    int complete;               /* a whole body was read, or the stream's terminal event was seen:
                                   message_stop, [DONE], response.completed/incomplete/failed */
    int error;                  /* an error body or error event was seen */
    char error_type[64];
    char error_message[256];
    int64_t last_sequence; /* Responses: highest sequence_number seen; -1 when none */
    size_t events;         /* stream events fed (with data; comments not counted) */
};

/* Initialises caller-owned storage. */
void wire_result_init(struct wire_result *r);
/* Frees r's storage; r may be initialised again. */
void wire_result_release(struct wire_result *r);
/* Reads a whole non-streaming response body (or an error body) into r. 0, or ERR_PARSE /
 * ERR_INVALID / ERR_LIMIT with e set (r keeps what it had). */
int wire_result_from_body(enum wire_api api, const char *body, size_t len, struct wire_result *r,
                          struct err *e);
/* Same, from a parsed body (borrowed). 0 or ERR_INVALID (not an object). */
int wire_result_from_json(enum wire_api api, const json_t *body, struct wire_result *r,
                          struct err *e);
/* Feeds one stream event (borrowed) into r. Events without data are ignored. 0, or ERR_PARSE
 * with e set when the data is not JSON (nor "[DONE]"); r stays usable, and a caller that only
 * accounts may log and go on. Callable from any callback: no I/O, no allocation but r->text. */
int wire_result_stream_event(enum wire_api api, struct wire_result *r, const struct sse_event *ev,
                             struct err *e);

/* Error kinds, with the status each has by default. */
enum wire_error {
    WIRE_ERR_INVALID_REQUEST = 0, /* 400 invalid_request_error */
    WIRE_ERR_AUTHENTICATION,      /* 401 authentication_error / invalid_api_key */
    WIRE_ERR_PERMISSION,          /* 403 permission_error */
    WIRE_ERR_NOT_FOUND,           /* 404 not_found_error */
    WIRE_ERR_TOO_LARGE,           /* 413 request_too_large */
    WIRE_ERR_RATE_LIMIT,          /* 429 rate_limit_error / rate_limit_exceeded */
    WIRE_ERR_API,                 /* 500 api_error / server_error */
    WIRE_ERR_OVERLOADED           /* 529 overloaded_error (OpenAI: 503 server_error) */
};

/* The default HTTP status of a kind for a provider (529 vs 503 for OVERLOADED). */
int wire_error_status(enum wire_provider p, enum wire_error kind);
/* The kind for a status: 400, 401, 403, 404, 413, 429 map to their kind, 529 and 503 to
 * OVERLOADED, any other status >= 500 to API, any other 4xx to INVALID_REQUEST. */
enum wire_error wire_error_for_status(int status);
/* The provider's error.type string for a kind (Anthropic "rate_limit_error"; OpenAI
 * "requests" for a rate limit, "server_error", "invalid_request_error", ...). Static. */
const char *wire_error_type(enum wire_provider p, enum wire_error kind);
/* The error body. Anthropic: {"type":"error","error":{"type":T,"message":M}}; OpenAI:
 * {"error":{"message":M,"type":T,"param":null,"code":C}} (C a string such as
 * "rate_limit_exceeded", or null). message is copied. New reference; NULL only for
 * WIRE_PROVIDER_NONE (treat NONE as Anthropic if you must answer). */
json_t *wire_error_json(enum wire_provider p, enum wire_error kind, const char *message);
/* wire_error_json as compact JSON text appended to out. 0, ERR_LIMIT or ERR_INVALID (p NONE). */
int wire_error_body(struct buf *out, enum wire_provider p, enum wire_error kind,
                    const char *message);
/* The error as a mid-stream SSE event (after a 200 and some events), appended to out:
 *   Anthropic:  event: error / data: {"type":"error","error":{"type":T,"message":M}}
 *   chat:       data: {"error":{"message":M,"type":T,"param":null,"code":C}}
 *               (the openai SDK throws on a data payload with "error")
 *   Responses:  event: error / data: {"type":"error","code":C,"message":M,"param":null,
 *               "sequence_number":S}, then event: response.failed with the same error in
 *               response.error, S+1 (Codex acts on response.failed).
 * sequence_number is the one the event gets (last seen + 1; ignored by other APIs).
 * 0, ERR_LIMIT or ERR_INVALID (api UNKNOWN or COUNT_TOKENS). */
int wire_stream_error(struct buf *out, enum wire_api api, enum wire_error kind, const char *message,
                      int64_t sequence_number);

#endif
