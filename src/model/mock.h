/*
 * mock: the deterministic mock model server (`faultline mock-model`).
 *
 * It speaks the Anthropic Messages API (and count_tokens), OpenAI Chat Completions and the
 * Responses API, streaming and not, answering from a script (mockscript.h). mock_handle is
 * the whole behaviour as a pure function of (script, method, path, body): routing, request
 * checks, the reply, deterministic usage and the exact wire rendering; mock_serve is a thin
 * libevent evhttp adapter around it. Routes:
 *
 *   HEAD|GET /                         200 {"ok":true,...} (Claude Code probes it)
 *   GET /v1/models                     200 a model list naming the script's model
 *   POST /v1/messages[?beta=true]      Anthropic Messages, stream or not
 *   POST /v1/messages/count_tokens     {"input_tokens": N}
 *   POST /v1/chat/completions          OpenAI chat, stream or not (include_usage honoured)
 *   POST /v1/responses                 OpenAI Responses, stream or not
 *   (also without the /v1 prefix)      other methods on these paths: 405; other paths: 404
 *
 * Errors are JSON in the provider's format: 400 invalid JSON or a malformed request, 404, 405,
 * 413 (body over the limit; evhttp answers that one itself), or a script's error reply.
 *
 * Usage, deterministic (docs/mock-model.md): prompt tokens = ceil(request body bytes / 4);
 * output tokens = ceil((reply text bytes + for each tool call its name and compact JSON input
 * bytes) / 4); both at least 1; no cache tokens unless the rule's usage: says so. Anthropic
 * reports the prompt as input_tokens (uncached); OpenAI as prompt_tokens / input_tokens
 * including the cached ones. Ids derive from a hash of the request body; "created" is fixed
 * (MOCK_CREATED), so the same request gives byte-identical answers.
 */
#ifndef FAULTLINE_MODEL_MOCK_H
#define FAULTLINE_MODEL_MOCK_H

#include <stddef.h>
#include <stdint.h>

#include "model/mockscript.h"
#include "codec/wire.h"
#include "util/buf.h"
#include "util/err.h"

#define MOCK_CREATED 1767225600 /* 2026-01-01T00:00:00Z, every "created" field */
#define MOCK_DEFAULT_MODEL "mock-model"

/* One answer. */
struct mock_answer {
    int status;
    const char *content_type; /* static string */
    struct buf body;          /* JSON, or the whole SSE text when is_sse */
    int is_sse;               /* body is a sequence of SSE events ("...\n\n") */
    enum wire_api api;
    char model[WIRE_MODEL_MAX]; /* the model the answer names ("" when none) */
    int rule;                   /* matching rule index, -1 fallback, -2 no script reply */
    char rule_name[64];
    size_t turn;
    struct wire_usage usage; /* what the answer reports */
    size_t tool_calls;
    int stream;
    json_t *offered; /* the tool names the rules saw offered, tools loaded by a Responses
                        tool_search_output included (owned); NULL when no script ran */
};

void mock_answer_init(struct mock_answer *a);
void mock_answer_release(struct mock_answer *a);

/* Answers one request. method is "GET", "POST", ...; path may carry a query; body may be NULL
 * when len is 0. hint picks the error format for paths that name no API (from the request's
 * headers: x-api-key/anthropic-version -> Anthropic, else OpenAI). Fills a (reset first) and
 * returns 0; it never fails on input: a bad request is a 4xx answer. Pure: no I/O. */
int mock_handle(const struct mockscript *s, const char *method, const char *path, const char *body,
                size_t len, enum wire_provider hint, struct mock_answer *a);

struct mock_server_opts {
    const char *listen;     /* "127.0.0.1:PORT", "localhost:PORT" or "[::1]:PORT"; PORT 0 picks a
                               free one. Other hosts are refused: the mock binds loopback only. */
    int listen_fd;          /* >= 0: serve on this listening socket instead of listen */
    const char *ready_file; /* written ("HOST:PORT\n", atomically) once serving; NULL none */
    const char *record;     /* append one JSON line per request (no headers, no bodies) */
    size_t max_body;        /* request body limit; 0: WIRE_BODY_MAX */
    void (*on_ready)(const char *addr, void *arg); /* called once serving, may be NULL */
    void *arg;
};

/* Serves until SIGTERM or SIGINT, then returns 0. ERR_INVALID (bad listen address, non-loopback
 * host), ERR_SYS (cannot bind or use the socket), ERR_IO (ready or record file) with e set.
 * The script is borrowed for the whole call. Not callable from a libevent callback. */
int mock_serve(const struct mockscript *s, const struct mock_server_opts *o, struct err *e);

#endif
