/*
 * ev: the constructors every component builds its events with, from the kinds table (kinds.h).
 *
 *   json_t *ev = ev_new(EVKIND_TOOL_RESULT);     kind and the time it happened (t, t_us)
 *   ev_set_str(ev, "tool", name);                a field of the kind's row, of a type it allows
 *   ev_set_bool(ev, "ok", 1);
 *   seam_emit(seam, ev);  /  ctl_emit(ctl, ev);  src, seq and run: the writer's
 *
 * A field the table does not list for the kind, or a value of a type (or an allowed value) the
 * row does not allow, is a programmer error: the setter asserts, so a writer cannot emit an
 * undocumented field (docs/events.md is generated from the same table; t0031 runs the real
 * writers against it). The time is taken by ev_new, when the component saw the thing happen
 * (events_stamp): a later write or post keeps it.
 *
 * Ownership: ev_new returns a new reference (caller decrefs, or hands it to an emit that
 * borrows and then decrefs). ev_set steals its value (json_object_set_new), ev_set_ref borrows;
 * a NULL value (a failed jansson allocation) sets nothing. Callable from
 * anywhere, callbacks included; not thread-safe for one event.
 */
#ifndef FAULTLINE_EVENTS_EV_H
#define FAULTLINE_EVENTS_EV_H

#include <stddef.h>

#include <jansson.h>

#include "events/kinds.h"

/* A new event of kind id: {"kind": NAME, "t": ..., "t_us": ...}. */
json_t *ev_new(enum evkind_id id);
/* Sets field name of ev to v (stolen; NULL: nothing). Asserts the field is listed for ev's kind
 * with v's type (evkind_check_field). */
void ev_set(json_t *ev, const char *name, json_t *v);
/* The same, borrowing v. */
void ev_set_ref(json_t *ev, const char *name, json_t *v);
/* A string (s NULL: nothing set). Bytes that are not valid UTF-8 become U+FFFD, so that the
 * event is still written. */
void ev_set_str(json_t *ev, const char *name, const char *s);
void ev_set_strn(json_t *ev, const char *name, const char *s, size_t n);
void ev_set_int(json_t *ev, const char *name, long long v);
void ev_set_num(json_t *ev, const char *name, double v);
void ev_set_bool(json_t *ev, const char *name, int v);
/* A raw value (events_raw_new, events.h): field name of ev recorded from the JSON text
 * p[0..n) as it is, written without a tree (top-level fields only). 0, or ERR_PARSE when
 * p[0..n) is not JSON that jansson takes (nothing set). Asserts the field's type as ev_set. */
int ev_set_raw(json_t *ev, const char *name, const char *p, size_t n);
/* ev_set_raw of a text already checked (events_raw_new_checked): one whole value inside a text
 * events_json_check accepted. */
void ev_set_raw_checked(json_t *ev, const char *name, const char *p, size_t n);
/* Every field of fields (an object, borrowed; NULL: nothing) set on ev, each checked. */
void ev_update(json_t *ev, const json_t *fields);

/* Asserts that every field of ev is listed for its kind (evkind_check_listed): the emit
 * functions of the components (ctl_emit, seam_emit) call it, so an event built without the
 * setters is held to the table too. */
void ev_assert_listed(const json_t *ev);

#endif
