/*
 * numtok: see numtok.h. A single left-to-right pass; the value of a token is parsed from a small
 * copy without its separators (strtod, C locale).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "score/numtok.h"
#include "util/banned.h"

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Letters, digits and '_' (bytes past ASCII count as letters: "é5" is a word, not a number). */
static int is_word(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static int keep(double v)
{
    return !(v < 10 && v == floor(v));
}

void numtok_scan(const char *text, size_t n, numtok_fn fn, void *ctx)
{
    const unsigned char *t = (const unsigned char *)text;
    size_t i = 0;

    while (i < n) {
        if (!is_digit(t[i]) || (i > 0 && (is_word(t[i - 1]) || t[i - 1] == '.'))) {
            i++;
            continue;
        }
        size_t start = i, j = i;
        while (j < n && is_digit(t[j]))
            j++;
        while (j + 3 < n && t[j] == ',' && is_digit(t[j + 1]) && is_digit(t[j + 2]) &&
               is_digit(t[j + 3]) && (j + 4 >= n || !is_digit(t[j + 4])))
            j += 4;
        if (j + 1 < n && t[j] == '.' && is_digit(t[j + 1])) {
            j++;
            while (j < n && is_digit(t[j]))
                j++;
        }
        int ok = !(j < n && is_word(t[j])) && !(j + 1 < n && t[j] == '.' && is_word(t[j + 1]));
        if (ok) {
            char buf[64];
            size_t k = 0;
            for (size_t p = start; p < j && k + 1 < sizeof(buf); p++)
                if (t[p] != ',')
                    buf[k++] = (char)t[p];
            buf[k] = '\0';
            double v = strtod(buf, NULL);
            if (j - start < sizeof(buf) && keep(v) && fn(ctx, v, start))
                return;
        }
        /* skip the rest of the word so its inner digits are not read as numbers */
        while (j < n && (is_word(t[j]) || (t[j] == '.' && j + 1 < n && is_word(t[j + 1]))))
            j++;
        i = j;
    }
}

int numtok_json(const char *tok, size_t n, double *value)
{
    char buf[64];
    double v;

    if (n == 0 || n >= sizeof(buf))
        return 0;
    memcpy(buf, tok, n);
    buf[n] = '\0';
    v = fabs(strtod(buf, NULL));
    if (!keep(v))
        return 0;
    *value = v;
    return 1;
}

void numtok_set_init(struct numtok_set *s)
{
    s->n = s->nfound = 0;
    s->truncated = 0;
    s->sorted = 0;
}

void numtok_set_add(struct numtok_set *s, double v, size_t off)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == v)
            return;
    if (s->n == NUMTOK_MAX) {
        s->truncated = 1;
        return;
    }
    s->v[s->n] = v;
    s->off[s->n] = off;
    s->found[s->n] = 0;
    s->n++;
}

static void sort_set(struct numtok_set *s)
{
    /* insertion sort keeps v, off and found together; n <= 256 */
    for (size_t i = 1; i < s->n; i++) {
        double v = s->v[i];
        size_t off = s->off[i];
        unsigned char f = s->found[i];
        size_t j = i;
        while (j > 0 && s->v[j - 1] > v) {
            s->v[j] = s->v[j - 1];
            s->off[j] = s->off[j - 1];
            s->found[j] = s->found[j - 1];
            j--;
        }
        s->v[j] = v;
        s->off[j] = off;
        s->found[j] = f;
    }
    s->sorted = 1;
}

int numtok_set_mark(struct numtok_set *s, double v)
{
    size_t lo = 0, hi;

    if (!s->sorted)
        sort_set(s);
    hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->n && s->v[lo] == v) {
        if (!s->found[lo]) {
            s->found[lo] = 1;
            s->nfound++;
        }
        return 1;
    }
    return 0;
}

static int mark_cb(void *ctx, double v, size_t off)
{
    struct numtok_set *s = ctx;
    (void)off;
    numtok_set_mark(s, v);
    return s->nfound == s->n; /* every value found: nothing left to look for */
}

void numtok_set_mark_text(struct numtok_set *s, const char *text, size_t n)
{
    if (s->nfound < s->n)
        numtok_scan(text, n, mark_cb, s);
}

int numtok_set_first_missing(const struct numtok_set *s, size_t *off)
{
    int any = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->found[i] && (!any || s->off[i] < *off)) {
            *off = s->off[i];
            any = 1;
        }
    return any;
}
