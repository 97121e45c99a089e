/*
 * http: HTTP/1.1 head parsing and chunked decoding (see http.h for the format and the chunked
 * decoder's state table). Heads are copied out of the evbuffer once and split in place; the
 * decoder moves body bytes between evbuffers without copying where libevent can move chains.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec/http.h"
#include "util/num.h"
#include "util/banned.h"

void http_head_init(struct http_head *h)
{
    memset(h, 0, sizeof(*h));
    buf_init(&h->raw, 0);
}

void http_head_release(struct http_head *h)
{
    buf_release(&h->raw);
    free(h->fields);
    http_head_init(h);
}

static void head_reset(struct http_head *h)
{
    struct buf raw = h->raw;
    struct http_field *fields = h->fields;
    size_t afields = h->afields;

    memset(h, 0, sizeof(*h));
    h->raw = raw;
    buf_reset(&h->raw);
    h->fields = fields;
    h->afields = afields;
}

long http_head_find(struct evbuffer *in, size_t max, size_t *scanned)
{
    size_t have = evbuffer_get_length(in);
    struct evbuffer_ptr start, found;

    if (have < 4)
        return 0;
    if (*scanned > 3 && evbuffer_ptr_set(in, &start, *scanned - 3, EVBUFFER_PTR_SET) == 0)
        found = evbuffer_search(in, "\r\n\r\n", 4, &start);
    else
        found = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (found.pos >= 0) {
        if ((size_t)found.pos + 4 > max)
            return ERR_LIMIT;
        return (long)found.pos + 4;
    }
    *scanned = have;
    if (have >= max)
        return ERR_LIMIT;
    return 0;
}

/* RFC 9110 tchar. */
static int is_tchar(unsigned char ch)
{
    if (isalnum(ch))
        return 1;
    return ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static char *trim(char *s, char *end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *end = '\0';
    return s;
}

/* Splits the fields after the start line. p points at the first field line; end at the
 * final CRLF CRLF's second CRLF (the empty line). */
static int parse_fields(struct http_head *h, char *p, char *end, struct err *e)
{
    while (p < end) {
        char *eol = memchr(p, '\r', (size_t)(end - p));
        char *colon, *name_end;

        if (eol == NULL)
            eol = end;
        if (eol < end && eol[1] != '\n')
            return err_set(e, ERR_PARSE, "bare CR in a header field");
        if (*p == ' ' || *p == '\t')
            return err_set(e, ERR_PARSE, "obsolete line folding in a header field");
        colon = memchr(p, ':', (size_t)(eol - p));
        if (colon == NULL || colon == p)
            return err_set(e, ERR_PARSE, "header field without a name");
        for (name_end = p; name_end < colon; name_end++)
            if (!is_tchar((unsigned char)*name_end))
                return err_set(e, ERR_PARSE, "invalid character in a header field name");
        for (char *v = colon + 1; v < eol; v++)
            if ((unsigned char)*v < 0x20 && *v != '\t')
                return err_set(e, ERR_PARSE, "control character in a header field value");
        if (h->nfields == HTTP_FIELDS_MAX)
            return err_set(e, ERR_PARSE, "more than %d header fields", HTTP_FIELDS_MAX);
        if (h->nfields == h->afields) {
            h->afields = h->afields ? h->afields * 2 : 16;
            h->fields = xrealloc(h->fields, h->afields * sizeof(*h->fields));
        }
        *colon = '\0';
        h->fields[h->nfields].name = p;
        h->fields[h->nfields].value = trim(colon + 1, eol);
        h->nfields++;
        p = eol + 2;
    }
    return 0;
}

/* Fills framing, content_length, keep_alive and expect_continue from the fields.
 * is_request selects the request rules (no read-until-close body). */
static int parse_framing(struct http_head *h, int is_request, struct err *e)
{
    const char *te = NULL, *cl = NULL, *conn = NULL;

    for (size_t i = 0; i < h->nfields; i++) {
        const struct http_field *f = &h->fields[i];
        if (strcasecmp(f->name, "transfer-encoding") == 0) {
            if (te != NULL)
                return err_set(e, ERR_PARSE, "more than one Transfer-Encoding field");
            te = f->value;
        } else if (strcasecmp(f->name, "content-length") == 0) {
            if (cl != NULL && strcmp(cl, f->value) != 0)
                return err_set(e, ERR_PARSE, "conflicting Content-Length fields");
            cl = f->value;
        } else if (strcasecmp(f->name, "connection") == 0) {
            conn = f->value;
        } else if (is_request && strcasecmp(f->name, "expect") == 0) {
            if (strcasecmp(f->value, "100-continue") == 0)
                h->expect_continue = 1;
        }
    }
    if (h->minor >= 1)
        h->keep_alive = !(conn && http_list_has(conn, "close"));
    else
        h->keep_alive = conn && http_list_has(conn, "keep-alive");

    if (te != NULL) {
        if (cl != NULL && is_request)
            return err_set(e, ERR_PARSE, "both Transfer-Encoding and Content-Length");
        if (cl != NULL)
            h->keep_alive = 0; /* RFC 9112 6.3: the framing is in doubt; do not reuse */
        if (strcasecmp(te, "chunked") == 0) {
            h->framing = HTTP_BODY_CHUNKED;
        } else if (is_request) {
            return err_set(e, ERR_UNSUPPORTED, "unsupported transfer coding '%.64s'", te);
        } else {
            h->framing = HTTP_BODY_CLOSE; /* RFC 9112 6.3: read until the connection closes */
            h->keep_alive = 0;
        }
        return 0;
    }
    if (cl != NULL) {
        long long n;
        if (cl[0] < '0' || cl[0] > '9' || num_parse_ll(cl, 0, (long long)1 << 53, &n) != 0)
            return err_set(e, ERR_PARSE, "invalid Content-Length '%.32s'", cl);
        h->framing = HTTP_BODY_LENGTH;
        h->content_length = (uint64_t)n;
        if (n == 0)
            h->framing = HTTP_BODY_NONE;
        return 0;
    }
    if (is_request) {
        h->framing = HTTP_BODY_NONE;
    } else {
        h->framing = HTTP_BODY_CLOSE;
        h->keep_alive = 0;
    }
    return 0;
}

/* Reads "HTTP/1.0" or "HTTP/1.1". Returns 0, or ERR_PARSE (the caller says where). */
static int parse_version(const char *v, int *minor)
{
    if (strncmp(v, "HTTP/1.", 7) != 0 || (v[7] != '0' && v[7] != '1') || v[8] != '\0')
        return ERR_PARSE;
    *minor = v[7] - '0';
    return 0;
}

/* Copies len bytes of in into h->raw and returns the start line's end (its CR), or NULL. */
static char *take_head(struct http_head *h, struct evbuffer *in, size_t len, struct err *e)
{
    char *eol;

    head_reset(h);
    if (buf_grow(&h->raw, len) != 0) {
        evbuffer_drain(in, len);
        err_set(e, ERR_LIMIT, "head too large");
        return NULL;
    }
    if (evbuffer_remove(in, h->raw.data, len) != (int)len) {
        err_set(e, ERR_PARSE, "short head");
        return NULL;
    }
    h->raw.len = len;
    h->raw.data[len] = '\0';
    if (memchr(h->raw.data, '\0', len) != NULL) {
        err_set(e, ERR_PARSE, "NUL byte in a head");
        return NULL;
    }
    eol = strstr(h->raw.data, "\r\n");
    return eol; /* never NULL: the head ends with CRLF CRLF */
}

int http_head_parse_request(struct http_head *h, struct evbuffer *in, size_t len, struct err *e)
{
    char *eol = take_head(h, in, len, e);
    char *sp1, *sp2, *end;

    if (eol == NULL)
        return e && e->code ? e->code : ERR_PARSE;
    *eol = '\0';
    sp1 = strchr(h->raw.data, ' ');
    sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (sp1 == NULL || sp2 == NULL || strchr(sp2 + 1, ' ') != NULL)
        return err_set(e, ERR_PARSE, "malformed request line");
    *sp1 = '\0';
    *sp2 = '\0';
    h->method = h->raw.data;
    h->target = sp1 + 1;
    for (const char *m = h->method; *m; m++)
        if (!is_tchar((unsigned char)*m))
            return err_set(e, ERR_PARSE, "invalid request method");
    if (h->method[0] == '\0' || h->target[0] == '\0')
        return err_set(e, ERR_PARSE, "malformed request line");
    for (const char *t = h->target; *t; t++)
        if ((unsigned char)*t <= 0x20 || (unsigned char)*t == 0x7f)
            return err_set(e, ERR_PARSE, "invalid character in the request target");
    if (parse_version(sp2 + 1, &h->minor) != 0)
        return err_set(e, ERR_PARSE, "unsupported HTTP version");
    end = h->raw.data + len - 2; /* the empty line's CRLF */
    if (parse_fields(h, eol + 2, end, e) != 0)
        return e ? e->code : ERR_PARSE;
    return parse_framing(h, 1, e);
}

int http_head_parse_response(struct http_head *h, struct evbuffer *in, size_t len,
                             const char *req_method, struct err *e)
{
    char *eol = take_head(h, in, len, e);
    char *sp1, *end;
    long long status;
    char code[4];
    int rc;

    if (eol == NULL)
        return e && e->code ? e->code : ERR_PARSE;
    *eol = '\0';
    sp1 = strchr(h->raw.data, ' ');
    if (sp1 == NULL)
        return err_set(e, ERR_PARSE, "malformed status line");
    *sp1 = '\0';
    if (parse_version(h->raw.data, &h->minor) != 0)
        return err_set(e, ERR_PARSE, "unsupported HTTP version in the status line");
    if (strlen(sp1 + 1) < 3 || (sp1[4] != ' ' && sp1[4] != '\0'))
        return err_set(e, ERR_PARSE, "malformed status code");
    memcpy(code, sp1 + 1, 3);
    code[3] = '\0';
    if (!isdigit((unsigned char)code[0]) || num_parse_ll(code, 100, 999, &status) != 0)
        return err_set(e, ERR_PARSE, "malformed status code");
    h->status = (int)status;
    h->reason = sp1[4] == ' ' ? sp1 + 5 : "";
    end = h->raw.data + len - 2;
    if (parse_fields(h, eol + 2, end, e) != 0)
        return e ? e->code : ERR_PARSE;
    rc = parse_framing(h, 0, e);
    if (rc != 0)
        return rc;
    if ((h->status >= 100 && h->status < 200) || h->status == 204 || h->status == 304 ||
        (req_method && strcmp(req_method, "HEAD") == 0)) {
        /* No body whatever the fields say, so no read-until-close either: the connection
         * stays as its Connection field (and the version) says, unless the framing fields
         * contradict each other. */
        const char *conn = http_head_get(h, "connection");
        if (h->framing == HTTP_BODY_CLOSE && !http_head_get(h, "transfer-encoding"))
            h->keep_alive = h->minor >= 1 ? !(conn && http_list_has(conn, "close"))
                                          : conn && http_list_has(conn, "keep-alive");
        h->framing = HTTP_BODY_NONE;
        if (h->status >= 100 && h->status < 200)
            h->keep_alive = 1; /* an interim response: the final one follows */
    }
    return 0;
}

const char *http_head_get(const struct http_head *h, const char *name)
{
    for (size_t i = 0; i < h->nfields; i++)
        if (strcasecmp(h->fields[i].name, name) == 0)
            return h->fields[i].value;
    return NULL;
}

int http_list_has(const char *list, const char *token)
{
    size_t tl = strlen(token);
    const char *p = list;

    while (*p) {
        const char *start, *end;
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        start = p;
        while (*p && *p != ',')
            p++;
        end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if ((size_t)(end - start) == tl && strncasecmp(start, token, tl) == 0)
            return 1;
    }
    return 0;
}

int http_is_hop_field(const char *name)
{
    static const char *const hop[] = {"connection",
                                      "keep-alive",
                                      "proxy-connection",
                                      "proxy-authenticate",
                                      "proxy-authorization",
                                      "te",
                                      "trailer",
                                      "transfer-encoding",
                                      "upgrade",
                                      "content-length",
                                      "host",
                                      "expect"};
    for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
        if (strcasecmp(name, hop[i]) == 0)
            return 1;
    return 0;
}

const char *http_reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 529:
        return "Site Overloaded";
    default:
        return status < 300   ? "OK"
               : status < 400 ? "Redirect"
               : status < 500 ? "Error"
                              : "Server Error";
    }
}

void http_chunked_init(struct http_chunked *c)
{
    memset(c, 0, sizeof(*c));
    c->state = HTTP_CHUNK_SIZE;
}

/* chunk_line's "no whole line yet": more input is needed. Not an error code. */
#define CHUNK_LINE_MORE (-100L)

/* Finds a CRLF-terminated line at the start of in. Returns its length without the CRLF,
 * CHUNK_LINE_MORE when more input is needed, ERR_LIMIT when longer than max. */
static long chunk_line(struct evbuffer *in, size_t max)
{
    size_t eol_len = 0;
    struct evbuffer_ptr p = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_CRLF_STRICT);

    if (p.pos < 0) /* a line of max bytes may wait for its "\n" after its "\r" */
        return evbuffer_get_length(in) > max + 1 ? ERR_LIMIT : CHUNK_LINE_MORE;
    if ((size_t)p.pos > max)
        return ERR_LIMIT;
    return (long)p.pos;
}

int http_chunked_decode(struct http_chunked *c, struct evbuffer *in, struct evbuffer *out,
                        size_t max_out, struct err *e)
{
    size_t moved = 0;

    for (;;) {
        switch (c->state) {
        case HTTP_CHUNK_SIZE: {
            char line[HTTP_CHUNK_LINE_MAX + 1];
            long n = chunk_line(in, HTTP_CHUNK_LINE_MAX);
            uint64_t size = 0;
            int digits = 0;
            const char *p;

            if (n == ERR_LIMIT)
                return err_set(e, ERR_LIMIT, "chunk size line too long");
            if (n == CHUNK_LINE_MORE)
                return 0;
            evbuffer_copyout(in, line, (size_t)n);
            line[n] = '\0';
            for (p = line; p < line + n; p++) {
                int d = num_hexval((unsigned char)*p);
                if (d < 0)
                    break;
                if (++digits > 15)
                    return err_set(e, ERR_PARSE, "chunk size too large");
                size = size * 16 + (uint64_t)d;
            }
            if (digits == 0)
                return err_set(e, ERR_PARSE, "malformed chunk size");
            /* chunk-size [BWS ";" chunk-ext] CRLF (RFC 9112 7.1.1): after the digits only
             * blanks, then nothing or extensions of visible characters and blanks. */
            while (p < line + n && (*p == ' ' || *p == '\t'))
                p++;
            if (p < line + n && *p != ';')
                return err_set(e, ERR_PARSE, "malformed chunk size");
            for (; p < line + n; p++)
                if ((unsigned char)*p < 0x20 ? *p != '\t' : *p == 0x7f)
                    return err_set(e, ERR_PARSE, "control character in a chunk extension");
            if (c->max_body && size > c->max_body - c->announced)
                return err_set(e, ERR_LIMIT, "chunked body over the limit of %llu bytes",
                               (unsigned long long)c->max_body);
            c->announced += size;
            evbuffer_drain(in, (size_t)n + 2);
            c->remaining = size;
            c->state = size ? HTTP_CHUNK_DATA : HTTP_CHUNK_TRAILER;
            break;
        }
        case HTTP_CHUNK_DATA: {
            size_t have = evbuffer_get_length(in);
            size_t take = c->remaining < have ? (size_t)c->remaining : have;
            if (max_out && take > max_out - moved)
                take = max_out - moved;
            if (take == 0)
                return 0;
            evbuffer_remove_buffer(in, out, take);
            moved += take;
            c->remaining -= take;
            if (c->remaining == 0)
                c->state = HTTP_CHUNK_DATA_END;
            break;
        }
        case HTTP_CHUNK_DATA_END: {
            char crlf[2];
            if (evbuffer_get_length(in) < 2)
                return 0;
            evbuffer_copyout(in, crlf, 2);
            if (crlf[0] != '\r' || crlf[1] != '\n')
                return err_set(e, ERR_PARSE, "chunk data not followed by CRLF");
            evbuffer_drain(in, 2);
            c->state = HTTP_CHUNK_SIZE;
            break;
        }
        case HTTP_CHUNK_TRAILER: {
            long n = chunk_line(in, HTTP_HEAD_MAX_DEFAULT);
            if (n == ERR_LIMIT)
                return err_set(e, ERR_LIMIT, "chunked trailer too long");
            if (n == CHUNK_LINE_MORE)
                return 0;
            evbuffer_drain(in, (size_t)n + 2);
            c->trailer_bytes += (size_t)n + 2;
            if (c->trailer_bytes > HTTP_HEAD_MAX_DEFAULT)
                return err_set(e, ERR_LIMIT, "chunked trailer too long");
            if (n == 0)
                c->state = HTTP_CHUNK_DONE;
            break;
        }
        case HTTP_CHUNK_DONE:
            return 1;
        }
    }
}
