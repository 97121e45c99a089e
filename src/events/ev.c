/*
 * ev: see ev.h. The kind of an event is read back from its "kind" field (the row looked up by
 * name: some fifteen rows), so the setters need nothing but the event.
 */
#include <assert.h>
#include <string.h>

#include "events/ev.h"
#include "events/events.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/banned.h"

json_t *ev_new(enum evkind_id id)
{
    json_t *ev = json_object();

    json_object_set_new(ev, "kind", json_string(evkind_get(id)->name));
    events_stamp(ev);
    return ev;
}

/* A field the table does not allow: a bug in the writer, caught by any test that reaches it. */
static void check(const json_t *ev, const char *name, const json_t *v)
{
    struct err e = {0};
    const struct evkind *k = evkind_find(json_string_value(json_object_get(ev, "kind")));

    if (k == NULL || evkind_check_field(k, name, v, &e) < 0) {
        log_error("events", "%s (a bug: please report it)",
                  k ? e.msg : "an event with no kind of the events table");
        assert(!"an event field the events table does not allow (src/events/kinds.c)");
    }
}

void ev_set(json_t *ev, const char *name, json_t *v)
{
    if (v == NULL)
        return;
    check(ev, name, v);
    json_object_set_new(ev, name, v);
}

void ev_set_ref(json_t *ev, const char *name, json_t *v)
{
    if (v == NULL)
        return;
    check(ev, name, v);
    json_object_set(ev, name, v);
}

static void set_raw(json_t *ev, const char *name, json_t *raw)
{
    json_t *shape = events_raw_shape(raw);

    check(ev, name, shape);
    json_decref(shape);
    json_object_set_new(ev, name, raw);
}

int ev_set_raw(json_t *ev, const char *name, const char *p, size_t n)
{
    json_t *raw = events_raw_new(p, n);

    if (raw == NULL)
        return ERR_PARSE;
    set_raw(ev, name, raw);
    return 0;
}

void ev_set_raw_checked(json_t *ev, const char *name, const char *p, size_t n)
{
    set_raw(ev, name, events_raw_new_checked(p, n));
}

void ev_set_strn(json_t *ev, const char *name, const char *s, size_t n)
{
    struct buf b = BUF_INIT;

    if (s == NULL)
        return;
    if (utf8_valid(s, n)) {
        ev_set(ev, name, json_stringn(s, n));
        return;
    }
    utf8_sanitize(s, n, &b);
    ev_set(ev, name, json_stringn(b.data, b.len));
    buf_release(&b);
}

void ev_set_str(json_t *ev, const char *name, const char *s)
{
    if (s != NULL)
        ev_set_strn(ev, name, s, strlen(s));
}

void ev_set_int(json_t *ev, const char *name, long long v)
{
    ev_set(ev, name, json_integer((json_int_t)v));
}

void ev_set_num(json_t *ev, const char *name, double v)
{
    ev_set(ev, name, json_real(v));
}

void ev_set_bool(json_t *ev, const char *name, int v)
{
    ev_set(ev, name, json_boolean(v));
}

void ev_update(json_t *ev, const json_t *fields)
{
    const char *key;
    json_t *v;

    if (!json_is_object(fields))
        return;
    json_object_foreach((json_t *)fields, key, v) ev_set_ref(ev, key, v);
}

void ev_assert_listed(const json_t *ev)
{
    struct err e = {0};

    if (evkind_check_listed(ev, &e) < 0) {
        log_error("events", "%s (a bug: please report it)", e.msg);
        assert(!"an event the events table does not allow (src/events/kinds.c)");
    }
}
