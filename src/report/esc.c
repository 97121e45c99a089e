/* esc: see esc.h. */
#include <string.h>

#include "report/esc.h"
#include "util/utf8.h"
#include "util/banned.h"

static const char replacement[] = "\xef\xbf\xbd";

int esc_xml(struct buf *out, const char *s, size_t n)
{
    size_t i = 0, run = 0;
    int rc = 0;

    while (i < n && rc == 0) {
        unsigned char c = (unsigned char)s[i];
        const char *ent = NULL;
        size_t len = 1;

        if (c >= 0x80) {
            len = utf8_seq(s + i, n - i);
            if (len == 0 || (len == 3 && c == 0xef && (unsigned char)s[i + 1] == 0xbf &&
                             (unsigned char)s[i + 2] >= 0xbe)) { /* XML forbids U+FFFE/F */
                ent = replacement;
                len = len ? len : 1;
            }
        } else if (c == '&') {
            ent = "&amp;";
        } else if (c == '<') {
            ent = "&lt;";
        } else if (c == '>') {
            ent = "&gt;";
        } else if (c == '"') {
            ent = "&quot;";
        } else if (c == '\'') {
            ent = "&#39;";
        } else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
            ent = replacement;
        }
        if (ent) {
            rc = buf_add(out, s + i - run, run);
            if (rc == 0)
                rc = buf_adds(out, ent);
            run = 0;
        } else {
            run += len;
        }
        i += len;
    }
    if (rc == 0 && run)
        rc = buf_add(out, s + n - run, run);
    return rc;
}

int esc_xmls(struct buf *out, const char *s)
{
    return s ? esc_xml(out, s, strlen(s)) : 0;
}

int esc_md(struct buf *out, const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0, i = 0;
    int rc = 0;

    if (n > max)
        n = utf8_boundary(s, n, max);
    while (i < n && rc == 0) {
        unsigned char c = (unsigned char)s[i];
        size_t len = 1;

        if (c >= 0x80) {
            len = utf8_seq(s + i, n - i);
            rc = len ? buf_add(out, s + i, len) : buf_adds(out, replacement);
            len = len ? len : 1;
        } else if (c == '|' || c == '\\' || c == '`' || c == '*' || c == '_' || c == '[' ||
                   c == ']') {
            rc = buf_addc(out, '\\');
            if (rc == 0)
                rc = buf_addc(out, (char)c);
        } else if (c == '<') {
            rc = buf_adds(out, "&lt;");
        } else if (c == '>') {
            rc = buf_adds(out, "&gt;");
        } else if (c == '&') {
            rc = buf_adds(out, "&amp;");
        } else if (c < 0x20 || c == 0x7f) {
            rc = buf_addc(out, ' ');
        } else {
            rc = buf_addc(out, (char)c);
        }
        i += len;
    }
    if (rc == 0 && s && strlen(s) > n)
        rc = buf_adds(out, "\xe2\x80\xa6");
    return rc;
}

const char *esc_str(const json_t *o, const char *key, const char *dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

double esc_num(const json_t *o, const char *key, double dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

long long esc_int(const json_t *o, const char *key, long long dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

int esc_has_num(const json_t *o, const char *key)
{
    return json_is_number(json_object_get(o, key));
}

const json_t *esc_runner_rep(const json_t *report, long long rep)
{
    const json_t *reps = json_object_get(report, "repetitions"), *r;
    size_t i;

    json_array_foreach(reps, i, r) if (esc_int(r, "rep", -1) == rep) return r;
    return NULL;
}

const char *esc_verdict_colour(const char *verdict, int has_score, double score)
{
    if (strcmp(verdict, "aborted") == 0)
        return "#fe7d37";
    if (strcmp(verdict, "scored") != 0 || !has_score)
        return "#9f9f9f";
    if (score >= 80)
        return "#44cc11";
    if (score >= 50)
        return "#dfb317";
    return "#e05d44";
}
