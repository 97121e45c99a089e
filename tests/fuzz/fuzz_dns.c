/*
 * fuzz_dns: the egress DNS stub's message parser and reply builder (codec/dns.h) on untrusted
 * bytes: the input is one UDP payload as a client inside the sandbox may send it.
 *
 * Invariants (abort on violation):
 * - A refusal is ERR_PARSE, ERR_LIMIT or ERR_UNSUPPORTED with a message; ERR_LIMIT only past
 *   DNS_MSG_MAX bytes.
 * - A query accepted has a name of at most DNS_NAME_MAX characters, printable, without empty
 *   labels, and a header-only reply is 12 bytes.
 * - Its reply (an A answer of 127.0.0.1) fits DNS_MSG_MAX, and read back as a query (QR
 *   cleared) gives the same id, name, type and class: the question is re-encoded faithfully.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/dns.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t out[DNS_MSG_MAX];
    const uint8_t lo[4] = {127, 0, 0, 1};
    struct dns_query q, back;
    struct err e = {0};
    int rc = dns_parse_query(data, size, &q, &e);
    long n;

    if (rc != 0) {
        CHECK((rc == ERR_PARSE || rc == ERR_UNSUPPORTED || rc == ERR_LIMIT) && e.msg[0]);
        CHECK(rc != ERR_LIMIT || size > DNS_MSG_MAX);
        if (size >= 12)
            CHECK(dns_build_reply(&q, 0, DNS_RCODE_FORMERR, NULL, 0, out, sizeof(out)) == 12);
        return 0;
    }
    size_t len = strlen(q.name);
    CHECK(len <= DNS_NAME_MAX);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)q.name[i];
        CHECK(c > 0x20 && c < 0x7f);
        if (c == '.')
            CHECK(i > 0 && i + 1 < len && q.name[i + 1] != '.');
    }
    n = dns_build_reply(&q, 1, DNS_RCODE_NOERROR, lo, 4, out, sizeof(out));
    CHECK(n >= 12 + 1 + 4 && (size_t)n <= sizeof(out));
    out[2] &= 0x7f; /* QR off: read it back as a query */
    memset(&e, 0, sizeof(e));
    CHECK(dns_parse_query(out, (size_t)n, &back, &e) == 0);
    CHECK(back.id == q.id && back.qtype == q.qtype && back.qclass == q.qclass);
    CHECK(strcmp(back.name, q.name) == 0);
    return 0;
}
