/* Unit tests for src/codec/sse: incremental parsing, line endings, limits, errors, writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/sse.h"
#include "util/banned.h"

/* The Anthropic tool-call stream of protocols.md section 2. */
static const char anthropic_stream[] =
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\","
    "\"role\":\"assistant\",\"model\":\"claude-haiku-4-5-20251001\",\"content\":[],"
    "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":849,"
    "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":10}}}\n"
    "\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
    "\"tool_use\",\"id\":\"toolu_01\",\"name\":\"json\",\"input\":{}}}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
    "\"input_json_delta\",\"partial_json\":\"{\\\"elements\\\": [1]\"}}\n"
    "\n"
    "event: ping\n"
    "data: {\"type\":\"ping\"}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
    "\"input_json_delta\",\"partial_json\":\"}\"}}\n"
    "\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n"
    "\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\","
    "\"stop_sequence\":null},\"usage\":{\"output_tokens\":47}}\n"
    "\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n"
    "\n";

static const char *const anthropic_names[] = {
    "message_start",       "content_block_start", "content_block_delta", "ping",
    "content_block_delta", "content_block_stop",  "message_delta",       "message_stop"};

/* Feeds s in pieces of step bytes, collecting event names; checks raw bytes add up. */
static size_t parse_in_steps(const char *s, size_t len, size_t step, char names[][32],
                             size_t max)
{
    struct sse_parser *p = sse_parser_new(0, 0);
    struct sse_event ev;
    struct err e = {0};
    size_t n = 0, raw_total = 0;

    for (size_t off = 0; off < len; off += step) {
        size_t k = len - off < step ? len - off : step;
        assert_int_equal(sse_parser_feed(p, s + off, k), 0);
        int rc;
        while ((rc = sse_parser_next(p, &ev, &e)) == 1) {
            assert_true(n < max);
            assert_true(ev.event_len < 32);
            memcpy(names[n], ev.event, ev.event_len + 1);
            raw_total += ev.raw_len;
            n++;
        }
        assert_int_equal(rc, 0);
    }
    assert_int_equal(sse_parser_pending(p), 0);
    assert_int_equal(raw_total, len);
    assert_int_equal(sse_parser_offset(p), len);
    sse_parser_free(p);
    return n;
}

static void test_anthropic_stream_any_split(void **state)
{
    char names[16][32];
    size_t steps[] = {1, 2, 3, 7, 64, 100000};
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        size_t n = parse_in_steps(anthropic_stream, strlen(anthropic_stream), steps[s], names, 16);
        assert_int_equal(n, 8);
        for (size_t i = 0; i < 8; i++)
            assert_string_equal(names[i], anthropic_names[i]);
    }
}

static void test_fields_and_line_endings(void **state)
{
    const char in[] = "\xEF\xBB\xBF: comment\r\n"
                      "event:  two spaces\r\n"
                      "data: line1\r"
                      "data:line2\n"
                      "id: 42\n"
                      "retry: 1500\n"
                      "unknown: ignored\n"
                      "data\n"
                      "\r\n"
                      "\n\n"
                      ": only a comment\n"
                      "\n"
                      "data: [DONE]\n\n";
    struct sse_parser *p = sse_parser_new(0, 0);
    struct sse_event ev;
    struct err e = {0};

    assert_int_equal(sse_parser_feed(p, in, sizeof(in) - 1), 0);
    assert_int_equal(sse_parser_next(p, &ev, &e), 1);
    assert_string_equal(ev.event, " two spaces");
    assert_string_equal(ev.data, "line1\nline2\n");
    assert_int_equal(ev.data_len, 12);
    assert_true(ev.has_data);
    assert_string_equal(ev.id, "42");
    assert_int_equal(ev.retry_ms, 1500);
    assert_int_equal(sse_parser_next(p, &ev, &e), 1);
    assert_false(ev.has_data); /* comment-only block: handed out, without data */
    assert_string_equal(ev.event, "");
    assert_memory_equal(ev.raw, "\n\n: only a comment\n\n", ev.raw_len);
    assert_int_equal(sse_parser_next(p, &ev, &e), 1);
    assert_string_equal(ev.data, "[DONE]");
    assert_string_equal(ev.event, "");
    assert_int_equal(ev.retry_ms, -1);
    assert_int_equal(sse_parser_next(p, &ev, &e), 0);
    assert_int_equal(sse_parser_pending(p), 0);
    sse_parser_free(p);
}

static void test_cr_at_end_of_feed(void **state)
{
    struct sse_parser *p = sse_parser_new(0, 0);
    struct sse_event ev;
    struct err e = {0};

    assert_int_equal(sse_parser_feed(p, "data: a\r", 8), 0);
    assert_int_equal(sse_parser_next(p, &ev, &e), 0);
    assert_int_equal(sse_parser_feed(p, "\n\r", 2), 0);
    assert_int_equal(sse_parser_next(p, &ev, &e), 0); /* "\r" may start "\r\n" */
    assert_int_equal(sse_parser_feed(p, "\n", 1), 0);
    assert_int_equal(sse_parser_next(p, &ev, &e), 1);
    assert_string_equal(ev.data, "a");
    assert_int_equal(ev.raw_len, 11);
    sse_parser_free(p);
}

static void test_cut_stream_is_pending(void **state)
{
    struct sse_parser *p = sse_parser_new(0, 0);
    struct sse_event ev;
    struct err e = {0};

    assert_int_equal(sse_parser_feed(p, "data: 1\n\ndata: 2\n", 17), 0);
    assert_int_equal(sse_parser_next(p, &ev, &e), 1);
    assert_int_equal(sse_parser_next(p, &ev, &e), 0);
    assert_int_equal(sse_parser_pending(p), 8);
    sse_parser_reset(p);
    assert_int_equal(sse_parser_pending(p), 0);
    sse_parser_free(p);
}

static void test_line_limit_sticky(void **state)
{
    struct sse_parser *p = sse_parser_new(16, 64);
    struct sse_event ev;
    struct err e = {0};

    assert_int_equal(sse_parser_feed(p, "data: 0123456789", 16), 0);
    assert_int_equal(sse_parser_next(p, &ev, &e), 0); /* exactly at the limit: fine */
    assert_int_equal(sse_parser_feed(p, "A", 1), 0);
    assert_int_equal(sse_parser_next(p, &ev, &e), ERR_LIMIT);
    assert_non_null(strstr(e.msg, "line longer"));
    assert_int_equal(sse_parser_next(p, &ev, NULL), ERR_LIMIT); /* sticky */
    assert_int_equal(sse_parser_feed(p, "\n\n", 2), ERR_LIMIT);
    sse_parser_reset(p);
    assert_int_equal(sse_parser_feed(p, "data: ok\n\n", 10), 0);
    assert_int_equal(sse_parser_next(p, &ev, NULL), 1);
    sse_parser_free(p);
}

static void test_event_limit(void **state)
{
    struct sse_parser *p = sse_parser_new(16, 40);
    struct sse_event ev;
    struct err e = {0};

    for (int i = 0; i < 5; i++)
        assert_int_equal(sse_parser_feed(p, "data: 12345678\n", 15), 0);
    assert_int_equal(sse_parser_next(p, &ev, &e), ERR_LIMIT);
    assert_non_null(strstr(e.msg, "event larger"));
    sse_parser_free(p);
}

static void test_garbage_is_an_error(void **state)
{
    static const char *const bad[] = {"data: a\0b\n\n", "data: \xff\xfe\n\n",
                                      "data: \xc0\xaf\n\n", "event: \xed\xa0\x80\n\n"};
    static const size_t lens[] = {11, 10, 10, 12};
    for (size_t i = 0; i < 4; i++) {
        struct sse_parser *p = sse_parser_new(0, 0);
        struct sse_event ev;
        struct err e = {0};
        assert_int_equal(sse_parser_feed(p, bad[i], lens[i]), 0);
        assert_int_equal(sse_parser_next(p, &ev, &e), ERR_PARSE);
        assert_non_null(strstr(e.msg, "at byte"));
        sse_parser_free(p);
    }
    /* valid multi-byte UTF-8 passes */
    struct sse_parser *p = sse_parser_new(0, 0);
    struct sse_event ev;
    assert_int_equal(sse_parser_feed(p, "data: h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n\n", 20),
                     0);
    assert_int_equal(sse_parser_next(p, &ev, NULL), 1);
    assert_int_equal(ev.data_len, 12);
    sse_parser_free(p);
}

static void test_writer_round_trip(void **state)
{
    static const char *const datas[] = {"", "one", "a\nb", "a\r\nb\rc", "trail\n", "\n\n"};
    static const char *const expect[] = {"", "one", "a\nb", "a\nb\nc", "trail\n", "\n\n"};
    struct buf out = BUF_INIT;
    struct sse_parser *p = sse_parser_new(0, 0);
    struct sse_event ev;

    for (size_t i = 0; i < 6; i++)
        assert_int_equal(sse_write(&out, i % 2 ? "x" : NULL, datas[i], strlen(datas[i])), 0);
    assert_int_equal(sse_write_comment(&out, "keep-alive"), 0);
    json_t *j = json_pack("{s:s,s:i}", "type", "ping", "n", 1);
    assert_int_equal(sse_write_json(&out, "ping", j), 0);
    json_decref(j);
    assert_int_equal(sse_write(&out, "bad\nname", "x", 1), ERR_INVALID);
    assert_int_equal(sse_write_comment(&out, "bad\rcomment"), ERR_INVALID);

    assert_int_equal(sse_parser_feed(p, out.data, out.len), 0);
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(sse_parser_next(p, &ev, NULL), 1);
        assert_string_equal(ev.data, expect[i]);
        assert_string_equal(ev.event, i % 2 ? "x" : "");
    }
    assert_int_equal(sse_parser_next(p, &ev, NULL), 1);
    assert_false(ev.has_data);
    assert_int_equal(sse_parser_next(p, &ev, NULL), 1);
    assert_string_equal(ev.event, "ping");
    assert_string_equal(ev.data, "{\"type\":\"ping\",\"n\":1}");
    assert_int_equal(sse_parser_next(p, &ev, NULL), 0);
    assert_memory_equal(out.data, "data: \n\nevent: x\ndata: one\n\n", 28);
    sse_parser_free(p);
    buf_release(&out);
}

static void test_writer_limit_leaves_buffer(void **state)
{
    struct buf out;
    buf_init(&out, 20);
    assert_int_equal(sse_write(&out, "e", "0123456789", 10), ERR_LIMIT);
    assert_int_equal(out.len, 0);
    buf_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anthropic_stream_any_split),
        cmocka_unit_test(test_fields_and_line_endings),
        cmocka_unit_test(test_cr_at_end_of_feed),
        cmocka_unit_test(test_cut_stream_is_pending),
        cmocka_unit_test(test_line_limit_sticky),
        cmocka_unit_test(test_event_limit),
        cmocka_unit_test(test_garbage_is_an_error),
        cmocka_unit_test(test_writer_round_trip),
        cmocka_unit_test(test_writer_limit_leaves_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
