/*
 * fs: whole-file reads with a size limit, atomic writes, directories.
 */
#ifndef FAULTLINE_UTIL_FS_H
#define FAULTLINE_UTIL_FS_H

#include <stddef.h>

#include "util/buf.h"
#include "util/err.h"

/* Appends the contents of the regular file at path to out. ERR_IO (cannot open/read, message
 * names the path and errno; "'x' is not a regular file" for a FIFO, device, socket or directory,
 * refused without blocking: the open is non-blocking) or ERR_LIMIT (file larger than max bytes;
 * nothing appended). */
int fs_read_file(const char *path, size_t max, struct buf *out, struct err *e);
/* Appends what fd holds up to its end (a pipe, stdin) to out; name is for messages. ERR_IO or
 * ERR_LIMIT (more than max bytes; nothing appended). Does not close fd. */
int fs_read_fd(int fd, const char *name, size_t max, struct buf *out, struct err *e);
/* Writes p[0..n) to path through a temporary file and rename(2). 0 or ERR_IO. */
int fs_write_file(const char *path, const void *p, size_t n, struct err *e);
/* mkdir -p with mode 0755. 0 or ERR_IO. */
int fs_mkdirs(const char *path, struct err *e);
/* Writes all of p[0..n) to fd, retrying on EINTR and short writes. 0 or ERR_IO. */
int fs_write_all(int fd, const void *p, size_t n);
/* Directory holding the running executable (from /proc/self/exe), into out. 0 or ERR_IO. */
int fs_exe_dir(struct buf *out);

#endif
