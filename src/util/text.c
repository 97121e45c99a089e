/*
 * text: quoting user strings for messages (redacted, then cut) and spotting blank lines (see
 * text.h). One definition
 * for the YAML reader, the experiment validator and the events reader and view.
 */
#include <string.h>

#include "util/redact.h"
#include "util/text.h"
#include "util/utf8.h"
#include "util/banned.h"

#define SHOWN_MAX 40

void text_md_cell(struct buf *b, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|')
            buf_adds(b, "\\|");
        else if (*s == '\n')
            buf_addc(b, ' ');
        else
            buf_addc(b, *s);
    }
}

const char *text_parse_error(const char *msg, char *out, size_t cap)
{
    const char *near = strstr(msg, " near ");
    size_t n = near ? (size_t)(near - msg) : strlen(msg);

    if (cap == 0)
        return out;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, msg, n);
    out[n] = '\0';
    return out;
}

/* s cut to SHOWN_MAX bytes, control bytes as '?', into out. */
static const char *cut(const char *s, size_t len, char out[TEXT_SHOWN_SIZE])
{
    size_t n, i;

    n = len > SHOWN_MAX ? utf8_boundary(s, len, SHOWN_MAX) : len;
    for (i = 0; i < n; i++)
        out[i] = ((unsigned char)s[i] < 32 || s[i] == 127) ? '?' : s[i];
    if (len > SHOWN_MAX) {
        out[i++] = '.';
        out[i++] = '.';
        out[i++] = '.';
    }
    out[i] = '\0';
    return out;
}

const char *text_shown(const char *s, size_t len, char out[TEXT_SHOWN_SIZE])
{
    struct buf r = BUF_INIT;

    /* redact the whole string before cutting it: a key cut short is no longer recognized.
     * Once: a redacted text may still look like a secret (a URL's user info becomes
     * "[REDACTED]", still user info), and redacting it again would never end. */
    if (redact_text(NULL, s, len, NULL) > 0) {
        redact_text(NULL, s, len, &r);
        cut(r.data, r.len, out);
        buf_release(&r);
        return out;
    }
    return cut(s, len, out);
}

int text_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

/* Optimal string alignment distance, capped: inputs over 64 bytes get a large distance. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t d[66][66];
    if (la > 64 || lb > 64)
        return 1000;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t m = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < m)
                m = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < m)
                m = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < m)
                m = d[i - 2][j - 2] + 1;
            d[i][j] = m;
        }
    }
    return d[la][lb];
}

const char *text_suggest(const char *word, const char *const *cands, size_t n)
{
    size_t len = strlen(word), best = 1000, limit;
    const char *pick = NULL;
    limit = len <= 3 ? 1 : len <= 6 ? 2 : 3;
    for (size_t i = 0; i < n; i++) {
        size_t dd = edit_distance(word, cands[i]);
        if (dd < best) {
            best = dd;
            pick = cands[i];
        }
    }
    return best <= limit ? pick : NULL;
}
