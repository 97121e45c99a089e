/* num: see num.h. */
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

    if (s == NULL || *s == '\0')
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

    if (s == NULL || *s == '\0')
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

    if (s == NULL || *s == '\0' || *s == '-' || *s == '+')
        return ERR_PARSE;
    errno = 0;
    v = strtoull(s, &end, 0);
    if (*end != '\0' || end == s || errno == ERANGE)
        return ERR_PARSE;
    *out = (uint64_t)v;
    return 0;
}
