/* num: see num.h. The strto* functions skip leading white space, take a '+' and (strtoull)
 * negate a '-': those are refused up front, so a number is exactly what the docs say. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "util/err.h"
#include "util/num.h"
#include "util/banned.h"

int num_parse_ll(const char *s, long long min, long long max, long long *out)
{
    char *end;
    long long v;

    if (s == NULL || *s == '\0' || isspace((unsigned char)*s) || *s == '+')
        return ERR_PARSE;
    if (*s == '-' && !isdigit((unsigned char)s[1]))
        return ERR_PARSE;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (*end != '\0' || end == s)
        return ERR_PARSE;
    if (errno == ERANGE || v < min || v > max)
        return ERR_LIMIT;
    *out = v;
    return 0;
}

int num_parse_double(const char *s, double min, double max, double *out)
{
    char *end;
    double v;

    if (s == NULL || *s == '\0' || isspace((unsigned char)*s) || *s == '+')
        return ERR_PARSE;
    if (*s == '-' && (s[1] == '\0' || isspace((unsigned char)s[1]) || s[1] == '+' || s[1] == '-'))
        return ERR_PARSE;
    errno = 0;
    v = strtod(s, &end);
    if (*end != '\0' || end == s || !isfinite(v))
        return ERR_PARSE;
    if (errno == ERANGE || v < min || v > max)
        return ERR_LIMIT;
    *out = v;
    return 0;
}

int num_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    int base = 10;

    if (s == NULL || !isdigit((unsigned char)*s))
        return ERR_PARSE; /* also refuses white space and signs */
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s += 2;
        base = 16;
        if (!isxdigit((unsigned char)*s))
            return ERR_PARSE;
    }
    errno = 0;
    v = strtoull(s, &end, base);
    if (*end != '\0' || end == s || errno == ERANGE)
        return ERR_PARSE;
    *out = (uint64_t)v;
    return 0;
}
