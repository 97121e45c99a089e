/*
 * regex_safe: refuses the POSIX extended regular expressions glibc handles badly (see
 * regex_safe.h for the rule and why).
 *
 * How: one left-to-right scan. Escapes and bracket expressions are skipped as single atoms.
 * Each open group keeps the largest repetition product found inside it; when an atom (a
 * character, a bracket expression, or a group at its ')') completes, `last` holds its product
 * (1, or the group's inner maximum); a following quantifier multiplies `last` by its bound,
 * and the enclosing group's maximum takes the larger of the two. So the number checked is the
 * product of the bounds along the deepest chain of nested repetitions.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/err.h"
#include "util/regex_safe.h"
#include "util/banned.h"

static int refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    if (n > 0) {
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return ERR_INVALID;
}

/* The end of the bracket expression opening at p[i] ('['): the index of its ']', or 0 when it
 * is unterminated. */
static size_t bracket_end(const char *p, size_t i)
{
    size_t j = i + 1;
    if (p[j] == '^')
        j++;
    if (p[j] == ']')
        j++;
    while (p[j] && p[j] != ']') {
        if (p[j] == '[' && (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
            const char *end = strchr(p + j + 2, p[j + 1]);
            if (end == NULL)
                return 0;
            j = (size_t)(end - p) + 1;
        }
        j++;
    }
    return p[j] ? j : 0;
}

int regex_check(const char *pattern, char *why, size_t n)
{
    const char *p = pattern;
    unsigned long inner[REGEX_SAFE_DEPTH_MAX + 1]; /* largest product inside each open group */
    int depth = 0, prev_quant = 0;
    unsigned long last = 1; /* product of the atom just completed */

    if (n > 0)
        why[0] = '\0';
    if (strlen(p) > REGEX_SAFE_LEN_MAX)
        return refuse(why, n, "longer than %d bytes", REGEX_SAFE_LEN_MAX);
    inner[0] = 1;
    for (size_t i = 0; p[i]; i++) {
        char c = p[i];
        if (c == '\\') {
            if (p[i + 1] >= '1' && p[i + 1] <= '9')
                return refuse(why, n, "back-references are not supported");
            if (p[i + 1])
                i++;
            last = 1;
            prev_quant = 0;
        } else if (c == '[') {
            size_t j = bracket_end(p, i);
            if (j == 0)
                return 0; /* unterminated: regcomp says so */
            i = j;
            last = 1;
            prev_quant = 0;
        } else if (c == '(') {
            if (depth == REGEX_SAFE_DEPTH_MAX)
                return refuse(why, n, "groups nested deeper than %d", REGEX_SAFE_DEPTH_MAX);
            inner[++depth] = 1;
            last = 1;
            prev_quant = 0;
        } else if (c == ')' && depth > 0) {
            last = inner[depth--];
            if (last > inner[depth])
                inner[depth] = last;
            prev_quant = 0;
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            unsigned long bound = 1;
            if (prev_quant)
                return refuse(why, n, "stacked repetition operators");
            if (c == '{') {
                unsigned long v = 0;
                size_t j = i + 1;
                for (; p[j] && p[j] != '}'; j++) {
                    if (p[j] >= '0' && p[j] <= '9') {
                        v = v * 10 + (unsigned long)(p[j] - '0');
                        if (v > REGEX_SAFE_DUP_MAX)
                            return refuse(why, n, "a repetition bound over %d", REGEX_SAFE_DUP_MAX);
                        if (v > bound)
                            bound = v;
                    } else if (p[j] == ',') {
                        v = 0;
                    }
                }
                if (p[j] == '\0')
                    return 0; /* unterminated: regcomp says so */
                i = j;
            }
            last *= bound; /* last <= 1000 and bound <= 100: no overflow */
            if (last > REGEX_SAFE_PRODUCT_MAX)
                return refuse(why, n, "nested repetitions multiply to %lu copies (more than %d)",
                              last, REGEX_SAFE_PRODUCT_MAX);
            if (last > inner[depth])
                inner[depth] = last;
            prev_quant = 1;
        } else {
            last = 1;
            prev_quant = 0;
        }
    }
    return 0;
}
