/*
 * events: the event log of one repetition (JSONL, one object a line).
 *
 * Writer: every line goes out in one write(2) on an O_APPEND descriptor, so several processes
 * may append to one file without interleaving. The writer stamps t (ms since epoch) and t_us
 * (us) unless the event already carries the time it happened (events_stamp), seq
 * (this writer's counter, or the caller's if the event already has one), run and src, redacts
 * secrets (values of fields and headers named like keys, tokens, authorization, cookies) and
 * cuts a line over EVENTS_LINE_MAX with a marker. Reader: streaming, bounded memory; skips and
 * counts malformed lines; never loads the whole file. Kinds and fields: docs/events.md.
 */
#ifndef FAULTLINE_EVENTS_EVENTS_H
#define FAULTLINE_EVENTS_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

#define EVENTS_LINE_MAX (64 * 1024)

struct events_writer;

/* Opens (creating) path for appending. run and src are stamped on every event. Caller frees
 * with events_close. NULL with e set on failure. */
struct events_writer *events_open(const char *path, const char *run, const char *src,
                                  struct err *e);
/* Stamps, redacts and appends ev (borrowed; the writer adds t/seq/run/src to a copy, the
 * caller's object is not modified) as one line in one write(2), cutting it to EVENTS_LINE_MAX
 * (docs/events.md). 0, ERR_INVALID (ev is not an object with a string kind; nothing written)
 * or ERR_IO (write failed; a partial line is terminated so that readers skip it). Not
 * thread-safe: one writer, one thread. */
int events_append(struct events_writer *w, json_t *ev);
/* Batching: after events_hold, events_append collects lines in memory (writing early only
 * past 256 KiB) and events_release writes them all with one write(2), still whole lines. For
 * a caller that emits many events in one go; events_close releases. events_release returns 0
 * or ERR_IO. */
void events_hold(struct events_writer *w);
int events_release(struct events_writer *w);
/* Stamps ev (an object) with the time it happened, now: t (ms) and t_us (us since the epoch),
 * unless it already has an integer t or t_us >= 0. For the component that saw the thing
 * happen, when it builds the event: a writer that runs later (a batch, a controller the event
 * is posted to) keeps the stamp (docs/events.md). */
void events_stamp(json_t *ev);
/* events_time_us's and events_view_time_us's "no time": below every time, not an error code. */
#define EVENTS_NO_TIME ((int64_t)-1)

/* The time an event happened, in us since the epoch: its t_us, else its t * 1000 (files of
 * writers older than t_us); EVENTS_NO_TIME when it has neither (or a negative one). The order
 * of a repetition is by this time, ties by seq (docs/events.md, "Reading"). */
int64_t events_time_us(const json_t *ev);
/* Convenience: builds {"kind": kind, ...fields} (fields borrowed, may be NULL) and appends. */
int events_emit(struct events_writer *w, const char *kind, json_t *fields);
/* The seq the next event will get. */
uint64_t events_next_seq(const struct events_writer *w);
/* Closes and frees; NULL is a no-op. */
void events_close(struct events_writer *w);

/* Registers a literal secret (e.g. an upstream API key the controller forwards): any occurrence
 * in any string (or object key) this writer writes is replaced with "[REDACTED]". Values
 * shorter than 8 bytes are ignored (too likely to hit ordinary text), duplicates too. The
 * writer keeps a copy. The cost per byte written does not grow with the number of secrets.
 * 0 or ERR_LIMIT (more than REDACT_LITS_MAX (1024) secrets, or one over 4096 bytes). */
int events_add_secret(struct events_writer *w, const char *value);

/* Replaces, in place, the values of secret-named keys anywhere in ev with "[REDACTED]", and
 * credential-looking tokens inside strings (docs/events.md lists the rules). Returns the number
 * of values redacted. */
int events_redact(json_t *ev);
/* 1 when a field or header name is secret-like (api key, token, authorization, cookie...). */
int events_is_secret_name(const char *name);

/* ---- raw values: a field recorded from its JSON text, not from a tree ----
 *
 * A component that relays a large JSON value (an MCP tool's arguments or result) holds its text
 * already: events_raw_new wraps a copy of that text, checked once to be JSON that a parser
 * takes, and the wrapper is set as a TOP-LEVEL field of an event (ev_set_raw, ev.h). The writer
 * copies the text into the line as it is: no tree is built and none is dumped. Redaction stays
 * what it is for a tree (docs/events.md, "Redaction"): the writer checks the text for anything
 * the redaction would change (a credential in any string, decoded when it has escapes; a
 * secret-like key, header-pair or name/value name; nesting past the walk's depth) and only then
 * parses it and records the redacted tree instead; a line that would be over EVENTS_LINE_MAX is
 * cut from the tree too. Raw fields are written after the other fields of the line. A raw value
 * anywhere but at the top level of an event is a programmer error (it would be written as its
 * wrapper). */

/* A new reference to a raw value holding a copy of p[0..n), or NULL when p[0..n) is not one
 * JSON text that jansson takes (events_json_check, view.h): nothing is made. */
json_t *events_raw_new(const char *p, size_t n);
/* The same for a text already checked: p[0..n) is one whole value inside a text that
 * events_json_check accepted (a relay that checked its line). Not checked again. */
json_t *events_raw_new_checked(const char *p, size_t n);
/* The text of raw value v (borrowed, valid as long as v), or NULL when v is not one. */
const char *events_raw_text(const json_t *v, size_t *n);
/* The value of raw v as a tree (new reference), or NULL when v is not a raw value. */
json_t *events_raw_tree(const json_t *v);
/* A new empty value of raw v's JSON type ({}, [], "", 0, 0.0, true, null), for checks of a
 * field's type (evkind_check_listed); NULL when v is not a raw value. */
json_t *events_raw_shape(const json_t *v);
/* Appends ev (an object) as one compact JSON text, without a newline, to out: raw fields
 * spliced as their text, nothing stamped or redacted (a component that sends its events to a
 * writer elsewhere). 0 or ERR_LIMIT (out's max). */
int events_dump(const json_t *ev, struct buf *out);

struct events_reader;

/* Opens path for streaming (with fs_open_regular: a FIFO or other non-regular file is refused
 * without blocking). NULL with e set on failure. Caller frees with events_reader_free. */
struct events_reader *events_reader_open(const char *path, struct err *e);
/* A reader over fd, an open descriptor (takes ownership: events_reader_free closes it). */
struct events_reader *events_reader_fdopen(int fd);
/* Next raw line (without the newline), borrowed until the next call. 1 got one, 0 at end,
 * ERR_IO on a read error. Lines longer than EVENTS_LINE_MAX are skipped and counted as
 * malformed. */
int events_next_line(struct events_reader *r, const char **line, size_t *len);
/* Next well-formed event (a JSON object): 1 with *ev a new reference (caller decrefs), 0 at
 * end, ERR_IO on a read error. Malformed lines are skipped and counted. */
int events_next(struct events_reader *r, json_t **ev);
/* The offset, from where the reader started (the start of the file for events_reader_open),
 * of the line events_next_line or events_next returned last: pread(2) of its length there
 * reads the same bytes again (a reader that reorders lines, e.g. the scorer's time order). */
uint64_t events_reader_tell(const struct events_reader *r);
/* Malformed lines skipped so far. */
size_t events_reader_malformed(const struct events_reader *r);
/* Counts a line the caller rejected (e.g. parsed but not an object) as malformed. */
void events_reader_count_malformed(struct events_reader *r);
/* Follow mode (1): a final line without its newline is held back at end of file instead of
 * being returned, so a reader following a file being written never sees half a line. In both
 * modes, calling events_next* again after it returned 0 picks up data appended since. */
void events_reader_set_follow(struct events_reader *r, int follow);
/* NULL is a no-op. */
void events_reader_free(struct events_reader *r);

#endif
