/*
 * mcpclient: an MCP stdio client (see mcpclient.h for the session).
 *
 * One function does all the I/O: pump() waits in poll(2) on the server's stdin (while
 * outgoing bytes are queued), stdout and stderr, until the answer to one request id arrives,
 * the deadline passes, the server goes away or the agent is interrupted. Lines from stdout go
 * through the jsonrpc framer and classifier; everything that is not the awaited answer is
 * handled on the way (server requests answered, list_changed noted, stale answers dropped).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cmdrun.h"
#include "agent/mcpclient.h"
#include "codec/jsonrpc.h"
#include "util/log.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define ERRTAIL_MAX 2048
#define OUTQ_MAX ((size_t)64 << 20)

struct mcpclient {
    char *name;
    char *cwd;
    char server_info[160];
    struct proc p;
    int spawned;
    struct jsonrpc_framer fr;
    struct buf outq;    /* bytes for the server's stdin not yet written */
    struct buf errtail; /* the last bytes of its stderr */
    json_t *tools;
    int changed;
    long long next_id;
    int gone;  /* stdout reached EOF */
    int quick; /* the session failed: no polite wait at the end */
    volatile sig_atomic_t *stop;
};

const char *mcpclient_name(const struct mcpclient *c)
{
    return c->name;
}

const char *mcpclient_server_info(const struct mcpclient *c)
{
    return c->server_info;
}

const json_t *mcpclient_tools(const struct mcpclient *c)
{
    return c->tools;
}

int mcpclient_tools_changed(const struct mcpclient *c)
{
    return c->changed;
}

static void keep_err(struct mcpclient *c, const char *p, size_t n)
{
    if (n >= ERRTAIL_MAX) {
        p += n - ERRTAIL_MAX;
        n = ERRTAIL_MAX;
    }
    if (c->errtail.len + n > ERRTAIL_MAX)
        buf_consume(&c->errtail, c->errtail.len + n - ERRTAIL_MAX);
    buf_add(&c->errtail, p, n);
}

/* "exited with status 1; stderr: ..." for messages about a server that went away. */
static void describe_gone(struct mcpclient *c, char *out, size_t n)
{
    char st[96] = "still running";
    struct buf tail = BUF_INIT;

    if (proc_wait(&c->p, 500) == 0)
        proc_describe(&c->p, st, sizeof(st));
    for (size_t i = 0; i < c->errtail.len && tail.len < 300; i++) {
        char ch = c->errtail.data[i];
        buf_addc(&tail, ch == '\n' || ch == '\r' || ch == '\t' ? ' ' : ch);
    }
    while (tail.len > 0 && tail.data[tail.len - 1] == ' ')
        buf_truncate(&tail, tail.len - 1);
    snprintf(out, n, "%s%s%s", st, tail.len ? "; stderr: " : "", tail.data);
    buf_release(&tail);
}

static void queue(struct mcpclient *c, json_t *msg)
{
    if (jsonrpc_write(&c->outq, msg) < 0)
        log_warn("agent", "mcp '%s': output queue full, message dropped", c->name);
    json_decref(msg);
}

/* A request from the server: answer it at once. */
static void answer_request(struct mcpclient *c, const struct jsonrpc_msg *m)
{
    if (strcmp(m->method, "ping") == 0) {
        queue(c, jsonrpc_make_result(m->id, json_object()));
    } else if (strcmp(m->method, "roots/list") == 0) {
        struct buf uri = BUF_INIT;
        const char *d = c->cwd ? c->cwd : "/";
        buf_adds(&uri, "file://");
        for (const char *s = d; *s; s++) {
            unsigned char ch = (unsigned char)*s;
            if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                strchr("/-._~", ch))
                buf_addc(&uri, (char)ch);
            else
                buf_addf(&uri, "%%%02X", ch);
        }
        json_t *root = json_pack("{s:s}", "uri", uri.data);
        queue(c, jsonrpc_make_result(m->id, json_pack("{s:[o]}", "roots", root)));
        buf_release(&uri);
    } else {
        queue(c, jsonrpc_make_error(m->id, JSONRPC_METHOD_NOT_FOUND, "method not found", NULL));
    }
}

static int id_is(const json_t *id, long long want)
{
    return json_is_integer(id) && json_integer_value(id) == want;
}

/* One line from the server. Returns 1 when it was the answer to want (stored in *answer, a
 * new reference to the whole message), 0 otherwise. */
static int handle_line(struct mcpclient *c, const char *line, size_t len, long long want,
                       json_t **answer)
{
    struct jsonrpc_msg m;
    int got = 0;

    switch (jsonrpc_parse(line, len, &m)) {
    case JSONRPC_RESPONSE:
    case JSONRPC_ERROR:
        if (id_is(m.id, want)) {
            *answer = json_incref(m.root);
            got = 1;
        }
        break;
    case JSONRPC_REQUEST:
        answer_request(c, &m);
        break;
    case JSONRPC_NOTIFICATION:
        if (strcmp(m.method, "notifications/tools/list_changed") == 0)
            c->changed = 1;
        break;
    case JSONRPC_BATCH: {
        size_t i;
        json_t *v;
        json_array_foreach(m.root, i, v)
        {
            struct jsonrpc_msg sub;
            enum jsonrpc_kind k = jsonrpc_classify(v, &sub);
            if ((k == JSONRPC_RESPONSE || k == JSONRPC_ERROR) && id_is(sub.id, want)) {
                *answer = json_incref(v);
                got = 1;
            } else if (k == JSONRPC_REQUEST) {
                answer_request(c, &sub);
            } else if (k == JSONRPC_NOTIFICATION &&
                       strcmp(sub.method, "notifications/tools/list_changed") == 0) {
                c->changed = 1;
            }
            jsonrpc_msg_release(&sub);
        }
        break;
    }
    default:
        log_debug("agent", "mcp '%s': ignored a %s line", c->name, jsonrpc_kind_name(m.kind));
        break;
    }
    jsonrpc_msg_release(&m);
    return got;
}

/* Runs the session until the answer to want arrives (0, *answer set), or an error. */
static int pump(struct mcpclient *c, long long want, int64_t deadline_ns, json_t **answer,
                struct err *e)
{
    char gone[400];
    int polled = 0;

    *answer = NULL;
    for (;;) {
        const char *line;
        size_t len;
        enum jsonrpc_frame f;
        while ((f = jsonrpc_framer_next(&c->fr, &line, &len)) != JSONRPC_FRAME_NONE) {
            if (f == JSONRPC_FRAME_LINE) {
                if (handle_line(c, line, len, want, answer))
                    return 0;
            } else {
                json_t *id = jsonrpc_skim_id(&c->fr.skim);
                int mine = id_is(id, want);
                json_decref(id);
                if (mine)
                    return err_set(e, ERR_LIMIT, "MCP server '%s': answer over %zu bytes", c->name,
                                   MCPCLIENT_LINE_MAX);
            }
        }
        if (c->gone) {
            describe_gone(c, gone, sizeof(gone));
            return err_set(e, ERR_IO, "MCP server '%s' closed its output (%s)", c->name, gone);
        }
        if (c->stop && *c->stop)
            return err_set(e, ERR_SYS, "MCP server '%s': interrupted", c->name);
        int64_t left = (deadline_ns - time_mono_ns()) / 1000000;
        if (left <= 0 && polled)
            return err_set(e, ERR_TIMEOUT, "MCP server '%s': no answer in time", c->name);
        if (left < 0)
            left = 0;
        polled = 1; /* a deadline already past still gets one look at the pipes */

        struct pollfd pfd[3];
        int nf = 0, iw = -1, io = -1, ie = -1;
        if (c->outq.len > 0 && c->p.in_fd >= 0) {
            iw = nf;
            pfd[nf++] = (struct pollfd){.fd = c->p.in_fd, .events = POLLOUT};
        }
        io = nf;
        pfd[nf++] = (struct pollfd){.fd = c->p.out_fd, .events = POLLIN};
        if (c->p.err_fd >= 0) {
            ie = nf;
            pfd[nf++] = (struct pollfd){.fd = c->p.err_fd, .events = POLLIN};
        }
        int r = poll(pfd, (nfds_t)nf, left > 200 ? 200 : (int)left);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return err_set(e, ERR_SYS, "poll: %s", strerror(errno));
        }
        if (iw >= 0 && pfd[iw].revents) {
            ssize_t w = cmdrun_pipe_write(c->p.in_fd, c->outq.data, c->outq.len);
            if (w > 0) {
                buf_consume(&c->outq, (size_t)w);
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                proc_close_fd(&c->p.in_fd); /* EPIPE: the server stopped reading */
                buf_reset(&c->outq);
            }
        }
        if (ie >= 0 && pfd[ie].revents) {
            char tmp[4096];
            ssize_t n = read(c->p.err_fd, tmp, sizeof(tmp));
            if (n > 0)
                keep_err(c, tmp, (size_t)n);
            else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                proc_close_fd(&c->p.err_fd);
        }
        if (pfd[io].revents) {
            char *dst = jsonrpc_framer_reserve(&c->fr, 65536);
            ssize_t n = read(c->p.out_fd, dst, 65536);
            if (n > 0)
                jsonrpc_framer_commit(&c->fr, (size_t)n);
            else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                c->gone = 1;
        }
    }
}

/* Sends a request and waits for its answer. On 0, *result is a new reference to the result
 * member. A JSON-RPC error is ERR_PROTO with its code and message. */
static int request(struct mcpclient *c, const char *method, json_t *params, int timeout_ms,
                   json_t **result, struct err *e)
{
    long long id = c->next_id++;
    json_t *jid = json_integer(id), *answer = NULL;
    int rc;

    *result = NULL;
    if (c->p.in_fd < 0) {
        json_decref(params);
        json_decref(jid);
        return err_set(e, ERR_IO, "MCP server '%s' no longer reads its input", c->name);
    }
    queue(c, jsonrpc_make_request(jid, method, params));
    rc = pump(c, id, time_mono_ns() + (int64_t)timeout_ms * 1000000, &answer, e);
    if (rc == ERR_TIMEOUT) {
        json_t *p = json_pack("{s:O,s:s}", "requestId", jid, "reason", "timed out");
        queue(c, jsonrpc_make_notification("notifications/cancelled", p));
        /* give the notification a moment to go out; the answer, if any, is stale */
        json_t *none = NULL;
        struct err ignore = {0};
        pump(c, -1, time_mono_ns() + 50 * 1000000LL, &none, &ignore);
        e->code = 0;
        err_set(e, ERR_TIMEOUT, "MCP server '%s': no answer to %s within %d ms", c->name, method,
                timeout_ms);
    }
    json_decref(jid);
    if (rc < 0)
        return rc;
    json_t *err = json_object_get(answer, "error");
    if (err) {
        const char *msg = json_string_value(json_object_get(err, "message"));
        rc = err_set(e, ERR_PROTO, "MCP error %lld: %s",
                     (long long)json_integer_value(json_object_get(err, "code")),
                     msg ? msg : "(no message)");
    } else {
        *result = json_incref(json_object_get(answer, "result"));
        if (*result == NULL)
            rc = err_set(e, ERR_PROTO, "MCP server '%s': answer without a result", c->name);
    }
    json_decref(answer);
    return rc;
}

void mcpclient_poll(struct mcpclient *c)
{
    json_t *none = NULL;
    struct err ignore = {0};

    if (!c->gone)
        pump(c, -1, time_mono_ns(), &none, &ignore);
    json_decref(none);
}

int mcpclient_refresh_tools(struct mcpclient *c, int timeout_ms, struct err *e)
{
    json_t *all = json_array(), *cursor = NULL;
    int rc = 0;

    for (int page = 0; page < MCPCLIENT_PAGES_MAX; page++) {
        json_t *params = json_object(), *res, *t;
        size_t i;
        if (cursor)
            json_object_set_new(params, "cursor", cursor);
        cursor = NULL;
        c->changed = 0;
        if ((rc = request(c, "tools/list", params, timeout_ms, &res, e)) < 0)
            break;
        json_t *tools = json_object_get(res, "tools");
        if (!json_is_array(tools)) {
            json_decref(res);
            rc =
                err_set(e, ERR_PROTO, "MCP server '%s': tools/list without a tools array", c->name);
            break;
        }
        json_array_foreach(tools, i, t)
        {
            if (!json_is_string(json_object_get(t, "name")))
                continue;
            if (json_array_size(all) >= MCPCLIENT_TOOLS_MAX) {
                log_warn("agent", "mcp '%s': more than %d tools; the rest are ignored", c->name,
                         MCPCLIENT_TOOLS_MAX);
                break;
            }
            json_array_append(all, t);
        }
        json_t *next = json_object_get(res, "nextCursor");
        if (json_is_string(next) && json_string_length(next) > 0)
            cursor = json_incref(next);
        json_decref(res);
        if (cursor == NULL)
            break;
    }
    json_decref(cursor);
    if (rc < 0) {
        json_decref(all);
        return rc;
    }
    json_decref(c->tools);
    c->tools = all;
    return 0;
}

struct mcpclient *mcpclient_start(const struct mcpclient_opts *o, struct err *e)
{
    const char *argv[] = {"sh", "-c", o->command, NULL};
    struct proc_opts po;
    struct mcpclient *c = xcalloc(1, sizeof(*c));
    json_t *res = NULL;
    char gone[400];

    c->name = xstrdup(o->name);
    c->cwd = o->cwd ? xstrdup(o->cwd) : NULL;
    c->next_id = 1;
    c->stop = o->stop;
    jsonrpc_framer_init(&c->fr, MCPCLIENT_LINE_MAX);
    buf_init(&c->outq, OUTQ_MAX);
    buf_init(&c->errtail, ERRTAIL_MAX + 1);
    memset(&po, 0, sizeof(po));
    po.argv = argv;
    po.cwd = o->cwd;
    po.in = PROC_PIPE;
    po.out = PROC_PIPE;
    po.err = PROC_PIPE;
    po.die_with_parent = 1;
    if (proc_spawn(&c->p, &po, e) < 0)
        goto fail;
    c->spawned = 1;

    json_t *params =
        json_pack("{s:s,s:{},s:{s:s,s:s}}", "protocolVersion", MCPCLIENT_PROTOCOL_VERSION,
                  "capabilities", "clientInfo", "name", "faultline-agent", "version", "0.1.0");
    if (request(c, "initialize", params, o->timeout_ms, &res, e) < 0) {
        if (e->code == ERR_TIMEOUT && !c->gone) {
            describe_gone(c, gone, sizeof(gone));
            e->code = 0;
            err_set(e, ERR_TIMEOUT, "MCP server '%s': no answer to initialize within %d ms (%s)",
                    c->name, o->timeout_ms, gone);
        }
        goto fail;
    }
    const char *ver = json_string_value(json_object_get(res, "protocolVersion"));
    json_t *info = json_object_get(res, "serverInfo");
    snprintf(c->server_info, sizeof(c->server_info), "%s %s",
             json_string_value(json_object_get(info, "name")) ?: "",
             json_string_value(json_object_get(info, "version")) ?: "");
    if (ver == NULL) {
        err_set(e, ERR_PROTO, "MCP server '%s': initialize result without protocolVersion",
                c->name);
        goto fail;
    }
    log_debug("agent", "mcp '%s': %s, protocol %s", c->name, c->server_info, ver);
    json_decref(res);
    res = NULL;
    queue(c, jsonrpc_make_notification("notifications/initialized", NULL));
    if (mcpclient_refresh_tools(c, o->timeout_ms, e) < 0)
        goto fail;
    return c;
fail:
    json_decref(res);
    c->quick = 1;
    mcpclient_free(c);
    return NULL;
}

void mcpclient_free(struct mcpclient *c)
{
    if (c == NULL)
        return;
    if (c->spawned) {
        /* flush what is queued (best effort), then close stdin: the polite way to end */
        int64_t end = time_mono_ns() + 200 * 1000000LL;
        while (c->outq.len > 0 && c->p.in_fd >= 0 && time_mono_ns() < end) {
            struct pollfd pfd = {.fd = c->p.in_fd, .events = POLLOUT};
            if (poll(&pfd, 1, 50) > 0) {
                ssize_t w = cmdrun_pipe_write(c->p.in_fd, c->outq.data, c->outq.len);
                if (w > 0)
                    buf_consume(&c->outq, (size_t)w);
                else if (w < 0 && errno != EAGAIN && errno != EINTR)
                    break;
            }
        }
        proc_close_fd(&c->p.in_fd);
        if (proc_wait(&c->p, c->quick ? 100 : 2000) < 0)
            proc_terminate(&c->p, 2000);
        else
            proc_signal(&c->p, SIGTERM); /* the group: anything the server left behind */
        proc_release(&c->p);
    }
    jsonrpc_framer_release(&c->fr);
    buf_release(&c->outq);
    buf_release(&c->errtail);
    json_decref(c->tools);
    free(c->name);
    free(c->cwd);
    free(c);
}

void mcpclient_result_text(const json_t *result, struct buf *out, int *is_error)
{
    json_t *content = json_object_get(result, "content"), *item;
    size_t i, before = out->len;

    *is_error = json_is_true(json_object_get(result, "isError"));
    json_array_foreach(content, i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (out->len > before)
            buf_addc(out, '\n');
        if (type == NULL) {
            buf_adds(out, "[content item without a type]");
        } else if (strcmp(type, "text") == 0) {
            const char *t = json_string_value(json_object_get(item, "text"));
            if (t)
                buf_add(out, t, json_string_length(json_object_get(item, "text")));
        } else if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0) {
            const char *mt = json_string_value(json_object_get(item, "mimeType"));
            buf_addf(out, "[%s %s, %zu bytes of base64]", type, mt ? mt : "?",
                     json_string_length(json_object_get(item, "data")));
        } else if (strcmp(type, "resource") == 0) {
            json_t *r = json_object_get(item, "resource");
            const char *t = json_string_value(json_object_get(r, "text"));
            const char *uri = json_string_value(json_object_get(r, "uri"));
            if (t)
                buf_add(out, t, json_string_length(json_object_get(r, "text")));
            else
                buf_addf(out, "[resource %s]", uri ? uri : "?");
        } else if (strcmp(type, "resource_link") == 0) {
            const char *uri = json_string_value(json_object_get(item, "uri"));
            buf_addf(out, "[resource link %s]", uri ? uri : "?");
        } else {
            buf_addf(out, "[%s content]", type);
        }
    }
    json_t *sc = json_object_get(result, "structuredContent");
    if (out->len == before && sc) {
        char *d = json_dumps(sc, JSON_COMPACT);
        if (d)
            buf_adds(out, d);
        free(d);
    }
}

int mcpclient_call(struct mcpclient *c, const char *tool, const json_t *args, int timeout_ms,
                   struct buf *text, int *is_error, struct err *e)
{
    json_t *params = json_object(), *res;
    int rc;

    *is_error = 0;
    json_object_set_new(params, "name", json_string(tool));
    json_object_set_new(params, "arguments", args ? json_deep_copy(args) : json_object());
    if ((rc = request(c, "tools/call", params, timeout_ms, &res, e)) < 0)
        return rc;
    mcpclient_result_text(res, text, is_error);
    json_decref(res);
    return 0;
}
