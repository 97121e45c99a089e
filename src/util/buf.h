/*
 * buf: the one growable byte buffer (git strbuf, curl dynbuf).
 *
 * Invariants: data is never NULL (an empty buffer points at a shared empty string until the
 * first append), data[len] == '\0' always, the buffer may hold binary (embedded NULs), and
 * len never exceeds max: an append that would pass max fails with ERR_LIMIT and leaves the
 * buffer unchanged. Allocation failure aborts (as git's xmalloc does): there is no recovery
 * from out-of-memory that is better than a clear message.
 */
#ifndef FAULTLINE_UTIL_BUF_H
#define FAULTLINE_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
    char *data;
    size_t len;
    size_t alloc; /* 0 while data points at the shared empty string */
    size_t max;   /* appends past this fail with ERR_LIMIT */
};

#define BUF_DEFAULT_MAX ((size_t)1 << 30)
extern char buf_empty[1];
#define BUF_INIT                                                                                   \
    {                                                                                              \
        buf_empty, 0, 0, BUF_DEFAULT_MAX                                                           \
    }

/* Initialises caller-owned storage; max 0 means BUF_DEFAULT_MAX. */
void buf_init(struct buf *b, size_t max);
/* Frees the storage; b is then empty and reusable. */
void buf_release(struct buf *b);
/* Empties b, keeping its allocation. */
void buf_reset(struct buf *b);
/* Makes room for n more bytes; ERR_LIMIT past max. */
int buf_grow(struct buf *b, size_t n);
int buf_add(struct buf *b, const void *p, size_t n);
int buf_adds(struct buf *b, const char *s);
int buf_addc(struct buf *b, char c);
int buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vaddf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Drops the first n bytes (n <= len). */
void buf_consume(struct buf *b, size_t n);
/* Shortens to n bytes (n <= len). */
void buf_truncate(struct buf *b, size_t n);
/* Hands the storage to the caller (free() it); b is left empty. Never returns NULL. */
char *buf_detach(struct buf *b, size_t *len);

/* Allocation helpers that abort with a message on failure. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#endif
