/*
 * url: http(s) URL parsing and redaction (see url.h for what is accepted). A single pass over
 * the string: scheme, authority up to the first '/', then the path; no allocation.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/url.h"
#include "util/num.h"
#include "util/banned.h"

void url_redact(const char *s, char *out, size_t n)
{
    const char *sep = strstr(s, "://");
    const char *auth = sep ? sep + 3 : s;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;

    if (n == 0)
        return;
    for (const char *p = auth; p < auth + alen; p++)
        if (*p == '@')
            at = p;
    if (at == NULL)
        snprintf(out, n, "%s", s);
    else
        snprintf(out, n, "%.*s***%s", (int)(auth - s), s, at);
}

/* Sets e to "bad URL 'shown': why" (shown = the URL redacted) and returns ERR_INVALID. */
static int bad(struct err *e, const char *s, const char *why)
{
    char shown[201];

    url_redact(s, shown, sizeof(shown));
    return err_set(e, ERR_INVALID, "bad URL '%s': %s", shown, why);
}

int url_parse(const char *s, struct url *u, struct err *e)
{
    const char *p, *host, *host_end, *port = NULL, *path;
    size_t n;

    memset(u, 0, sizeof(*u));
    if (s == NULL || *s == '\0')
        return err_set(e, ERR_INVALID, "bad URL '': empty");
    if (strncasecmp(s, "http://", 7) == 0) {
        p = s + 7;
    } else if (strncasecmp(s, "https://", 8) == 0) {
        p = s + 8;
        u->tls = 1;
    } else {
        return bad(e, s, "not http:// or https://");
    }
    for (const char *c = s; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f || *c == '?' || *c == '#')
            return bad(e, s, "query, fragment, blank or control character");
    path = strchr(p, '/');
    if (path == NULL)
        path = p + strlen(p);
    if (memchr(p, '@', (size_t)(path - p)))
        return bad(e, s, "credentials in the URL");
    if (*p == '[') {
        host = p + 1;
        host_end = memchr(host, ']', (size_t)(path - host));
        if (host_end == NULL)
            return bad(e, s, "unclosed '['");
        u->ipv6 = 1;
        if (host_end[1] == ':')
            port = host_end + 2;
        else if (host_end + 1 != path)
            return bad(e, s, "junk after ']'");
    } else {
        host = p;
        host_end = memchr(p, ':', (size_t)(path - p));
        if (host_end)
            port = host_end + 1;
        else
            host_end = path;
    }
    n = (size_t)(host_end - host);
    if (n == 0 || n >= sizeof(u->host))
        return bad(e, s, "empty or long host");
    memcpy(u->host, host, n);
    if (port) {
        long long v;
        char tmp[16];
        size_t pn = (size_t)(path - port);
        if (pn == 0 || pn >= sizeof(tmp))
            return bad(e, s, "bad port");
        memcpy(tmp, port, pn);
        tmp[pn] = '\0';
        if (tmp[0] < '0' || tmp[0] > '9' || num_parse_ll(tmp, 1, 65535, &v) < 0)
            return bad(e, s, "bad port");
        snprintf(u->port, sizeof(u->port), "%lld", v);
    } else {
        snprintf(u->port, sizeof(u->port), "%s", u->tls ? "443" : "80");
    }
    n = strlen(path);
    while (n > 0 && path[n - 1] == '/')
        n--;
    if (n >= sizeof(u->path))
        return bad(e, s, "path too long");
    memcpy(u->path, path, n);
    u->path[n] = '\0';
    return 0;
}

void url_authority(const struct url *u, char *out, size_t n)
{
    snprintf(out, n, u->ipv6 ? "[%s]:%s" : "%s:%s", u->host, u->port);
}

void url_host_field(const struct url *u, char *out, size_t n)
{
    if (strcmp(u->port, u->tls ? "443" : "80") == 0)
        snprintf(out, n, u->ipv6 ? "[%s]" : "%s", u->host);
    else
        url_authority(u, out, n);
}

int url_port(const struct url *u)
{
    long long v = 0;

    (void)num_parse_ll(u->port, 1, 65535, &v);
    return (int)v;
}
