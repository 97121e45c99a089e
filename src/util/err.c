/* err: see err.h. */
#include <stdarg.h>
#include <stdio.h>

#include "util/err.h"
#include "util/banned.h"

int err_set(struct err *e, int code, const char *fmt, ...)
{
    va_list ap;

    if (e == NULL || e->code != 0)
        return code;
    e->code = code;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return code;
}

void err_clear(struct err *e)
{
    e->code = 0;
    e->msg[0] = '\0';
}

const char *err_name(int code)
{
    switch (code) {
    case ERR_OK:
        return "ok";
    case ERR_NOMEM:
        return "nomem";
    case ERR_IO:
        return "io";
    case ERR_PARSE:
        return "parse";
    case ERR_INVALID:
        return "invalid";
    case ERR_LIMIT:
        return "limit";
    case ERR_NOTFOUND:
        return "notfound";
    case ERR_PROTO:
        return "proto";
    case ERR_TIMEOUT:
        return "timeout";
    case ERR_SYS:
        return "sys";
    case ERR_UNSUPPORTED:
        return "unsupported";
    }
    return "unknown";
}
