/*
 * esc: what the renderers of src/report share: escaping run strings for HTML/XML and Markdown
 * (invalid UTF-8 replaced by U+FFFD first), and typed reads of the report JSON that never fail
 * (a missing or mistyped member reads as the default).
 */
#ifndef FAULTLINE_REPORT_ESC_H
#define FAULTLINE_REPORT_ESC_H

#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"

/* Appends s[0..n) escaped for HTML or XML text and attribute values: & < > " ' as entities,
 * control bytes (but tab and newline) and invalid UTF-8 as U+FFFD. 0 or out's error. */
int esc_xml(struct buf *out, const char *s, size_t n);
/* esc_xml of a NUL-terminated string (NULL: nothing). */
int esc_xmls(struct buf *out, const char *s);
/* Appends s escaped for a Markdown table cell: | and \ and ` escaped, < > & as entities (a PR
 * comment renders HTML), newlines and control bytes as spaces, invalid UTF-8 as U+FFFD, cut
 * at max bytes (on a UTF-8 boundary) with an ellipsis. 0 or out's error. */
int esc_md(struct buf *out, const char *s, size_t max);

/* Members of the report JSON: the default when absent or of another type. */
const char *esc_str(const json_t *o, const char *key, const char *dflt);
double esc_num(const json_t *o, const char *key, double dflt);
long long esc_int(const json_t *o, const char *key, long long dflt);
/* 1 when key is a number (integer or real). */
int esc_has_num(const json_t *o, const char *key);

/* The report's repetition facts (rep.json) for score repetition index rep, or NULL. */
const json_t *esc_runner_rep(const json_t *report, long long rep);

/* A verdict's colour, for the HTML page and the badge. */
const char *esc_verdict_colour(const char *verdict, int has_score, double score);

#endif
