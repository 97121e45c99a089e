/*
 * redact: see redact.h.
 *
 * redact_text walks the text once, byte by byte. At each byte it asks, cheapest first:
 *   - a registered literal? (a 256-bit filter on the first byte, then a hash bucket of the
 *     first REDACT_LIT_MIN bytes, then memcmp);
 *   - "://user:pass@" (only at a ':');
 *   - at a word boundary: a secret-named header or variable ("Cookie: x", "DB_PASSWORD=x",
 *     "?key=x"), a "Bearer "/"Basic " credential, a JWT (eyJ...), a PEM private key block,
 *     a prefixed key (sk-, ghp_, AKIA, xoxb-, AIza...);
 *   - inside a word: a prefixed key only after '_' or a %XX escape ("key_ghp_...",
 *     "%3Dsk-proj-..."), and only when it holds a digit (so "task-management" stays).
 * A match is replaced whole; the scan resumes after it.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/err.h"
#include "util/redact.h"
#include "util/banned.h"

/* ---- the mutation switch ---------------------------------------------------------------- */

/* 1 in the mutant build only (`make mutation-check`, docs/testing.md): every redaction entry
 * point then finds nothing and hands its input back unchanged, so each secret-leak test must
 * fail. The one #ifdef of the switch; its callers are compiled in every build. */
static int mutant_no_redact(void)
{
#ifdef FAULTLINE_MUTATE_NO_REDACT
    return 1;
#else
    return 0;
#endif
}

/* ---- literal secrets --------------------------------------------------------------------- */

#define LIT_BUCKETS 2048 /* power of two, > REDACT_LITS_MAX: chains stay short */
#define NONE UINT32_MAX

struct redact_lits {
    char **s;
    size_t *len;
    uint32_t *next;
    uint32_t n, cap;
    uint32_t head[LIT_BUCKETS];
    uint64_t first[4];       /* bit c: some literal starts with byte c */
    unsigned char skip[256]; /* word_tab without the bytes a literal starts with */
};

/* The bytes of a key or word: ASCII letters and digits (what isalnum takes in the C locale
 * faultline runs in), '_' and '-'. word_tab: the same without '_', the bytes inside a word
 * after which no credential can start (redact_text's fast skip). */
#define WORD_BYTES ['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1, ['-'] = 1
static const unsigned char key_tab[256] = {WORD_BYTES, ['_'] = 1};
static const unsigned char word_tab[256] = {WORD_BYTES};
#undef WORD_BYTES

static uint32_t lit_hash(const char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v)); /* REDACT_LIT_MIN == 8 bytes */
    v *= 0x9e3779b97f4a7c15ULL;
    return (uint32_t)(v >> 53) & (LIT_BUCKETS - 1);
}

struct redact_lits *redact_lits_new(void)
{
    struct redact_lits *l = xcalloc(1, sizeof(*l));
    for (size_t i = 0; i < LIT_BUCKETS; i++)
        l->head[i] = NONE;
    memcpy(l->skip, word_tab, sizeof(l->skip));
    return l;
}

void redact_lits_free(struct redact_lits *l)
{
    if (l == NULL)
        return;
    for (uint32_t i = 0; i < l->n; i++) {
        explicit_bzero(l->s[i], l->len[i]);
        free(l->s[i]);
    }
    free(l->s);
    free(l->len);
    free(l->next);
    free(l);
}

int redact_lits_add(struct redact_lits *l, const char *value)
{
    size_t n = value ? strlen(value) : 0;
    uint32_t h;

    if (n < REDACT_LIT_MIN)
        return 0;
    if (n > REDACT_LIT_MAX)
        return ERR_LIMIT;
    h = lit_hash(value);
    for (uint32_t k = l->head[h]; k != NONE; k = l->next[k])
        if (l->len[k] == n && memcmp(l->s[k], value, n) == 0)
            return 0;
    if (l->n == REDACT_LITS_MAX)
        return ERR_LIMIT;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->s = xrealloc(l->s, l->cap * sizeof(*l->s));
        l->len = xrealloc(l->len, l->cap * sizeof(*l->len));
        l->next = xrealloc(l->next, l->cap * sizeof(*l->next));
    }
    l->s[l->n] = xstrdup(value);
    l->len[l->n] = n;
    l->next[l->n] = l->head[h];
    l->head[h] = l->n;
    l->first[(unsigned char)value[0] >> 6] |= 1ULL << ((unsigned char)value[0] & 63);
    l->skip[(unsigned char)value[0]] = 0;
    l->n++;
    return 0;
}

/* Length of the longest literal of l at s[i..n), or 0. */
static size_t lit_at(const struct redact_lits *l, const char *s, size_t n, size_t i)
{
    unsigned char c = (unsigned char)s[i];
    size_t best = 0;

    if (l == NULL || l->n == 0 || n - i < REDACT_LIT_MIN || !(l->first[c >> 6] >> (c & 63) & 1))
        return 0;
    for (uint32_t k = l->head[lit_hash(s + i)]; k != NONE; k = l->next[k])
        if (l->len[k] <= n - i && l->len[k] > best && memcmp(s + i, l->s[k], l->len[k]) == 0)
            best = l->len[k];
    return best;
}

/* ---- secret names ------------------------------------------------------------------------ */

static int ci_ends(const char *s, size_t n, const char *suffix)
{
    size_t m = strlen(suffix);

    if (n < m)
        return 0;
    for (size_t k = 0; k < m; k++)
        if (tolower((unsigned char)s[n - m + k]) != suffix[k])
            return 0;
    return 1;
}

/* The name parts (redact_is_secret_name), lowercase. */
#define PART(s)                                                                                    \
    {                                                                                              \
        s, sizeof(s) - 1                                                                           \
    }
static const struct {
    const char *s;
    size_t n;
} name_parts[] = {
    PART("api-key"),    PART("api_key"),     PART("apikey"),      PART("authorization"),
    PART("secret"),     PART("password"),    PART("passwd"),      PART("passphrase"),
    PART("cookie"),     PART("private-key"), PART("private_key"), PART("privatekey"),
    PART("access-key"), PART("access_key"),  PART("accesskey"),   PART("credential")};
#undef PART
#define NAME_PARTS (sizeof(name_parts) / sizeof(name_parts[0]))

/* Bit (b0 << 8 | b1): some part starts with the bytes b0 b1, in any case. Built once (every
 * thread that finds it unbuilt builds the same bits). */
static uint64_t part_pairs[65536 / 64];
static int part_pairs_ready;

static const uint64_t *name_pairs(void)
{
    if (!__atomic_load_n(&part_pairs_ready, __ATOMIC_ACQUIRE)) {
        for (size_t i = 0; i < NAME_PARTS; i++) {
            unsigned char a = (unsigned char)name_parts[i].s[0];
            unsigned char b = (unsigned char)name_parts[i].s[1];
            unsigned char as[2] = {a, (unsigned char)toupper(a)};
            unsigned char bs[2] = {b, (unsigned char)toupper(b)};
            for (int x = 0; x < 2; x++)
                for (int y = 0; y < 2; y++) {
                    unsigned k = (unsigned)as[x] << 8 | bs[y];
                    __atomic_fetch_or(&part_pairs[k / 64], 1ULL << (k % 64), __ATOMIC_RELAXED);
                }
        }
        __atomic_store_n(&part_pairs_ready, 1, __ATOMIC_RELEASE);
    }
    return part_pairs;
}

static int pair_at(const uint64_t *pairs, const unsigned char *u, size_t k)
{
    unsigned key = (unsigned)u[k] << 8 | u[k + 1];
    return (int)(pairs[key / 64] >> (key % 64) & 1);
}

/* This runs for every key of every event written, and for every word of a recorded text that
 * a separator follows (header_at: a 16 KiB argument is one such word). One pass: a part is
 * compared only where the name's two bytes there are the first two of some part (a bit of
 * part_pairs), so a long word costs a lookup a byte, eight tested in a row. */
int redact_is_secret_name(const char *name, size_t n)
{
    const unsigned char *u = (const unsigned char *)name;
    const uint64_t *pairs;

    if (n < 3 || mutant_no_redact())
        return 0;
    if (ci_ends(name, n, "token"))
        return 1; /* access_token, x-auth-token; never "tokens" (input_tokens) */
    if ((n == 4 && ci_ends(name, n, "auth")) || ci_ends(name, n, "_auth") ||
        ci_ends(name, n, "-auth"))
        return 1;
    if ((n == 4 && ci_ends(name, n, "pass")) || (n == 3 && ci_ends(name, n, "pwd")))
        return 1;
    pairs = name_pairs();
    for (size_t k = 0; k + 1 < n; k++) {
        while (k + 9 < n &&
               !(pair_at(pairs, u, k) | pair_at(pairs, u, k + 1) | pair_at(pairs, u, k + 2) |
                 pair_at(pairs, u, k + 3) | pair_at(pairs, u, k + 4) | pair_at(pairs, u, k + 5) |
                 pair_at(pairs, u, k + 6) | pair_at(pairs, u, k + 7)))
            k += 8;
        if (!pair_at(pairs, u, k))
            continue;
        for (size_t i = 0; i < NAME_PARTS; i++) {
            size_t m = name_parts[i].n, j = 0;
            if (n - k < m)
                continue;
            while (j < m && tolower(u[k + j]) == (unsigned char)name_parts[i].s[j])
                j++;
            if (j == m)
                return 1;
        }
    }
    return 0;
}

/* ---- formats ----------------------------------------------------------------------------- */

/* A byte of key_tab: this runs for every byte of every string an event records. */
static int key_char(unsigned char c)
{
    return key_tab[c];
}

static int bearer_char(unsigned char c)
{
    return isalnum(c) || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=' ||
           c == '-';
}

/* Keys known by their prefix: at least min bytes of key characters in all. */
static const struct {
    const char *p;
    size_t n, min;
} key_prefixes[] = {
    {"sk-", 3, 20},      {"sk_live_", 8, 20}, {"sk_test_", 8, 20},     {"rk_live_", 8, 20},
    {"rk_test_", 8, 20}, {"ghp_", 4, 20},     {"gho_", 4, 20},         {"ghu_", 4, 20},
    {"ghs_", 4, 20},     {"ghr_", 4, 20},     {"github_pat_", 11, 20}, {"glpat-", 6, 20},
    {"AKIA", 4, 20},     {"ASIA", 4, 20},     {"AIza", 4, 30},         {"xoxa-", 5, 20},
    {"xoxb-", 5, 20},    {"xoxp-", 5, 20},    {"xoxr-", 5, 20},        {"xoxs-", 5, 20},
    {"xapp-", 5, 20},
};
#define BEARER_EMBEDDED_MIN 8
#define JWT_SEGMENT_MIN 8

/* 1 when t[0..n) is only lowercase ASCII letters (prose: "Basic understanding"). */
static int all_lower(const char *t, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (t[k] < 'a' || t[k] > 'z')
            return 0;
    return 1;
}

/* Length of the "Bearer " / "Basic " scheme at s[i] (any case), or 0. */
static size_t scheme_at(const char *s, size_t n, size_t i)
{
    if (n - i > 7 && strncasecmp(s + i, "bearer ", 7) == 0)
        return 7;
    if (n - i > 6 && strncasecmp(s + i, "basic ", 6) == 0)
        return 6;
    return 0;
}

/* A prefixed key at s[i]: its length, or 0. embedded: inside a word, where a digit is
 * required too. */
static size_t prefixed_at(const char *s, size_t n, size_t i, int embedded)
{
    unsigned char c = (unsigned char)s[i];

    if (c != 's' && c != 'r' && c != 'g' && c != 'A' && c != 'x')
        return 0;
    for (size_t k = 0; k < sizeof(key_prefixes) / sizeof(key_prefixes[0]); k++) {
        size_t m = key_prefixes[k].n, j, digits = 0;
        if (n - i < key_prefixes[k].min || key_prefixes[k].p[0] != (char)c ||
            memcmp(s + i, key_prefixes[k].p, m) != 0)
            continue;
        for (j = i + m; j < n && key_char((unsigned char)s[j]); j++)
            digits += isdigit((unsigned char)s[j]) != 0;
        if (j - i >= key_prefixes[k].min && (!embedded || digits > 0))
            return j - i;
    }
    return 0;
}

/* A JWT "eyJ<b64url>.eyJ<b64url>[.<b64url>]" at s[i]: its length, or 0. */
static size_t jwt_at(const char *s, size_t n, size_t i)
{
    size_t j = i, seg = 0, start;

    if (n - i < 2 * JWT_SEGMENT_MIN || memcmp(s + i, "eyJ", 3) != 0)
        return 0;
    for (;;) {
        start = j;
        while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '_' || s[j] == '-'))
            j++;
        if (seg < 2 && (j - start < JWT_SEGMENT_MIN || memcmp(s + start, "eyJ", 3) != 0))
            return 0;
        seg++;
        if (seg == 3 || j >= n || s[j] != '.')
            break;
        j++;
    }
    if (seg < 2)
        return 0;
    return s[j - 1] == '.' ? j - 1 - i : j - i;
}

/* A PEM private key block at s[i]: "-----BEGIN ... PRIVATE KEY-----" up to the end of its
 * "-----END ...-----" line (or of the text). Keeps the BEGIN line. */
static size_t pem_at(const char *s, size_t n, size_t i, size_t *keep)
{
    const char *p = s + i, *eol, *end;
    size_t rest = n - i;

    if (rest < 30 || memcmp(p, "-----BEGIN ", 11) != 0)
        return 0;
    eol = memchr(p + 11, '-', rest - 11);
    if (eol == NULL || (size_t)(eol - p) > 80 || (size_t)(p + rest - eol) < 5 ||
        memcmp(eol, "-----", 5) != 0 || eol - p < 22 || memcmp(eol - 11, "PRIVATE KEY", 11) != 0)
        return 0;
    *keep = (size_t)(eol + 5 - p);
    end = memmem(eol + 5, (size_t)(p + rest - (eol + 5)), "-----END ", 9);
    if (end == NULL)
        return rest;
    end = memmem(end + 9, (size_t)(p + rest - (end + 9)), "-----", 5);
    return end == NULL ? rest : (size_t)(end + 5 - p);
}

/* "scheme://user:password@" at s[i] == ':': replaces the password. */
static size_t userinfo_at(const char *s, size_t n, size_t i, size_t *keep)
{
    size_t j = i + 3, colon = 0;

    if (n - i < 6 || s[i + 1] != '/' || s[i + 2] != '/')
        return 0;
    for (; j < n && j - i < 512; j++) {
        char c = s[j];
        if (c == '@')
            break;
        if (c == '/' || c == ' ' || c == '\t' || c == '\n' || c == '"' || c == '\'' || c == '?' ||
            c == '#')
            return 0;
        if (c == ':' && colon == 0)
            colon = j;
    }
    if (j >= n || s[j] != '@' || colon == 0 || j == colon + 1)
        return 0;
    *keep = colon + 1 - i;
    return j - i;
}

/* A secret header or variable written as text, "X-Api-Key: abc", "\"cookie\": \"abc\"",
 * "DB_PASSWORD=abc", "?key=abc": the length from s[i] to the end of its value, or 0. Sets
 * *keep to the bytes up to the value (and its Bearer/Basic scheme). */
static size_t header_at(const char *s, size_t n, size_t i, size_t *keep)
{
    size_t j = i, v, end;
    /* 'Authorization: Bearer x' in a shell command ends at its quote */
    char quote = i > 0 && (s[i - 1] == '"' || s[i - 1] == '\'') ? s[i - 1] : 0;
    int assign;
    const unsigned char *u = (const unsigned char *)s;

    while (j + 8 <= n &&
           (key_tab[u[j]] & key_tab[u[j + 1]] & key_tab[u[j + 2]] & key_tab[u[j + 3]] &
            key_tab[u[j + 4]] & key_tab[u[j + 5]] & key_tab[u[j + 6]] & key_tab[u[j + 7]]))
        j += 8; /* a long word: eight bytes a branch */
    while (j < n && key_char(u[j]))
        j++;
    if (j >= n || (s[j] != ':' && s[j] != '=' && s[j] != '"' && s[j] != '\''))
        return 0; /* most words: not a name followed by a separator */
    if (!redact_is_secret_name(s + i, j - i)) {
        /* a query string's "key": only right after '?' or '&' */
        if (!(j - i == 3 && strncasecmp(s + i, "key", 3) == 0 && i > 0 &&
              (s[i - 1] == '?' || s[i - 1] == '&') && s[j] == '='))
            return 0;
    }
    if (s[j] == '"' || s[j] == '\'')
        j++;
    if (j >= n || (s[j] != ':' && s[j] != '='))
        return 0;
    assign = s[j] == '=';
    v = j + 1;
    while (v < n && (s[v] == ' ' || s[v] == '\t'))
        v++;
    if (v < n && (s[v] == '"' || s[v] == '\'')) {
        quote = s[v++];
        assign = 0; /* a quoted value ends at its quote */
    }
    v += scheme_at(s, n, v);
    end = v;
    if (assign) /* NAME=value: the value ends at a space or a separator */
        while (end < n && !isspace((unsigned char)s[end]) && s[end] != '&' && s[end] != ';' &&
               s[end] != ',' && s[end] != '"' && s[end] != '\'' && s[end] != quote)
            end++;
    else
        while (end < n && s[end] != '\n' && s[end] != '\r' && s[end] != quote)
            end++;
    if (end == v ||
        (end - v == sizeof(REDACT_MARK) - 1 && memcmp(s + v, REDACT_MARK, end - v) == 0))
        return 0;
    *keep = v - i;
    return end - i;
}

/* 1 when s[i] follows '_' or a %XX escape: where a key glued to a word still starts. */
static int glued(const char *s, size_t i)
{
    return s[i - 1] == '_' || (i >= 3 && s[i - 3] == '%' && isxdigit((unsigned char)s[i - 2]) &&
                               isxdigit((unsigned char)s[i - 1]));
}

/* Length of the credential starting at s[i] (to be replaced), or 0. Sets *keep to the bytes of
 * it to keep (a header name, the "Bearer " scheme). */
static size_t token_at(const char *s, size_t n, size_t i, size_t *keep)
{
    unsigned char c = (unsigned char)s[i];
    size_t len, scheme;

    *keep = 0;
    if (c == ':')
        return userinfo_at(s, n, i, keep);
    if (!key_char(c))
        return 0;
    if (i > 0 && key_char((unsigned char)s[i - 1]))
        return glued(s, i) ? prefixed_at(s, n, i, 1) : 0;
    if ((len = header_at(s, n, i, keep)) > 0)
        return len;
    if ((c == 'B' || c == 'b') && (scheme = scheme_at(s, n, i)) > 0) {
        size_t j = i + scheme;
        if (i == 0 && scheme == 6) {
            *keep = 6; /* the whole string is a Basic header value */
            return n;
        }
        while (j < n && bearer_char((unsigned char)s[j]))
            j++;
        /* The whole string being "Bearer x" is a header value; inside text, want a token:
         * BEARER_EMBEDDED_MIN token characters, not only lowercase letters (prose) */
        if (j > i + scheme && (i == 0 || (j - i - scheme >= BEARER_EMBEDDED_MIN &&
                                          !all_lower(s + i + scheme, j - i - scheme)))) {
            *keep = scheme;
            return j - i;
        }
        return 0;
    }
    if (c == 'e')
        return jwt_at(s, n, i);
    if (c == '-')
        return pem_at(s, n, i, keep);
    return prefixed_at(s, n, i, 0);
}

/* 1 when a literal of l may start with byte c (the first-byte filter of lit_at). */
static int lit_may_start(const struct redact_lits *l, unsigned char c)
{
    return l != NULL && l->n > 0 && (l->first[c >> 6] >> (c & 63) & 1);
}

size_t redact_text(const struct redact_lits *l, const char *s, size_t n, struct buf *out)
{
    const unsigned char *u = (const unsigned char *)s, *skip = l ? l->skip : word_tab;
    size_t last = 0, found = 0;
    size_t scan = mutant_no_redact() ? 0 : n; /* the mutant finds nothing: s is copied whole */

    for (size_t i = 0; i < scan; i++) {
        /* Inside a word (a run of key characters) token_at finds nothing but after '_' or a
         * %XX escape (glued), and lit_at nothing where no literal starts: skip such bytes
         * here, without the calls (a 16 KiB argument is one long word). Past three word bytes
         * that are not '_' (so no %XX escape is right behind either), one table lookup a
         * byte does (skip: the word bytes no literal starts with). */
        while (i > 0 && i < scan && key_char(u[i - 1]) && key_char(u[i]) && s[i - 1] != '_' &&
               !(i >= 3 && s[i - 3] == '%') && !lit_may_start(l, u[i])) {
            i++;
            if (i >= 3 && skip[u[i - 1]] && skip[u[i - 2]] && skip[u[i - 3]]) {
                while (i + 8 <= scan &&
                       (skip[u[i]] & skip[u[i + 1]] & skip[u[i + 2]] & skip[u[i + 3]] &
                        skip[u[i + 4]] & skip[u[i + 5]] & skip[u[i + 6]] & skip[u[i + 7]]))
                    i += 8; /* eight independent lookups, one branch */
                while (i < scan && skip[u[i]])
                    i++;
            }
        }
        if (i >= scan)
            break;
        size_t keep = 0, len = lit_at(l, s, n, i);
        if (len == 0)
            len = token_at(s, n, i, &keep);
        if (len == 0)
            continue;
        found++;
        if (out == NULL)
            return found;
        buf_add(out, s + last, i + keep - last);
        buf_adds(out, REDACT_MARK);
        last = i + len;
        i = last - 1;
    }
    if (out != NULL)
        buf_add(out, s + last, n - last);
    return found;
}
