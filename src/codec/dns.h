/*
 * dns: the DNS messages the egress DNS stub reads and writes (RFC 1035): one query in, one
 * answer out. Untrusted input: every length is checked against the message before it is read.
 *
 * A query is a 12-byte header (id, flags, four counts) and, at offset 12, one question: a name
 * as labels (a length byte 1..63 then that many bytes; a zero byte ends it; a byte 0xC0|hi, lo
 * is a compression pointer to an earlier offset), then QTYPE and QCLASS. dns_parse_query takes
 * exactly that and refuses the rest with a code the stub answers with:
 *
 *   shorter than the header or the question, a bad label byte, a pointer that does not point
 *   strictly backwards (loops), a name over DNS_NAME_MAX characters      ERR_PARSE  (FORMERR)
 *   a message over DNS_MSG_MAX bytes                                       ERR_LIMIT  (dropped)
 *   a response (QR set), an opcode other than QUERY, QDCOUNT other than 1  ERR_UNSUPPORTED
 *                                                                          (NOTIMP / FORMERR)
 * Records after the question (an EDNS OPT record in the additional section) are ignored.
 *
 * dns_build_reply writes the answer: the query's id and RD flag, QR AA RA set, the rcode, the
 * question re-encoded from the parsed name (no pointers), and for an A or AAAA question with
 * an address of that family one answer record (a pointer to the question's name, TTL
 * DNS_TTL). Any other type gets no answer (NODATA, rcode NOERROR).
 */
#ifndef FAULTLINE_CODEC_DNS_H
#define FAULTLINE_CODEC_DNS_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define DNS_MSG_MAX 4096 /* bytes of a query the stub reads (EDNS payload sizes go this far) */
#define DNS_NAME_MAX 253 /* characters of a name in dotted form, without the final dot */
#define DNS_HOPS_MAX 16  /* compression pointers followed in one name */
#define DNS_TTL 5        /* seconds: answers are not meant to be kept */

#define DNS_TYPE_A 1
#define DNS_TYPE_AAAA 28
#define DNS_CLASS_IN 1

#define DNS_RCODE_NOERROR 0
#define DNS_RCODE_FORMERR 1
#define DNS_RCODE_SERVFAIL 2
#define DNS_RCODE_NXDOMAIN 3
#define DNS_RCODE_NOTIMP 4
#define DNS_RCODE_REFUSED 5

struct dns_query {
    uint16_t id;
    uint16_t flags;              /* as received */
    char name[DNS_NAME_MAX + 1]; /* dotted, case kept (clients check it), "" for the root */
    uint16_t qtype, qclass;
};

/* Parses one query (see above). The id and flags are filled as soon as the header is there,
 * so a refusal can still be answered. 0, or ERR_PARSE / ERR_LIMIT / ERR_UNSUPPORTED with e
 * set. Allocates nothing. */
int dns_parse_query(const uint8_t *msg, size_t len, struct dns_query *q, struct err *e);

/* Writes the reply to q into out (size bytes): rcode, and addr (4 bytes for A, 16 for AAAA;
 * NULL or another length: no answer record). With with_question 0 (a query that did not
 * parse) the reply has the header only. Returns the reply's length, or ERR_LIMIT when it does
 * not fit. */
long dns_build_reply(const struct dns_query *q, int with_question, int rcode, const void *addr,
                     size_t addrlen, uint8_t *out, size_t size);

#endif
