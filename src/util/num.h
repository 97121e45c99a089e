/*
 * num: checked number parsing (the one strtoll/strtod wrapper; atoi is banned).
 */
#ifndef FAULTLINE_UTIL_NUM_H
#define FAULTLINE_UTIL_NUM_H

#include <stdint.h>

/* Parses all of s as a base-10 integer in [min, max]: digits with an optional leading '-' (no
 * '+', no white space). 0, ERR_PARSE or ERR_LIMIT. */
int num_parse_ll(const char *s, long long min, long long max, long long *out);
/* Parses all of s as a finite double in [min, max] (strtod's syntax, but no leading white
 * space or '+'). 0, ERR_PARSE or ERR_LIMIT. */
int num_parse_double(const char *s, double min, double max, double *out);
/* Parses all of s as an unsigned 64-bit integer: hex after an explicit 0x or 0X, else decimal
 * (a leading 0 is not octal); no sign, no white space. 0 or ERR_PARSE (also on overflow). */
int num_parse_u64(const char *s, uint64_t *out);

/* num_hexval's "not a hex digit": below every digit value, not an error code. */
#define NUM_NOT_HEX (-1)

/* The value of one hex digit (0-9, a-f, A-F), or NUM_NOT_HEX. Inline: the JSON scanners and
 * HTTP parsers call it per byte. */
static inline int num_hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return NUM_NOT_HEX;
}

#endif
