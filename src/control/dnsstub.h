/*
 * dnsstub: the DNS server the sandbox resolves with (docs/egress.md "The DNS stub").
 *
 * The sandbox's /etc/resolv.conf says `nameserver 127.0.0.1`; the sandbox binds a UDP socket on
 * 127.0.0.1:53 inside its network namespace and the controller serves it (controller_config
 * dns_listen_fd, `faultline proxy --dns-listen-fd N`; `--dns-listen HOST:PORT` binds one, for
 * tests). So a client that ignores the proxy variables still resolves through faultline, and
 * every name it asks for is recorded.
 *
 * One datagram in, at most one out (dns.h parses and builds):
 *
 *   a query that parses, a name an egress.dns_fail fault fires on     NXDOMAIN (faulted)
 *   a query that parses, class IN, type A                             DNSSTUB_ADDR (TTL DNS_TTL)
 *   a query that parses, any other type (AAAA among them)             NOERROR, no answer (NODATA)
 *   a query that parses, another class                                REFUSED
 *   a header but a bad question (ERR_PARSE), or QDCOUNT other than 1  FORMERR, header only
 *   an opcode other than QUERY                                        NOTIMP, header only
 *   shorter than a header, over DNS_MSG_MAX bytes, or a response (QR) dropped (no answer)
 *
 * AAAA gets no address: the controller accepts only on IPv4 loopback, and a client given no
 * AAAA record uses the A one. Every datagram is one `dns_query` event (name, qtype, answer,
 * faulted, error), up to DNSSTUB_EVENTS_MAX of them; past that the stub still answers and
 * counts, and warns once.
 *
 * The plan decides as it does for the proxy (egress_decide), for each query of a name that the
 * match.host of an egress.dns_fail fault matches (other names never reach the plan, so their
 * queries count for no fault): `after_calls`, `times` and `probability` count DNS queries
 * there, and a resolver asks twice per name (A and AAAA).
 */
#ifndef FAULTLINE_CONTROL_DNSSTUB_H
#define FAULTLINE_CONTROL_DNSSTUB_H

#include <stddef.h>
#include <stdint.h>

#include "codec/dns.h"

struct ctl_handler;

/* The address every name resolves to: the sandbox's loopback, where the controller is. */
#define DNSSTUB_ADDR "127.0.0.1"
/* dns_query events written per controller before the stub stops recording them. */
#define DNSSTUB_EVENTS_MAX 10000

/* The stub as a controller handler: it serves its own socket (handle NULL); registered only
 * when a DNS socket is configured. */
extern const struct ctl_handler dnsstub_handler;

/* What dnsstub_reply made of one datagram. */
struct dnsstub_result {
    struct dns_query q; /* the query, as far as it parsed */
    int parsed;         /* 1: q.name and q.qtype are the query's */
    const char *answer; /* one of the `dns_query` event's `answer` values (static) */
    int faulted;        /* the fail callback said NXDOMAIN */
    char error[256];    /* why it was refused or dropped, "" otherwise */
};

/* 1 when the name of q is to fail (NXDOMAIN); called once per parsed query of class IN. */
typedef int (*dnsstub_fail_fn)(void *arg, const struct dns_query *q);

/* The stub's answer to one datagram msg (len bytes) as the table above says: the reply's
 * length in out (size bytes; DNS_MSG_MAX is enough), or 0 when the datagram is dropped. r
 * says what happened. fail may be NULL (nothing fails). Pure: no I/O, allocates nothing. */
size_t dnsstub_reply(const uint8_t *msg, size_t len, dnsstub_fail_fn fail, void *arg, uint8_t *out,
                     size_t size, struct dnsstub_result *r);

#endif
