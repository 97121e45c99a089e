/*
 * fs: whole-file reads with a size limit, atomic writes, directories.
 */
#ifndef FAULTLINE_UTIL_FS_H
#define FAULTLINE_UTIL_FS_H

#include <stddef.h>

#include "util/buf.h"
#include "util/err.h"

/* The one way a file from a run folder or an experiment is opened for reading. Opens path
 * read-only with O_NONBLOCK (opening a FIFO with no writer never blocks), checks the opened
 * descriptor with fstat (a FIFO, device, socket or directory is refused:
 * "'x' is not a regular file"), then clears O_NONBLOCK so that reads behave as usual. Returns
 * the descriptor (caller closes), or ERR_IO with e set (message names the path and errno;
 * errno is left ENOENT for a missing file, EINVAL for one that is not regular). */
int fs_open_regular(const char *path, struct err *e);
/* Like fs_open_regular for root/rel, without following any symbolic link below root (root
 * itself, named by the user, may be one): openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
 * where the kernel has it, else a walk of openat(O_NOFOLLOW) per component. rel must be
 * relative, without "..". A symbolic link in rel is refused: "'root/rel' is a symbolic link
 * (not followed)" with errno ELOOP; errno ENOENT when a component is missing, EINVAL when
 * the file is not regular. Returns the descriptor or ERR_IO. */
int fs_open_beneath(const char *root, const char *rel, struct err *e);
/* Tests: 1 makes fs_open_beneath use its openat(O_NOFOLLOW) walk as on a kernel without
 * openat2; 0 lets it try openat2 again. */
void fs_force_walk(int on);
/* 1 when root/rel exists (as anything, a symbolic link included, not followed), else 0. */
int fs_exists_beneath(const char *root, const char *rel);
/* Appends the contents of the regular file at path to out (opened with fs_open_regular).
 * ERR_IO (see fs_open_regular) or ERR_LIMIT (file larger than max bytes; nothing appended). */
int fs_read_file(const char *path, size_t max, struct buf *out, struct err *e);
/* fs_read_file for root/rel opened with fs_open_beneath. */
int fs_read_file_beneath(const char *root, const char *rel, size_t max, struct buf *out,
                         struct err *e);
/* Reads all of the open descriptor fd (its name, for messages, is name) into out, at most max
 * bytes. 0, ERR_IO or ERR_LIMIT (nothing appended). Does not close fd. */
int fs_read_fd(int fd, const char *name, size_t max, struct buf *out, struct err *e);
/* Writes p[0..n) to path through a temporary file and rename(2). 0 or ERR_IO. */
int fs_write_file(const char *path, const void *p, size_t n, struct err *e);
/* mkdir -p with mode 0755. 0 or ERR_IO. */
int fs_mkdirs(const char *path, struct err *e);
/* Writes all of p[0..n) to fd, retrying on EINTR and short writes. 0 or ERR_IO. */
int fs_write_all(int fd, const void *p, size_t n);
/* Directory holding the running executable (from /proc/self/exe), into out. 0 or ERR_IO. */
int fs_exe_dir(struct buf *out);
/* rm -rf path: removes it and everything beneath, never following a symbolic link and never
 * crossing into another file system (a bind mount left behind stays, and is an error). A path
 * that does not exist is fine. 0, or ERR_IO naming the first entry that could not go. */
int fs_remove_tree(const char *path, struct err *e);

#endif
