/*
 * sni: the server name of a TLS ClientHello (sni.h has the format and the refusals). A cursor
 * over the record: each read checks what is left first.
 */
#include <ctype.h>
#include <string.h>

#include "codec/sni.h"
#include "util/banned.h"

struct cur {
    const uint8_t *p;
    size_t n;
};

static int take(struct cur *c, size_t k, struct cur *out)
{
    if (k > c->n)
        return ERR_PARSE;
    if (out) {
        out->p = c->p;
        out->n = k;
    }
    c->p += k;
    c->n -= k;
    return 0;
}

static int num(struct cur *c, size_t width, size_t *v)
{
    struct cur b;

    if (take(c, width, &b) != 0)
        return ERR_PARSE;
    *v = 0;
    for (size_t i = 0; i < width; i++)
        *v = *v << 8 | b.p[i];
    return 0;
}

/* A vector: a width-byte length then that many bytes. */
static int vec(struct cur *c, size_t width, struct cur *out)
{
    size_t len;

    return num(c, width, &len) != 0 || take(c, len, out) != 0 ? ERR_PARSE : 0;
}

int sni_record_need(const uint8_t *p, size_t n, size_t *need, struct err *e)
{
    size_t len;

    *need = 5;
    if (n >= 1 && p[0] != 22)
        return err_set(e, ERR_PARSE, "not a TLS handshake record");
    if (n >= 2 && p[1] != 3)
        return err_set(e, ERR_PARSE, "not a TLS record version");
    if (n < 5)
        return 0;
    len = (size_t)p[3] << 8 | p[4];
    if (len == 0 || len > SNI_RECORD_MAX)
        return err_set(e, ERR_PARSE, "a TLS record of %zu bytes", len);
    *need = 5 + len;
    return 0;
}

static int host_name(struct cur name, char *host, struct err *e)
{
    size_t n = name.n;

    if (n > 0 && name.p[n - 1] == '.')
        n--;
    if (n == 0 || n > SNI_HOST_MAX)
        return err_set(e, ERR_PARSE, "a server name of %zu bytes", name.n);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = name.p[i];
        if (!(isalnum(ch) || ch == '-' || ch == '.' || ch == '_'))
            return err_set(e, ERR_PARSE, "a server name with a byte names never hold");
        host[i] = (char)tolower(ch);
    }
    host[n] = '\0';
    return 0;
}

int sni_parse(const uint8_t *p, size_t n, char *host, struct err *e)
{
    struct cur rec = {p, n}, hs, body, x, exts, ext, list, ent;
    size_t need, type, len;

    host[0] = '\0';
    if (sni_record_need(p, n, &need, e) != 0)
        return ERR_PARSE;
    if (n < need || need == 5)
        return err_set(e, ERR_PARSE, "a truncated TLS record");
    take(&rec, 5, NULL);
    rec.n = need - 5;
    if (num(&rec, 1, &type) != 0 || type != 1)
        return err_set(e, ERR_PARSE, "not a ClientHello");
    if (num(&rec, 3, &len) != 0)
        return err_set(e, ERR_PARSE, "a truncated handshake header");
    if (len > rec.n)
        return err_set(e, ERR_UNSUPPORTED, "a ClientHello of %zu bytes over several records", len);
    take(&rec, len, &hs);
    body = hs;
    if (take(&body, 2 + 32, NULL) != 0 || vec(&body, 1, &x) != 0 || x.n > 32)
        return err_set(e, ERR_PARSE, "a malformed ClientHello (random or session id)");
    if (vec(&body, 2, &x) != 0 || x.n < 2 || x.n % 2)
        return err_set(e, ERR_PARSE, "a malformed ClientHello (cipher suites)");
    if (vec(&body, 1, &x) != 0 || x.n < 1)
        return err_set(e, ERR_PARSE, "a malformed ClientHello (compression methods)");
    if (body.n == 0)
        return err_set(e, ERR_NOTFOUND, "the ClientHello has no extensions");
    if (vec(&body, 2, &exts) != 0)
        return err_set(e, ERR_PARSE, "a malformed ClientHello (extensions)");
    while (exts.n > 0) {
        if (num(&exts, 2, &type) != 0 || vec(&exts, 2, &ext) != 0)
            return err_set(e, ERR_PARSE, "a malformed extension");
        if (type != 0)
            continue;
        if (vec(&ext, 2, &list) != 0 || ext.n != 0)
            return err_set(e, ERR_PARSE, "a malformed server_name extension");
        while (list.n > 0) {
            if (num(&list, 1, &type) != 0 || vec(&list, 2, &ent) != 0)
                return err_set(e, ERR_PARSE, "a malformed server_name entry");
            if (type != 0)
                continue;
            return host_name(ent, host, e) != 0 ? ERR_PARSE : 0;
        }
        return err_set(e, ERR_NOTFOUND, "the server_name extension names no host");
    }
    return err_set(e, ERR_NOTFOUND, "the ClientHello names no host (no SNI)");
}
