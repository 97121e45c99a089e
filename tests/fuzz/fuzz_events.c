/*
 * fuzz_events: the event reader, the line view and the writer on untrusted bytes.
 *
 * For every input:
 *   1. each line (split on '\n', at most 256 lines): events_view_parse must accept exactly the
 *      lines jansson accepts as an event (json_loadb with JSON_ALLOW_NUL, an object with a
 *      string kind; and, as events_next, no raw NUL byte) and, on those, give the same kind
 *      and, for every top-level key, the same value; the accessors must not crash on any field;
 *   2. the whole input as a file (a memfd): events_next and events_next_view must return the
 *      same number of events and count the same malformed lines;
 *   3. each accepted event goes through events_append (redaction and cuts) into another memfd:
 *      every line written is valid JSON of at most EVENTS_LINE_MAX bytes with the same kind.
 * A disagreement aborts (a crash for libFuzzer, a failed replay in `make check`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "events/events.h"
#include "events/view.h"
#include "util/fs.h"
#include "util/banned.h"

#define LINES_MAX 256

static void die(const char *what, const char *line, size_t len)
{
    fprintf(stderr, "fuzz_events: %s on line: %.*s\n", what, (int)(len > 300 ? 300 : len), line);
    abort();
}

static int memfd_with(const uint8_t *data, size_t size, char *path, size_t n)
{
    int fd = memfd_create("fuzz-events", 0);

    if (fd < 0)
        abort();
    if (size && fs_write_all(fd, data, size) < 0)
        abort();
    snprintf(path, n, "/proc/self/fd/%d", fd);
    return fd;
}

/* Returns 1 when the line was an event and was appended to w. */
static int check_line(const char *line, size_t len, struct events_writer *w)
{
    static struct events_view v;
    /* As events_next: a raw NUL byte makes a line malformed (jansson would skip one after a
     * number or a literal). */
    json_t *j = memchr(line, '\0', len) ? NULL : json_loadb(line, len, JSON_ALLOW_NUL, NULL);
    json_t *kind, *val;
    int jok = j && json_is_object(j) && json_is_string(kind = json_object_get(j, "kind"));
    int vok = events_view_parse(&v, line, len) == 0;
    const char *key;

    if (jok != vok)
        die(jok ? "view rejects what jansson accepts" : "view accepts what jansson rejects", line,
            len);
    if (!jok) {
        json_decref(j);
        return 0;
    }
    kind = json_object_get(j, "kind");
    if (v.kind_len != json_string_length(kind) && v.kind_len != EVENTS_VIEW_KIND_MAX)
        die("kind length differs", line, len);
    if (memcmp(v.kind, json_string_value(kind), v.kind_len) != 0)
        die("kind differs", line, len);
    json_object_foreach(j, key, val)
    {
        json_t *got = events_view_get(&v, key);
        char out[64];
        long long ll;
        double d;
        int b;
        if (got == NULL || !json_equal(got, val))
            die("field value differs", line, len);
        json_decref(got);
        if (json_is_string(val) && !events_view_is(&v, key, json_string_value(val)) &&
            strlen(json_string_value(val)) == json_string_length(val))
            die("events_view_is differs", line, len);
        events_view_string(&v, key, out, sizeof(out), NULL);
        if (json_is_integer(val) &&
            (events_view_int(&v, key, &ll) != 0 || ll != json_integer_value(val)))
            die("integer differs", line, len);
        if (json_is_number(val) && events_view_number(&v, key, &d) != 0)
            die("number not read", line, len);
        if (json_is_boolean(val) &&
            (events_view_bool(&v, key, &b) != 0 || b != json_is_true(val)))
            die("boolean differs", line, len);
    }
    if (events_view_raw(&v, "no such key \x01", NULL) != NULL)
        die("found an absent key", line, len);
    val = events_view_json(&v);
    if (!json_equal(val, j))
        die("events_view_json differs", line, len);
    json_decref(val);
    {
        /* The writer refuses an empty kind or one over 256 bytes; it writes everything else. */
        size_t kl = json_string_length(kind);
        int rc = events_append(w, j), want = kl == 0 || kl > 256 ? ERR_INVALID : 0;
        json_decref(j);
        if (rc != want)
            die("events_append result", line, len);
        return rc == 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char in_path[64], out_path[64];
    int in_fd = memfd_with(data, size, in_path, sizeof(in_path));
    int out_fd = memfd_with(NULL, 0, out_path, sizeof(out_path));
    struct err e = {0};
    struct events_writer *w = events_open(out_path, "fuzz-run", "mcp", &e);
    struct events_reader *r1, *r2, *r3;
    const char *p = (const char *)data, *end = p + size;
    static struct events_view v;
    size_t n1 = 0, n2 = 0, accepted = 0, n3 = 0;
    json_t *ev;
    const char *line;
    size_t len;

    if (w == NULL)
        abort();
    for (int k = 0; k < LINES_MAX && p < end; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        accepted += (size_t)check_line(p, l, w);
        p += l + 1;
    }
    events_close(w);

    r1 = events_reader_open(in_path, &e);
    r2 = events_reader_open(in_path, &e);
    if (!r1 || !r2)
        abort();
    while (events_next(r1, &ev) == 1) {
        json_decref(ev);
        n1++;
    }
    while (events_next_view(r2, &v) == 1)
        n2++;
    if (n1 != n2 || events_reader_malformed(r1) != events_reader_malformed(r2))
        die("events_next and events_next_view disagree", "", 0);
    events_reader_free(r1);
    events_reader_free(r2);

    r3 = events_reader_open(out_path, &e);
    if (!r3)
        abort();
    while (events_next_line(r3, &line, &len) == 1) {
        if (len + 1 > EVENTS_LINE_MAX || events_view_parse(&v, line, len) != 0)
            die("the writer wrote a bad line", line, len);
        n3++;
    }
    if (n3 != accepted || events_reader_malformed(r3) != 0)
        die("the writer lost lines", "", 0);
    events_reader_free(r3);
    close(in_fd);
    close(out_fd);
    return 0;
}
