/*
 * text: quoting user strings for messages (redacted, then cut) and spotting blank lines (see
 * text.h). One definition
 * for the YAML reader, the experiment validator and the events reader and view.
 */
#include "util/redact.h"
#include "util/text.h"
#include "util/utf8.h"
#include "util/banned.h"

#define SHOWN_MAX 40

const char *text_shown(const char *s, size_t len, char out[TEXT_SHOWN_SIZE])
{
    struct buf r = BUF_INIT;
    size_t n, i;

    /* redact the whole string before cutting it: a key cut short is no longer recognized */
    if (redact_text(NULL, s, len, NULL) > 0) {
        redact_text(NULL, s, len, &r);
        text_shown(r.data, r.len, out);
        buf_release(&r);
        return out;
    }
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

int text_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}
