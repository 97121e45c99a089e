/*
 * url: the one parser of the http:// and https:// URLs the project dials (the agent's model
 * base URL, the control API URL, the controller's upstream origin).
 *
 * Accepted: scheme "http" or "https" (any case), "://", a host (a name, an IPv4 literal or a
 * bracketed IPv6 literal), an optional ":port" (1-65535), an optional path. The path is kept
 * as a prefix without its trailing '/' ("" or "/v1"), because every caller appends its own
 * request path to it. Refused: anything else, a query or fragment ('?', '#'), blanks or
 * control characters, user info ("user:password@": a secret has no place in a URL that ends
 * up in events and logs), a host of URL_HOST_MAX bytes or more, a path of URL_PATH_MAX bytes
 * or more.
 *
 * Error messages quote the URL with its user info replaced by "***" (url_redact), so that a
 * password pasted into a URL never reaches a message.
 */
#ifndef FAULTLINE_UTIL_URL_H
#define FAULTLINE_UTIL_URL_H

#include <stddef.h>

#include "util/err.h"

#define URL_HOST_MAX 256
#define URL_PATH_MAX 2048

struct url {
    int tls;                 /* https */
    char host[URL_HOST_MAX]; /* IPv6 literals without their brackets */
    char port[8];            /* "80"/"443" when the URL gives none */
    char path[URL_PATH_MAX]; /* the path, without a trailing '/': "" or "/v1" */
    int ipv6;                /* host was a bracketed literal */
};

/* Parses s into u (zeroed first). 0, or ERR_INVALID with e set ("bad URL 'x': why", the URL
 * redacted and cut to 200 bytes). */
int url_parse(const char *s, struct url *u, struct err *e);
/* "host:port" (IPv6 in brackets) into out, cut to n - 1 bytes. */
void url_authority(const struct url *u, char *out, size_t n);
/* The Host field for requests to u: the authority, without the port when it is the scheme's
 * default. */
void url_host_field(const struct url *u, char *out, size_t n);
/* The port as a number. */
int url_port(const struct url *u);
/* s for a message or an event: the user info of its authority (anything before an '@' there)
 * replaced by "***". Always NUL-terminates out (n > 0); never fails. */
void url_redact(const char *s, char *out, size_t n);

#endif
