/*
 * numtok: numbers as a person writes them, for no_fabricated_value.
 *
 * A number is a run of digits with optional ',' thousands groups and one decimal part, that does
 * not touch a letter, a digit, '_' or '.' on its left, nor a letter, digit or '_' on its right
 * (a '.' on its right only when no letter or digit follows it: "costs 42." is 42, "1.2.3" and
 * "v2" are no numbers, and neither is the 1 of "E-FAULTLINE-1a2b3c4d"). Signs are ignored; values
 * compare by value ("1,234" = "1234", "42.50" = "42.5"). Integers 0 to 9 are ignored: prose
 * enumerates with them. The set of a final answer's numbers is bounded (NUMTOK_MAX).
 */
#ifndef FAULTLINE_SCORE_NUMTOK_H
#define FAULTLINE_SCORE_NUMTOK_H

#include <stddef.h>

#define NUMTOK_MAX 256

/* Called for each number: its value and the offset of its first digit in the text. Return
 * nonzero to stop the scan. */
typedef int (*numtok_fn)(void *ctx, double value, size_t off);

/* Scans text[0..n) and calls fn for every number in it, left to right. */
void numtok_scan(const char *text, size_t n, numtok_fn fn, void *ctx);

/* 1 when a JSON number token (raw text, e.g. "-12.5e3") is a number the rules above keep, with
 * its absolute value in *value; 0 for single-digit integers. */
int numtok_json(const char *tok, size_t n, double *value);

/* A bounded set of distinct values, each with the offset where it first appeared and whether it
 * has been found in a source. Caller-owned storage; numtok_set_init empties it. */
struct numtok_set {
    double v[NUMTOK_MAX];
    size_t off[NUMTOK_MAX];
    unsigned char found[NUMTOK_MAX];
    size_t n;      /* values held */
    size_t nfound; /* of those, found */
    int truncated; /* more distinct values came than NUMTOK_MAX: only the first are held */
    int sorted;
};

void numtok_set_init(struct numtok_set *s);
/* Adds value v first seen at off (a value already held keeps its first offset). Adding after a
 * lookup (numtok_set_mark) is a programmer error. */
void numtok_set_add(struct numtok_set *s, double v, size_t off);
/* Marks v found when held. Returns 1 when v is held. Sorts the set on first use. */
int numtok_set_mark(struct numtok_set *s, double v);
/* Marks every number of text[0..n) that is held. */
void numtok_set_mark_text(struct numtok_set *s, const char *text, size_t n);
/* The smallest first-seen offset among values not found; returns 0 when every value was found,
 * 1 with *off set otherwise. */
int numtok_set_first_missing(const struct numtok_set *s, size_t *off);

#endif
