/*
 * client: see client.h.
 *
 * The transport is a kept connection from src/codec/httpc (struct httpc_conn): it checks a kept
 * socket before each request and opens a new one when the controller closed it, so a request
 * that reached the controller is never resent, and it never retries (decide and events are
 * not idempotent). This file builds the requests, collects the body and words the errors:
 * httpc's messages name "the controller at host:port"; the codes are mapped to the ones
 * client.h documents (a failure to resolve or connect, or a close before the end of the
 * response, is ERR_IO).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seam/client.h"
#include "experiment/catalog.h"
#include "codec/httpc.h"
#include "util/banned.h"

struct seam_client {
    struct url url;
    struct httpc_conn *conn;
    char peer[HTTPC_HOST_MAX + 48]; /* "the controller at host:port", for messages */
    int connect_ms, io_ms;
    size_t max_response;
};

struct seam_client *seam_client_new(const char *url, struct err *e)
{
    struct seam_client *c;
    struct err sub = {0};
    char where[HTTPC_HOST_MAX + 16];

    if (url == NULL || strncmp(url, "http://", 7) != 0) {
        char shown[256];
        url_redact(url ? url : "", shown, sizeof(shown)); /* an https URL may carry a password */
        err_set(e, ERR_INVALID, "control URL '%s' is not an http:// URL", shown);
        return NULL;
    }
    c = xcalloc(1, sizeof(*c));
    if (url_parse(url, &c->url, &sub) < 0) {
        err_set(e, ERR_INVALID, "control URL: %s", sub.msg);
        free(c);
        return NULL;
    }
    c->conn = httpc_conn_new(&c->url);
    url_authority(&c->url, where, sizeof(where));
    snprintf(c->peer, sizeof(c->peer), "the controller at %s", where);
    c->connect_ms = SEAM_CLIENT_CONNECT_MS;
    c->io_ms = SEAM_CLIENT_IO_MS;
    c->max_response = SEAM_CLIENT_MAX_RESPONSE;
    return c;
}

void seam_client_free(struct seam_client *c)
{
    if (c == NULL)
        return;
    httpc_conn_free(c->conn);
    free(c);
}

void seam_client_set_limits(struct seam_client *c, int connect_ms, int io_ms, size_t max_response)
{
    if (connect_ms > 0)
        c->connect_ms = connect_ms;
    if (io_ms > 0)
        c->io_ms = io_ms;
    if (max_response > 0)
        c->max_response = max_response;
}

struct sink {
    struct buf *resp;
    struct err *e;
};

static int on_body(const struct httpc_parser *p, const char *d, size_t n, void *arg)
{
    struct sink *k = arg;

    if (buf_add(k->resp, d, n) < 0)
        return err_set(k->e, ERR_LIMIT, "the response does not fit the caller's buffer");
    return 0;
}

/* Words a failed exchange (rc, sub) as client.h documents it. */
static int request_error(struct seam_client *c, int rc, const struct httpc_parser *p,
                         const struct err *sub, struct err *e)
{
    if (!httpc_conn_sent(c->conn)) { /* resolving or connecting: the message names the peer */
        if (rc == ERR_TIMEOUT)
            return err_set(e, ERR_TIMEOUT, "%s", sub->msg);
        if (rc == ERR_INVALID)
            return err_set(e, ERR_IO, "%s: %s", c->peer, sub->msg);
        return err_set(e, ERR_IO, "%s", sub->msg);
    }
    if (rc == ERR_TIMEOUT)
        return err_set(e, ERR_TIMEOUT, "the controller did not answer within %d ms", c->io_ms);
    if (rc == ERR_PROTO && p->state != HTTPC_P_ERROR) /* closed before the end */
        return err_set(e, ERR_IO, "%s: %s", c->peer, sub->msg);
    if (rc == ERR_PROTO || rc == ERR_LIMIT)
        return err_set(e, rc, "%s: %s", c->peer, sub->msg);
    return err_set(e, ERR_IO, "%s", sub->msg); /* sending or receiving failed */
}

int seam_client_request(struct seam_client *c, const char *method, const char *path,
                        const char *body, size_t len, int *status, struct buf *resp, struct err *e)
{
    struct buf target = BUF_INIT;
    struct httpc_parser p;
    struct err sub = {0};
    struct sink sink = {resp, &sub};
    size_t start = resp->len;
    const char *headers[] = {"User-Agent: faultline",
                             body ? "Content-Type: application/json" : NULL, NULL};
    struct httpc_call hc = {
        .method = method,
        .headers = headers,
        .body = body,
        .body_len = body ? len : 0,
        .connect_timeout_ms = c->connect_ms,
        .idle_timeout_ms = c->io_ms,
        .total_timeout_ms = c->io_ms,
        .max_body = c->max_response,
        .on_body = on_body,
        .arg = &sink,
        .peer = c->peer,
    };
    int rc;

    buf_addf(&target, "%s%s", c->url.path, path);
    hc.target = target.data;
    rc = httpc_conn_run(c->conn, &hc, &p, &sub);
    *status = p.status;
    if (rc < 0) {
        rc = request_error(c, rc, &p, &sub, e);
        buf_truncate(resp, start);
    }
    httpc_parser_release(&p);
    buf_release(&target);
    return rc;
}

int seam_client_post_json(struct seam_client *c, const char *path, const json_t *body,
                          json_t **reply, struct err *e)
{
    char *text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    struct buf resp = BUF_INIT;
    json_error_t je;
    int status, rc;

    *reply = NULL;
    if (text == NULL)
        return err_set(e, ERR_INVALID, "cannot serialize the request to %s", path);
    rc = seam_client_request(c, "POST", path, text, strlen(text), &status, &resp, e);
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

int seam_client_sent(const struct seam_client *c)
{
    return c != NULL && c->conn != NULL && httpc_conn_sent(c->conn);
}

int seam_client_decide(struct seam_client *c, const struct plan_call *call, json_t **reply,
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
    if (call->session_call > 0)
        json_object_set_new(body, "session_call", json_integer((json_int_t)call->session_call));
    rc = seam_client_post_json(c, "/_faultline/decide", body, reply, e);
    json_decref(body);
    if (rc == 0 && !json_is_object(*reply)) {
        json_decref(*reply);
        *reply = NULL;
        rc = err_set(e, ERR_PROTO, "the controller's decision is not an object");
    }
    return rc;
}

int seam_client_post_events(struct seam_client *c, const json_t *events, struct err *e)
{
    json_t *reply = NULL;
    int rc;

    if (json_is_array(events) && json_array_size(events) > 1000)
        return err_set(e, ERR_LIMIT, "at most 1000 events per POST");
    rc = seam_client_post_json(c, "/_faultline/events", events, &reply, e);
    json_decref(reply);
    return rc;
}

int seam_client_post_events_text(struct seam_client *c, const char *text, size_t len, struct err *e)
{
    struct buf resp = BUF_INIT;
    int status, rc;

    rc = seam_client_request(c, "POST", "/_faultline/events", text, len, &status, &resp, e);
    if (rc == 0 && status != 200)
        rc = err_set(e, ERR_PROTO, "the controller answered /_faultline/events with %d", status);
    buf_release(&resp);
    return rc;
}

int seam_client_health(struct seam_client *c, json_t **reply, struct err *e)
{
    struct buf resp = BUF_INIT;
    json_error_t je;
    int status, rc;

    *reply = NULL;
    rc = seam_client_request(c, "GET", "/_faultline/health", NULL, 0, &status, &resp, e);
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
