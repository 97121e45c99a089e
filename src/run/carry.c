/*
 * carry: see carry.h. The walk is bounded (files, depth, bytes); each file is read whole
 * (at most CARRY_FILE_MAX), rewritten in memory and written through fs_write_file (a temporary
 * file and rename, so a half-written settings file is never seen).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run/carry.h"
#include "run/connect.h"
#include "util/fs.h"
#include "util/banned.h"

static const char *const carried_files[] = {
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".codex/hooks.json",
    ".cursor/hooks.json",
    NULL,
};
#define CARRY_DIR ".faultline"

int carry_is_carried(const char *rel)
{
    for (size_t i = 0; carried_files[i]; i++)
        if (strcmp(rel, carried_files[i]) == 0)
            return 1;
    return strcmp(rel, CARRY_DIR) == 0 || strcmp(rel, CARRY_DIR "/") == 0 ||
           strncmp(rel, CARRY_DIR "/", sizeof(CARRY_DIR)) == 0;
}

static int name_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

int carry_rewrite(const char *text, size_t len, const char *root, const char *to, struct buf *out)
{
    size_t rl = strlen(root), i = 0, start = 0;
    int n = 0, rc;

    while (rl > 0 && i + rl <= len) {
        if (memcmp(text + i, root, rl) == 0 &&
            (i + rl == len || !name_byte((unsigned char)text[i + rl])) &&
            (i == 0 || !name_byte((unsigned char)text[i - 1]))) {
            if ((rc = buf_add(out, text + start, i - start)) < 0 || (rc = buf_adds(out, to)) < 0)
                return rc;
            i += rl;
            start = i;
            n++;
            continue;
        }
        i++;
    }
    if ((rc = buf_add(out, text + start, len - start)) < 0)
        return rc;
    return n;
}

struct carry_ctx {
    const char *project, *work;
    struct buf *log;
    int files, carried;
    struct err *e;
};

/* Makes the parent directories of rel below root. */
static int mkparents(const char *root, const char *rel, struct err *e)
{
    char path[4096];
    const char *slash = strrchr(rel, '/');
    if (slash == NULL)
        return 0;
    if ((size_t)snprintf(path, sizeof(path), "%s/%.*s", root, (int)(slash - rel), rel) >=
        sizeof(path))
        return err_set(e, ERR_LIMIT, "path too long: '%s/%s'", root, rel);
    return fs_mkdirs(path, e);
}

/* The harness whose hook settings file rel is, or ERR_NOTFOUND. */
static int hook_file_harness(const char *rel)
{
    if (strcmp(rel, ".claude/settings.local.json") == 0)
        return CONNECT_CLAUDE_CODE;
    for (int h = 0; h < CONNECT_NHARNESS; h++)
        if (strcmp(rel, connect_settings_path((enum connect_harness)h)) == 0)
            return h;
    return ERR_NOTFOUND;
}

/* Points faultline's gate entries of hook file rel (text in *io) at the sandbox's faultline.
 * Returns 1 when it changed the text. A file connect cannot read as hooks stays as it is: the
 * harness reports it. */
static int retarget_gates(const char *rel, struct buf *io)
{
    struct buf now = BUF_INIT, tmp;
    struct err e = {0};
    int h = hook_file_harness(rel), changed = 0;

    if (h < 0 || connect_apply((enum connect_harness)h, rel, io->data, io->len, CARRY_FAULTLINE,
                               CONNECT_RETARGET, &now, &changed, &e) < 0)
        changed = 0;
    if (changed) {
        tmp = *io;
        *io = now;
        now = tmp;
    }
    buf_release(&now);
    return changed;
}

/* One file: rel below the project. */
static int carry_file(struct carry_ctx *c, const char *rel)
{
    char src[4096], dst[4096];
    struct buf in = BUF_INIT, out = BUF_INIT;
    struct stat st;
    int committed, n, gates, rc = 0;

    if ((size_t)snprintf(src, sizeof(src), "%s/%s", c->project, rel) >= sizeof(src) ||
        (size_t)snprintf(dst, sizeof(dst), "%s/%s", c->work, rel) >= sizeof(dst))
        return err_set(c->e, ERR_LIMIT, "path too long: '%s'", rel);
    committed = lstat(dst, &st) == 0;
    if (committed && !S_ISREG(st.st_mode)) {
        buf_addf(c->log, "skipped %s: not a regular file in the commit\n", rel);
        return 0;
    }
    if (!committed) {
        if (lstat(src, &st) != 0)
            return 0;
        if (!S_ISREG(st.st_mode)) {
            buf_addf(c->log, "skipped %s: not a regular file\n", rel);
            return 0;
        }
    }
    if (++c->files > CARRY_FILES_MAX) {
        rc = err_set(c->e, ERR_LIMIT, "more than %d files to carry in", CARRY_FILES_MAX);
        goto out;
    }
    rc = fs_read_file(committed ? dst : src, CARRY_FILE_MAX, &in, c->e);
    if (rc == ERR_LIMIT) {
        err_clear(c->e);
        rc =
            err_set(c->e, ERR_LIMIT, "'%s' is over %zu bytes: not carried in", rel, CARRY_FILE_MAX);
    }
    if (rc < 0)
        goto out;
    n = carry_rewrite(in.data, in.len, c->project, CARRY_WORKDIR, &out);
    if (n < 0) {
        rc = err_set(c->e, n, "'%s': cannot rewrite", rel);
        goto out;
    }
    gates = retarget_gates(rel, &out);
    if (committed && n == 0 && !gates)
        goto out;
    if (!committed && (rc = mkparents(c->work, rel, c->e)) < 0)
        goto out;
    if ((rc = fs_write_file(dst, out.data, out.len, c->e)) < 0)
        goto out;
    if (committed) {
        buf_addf(c->log, "rewrote %s (%d path%s to " CARRY_WORKDIR "%s)\n", rel, n,
                 n == 1 ? "" : "s", gates ? ", gate hooks to " CARRY_FAULTLINE : "");
    } else {
        c->carried++;
        buf_addf(c->log, "carried in %s (%d path%s rewritten to " CARRY_WORKDIR "%s)\n", rel, n,
                 n == 1 ? "" : "s", gates ? ", gate hooks to " CARRY_FAULTLINE : "");
    }
out:
    buf_release(&in);
    buf_release(&out);
    return rc;
}

/* Every regular file below rel (a directory of the project), sorted by name for a stable log. */
static int carry_dir(struct carry_ctx *c, const char *rel, int depth)
{
    char path[4096], sub[4096];
    struct dirent **names = NULL;
    struct stat st;
    int n, rc = 0;

    if (depth > CARRY_DEPTH_MAX)
        return err_set(c->e, ERR_LIMIT, "'%s' is deeper than %d directories", rel, CARRY_DEPTH_MAX);
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", c->project, rel) >= sizeof(path))
        return err_set(c->e, ERR_LIMIT, "path too long: '%s'", rel);
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    n = scandir(path, &names, NULL, alphasort);
    if (n < 0)
        return err_set(c->e, ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    for (int i = 0; i < n; i++) {
        const char *nm = names[i]->d_name;
        if (rc < 0 || strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
            continue;
        if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", rel, nm) >= sizeof(sub)) {
            rc = err_set(c->e, ERR_LIMIT, "path too long: '%s/%s'", rel, nm);
            continue;
        }
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", c->project, sub) >= sizeof(path)) {
            rc = err_set(c->e, ERR_LIMIT, "path too long: '%s'", sub);
            continue;
        }
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            rc = carry_dir(c, sub, depth + 1);
        else
            rc = carry_file(c, sub);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

int carry_in(const char *project, const char *work, struct buf *log, int *ncarried, struct err *e)
{
    struct carry_ctx c = {.project = project, .work = work, .log = log, .e = e};
    int rc = 0;

    for (size_t i = 0; carried_files[i] && rc == 0; i++)
        rc = carry_file(&c, carried_files[i]);
    if (rc == 0)
        rc = carry_dir(&c, CARRY_DIR, 1);
    if (ncarried)
        *ncarried = c.carried;
    return rc;
}
