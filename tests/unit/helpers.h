/*
 * tests/unit/helpers.h: what several unit tests need and no module offers (prefix ut_): JSON
 * from test text and compared with it, temporary files, a whole file read back, a file put
 * under a directory, a DNS query. Static inline, so each test binary keeps only what it uses and the
 * Makefile's one rule (tests/unit/test_X.c + the library) stays as it is.
 *
 * Include it after <cmocka.h> and the module headers, before util/banned.h. Every helper fails
 * the running test (cmocka) rather than return an error: a helper that cannot do its job means
 * the test's setup is broken, not the code under test.
 */
#ifndef FAULTLINE_TESTS_UNIT_HELPERS_H
#define FAULTLINE_TESTS_UNIT_HELPERS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"
#include "util/fs.h"

#define UT_SLURP_MAX ((size_t)64 << 20)

/* The JSON value of text (any value, not only objects); fails the test when text is not JSON.
 * Caller decrefs. */
static inline json_t *ut_json(const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
    if (v == NULL)
        fail_msg("bad test JSON '%s': %s", text, je.text);
    return v;
}

/* v compact with sorted keys, for comparisons and messages. Caller frees. */
static inline char *ut_dumps(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

/* Fails the test unless v equals the JSON text want (json_equal: key order aside). */
static inline void ut_assert_json(const json_t *v, const char *want)
{
    json_t *w = ut_json(want);
    if (!json_equal(v, w)) {
        char *got = ut_dumps(v);
        fail_msg("got %s\nwant %s", got, want);
    }
    json_decref(w);
}

/* An empty file of its own in /tmp; the test unlinks path when done. */
struct ut_tmpfile {
    char path[64];
};

static inline void ut_tmpfile_init(struct ut_tmpfile *t)
{
    int fd;
    snprintf(t->path, sizeof(t->path), "/tmp/faultline-unit-XXXXXX");
    fd = mkstemp(t->path);
    assert_true(fd >= 0);
    close(fd);
}

/* Replaces the file's content with data[0..n). */
static inline void ut_tmpfile_write(struct ut_tmpfile *t, const void *data, size_t n)
{
    struct err e = {0};
    assert_int_equal(fs_write_file(t->path, data, n, &e), 0);
}

/* A new temporary file holding text (ut_tmpfile_init, then ut_tmpfile_write). */
static inline void ut_tmpfile_with(struct ut_tmpfile *t, const char *text)
{
    ut_tmpfile_init(t);
    ut_tmpfile_write(t, text, strlen(text));
}

static inline void ut_tmpfile_append(struct ut_tmpfile *t, const char *data)
{
    FILE *f = fopen(t->path, "a");
    assert_non_null(f);
    fputs(data, f);
    fclose(f);
}

/* The whole file (at most UT_SLURP_MAX bytes), NUL-terminated, its length in *n (n may be
 * NULL). Caller frees. */
static inline char *ut_slurp(const char *path, size_t *n)
{
    struct buf b = BUF_INIT;
    struct err e = {0};
    assert_int_equal(fs_read_file(path, UT_SLURP_MAX, &b, &e), 0);
    return buf_detach(&b, n);
}

/* Writes text to dir/rel, making rel's directories first. */
static inline void ut_put(const char *dir, const char *rel, const char *text)
{
    char path[512], parent[512];
    struct err e = {0};
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    snprintf(parent, sizeof(parent), "%s", path);
    *strrchr(parent, '/') = '\0';
    assert_int_equal(fs_mkdirs(parent, &e), 0);
    assert_int_equal(fs_write_file(path, text, strlen(text), &e), 0);
}

/* A DNS query (RFC 1035) for name (dotted) of type qtype into m, id 0xBEEF, RD set, class IN;
 * returns its length. m holds 12 + strlen(name) + 6 bytes. */
static inline size_t ut_dns_query(uint8_t *m, const char *name, unsigned qtype)
{
    size_t n = 12;
    const char *p = name;

    memset(m, 0, 12);
    m[0] = 0xBE, m[1] = 0xEF, m[2] = 0x01, m[5] = 1;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t l = dot ? (size_t)(dot - p) : strlen(p);
        m[n++] = (uint8_t)l;
        memcpy(m + n, p, l);
        n += l;
        p += l + (dot != NULL);
    }
    m[n++] = 0;
    m[n++] = (uint8_t)(qtype >> 8), m[n++] = (uint8_t)qtype;
    m[n++] = 0, m[n++] = 1;
    return n;
}

#endif
