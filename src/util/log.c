/* log: see log.h. One write(2) per line so concurrent writers do not interleave. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/err.h"
#include "util/log.h"
#include "util/banned.h"

int log_level = LOG_LEVEL_WARN;
static int log_fd = 2;

static const char *level_names[] = {"error", "warn", "info", "debug"};

int log_open_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return ERR_IO;
    if (log_fd != 2)
        close(log_fd);
    log_fd = fd;
    return 0;
}

int log_set_level_name(const char *name)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            log_level = i;
            return 0;
        }
    }
    return ERR_INVALID;
}

const char *log_level_name(void)
{
    return log_level >= 0 && log_level < 4 ? level_names[log_level] : "?";
}

void log_write(int level, const char *module, const char *fmt, ...)
{
    char line[2048];
    struct timespec ts;
    struct tm tm;
    va_list ap;
    int n, m;
    int saved = errno;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = snprintf(line, sizeof(line),
                 "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
                 level_names[level < 0   ? 0
                             : level > 3 ? 3
                                         : level],
                 module);
    va_start(ap, fmt);
    m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    n += m;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    if (write(log_fd, line, (size_t)n) < 0) {
        /* nowhere left to report it */
    }
    errno = saved;
}
