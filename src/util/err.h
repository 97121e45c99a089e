/*
 * err: the one error-code enum and the caller-owned error detail.
 *
 * A fallible function returns int: 0, or a negative ERR_* code. Values are only ever appended,
 * never renumbered. Details go into a caller's struct err; the first error set wins, so a
 * function deep in a call chain can describe the failure and callers above it add nothing.
 */
#ifndef FAULTLINE_UTIL_ERR_H
#define FAULTLINE_UTIL_ERR_H

enum err_code {
    ERR_OK = 0,
    ERR_NOMEM = -1,       /* allocation failed */
    ERR_IO = -2,          /* read/write/open failed (errno in the message) */
    ERR_PARSE = -3,       /* malformed input: JSON, YAML, HTTP, JSON-RPC */
    ERR_INVALID = -4,     /* well-formed input that breaks a rule */
    ERR_LIMIT = -5,       /* a size or count limit was reached */
    ERR_NOTFOUND = -6,    /* a named thing does not exist */
    ERR_PROTO = -7,       /* a peer broke a protocol */
    ERR_TIMEOUT = -8,     /* a wait ran out */
    ERR_SYS = -9,         /* a system call failed */
    ERR_UNSUPPORTED = -10 /* valid but not implemented here */
};

struct err {
    int code;
    char msg[256];
};

/* Sets e (if e is non-NULL and not already set) and returns code. */
int err_set(struct err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Empties e for reuse. */
void err_clear(struct err *e);
/* A short stable name for a code: "parse", "limit", ... */
const char *err_name(int code);

#endif
