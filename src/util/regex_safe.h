/*
 * regex_safe: one rule for which POSIX extended regular expressions faultline accepts from
 * input (experiment files, plans, mock-model scripts) before handing them to glibc's regcomp.
 *
 * glibc compiles a bounded repetition by copying its operand once per bound, so nested bounds
 * multiply ("((a{1,100}){1,100}){1,100}" is a million copies) and regcomp or regexec then take
 * seconds to minutes and gigabytes; back-references make matching exponential. The rule:
 *   - at most REGEX_SAFE_LEN_MAX bytes;
 *   - no back-references (\1 .. \9);
 *   - no stacked repetition operators ("a**", "a+?", "a{2}{3}");
 *   - no bound over REGEX_SAFE_DUP_MAX ("a{1,101}");
 *   - along any chain of nested repetitions, the product of their bounds (the larger number of
 *     each {m,n}; 1 for *, + and ?) at most REGEX_SAFE_PRODUCT_MAX;
 *   - groups nested at most REGEX_SAFE_DEPTH_MAX deep.
 * Syntax errors are left to regcomp, which reports them.
 */
#ifndef FAULTLINE_UTIL_REGEX_SAFE_H
#define FAULTLINE_UTIL_REGEX_SAFE_H

#include <stddef.h>

#define REGEX_SAFE_LEN_MAX 512
#define REGEX_SAFE_DUP_MAX 100
#define REGEX_SAFE_PRODUCT_MAX 1000
#define REGEX_SAFE_DEPTH_MAX 32

/*
 * Checks pattern (NUL-terminated, borrowed) against the rule above. Returns 0 when it is
 * acceptable, or ERR_INVALID (util/err.h) with the reason (lowercase, no period, e.g.
 * "back-references are not supported") written into why[0..n) (truncated, always NUL-terminated
 * when n > 0). Reads the pattern once; allocates nothing.
 */
int regex_check(const char *pattern, char *why, size_t n);

#endif
