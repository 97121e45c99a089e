/*
 * oci_image: the oci backend's two built-in images (oci.h), made on first use from files of
 * this machine, since no registry can be pulled from.
 *
 * Both start from the same skeleton root: the mount points the sandbox binds over (/work,
 * /home/agent, /opt/faultline/bin, /tmp, /proc, /dev, /sys), the /bin, /sbin, /lib, /lib64
 * links of a merged /usr, and an /etc/passwd and /etc/group naming root and nobody (the
 * sandbox user). Each is a tar of that root, imported with `ENGINE import`.
 *
 *   localhost/faultline-sandbox:1        the skeleton alone: the host's /usr and /etc are
 *                                        bound into it read-only at run time (oci.c).
 *   localhost/faultline-sandbox-node:1   self-contained, its own /usr: the files
 *                                        `dpkg-query -L` lists for a minimal Debian userland
 *                                        (sh, bash, coreutils, grep, sed, findutils, tar,
 *                                        gzip, the libc, ca-certificates, git) and nodejs,
 *                                        less documentation; the node_modules directory npm
 *                                        lives in, whole, with the npm and npx commands; the
 *                                        host's /etc/ssl/certs; and every library `ldd` names
 *                                        for its executables and for the faultline executable
 *                                        bound into it (so the supervisor and the shims run
 *                                        there). The tar is made by tar itself from those host
 *                                        paths (no copy), each path canonical (/bin/dash is
 *                                        usr/bin/dash), with CMD /bin/sh and the label
 *                                        faultline.libs naming that faultline's
 *                                        libraries: a faultline that needs one it lacks
 *                                        (an ASan build after a release one) has the image
 *                                        made again (node_fits).
 *
 * A user extends either with a Containerfile `FROM` it (docs/sandbox.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/backend.h"
#include "sandbox/oci.h"
#include "util/buf.h"
#include "util/fs.h"

#include "util/banned.h"

#define OCI_LIST_MAX (16u << 20)  /* dpkg-query's and ldd's output */
#define OCI_PATHS_MAX 200000      /* paths in the -node image's list */
#define OCI_LIST_TIMEOUT_MS 60000 /* dpkg-query, ldd */
#define OCI_TAR_TIMEOUT_MS 300000 /* tar and import of the -node image (about 200 MB) */

/* The Debian packages of the -node image's userland; nodejs is the one that brings node. */
static const char *const node_packages[] = {
    "dash",  "bash", "coreutils",       "grep",   "sed", "findutils", "tar", "gzip",
    "libc6", "git",  "ca-certificates", "nodejs",
};

/* What the packages list that an agent does not need (canonical paths). */
static const char *const excluded[] = {"/usr/share/doc",    "/usr/share/man",     "/usr/share/info",
                                       "/usr/share/locale", "/usr/share/lintian", "/usr/include"};

static const char passwd[] = "root:x:0:0:root:/root:/bin/sh\n"
                             "nobody:x:65534:65534:nobody:" SANDBOX_HOME ":/bin/sh\n";
static const char group[] = "root:x:0:\nnogroup:x:65534:\n";

const char *oci_image_name(const char *image)
{
    if (image == NULL || *image == '\0')
        return OCI_DEFAULT_IMAGE;
    if (strcmp(image, OCI_NODE_SHORT) == 0)
        return OCI_NODE_IMAGE;
    return image;
}

/* ---- a set of relative paths ---- */

struct paths {
    char **v;
    size_t n, cap;
};

static int paths_add(struct paths *s, const char *rel, struct err *e)
{
    if (s->n >= OCI_PATHS_MAX)
        return err_set(e, ERR_LIMIT, "sandbox: the -node image would hold more than %d paths",
                       OCI_PATHS_MAX);
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = xstrdup(rel);
    return 0;
}

static void paths_release(struct paths *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int under(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* ---- the -node image's list ---- */

struct node_list {
    struct paths files; /* archived as they are (no recursion) */
    struct paths trees; /* archived whole */
    struct paths elves; /* executables to ask ldd about (absolute) */
};

static int is_elf(const char *path)
{
    unsigned char m[4];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t n;

    if (fd < 0)
        return 0;
    n = read(fd, m, sizeof(m));
    close(fd);
    return n == 4 && m[0] == 0x7f && m[1] == 'E' && m[2] == 'L' && m[3] == 'F';
}

/* Adds host path p, made canonical (its directory resolved: /bin/dash is /usr/bin/dash), when
 * it exists and is not excluded; a symbolic link brings its target too, an executable ELF file
 * goes to ldd. */
static int add_host_path(struct node_list *l, const char *p, struct err *e)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(p, '/'), *base;
    struct buf c = BUF_INIT;
    struct stat st;
    int rc = 0;

    if (p[0] != '/' || slash == NULL || slash[1] == '\0' || strcmp(slash, "/.") == 0)
        return 0;
    base = slash + 1;
    if ((size_t)(slash - p) >= sizeof(dir))
        return 0;
    memcpy(dir, p, (size_t)(slash - p));
    dir[slash - p] = '\0';
    if (realpath(dir[0] ? dir : "/", real) == NULL)
        return 0; /* listed but gone (a file the package's maintainer scripts removed) */
    buf_addf(&c, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base);
    for (size_t i = 0; i < sizeof(excluded) / sizeof(excluded[0]); i++)
        if (under(c.data, excluded[i]))
            goto out;
    if (lstat(c.data, &st) < 0)
        goto out;
    if ((rc = paths_add(&l->files, c.data + 1, e)) < 0)
        goto out;
    if (S_ISLNK(st.st_mode)) {
        if (realpath(c.data, real) != NULL && strcmp(real, c.data) != 0)
            rc = add_host_path(l, real, e);
    } else if (S_ISREG(st.st_mode) && (st.st_mode & 0111) && is_elf(c.data)) {
        rc = paths_add(&l->elves, c.data, e);
    }
out:
    buf_release(&c);
    return rc;
}

/* Every line of text that is an absolute path, through add_host_path. */
static int add_lines(struct node_list *l, char *text, struct err *e)
{
    int rc = 0;

    for (char *line = text, *nl; rc == 0 && line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (line[0] == '/')
            rc = add_host_path(l, line, e);
    }
    return rc;
}

/* The packages' files. */
static int add_packages(struct node_list *l, struct err *e)
{
    const char *argv[sizeof(node_packages) / sizeof(node_packages[0]) + 3];
    struct buf out = BUF_INIT;
    size_t n = 0;
    int code, rc;

    argv[n++] = "dpkg-query";
    argv[n++] = "-L";
    for (size_t i = 0; i < sizeof(node_packages) / sizeof(node_packages[0]); i++)
        argv[n++] = node_packages[i];
    argv[n] = NULL;
    code = oci_run_tool(argv, &out, OCI_LIST_MAX, OCI_LIST_TIMEOUT_MS, e);
    if (code == ERR_NOTFOUND) {
        err_clear(e);
        rc = err_set(e, ERR_NOTFOUND,
                     "sandbox: the -node image is made from this machine's Debian packages, and "
                     "dpkg-query is not installed");
    } else if (code != 0) {
        char *first = strchr(out.data, '\n');
        if (first)
            *first = '\0';
        rc = code < 0 ? code
                      : err_set(e, ERR_NOTFOUND,
                                "sandbox: the -node image needs Debian packages this machine "
                                "lacks (apt-get install nodejs git ca-certificates): %.160s",
                                out.data);
    } else {
        rc = add_lines(l, out.data, e);
    }
    buf_release(&out);
    return rc;
}

/* The node_modules directory npm lives in, whole (nodejs's bundled npm, or Debian's npm and
 * the node-* packages beside it), and the npm and npx commands. */
static int add_npm(struct node_list *l, struct err *e)
{
    static const char *const cmds[] = {"/usr/bin/npm", "/usr/bin/npx", "/usr/local/bin/npm",
                                       "/usr/local/bin/npx"};
    char real[PATH_MAX];
    int rc = 0, found = 0;

    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && rc == 0; i++) {
        char *cut;
        if (realpath(cmds[i], real) == NULL)
            continue;
        if ((rc = add_host_path(l, cmds[i], e)) < 0)
            break;
        if (found++)
            continue;
        /* .../node_modules/npm/bin/npm-cli.js: three levels up */
        for (int k = 0; k < 3 && (cut = strrchr(real, '/')) != NULL && cut != real; k++)
            *cut = '\0';
        rc = paths_add(&l->trees, real + 1, e);
    }
    if (rc == 0 && !found)
        rc = err_set(e, ERR_NOTFOUND,
                     "sandbox: the -node image needs npm, which is not installed (apt-get "
                     "install nodejs npm)");
    return rc;
}

/* Runs argv ("ldd", files..., NULL) and passes every library path it names to fn. ldd exits
 * 1 when one of many files is not dynamic (a static helper): the other files' lines count. */
static int ldd_each(const char *const *argv, int (*fn)(void *arg, const char *lib, struct err *e),
                    void *arg, struct err *e)
{
    struct buf out = BUF_INIT;
    int code = oci_run_tool(argv, &out, OCI_LIST_MAX, OCI_LIST_TIMEOUT_MS, e), rc = 0;

    if (code < 0) {
        buf_release(&out);
        return code;
    }
    for (char *line = out.data, *nl; rc == 0 && line && *line; line = nl ? nl + 1 : NULL) {
        char *p, *end;
        nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (line[0] != '\t')
            continue; /* "FILE:" */
        if ((p = strstr(line, "=> ")) != NULL)
            p += 3;
        else
            p = line + 1;
        if (*p != '/' || (end = strstr(p, " (")) == NULL)
            continue; /* the vDSO, "not found", "not a dynamic executable" */
        *end = '\0';
        rc = fn(arg, p, e);
    }
    buf_release(&out);
    return rc;
}

static int add_library(void *arg, const char *lib, struct err *e)
{
    return add_host_path(arg, lib, e);
}

/* The libraries ldd names for the executables found and for self_exe. */
static int add_libraries(struct node_list *l, const char *self_exe, struct err *e)
{
    const char **argv = xcalloc(l->elves.n + 3, sizeof(*argv));
    size_t n = 0;
    int rc;

    argv[n++] = "ldd";
    argv[n++] = self_exe;
    for (size_t i = 0; i < l->elves.n; i++)
        argv[n++] = l->elves.v[i];
    argv[n] = NULL;
    rc = ldd_each(argv, add_library, l, e);
    free(argv);
    return rc;
}

static int add_to_label(void *arg, const char *lib, struct err *e)
{
    struct buf *b = arg;

    if (strchr(lib, ':') == NULL)
        buf_addf(b, "%s%s", b->len ? ":" : "", lib);
    return 0;
}

/* The libraries of the faultline executable, as ldd names them, ':'-separated, into b: the
 * -node image's OCI_LIBS_LABEL, which tells whether a faultline build can run in it. */
static int self_libs(const char *self_exe, struct buf *b, struct err *e)
{
    const char *argv[] = {"ldd", self_exe, NULL};

    buf_reset(b);
    return ldd_each(argv, add_to_label, b, e);
}

/* 1 when every library of want (a self_libs list) is in have (an image's label). */
static int libs_cover(const char *have, const char *want)
{
    size_t hn = strlen(have);

    while (*want) {
        const char *end = strchr(want, ':');
        size_t n = end ? (size_t)(end - want) : strlen(want);
        int found = 0;
        for (const char *h = have; !found && h < have + hn;) {
            const char *he = strchr(h, ':');
            size_t k = he ? (size_t)(he - h) : strlen(h);
            found = k == n && strncmp(h, want, n) == 0;
            h += k + (he ? 1 : 0);
        }
        if (!found)
            return 0;
        want += n + (end ? 1 : 0);
    }
    return 1;
}

/* Writes the list for `tar -T`: sorted, each path once, none the skeleton root (dir) has and
 * none inside a tree archived whole (an image layer may not name a path twice). */
static int write_list(struct node_list *l, const char *dir, const char *file, struct err *e)
{
    struct buf b = BUF_INIT, sk = BUF_INIT;
    int rc;

    qsort(l->files.v, l->files.n, sizeof(*l->files.v), cmp_str);
    for (size_t i = 0; i < l->files.n; i++) {
        int skip = i > 0 && strcmp(l->files.v[i], l->files.v[i - 1]) == 0;
        struct stat st;
        for (size_t t = 0; t < l->trees.n && !skip; t++)
            skip = under(l->files.v[i], l->trees.v[t]);
        buf_reset(&sk);
        buf_addf(&sk, "%s/%s", dir, l->files.v[i]);
        if (!skip && lstat(sk.data, &st) < 0)
            buf_addf(&b, "%s\n", l->files.v[i]);
    }
    rc = fs_write_file(file, b.data, b.len, e);
    buf_release(&b);
    buf_release(&sk);
    return rc;
}

/* ---- building ---- */

void oci_import_argv(struct args *a, const char *eng, const char *tar, const char *image,
                     const char *label)
{
    args_add(a, eng);
    args_add(a, "import");
    if (strcmp(eng, "docker") != 0)
        args_add(a, "--quiet"); /* podman's; docker's import has none */
    if (strcmp(image, OCI_NODE_IMAGE) == 0) {
        args_add(a, "--change");
        args_add(a, "CMD [\"/bin/sh\"]");
    }
    if (label) {
        args_add(a, "--change");
        args_add(a, label);
    }
    args_add(a, tar);
    args_add(a, image);
}

/* The skeleton root (see the top of the file) under dir. */
static int make_skeleton(const char *dir, struct err *e)
{
    static const char *const dirs[] = {
        "usr", "etc", "work", "home",          "home/agent",        "tmp", "proc",
        "dev", "sys", "opt",  "opt/faultline", "opt/faultline/bin", "root"};
    static const char *const links[][2] = {
        {"usr/bin", "bin"}, {"usr/sbin", "sbin"}, {"usr/lib", "lib"}, {"usr/lib64", "lib64"}};
    struct buf path = BUF_INIT;
    int rc = 0;

    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && rc == 0; i++) {
        buf_reset(&path);
        buf_addf(&path, "%s/%s", dir, dirs[i]);
        rc = fs_mkdirs(path.data, e);
    }
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]) && rc == 0; i++) {
        buf_reset(&path);
        buf_addf(&path, "%s/%s", dir, links[i][1]);
        if (symlink(links[i][0], path.data) < 0)
            rc = err_set(e, ERR_IO, "sandbox: symlink %s: %s", path.data, strerror(errno));
    }
    if (rc == 0) {
        buf_reset(&path);
        buf_addf(&path, "%s/tmp", dir);
        chmod(path.data, 01777);
        buf_reset(&path);
        buf_addf(&path, "%s/etc/passwd", dir);
        rc = fs_write_file(path.data, passwd, sizeof(passwd) - 1, e);
    }
    if (rc == 0) {
        buf_reset(&path);
        buf_addf(&path, "%s/etc/group", dir);
        rc = fs_write_file(path.data, group, sizeof(group) - 1, e);
    }
    buf_release(&path);
    return rc;
}

/* Runs argv, a step of the build: 0, or an error naming what and its first output. */
static int build_step(const char *const *argv, const char *what, int timeout_ms, struct err *e)
{
    struct buf out = BUF_INIT;
    int code = oci_run_tool(argv, &out, 4096, timeout_ms, e), rc = 0;

    if (code != 0)
        rc = code < 0
                 ? code
                 : err_set(e, ERR_IO, "sandbox: %s failed (exit %d): %.200s", what, code, out.data);
    buf_release(&out);
    return rc;
}

static int build(const char *eng, const char *image, const char *self_exe, struct err *e)
{
    char tmp[] = "/tmp/faultline-image-XXXXXX";
    struct buf root = BUF_INIT, tar = BUF_INIT, list = BUF_INIT, what = BUF_INIT;
    struct node_list l;
    struct args ia = {0};
    struct buf label = BUF_INIT, libs = BUF_INIT;
    struct err re = {0};
    int node = strcmp(image, OCI_NODE_IMAGE) == 0, rc;
    const char *argv[32];
    size_t n = 0;

    memset(&l, 0, sizeof(l));
    if (mkdtemp(tmp) == NULL)
        return err_set(e, ERR_IO, "sandbox: mkdtemp: %s", strerror(errno));
    buf_addf(&root, "%s/root", tmp);
    buf_addf(&tar, "%s/root.tar", tmp);
    buf_addf(&list, "%s/list", tmp);
    if ((rc = make_skeleton(root.data, e)) < 0)
        goto out;
    if (node && ((rc = add_packages(&l, e)) < 0 || (rc = add_npm(&l, e)) < 0 ||
                 (rc = add_libraries(&l, self_exe, e)) < 0 ||
                 (rc = paths_add(&l.trees, "etc/ssl/certs", e)) < 0 ||
                 (rc = write_list(&l, root.data, list.data, e)) < 0))
        goto out;
    argv[n++] = "tar";
    argv[n++] = "--numeric-owner";
    argv[n++] = "-cf";
    argv[n++] = tar.data;
    argv[n++] = "-C";
    argv[n++] = root.data;
    argv[n++] = ".";
    if (node) {
        argv[n++] = "-C";
        argv[n++] = "/";
        for (size_t i = 0; i < l.trees.n && n < sizeof(argv) / sizeof(argv[0]) - 5; i++)
            argv[n++] = l.trees.v[i];
        argv[n++] = "--no-recursion";
        argv[n++] = "-T";
        argv[n++] = list.data;
    }
    argv[n] = NULL;
    if ((rc = build_step(argv, "tar of the image root", OCI_TAR_TIMEOUT_MS, e)) < 0)
        goto out;
    if (node) {
        buf_addf(&label, "LABEL " OCI_LIBS_LABEL "=");
        if ((rc = self_libs(self_exe, &libs, e)) < 0)
            goto out;
        buf_adds(&label, libs.data);
    }
    oci_import_argv(&ia, eng, tar.data, image, node ? label.data : NULL);
    buf_addf(&what, "%s import of %s", eng, image);
    rc = build_step(ia.v, what.data, OCI_TAR_TIMEOUT_MS, e);
out:
    args_release(&ia);
    fs_remove_tree(tmp, &re);
    paths_release(&l.files);
    paths_release(&l.trees);
    paths_release(&l.elves);
    buf_release(&root);
    buf_release(&tar);
    buf_release(&list);
    buf_release(&what);
    buf_release(&label);
    buf_release(&libs);
    return rc;
}

/* For the -node image that is there: 1 when it holds every library of self_exe (its label says
 * which it was made with), else 0 (made by a build that links fewer, or before the label). */
static int node_fits(const char *eng, const char *self_exe, struct err *e)
{
    const char *argv[] = {eng,
                          "image",
                          "inspect",
                          "--format",
                          "{{index .Labels \"" OCI_LIBS_LABEL "\"}}",
                          OCI_NODE_IMAGE,
                          NULL};
    struct buf have = BUF_INIT, want = BUF_INIT;
    int code = oci_run_tool(argv, &have, 1 << 16, OCI_LIST_TIMEOUT_MS, e), fits;

    if (code < 0) {
        fits = code;
    } else if ((fits = self_libs(self_exe, &want, e)) == 0) {
        while (have.len && (have.data[have.len - 1] == '\n' || have.data[have.len - 1] == ' '))
            buf_truncate(&have, have.len - 1);
        fits = code == 0 && libs_cover(have.data, want.data);
    }
    buf_release(&have);
    buf_release(&want);
    return fits;
}

int oci_image_ensure(const char *eng, const char *image, const char *self_exe, struct err *e)
{
    /* the built-in images known to be there, per process (one repetition after another asks
     * nothing more of the engine) */
    static int there[2];
    int node = strcmp(image, OCI_NODE_IMAGE) == 0, code;
    char self[PATH_MAX];

    if (!node && strcmp(image, OCI_DEFAULT_IMAGE) != 0)
        return 0;
    if (there[node])
        return 0;
    if (self_exe == NULL) {
        ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (k <= 0)
            return err_set(e, ERR_IO, "sandbox: cannot find the faultline executable: %s",
                           strerror(errno));
        self[k] = '\0';
        self_exe = self;
    }
    {
        const char *argv[] = {eng, "image", "inspect", image, NULL};
        code = oci_run_tool(argv, NULL, 0, OCI_LIST_TIMEOUT_MS, e);
    }
    if (code < 0)
        return code;
    /* there, but made by a faultline that links fewer libraries than this one: made again */
    if (code == 0 && node && (code = node_fits(eng, self_exe, e)) >= 0)
        code = !code;
    if (code < 0)
        return code;
    if (code != 0 && (code = build(eng, image, self_exe, e)) < 0)
        return code;
    there[node] = 1;
    return 0;
}
