/*
 * fuzz_mock: the mock model's request handling on untrusted bodies. The first byte picks the
 * route (Anthropic, count_tokens, chat, Responses, unknown); the rest is the request body,
 * answered by mock_handle with a script that exercises every condition kind and template.
 * Stream answers are read back through the SSE parser and the stream accounting.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/mock.h"
#include "codec/sse.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char script[] =
    "rules:\n"
    "  - when: {first_turn: true, tool_offered: [shell, Bash], last_user_text_matches: "
    "\"run `([^`]*)`\"}\n"
    "    reply: {text: \"{{match.1}} {{model}}\", tool_calls: [{name: shell, input: {c: "
    "\"{{match.0}}\", n: [1, \"{{turn}}\"]}}]}\n"
    "  - when: {last_tool_result_error: true, api: [anthropic, chat]}\n"
    "    reply: {text: \"{{last_tool_result}}|{{canary}}|{{last_tool_name}}\", "
    "repeat_last_tool_call: true}\n"
    "  - when: {any_tool_result_matches: \"(a+)+b\", min_turn: 1, max_turn: 50}\n"
    "    reply: {error: {status: 503, message: \"{{match.1}}\"}}\n"
    "  - when: {tool_offered: tool_search, has_tool_result: false}\n"
    "    reply: {tool_calls: [{name: tool_search, input: {query: \"{{turn}}\"}}, {name: ns__f, "
    "input: {}}], repeat_last_tool_call: true}\n"
    "  - when: {text_contains: x, tool_not_offered: y, has_tool_result: false}\n"
    "    reply: {usage: {output_tokens: 5, cache_read_tokens: 2}}\n"
    "fallback: {text: \"{{last_user_text}} {{tool_result_count}}\"}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const paths[] = {"/v1/messages?beta=true", "/v1/messages/count_tokens",
                                        "/v1/chat/completions", "/v1/responses", "/other"};
    static struct mockscript *s;
    struct mock_answer a;

    if (s == NULL)
        s = mockscript_parse(script, strlen(script), "fuzz", NULL);
    if (s == NULL || size == 0)
        return 0;
    const char *path = paths[data[0] % 5];
    mock_answer_init(&a);
    mock_handle(s, data[0] & 0x80 ? "GET" : "POST", path, (const char *)data + 1, size - 1,
                WIRE_PROVIDER_NONE, &a);
    if (a.is_sse) {
        struct sse_parser *p = sse_parser_new(0, 0);
        struct sse_event ev;
        struct wire_result r;
        wire_result_init(&r);
        sse_parser_feed(p, a.body.data, a.body.len);
        while (sse_parser_next(p, &ev, NULL) == 1)
            wire_result_stream_event(a.api, &r, &ev, NULL);
        wire_result_release(&r);
        sse_parser_free(p);
    }
    mock_answer_release(&a);
    return 0;
}
