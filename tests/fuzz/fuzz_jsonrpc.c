/*
 * fuzz_jsonrpc: libFuzzer target for the MCP shim's framing, message classification and
 * session logic. The input is cut into chunks (size from its first byte) and fed through a
 * framer with a small line limit (from its second byte); every line is classified, and handed to
 * a session alternately as coming from the client and from the server, with a fake backend that
 * injects a fault chosen from the tool name. Invariants: no crash, leak or hang; a classified
 * message is consistent with its kind; everything the session writes for the client is one
 * JSON value per line (the client only ever gets protocol messages).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/jsonrpc.h"
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

static int f_decide(void *ctx, const struct plan_call *c, struct mcp_decision *out)
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
    char *s = json_dumps(ev, JSON_COMPACT);
    if (s == NULL)
        abort(); /* events are always serializable */
    free(s);
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
    switch (m->kind) {
    case JSONRPC_EMPTY:
    case JSONRPC_NOT_JSON:
        if (m->root)
            abort();
        break;
    case JSONRPC_REQUEST:
        if (!m->method || !m->id)
            abort();
        break;
    case JSONRPC_NOTIFICATION:
        if (!m->method || m->id)
            abort();
        break;
    case JSONRPC_RESPONSE:
        if (!m->result || !m->id || m->method)
            abort();
        break;
    case JSONRPC_ERROR:
        if (!m->error || m->method)
            abort();
        break;
    case JSONRPC_BATCH:
        if (!json_is_array(m->root) || json_array_size(m->root) == 0)
            abort();
        break;
    case JSONRPC_NOT_RPC:
        if (!m->root || m->method || m->id)
            abort();
        break;
    }
}

/* Every line for the client is one JSON value. */
static void check_client_output(struct buf *b)
{
    size_t start = 0;
    for (size_t i = 0; i < b->len; i++) {
        if (b->data[i] != '\n')
            continue;
        json_t *v = json_loadb(b->data + start, i - start, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (v == NULL) {
            /* Integers too big for jansson are valid JSON; the shim relays them. */
            v = json_loadb(b->data + start, i - start,
                           JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
            if (v == NULL)
                abort();
        }
        json_decref(v);
        start = i + 1;
    }
    if (start != b->len)
        abort(); /* never half a line */
    buf_reset(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jsonrpc_framer f;
    struct mcp_backend b = {NULL, f_decide, f_emit, f_canary, NULL, NULL};
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
    jsonrpc_framer_init(&f, (size_t)(data[1] % 16 + 1) * 256);
    ntimers = 0;
    clock_ms = 0;
    s = mcp_session_new(&o, &b, &h);
    jsonrpc_skim_init(&sk);
    jsonrpc_skim_feed(&sk, (const char *)data + 2, size - 2);
    json_decref(jsonrpc_skim_id(&sk));
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
                jsonrpc_parse(line, len, &m);
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
