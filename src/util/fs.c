/* fs: see fs.h. */
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/openat2.h>
#endif

#include "util/fs.h"
#include "util/banned.h"

/* Checks that the freshly opened (O_NONBLOCK) fd is a regular file and makes it blocking.
 * Closes fd on failure. */
static int regular_fd(int fd, const char *name, struct err *e)
{
    struct stat st;
    int fl;

    if (fstat(fd, &st) < 0) {
        int saved = errno;
        close(fd);
        return err_set(e, ERR_IO, "cannot read '%s': %s", name, strerror(saved));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        err_set(e, ERR_IO, "'%s' is not a regular file", name);
        errno = EINVAL;
        return ERR_IO;
    }
    fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int saved = errno;
        close(fd);
        return err_set(e, ERR_IO, "cannot read '%s': %s", name, strerror(saved));
    }
    return fd;
}

int fs_open_regular(const char *path, struct err *e)
{
    /* O_NONBLOCK: opening a FIFO with no writer would block forever; the type is checked
     * on the descriptor (no window between a check and the open), then reads block again */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

    if (fd < 0) {
        int saved = errno;
        err_set(e, ERR_IO, "cannot open '%s': %s", path, strerror(saved));
        errno = saved;
        return ERR_IO;
    }
    return regular_fd(fd, path, e);
}

/* The descriptor-returning helpers below answer like open(2): a descriptor, or FS_NO_FD (the
 * POSIX -1, not an ERR_* code) with errno saying why. */
#define FS_NO_FD (-1)

static int g_no_openat2; /* the kernel said ENOSYS once: use the walk from then on */

void fs_force_walk(int on)
{
    g_no_openat2 = on;
}

/* openat2 beneath dirfd, or FS_NO_FD with errno (ENOSYS when the kernel lacks it). */
static int open_beneath2(int dirfd, const char *rel, int flags)
{
#ifdef SYS_openat2
    struct open_how how;

    if (g_no_openat2) {
        errno = ENOSYS;
        return FS_NO_FD;
    }
    memset(&how, 0, sizeof(how));
    how.flags = (unsigned long long)flags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    for (;;) {
        long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
        if (fd >= 0)
            return (int)fd;
        if (errno == EAGAIN || errno == EINTR)
            continue; /* RESOLVE_* may ask for a retry when a rename raced the lookup */
        if (errno == ENOSYS || errno == EPERM) /* EPERM: a seccomp filter refusing it */
            g_no_openat2 = 1;
        return FS_NO_FD;
    }
#else
    (void)dirfd, (void)rel, (void)flags;
    errno = ENOSYS;
    return FS_NO_FD;
#endif
}

/* The fallback: one openat(O_NOFOLLOW) per component; directories with O_DIRECTORY. A
 * descriptor, or FS_NO_FD with errno. */
static int open_walk(int dirfd, const char *rel, int flags)
{
    char part[NAME_MAX + 1];
    const char *p = rel;
    int cur = dirfd, fd = FS_NO_FD;

    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 && slash) { /* "a//b" */
            p = slash + 1;
            continue;
        }
        if (n == 0 || n > NAME_MAX) {
            errno = n == 0 ? EINVAL : ENAMETOOLONG;
            break;
        }
        memcpy(part, p, n);
        part[n] = '\0';
        if (slash)
            fd = openat(cur, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        else
            fd = openat(cur, part, flags | O_NOFOLLOW);
        if (cur != dirfd) {
            int saved = errno;
            close(cur);
            errno = saved;
        }
        if (fd < 0 || !slash)
            return fd;
        cur = fd;
        p = slash + 1;
    }
    if (cur != dirfd)
        close(cur);
    return FS_NO_FD;
}

/* 1 when rel is relative and holds no ".." or "." component. */
static int rel_ok(const char *rel)
{
    const char *p = rel;

    if (rel[0] == '\0' || rel[0] == '/')
        return 0;
    while (*p) {
        size_t n = strcspn(p, "/");
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        p += n;
        if (*p == '/')
            p++;
    }
    return 1;
}

/* Opens rel beneath root with flags (no symlink followed below root): a descriptor, or
 * FS_NO_FD with errno. */
static int open_beneath(const char *root, const char *rel, int flags)
{
    int dirfd, fd, saved;

    if (root == NULL || rel == NULL || !rel_ok(rel)) {
        errno = EINVAL;
        return FS_NO_FD;
    }
    dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return FS_NO_FD;
    fd = open_beneath2(dirfd, rel, flags);
    if (fd < 0 && errno == ENOSYS)
        fd = open_walk(dirfd, rel, flags);
    saved = errno;
    close(dirfd);
    errno = saved;
    return fd;
}

int fs_open_beneath(const char *root, const char *rel, struct err *e)
{
    char name[PATH_MAX];
    int fd, saved;

    snprintf(name, sizeof(name), "%s/%s", root, rel);
    fd = open_beneath(root, rel, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        saved = errno;
        /* openat2 says ELOOP or EXDEV for a link, the walk ELOOP or ENOTDIR */
        if (saved == ELOOP || saved == EXDEV || saved == ENOTDIR) {
            err_set(e, ERR_IO, "'%s' is a symbolic link or leads out of '%s' (not followed)", name,
                    root);
            saved = ELOOP;
        } else {
            err_set(e, ERR_IO, "cannot open '%s': %s", name, strerror(saved));
        }
        errno = saved;
        return ERR_IO;
    }
    return regular_fd(fd, name, e);
}

int fs_exists_beneath(const char *root, const char *rel)
{
    /* O_PATH opens anything without reading it: a FIFO does not block, a link is seen */
    int fd = open_beneath(root, rel, O_PATH | O_CLOEXEC);

    if (fd >= 0) {
        close(fd);
        return 1;
    }
    return errno != ENOENT; /* a symbolic link exists: reading it will say why it is refused */
}

int fs_read_fd(int fd, const char *name, size_t max, struct buf *out, struct err *e)
{
    size_t start = out->len;
    char chunk[65536];
    struct stat st;
    ssize_t n;

    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size > max)
        return err_set(e, ERR_LIMIT, "'%s' is %lld bytes, over the limit of %zu", name,
                       (long long)st.st_size, max);
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

int fs_read_file(const char *path, size_t max, struct buf *out, struct err *e)
{
    int fd = fs_open_regular(path, e), rc;

    if (fd < 0)
        return fd;
    rc = fs_read_fd(fd, path, max, out, e);
    close(fd);
    return rc;
}

int fs_read_file_beneath(const char *root, const char *rel, size_t max, struct buf *out,
                         struct err *e)
{
    char name[PATH_MAX];
    int fd = fs_open_beneath(root, rel, e), rc;

    if (fd < 0)
        return fd;
    snprintf(name, sizeof(name), "%s/%s", root, rel);
    rc = fs_read_fd(fd, name, max, out, e);
    close(fd);
    return rc;
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

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) < 0 ? errno : 0;
}

int fs_remove_tree(const char *path, struct err *e)
{
    struct stat st;
    int r;

    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : err_set(e, ERR_IO, "%s: %s", path, strerror(errno));
    r = nftw(path, remove_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    if (r != 0)
        return err_set(e, ERR_IO, "cannot remove %s: %s", path, strerror(r > 0 ? r : errno));
    return 0;
}
