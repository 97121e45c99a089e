/*
 * dns: one DNS query parsed, one reply built (dns.h has the format and the refusals).
 */
#include <string.h>

#include "codec/dns.h"
#include "util/banned.h"

#define QR 0x8000u
#define AA 0x0400u
#define RD 0x0100u
#define RA 0x0080u

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* Reads the name at *off into out; *off moves past it (past the first pointer, when one). */
static int read_name(const uint8_t *msg, size_t len, size_t *off, char *out, struct err *e)
{
    size_t pos = *off, n = 0, hops = 0;
    int jumped = 0;

    for (;;) {
        unsigned b;
        if (pos >= len)
            return err_set(e, ERR_PARSE, "truncated name");
        b = msg[pos];
        if (b == 0) {
            pos++;
            break;
        }
        if ((b & 0xC0) == 0xC0) {
            size_t to;
            if (pos + 1 >= len)
                return err_set(e, ERR_PARSE, "truncated compression pointer");
            to = (size_t)(b & 0x3F) << 8 | msg[pos + 1];
            if (to >= pos || ++hops > DNS_HOPS_MAX)
                return err_set(e, ERR_PARSE, "compression pointer that does not point back");
            if (!jumped)
                *off = pos + 2;
            jumped = 1;
            pos = to;
            continue;
        }
        if (b & 0xC0)
            return err_set(e, ERR_PARSE, "reserved label type");
        if (pos + 1 + b > len)
            return err_set(e, ERR_PARSE, "truncated label");
        if (n + (n > 0) + b > DNS_NAME_MAX)
            return err_set(e, ERR_PARSE, "name longer than %d characters", DNS_NAME_MAX);
        if (n > 0)
            out[n++] = '.';
        for (unsigned i = 0; i < b; i++) {
            unsigned char c = msg[pos + 1 + i];
            if (c == '.' || c <= 0x20 || c >= 0x7f)
                return err_set(e, ERR_PARSE, "a label holds a byte names here never do");
            out[n++] = (char)c;
        }
        pos += 1 + b;
    }
    out[n] = '\0';
    if (!jumped)
        *off = pos;
    return 0;
}

int dns_parse_query(const uint8_t *msg, size_t len, struct dns_query *q, struct err *e)
{
    size_t off = 12;
    unsigned opcode;

    memset(q, 0, sizeof(*q));
    if (len > DNS_MSG_MAX)
        return err_set(e, ERR_LIMIT, "message of %zu bytes (at most %d)", len, DNS_MSG_MAX);
    if (len < 12)
        return err_set(e, ERR_PARSE, "message shorter than its header");
    q->id = get16(msg);
    q->flags = get16(msg + 2);
    opcode = (q->flags >> 11) & 0xF;
    if (q->flags & QR)
        return err_set(e, ERR_UNSUPPORTED, "a response, not a query");
    if (opcode != 0)
        return err_set(e, ERR_UNSUPPORTED, "opcode %u (only QUERY)", opcode);
    if (get16(msg + 4) != 1)
        return err_set(e, ERR_UNSUPPORTED, "%u questions (exactly one)", get16(msg + 4));
    if (read_name(msg, len, &off, q->name, e) != 0)
        return ERR_PARSE;
    if (off + 4 > len)
        return err_set(e, ERR_PARSE, "truncated question");
    q->qtype = get16(msg + off);
    q->qclass = get16(msg + off + 2);
    return 0;
}

/* The name in wire form; 0 or ERR_LIMIT. */
static int put_name(const char *name, uint8_t *out, size_t size, size_t *off)
{
    const char *p = name;

    while (*p) {
        const char *dot = strchr(p, '.');
        size_t l = dot ? (size_t)(dot - p) : strlen(p);
        if (l == 0 || l > 63 || *off + 1 + l > size)
            return ERR_LIMIT;
        out[(*off)++] = (uint8_t)l;
        memcpy(out + *off, p, l);
        *off += l;
        p += l + (dot != NULL);
    }
    if (*off + 1 > size)
        return ERR_LIMIT;
    out[(*off)++] = 0;
    return 0;
}

long dns_build_reply(const struct dns_query *q, int with_question, int rcode, const void *addr,
                     size_t addrlen, uint8_t *out, size_t size)
{
    size_t off = 12;
    int answer =
        with_question && addr && q->qclass == DNS_CLASS_IN &&
        ((q->qtype == DNS_TYPE_A && addrlen == 4) || (q->qtype == DNS_TYPE_AAAA && addrlen == 16));

    if (size < 12)
        return ERR_LIMIT;
    memset(out, 0, 12);
    put16(out, q->id);
    put16(out + 2, QR | AA | RA | (q->flags & RD) | ((unsigned)rcode & 0xF));
    put16(out + 4, with_question ? 1 : 0);
    put16(out + 6, answer ? 1 : 0);
    if (!with_question)
        return 12;
    if (put_name(q->name, out, size, &off) != 0 || off + 4 > size)
        return ERR_LIMIT;
    put16(out + off, q->qtype);
    put16(out + off + 2, q->qclass);
    off += 4;
    if (answer) {
        if (off + 12 + addrlen > size)
            return ERR_LIMIT;
        put16(out + off, 0xC000 | 12); /* the question's name */
        put16(out + off + 2, q->qtype);
        put16(out + off + 4, DNS_CLASS_IN);
        put16(out + off + 6, 0);
        put16(out + off + 8, DNS_TTL);
        put16(out + off + 10, (unsigned)addrlen);
        memcpy(out + off + 12, addr, addrlen);
        off += 12 + addrlen;
    }
    return (long)off;
}
