/* Unit tests for src/control: HTTP heads and chunked bodies (http.h), the request scan
 * (jscan.h, against wire.h's reading of the same bodies), and the server and upstream client
 * talking to each other over real sockets on one loop (server.h, upstream.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "codec/http.h"
#include "control/ctl.h"
#include "control/jscan.h"
#include "control/server.h"
#include "control/upstream.h"
#include "codec/wire.h"
#include "experiment/catalog.h"
#include "util/timeutil.h"
#include "util/banned.h"

/* ---- heads ---- */

static int parse_req(struct http_head *h, const char *text, struct err *e)
{
    struct evbuffer *in = evbuffer_new();
    size_t scanned = 0;
    long n;
    int rc;

    evbuffer_add(in, text, strlen(text));
    n = http_head_find(in, HTTP_HEAD_MAX_DEFAULT, &scanned);
    if (n <= 0) {
        evbuffer_free(in);
        return n == 0 ? 1 : (int)n;
    }
    rc = http_head_parse_request(h, in, (size_t)n, e);
    evbuffer_free(in);
    return rc;
}

static void test_request_heads(void **state)
{
    struct http_head h;
    struct err e = {0};

    http_head_init(&h);
    assert_int_equal(parse_req(&h,
                               "POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\n"
                               "Content-Length: 12\r\nX-Api-Key:  sk-1  \r\n\r\n",
                               &e),
                     0);
    assert_string_equal(h.method, "POST");
    assert_string_equal(h.target, "/v1/messages?beta=true");
    assert_int_equal(h.minor, 1);
    assert_int_equal(h.framing, HTTP_BODY_LENGTH);
    assert_int_equal(h.content_length, 12);
    assert_true(h.keep_alive);
    assert_string_equal(http_head_get(&h, "x-api-key"), "sk-1");
    assert_null(http_head_get(&h, "missing"));

    assert_int_equal(parse_req(&h, "GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n", &e),
                     0);
    assert_false(h.keep_alive);
    assert_int_equal(h.framing, HTTP_BODY_NONE);
    assert_int_equal(parse_req(&h, "GET / HTTP/1.0\r\n\r\n", &e), 0);
    assert_false(h.keep_alive);
    assert_int_equal(parse_req(&h, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", &e), 0);
    assert_true(h.keep_alive);
    assert_int_equal(parse_req(&h,
                               "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                               "Expect: 100-continue\r\n\r\n",
                               &e),
                     0);
    assert_int_equal(h.framing, HTTP_BODY_CHUNKED);
    assert_true(h.expect_continue);
    assert_int_equal(
        parse_req(&h, "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", &e), 0);
    assert_int_equal(h.content_length, 5);
    http_head_release(&h);
}

static void test_request_heads_refused(void **state)
{
    static const char *bad[] = {
        "GARBAGE\r\n\r\n",
        "GET  / HTTP/1.1\r\n\r\n",
        "GET / HTTP/2.0\r\n\r\n",
        "GET / HTTP/1.1 extra\r\n\r\n",
        "G(T / HTTP/1.1\r\n\r\n",
        "GET /a\x01b HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nName : v\r\n\r\n",
        "GET / HTTP/1.1\r\n: v\r\n\r\n",
        "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
        "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n",
        "GET / HTTP/1.1\r\nA: b\x01\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
    };
    struct http_head h;

    http_head_init(&h);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct err e = {0};
        int rc = parse_req(&h, bad[i], &e);
        if (rc != ERR_PARSE)
            fail_msg("accepted (%d): %s", rc, bad[i]);
        assert_true(e.msg[0] != '\0');
    }
    {
        struct err e = {0};
        assert_int_equal(parse_req(&h, "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", &e),
                         ERR_UNSUPPORTED);
    }
    http_head_release(&h);
}

static void test_head_find(void **state)
{
    struct evbuffer *in = evbuffer_new();
    size_t scanned = 0;
    const char *head = "GET / HTTP/1.1\r\nHost: x\r\n\r\nrest";

    /* byte by byte: found exactly when the final CRLF arrives */
    for (size_t i = 0; i < strlen(head); i++) {
        long n;
        evbuffer_add(in, head + i, 1);
        n = http_head_find(in, 1024, &scanned);
        if (i + 1 < 27)
            assert_int_equal(n, 0);
        else
            assert_int_equal(n, 27);
    }
    evbuffer_drain(in, evbuffer_get_length(in));
    scanned = 0;
    for (int i = 0; i < 100; i++)
        evbuffer_add(in, "X-Long: aaaaaaaa\r\n", 18);
    assert_int_equal(http_head_find(in, 1024, &scanned), ERR_LIMIT);
    evbuffer_free(in);
}

static int parse_resp(struct http_head *h, const char *text, const char *method)
{
    struct evbuffer *in = evbuffer_new();
    size_t scanned = 0;
    struct err e = {0};
    long n;
    int rc;

    evbuffer_add(in, text, strlen(text));
    n = http_head_find(in, HTTP_HEAD_MAX_DEFAULT, &scanned);
    rc = n > 0 ? http_head_parse_response(h, in, (size_t)n, method, &e) : -100;
    evbuffer_free(in);
    return rc;
}

static void test_response_heads(void **state)
{
    struct http_head h;

    http_head_init(&h);
    assert_int_equal(parse_resp(&h, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", "POST"), 0);
    assert_int_equal(h.status, 200);
    assert_string_equal(h.reason, "OK");
    assert_int_equal(h.framing, HTTP_BODY_LENGTH);
    assert_int_equal(parse_resp(&h, "HTTP/1.1 529 \r\nTransfer-Encoding: chunked\r\n\r\n", "POST"),
                     0);
    assert_int_equal(h.status, 529);
    assert_int_equal(h.framing, HTTP_BODY_CHUNKED);
    assert_int_equal(parse_resp(&h, "HTTP/1.1 200 OK\r\n\r\n", "POST"), 0);
    assert_int_equal(h.framing, HTTP_BODY_CLOSE);
    assert_false(h.keep_alive);
    assert_int_equal(parse_resp(&h, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", "HEAD"), 0);
    assert_int_equal(h.framing, HTTP_BODY_NONE);
    assert_int_equal(parse_resp(&h, "HTTP/1.1 204 No Content\r\n\r\n", "POST"), 0);
    assert_int_equal(h.framing, HTTP_BODY_NONE);
    assert_int_equal(parse_resp(&h, "HTTP/1.1 100 Continue\r\n\r\n", "POST"), 0);
    assert_int_equal(h.status, 100);
    assert_true(h.keep_alive);
    assert_int_equal(parse_resp(&h, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "GET"),
                     0);
    assert_int_equal(h.framing, HTTP_BODY_CLOSE);
    assert_int_equal(parse_resp(&h, "HTTP/1.1 20x OK\r\n\r\n", "GET"), ERR_PARSE);
    assert_int_equal(parse_resp(&h, "HTTP/1.1 99 OK\r\n\r\n", "GET"), ERR_PARSE);
    assert_int_equal(parse_resp(&h, "ICY 200 OK\r\n\r\n", "GET"), ERR_PARSE);
    http_head_release(&h);
}

/* The connection after a response: a body-less answer (204, 304, HEAD) leaves it reusable as
 * its Connection field says (it is not read until the close); both framings never do. */
static void test_response_keep_alive(void **state)
{
    static const struct {
        const char *text, *method;
        int keep;
    } cases[] = {
        {"HTTP/1.1 204 No Content\r\n\r\n", "POST", 1},
        {"HTTP/1.1 304 Not Modified\r\n\r\n", "GET", 1},
        {"HTTP/1.1 200 OK\r\n\r\n", "HEAD", 1},
        {"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", "POST", 0},
        {"HTTP/1.0 204 No Content\r\n\r\n", "POST", 0},
        {"HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n", "POST", 1},
        {"HTTP/1.1 204 No Content\r\nTransfer-Encoding: gzip\r\n\r\n", "POST", 0},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", "POST", 1},
        {"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n", "POST",
         0},
    };
    struct http_head h;

    http_head_init(&h);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(parse_resp(&h, cases[i].text, cases[i].method), 0);
        if (h.keep_alive != cases[i].keep)
            fail_msg("case %zu: keep_alive %d", i, h.keep_alive);
    }
    http_head_release(&h);
}

static void test_lists_and_fields(void **state)
{
    assert_true(http_list_has("keep-alive, Upgrade", "upgrade"));
    assert_true(http_list_has(" close ", "close"));
    assert_false(http_list_has("closed", "close"));
    assert_false(http_list_has("", "close"));
    assert_true(http_is_hop_field("Transfer-Encoding"));
    assert_true(http_is_hop_field("connection"));
    assert_true(http_is_hop_field("Host"));
    assert_false(http_is_hop_field("x-api-key"));
    assert_false(http_is_hop_field("authorization"));
    assert_string_equal(http_reason(429), "Too Many Requests");
    assert_string_equal(http_reason(599), "Server Error");
}

/* ---- chunked ---- */

static const char chunked_body[] =
    "4\r\nWiki\r\n6 ;ext=\"a b\"\t\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n"
    "0\r\nTrailer: x\r\n\r\n";
static const char chunked_plain[] = "Wikipedia in \r\n\r\nchunks.";

static void test_chunked_any_split(void **state)
{
    size_t n = strlen(chunked_body);

    for (size_t cut = 0; cut <= n; cut++) {
        struct http_chunked c;
        struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
        struct err e = {0};
        int rc;

        http_chunked_init(&c);
        evbuffer_add(in, chunked_body, cut);
        rc = http_chunked_decode(&c, in, out, 0, &e);
        assert_int_equal(rc, cut == n ? 1 : 0);
        evbuffer_add(in, chunked_body + cut, n - cut);
        rc = http_chunked_decode(&c, in, out, 0, &e);
        assert_int_equal(rc, 1);
        assert_int_equal(evbuffer_get_length(out), strlen(chunked_plain));
        assert_memory_equal(evbuffer_pullup(out, -1), chunked_plain, strlen(chunked_plain));
        assert_int_equal(evbuffer_get_length(in), 0);
        evbuffer_free(in);
        evbuffer_free(out);
    }
}

static void test_chunked_max_out(void **state)
{
    struct http_chunked c;
    struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
    struct err e = {0};
    int rounds = 0, rc;

    http_chunked_init(&c);
    evbuffer_add(in, chunked_body, strlen(chunked_body));
    while ((rc = http_chunked_decode(&c, in, out, 5, &e)) == 0)
        rounds++;
    assert_int_equal(rc, 1);
    assert_true(rounds >= 4);
    assert_int_equal(evbuffer_get_length(out), strlen(chunked_plain));
    evbuffer_free(in);
    evbuffer_free(out);
}

/* A chunk-size line of exactly HTTP_CHUNK_LINE_MAX bytes is accepted however it is split,
 * also when its "\r" has arrived and its "\n" has not; one byte more is refused. */
static void test_chunked_line_limit_any_split(void **state)
{
    static char line[HTTP_CHUNK_LINE_MAX + 32];
    for (int over = 0; over <= 1; over++) {
        struct http_chunked c;
        struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
        struct err e = {0};
        size_t n;
        int rc = 0;

        memset(line, 'a', sizeof(line));
        memcpy(line, "1;", 2);
        n = HTTP_CHUNK_LINE_MAX + (size_t)over;
        memcpy(line + n, "\r\nx\r\n0\r\n\r\n", 10);
        n += 10;
        http_chunked_init(&c);
        for (size_t k = 0; k < n && rc == 0; k++) {
            evbuffer_add(in, line + k, 1);
            rc = http_chunked_decode(&c, in, out, 0, &e);
        }
        if (over) {
            assert_int_equal(rc, ERR_LIMIT);
        } else {
            assert_int_equal(rc, 1);
            assert_int_equal(evbuffer_get_length(out), 1);
        }
        evbuffer_free(in);
        evbuffer_free(out);
    }
}

static void test_chunked_refused(void **state)
{
    static const char *bad[] = {"zz\r\n",     "\r\n",       "4\r\nWikiXX", "10000000000000000\r\n",
                                "-1\r\n",     "5 junk\r\n", "5x\r\n",      "5;a\nb\r\n",
                                "5;a\0b\r\n", " 5\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct http_chunked c;
        struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
        struct err e = {0};
        http_chunked_init(&c);
        evbuffer_add(in, bad[i], i == 8 ? 7 : strlen(bad[i]));
        if (http_chunked_decode(&c, in, out, 0, &e) != ERR_PARSE)
            fail_msg("chunk line %zu accepted", i);
        evbuffer_free(in);
        evbuffer_free(out);
    }
    {
        struct http_chunked c;
        struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
        struct err e = {0};
        http_chunked_init(&c);
        for (int i = 0; i < 1000; i++)
            evbuffer_add(in, "1111111111", 10);
        assert_int_equal(http_chunked_decode(&c, in, out, 0, &e), ERR_LIMIT);
        evbuffer_free(in);
        evbuffer_free(out);
    }
    {
        /* max_body: the size line announcing too much is refused before its data moves;
         * the chunks before it are out */
        struct http_chunked c;
        struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
        struct err e = {0};
        const char *body = "8\r\n12345678\r\n3\r\nabc\r\n0\r\n\r\n";
        http_chunked_init(&c);
        c.max_body = 10;
        evbuffer_add(in, body, strlen(body));
        assert_int_equal(http_chunked_decode(&c, in, out, 0, &e), ERR_LIMIT);
        assert_non_null(strstr(e.msg, "over the limit of 10 bytes"));
        assert_int_equal(evbuffer_get_length(out), 8);
        evbuffer_drain(out, 8);
        http_chunked_init(&c);
        c.max_body = 11;
        evbuffer_drain(in, evbuffer_get_length(in));
        evbuffer_add(in, body, strlen(body));
        assert_int_equal(http_chunked_decode(&c, in, out, 0, &e), 1);
        assert_int_equal(evbuffer_get_length(out), 11);
        evbuffer_free(in);
        evbuffer_free(out);
    }
}

/* ---- the request scan agrees with wire.h ---- */

struct scan_case {
    enum wire_api api;
    const char *body;
};

static const struct scan_case scan_cases[] = {
    {WIRE_API_ANTHROPIC_MESSAGES,
     "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"},
    {WIRE_API_ANTHROPIC_MESSAGES,
     " {\"stream\":true, \"model\" : \"m\", \"tools\":[{},{},{\"a\":[1,2,{\"b\":null}]}], \"messages\":[] } \n"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{}"},
    {WIRE_API_ANTHROPIC_MESSAGES,
     "{\"model\":null,\"stream\":null,\"messages\":null,\"tools\":null}"},
    {WIRE_API_ANTHROPIC_MESSAGES,
     "{\"model\":\"a\",\"model\":\"b\",\"stream\":true,\"stream\":false}"},
    {WIRE_API_ANTHROPIC_MESSAGES,
     "{\"model\":\"h\\u00e9\\n\",\"x\":\"\\ud83d\\ude00 \\\"q\\\" \\\\ \\/\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES,
     "{\"model\":\"gr\xc3\xbc\xc3\x9f \xe2\x9c\x93 \xf0\x9f\x98\x80\",\"n\":[-0.5,0,12,3.25,-7]}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"model\":5}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"stream\":\"yes\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"messages\":{}}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"tools\":\"x\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"mod\\u0065l\":\"escaped-key\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"input\":\"not ours\",\"messages\":[1,2,3]}"},
    {WIRE_API_OPENAI_CHAT,
     "{\"model\":\"gpt-5.4\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"u\"}]}"},
    {WIRE_API_OPENAI_CHAT, "{\"stream_options\":{\"include_usage\":true,\"include_usage\":false}}"},
    {WIRE_API_OPENAI_CHAT, "{\"stream_options\":{\"x\":{\"include_usage\":true}}}"},
    {WIRE_API_OPENAI_CHAT, "{\"stream_options\":[{\"include_usage\":true}]}"},
    {WIRE_API_OPENAI_CHAT, "{\"stream_options\":{\"include_\\u0075sage\":true}}"},
    {WIRE_API_OPENAI_CHAT,
     "{\"stream_options\":{\"include_usage\":true,\"include_\\u0075sage\":false}}"},
    {WIRE_API_OPENAI_RESPONSES,
     "{\"model\":\"gpt-5.5\",\"input\":\"hello\",\"stream\":true,\"store\":false}"},
    {WIRE_API_OPENAI_RESPONSES,
     "{\"input\":[{\"role\":\"user\",\"content\":\"x\"},{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"o\"}],\"tools\":[{\"type\":\"function\",\"name\":\"f\"}]}"},
    {WIRE_API_OPENAI_RESPONSES, "{\"input\":5}"},
    {WIRE_API_OPENAI_RESPONSES, "{\"messages\":5}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"big\":123456789012345678}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"big\":1234567890123456789012}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"e\":1e400}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"e\":1.5E-3}"},
    /* malformed: both must refuse */
    {WIRE_API_ANTHROPIC_MESSAGES, ""},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"model\":"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"model\":\"m\"} x"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"model\":\"m\",}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{'model':'m'}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "[1,2]"},
    {WIRE_API_ANTHROPIC_MESSAGES, "\"str\""},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":01}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":1.}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":-}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":tru}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":\"tab\there\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":\"\\x\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":\"\\u00\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":\"\\u0000\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":\"\\ud800\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":\"\\udc00\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":\"\xc3\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":\"\xc0\xaf\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":\"\xed\xa0\x80\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":\"\xf4\x90\x80\x80\"}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":[1,2,]}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\" 1}"},
    {WIRE_API_ANTHROPIC_MESSAGES, "{\"a\":1 \"b\":2}"},
};

static void test_scan_agrees_with_wire(void **state)
{
    for (size_t i = 0; i < sizeof(scan_cases) / sizeof(scan_cases[0]); i++) {
        const struct scan_case *sc = &scan_cases[i];
        struct jscan_info ji;
        struct wire_request_info wi;
        struct err e = {0};
        json_t *j = wire_json_parse(sc->body, strlen(sc->body), &e);
        int wire_ok = j && wire_request_info(sc->api, j, &wi, &e) == 0;
        int rc = jscan_request(sc->api, sc->body, strlen(sc->body), &ji);

        if (rc == 0) {
            if (!wire_ok)
                fail_msg("case %zu: the scan accepts what wire refuses: %s", i, sc->body);
            assert_int_equal(ji.model_len, strlen(wi.model));
            if (ji.model_len)
                assert_memory_equal(ji.model, wi.model, ji.model_len);
            assert_int_equal(ji.stream, wi.stream);
            assert_int_equal(ji.include_usage, wi.include_usage);
            assert_int_equal(ji.n_messages, wi.n_messages);
            assert_int_equal(ji.n_tools, wi.n_tools);
        } else {
            assert_int_equal(rc, JSCAN_FALLBACK);
        }
        json_decref(j);
    }
    /* and the fast path is taken for the ordinary cases */
    {
        struct jscan_info ji;
        assert_int_equal(jscan_request(WIRE_API_ANTHROPIC_MESSAGES, scan_cases[0].body,
                                       strlen(scan_cases[0].body), &ji),
                         0);
        assert_int_equal(jscan_request(WIRE_API_OPENAI_CHAT, scan_cases[13].body,
                                       strlen(scan_cases[13].body), &ji),
                         0);
        assert_true(ji.include_usage);
        assert_int_equal(ji.n_messages, 2);
    }
}

static void test_scan_depth(void **state)
{
    char body[2 * JSCAN_DEPTH_MAX + 64];
    size_t n = 0;
    struct jscan_info ji;

    n += (size_t)snprintf(body, sizeof(body), "{\"a\":");
    for (int i = 0; i < JSCAN_DEPTH_MAX + 5; i++)
        body[n++] = '[';
    for (int i = 0; i < JSCAN_DEPTH_MAX + 5; i++)
        body[n++] = ']';
    body[n++] = '}';
    assert_int_equal(jscan_request(WIRE_API_ANTHROPIC_MESSAGES, body, n, &ji), JSCAN_FALLBACK);
}

/* Bodies jansson refuses for a size the scan did not check (of a number, of the whole body):
 * the scan must fall back, not answer. The first aborts tests/fuzz/fuzz_control_jscan.c. */
static void test_scan_size_fallbacks(void **state)
{
    struct buf b = BUF_INIT;
    struct jscan_info ji;
    struct err e = {0};
    json_t *j;

    /* a real whose integer part overflows a double: jansson says "real number overflow" */
    buf_adds(&b, "{\"model\":\"m\",\"temperature\":");
    for (int i = 0; i < 400; i++)
        buf_addc(&b, '9');
    buf_adds(&b, ".5}");
    j = wire_json_parse(b.data, b.len, &e);
    assert_null(j);
    assert_int_equal(jscan_request(WIRE_API_ANTHROPIC_MESSAGES, b.data, b.len, &ji),
                     JSCAN_FALLBACK);
    /* so does any integer part over 18 digits: the walk does not count up to DBL_MAX */
    buf_reset(&b);
    buf_adds(&b, "{\"t\":1234567890123456789012.5}");
    assert_int_equal(jscan_request(WIRE_API_ANTHROPIC_MESSAGES, b.data, b.len, &ji),
                     JSCAN_FALLBACK);

    /* a body over WIRE_BODY_MAX (the proxy's --max-body may be larger) */
    buf_reset(&b);
    buf_adds(&b, "{\"model\":\"m\"}");
    assert_int_equal(buf_grow(&b, WIRE_BODY_MAX + 1), 0);
    memset(b.data + b.len, ' ', WIRE_BODY_MAX + 1 - b.len);
    b.len = WIRE_BODY_MAX + 1;
    b.data[b.len] = '\0';
    err_clear(&e);
    assert_null(wire_json_parse(b.data, b.len, &e));
    assert_int_equal(e.code, ERR_LIMIT);
    assert_int_equal(jscan_request(WIRE_API_ANTHROPIC_MESSAGES, b.data, b.len, &ji),
                     JSCAN_FALLBACK);
    assert_int_equal(jscan_request(WIRE_API_ANTHROPIC_MESSAGES, b.data, WIRE_BODY_MAX, &ji), 0);
    assert_int_equal(ji.model_len, 1);
    buf_release(&b);
}

/* ---- server and upstream on one loop ---- */

struct loop {
    struct event_base *base;
    struct hsrv *srv;
    struct upstream *up;
    char addr[64];
    int done;
    /* what the client side saw */
    int status;
    struct buf body;
    int error;
    int got_head;
    int pieces;
};

/* Server handler: /stream sends 3 chunks, /hang never answers, /close cuts after a chunk,
 * anything else echoes method, target and body. */
static void handler(struct hreq *r, void *arg)
{
    const char *t = hreq_target(r);
    size_t len;
    const char *body = hreq_body(r, &len);

    if (strcmp(t, "/stream") == 0) {
        hreq_start(r, 200, "Content-Type: text/event-stream\r\n", 33, -1);
        hreq_write(r, "data: 1\n\n", 9);
        hreq_write(r, "data: 2\n\n", 9);
        hreq_write(r, "data: 3\n\n", 9);
        hreq_end(r);
    } else if (strcmp(t, "/hang") == 0) {
        hreq_set_callbacks(r, NULL, NULL, NULL);
    } else if (strcmp(t, "/close") == 0) {
        hreq_start(r, 200, NULL, 0, -1);
        hreq_write(r, "partial", 7);
        hreq_abort(r);
    } else {
        struct buf b = BUF_INIT;
        buf_addf(&b, "%s %s ", hreq_method(r), t);
        buf_add(&b, body, len);
        hreq_reply(r, 200, "X-Test: yes\r\n", b.data, b.len);
        buf_release(&b);
    }
}

static void on_head(struct ureq *q, const struct http_head *h, void *arg)
{
    struct loop *l = arg;
    l->got_head = 1;
    l->status = h->status;
}

static void on_body(struct ureq *q, struct evbuffer *data, void *arg)
{
    struct loop *l = arg;
    size_t n = evbuffer_get_length(data);
    buf_add(&l->body, evbuffer_pullup(data, -1), n);
    evbuffer_drain(data, n);
    l->pieces++;
}

static void on_done(struct ureq *q, void *arg)
{
    struct loop *l = arg;
    l->done = 1;
    event_base_loopbreak(l->base);
}

static void on_error(struct ureq *q, int code, int got_head, const char *msg, void *arg)
{
    struct loop *l = arg;
    l->error = code;
    l->done = 1;
    event_base_loopbreak(l->base);
}

static const struct ureq_callbacks cbs = {on_head, on_body, on_done, on_error};

static void loop_setup(struct loop *l, int timeout_ms)
{
    struct hsrv_config sc = {0};
    struct upstream_config uc = {0};
    struct err e = {0};
    char url[96];

    memset(l, 0, sizeof(*l));
    buf_init(&l->body, 0);
    l->base = event_base_new();
    sc.max_body = 1 << 20;
    l->srv = hsrv_new(l->base, &sc, handler, NULL, l);
    assert_int_equal(hsrv_listen(l->srv, "127.0.0.1:0", &e), 0);
    assert_int_equal(hsrv_address(l->srv, l->addr, sizeof(l->addr)), 0);
    snprintf(url, sizeof(url), "http://%s/", l->addr);
    uc.first_byte_timeout_ms = timeout_ms;
    l->up = upstream_new(l->base, NULL, url, &uc, &e);
    assert_non_null(l->up);
    assert_string_equal(upstream_host(l->up), l->addr);
    assert_string_equal(upstream_prefix(l->up), "");
}

static void loop_teardown(struct loop *l)
{
    upstream_free(l->up);
    hsrv_free(l->srv);
    event_base_free(l->base);
    buf_release(&l->body);
}

static void run(struct loop *l)
{
    struct timeval tv = {5, 0};
    l->done = 0;
    l->error = 0;
    l->got_head = 0;
    l->pieces = 0;
    buf_reset(&l->body);
    event_base_loopexit(l->base, &tv);
    event_base_dispatch(l->base);
    assert_true(l->done);
}

static void test_roundtrip_keepalive(void **state)
{
    struct loop l;

    loop_setup(&l, 0);
    for (int i = 0; i < 3; i++) {
        upstream_send(l.up, "POST", "/echo?x=1", "X-A: b\r\n", 8, "hello", 5, &cbs, &l);
        run(&l);
        assert_int_equal(l.error, 0);
        assert_int_equal(l.status, 200);
        assert_string_equal(l.body.data, "POST /echo?x=1 hello");
        /* one client connection, kept alive across requests */
        assert_int_equal(hsrv_nconns(l.srv), 1);
    }
    upstream_send(l.up, "GET", "/stream", NULL, 0, NULL, 0, &cbs, &l);
    run(&l);
    assert_int_equal(l.status, 200);
    assert_string_equal(l.body.data, "data: 1\n\ndata: 2\n\ndata: 3\n\n");
    loop_teardown(&l);
}

static void test_upstream_errors(void **state)
{
    struct loop l;
    struct upstream_config uc = {0};
    struct upstream *down;
    struct err e = {0};

    loop_setup(&l, 300);
    upstream_send(l.up, "GET", "/hang", NULL, 0, NULL, 0, &cbs, &l);
    run(&l);
    assert_int_equal(l.error, UPSTREAM_ETIMEOUT);
    upstream_send(l.up, "GET", "/close", NULL, 0, NULL, 0, &cbs, &l);
    run(&l);
    assert_int_equal(l.error, UPSTREAM_ERESET);
    assert_true(l.got_head);
    assert_string_equal(l.body.data, "partial");

    down = upstream_new(l.base, NULL, "http://127.0.0.1:1", &uc, &e);
    assert_non_null(down);
    upstream_send(down, "GET", "/", NULL, 0, NULL, 0, &cbs, &l);
    run(&l);
    assert_int_equal(l.error, UPSTREAM_ECONNECT);
    upstream_free(down);

    /* a cancelled request never calls back */
    {
        struct ureq *q = upstream_send(l.up, "GET", "/echo", NULL, 0, NULL, 0, &cbs, &l);
        struct timeval tv = {0, 200000};
        ureq_cancel(q);
        l.done = 0;
        event_base_loopexit(l.base, &tv);
        event_base_dispatch(l.base);
        assert_false(l.done);
    }
    loop_teardown(&l);
}

static void test_bad_urls(void **state)
{
    struct event_base *base = event_base_new();
    struct upstream_config uc = {0};
    static const char *bad[] = {"ftp://x/", "http://", "nonsense", "http://h/?q=1",
                                "http://u:p@h/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct err e = {0};
        assert_null(upstream_new(base, NULL, bad[i], &uc, &e));
        assert_int_equal(e.code, ERR_INVALID);
    }
    {
        struct err e = {0};
        struct upstream *u = upstream_new(base, NULL, "https://api.openai.com/v1/", &uc, &e);
        assert_non_null(u);
        assert_string_equal(upstream_host(u), "api.openai.com");
        assert_string_equal(upstream_prefix(u), "/v1");
        upstream_free(u);
        u = upstream_new(base, NULL, "http://127.0.0.1:8080", &uc, &e);
        assert_string_equal(upstream_host(u), "127.0.0.1:8080");
        upstream_free(u);
    }
    event_base_free(base);
}

/* A raw origin: once the request arrives, answers half a head and closes. */
static void half_head_reply_cb(evutil_socket_t fd, short what, void *arg)
{
    char buf[4096];

    (void)!read(fd, buf, sizeof(buf));
    (void)!write(fd, "HTTP/1.1 200 OK\r\nContent-Le", 27);
    close(fd);
}

static void half_head_cb(evutil_socket_t lfd, short what, void *arg)
{
    int fd = accept(lfd, NULL, NULL);

    if (fd >= 0)
        event_base_once(arg, fd, EV_READ, half_head_reply_cb, NULL, NULL);
}

/* Half a response head, then the origin's close: the request fails at once (ERESET), not
 * after the first-byte timeout (the bufferevent stops reading at EOF, so no read timeout
 * would ever fire: the call hung). */
static void test_upstream_half_head(void **state)
{
    struct loop l;
    struct upstream_config uc = {0};
    struct sockaddr_in sin;
    socklen_t slen = sizeof(sin);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct event *ev;
    struct upstream *up;
    struct err e = {0};
    char url[64];
    int64_t t0;

    loop_setup(&l, 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(lfd, 4), 0);
    getsockname(lfd, (struct sockaddr *)&sin, &slen);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sin.sin_port));
    ev = event_new(l.base, lfd, EV_READ | EV_PERSIST, half_head_cb, l.base);
    event_add(ev, NULL);
    uc.first_byte_timeout_ms = 3000;
    up = upstream_new(l.base, NULL, url, &uc, &e);
    assert_non_null(up);
    t0 = time_mono_ns();
    upstream_send(up, "GET", "/", NULL, 0, NULL, 0, &cbs, &l);
    run(&l);
    assert_int_equal(l.error, UPSTREAM_ERESET);
    assert_true(time_mono_ns() - t0 < (int64_t)1000 * 1000000);
    upstream_free(up);
    event_free(ev);
    close(lfd);
    loop_teardown(&l);
}

/* A password in an upstream URL never reaches a message (the URL is refused, and the
 * refusal quotes it without its user info). */
static void test_url_password_redacted(void **state)
{
    struct event_base *base = event_base_new();
    struct upstream_config uc = {0};
    static const char *bad[] = {"http://user:hunter2pw@127.0.0.1:9/",
                                "https://user:hunter2pw@api.example.com/v1?x=1",
                                "ftp://hunter2pw@h/", "http://u:hunter2pw@[::1",
                                "http://a@b:hunter2pw@h#f", "u:hunter2pw@host"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct err e = {0};
        assert_null(upstream_new(base, NULL, bad[i], &uc, &e));
        assert_int_equal(e.code, ERR_INVALID);
        assert_null(strstr(e.msg, "hunter2"));
        assert_non_null(strstr(e.msg, "***"));
    }
    event_base_free(base);
}

/* Every catalog row the controller-model injector has is handled by the proxy, and the proxy
 * handles nothing else: a fault added to the catalog for the controller fails here until its
 * handler is written, and a handler without a row fails too. */
static void test_every_llm_fault_has_a_handler(void **state)
{
    size_t n, rows = 0;
    const struct catalog_fault *f = catalog_faults(&n);

    for (size_t i = 0; i < n; i++) {
        int injects = (f[i].injectors & CATALOG_INJ_CONTROLLER_MODEL) != 0;
        if (injects != proxy_fault_handled(f[i].fid))
            fail_msg("catalog row '%s': controller-model %s, proxy handler %s", f[i].id,
                     injects ? "yes" : "no", proxy_fault_handled(f[i].fid) ? "yes" : "no");
        rows += (size_t)injects;
    }
    assert_true(rows >= 5);
    assert_false(proxy_fault_handled(CATALOG_F_COUNT));
    assert_false(proxy_fault_handled((enum catalog_fault_id) - 1));
}

/* ---- the core's handler registry (core.c) ---- */

static char reg_log[256];

struct fake_state {
    const char *name;
    size_t in_flight;
};

static struct fake_state fake_a = {"a", 2}, fake_b = {"b", 3};

static void reg_note(const char *what, const char *name)
{
    size_t n = strlen(reg_log);
    snprintf(reg_log + n, sizeof(reg_log) - n, "%s:%s ", what, name);
}

static void *fake_init_a(struct ctl *c, struct err *e)
{
    reg_note("init", "a");
    return &fake_a;
}

static void *fake_init_b(struct ctl *c, struct err *e)
{
    reg_note("init", "b");
    return &fake_b;
}

static void *fake_init_fail(struct ctl *c, struct err *e)
{
    err_set(e, ERR_INVALID, "bad config");
    return NULL;
}

static void fake_handle(void *state, struct hreq *r) {}
static void fake_stop(void *state) { reg_note("stop", ((struct fake_state *)state)->name); }
static void fake_free(void *state) { reg_note("free", ((struct fake_state *)state)->name); }
static size_t fake_in_flight(void *state) { return ((struct fake_state *)state)->in_flight; }

static void fake_reject(void *state, const struct http_head *h, int status, const char *msg,
                        struct buf *body)
{
    buf_reset(body);
    buf_adds(body, ((struct fake_state *)state)->name);
}

static const struct ctl_handler fake_a_h = {
    "a", "/_a/", fake_init_a, fake_handle, fake_stop, fake_free, fake_in_flight, fake_reject, NULL};
static const struct ctl_handler fake_b_h = {
    "b", NULL, fake_init_b, fake_handle, fake_stop, fake_free, fake_in_flight, fake_reject, NULL};
static const struct ctl_handler fake_bare_h = {
    .name = "bare", .prefix = "/_bare/", .init = fake_init_b, .handle = fake_handle};
static const struct ctl_handler fake_fail_h = {
    .name = "fail", .init = fake_init_fail, .handle = fake_handle};

/* The defaults are written once, in controller.c: controller_config_init fills them in, and
 * `faultline proxy --help` shows these values (not a copy of them as text). */
static void test_config_init_defaults(void **state)
{
    struct controller_config cfg;

    controller_config_init(&cfg);
    assert_string_equal(cfg.listen_addr, "127.0.0.1:0");
    assert_int_equal(cfg.listen_fd, -1);
    assert_string_equal(cfg.upstream_anthropic, "https://api.anthropic.com");
    assert_string_equal(cfg.upstream_openai, "https://api.openai.com");
    assert_null(cfg.plan_path);
    assert_null(cfg.upstream_ca);
    assert_int_equal(cfg.max_body, (size_t)32 << 20);
    assert_int_equal(cfg.max_conns, 4096);
    assert_int_equal(cfg.retries, 2);
    assert_int_equal(cfg.retry_base_ms, 500);
    assert_int_equal(cfg.retry_max_ms, 8000);
    assert_int_equal(cfg.connect_timeout_ms, 10000);
    assert_int_equal(cfg.first_byte_timeout_ms, 600000);
    assert_int_equal(cfg.idle_timeout_ms, 300000);
    assert_int_equal(cfg.client_timeout_ms, 60000);
    assert_int_equal(cfg.i_have_a_sandbox, 0);
}

static void test_core_handlers(void **state)
{
    struct ctl c;
    struct err e = {0};
    struct http_head h;
    struct buf body = BUF_INIT;

    memset(&c, 0, sizeof(c));
    reg_log[0] = '\0';
    assert_int_equal(ctl_register(&c, &fake_bare_h, &e), 0);
    assert_int_equal(ctl_register(&c, &fake_a_h, &e), 0);
    assert_int_equal(ctl_register(&c, &fake_b_h, &e), 0);
    assert_int_equal(ctl_register(&c, &fake_fail_h, &e), ERR_INVALID);
    assert_string_equal(e.msg, "bad config");
    assert_int_equal(c.nhandlers, 3);
    /* in flight: summed over those that keep calls (bare has none) */
    assert_int_equal(ctl_calls_in_flight(&c), 5);
    /* a refusal's body: the handler the target routes to, first match in order */
    memset(&h, 0, sizeof(h));
    h.target = "/_a/x";
    buf_adds(&body, "generic");
    ctl_reject_body(&c, &h, 413, "too big", &body);
    assert_string_equal(body.data, "a");
    h.target = "/v1/messages";
    ctl_reject_body(&c, &h, 413, "too big", &body);
    assert_string_equal(body.data, "b");
    h.target = "/_bare/y"; /* no reject_body: the generic one stays */
    buf_reset(&body);
    buf_adds(&body, "generic");
    ctl_reject_body(&c, &h, 413, "too big", &body);
    assert_string_equal(body.data, "generic");
    ctl_reject_body(&c, NULL, 400, "bad head", &body);
    assert_string_equal(body.data, "generic");
    /* stop in order, free in reverse, the registry empty after */
    ctl_stop_handlers(&c);
    ctl_free_handlers(&c);
    assert_string_equal(reg_log, "init:b init:a init:b stop:a stop:b free:b free:a ");
    assert_int_equal(c.nhandlers, 0);
    assert_int_equal(ctl_calls_in_flight(&c), 0);
    /* bounded */
    for (int i = 0; i < CTL_MAX_HANDLERS; i++)
        assert_int_equal(ctl_register(&c, &fake_bare_h, &e), 0);
    assert_int_equal(ctl_register(&c, &fake_bare_h, &e), ERR_INVALID);
    ctl_free_handlers(&c);
    /* the account: model calls numbered from 1, cost summed */
    assert_int_equal(ctl_next_model_call(&c), 1);
    assert_int_equal(ctl_next_model_call(&c), 2);
    assert_true(ctl_cost_add(&c, 0.25) == 0.25);
    assert_true(ctl_cost_add(&c, 0.5) == 0.75);
    ctl_check_ceiling(&c); /* no ceiling: never aborts */
    assert_false(c.aborted);
    buf_release(&body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_heads),
        cmocka_unit_test(test_request_heads_refused),
        cmocka_unit_test(test_head_find),
        cmocka_unit_test(test_response_keep_alive),
        cmocka_unit_test(test_response_heads),
        cmocka_unit_test(test_lists_and_fields),
        cmocka_unit_test(test_chunked_any_split),
        cmocka_unit_test(test_chunked_max_out),
        cmocka_unit_test(test_chunked_line_limit_any_split),
        cmocka_unit_test(test_chunked_refused),
        cmocka_unit_test(test_scan_agrees_with_wire),
        cmocka_unit_test(test_scan_depth),
        cmocka_unit_test(test_scan_size_fallbacks),
        cmocka_unit_test(test_roundtrip_keepalive),
        cmocka_unit_test(test_upstream_errors),
        cmocka_unit_test(test_bad_urls),
        cmocka_unit_test(test_url_password_redacted),
        cmocka_unit_test(test_upstream_half_head),
        cmocka_unit_test(test_every_llm_fault_has_a_handler),
        cmocka_unit_test(test_core_handlers),
        cmocka_unit_test(test_config_init_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
