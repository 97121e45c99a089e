/*
 * sse: an incremental Server-Sent Events parser and writer (text/event-stream, WHATWG HTML
 * "server-sent events" section 9.2.6), as the Anthropic and OpenAI streaming APIs use it.
 *
 * Parser: feed bytes as they arrive (any split, even inside a "\r\n"), then pull whole events.
 * Lines end with "\n", "\r\n" or "\r". Fields: "event", "data" (several data lines are joined
 * with "\n"), "id", "retry"; a line starting with ':' is a comment; unknown fields are ignored
 * (the spec says so). An event ends at a blank line. Unlike a browser, the parser hands out
 * every block that held at least one line, also a block of only comments (has_data == 0), so a
 * proxy can forward the stream event by event through ev.raw and count events exactly. Readers
 * that follow the spec skip events with has_data == 0.
 *
 * Limits and errors: a line longer than line_max or an event (its raw bytes) larger than
 * event_max gives ERR_LIMIT; a NUL byte or invalid UTF-8 gives ERR_PARSE. An error is sticky:
 * every later call returns it until sse_parser_reset. A leading UTF-8 BOM is skipped. At end of
 * input, sse_parser_pending() > 0 means the stream stopped inside an event (a cut stream).
 *
 * Writer: sse_write* append one event in the framing the providers use: an "event: NAME" line
 * when a name is given, one "data: " line per line of data, then a blank line.
 */
#ifndef FAULTLINE_CODEC_SSE_H
#define FAULTLINE_CODEC_SSE_H

#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

#define SSE_LINE_MAX_DEFAULT ((size_t)1 << 20)  /* 1 MiB */
#define SSE_EVENT_MAX_DEFAULT ((size_t)8 << 20) /* 8 MiB */

/* One event. Every pointer is borrowed from the parser, valid until the next call on it; the
 * strings are NUL-terminated (data may also hold "\n"). */
struct sse_event {
    const char *event; /* the event: field, "" when the block had none */
    size_t event_len;
    const char *data; /* the data: lines joined with "\n", "" when none */
    size_t data_len;
    int has_data;   /* 1 when the block held at least one data: line */
    const char *id; /* the id: field, "" when none */
    size_t id_len;
    long retry_ms;   /* the retry: field, -1 when absent or not all digits */
    const char *raw; /* the input bytes of this block, from the end of the previous one up to
                        and including its terminating blank line: forward these verbatim */
    size_t raw_len;
};

struct sse_parser;

/* A new parser. 0 for a limit means its default (SSE_LINE_MAX_DEFAULT, SSE_EVENT_MAX_DEFAULT).
 * Caller frees with sse_parser_free. Never NULL (allocation failure aborts). */
struct sse_parser *sse_parser_new(size_t line_max, size_t event_max);
/* sse_parser_free(NULL) is a no-op. */
void sse_parser_free(struct sse_parser *p);
/* Forgets all input and any sticky error; limits are kept. */
void sse_parser_reset(struct sse_parser *p);

/* Appends len bytes of input (copied). 0, the sticky error, or ERR_LIMIT when the input held
 * would pass 1 GiB (nothing is appended then). Line and event limits are checked as events
 * are pulled: feed what you read, then call sse_parser_next until it returns 0. */
int sse_parser_feed(struct sse_parser *p, const void *data, size_t len);
/* Pulls the next complete event: 1 and *ev filled, 0 when more input is needed, or a negative
 * error (ERR_LIMIT, ERR_PARSE; sticky) with e set (message names the byte offset). */
int sse_parser_next(struct sse_parser *p, struct sse_event *ev, struct err *e);
/* Input bytes held that do not yet form a complete event (0 after a clean end of stream). */
size_t sse_parser_pending(const struct sse_parser *p);
/* Total input bytes fed so far. */
size_t sse_parser_offset(const struct sse_parser *p);

/* Appends one event to out: "event: NAME\n" when event is non-NULL, then "data: LINE\n" for
 * each line of data (split at "\n"; an empty data gives one empty data line), then "\n".
 * 0 or ERR_LIMIT (out's max). event must not contain a line break (ERR_INVALID). */
int sse_write(struct buf *out, const char *event, const char *data, size_t len);
/* sse_write with j (borrowed) dumped as compact JSON on one data line. 0, ERR_LIMIT or
 * ERR_INVALID (j cannot be dumped). */
int sse_write_json(struct buf *out, const char *event, const json_t *j);
/* Appends a comment block ": TEXT\n\n" (keep-alives). */
int sse_write_comment(struct buf *out, const char *text);

#endif
