/*
 * fuzz_egress_head: what the egress proxy reads from a client before it dials anything: the
 * request head (codec/http.h, with the proxy's EGRESS_HEAD_MAX limit), then its target as a
 * CONNECT authority or an absolute-form URL (control/egress.h); and the same bytes as a
 * --resolve entry.
 *
 * Input: a request head and whatever follows it.
 *
 * Invariants (abort on violation):
 * - A target accepted has a host of 1..EGRESS_HOST_MAX bytes of lowercase letters, digits, '-',
 *   '.', '_' (and ':' for IPv6 only: then no port came without brackets) and a port in
 *   1..65535; an absolute-form path starts with '/' or '?' and lies inside the target.
 * - A refused target has a message and ERR_PARSE (ERR_UNSUPPORTED for https only).
 * - A --resolve entry accepted has a host of the same alphabet without ':', a port 0..65535 and
 *   an IPv4 or IPv6 address; a refused one ERR_INVALID and a message.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <event2/buffer.h>

#include "codec/http.h"
#include "control/egress.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

static void check_host(const char *h, int colon_ok)
{
    size_t n = strlen(h);

    CHECK(n >= 1 && n <= EGRESS_HOST_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)h[i];
        CHECK(islower(c) || isdigit(c) || c == '-' || c == '.' || c == '_' ||
              (colon_ok && c == ':'));
    }
}

static void check_target(const char *target)
{
    struct egress_target t;
    struct err e = {0};
    int rc = egress_parse_authority(target, &t, &e);

    if (rc == 0) {
        check_host(t.host, 1);
        CHECK(t.port >= 1 && t.port <= 65535);
    } else {
        CHECK(rc == ERR_PARSE && e.msg[0]);
    }
    memset(&e, 0, sizeof(e));
    rc = egress_parse_absolute(target, &t, &e);
    if (rc == 0) {
        check_host(t.host, 1);
        CHECK(t.port >= 1 && t.port <= 65535);
        CHECK(t.path[0] == '/' || t.path[0] == '?');
        CHECK((t.path >= target && t.path < target + strlen(target)) || strcmp(t.path, "/") == 0);
    } else {
        CHECK((rc == ERR_PARSE ||
               (rc == ERR_UNSUPPORTED && strncasecmp(target, "https://", 8) == 0)) &&
              e.msg[0]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct evbuffer *in = evbuffer_new();
    struct http_head h;
    struct egress_resolve r;
    struct err e = {0};
    size_t scanned = 0;
    long len;
    char *s;
    int rc;

    http_head_init(&h);
    evbuffer_add(in, data, size);
    len = http_head_find(in, EGRESS_HEAD_MAX, &scanned);
    CHECK(len == 0 || len == ERR_LIMIT || (len > 0 && (size_t)len <= EGRESS_HEAD_MAX));
    if (len > 0 && http_head_parse_request(&h, in, (size_t)len, &e) == 0)
        check_target(h.target);

    s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    check_target(s);
    memset(&e, 0, sizeof(e));
    rc = egress_resolve_parse(s, &r, &e);
    if (rc == 0) {
        check_host(r.host, 0);
        CHECK(r.port >= 0 && r.port <= 65535);
        CHECK(r.addr.ss_family == AF_INET || r.addr.ss_family == AF_INET6);
    } else {
        CHECK(rc == ERR_INVALID && e.msg[0]);
    }
    free(s);
    http_head_release(&h);
    evbuffer_free(in);
    return 0;
}
