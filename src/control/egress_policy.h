/*
 * egress_policy: the experiment's `egress: {allow: [HOSTS]}` as the egress proxy applies it
 * (docs/egress.md). A list of host patterns, each a name or a leading `*` matching by suffix
 * (`*.npmjs.org`, as match.host); a request whose target host no pattern matches is refused
 * with 403 before any fault or DNS lookup. No list (the experiment has no `egress.allow`):
 * every host is allowed. Pure: no I/O, no libevent, callable from anywhere.
 */
#ifndef FAULTLINE_CONTROL_EGRESS_POLICY_H
#define FAULTLINE_CONTROL_EGRESS_POLICY_H

#include <stddef.h>

#include "util/err.h"

#define EGRESS_ALLOW_MAX 64          /* patterns on the allow list */
#define EGRESS_ALLOW_PATTERN_MAX 254 /* bytes of one pattern: '*' and a DNS name */
/* The rule name recorded in egress_request.policy for a request the allow list refused. */
#define EGRESS_POLICY_RULE "egress.allow"

struct egress_policy {
    int active; /* 0: no allow list, everything allowed */
    size_t nallow;
    char allow[EGRESS_ALLOW_MAX][EGRESS_ALLOW_PATTERN_MAX + 1]; /* lowercase, no final dot */
};

/* Checks one pattern (a host name or IP literal of letters, digits, '.', '-', '_' and ':',
 * optionally after a leading '*'; at most EGRESS_ALLOW_PATTERN_MAX bytes) and writes its
 * normalised form (lowercase, without a final dot) to out, which holds
 * EGRESS_ALLOW_PATTERN_MAX + 1 bytes. 0, or ERR_INVALID with e naming the pattern. */
int egress_policy_pattern(const char *pattern, char *out, struct err *e);

/* Fills p from a NULL-terminated list of patterns (NULL: no list, everything allowed; at most
 * EGRESS_ALLOW_MAX). 0, or ERR_INVALID / ERR_LIMIT with e set (p then allows nothing). */
int egress_policy_init(struct egress_policy *p, const char *const *allow, struct err *e);

/* 1 when host (as the proxy parsed it: lowercase, no brackets, no final dot) may be reached. */
int egress_policy_allows(const struct egress_policy *p, const char *host);

#endif
