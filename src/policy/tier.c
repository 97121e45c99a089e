/*
 * tier: the destructive-command tier (policy/tier.h, docs/gate.md).
 *
 * tier_of_command parses the line (shell_parse) and runs every simple command through the
 * table `patterns` below, in order; the first pattern whose matcher says yes names the line
 * destructive. A matcher sees the command after shell_command_start (sudo, env, nice ...
 * unwrapped), as the program's basename and its arguments; two patterns look beyond one
 * command: download-into-shell (the pipeline before an interpreter) and fork-bomb (a function
 * that calls itself twice). A word whose text came from an expansion ($HOME, ${HOME}) is
 * compared as written: the tier never expands anything.
 */
#include <stdio.h>
#include <string.h>

#include "policy/shell.h"
#include "policy/tier.h"
#include "util/banned.h"

/* One command as the matchers see it. */
struct cmdv {
    const struct shell_list *l;
    size_t idx;                    /* in l->cmds */
    const struct shell_simple *c;  /* l->cmds[idx] */
    const char *prog;              /* basename of the program; "" when there is none */
    const struct shell_word *args; /* the arguments after the program */
    size_t nargs;
    int dl_before; /* a download ran earlier in the same pipeline (its members are consecutive
                      in the list: tier_of_command tracks the last download's pipeline) */
};

static int streq(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

static int in_set(const char *w, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(w, *set) == 0)
            return 1;
    return 0;
}

/* Is option `letter` (short) or `lng` (long, "--x" or "--x=...") among args, before "--"? A
 * short cluster ("-rfv") counts each letter. */
static int has_opt(const struct shell_word *a, size_t n, char letter, const char *lng)
{
    size_t ll = lng ? strlen(lng) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = a[i].text;
        if (t[0] != '-' || t[1] == '\0')
            continue;
        if (t[1] == '-') {
            if (t[2] == '\0')
                return 0;
            if (lng && strncmp(t, lng, ll) == 0 && (t[ll] == '\0' || t[ll] == '='))
                return 1;
        } else if (letter && strchr(t + 1, letter) != NULL) {
            return 1;
        }
    }
    return 0;
}

/* The first argument that is not an option, skipping options that take a value (vals: short
 * ones as "-C", long ones as "--git-dir"); returns its index or n. */
static size_t first_operand(const struct shell_word *a, size_t n, size_t from,
                            const char *const *vals)
{
    for (size_t i = from; i < n; i++) {
        const char *t = a[i].text;
        if (t[0] != '-' || t[1] == '\0')
            return i;
        if (strchr(t, '=') == NULL && in_set(t, vals))
            i++;
    }
    return n;
}

/* A path word with "./" prefixes and trailing slashes taken off, into out. */
static void norm_path(const char *t, char *out, size_t outsz)
{
    size_t n;
    while (t[0] == '.' && t[1] == '/' && t[2] != '\0')
        t += 2;
    snprintf(out, outsz, "%s", t);
    n = strlen(out);
    for (;;) {
        while (n > 1 && out[n - 1] == '/')
            out[--n] = '\0';
        if (n >= 2 && out[n - 2] == '/' && out[n - 1] == '.') /* "/etc/.", "/." */
            out[n -= 2] = '\0';
        else
            break;
    }
    if (n == 0)
        snprintf(out, outsz, "/");
}

enum target { T_NONE, T_ROOT, T_HOME, T_CWD, T_GIT, T_SYSTEM };

/* ".", "..", "../..", "./.." ...: the working directory or one above it. */
static int only_dots(const char *p)
{
    for (;;) {
        if (p[0] == '.' && p[1] == '.')
            p += 2;
        else if (p[0] == '.')
            p += 1;
        else
            return 0;
        if (*p == '\0')
            return 1;
        if (*p++ != '/')
            return 0;
    }
}

/* What a path operand names, among the targets the tier protects. */
static enum target target_of(const struct shell_word *w)
{
    static const char *const sys[] = {"/etc", "/usr",   "/bin",   "/boot", "/var",  "/home",
                                      "/lib", "/lib32", "/lib64", "/opt",  "/root", "/sbin",
                                      "/srv", "/sys",   "/proc",  "/dev",  NULL};
    char p[256], *star;
    size_t n;

    if (strlen(w->text) >= sizeof(p))
        return T_NONE;
    norm_path(w->text, p, sizeof(p));
    n = strlen(p);
    /* DIR/ * names everything in DIR just as well as DIR */
    star = n >= 2 && p[n - 1] == '*' && p[n - 2] == '/' ? &p[n - 2] : NULL;
    if (star != NULL) {
        if (star == p) {
            p[1] = '\0';
        } else {
            *star = '\0';
        }
    }
    if (streq(p, "/") || streq(p, "//"))
        return T_ROOT;
    if (!w->quoted || w->has_expansion) {
        if (streq(p, "~") || streq(p, "$HOME") || streq(p, "${HOME}"))
            return T_HOME;
    }
    if (streq(p, "*") || streq(p, ".*") || only_dots(p))
        return T_CWD;
    if (w->has_expansion &&
        (streq(p, "$PWD") || streq(p, "${PWD}") || streq(p, "$(pwd)") || streq(p, "`pwd`")))
        return T_CWD;
    if (streq(p, ".git"))
        return T_GIT;
    if (in_set(p, sys))
        return T_SYSTEM;
    return T_NONE;
}

/* Does an operand from `from` on name a protected target (kind, or any when kind is T_NONE)? */
static int any_target(const struct cmdv *v, size_t from, enum target kind)
{
    for (size_t i = from; i < v->nargs; i++) {
        const char *t = v->args[i].text;
        if (streq(t, "--"))
            continue;
        if (t[0] == '-' && t[1] != '\0')
            continue;
        enum target t2 = target_of(&v->args[i]);
        if (t2 != T_NONE && (kind == T_NONE || t2 == kind))
            return 1;
    }
    return 0;
}

static int m_rm(const struct cmdv *v, int arg)
{
    if (!streq(v->prog, "rm"))
        return 0;
    if (arg == T_ROOT && has_opt(v->args, v->nargs, 0, "--no-preserve-root"))
        return 1;
    if (!has_opt(v->args, v->nargs, 'r', "--recursive") && !has_opt(v->args, v->nargs, 'R', NULL))
        return 0;
    return any_target(v, 0, (enum target)arg);
}

static int m_find(const struct cmdv *v, int arg)
{
    static const char *const narrow[] = {
        "-name",       "-iname", "-path",  "-ipath",  "-regex", "-iregex", "-wholename",
        "-iwholename", "-newer", "-mtime", "-mmin",   "-atime", "-amin",   "-ctime",
        "-cmin",       "-size",  "-empty", "-user",   "-group", "-perm",   "-inum",
        "-samefile",   "-links", "-lname", "-ilname", NULL};
    int del = 0, start = 0;
    size_t i;

    if (!streq(v->prog, "find"))
        return 0;
    /* find [-H -L -P -O? -D x] PATH... EXPRESSION */
    for (i = 0; i < v->nargs; i++) {
        const char *t = v->args[i].text;
        if (streq(t, "-H") || streq(t, "-L") || streq(t, "-P"))
            continue;
        if (streq(t, "-D") && i + 1 < v->nargs) {
            i++;
            continue;
        }
        break;
    }
    for (; i < v->nargs; i++) {
        const char *t = v->args[i].text;
        if (t[0] == '-' || t[0] == '(' || t[0] == '!')
            break;
        if (target_of(&v->args[i]) != T_NONE)
            start = 1;
    }
    for (; i < v->nargs; i++) {
        const char *t = v->args[i].text;
        if (in_set(t, narrow))
            return 0;
        if (streq(t, "-delete"))
            del = 1;
        if ((streq(t, "-exec") || streq(t, "-execdir") || streq(t, "-ok") || streq(t, "-okdir")) &&
            i + 1 < v->nargs) {
            const char *p = shell_program(v->args[i + 1].text);
            if (streq(p, "rm") || streq(p, "shred") || streq(p, "unlink"))
                del = 1;
        }
    }
    return start && del;
}

/* git [global options] SUBCOMMAND: the index of SUBCOMMAND in args, or nargs. */
static size_t git_sub(const struct cmdv *v, const char *want)
{
    static const char *const vals[] = {
        "-C",          "-c",           "--git-dir",      "--work-tree", "--namespace",
        "--exec-path", "--config-env", "--super-prefix", NULL};
    size_t i;

    if (!streq(v->prog, "git"))
        return v->nargs;
    i = first_operand(v->args, v->nargs, 0, vals);
    if (i < v->nargs && streq(v->args[i].text, want))
        return i;
    return v->nargs;
}

static int m_git_push_force(const struct cmdv *v, int arg)
{
    static const char *const vals[] = {"-o",     "--push-option", "--receive-pack",
                                       "--exec", "--repo",        NULL};
    size_t s = git_sub(v, "push"), n, i, operands = 0;
    const struct shell_word *a;

    if (s >= v->nargs)
        return 0;
    a = v->args + s + 1;
    n = v->nargs - s - 1;
    if (has_opt(a, n, 'f', "--force") || has_opt(a, n, 0, "--force-with-lease") ||
        has_opt(a, n, 0, "--mirror"))
        return 1;
    for (i = 0; i < n; i++) {
        i = first_operand(a, n, i, vals);
        if (i >= n)
            break;
        if (operands++ > 0 && a[i].text[0] == '+') /* +refspec (the first operand: the remote) */
            return 1;
    }
    return 0;
}

static int m_git_push_delete(const struct cmdv *v, int arg)
{
    static const char *const vals[] = {"-o",     "--push-option", "--receive-pack",
                                       "--exec", "--repo",        NULL};
    size_t s = git_sub(v, "push"), n, i, operands = 0;
    const struct shell_word *a;

    if (s >= v->nargs)
        return 0;
    a = v->args + s + 1;
    n = v->nargs - s - 1;
    if (has_opt(a, n, 'd', "--delete") || has_opt(a, n, 0, "--prune"))
        return 1;
    for (i = 0; i < n; i++) {
        i = first_operand(a, n, i, vals);
        if (i >= n)
            break;
        if (operands++ > 0 && a[i].text[0] == ':' && a[i].text[1] != '\0') /* :branch */
            return 1;
    }
    return 0;
}

static int m_git_reset_hard(const struct cmdv *v, int arg)
{
    size_t s = git_sub(v, "reset");
    return s < v->nargs && has_opt(v->args + s + 1, v->nargs - s - 1, 0, "--hard");
}

static int m_git_clean(const struct cmdv *v, int arg)
{
    size_t s = git_sub(v, "clean"), n;
    const struct shell_word *a;

    if (s >= v->nargs)
        return 0;
    a = v->args + s + 1;
    n = v->nargs - s - 1;
    if (has_opt(a, n, 'n', "--dry-run"))
        return 0;
    if (!has_opt(a, n, 'f', "--force"))
        return 0;
    return has_opt(a, n, 'd', NULL) || has_opt(a, n, 'x', NULL) || has_opt(a, n, 'X', NULL);
}

static int m_git_branch_delete(const struct cmdv *v, int arg)
{
    size_t s = git_sub(v, "branch"), n;
    const struct shell_word *a;

    if (s >= v->nargs)
        return 0;
    a = v->args + s + 1;
    n = v->nargs - s - 1;
    if (has_opt(a, n, 'D', NULL))
        return 1;
    return (has_opt(a, n, 'd', "--delete")) && has_opt(a, n, 'f', "--force");
}

/* A device file whose writing destroys data (not /dev/null, /dev/stdout, a tty ...). */
static int is_disk_device(const char *t)
{
    static const char *const harmless[] = {
        "/dev/null", "/dev/zero",   "/dev/full",    "/dev/stdout",  "/dev/stderr", "/dev/stdin",
        "/dev/tty",  "/dev/random", "/dev/urandom", "/dev/console", "/dev/ptmx",   NULL};
    if (strncmp(t, "/dev/", 5) != 0 || t[5] == '\0')
        return 0;
    if (in_set(t, harmless))
        return 0;
    if (strncmp(t, "/dev/fd/", 8) == 0 || strncmp(t, "/dev/pts/", 9) == 0 ||
        strncmp(t, "/dev/shm/", 9) == 0 || strncmp(t, "/dev/tty", 8) == 0 ||
        strncmp(t, "/dev/mqueue/", 12) == 0)
        return 0;
    return 1;
}

static int m_dd(const struct cmdv *v, int arg)
{
    if (!streq(v->prog, "dd"))
        return 0;
    for (size_t i = 0; i < v->nargs; i++)
        if (strncmp(v->args[i].text, "of=", 3) == 0 && is_disk_device(v->args[i].text + 3))
            return 1;
    return 0;
}

static int m_mkfs(const struct cmdv *v, int arg)
{
    return streq(v->prog, "mkfs") || strncmp(v->prog, "mkfs.", 5) == 0 ||
           streq(v->prog, "mke2fs") || streq(v->prog, "mkswap");
}

/* A block device: the disks and partitions (sd* nvme* hd* vd* xvd* mmcblk* md* dm-* loop*,
 * /dev/disk/..., /dev/mapper/...). */
static int is_block_device(const char *t)
{
    static const char *const pre[] = {"sd",  "nvme", "hd",    "vd",      "xvd", "mmcblk", "md",
                                      "dm-", "loop", "disk/", "mapper/", "sr",  NULL};
    if (strncmp(t, "/dev/", 5) != 0)
        return 0;
    for (const char *const *p = pre; *p; p++)
        if (strncmp(t + 5, *p, strlen(*p)) == 0 && t[5 + strlen(*p)] != '\0')
            return 1;
    return 0;
}

static int m_block_write(const struct cmdv *v, int arg)
{
    for (size_t i = 0; i < v->c->nredir_out; i++)
        if (is_block_device(v->c->redir_out[i]))
            return 1;
    if (streq(v->prog, "tee") || streq(v->prog, "shred") || streq(v->prog, "cp"))
        for (size_t i = 0; i < v->nargs; i++)
            if (is_block_device(v->args[i].text))
                return 1;
    return 0;
}

static int m_chmod(const struct cmdv *v, int arg)
{
    if (!streq(v->prog, "chmod"))
        return 0;
    if (!has_opt(v->args, v->nargs, 'R', "--recursive"))
        return 0;
    return any_target(v, 0, T_NONE);
}

static int m_chown(const struct cmdv *v, int arg)
{
    if (!streq(v->prog, "chown") && !streq(v->prog, "chgrp"))
        return 0;
    if (!has_opt(v->args, v->nargs, 'R', "--recursive"))
        return 0;
    return any_target(v, 0, T_NONE);
}

/* Does this command run its stdin as a program? A shell or interpreter with no script, no
 * -c / -e / -m string and no module: sh, bash -s, python3 -, node ... */
static int runs_stdin(const struct cmdv *v)
{
    static const char *const shells[] = {"sh",  "bash", "dash", "zsh", "ksh",
                                         "ash", "mksh", "fish", NULL};
    static const char *const interp[] = {"python", "python2", "python3", "perl",
                                         "ruby",   "node",    "php",     NULL};
    int shell = in_set(v->prog, shells);
    size_t i;

    if (!shell && !in_set(v->prog, interp) && strncmp(v->prog, "python3.", 8) != 0)
        return 0;
    for (i = 0; i < v->nargs; i++) {
        const char *t = v->args[i].text;
        if (streq(t, "-"))
            return 1;
        if (t[0] != '-' && t[0] != '+')
            return 0; /* a script file */
        if (t[1] == '-') {
            if (streq(t, "--"))
                return i + 1 >= v->nargs || streq(v->args[i + 1].text, "-");
            continue;
        }
        if (shell) {
            if (strchr(t + 1, 's') != NULL)
                return 1;
            if (strchr(t + 1, 'c') != NULL)
                return 0;
            if ((strchr(t + 1, 'o') != NULL || strchr(t + 1, 'O') != NULL) && i + 1 < v->nargs)
                i++;
        } else if (strchr(t + 1, 'c') != NULL || strchr(t + 1, 'e') != NULL ||
                   strchr(t + 1, 'm') != NULL || strchr(t + 1, 'E') != NULL) {
            return 0;
        }
    }
    return 1;
}

static void view_of(const struct shell_list *l, size_t idx, struct cmdv *v);

static int is_downloader(const char *prog)
{
    static const char *const dl[] = {"curl", "wget", "fetch", "aria2c", "http", "https", NULL};
    return in_set(prog, dl);
}

/* Does a word's substitution ($(...), `...`, <(...)) run a download? The word is parsed again
 * as written: its nested commands are the substitution's. */
static int word_downloads(const struct shell_word *w)
{
    struct shell_list l;
    struct err e = {0};
    int found = 0;

    if (!w->has_expansion || shell_parse(w->text, strlen(w->text), &l, &e) < 0)
        return 0;
    for (size_t i = 0; i < l.ncmds && !found; i++) {
        size_t k = shell_command_start(l.cmds[i].words, l.cmds[i].nwords);
        found = k < l.cmds[i].nwords && is_downloader(shell_program(l.cmds[i].words[k].text));
    }
    shell_list_free(&l);
    return found;
}

/* A shell running a downloaded string or file: sh -c "$(curl ...)", bash <(curl ...),
 * source <(curl ...), eval "$(curl ...)". */
static int runs_download_arg(const struct cmdv *v)
{
    static const char *const runners[] = {"sh",      "bash", "dash", "zsh",    "ksh", "ash",
                                          "mksh",    "fish", "eval", "source", ".",   "python",
                                          "python3", "perl", "ruby", "node",   NULL};
    size_t i;

    for (i = 0; i < v->nargs && !v->args[i].has_expansion; i++)
        ;
    if (i == v->nargs || !in_set(v->prog, runners))
        return 0;
    for (; i < v->nargs; i++)
        if (word_downloads(&v->args[i]))
            return 1;
    return 0;
}

static int m_download_shell(const struct cmdv *v, int arg)
{
    if (runs_download_arg(v))
        return 1;
    return v->c->pipe_from_prev && v->dl_before && runs_stdin(v);
}

static int is_word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Does SQL text hold DROP or TRUNCATE as a keyword (any case, outside '...' literals)? */
static int sql_destructive(const char *s)
{
    static const char *const kw[] = {"drop", "truncate", NULL};
    for (size_t i = 0; s[i]; i++) {
        if (s[i] == '\'') {
            const char *q = strchr(s + i + 1, '\'');
            if (q == NULL)
                return 0;
            i = (size_t)(q - s);
            continue;
        }
        if (i > 0 && is_word_char(s[i - 1]))
            continue;
        for (const char *const *k = kw; *k; k++) {
            size_t n = strlen(*k);
            if (strncasecmp(s + i, *k, n) == 0 && !is_word_char(s[i + n]))
                return 1;
        }
    }
    return 0;
}

static int m_sql(const struct cmdv *v, int arg)
{
    static const char *const clients[] = {"psql",   "mysql",   "mariadb",           "sqlite3",
                                          "mongo",  "mongosh", "clickhouse-client", "cockroach",
                                          "duckdb", NULL};
    static const char *const opts[] = {"-c",   "-e",      "--command", "--execute", "--eval",
                                       "-cmd", "--query", "-q",        NULL};
    int sqlite = streq(v->prog, "sqlite3") || streq(v->prog, "duckdb");
    size_t operands = 0;

    if (streq(v->prog, "dropdb"))
        return 1;
    if (!in_set(v->prog, clients))
        return 0;
    for (size_t i = 0; i < v->nargs; i++) {
        const char *t = v->args[i].text;
        if (t[0] == '-' && t[1] != '\0') {
            const char *eq = strchr(t, '=');
            char name[32];
            size_t nl = eq ? (size_t)(eq - t) : strlen(t);
            if (nl >= sizeof(name))
                continue;
            memcpy(name, t, nl);
            name[nl] = '\0';
            if (eq && in_set(name, opts) && sql_destructive(eq + 1))
                return 1;
            if (!eq && in_set(t, opts) && i + 1 < v->nargs && sql_destructive(v->args[i + 1].text))
                return 1;
            /* -c"DROP ..." / -e"..." glued */
            if (!eq && t[1] != '-' && (t[1] == 'c' || t[1] == 'e') && t[2] != '\0' &&
                !streq(t, "-cmd") && sql_destructive(t + 2))
                return 1;
            continue;
        }
        /* sqlite3 DB "SQL" */
        if (sqlite && operands++ > 0 && sql_destructive(t))
            return 1;
    }
    return 0;
}

/* kubectl [options] delete ...: the index after "delete", or nargs. */
static size_t kubectl_delete(const struct cmdv *v)
{
    static const char *const vals[] = {"-n",      "--namespace", "--context",  "--kubeconfig",
                                       "-s",      "--server",    "--cluster",  "--user",
                                       "--token", "-l",          "--selector", NULL};
    size_t i;
    if (!streq(v->prog, "kubectl") && !streq(v->prog, "oc"))
        return v->nargs;
    i = first_operand(v->args, v->nargs, 0, vals);
    return i < v->nargs && streq(v->args[i].text, "delete") ? i + 1 : v->nargs;
}

static int m_kubectl_ns(const struct cmdv *v, int arg)
{
    static const char *const vals[] = {"-n",           "--namespace", "--context",
                                       "--kubeconfig", "-l",          "--selector",
                                       "-f",           "--filename",  NULL};
    size_t s = kubectl_delete(v), i;
    if (s >= v->nargs)
        return 0;
    i = first_operand(v->args, v->nargs, s, vals);
    if (i >= v->nargs)
        return 0;
    /* "namespace", "ns/foo", "pods,namespaces" */
    for (const char *t = v->args[i].text; *t;) {
        size_t n = strcspn(t, ",/");
        if ((n == 2 && strncmp(t, "ns", 2) == 0) || (n == 9 && strncmp(t, "namespace", 9) == 0) ||
            (n == 10 && strncmp(t, "namespaces", 10) == 0))
            return 1;
        if (t[n] != ',')
            break;
        t += n + 1;
    }
    return 0;
}

static int m_kubectl_all(const struct cmdv *v, int arg)
{
    size_t s = kubectl_delete(v);
    if (s >= v->nargs)
        return 0;
    return has_opt(v->args + s, v->nargs - s, 0, "--all") ||
           has_opt(v->args + s, v->nargs - s, 'A', "--all-namespaces");
}

static int m_terraform(const struct cmdv *v, int arg)
{
    size_t i;
    if (!streq(v->prog, "terraform") && !streq(v->prog, "tofu") && !streq(v->prog, "terragrunt"))
        return 0;
    i = first_operand(v->args, v->nargs, 0, (const char *const[]){NULL});
    if (i >= v->nargs)
        return 0;
    if (streq(v->args[i].text, "destroy"))
        return 1;
    if (streq(v->args[i].text, "apply"))
        for (size_t k = i + 1; k < v->nargs; k++)
            if (streq(v->args[k].text, "-destroy") || streq(v->args[k].text, "--destroy"))
                return 1;
    return 0;
}

static int m_docker_prune(const struct cmdv *v, int arg)
{
    static const char *const vals[] = {"-H",       "--host", "--context",   "-c",
                                       "--config", "-l",     "--log-level", NULL};
    size_t i;
    if (!streq(v->prog, "docker") && !streq(v->prog, "podman"))
        return 0;
    i = first_operand(v->args, v->nargs, 0, vals);
    if (i + 1 >= v->nargs || !streq(v->args[i].text, "system") ||
        !streq(v->args[i + 1].text, "prune"))
        return 0;
    return has_opt(v->args + i + 2, v->nargs - i - 2, 'a', "--all");
}

static int m_cloud_storage(const struct cmdv *v, int arg)
{
    const struct shell_word *a = v->args;
    size_t n = v->nargs, i;

    if (streq(v->prog, "aws")) {
        static const char *const vals[] = {"--profile", "--region", "--endpoint-url", "--output",
                                           NULL};
        i = first_operand(a, n, 0, vals);
        if (i + 1 < n && streq(a[i].text, "s3")) {
            if (streq(a[i + 1].text, "rm") && has_opt(a + i + 2, n - i - 2, 0, "--recursive"))
                return 1;
            if (streq(a[i + 1].text, "rb") && has_opt(a + i + 2, n - i - 2, 0, "--force"))
                return 1;
        }
        return 0;
    }
    if (streq(v->prog, "gsutil")) {
        static const char *const vals[] = {"-o", "-h", "-p", "-u", NULL};
        i = first_operand(a, n, 0, vals);
        if (i < n && (streq(a[i].text, "rm") || streq(a[i].text, "rb")))
            return has_opt(a + i + 1, n - i - 1, 'r', "--recursive") ||
                   has_opt(a + i + 1, n - i - 1, 'R', NULL) ||
                   (streq(a[i].text, "rb") && has_opt(a + i + 1, n - i - 1, 'f', NULL));
        return 0;
    }
    if (streq(v->prog, "gcloud")) {
        i = first_operand(a, n, 0, (const char *const[]){"--project", "--account", NULL});
        if (i + 1 < n && streq(a[i].text, "storage") && streq(a[i + 1].text, "rm"))
            return has_opt(a + i + 2, n - i - 2, 'r', "--recursive") ||
                   has_opt(a + i + 2, n - i - 2, 'R', NULL);
        return 0;
    }
    if (streq(v->prog, "az")) {
        i = first_operand(a, n, 0, (const char *const[]){NULL});
        if (i + 2 < n && streq(a[i].text, "storage") &&
            ((streq(a[i + 1].text, "blob") && streq(a[i + 2].text, "delete-batch")) ||
             (streq(a[i + 1].text, "container") && streq(a[i + 2].text, "delete")) ||
             (streq(a[i + 1].text, "account") && streq(a[i + 2].text, "delete"))))
            return 1;
        return 0;
    }
    return 0;
}

static int m_gh_repo_delete(const struct cmdv *v, int arg)
{
    size_t i;
    if (!streq(v->prog, "gh"))
        return 0;
    i = first_operand(v->args, v->nargs, 0, (const char *const[]){"-R", "--repo", NULL});
    return i + 1 < v->nargs && streq(v->args[i].text, "repo") &&
           streq(v->args[i + 1].text, "delete");
}

static int m_fork_bomb(const struct cmdv *v, int arg)
{
    const char *f = v->c->in_function;
    size_t calls = 0;

    if (f == NULL || !streq(v->prog, f))
        return 0;
    /* a second call of the function inside the same body (one definition: the same name
     * pointer) is a recursion that fans out */
    for (size_t k = 0; k < v->l->ncmds && calls < 2; k++) {
        struct cmdv u;
        if (v->l->cmds[k].in_function != f)
            continue;
        view_of(v->l, k, &u);
        if (streq(u.prog, f))
            calls++;
    }
    return calls >= 2;
}

/*
 * The table (docs/gate.md lists it; tier_pattern_ids hands out the ids in this order): id,
 * matcher, the matcher's argument (the kind of protected target for rm), and the first letters
 * of the programs it can match (NULL: any command), so most matchers are never called.
 */
#define TIER_PATTERNS(X)                                                                           \
    X("rm-recursive-root", m_rm, T_ROOT, "r")                                                      \
    X("rm-recursive-home", m_rm, T_HOME, "r")                                                      \
    X("rm-recursive-cwd", m_rm, T_CWD, "r")                                                        \
    X("rm-recursive-git", m_rm, T_GIT, "r")                                                        \
    X("rm-recursive-system", m_rm, T_SYSTEM, "r")                                                  \
    X("find-delete-protected", m_find, 0, "f")                                                     \
    X("git-push-force", m_git_push_force, 0, "g")                                                  \
    X("git-push-delete", m_git_push_delete, 0, "g")                                                \
    X("git-reset-hard", m_git_reset_hard, 0, "g")                                                  \
    X("git-clean-force", m_git_clean, 0, "g")                                                      \
    X("git-branch-force-delete", m_git_branch_delete, 0, "g")                                      \
    X("dd-to-device", m_dd, 0, "d")                                                                \
    X("mkfs", m_mkfs, 0, "m")                                                                      \
    X("write-block-device", m_block_write, 0, NULL)                                                \
    X("chmod-recursive-protected", m_chmod, 0, "c")                                                \
    X("chown-recursive-protected", m_chown, 0, "c")                                                \
    X("download-into-shell", m_download_shell, 0, NULL)                                            \
    X("sql-drop-truncate", m_sql, 0, "pmsdc")                                                      \
    X("kubectl-delete-namespace", m_kubectl_ns, 0, "ko")                                           \
    X("kubectl-delete-all", m_kubectl_all, 0, "ko")                                                \
    X("terraform-destroy", m_terraform, 0, "t")                                                    \
    X("docker-system-prune-all", m_docker_prune, 0, "dp")                                          \
    X("cloud-storage-recursive-delete", m_cloud_storage, 0, "ag")                                  \
    X("gh-repo-delete", m_gh_repo_delete, 0, "g")                                                  \
    X("fork-bomb", m_fork_bomb, 0, NULL)

struct pattern {
    int (*match)(const struct cmdv *v, int arg);
    int arg;
    const char *first;
};

#define TIER_ID(id, fn, arg, first) id,
#define TIER_ROW(id, fn, arg, first) {fn, arg, first},
static const char *const ids[] = {TIER_PATTERNS(TIER_ID) NULL};
static const struct pattern patterns[] = {TIER_PATTERNS(TIER_ROW)};

#define NPATTERNS (sizeof(patterns) / sizeof(patterns[0]))

static void view_of(const struct shell_list *l, size_t idx, struct cmdv *v)
{
    const struct shell_simple *c = &l->cmds[idx];
    size_t k = shell_command_start(c->words, c->nwords);

    v->l = l;
    v->idx = idx;
    v->c = c;
    if (k < c->nwords) {
        v->prog = shell_program(c->words[k].text);
        v->args = c->words + k + 1;
        v->nargs = c->nwords - k - 1;
    } else {
        v->prog = "";
        v->args = NULL;
        v->nargs = 0;
    }
}

/* A bounded writer: text past the end is dropped and the end marked with "...". */
struct bw {
    char *out;
    size_t size, len;
    int full;
};

static void bw_add(struct bw *w, const char *s, size_t n)
{
    if (w->full)
        return;
    if (w->len + n + 1 > w->size) {
        size_t room = w->size - 1 - w->len;
        memcpy(w->out + w->len, s, room);
        memcpy(w->out + w->size - 4, "...", 4);
        w->len = w->size - 1;
        w->full = 1;
        return;
    }
    memcpy(w->out + w->len, s, n);
    w->len += n;
    w->out[w->len] = '\0';
}

/* The words of c joined, each quoted when the shell would need it, cut to fit out (outsz >= 4),
 * then its output redirections. */
static void quote_command(const struct shell_simple *c, char *out, size_t outsz)
{
    struct bw w = {out, outsz, 0, 0};

    out[0] = '\0';
    for (size_t i = 0; i < c->nwords; i++) {
        const char *t = c->words[i].text;
        if (i > 0)
            bw_add(&w, " ", 1);
        if (t[0] != '\0' && strpbrk(t, " \t\n'\"\\$`;&|<>()*?[]#~{}!") == NULL) {
            bw_add(&w, t, strlen(t));
            continue;
        }
        bw_add(&w, "'", 1);
        for (const char *q; (q = strchr(t, '\'')) != NULL; t = q + 1) {
            bw_add(&w, t, (size_t)(q - t));
            bw_add(&w, "'\\''", 4);
        }
        bw_add(&w, t, strlen(t));
        bw_add(&w, "'", 1);
    }
    for (size_t i = 0; i < c->nredir_out; i++) {
        bw_add(&w, w.len ? " > " : "> ", w.len ? 3 : 2);
        bw_add(&w, c->redir_out[i], strlen(c->redir_out[i]));
    }
}

int tier_of_command(const char *cmd, size_t len, struct tier_result *res)
{
    struct shell_list l;
    struct err e = {0};
    unsigned dl_pipeline = 0;
    int have_dl = 0;

    memset(res, 0, sizeof(*res));
    if (shell_parse(cmd, len, &l, &e) < 0) {
        res->level = TIER_UNPARSED;
        snprintf(res->command, sizeof(res->command), "%.150s", e.msg);
        return ERR_INVALID;
    }
    for (size_t i = 0; i < l.ncmds; i++) {
        struct cmdv v;
        view_of(&l, i, &v);
        v.dl_before = have_dl && dl_pipeline == v.c->pipeline;
        if (is_downloader(v.prog)) {
            have_dl = 1;
            dl_pipeline = v.c->pipeline;
        }
        for (size_t p = 0; p < NPATTERNS; p++) {
            const char *first = patterns[p].first;
            if (first != NULL && (v.prog[0] == '\0' || strchr(first, v.prog[0]) == NULL))
                continue;
            if (patterns[p].match(&v, patterns[p].arg)) {
                res->level = TIER_DESTRUCTIVE;
                snprintf(res->pattern, sizeof(res->pattern), "%s", ids[p]);
                quote_command(l.cmds + i, res->command, sizeof(res->command));
                shell_list_free(&l);
                return 0;
            }
        }
    }
    shell_list_free(&l);
    return 0;
}

const char *const *tier_pattern_ids(size_t *n)
{
    *n = NPATTERNS;
    return ids;
}
