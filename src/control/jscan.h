/*
 * jscan: a fast, validating, non-allocating scan of a model API request body (JSON) for the
 * few top-level facts the proxy needs on every call: model, stream, stream_options.
 * include_usage, and the number of messages and tools.
 *
 * Building a jansson tree of every request costs more than everything else the proxy does for
 * a call, and the tree is needed only when a fault rewrites the body. The scan walks the
 * text once, checks the JSON grammar as it goes (RFC 8259: strings with their escapes and
 * UTF-8, numbers, literals, nesting up to JSCAN_DEPTH_MAX) and records the top-level members
 * it knows; it never allocates. It answers only what it is sure of: a body it does not
 * accept (malformed, a field of an unexpected type, an escaped model name or stream_options
 * key, an exponent or more than 18 integer digits, nesting too deep, a body over
 * WIRE_BODY_MAX) gets JSCAN_FALLBACK, and the caller parses it with wire_json_parse +
 * wire_request_info, which give the authoritative answer and error message. For a body it
 * accepts, the answer equals wire_request_info's (the unit tests compare the two;
 * tests/fuzz/fuzz_control_jscan.c checks it against jansson on generated bodies).
 */
#ifndef FAULTLINE_CONTROL_JSCAN_H
#define FAULTLINE_CONTROL_JSCAN_H

#include <stddef.h>

#include "codec/wire.h"

#define JSCAN_DEPTH_MAX 256
#define JSCAN_FALLBACK (-1)

struct jscan_info {
    const char *model; /* points into the body, not NUL-terminated; NULL when absent */
    size_t model_len;
    int stream;        /* "stream": true */
    int include_usage; /* "stream_options": {"include_usage": true} */
    size_t n_messages; /* as wire_request_info: messages[] or input[] (1 for a string input) */
    size_t n_tools;    /* tools[] */
};

/* Scans body for api (ANTHROPIC_MESSAGES, OPENAI_CHAT or OPENAI_RESPONSES). 0 with *out
 * filled, or JSCAN_FALLBACK. Pure; callable from any callback. */
int jscan_request(enum wire_api api, const char *body, size_t len, struct jscan_info *out);

#endif
