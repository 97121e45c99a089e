/* buf: see buf.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/err.h"
#include "util/banned.h"

char buf_empty[1];

static void die_nomem(size_t n)
{
    fprintf(stderr, "faultline: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        die_nomem(n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        die_nomem(n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (p == NULL)
        die_nomem(n);
    return p;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void buf_init(struct buf *b, size_t max)
{
    b->data = buf_empty;
    b->len = 0;
    b->alloc = 0;
    b->max = max ? max : BUF_DEFAULT_MAX;
}

void buf_release(struct buf *b)
{
    size_t max = b->max;
    if (b->alloc)
        free(b->data);
    buf_init(b, max);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->alloc)
        b->data[0] = '\0';
}

int buf_grow(struct buf *b, size_t n)
{
    size_t want;

    if (n > b->max || b->len > b->max - n)
        return ERR_LIMIT;
    want = b->len + n + 1;
    if (want <= b->alloc)
        return 0;
    if (want < b->alloc * 2)
        want = b->alloc * 2;
    if (want < 64)
        want = 64;
    if (b->alloc == 0) {
        b->data = xmalloc(want);
        b->data[0] = '\0';
    } else {
        b->data = xrealloc(b->data, want);
    }
    b->alloc = want;
    return 0;
}

int buf_add(struct buf *b, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    if (buf_grow(b, n) < 0)
        return ERR_LIMIT;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int buf_adds(struct buf *b, const char *s)
{
    return buf_add(b, s, strlen(s));
}

int buf_addc(struct buf *b, char c)
{
    return buf_add(b, &c, 1);
}

int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
    va_list cp;
    int n;

    va_copy(cp, ap);
    n = vsnprintf(b->data + b->len, b->alloc ? b->alloc - b->len : 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return ERR_INVALID;
    if (b->alloc && (size_t)n < b->alloc - b->len) {
        if ((size_t)n > b->max - b->len) {
            b->data[b->len] = '\0';
            return ERR_LIMIT;
        }
        b->len += (size_t)n;
        return 0;
    }
    if (buf_grow(b, (size_t)n) < 0) {
        if (b->alloc)
            b->data[b->len] = '\0';
        return ERR_LIMIT;
    }
    vsnprintf(b->data + b->len, b->alloc - b->len, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = buf_vaddf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void buf_truncate(struct buf *b, size_t n)
{
    if (n >= b->len)
        return;
    b->len = n;
    b->data[n] = '\0';
}

char *buf_detach(struct buf *b, size_t *len)
{
    char *p;

    if (len)
        *len = b->len;
    if (b->alloc == 0)
        p = xstrdup("");
    else
        p = b->data;
    buf_init(b, b->max);
    return p;
}
