/*
 * transparent: the controller's listeners for clients that ignore the proxy variables
 * (docs/egress.md "Transparent mode"). The DNS stub (dnsstub.h) answers every name with the
 * sandbox's loopback address, where the sandbox binds 127.0.0.1:80 and 127.0.0.1:443 and the
 * controller accepts on them (controller_config transparent_http_fd / transparent_tls_fd):
 *
 *   :80    handed to the egress proxy at once (egress_adopt EGRESS_ADOPT_HTTP): an origin-form
 *          request whose Host field names the destination
 *   :443   the first TLS record is read (at most 5 + SNI_RECORD_MAX bytes, the controller's
 *          client timeout), its ClientHello's SNI parsed (codec/sni.h) and the connection,
 *          those bytes still unread, handed to egress_adopt EGRESS_ADOPT_TLS
 *
 * A :443 connection that sends no TLS, a ClientHello without SNI, a malformed or split one,
 * or nothing in time is closed with an egress_request event (`mode: transparent`, `method:
 * TLS`, host `?`, status 0, the reason in `error`). Connections still being read count
 * against the controller's max_conns.
 */
#ifndef FAULTLINE_CONTROL_TRANSPARENT_H
#define FAULTLINE_CONTROL_TRANSPARENT_H

struct ctl_handler;

/* Registered when a transparent listener is configured; serves its own sockets. */
extern const struct ctl_handler transparent_handler;

#endif
