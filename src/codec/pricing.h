/*
 * pricing: the model price table (USD per 1M tokens) and the cost of one call.
 *
 * The built-in table is protocols.md section 4 (docs/pricing.md is generated from it by
 * pricing_markdown; a unit test fails when they differ). A cost is
 *
 *   (input * in + (cache_write - cache_write_1h) * cw + cache_write_1h * cw1h
 *    + cache_read * cr + output * out) / 1e6
 *
 * over the normalised usage of wire.h (so Anthropic input_tokens, which exclude cached tokens,
 * and OpenAI prompt_tokens, which include them, are both handled there). A row may have a
 * long-context tier: when input + cache_write + cache_read exceeds tier_above, every token of
 * the call is priced at the tier's rates (Haiku 5.5 above 100k).
 *
 * Lookup by model id, first hit wins: exact; then without a provider prefix ("anthropic/",
 * "openai/": everything up to the last '/'); then without a trailing date ("-20251001",
 * "-2025-10-01") or context tag ("[1m]"); then the longest table id that is a prefix of the
 * name and is followed by '-', '@' or ':' (so "claude-sonnet-4-20250514" finds
 * "claude-sonnet-4", but "gpt-5.4" never finds "gpt-5"). A model no rule finds is unknown: it
 * costs the default rates (Opus 4.1's: 15 / 18.75 / 30 / 1.50 / 75, above every row but
 * gpt-5.5-pro's output, so a cost ceiling errs on the safe side) and lookups say known = 0 so
 * callers can flag it.
 *
 * Overrides: pricing_load_file reads JSON (a file ending in .json) or YAML:
 *
 *   models:
 *     my-model: {input: 1, cache_write: 1.25, cache_write_1h: 2, cache_read: 0.1, output: 5}
 *     gpt-5.4:  {input: 2, output: 10}
 *     big:      {input: 1, output: 5, tier_above: 100000, tier: {input: 2, output: 10}}
 *   default: {input: 20, output: 100}            # optional: rates for unknown models
 *
 * An omitted input or output is 0; an omitted cache_write is input, cache_write_1h is
 * cache_write, cache_read is input (no caching discount unless stated). A row for an existing
 * id replaces it; a new id is added. Keys per row: the five rates, tier_above, tier, note.
 */
#ifndef FAULTLINE_CODEC_PRICING_H
#define FAULTLINE_CODEC_PRICING_H

#include <stddef.h>
#include <stdint.h>

#include "codec/wire.h"
#include "util/buf.h"
#include "util/err.h"

/* USD per 1M tokens. */
struct pricing_rates {
    double input;
    double cache_write;    /* 5-minute cache write (OpenAI: same as input, no write premium) */
    double cache_write_1h; /* 1-hour cache write */
    double cache_read;
    double output;
};

struct pricing_entry {
    const char *model; /* API id, or a prefix of ids (see lookup) */
    struct pricing_rates rates;
    int64_t tier_above; /* > 0: prompts over this many tokens use tier */
    struct pricing_rates tier;
    const char *provider; /* "anthropic", "openai", or "" for file rows */
    const char *note;     /* shown in docs/pricing.md; "" when none */
};

struct pricing_table;

/* A table holding the built-in rows and default. Caller frees with pricing_free. */
struct pricing_table *pricing_new(void);
/* pricing_free(NULL) is a no-op. */
void pricing_free(struct pricing_table *t);
/* Overlays the rows of a JSON or YAML override file (format above). 0, or with e set
 * ("FILE:LINE:COL: ..." where the position is known): ERR_IO, ERR_LIMIT (over 1 MiB or 10000
 * rows), ERR_PARSE, ERR_INVALID (unknown key, negative or non-numeric rate). On error t is
 * unchanged. */
int pricing_load_file(struct pricing_table *t, const char *path, struct err *e);
/* Same from text in memory; name is used in messages; is_json selects the parser. */
int pricing_load_text(struct pricing_table *t, const char *text, size_t len, const char *name,
                      int is_json, struct err *e);

/* The row for model (NULL or "" is unknown). Returns 1 and sets *out to the row when the
 * model is known, 0 and sets *out to the default row when it is not. *out is borrowed from
 * t, valid until t changes. */
int pricing_lookup(const struct pricing_table *t, const char *model,
                   const struct pricing_entry **out);
/* Cost in USD of one call of model with usage u. *known (may be NULL) gets pricing_lookup's
 * answer. Never negative. */
double pricing_cost(const struct pricing_table *t, const char *model, const struct wire_usage *u,
                    int *known);

/* Rows in table order (built-in order, then added rows). */
size_t pricing_count(const struct pricing_table *t);
const struct pricing_entry *pricing_at(const struct pricing_table *t, size_t i);
/* The default row (model "default"). */
const struct pricing_entry *pricing_default(const struct pricing_table *t);

/* Appends the Markdown table docs/pricing.md holds between its BEGIN/END markers: one row per
 * entry plus the default. 0 or ERR_LIMIT. */
int pricing_markdown(const struct pricing_table *t, struct buf *out);

#endif
