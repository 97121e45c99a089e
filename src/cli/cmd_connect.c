/*
 * cmd_connect: `faultline connect [claude-code|codex|cursor|all] [--dry-run] [--remove]
 * [--project DIR]` writes the project's hook settings so that each harness runs
 * `faultline gate HARNESS` (this binary, by its absolute path) before every tool call; the
 * merge is src/run/connect.c. For each file that changes: FILE.bak gets the file as it was
 * (when there was one), then the new text replaces it atomically; a file that already says
 * the same is left alone. --dry-run prints the unified diff of each change and writes nothing;
 * --remove takes faultline's entries out again. Exit: 0 done (or nothing to do), 1 a file
 * cannot be read or written, 2 a settings file that is not valid JSON or not shaped as its
 * harness reads it (nothing is written then), 64 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "run/connect.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

/* One harness: read, merge, then (unless dry) back up and write. Returns an exit code. */
static int connect_one(enum connect_harness h, const char *project, const char *self, int dry,
                       int remove)
{
    struct buf path = BUF_INIT, old = BUF_INIT, now = BUF_INIT, bak = BUF_INIT, dir = BUF_INIT;
    struct buf diff = BUF_INIT;
    struct err e = {0};
    struct stat st;
    const char *rel = connect_settings_path(h);
    int exists, changed, rc = EXIT_FAIL;

    buf_addf(&path, "%s/%s", project, rel);
    exists = stat(path.data, &st) == 0;
    if (!exists && errno != ENOENT) {
        fprintf(stderr, "faultline connect: cannot read '%s': %s\n", path.data, strerror(errno));
        goto out;
    }
    if (exists && fs_read_file(path.data, CONNECT_FILE_MAX, &old, &e) < 0) {
        fprintf(stderr, "faultline connect: %s\n", e.msg);
        goto out;
    }
    if (connect_apply(h, rel, exists ? old.data : NULL, old.len, self,
                      remove ? CONNECT_REMOVE : CONNECT_ADD, &now, &changed, &e) < 0) {
        fprintf(stderr, "faultline connect: %s (nothing written)\n", e.msg);
        rc = e.code == ERR_PARSE || e.code == ERR_INVALID || e.code == ERR_LIMIT ? EXIT_INVALID
                                                                                 : EXIT_FAIL;
        goto out;
    }
    if (!changed) {
        printf("%s: %s\n", rel, remove ? "no faultline hooks" : "already connected");
        rc = EXIT_OK;
        goto out;
    }
    if (dry) {
        connect_diff(exists ? rel : "/dev/null", old.data, rel, now.data, &diff);
        fputs(diff.data, stdout);
        rc = EXIT_OK;
        goto out;
    }
    if (exists) {
        buf_addf(&bak, "%s.bak", path.data);
        if (fs_write_file(bak.data, old.data, old.len, &e) < 0) {
            fprintf(stderr, "faultline connect: %s (nothing changed)\n", e.msg);
            goto out;
        }
    } else {
        buf_addf(&dir, "%s/%.*s", project, (int)(strchr(rel, '/') - rel), rel);
        if (fs_mkdirs(dir.data, &e) < 0) {
            fprintf(stderr, "faultline connect: %s\n", e.msg);
            goto out;
        }
    }
    if (fs_write_file(path.data, now.data, now.len, &e) < 0) {
        fprintf(stderr, "faultline connect: %s\n", e.msg);
        goto out;
    }
    if (exists)
        printf("%s: %s (the previous version in %s.bak)\n", rel,
               remove ? "faultline hooks removed" : "connected", rel);
    else
        printf("%s: connected (new file)\n", rel);
    rc = EXIT_OK;
out:
    buf_release(&path);
    buf_release(&old);
    buf_release(&now);
    buf_release(&bak);
    buf_release(&dir);
    buf_release(&diff);
    return rc;
}

int cmd_connect(int argc, char **argv)
{
    int dry = 0, remove = 0, nargs, rc, worst = EXIT_OK;
    const char *project = ".";
    const struct opt opts[] = {
        OPT_BOOL("dry-run", 'n', &dry, "print the unified diff of each change, write nothing"),
        OPT_BOOL("remove", 0, &remove, "take faultline's hooks out again"),
        OPT_STRING("project", "DIR", &project, NULL,
                   "the project (default: the working directory)"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "connect",
        .usage = "[claude-code | codex | cursor | all] [--dry-run] [--remove]",
        .about = "Writes the project's hook settings so that the harness runs `faultline gate`\n"
                 "(this binary) before every tool call: .claude/settings.json, .codex/hooks.json,\n"
                 ".cursor/hooks.json (all three by default). Merges into existing files without\n"
                 "losing their entries, keeps FILE.bak, does nothing twice.\n",
        .opts = opts,
        .min_args = 0,
        .max_args = 1,
        .example = "connect claude-code --dry-run",
        .doc = "docs/gate.md",
    };
    enum connect_harness only = CONNECT_CLAUDE_CODE;
    int all = 1;
    char self[4096];
    ssize_t n;

    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (nargs == 1 && strcmp(argv[0], "all") != 0) {
        if (connect_harness_find(argv[0], &only) < 0) {
            char msg[160];
            snprintf(msg, sizeof(msg), "unknown harness '%.60s': claude-code, codex, cursor or all",
                     argv[0]);
            opt_usage_error(&cmd, msg);
            return EXIT_USAGE;
        }
        all = 0;
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        fprintf(stderr, "faultline connect: cannot find this program's path: %s\n",
                strerror(errno));
        return EXIT_FAIL;
    }
    self[n] = '\0';
    for (int h = 0; h < CONNECT_NHARNESS; h++) {
        if (!all && (enum connect_harness)h != only)
            continue;
        rc = connect_one((enum connect_harness)h, project, self, dry, remove);
        if (rc == EXIT_FAIL || (rc == EXIT_INVALID && worst == EXIT_OK))
            worst = rc;
    }
    rc = cli_stdout_status(cmd.name);
    return rc != EXIT_OK ? rc : worst;
}
