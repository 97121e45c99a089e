/*
 * sni: the server name a TLS ClientHello asks for (RFC 8446 4.1.2, RFC 6066 3), read before
 * any TLS is spoken so that a connection to the transparent listener on :443 can be routed by
 * it. Untrusted input: every length is checked against the bytes it lies in.
 *
 * A record: type 22 (handshake), a version, a length (at most SNI_RECORD_MAX), then the
 * handshake message: type 1 (ClientHello), a 24-bit length that must fit the record (a
 * ClientHello split over records is refused), the legacy version, 32 random bytes, the session
 * id (at most 32), the cipher suites (even, at least 2), the compression methods (at least 1),
 * and the extensions. Extension 0 (server_name) holds a list whose host_name entry (type 0) is
 * the name: 1..SNI_HOST_MAX bytes of letters, digits, '-', '.', '_', returned lowercase
 * without a final dot.
 */
#ifndef FAULTLINE_CODEC_SNI_H
#define FAULTLINE_CODEC_SNI_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define SNI_RECORD_MAX 16384 /* a TLS record's plaintext */
#define SNI_HOST_MAX 253

/* How many bytes the first record takes, its 5-byte header included: *need is 5 until the
 * header is there, then 5 + its length. 0, or ERR_PARSE with e set when p does not start a
 * TLS handshake record (or announces more than SNI_RECORD_MAX bytes). */
int sni_record_need(const uint8_t *p, size_t n, size_t *need, struct err *e);

/* Reads the name out of the record at p (n bytes, at least sni_record_need's). 0 with host
 * (SNI_HOST_MAX + 1 bytes) filled; ERR_NOTFOUND when the ClientHello names no host;
 * ERR_PARSE when it is malformed (e says what first); ERR_UNSUPPORTED when the ClientHello
 * does not fit its first record. Allocates nothing. */
int sni_parse(const uint8_t *p, size_t n, char *host, struct err *e);

#endif
