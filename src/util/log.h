/*
 * log: leveled diagnostics to stderr or a --log FILE.
 *
 * Lines: "2026-11-29T19:21:31.123Z level module: message". The level is tested before the
 * arguments are evaluated (redis serverLog). Components that speak a protocol on stdout (the
 * MCP shim, hook gates) must never log there: this module writes only to stderr or a file.
 * Never pass a secret (API key, Authorization, cookie) to these functions; redact first.
 */
#ifndef FAULTLINE_UTIL_LOG_H
#define FAULTLINE_UTIL_LOG_H

enum log_level { LOG_LEVEL_ERROR = 0, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

extern int log_level;

/* Sends log lines to path (appending) instead of stderr. 0 or ERR_IO. */
int log_open_file(const char *path);
/* Parses "error|warn|info|debug"; 0 or ERR_INVALID. */
int log_set_level_name(const char *name);
/* The current level's name ("warn" until set): the default an option table shows. */
const char *log_level_name(void);
void log_write(int level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_at(lvl, mod, ...)                                                                      \
    do {                                                                                           \
        if ((lvl) <= log_level)                                                                    \
            log_write((lvl), (mod), __VA_ARGS__);                                                  \
    } while (0)
#define log_error(mod, ...) log_at(LOG_LEVEL_ERROR, mod, __VA_ARGS__)
#define log_warn(mod, ...) log_at(LOG_LEVEL_WARN, mod, __VA_ARGS__)
#define log_info(mod, ...) log_at(LOG_LEVEL_INFO, mod, __VA_ARGS__)
#define log_debug(mod, ...) log_at(LOG_LEVEL_DEBUG, mod, __VA_ARGS__)

#endif
