/*
 * client: see client.h.
 *
 * A request is: (re)connect if needed, send the whole request, then read the head (status line
 * and headers, at most HEAD_MAX bytes) and the body, all against one deadline. Reuse of a kept
 * connection is decided before sending: a kept socket that is readable (EOF, or stray bytes)
 * is closed and a new one opened, so a request that reached the controller is never resent.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control/client.h"
#include "experiment/catalog.h"
#include "util/num.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define HEAD_MAX (16 * 1024)

struct control_client {
    char *host; /* without brackets */
    char *port;
    char *prefix; /* "" or "/something" without a trailing '/' */
    char *hosthdr;
    int fd;
    int connect_ms, io_ms;
    size_t max_response;
};

struct control_client *control_client_new(const char *url, struct err *e)
{
    struct control_client *c;
    const char *p, *hend, *pstart = NULL, *slash;
    char *host, *port;
    long long pn;

    if (url == NULL || strncmp(url, "http://", 7) != 0) {
        err_set(e, ERR_INVALID, "control URL '%s' is not an http:// URL", url ? url : "");
        return NULL;
    }
    p = url + 7;
    slash = strchr(p, '/');
    if (slash == NULL)
        slash = p + strlen(p);
    if (*p == '[') {
        hend = memchr(p, ']', (size_t)(slash - p));
        if (hend == NULL) {
            err_set(e, ERR_INVALID, "control URL '%s': unclosed '['", url);
            return NULL;
        }
        host = xstrndup(p + 1, (size_t)(hend - p - 1));
        if (hend[1] == ':')
            pstart = hend + 2;
        else if (hend + 1 != slash) {
            free(host);
            err_set(e, ERR_INVALID, "control URL '%s': junk after ']'", url);
            return NULL;
        }
    } else {
        const char *colon = memchr(p, ':', (size_t)(slash - p));
        hend = colon ? colon : slash;
        host = xstrndup(p, (size_t)(hend - p));
        if (colon)
            pstart = colon + 1;
    }
    if (*host == '\0') {
        free(host);
        err_set(e, ERR_INVALID, "control URL '%s' has no host", url);
        return NULL;
    }
    port = pstart ? xstrndup(pstart, (size_t)(slash - pstart)) : xstrdup("80");
    if (num_parse_ll(port, 1, 65535, &pn) < 0) {
        err_set(e, ERR_INVALID, "control URL '%s': bad port '%s'", url, port);
        free(host);
        free(port);
        return NULL;
    }
    c = xcalloc(1, sizeof(*c));
    c->host = host;
    c->port = port;
    c->prefix = xstrdup(slash);
    while (*c->prefix && c->prefix[strlen(c->prefix) - 1] == '/')
        c->prefix[strlen(c->prefix) - 1] = '\0';
    {
        struct buf h = BUF_INIT;
        if (strchr(host, ':'))
            buf_addf(&h, "[%s]:%s", host, port);
        else
            buf_addf(&h, "%s:%s", host, port);
        c->hosthdr = buf_detach(&h, NULL);
    }
    c->fd = -1;
    c->connect_ms = CONTROL_CLIENT_CONNECT_MS;
    c->io_ms = CONTROL_CLIENT_IO_MS;
    c->max_response = CONTROL_CLIENT_MAX_RESPONSE;
    return c;
}

static void close_conn(struct control_client *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
}

void control_client_free(struct control_client *c)
{
    if (c == NULL)
        return;
    close_conn(c);
    free(c->host);
    free(c->port);
    free(c->prefix);
    free(c->hosthdr);
    free(c);
}

void control_client_set_limits(struct control_client *c, int connect_ms, int io_ms,
                               size_t max_response)
{
    if (connect_ms > 0)
        c->connect_ms = connect_ms;
    if (io_ms > 0)
        c->io_ms = io_ms;
    if (max_response > 0)
        c->max_response = max_response;
}

static int ms_left(int64_t deadline)
{
    int64_t left = (deadline - time_mono_ns()) / 1000000;
    return left <= 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

/* Waits for events on fd until deadline. 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd pfd = {fd, events, 0};
        int left = ms_left(deadline), r;
        if (left == 0)
            return 0;
        r = poll(&pfd, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return 0;
        return 1;
    }
}

static int try_connect(struct control_client *c, const struct addrinfo *ai, int64_t deadline)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    int soerr = 0;
    socklen_t sl = sizeof(soerr);

    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (wait_fd(fd, POLLOUT, deadline) <= 0) {
            close(fd);
            errno = ETIMEDOUT;
            return -1;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr != 0) {
            close(fd);
            errno = soerr ? soerr : EIO;
            return -1;
        }
    }
    c->fd = fd;
    return 0;
}

static int ensure_conn(struct control_client *c, struct err *e)
{
    struct addrinfo hints, *res = NULL, *ai;
    int64_t deadline = time_mono_ns() + (int64_t)c->connect_ms * 1000000;
    int gai, saved = 0;

    if (c->fd >= 0) {
        /* A kept connection must be idle: readable means the controller closed it. */
        struct pollfd pfd = {c->fd, POLLIN, 0};
        if (poll(&pfd, 1, 0) == 0)
            return 0;
        close_conn(c);
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    gai = getaddrinfo(c->host, c->port, &hints, &res);
    if (gai != 0)
        return err_set(e, ERR_IO, "cannot resolve controller host '%s': %s", c->host,
                       gai_strerror(gai));
    for (ai = res; ai; ai = ai->ai_next) {
        if (try_connect(c, ai, deadline) == 0)
            break;
        saved = errno;
    }
    freeaddrinfo(res);
    if (c->fd < 0) {
        if (saved == ETIMEDOUT)
            return err_set(e, ERR_TIMEOUT,
                           "connecting to the controller at %s timed out after %d ms", c->hosthdr,
                           c->connect_ms);
        return err_set(e, ERR_IO, "cannot connect to the controller at %s: %s", c->hosthdr,
                       strerror(saved ? saved : EIO));
    }
    return 0;
}

static int send_all(struct control_client *c, const char *p, size_t n, int64_t deadline,
                    struct err *e)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = wait_fd(c->fd, POLLOUT, deadline);
            if (r == 0)
                return err_set(e, ERR_TIMEOUT, "sending to the controller timed out");
            if (r < 0)
                return err_set(e, ERR_IO, "sending to the controller: %s", strerror(errno));
            continue;
        }
        return err_set(e, ERR_IO, "sending to the controller: %s", strerror(errno));
    }
    return 0;
}

/* Reads more bytes into in (at most max total). 1 got some, 0 EOF, <0 error code. */
static int recv_more(struct control_client *c, struct buf *in, size_t max, int64_t deadline,
                     struct err *e)
{
    char tmp[16384];

    for (;;) {
        ssize_t r = recv(c->fd, tmp, sizeof(tmp), 0);
        if (r > 0) {
            if (in->len + (size_t)r > max)
                return err_set(e, ERR_LIMIT, "the controller's response exceeds %zu bytes", max);
            buf_add(in, tmp, (size_t)r);
            return 1;
        }
        if (r == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = wait_fd(c->fd, POLLIN, deadline);
            if (w == 0)
                return err_set(e, ERR_TIMEOUT, "the controller did not answer within %d ms",
                               c->io_ms);
            if (w < 0)
                return err_set(e, ERR_IO, "reading from the controller: %s", strerror(errno));
            continue;
        }
        return err_set(e, ERR_IO, "reading from the controller: %s", strerror(errno));
    }
}

static const char *find_crlf2(const char *p, size_t n)
{
    for (size_t i = 0; i + 3 < n; i++)
        if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' && p[i + 3] == '\n')
            return p + i;
    return NULL;
}

/* Case-insensitive header lookup in head (lines after the status line). Copies the value. */
static int header_value(const char *head, size_t n, const char *name, char *out, size_t outn)
{
    size_t nl = strlen(name);
    const char *p = memchr(head, '\n', n), *end = head + n;

    while (p && p < end) {
        const char *line = p + 1, *eol = memchr(line, '\n', (size_t)(end - line));
        if (eol == NULL)
            eol = end;
        if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
            const char *v = line + nl + 1;
            size_t k;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            k = (size_t)(eol - v);
            while (k > 0 && (v[k - 1] == '\r' || v[k - 1] == ' '))
                k--;
            if (k >= outn)
                k = outn - 1;
            memcpy(out, v, k);
            out[k] = '\0';
            return 1;
        }
        p = eol < end ? eol : NULL;
    }
    return 0;
}

/* Decodes a chunked body from in[start..]; reads more as needed. */
static int read_chunked(struct control_client *c, struct buf *in, size_t start, struct buf *resp,
                        int64_t deadline, size_t max, struct err *e)
{
    size_t pos = start;

    for (;;) {
        const char *crlf;
        unsigned long long size;
        char sizebuf[32];
        size_t k;
        int rc;

        while ((crlf = memmem(in->data + pos, in->len - pos, "\r\n", 2)) == NULL) {
            if (in->len - pos > 64)
                return err_set(e, ERR_PROTO, "bad chunk size line from the controller");
            if ((rc = recv_more(c, in, max + HEAD_MAX, deadline, e)) <= 0)
                return rc < 0 ? rc : err_set(e, ERR_PROTO, "the controller closed mid-body");
        }
        k = (size_t)(crlf - (in->data + pos));
        if (k == 0 || k >= sizeof(sizebuf))
            return err_set(e, ERR_PROTO, "bad chunk size line from the controller");
        memcpy(sizebuf, in->data + pos, k);
        sizebuf[k] = '\0';
        if (strchr(sizebuf, ';'))
            *strchr(sizebuf, ';') = '\0';
        {
            char *endp;
            errno = 0;
            size = strtoull(sizebuf, &endp, 16);
            if (errno || endp == sizebuf)
                return err_set(e, ERR_PROTO, "bad chunk size '%s' from the controller", sizebuf);
        }
        pos += k + 2;
        if (size > max || resp->len + size > max)
            return err_set(e, ERR_LIMIT, "the controller's response exceeds %zu bytes", max);
        while (in->len - pos < size + 2) {
            if ((rc = recv_more(c, in, max + HEAD_MAX + 64, deadline, e)) <= 0)
                return rc < 0 ? rc : err_set(e, ERR_PROTO, "the controller closed mid-body");
        }
        if (size == 0)
            return 0; /* trailers are not used by the controller; the CRLF was read */
        buf_add(resp, in->data + pos, (size_t)size);
        pos += (size_t)size + 2;
    }
}

int control_client_request(struct control_client *c, const char *method, const char *path,
                           const char *body, size_t len, int *status, struct buf *resp,
                           struct err *e)
{
    int64_t deadline;
    struct buf req = BUF_INIT, in = BUF_INIT;
    const char *hend;
    char val[64];
    int rc, keep = 1;
    size_t head_len;
    long long code;

    *status = 0;
    rc = ensure_conn(c, e);
    if (rc < 0)
        return rc;
    deadline = time_mono_ns() + (int64_t)c->io_ms * 1000000;
    buf_addf(&req,
             "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: faultline\r\n"
             "Connection: keep-alive\r\n",
             method, c->prefix, path, c->hosthdr);
    if (body)
        buf_addf(&req, "Content-Type: application/json\r\nContent-Length: %zu\r\n", len);
    buf_adds(&req, "\r\n");
    if (body)
        buf_add(&req, body, len);
    rc = send_all(c, req.data, req.len, deadline, e);
    if (rc < 0)
        goto out;
    while ((hend = find_crlf2(in.data, in.len)) == NULL) {
        if (in.len > HEAD_MAX) {
            rc = err_set(e, ERR_PROTO, "the controller's response head exceeds %d bytes", HEAD_MAX);
            goto out;
        }
        rc = recv_more(c, &in, HEAD_MAX + c->max_response, deadline, e);
        if (rc == 0)
            rc = err_set(e, ERR_IO, "the controller closed the connection without a response");
        if (rc < 0)
            goto out;
    }
    head_len = (size_t)(hend - in.data) + 4;
    if (in.len < 12 || strncmp(in.data, "HTTP/1.", 7) != 0 || in.data[8] != ' ') {
        rc = err_set(e, ERR_PROTO, "the controller's response is not HTTP/1.x");
        goto out;
    }
    {
        char digits[4] = {in.data[9], in.data[10], in.data[11], '\0'};
        if (num_parse_ll(digits, 100, 599, &code) < 0) {
            rc = err_set(e, ERR_PROTO, "bad status line from the controller");
            goto out;
        }
    }
    *status = (int)code;
    if (header_value(in.data, head_len, "Connection", val, sizeof(val)) &&
        strcasecmp(val, "close") == 0)
        keep = 0;
    if (in.data[7] == '0')
        keep = keep && header_value(in.data, head_len, "Connection", val, sizeof(val)) &&
               strcasecmp(val, "keep-alive") == 0;
    if (header_value(in.data, head_len, "Transfer-Encoding", val, sizeof(val)) &&
        strcasecmp(val, "chunked") == 0) {
        rc = read_chunked(c, &in, head_len, resp, deadline, c->max_response, e);
        if (rc < 0)
            goto out;
    } else if (header_value(in.data, head_len, "Content-Length", val, sizeof(val))) {
        long long n;
        if (num_parse_ll(val, 0, 1LL << 62, &n) < 0) {
            rc = err_set(e, ERR_PROTO, "bad Content-Length '%s' from the controller", val);
            goto out;
        }
        if ((unsigned long long)n > c->max_response) {
            rc = err_set(e, ERR_LIMIT, "the controller's response (%lld bytes) exceeds %zu bytes",
                         n, c->max_response);
            goto out;
        }
        while (in.len - head_len < (size_t)n) {
            rc = recv_more(c, &in, head_len + (size_t)n, deadline, e);
            if (rc == 0)
                rc = err_set(e, ERR_IO, "the controller closed the connection mid-body");
            if (rc < 0)
                goto out;
        }
        buf_add(resp, in.data + head_len, (size_t)n);
    } else if (code == 204 || code == 304 || code < 200) {
        /* no body */
    } else {
        /* Until close. */
        for (;;) {
            rc = recv_more(c, &in, head_len + c->max_response, deadline, e);
            if (rc < 0)
                goto out;
            if (rc == 0)
                break;
        }
        buf_add(resp, in.data + head_len, in.len - head_len);
        keep = 0;
    }
    rc = 0;
out:
    if (rc < 0 || !keep)
        close_conn(c);
    buf_release(&req);
    buf_release(&in);
    return rc;
}

int control_client_post_json(struct control_client *c, const char *path, const json_t *body,
                             json_t **reply, struct err *e)
{
    char *text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    struct buf resp = BUF_INIT;
    json_error_t je;
    int status, rc;

    *reply = NULL;
    if (text == NULL)
        return err_set(e, ERR_INVALID, "cannot serialize the request to %s", path);
    rc = control_client_request(c, "POST", path, text, strlen(text), &status, &resp, e);
    free(text);
    if (rc < 0)
        goto out;
    *reply = json_loadb(resp.data, resp.len, 0, &je);
    if (status != 200) {
        const char *msg =
            json_string_value(json_object_get(json_object_get(*reply, "error"), "message"));
        rc = err_set(e, ERR_PROTO, "the controller answered %s with %d: %s", path, status,
                     msg ? msg : "(no message)");
        json_decref(*reply);
        *reply = NULL;
        goto out;
    }
    if (*reply == NULL)
        rc = err_set(e, ERR_PROTO, "the controller's reply to %s is not JSON: %s", path, je.text);
out:
    buf_release(&resp);
    return rc;
}

int control_client_decide(struct control_client *c, const struct plan_call *call, json_t **reply,
                          struct err *e)
{
    const char *comp = catalog_injector_name(call->component);
    json_t *body;
    int rc;

    *reply = NULL;
    if (comp == NULL)
        return err_set(e, ERR_INVALID, "decide: component is not one injector");
    body = json_pack("{s:s, s:s?, s:s?, s:s?, s:s?, s:O?}", "component", comp, "tool", call->tool,
                     "server", call->server, "host", call->host, "model", call->model, "args",
                     call->args);
    if (body == NULL)
        return err_set(e, ERR_INVALID, "decide: a call field is not valid UTF-8");
    rc = control_client_post_json(c, "/_faultline/decide", body, reply, e);
    json_decref(body);
    if (rc == 0 && !json_is_object(*reply)) {
        json_decref(*reply);
        *reply = NULL;
        rc = err_set(e, ERR_PROTO, "the controller's decision is not an object");
    }
    return rc;
}

int control_client_post_events(struct control_client *c, const json_t *events, struct err *e)
{
    json_t *reply = NULL;
    int rc;

    if (json_is_array(events) && json_array_size(events) > 1000)
        return err_set(e, ERR_LIMIT, "at most 1000 events per POST");
    rc = control_client_post_json(c, "/_faultline/events", events, &reply, e);
    json_decref(reply);
    return rc;
}

int control_client_health(struct control_client *c, json_t **reply, struct err *e)
{
    struct buf resp = BUF_INIT;
    json_error_t je;
    int status, rc;

    *reply = NULL;
    rc = control_client_request(c, "GET", "/_faultline/health", NULL, 0, &status, &resp, e);
    if (rc == 0 && status != 200)
        rc = err_set(e, ERR_PROTO, "the controller's health check answered %d", status);
    if (rc == 0) {
        *reply = json_loadb(resp.data, resp.len, 0, &je);
        if (*reply == NULL)
            rc = err_set(e, ERR_PROTO, "the controller's health reply is not JSON");
    }
    buf_release(&resp);
    return rc;
}
