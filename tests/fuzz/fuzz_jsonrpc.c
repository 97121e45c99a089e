/*
 * fuzz_jsonrpc: libFuzzer target for the MCP shim's framing, message classification and
 * session logic. The input is cut into chunks (size from its first byte) and fed through a
 * framer with a small line limit (from its second byte); every line is classified, and handed to
 * a session alternately as coming from the client and from the server, with a fake backend that
 * injects a fault chosen from the tool name. Invariants: no crash, leak or hang; a classified
 * message is consistent with its kind; the lax scan accepts every text jansson accepts and
 * finds the same top-level id and method; everything the session writes for the client is one
 * JSON value per line as JSON.parse takes it (the client only ever gets protocol messages).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/jsonrpc.h"
#include "events/events.h"
#include "mcp/session.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const kinds[] = {
    "tool.error",         "tool.latency",           "tool.timeout",
    "tool.timeout_after_commit", "tool.omission",   "tool.silent_wrong_data",
    "tool.partial_failure", "tool.transient_error", "tool.rate_limit",
    "tool.malformed_response", "tool.auth_expiry",  "tool.wrong_error_channel",
    "tool.stale_data",    "tool.duplicate_delivery", "tool.concurrent_duplicate",
    "mcp.toolset_change", "mcp.schema_drift",       "mcp.schema_violating_output",
    "mcp.annotation_lie", "mcp.capability_downgrade", "inject.tool_result",
};

static uint64_t timers[64];
static size_t ntimers;
static int64_t clock_ms;

static int f_decide(void *ctx, const struct plan_call *c, struct seam_decision *out)
{
    size_t n = c->tool ? strlen(c->tool) : 0;
    memset(out, 0, sizeof(*out));
    if (n == 0 || (unsigned char)c->tool[0] % 3 == 0)
        return 0;
    out->inject = 1;
    snprintf(out->kind, sizeof(out->kind), "%s",
             kinds[((unsigned char)c->tool[n - 1] + n) % (sizeof(kinds) / sizeof(kinds[0]))]);
    if (c->tool[0] == 'r')
        out->options = json_pack("{s:s, s:o}", "mode", "truncate", "remove", json_pack("[s]", c->tool));
    out->call_index = n;
    out->safety = -1;
    return 0;
}

static void f_emit(void *ctx, json_t *ev)
{
    struct buf b = BUF_INIT;
    json_t *back;

    /* events are always serializable, raw values (the fast path) included, as one JSON text */
    if (events_dump(ev, &b) < 0 || (back = json_loadb(b.data, b.len, 0, NULL)) == NULL)
        abort();
    json_decref(back);
    buf_release(&b);
}

static const char *f_canary(void *ctx)
{
    return "E-FAULTLINE-f0f0f0f0";
}

static int64_t f_now(void *ctx)
{
    return clock_ms;
}

static void f_set_timer(void *ctx, uint64_t token, int64_t ms)
{
    if (ntimers < sizeof(timers) / sizeof(timers[0]))
        timers[ntimers++] = token;
}

static void f_cancel_timer(void *ctx, uint64_t token)
{
}

static void check_msg(const struct jsonrpc_msg *m)
{
    int opaque = (m->flags & JSONRPC_F_OPAQUE) != 0;

    if (opaque && m->root)
        abort();
    switch (m->kind) {
    case JSONRPC_EMPTY:
    case JSONRPC_NOT_JSON:
        if (m->root)
            abort();
        break;
    case JSONRPC_REQUEST:
        if (!m->method || (!m->id && !(m->flags & JSONRPC_F_OPAQUE_ID)))
            abort();
        break;
    case JSONRPC_NOTIFICATION:
        if (!m->method || m->id)
            abort();
        break;
    case JSONRPC_RESPONSE:
        if ((!m->result && !opaque) || (!m->id && !(m->flags & JSONRPC_F_OPAQUE_ID)) || m->method)
            abort();
        if (opaque && m->lax.result.type == 0)
            abort();
        break;
    case JSONRPC_ERROR:
        if ((!m->error && !opaque) || m->method)
            abort();
        break;
    case JSONRPC_BATCH:
        if (opaque ? m->lax.type != 'a'
                   : (!json_is_array(m->root) || json_array_size(m->root) == 0))
            abort();
        break;
    case JSONRPC_NOT_RPC:
        if ((!m->root && !opaque) || m->method || m->id)
            abort();
        break;
    }
}

static int json_loadb_ok_as_real(const char *p, size_t n)
{
    json_t *v = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
    json_decref(v);
    return v != NULL;
}

/* jsonrpc_parse_scan classifies a line as jsonrpc_parse_lax does, with or without a tree. */
static void check_scan(const char *p, size_t n)
{
    struct jsonrpc_msg a, b;
    const unsigned mask = ~(unsigned)(JSONRPC_F_SCANNED);

    jsonrpc_parse_lax(p, n, &a);
    jsonrpc_parse_scan(p, n, &b);
    if (a.kind != b.kind || (a.flags & mask) != (b.flags & mask) ||
        (a.id == NULL) != (b.id == NULL) || (a.id && !json_equal(a.id, b.id)) ||
        (a.method == NULL) != (b.method == NULL) || (a.method && strcmp(a.method, b.method)))
        abort();
    if ((b.flags & JSONRPC_F_SCANNED) && (b.root || (a.flags & JSONRPC_F_OPAQUE)))
        abort();
    jsonrpc_msg_tree(&b, p, n);
    if (a.kind != b.kind || a.flags != b.flags || (a.root == NULL) != (b.root == NULL) ||
        (a.root && !json_equal(a.root, b.root)))
        abort();
    jsonrpc_msg_release(&a);
    jsonrpc_msg_release(&b);
}

/* jansson's verdict on a text is a subset of the lax scan's, and where both read an object
 * they agree on its id and method. */
static void check_lax(const char *p, size_t n)
{
    struct jsonrpc_lax lx;
    json_t *v = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    int ok = jsonrpc_lax_scan(p, n, &lx) == 0;
    /* jansson takes a NUL byte between tokens ({"id":0e9\0}), JSON.parse does not. */
    int nul = memchr(p, '\0', n) != NULL;

    if (v == NULL && !nul && json_loadb_ok_as_real(p, n) && !ok)
        abort();
    if (v && !nul && !ok)
        abort();
    if (v && ok && json_is_object(v)) {
        json_t *id = jsonrpc_lax_value(p, &lx.id), *method = jsonrpc_lax_value(p, &lx.method);
        json_t *jid = json_object_get(v, "id"), *jm = json_object_get(v, "method");
        if ((jid == NULL) != (lx.id.type == 0) || (jm == NULL) != (lx.method.type == 0))
            abort();
        if ((jid && !json_is_object(jid) && !json_is_array(jid) && !json_equal(id, jid)) ||
            (jm && json_is_string(jm) && !json_equal(method, jm)))
            abort();
        json_decref(id);
        json_decref(method);
    }
    json_decref(v);
    check_scan(p, n);
}

/* Every line for the client is one JSON value, as jansson or JSON.parse takes it. */
static void check_client_output(struct buf *b)
{
    size_t start = 0;
    for (size_t i = 0; i < b->len; i++) {
        struct jsonrpc_lax lx;
        if (b->data[i] != '\n')
            continue;
        /* jansson's verdict (which a NUL byte can sway), else the lax scan's. */
        if (!json_loadb_ok_as_real(b->data + start, i - start) &&
            jsonrpc_lax_scan(b->data + start, i - start, &lx) < 0)
            abort();
        start = i + 1;
    }
    if (start != b->len)
        abort(); /* never half a line */
    buf_reset(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jsonrpc_framer f;
    struct mcp_backend b = {NULL, f_decide, f_emit, f_canary, NULL, NULL, NULL, 0, 0};
    struct mcp_host h = {NULL, f_now, f_set_timer, f_cancel_timer};
    struct mcp_session_opts o = {.server = "fz", .warn_limit = 3};
    struct mcp_session *s;
    size_t stride, pos, nline = 0;
    const char *line;
    size_t len, held;
    struct jsonrpc_skim sk;

    if (size < 2)
        return 0;
    stride = (size_t)(data[0] % 64) + 1;
    /* 0xfe: a 64 KiB limit, for lines nested past jansson's 2048 levels. */
    jsonrpc_framer_init(&f, data[1] == 0xfe ? 65536 : (size_t)(data[1] % 16 + 1) * 256);
    ntimers = 0;
    clock_ms = 0;
    b.raw_events = b.args_unused = data[0] >= 0x80; /* the fast path (stride: the low 6 bits) */
    s = mcp_session_new(&o, &b, &h);
    jsonrpc_skim_init(&sk);
    jsonrpc_skim_feed(&sk, (const char *)data + 2, size - 2);
    json_decref(jsonrpc_skim_id(&sk));
    check_lax((const char *)data + 2, size - 2);
    for (pos = 2; pos < size; pos += stride) {
        size_t n = size - pos < stride ? size - pos : stride;
        enum jsonrpc_frame k;
        jsonrpc_framer_feed(&f, data + pos, n);
        while ((k = jsonrpc_framer_next(&f, &line, &len)) != JSONRPC_FRAME_NONE) {
            int from_client = (nline++ + data[0]) % 2 == 0;
            if (k == JSONRPC_FRAME_LINE) {
                struct jsonrpc_msg m;
                struct buf key = BUF_INIT;
                if (memchr(line, '\n', len))
                    abort();
                check_lax(line, len);
                jsonrpc_parse_lax(line, len, &m);
                check_msg(&m);
                if (m.id)
                    jsonrpc_id_key(m.id, &key);
                buf_release(&key);
                jsonrpc_msg_release(&m);
                if (from_client)
                    mcp_session_client_line(s, line, len);
                else
                    mcp_session_server_line(s, line, len);
            } else if (from_client) {
                mcp_session_client_too_long(s, len, &f.skim);
            } else {
                mcp_session_server_too_long(s, len, &f.skim);
            }
            check_client_output(mcp_session_to_client(s));
            buf_reset(mcp_session_to_server(s));
        }
        clock_ms += 7;
    }
    /* Fire the timers the session asked for, then end both sides. */
    for (size_t i = 0; i < ntimers; i++) {
        mcp_session_timer(s, timers[i]);
        check_client_output(mcp_session_to_client(s));
    }
    mcp_session_server_eof(s, jsonrpc_framer_finish(&f, &line, &held));
    if (data[0] & 1)
        mcp_session_client_eof(s, 0);
    if (data[0] & 2)
        mcp_session_client_gone(s);
    mcp_session_server_exited(s, "exited with status 0");
    check_client_output(mcp_session_to_client(s));
    mcp_session_finish(s);
    mcp_session_free(s);
    jsonrpc_framer_release(&f);
    return 0;
}
