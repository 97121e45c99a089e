/*
 * jsonrpc: JSON-RPC 2.0 over newline-delimited streams (the MCP stdio transport).
 *
 * Framing: one message per line, '\n' terminated, no embedded newlines. The framer owns one
 * input buffer; the caller reads into it (reserve/commit) and pulls complete lines as slices of
 * it. A line longer than max_line is never held: from the moment it passes the limit its bytes
 * are discarded as they arrive, while a streaming scanner (the skim) picks its top-level "id",
 * "method", "result" and "error" out of it, so the caller can still answer or report it.
 *
 * Classification: each line is parsed once (jansson) and sorted into request, notification,
 * response, error response, batch (a JSON array on one line, allowed in 2025-03-26), not
 * JSON-RPC (valid JSON of the wrong shape), not JSON, or empty. Soft violations (a missing
 * "jsonrpc":"2.0", a null id, malformed params) keep the class and set a flag.
 *
 * Lax scan: jansson refuses some texts that JavaScript's JSON.parse, which Node-based MCP peers
 * use, accepts: a lone surrogate escape ("\ud83d", what JSON.stringify writes for a cut emoji),
 * bytes that are not UTF-8 (Node's stream decoder turns them into U+FFFD before parsing),
 * numbers past the range of a double (1e400 is Infinity) and nesting deeper than jansson's 2048
 * levels. The lax scan checks RFC 8259's grammar without those four limits, builds no tree, and
 * indexes the members of an object as slices of the text. jsonrpc_parse_lax classifies such a
 * line from the scan (JSONRPC_F_OPAQUE: no tree, the members are only slices).
 *
 * Ids: request ids are independent per direction, so a peer keeps one id map per direction.
 * Ids are compared as JSON values by type: 1 and "1" differ; 1 and 1.0 differ too (as JSON
 * texts they do, and SDKs echo ids verbatim).
 */
#ifndef FAULTLINE_CODEC_JSONRPC_H
#define FAULTLINE_CODEC_JSONRPC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/buf.h"

/* Standard and MCP SDK error codes. */
#define JSONRPC_PARSE_ERROR (-32700)
#define JSONRPC_INVALID_REQUEST (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS (-32602)
#define JSONRPC_INTERNAL_ERROR (-32603)
#define JSONRPC_CONNECTION_CLOSED (-32000) /* TypeScript SDK ErrorCode.ConnectionClosed */
#define JSONRPC_REQUEST_TIMEOUT (-32001)   /* TypeScript SDK ErrorCode.RequestTimeout */

/* ---- skim: top-level fields of an object seen as a byte stream ---- */

#define JSONRPC_SKIM_ID_MAX 128
#define JSONRPC_SKIM_METHOD_MAX 128

struct jsonrpc_skim {
    int started;   /* saw the first non-blank byte */
    int is_object; /* the text starts with '{' */
    int is_array;  /* the text starts with '[' */
    int done;      /* the top-level value closed */
    int broken;    /* not object syntax at the top level */
    int state, nest, in_str, esc, capture;
    char key[16];
    size_t keylen;
    int key_long;
    char id[JSONRPC_SKIM_ID_MAX]; /* raw JSON text of a scalar top-level "id" */
    size_t idlen;
    int has_id, id_long;
    char method[JSONRPC_SKIM_METHOD_MAX]; /* raw (still escaped) text of a top-level "method" */
    size_t methodlen;
    int has_method, method_long;
    int has_result, has_error;
};

void jsonrpc_skim_init(struct jsonrpc_skim *s);
/* Feeds the next n bytes of the text. Never fails; garbage sets broken. */
void jsonrpc_skim_feed(struct jsonrpc_skim *s, const char *p, size_t n);
/* The skimmed id as a JSON value (new reference), or NULL when there was none (or it was
 * longer than JSONRPC_SKIM_ID_MAX, or not a string or number). */
json_t *jsonrpc_skim_id(const struct jsonrpc_skim *s);

/* ---- framing ---- */

enum jsonrpc_frame {
    JSONRPC_FRAME_NONE = 0, /* need more input */
    JSONRPC_FRAME_LINE,     /* a complete line */
    JSONRPC_FRAME_TOO_LONG  /* a line over max_line ended; it was dropped (see skim) */
};

struct jsonrpc_framer {
    struct buf in;    /* bytes read and not yet consumed */
    size_t start;     /* start of the current line in `in` */
    size_t scan;      /* where the newline search resumes */
    size_t max_line;  /* longest line delivered, without its '\n' */
    int discarding;   /* inside a line over the limit */
    uint64_t dropped; /* length of that line so far */
    struct jsonrpc_skim skim;
};

/* Initialises caller-owned storage. max_line > 0. */
void jsonrpc_framer_init(struct jsonrpc_framer *f, size_t max_line);
void jsonrpc_framer_release(struct jsonrpc_framer *f);
/* Returns space for n bytes at the end of the input buffer (read(2) into it, then commit).
 * Invalidates every line handed out before. */
char *jsonrpc_framer_reserve(struct jsonrpc_framer *f, size_t n);
void jsonrpc_framer_commit(struct jsonrpc_framer *f, size_t n);
/* reserve + memcpy + commit. */
void jsonrpc_framer_feed(struct jsonrpc_framer *f, const void *p, size_t n);
/*
 * The next frame. LINE: *line and *len give the line without its '\n' (a trailing '\r' is kept:
 * the relay forwards bytes as they came), borrowed until the next reserve or feed.
 * TOO_LONG: *len is the dropped line's length and f->skim what was seen of it; *line is NULL.
 * NONE: no complete line yet.
 */
enum jsonrpc_frame jsonrpc_framer_next(struct jsonrpc_framer *f, const char **line, size_t *len);
/* At end of input: the length of an unterminated last line (0 when there is none), which is
 * dropped. *line points at its first bytes (at most what is still held: a line that went over
 * the limit has none) or is NULL. */
uint64_t jsonrpc_framer_finish(struct jsonrpc_framer *f, const char **line, size_t *held);

/* ---- lax scan ---- */

/* A value inside a text: bytes [off, off + len). type: 0 absent, 's' string, 'n' number,
 * 'o' object, 'a' array, 't' true, 'f' false, 'z' null. */
struct jsonrpc_span {
    size_t off, len;
    char type;
};

/* The top level of a text: its type and, for an object, its JSON-RPC members (the last of
 * duplicate keys, as JSON.parse keeps). */
struct jsonrpc_lax {
    char type;
    struct jsonrpc_span version, id, method, params, result, error;
};

/* Checks that p[0..n) is one JSON text as JSON.parse takes it (above) and indexes its top
 * level into *out. 0, or ERR_PARSE when it is not JSON (*out then says nothing). Nesting is limited
 * only by n; the stack it needs beyond 4096 levels (one bit a level) is allocated. */
int jsonrpc_lax_scan(const char *p, size_t n, struct jsonrpc_lax *out);
/* The last member named key of the object at *obj in the text p that jsonrpc_lax_scan
 * accepted: 1 with *out set, else 0 (no such member, obj not an object). Keys are compared
 * decoded ("\u0069d" is "id"). No allocation for keys without escapes. */
int jsonrpc_lax_member(const char *p, const struct jsonrpc_span *obj, const char *key,
                       struct jsonrpc_span *out);
/* The elements of the array at *arr in a text jsonrpc_lax_scan accepted, in order: *pos is 0
 * for the first call, then left for the next. 1 with *out set, 0 past the last (or arr not an
 * array). */
int jsonrpc_lax_element(const char *p, const struct jsonrpc_span *arr, size_t *pos,
                        struct jsonrpc_span *out);
/* Follows a path of member names (NULL-terminated) from *obj: 1 with *out set, else 0. */
int jsonrpc_lax_path(const char *p, const struct jsonrpc_span *obj, const char *const *keys,
                     struct jsonrpc_span *out);
/* The scalar at *sp as a jansson value (new reference): strings, numbers (an integer too big
 * for json_int_t as a real), true, false, null; NULL for what jansson cannot hold (a lone
 * surrogate, bytes that are not UTF-8, 1e400) and for objects and arrays. */
json_t *jsonrpc_lax_value(const char *p, const struct jsonrpc_span *sp);

/* ---- classification ---- */

enum jsonrpc_kind {
    JSONRPC_EMPTY = 0,    /* a blank line */
    JSONRPC_NOT_JSON,     /* does not parse as JSON */
    JSONRPC_NOT_RPC,      /* JSON, but not a JSON-RPC message */
    JSONRPC_REQUEST,      /* method + id */
    JSONRPC_NOTIFICATION, /* method, no id */
    JSONRPC_RESPONSE,     /* result + id */
    JSONRPC_ERROR,        /* error (+ id, possibly null or absent) */
    JSONRPC_BATCH         /* a non-empty JSON array */
};

/* Soft violations: the message keeps its class. */
enum {
    JSONRPC_F_NO_VERSION = 1 << 0, /* "jsonrpc" missing or not "2.0" */
    JSONRPC_F_NULL_ID = 1 << 1,    /* a request with id null, or an error with id null/absent */
    JSONRPC_F_BAD_PARAMS = 1 << 2, /* params neither object nor array */
    JSONRPC_F_BAD_ERROR = 1 << 3,  /* error not {code: integer, message: string} */
    JSONRPC_F_REAL_ID = 1 << 4,    /* a non-integer numeric id */
    /* jsonrpc_parse_lax only: valid JSON (as JSON.parse takes it) that jansson refused. root,
     * params, result and error are NULL; lax indexes the members; id and method are copies. */
    JSONRPC_F_OPAQUE = 1 << 5,
    /* With F_OPAQUE: the id is there but jansson cannot hold it either; id is NULL. */
    JSONRPC_F_OPAQUE_ID = 1 << 6,
    /* jsonrpc_parse_scan only: a request, notification, response or error that jansson would
     * take, classified from the scan without a tree: as F_OPAQUE (root, params, result and
     * error NULL; lax indexes the members; id and method are copies), but jsonrpc_msg_tree
     * builds the tree when a caller needs it. */
    JSONRPC_F_SCANNED = 1 << 7
};

struct jsonrpc_msg {
    enum jsonrpc_kind kind;
    json_t *root;       /* the parsed value (owned), NULL for EMPTY and NOT_JSON */
    json_t *id;         /* borrowed from root; NULL when absent */
    const char *method; /* borrowed; requests and notifications */
    json_t *params;     /* borrowed, may be NULL */
    json_t *result;     /* borrowed; responses */
    json_t *error;      /* borrowed; error responses */
    unsigned flags;     /* JSONRPC_F_* */
    char why[200];      /* NOT_JSON / NOT_RPC / F_OPAQUE: what is wrong, e.g. "column 12: ..." */
    struct jsonrpc_lax lax; /* F_OPAQUE: where the members are in the line */
    json_t *own_id;         /* F_OPAQUE: the id (owned; id points here) */
    char *own_method;       /* F_OPAQUE: the method, decoded (owned; method points here) */
};

/* Parses and classifies one line. Returns m->kind. m is caller-owned; release it with
 * jsonrpc_msg_release even when the line was not JSON. Never fails otherwise. */
enum jsonrpc_kind jsonrpc_parse(const char *line, size_t len, struct jsonrpc_msg *m);
/* jsonrpc_parse, and a line that jansson refuses but JSON.parse accepts is classified from the
 * lax scan with JSONRPC_F_OPAQUE (root NULL) instead of being NOT_JSON. */
enum jsonrpc_kind jsonrpc_parse_lax(const char *line, size_t len, struct jsonrpc_msg *m);
/* The fast path of a relay: a line that is a JSON-RPC message jansson would take (checked by
 * events_json_check, the events view's scanner) is classified from jsonrpc_lax_scan with
 * JSONRPC_F_SCANNED, no tree built; any other line as jsonrpc_parse_lax does. Release with
 * jsonrpc_msg_release. */
enum jsonrpc_kind jsonrpc_parse_scan(const char *line, size_t len, struct jsonrpc_msg *m);
/* For a message of jsonrpc_parse_scan with F_SCANNED (line, len: the same line): parses the
 * tree, so that m is what jsonrpc_parse_lax makes of the line; a no-op for any other. Returns
 * m->kind. */
enum jsonrpc_kind jsonrpc_msg_tree(struct jsonrpc_msg *m, const char *line, size_t len);
/* Classifies an already parsed value v (borrowed: m->root is set to NULL), e.g. a batch
 * element. m need not be initialised; release it with jsonrpc_msg_release. */
enum jsonrpc_kind jsonrpc_classify(json_t *v, struct jsonrpc_msg *m);
void jsonrpc_msg_release(struct jsonrpc_msg *m);
/* "request", "notification", ... */
const char *jsonrpc_kind_name(enum jsonrpc_kind k);

/* ---- ids ---- */

/* Appends the canonical key of id to out ("n:42", "s:abc", "r:1.5", "null"); 0, or ERR_INVALID
 * for an id that is not a string, number or null. */
int jsonrpc_id_key(const json_t *id, struct buf *out);

struct jsonrpc_idmap_entry;

/* A map from request id to a caller value, one per direction. At most max entries. */
struct jsonrpc_idmap {
    struct jsonrpc_idmap_entry **buckets;
    size_t nbuckets, count, max;
    struct buf key; /* scratch */
};

void jsonrpc_idmap_init(struct jsonrpc_idmap *m, size_t max);
/* Frees the map; free_value (may be NULL) is called for each value left. */
void jsonrpc_idmap_release(struct jsonrpc_idmap *m, void (*free_value)(void *));
/* The value for id, or NULL. */
void *jsonrpc_idmap_get(struct jsonrpc_idmap *m, const json_t *id);
/* Adds id -> value (value non-NULL). 0, ERR_INVALID (id already present or not an id) or
 * ERR_LIMIT (the map holds max entries). */
int jsonrpc_idmap_put(struct jsonrpc_idmap *m, const json_t *id, void *value);
/* Removes id and returns its value, or NULL when absent. */
void *jsonrpc_idmap_take(struct jsonrpc_idmap *m, const json_t *id);
size_t jsonrpc_idmap_count(const struct jsonrpc_idmap *m);
/* Calls fn for each value, in no particular order. fn must not change the map. */
void jsonrpc_idmap_each(struct jsonrpc_idmap *m, void (*fn)(void *value, void *ctx), void *ctx);

/* ---- building messages ---- */

/* Appends v as one compact line plus '\n' to out. 0 or ERR_LIMIT (out's max). */
int jsonrpc_write(struct buf *out, const json_t *v);
/* New references. id is copied (NULL: the id member is null); data and result/params are
 * stolen (may be NULL). */
json_t *jsonrpc_make_error(const json_t *id, int code, const char *message, json_t *data);
json_t *jsonrpc_make_result(const json_t *id, json_t *result);
json_t *jsonrpc_make_request(const json_t *id, const char *method, json_t *params);
json_t *jsonrpc_make_notification(const char *method, json_t *params);

#endif
