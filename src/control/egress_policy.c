/*
 * egress_policy: the egress allow list (egress_policy.h). Patterns are kept normalised as the
 * proxy's targets are (lowercase, no final dot), so matching is catalog_match_pattern's: the
 * same rule as a fault's match.host.
 */
#include <ctype.h>
#include <string.h>

#include "control/egress_policy.h"
#include "experiment/catalog.h"
#include "util/banned.h"

int egress_policy_pattern(const char *pattern, char *out, struct err *e)
{
    size_t n = strnlen(pattern, EGRESS_ALLOW_PATTERN_MAX + 1);
    size_t i = 0;

    if (n == 0)
        return err_set(e, ERR_INVALID, "egress allow: empty host pattern");
    if (n > EGRESS_ALLOW_PATTERN_MAX)
        return err_set(e, ERR_INVALID, "egress allow '%.64s...': longer than %d bytes", pattern,
                       EGRESS_ALLOW_PATTERN_MAX);
    if (pattern[0] == '*')
        out[i++] = '*';
    for (; i < n; i++) {
        unsigned char ch = (unsigned char)pattern[i];
        if (!(isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == ':'))
            return err_set(e, ERR_INVALID,
                           "egress allow '%.64s': expected a host name, or * followed by a suffix",
                           pattern);
        out[i] = (char)tolower(ch);
    }
    out[n] = '\0';
    if (n > 1 && out[n - 1] == '.')
        out[n - 1] = '\0'; /* the root's dot, as egress_parse_* drop it */
    return 0;
}

int egress_policy_init(struct egress_policy *p, const char *const *allow, struct err *e)
{
    memset(p, 0, sizeof(*p));
    if (allow == NULL)
        return 0;
    p->active = 1;
    for (; *allow; allow++) {
        if (p->nallow == EGRESS_ALLOW_MAX) {
            p->nallow = 0;
            return err_set(e, ERR_LIMIT, "egress allow: more than %d hosts", EGRESS_ALLOW_MAX);
        }
        if (egress_policy_pattern(*allow, p->allow[p->nallow], e) != 0) {
            p->nallow = 0;
            return ERR_INVALID;
        }
        p->nallow++;
    }
    return 0;
}

int egress_policy_allows(const struct egress_policy *p, const char *host)
{
    if (!p->active)
        return 1;
    for (size_t i = 0; i < p->nallow; i++)
        if (catalog_match_pattern(p->allow[i], host))
            return 1;
    return 0;
}
