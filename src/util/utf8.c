/*
 * utf8: validation, safe cut points and replacement of invalid bytes (see utf8.h).
 *
 * How: utf8_seq decodes one sequence, checking its lead byte range, continuation bytes, the
 * minimum code point for its length (no overlong forms), surrogates and the U+10FFFF ceiling;
 * everything else is a loop over it.
 */
#include <string.h>

#include "util/utf8.h"
#include "util/buf.h"
#include "util/banned.h"

size_t utf8_put(unsigned long cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t utf8_seq(const void *p, size_t n)
{
    const unsigned char *s = p;
    unsigned c, cp, min;
    size_t need;

    if (n == 0)
        return 0;
    c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < need)
        return 0;
    cp = c & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07);
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return need;
}

int utf8_valid(const void *p, size_t n)
{
    const unsigned char *s = p;
    size_t i = 0;
    while (i < n) {
        size_t k = s[i] < 0x80 ? 1 : utf8_seq(s + i, n - i);
        if (k == 0)
            return 0;
        i += k;
    }
    return 1;
}

size_t utf8_boundary(const void *p, size_t n, size_t k)
{
    const unsigned char *s = p;
    if (k >= n)
        return n;
    while (k > 0 && (s[k] & 0xC0) == 0x80)
        k--;
    return k;
}

int utf8_sanitize(const void *p, size_t n, struct buf *out)
{
    const unsigned char *s = p;
    size_t i = 0, run = 0; /* s[i - run .. i) is valid and not yet appended */
    int rc = 0;

    while (i < n && rc == 0) {
        size_t k = s[i] < 0x80 ? 1 : utf8_seq(s + i, n - i);
        if (k > 0) {
            i += k;
            run += k;
            continue;
        }
        rc = buf_add(out, s + i - run, run);
        if (rc == 0)
            rc = buf_add(out, "\xEF\xBF\xBD", 3);
        run = 0;
        i++;
    }
    if (rc == 0)
        rc = buf_add(out, s + i - run, run);
    return rc;
}
