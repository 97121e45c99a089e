/*
 * connect: faultline's hook entries merged into (or taken out of) a harness's settings file,
 * and the unified diff `faultline connect --dry-run` prints (see connect.h).
 *
 * How: the file is parsed with jansson (duplicate keys refused: merging would lose one), the
 * arrays that hold hook entries are found (or made, when adding), faultline's entries are
 * recognised by their command, and the result is dumped with the keys in their order. The
 * result is compared with the file as JSON (json_equal), so a file that already says the same
 * is left as it was, byte for byte, whatever its layout.
 *
 * The diff is a longest-common-subsequence over lines (dynamic programming, at most
 * DIFF_LINES_MAX lines a side; bigger files are shown as one hunk replacing everything).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "run/connect.h"
#include "util/buf.h"
#include "util/banned.h"

static const char *const harness_names[CONNECT_NHARNESS] = {"claude-code", "codex", "cursor"};
static const char *const settings_paths[CONNECT_NHARNESS] = {
    ".claude/settings.json", ".codex/hooks.json", ".cursor/hooks.json"};
static const char *const cursor_events[] = {"beforeShellExecution", "beforeMCPExecution",
                                            "preToolUse"};

const char *connect_harness_name(enum connect_harness h)
{
    return (unsigned)h < CONNECT_NHARNESS ? harness_names[h] : "?";
}

const char *connect_settings_path(enum connect_harness h)
{
    return (unsigned)h < CONNECT_NHARNESS ? settings_paths[h] : "?";
}

int connect_harness_find(const char *name, enum connect_harness *h)
{
    for (int i = 0; i < CONNECT_NHARNESS; i++)
        if (strcmp(name, harness_names[i]) == 0) {
            *h = (enum connect_harness)i;
            return 0;
        }
    return ERR_NOTFOUND;
}

/* ---- faultline's entries ----------------------------------------------------------------- */

/* The hook command for h: the binary (single-quoted when it holds anything but safe bytes)
 * and "gate HARNESS". */
static void gate_command(enum connect_harness h, const char *faultline, struct buf *out)
{
    int plain = *faultline != '\0';
    for (const char *p = faultline; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+@%:,",
                       *p) != NULL;
    buf_reset(out);
    if (plain) {
        buf_adds(out, faultline);
    } else {
        buf_addc(out, '\'');
        for (const char *p = faultline; *p; p++)
            buf_adds(out, *p == '\'' ? "'\\''" : (char[2]){*p, 0});
        buf_addc(out, '\'');
    }
    buf_addf(out, " gate %s", connect_harness_name(h));
}

/* 1 when the hook entry's command is faultline's gate for h: "PROGRAM gate HARNESS" with a
 * program whose base name is faultline (quoted or not). */
static int is_ours(enum connect_harness h, const json_t *hook)
{
    const json_t *c = json_is_object(hook) ? json_object_get(hook, "command") : NULL;
    char suffix[32];
    const char *s, *b;
    size_t n, sl;

    if (!json_is_string(c))
        return 0;
    s = json_string_value(c);
    n = strlen(s);
    sl = (size_t)snprintf(suffix, sizeof(suffix), " gate %s", connect_harness_name(h));
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n <= sl || memcmp(s + n - sl, suffix, sl) != 0)
        return 0;
    n -= sl;
    if (n >= 2 && s[0] == '\'' && s[n - 1] == '\'') {
        s++;
        n -= 2;
    }
    for (b = s + n; b > s && b[-1] != '/'; b--)
        ;
    return (size_t)(s + n - b) == strlen("faultline") && memcmp(b, "faultline", 9) == 0;
}

/* 1 when hook's command names its program without a directory ("faultline gate codex"): PATH
 * finds it, in the sandbox too (its faultline is first on PATH). */
static int bare_program(const json_t *hook)
{
    const char *c = json_string_value(json_object_get(hook, "command")), *sp;
    sp = c ? strchr(c, ' ') : NULL;
    return sp && memchr(c, '/', (size_t)(sp - c)) == NULL;
}

/* In the entries array arr: the hooks that are ours set to cmd (add, retarget) or removed
 * (remove); retarget leaves a bare program alone. Returns how many were ours. */
static size_t fix_hooks(enum connect_harness h, json_t *arr, const char *cmd, enum connect_op op)
{
    size_t found = 0;
    for (size_t i = json_array_size(arr); i-- > 0;) {
        json_t *hook = json_array_get(arr, i);
        if (!is_ours(h, hook))
            continue;
        found++;
        if (op == CONNECT_REMOVE)
            json_array_remove(arr, i);
        else if (op == CONNECT_RETARGET && bare_program(hook))
            continue;
        else if (strcmp(json_string_value(json_object_get(hook, "command")), cmd) != 0)
            json_object_set_new(hook, "command", json_string(cmd));
    }
    return found;
}

/* obj[key] as a container of type t (JSON_OBJECT or JSON_ARRAY), made when absent and make;
 * NULL when absent. ERR_INVALID when it is something else. */
static int member(json_t *obj, const char *key, json_type t, int make, const char *name,
                  const char *path, json_t **out, struct err *e)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (v == NULL) {
        if (!make)
            return 0;
        v = t == JSON_OBJECT ? json_object() : json_array();
        json_object_set_new(obj, key, v);
    } else if (json_typeof(v) != t) {
        return err_set(e, ERR_INVALID, "%s: %s is not %s", name, path,
                       t == JSON_OBJECT ? "an object" : "a list");
    }
    *out = v;
    return 0;
}

/* Claude Code and Codex: hooks.PreToolUse groups, each {matcher?, hooks: [...]}. */
static int apply_pretool(enum connect_harness h, json_t *root, const char *name, const char *cmd,
                         enum connect_op op, struct err *e)
{
    int remove = op == CONNECT_REMOVE, make = op == CONNECT_ADD;
    json_t *hooks, *pre, *group;
    size_t found = 0;
    int rc;

    if ((rc = member(root, "hooks", JSON_OBJECT, make, name, "hooks", &hooks, e)) < 0)
        return rc;
    if (hooks == NULL)
        return 0;
    if ((rc = member(hooks, "PreToolUse", JSON_ARRAY, make, name, "hooks.PreToolUse", &pre, e)) < 0)
        return rc;
    if (pre == NULL)
        return 0;
    for (size_t i = json_array_size(pre); i-- > 0;) {
        json_t *list = json_object_get(json_array_get(pre, i), "hooks");
        size_t n;
        if (!json_is_array(list))
            continue;
        n = fix_hooks(h, list, cmd, op);
        found += n;
        if (remove && n && json_array_size(list) == 0)
            json_array_remove(pre, i);
    }
    if (make && found == 0) {
        group = json_object();
        if (h == CONNECT_CLAUDE_CODE)
            json_object_set_new(group, "matcher", json_string("*"));
        json_object_set_new(group, "hooks",
                            json_pack("[{s:s,s:s,s:i}]", "type", "command", "command", cmd,
                                      "timeout", CONNECT_TIMEOUT_S));
        json_array_append_new(pre, group);
    }
    if (remove && found && json_array_size(pre) == 0)
        json_object_del(hooks, "PreToolUse");
    if (remove && found && json_object_size(hooks) == 0)
        json_object_del(root, "hooks");
    return 0;
}

/* Cursor: {"version": 1, "hooks": {EVENT: [{command}, ...]}} for each of cursor_events. */
static int apply_cursor(json_t *root, const char *name, const char *cmd, enum connect_op op,
                        struct err *e)
{
    int remove = op == CONNECT_REMOVE, make = op == CONNECT_ADD;
    json_t *hooks, *list;
    size_t found = 0;
    int rc;

    if (make && json_object_get(root, "version") == NULL)
        json_object_set_new(root, "version", json_integer(1));
    if ((rc = member(root, "hooks", JSON_OBJECT, make, name, "hooks", &hooks, e)) < 0)
        return rc;
    if (hooks == NULL)
        return 0;
    for (size_t i = 0; i < sizeof(cursor_events) / sizeof(cursor_events[0]); i++) {
        char path[64];
        size_t n;
        snprintf(path, sizeof(path), "hooks.%s", cursor_events[i]);
        if ((rc = member(hooks, cursor_events[i], JSON_ARRAY, make, name, path, &list, e)) < 0)
            return rc;
        if (list == NULL)
            continue;
        n = fix_hooks(CONNECT_CURSOR, list, cmd, op);
        found += n;
        if (make && n == 0)
            json_array_append_new(list, json_pack("{s:s}", "command", cmd));
        if (remove && n && json_array_size(list) == 0)
            json_object_del(hooks, cursor_events[i]);
    }
    if (remove && found && json_object_size(hooks) == 0)
        json_object_del(root, "hooks");
    return 0;
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return 0;
    return 1;
}

int connect_apply(enum connect_harness h, const char *name, const char *old, size_t len,
                  const char *faultline, enum connect_op op, struct buf *out, int *changed,
                  struct err *e)
{
    struct buf cmd = BUF_INIT;
    json_t *before = NULL, *root = NULL;
    json_error_t je;
    char *text = NULL;
    int rc = 0;

    *changed = 0;
    buf_reset(out);
    if (len > CONNECT_FILE_MAX)
        return err_set(e, ERR_LIMIT, "%s: over the limit of %zu bytes", name, CONNECT_FILE_MAX);
    if (old && !blank(old, len)) {
        before = json_loadb(old, len, JSON_REJECT_DUPLICATES, &je);
        if (before == NULL)
            return err_set(e, ERR_PARSE, "%s:%d:%d: %s", name, je.line, je.column, je.text);
        if (!json_is_object(before)) {
            rc = err_set(e, ERR_INVALID, "%s: the file is not a JSON object", name);
            goto out;
        }
    }
    root = before ? json_deep_copy(before) : json_object();
    gate_command(h, faultline, &cmd);
    rc = h == CONNECT_CURSOR ? apply_cursor(root, name, cmd.data, op, e)
                             : apply_pretool(h, root, name, cmd.data, op, e);
    if (rc < 0)
        goto out;
    if (before ? json_equal(before, root) : (op != CONNECT_ADD || json_object_size(root) == 0)) {
        buf_add(out, old ? old : "", old ? len : 0);
        goto out;
    }
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text == NULL) {
        rc = err_set(e, ERR_NOMEM, "%s: cannot render the settings", name);
        goto out;
    }
    buf_adds(out, text);
    buf_addc(out, '\n');
    *changed = 1;
out:
    free(text);
    json_decref(root);
    json_decref(before);
    buf_release(&cmd);
    return rc;
}

/* ---- the unified diff -------------------------------------------------------------------- */

#define DIFF_LINES_MAX 2000
#define DIFF_CONTEXT 3

struct lines {
    const char **p;
    size_t *len;
    size_t n;
};

static void split_lines(const char *s, struct lines *l)
{
    size_t cap = 16;
    l->p = xmalloc(cap * sizeof(*l->p));
    l->len = xmalloc(cap * sizeof(*l->len));
    l->n = 0;
    while (s && *s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        if (l->n == cap) {
            cap *= 2;
            l->p = xrealloc(l->p, cap * sizeof(*l->p));
            l->len = xrealloc(l->len, cap * sizeof(*l->len));
        }
        l->p[l->n] = s;
        l->len[l->n++] = n;
        s = nl ? nl + 1 : s + n;
    }
}

static int same(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
    return a->len[i] == b->len[j] && memcmp(a->p[i], b->p[j], a->len[i]) == 0;
}

/* One edit: ' ' both, '-' a only, '+' b only, with the line indices. */
struct edit {
    char op;
    size_t i, j;
};

static void emit_line(struct buf *out, char op, const struct lines *l, size_t k)
{
    buf_addc(out, op);
    buf_add(out, l->p[k], l->len[k]);
    buf_addc(out, '\n');
}

void connect_diff(const char *a_name, const char *a, const char *b_name, const char *b,
                  struct buf *out)
{
    struct lines la, lb;
    struct edit *ed;
    size_t ne = 0;

    if (strcmp(a ? a : "", b ? b : "") == 0)
        return;
    split_lines(a, &la);
    split_lines(b, &lb);
    ed = xmalloc((la.n + lb.n + 1) * sizeof(*ed));
    if (la.n <= DIFF_LINES_MAX && lb.n <= DIFF_LINES_MAX) {
        /* lcs[i][j]: the longest common subsequence of a[i..] and b[j..] */
        size_t w = lb.n + 1;
        unsigned *lcs = xcalloc((la.n + 1) * w, sizeof(*lcs));
        for (size_t i = la.n; i-- > 0;)
            for (size_t j = lb.n; j-- > 0;)
                lcs[i * w + j] = same(&la, i, &lb, j) ? lcs[(i + 1) * w + j + 1] + 1
                                                      : (lcs[(i + 1) * w + j] > lcs[i * w + j + 1]
                                                             ? lcs[(i + 1) * w + j]
                                                             : lcs[i * w + j + 1]);
        size_t i = 0, j = 0;
        while (i < la.n || j < lb.n) {
            if (i < la.n && j < lb.n && same(&la, i, &lb, j)) {
                ed[ne++] = (struct edit){' ', i++, j++};
            } else if (i < la.n && (j == lb.n || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
                ed[ne++] = (struct edit){'-', i++, j};
            } else {
                ed[ne++] = (struct edit){'+', i, j++};
            }
        }
        free(lcs);
    } else {
        for (size_t i = 0; i < la.n; i++)
            ed[ne++] = (struct edit){'-', i, 0};
        for (size_t j = 0; j < lb.n; j++)
            ed[ne++] = (struct edit){'+', la.n, j};
    }
    buf_addf(out, "--- %s\n+++ %s\n", a_name, b_name);
    for (size_t k = 0; k < ne;) {
        size_t start, end, last, oi, oc = 0, ni, nc = 0;
        if (ed[k].op == ' ') {
            k++;
            continue;
        }
        /* a hunk: from DIFF_CONTEXT before this change to DIFF_CONTEXT after the last change
         * that follows within 2 * DIFF_CONTEXT unchanged lines */
        start = k > DIFF_CONTEXT ? k - DIFF_CONTEXT : 0;
        last = k;
        for (size_t q = k; q < ne; q++) {
            if (ed[q].op != ' ')
                last = q;
            else if (q - last > 2 * DIFF_CONTEXT)
                break;
        }
        end = last + DIFF_CONTEXT + 1 < ne ? last + DIFF_CONTEXT + 1 : ne;
        for (size_t q = start; q < end; q++) {
            oc += ed[q].op != '+';
            nc += ed[q].op != '-';
        }
        oi = ed[start].i + (oc ? 1 : 0);
        ni = ed[start].j + (nc ? 1 : 0);
        buf_addf(out, "@@ -%zu,%zu +%zu,%zu @@\n", oi, oc, ni, nc);
        for (size_t q = start; q < end; q++) {
            if (ed[q].op == '+')
                emit_line(out, '+', &lb, ed[q].j);
            else
                emit_line(out, ed[q].op, &la, ed[q].i);
        }
        k = end;
    }
    free(ed);
    free(la.p);
    free(la.len);
    free(lb.p);
    free(lb.len);
}
