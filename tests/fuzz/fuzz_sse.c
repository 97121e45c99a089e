/*
 * fuzz_sse: the SSE parser and the stream accounting behind it, on untrusted bytes.
 *
 * The first byte picks the feed size (1..256) so one input also exercises splits inside
 * "\r\n" and inside UTF-8 sequences; small limits make the limit paths reachable. Every event
 * is fed to wire_result_stream_event for each API, as the proxy does with an upstream stream.
 */
#include <stddef.h>
#include <stdint.h>

#include "codec/sse.h"
#include "codec/wire.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum wire_api apis[] = {WIRE_API_ANTHROPIC_MESSAGES, WIRE_API_OPENAI_CHAT,
                                         WIRE_API_OPENAI_RESPONSES};
    struct sse_parser *p;
    struct wire_result r[3];
    struct sse_event ev;
    size_t step;

    if (size == 0)
        return 0;
    step = (size_t)data[0] + 1;
    data++;
    size--;
    p = sse_parser_new(4096, 16384);
    for (int i = 0; i < 3; i++)
        wire_result_init(&r[i]);
    for (size_t off = 0; off < size; off += step) {
        size_t n = size - off < step ? size - off : step;
        if (sse_parser_feed(p, data + off, n) < 0)
            break;
        int rc;
        while ((rc = sse_parser_next(p, &ev, NULL)) == 1) {
            for (int i = 0; i < 3; i++)
                wire_result_stream_event(apis[i], &r[i], &ev, NULL);
        }
        if (rc < 0)
            break;
    }
    (void)sse_parser_pending(p);
    for (int i = 0; i < 3; i++)
        wire_result_release(&r[i]);
    sse_parser_free(p);
    return 0;
}
