/* fs: see fs.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/banned.h"

int fs_read_file(const char *path, size_t max, struct buf *out, struct err *e)
{
    struct stat st;
    int fd;

    /* O_NONBLOCK: opening a FIFO with no writer would block forever; the type is checked
     * before any read, then reads block again as usual for a regular file */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return err_set(e, ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    if (fstat(fd, &st) < 0) {
        int saved = errno;
        close(fd);
        return err_set(e, ERR_IO, "cannot read '%s': %s", path, strerror(saved));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(e, ERR_IO, "'%s' is not a regular file", path);
    }
    if ((size_t)st.st_size > max) {
        close(fd);
        return err_set(e, ERR_LIMIT, "'%s' is %lld bytes, over the limit of %zu", path,
                       (long long)st.st_size, max);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int saved = errno;
        close(fd);
        return err_set(e, ERR_IO, "cannot read '%s': %s", path, strerror(saved));
    }
    int rc = fs_read_fd(fd, path, max, out, e);
    close(fd);
    return rc;
}

int fs_read_fd(int fd, const char *name, size_t max, struct buf *out, struct err *e)
{
    size_t start = out->len;
    char chunk[65536];
    ssize_t n;

    for (;;) {
        n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            buf_truncate(out, start);
            return err_set(e, ERR_IO, "cannot read '%s': %s", name, strerror(saved));
        }
        if (n == 0)
            break;
        if (out->len - start + (size_t)n > max || buf_add(out, chunk, (size_t)n) < 0) {
            buf_truncate(out, start);
            return err_set(e, ERR_LIMIT, "'%s' is over the limit of %zu bytes", name, max);
        }
    }
    return 0;
}

int fs_write_all(int fd, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return ERR_IO;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int fs_write_file(const char *path, const void *p, size_t n, struct err *e)
{
    struct buf tmp = BUF_INIT;
    int fd, rc = 0;

    buf_addf(&tmp, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = err_set(e, ERR_IO, "cannot create '%s': %s", tmp.data, strerror(errno));
        goto out;
    }
    if (fs_write_all(fd, p, n) < 0) {
        rc = err_set(e, ERR_IO, "cannot write '%s': %s", tmp.data, strerror(errno));
        close(fd);
        unlink(tmp.data);
        goto out;
    }
    close(fd);
    if (rename(tmp.data, path) < 0) {
        rc = err_set(e, ERR_IO, "cannot rename to '%s': %s", path, strerror(errno));
        unlink(tmp.data);
    }
out:
    buf_release(&tmp);
    return rc;
}

int fs_mkdirs(const char *path, struct err *e)
{
    struct buf p = BUF_INIT;
    int rc = 0;

    buf_adds(&p, path);
    for (size_t i = 1; i <= p.len; i++) {
        if (p.data[i] != '/' && p.data[i] != '\0')
            continue;
        char c = p.data[i];
        p.data[i] = '\0';
        if (mkdir(p.data, 0755) < 0 && errno != EEXIST) {
            rc = err_set(e, ERR_IO, "cannot create directory '%s': %s", p.data, strerror(errno));
            break;
        }
        p.data[i] = c;
    }
    buf_release(&p);
    return rc;
}

int fs_exe_dir(struct buf *out)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    char *slash;

    if (n <= 0)
        return ERR_IO;
    path[n] = '\0';
    slash = strrchr(path, '/');
    if (slash == NULL)
        return ERR_IO;
    *slash = '\0';
    return buf_adds(out, path[0] ? path : "/");
}
