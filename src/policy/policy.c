/*
 * policy: the policy engine (see policy.h, docs/gate.md "Policy files").
 *
 * Loading: each file is read under POLICY_FILE_MAX, parsed by the one YAML reader
 * (util/yaml.h) and checked against the format tables below (k_policy, k_rule, k_command)
 * with the experiment validator's checks (experiment_check_keys / experiment_check_value:
 * unknown keys with "did you mean", types, lengths, enums), then by the checks the tables
 * cannot state (globs, regular expressions, the command's form, unique ids), every problem a
 * "FILE:LINE:COL: error: ..." line. A policy is the rules of every file in order.
 *
 * Deciding (policy_decide, pure): the call's shell command (input.command) is classified by
 * the tier (tier.h) and parsed into simple commands (shell.h) once; its paths (file_path,
 * path, notebook_path, paths[], the files an apply_patch names, the targets of a command's
 * output redirections) are resolved against workdir and normalised lexically, so that ".."
 * never escapes a pattern. Then the rules in order: a matching monitor rule is noted (the
 * first one) and skipped; the first matching enforce rule decides; none: the default (the
 * destructive tier blocked, the rest allowed). redact masks the credentials the redaction
 * engine finds (util/redact.h) and the rule's own patterns in every string of the input.
 */
#include <errno.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "experiment/experiment.h"
#include "experiment/format.h"
#include "experiment/schema.h"
#include "policy/policy.h"
#include "policy/shell.h"
#include "policy/tier.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/redact.h"
#include "util/regex_safe.h"
#include "util/text.h"
#include "util/yaml.h"
#include "util/banned.h"

/* ---- the format tables ------------------------------------------------------------------- */

#define UNB 1, 0
#define END                                                                                        \
    {                                                                                              \
        NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL                                    \
    }
#define ID_RE "^[A-Za-z0-9][A-Za-z0-9_.:-]*$"

static const char *const v_effect[] = {"allow", "block", "hold", "redact", NULL};
static const char *const v_mode[] = {"enforce", "monitor", NULL};

static const struct format_key k_policy[] = {
    {"version", FORMAT_INT, 0, 1, 1, 0, NULL, NULL, NULL, "1", NULL,
     "the policy format's version: 1"},
    {"rules", FORMAT_LIST, 0, 0, POLICY_RULES_MAX, 0, NULL, NULL, NULL, NULL, "policy_rule",
     "the rules, in order: the first enforce rule that matches a call decides it"},
    END};

static const struct format_key k_rule[] = {
    {"id", FORMAT_STRING, 1, 1, POLICY_ID_MAX, 0, ID_RE,
     "letters, digits, '_', '.', ':' and '-', starting with a letter or digit", NULL, NULL, NULL,
     "the rule's name, unique in its file: gate_decision events and explain name it"},
    {"tool", FORMAT_STRING, 0, 1, 256, 0, NULL, NULL, NULL, NULL, NULL,
     "the tool name as the harness calls it (Bash, Edit, Write, apply_patch, Shell, mcp__github__create_issue), exact or a glob (mcp__github__*)"},
    {"command", FORMAT_SPECIAL, 0, UNB, 0, NULL, NULL, NULL, NULL, "policy_command",
     "the shell command: 'PROGRAM ARG...' as globs (git push *--force*), or {program, args}; matches when some simple command of the parsed command line has that program and the argument globs match its arguments in order (others may stand between)"},
    {"paths", FORMAT_STRING_LIST, 0, 1, 64, 0, NULL, NULL, NULL, NULL, NULL,
     "globs over the file paths of the input (file_path, path, apply_patch's files, output redirections), resolved against the workdir; * also matches /"},
    {"mcp_server", FORMAT_STRING, 0, 1, 256, 0, NULL, NULL, NULL, NULL, NULL,
     "the MCP server of the tool, exact or a glob"},
    {"effect", FORMAT_ENUM, 1, UNB, 0, NULL, NULL, v_effect, NULL, NULL,
     "allow, block, hold (an approval hold) or redact (mask credentials in the input)"},
    {"mode", FORMAT_ENUM, 0, UNB, 0, NULL, NULL, v_mode, "enforce", NULL,
     "enforce (the effect applies) or monitor (only reported: the next rule or the default decides)"},
    {"reason", FORMAT_STRING, 0, 1, POLICY_REASON_MAX, 0, NULL, NULL, NULL, NULL, NULL,
     "what the agent is told (and explain prints)"},
    {"redact", FORMAT_STRING_LIST, 0, 1, 32, 0, NULL, NULL, NULL, NULL, NULL,
     "effect redact: POSIX extended regular expressions masked too, beside the credential formats faultline always masks"},
    END};

static const struct format_key k_command[] = {
    {"program", FORMAT_STRING, 1, 1, 256, 0, NULL, NULL, NULL, NULL, NULL,
     "the program, a glob; without a '/' it matches the program's base name (/usr/bin/git is git)"},
    {"args", FORMAT_STRING_LIST, 0, 0, 64, 0, NULL, NULL, NULL, NULL, NULL,
     "argument globs, each matching a later argument than the one before"},
    END};

static const struct format_section s_policy = {"policy", k_policy,
                                               "the top-level mapping of a policy file"};
static const struct format_section s_rule = {"policy_rule", k_rule, "one item of rules"};
static const struct format_section s_command = {"policy_command", k_command,
                                                "rules[].command, the mapping form"};

/* ---- the policy -------------------------------------------------------------------------- */

struct prule {
    char id[POLICY_ID_MAX + 1];
    char *reason; /* NULL when absent */
    char *tool, *mcp_server;
    char *program; /* command: NULL when the rule has none */
    char **args;
    size_t nargs;
    char **paths; /* as written */
    size_t npaths;
    regex_t *redact;
    size_t nredact;
    enum policy_effect effect;
    enum policy_mode mode;
};

struct policy {
    struct prule *rules;
    size_t n, alloc;
};

static void prule_release(struct prule *r)
{
    free(r->reason);
    free(r->tool);
    free(r->mcp_server);
    free(r->program);
    for (size_t i = 0; i < r->nargs; i++)
        free(r->args[i]);
    free(r->args);
    for (size_t i = 0; i < r->npaths; i++)
        free(r->paths[i]);
    free(r->paths);
    for (size_t i = 0; i < r->nredact; i++)
        regfree(&r->redact[i]);
    free(r->redact);
}

void policy_free(struct policy *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n; i++)
        prule_release(&p->rules[i]);
    free(p->rules);
    free(p);
}

struct policy *policy_builtin(void)
{
    return xcalloc(1, sizeof(struct policy));
}

size_t policy_nrules(const struct policy *p)
{
    return p ? p->n : 0;
}

/* ---- loading ----------------------------------------------------------------------------- */

#define Q(s) text_shown((s), strlen(s), (char[TEXT_SHOWN_SIZE]){0})

/* NULL when glob is a well-formed fnmatch pattern, else what is wrong with it. */
static const char *glob_problem(const char *g)
{
    for (const char *p = g; *p; p++) {
        if (*p == '\\') {
            if (p[1] == '\0')
                return "ends with a lone '\\'";
            p++;
        } else if (*p == '[') {
            const char *q = p + 1;
            if (*q == '!' || *q == '^')
                q++;
            if (*q == ']')
                q++;
            while (*q && *q != ']')
                q++;
            if (*q == '\0')
                return "has a '[' without its ']'";
            p = q;
        }
    }
    return NULL;
}

static int check_glob(struct experiment_diags *d, const struct ynode *n, const char *path)
{
    const char *why = glob_problem(n->str);
    if (why == NULL)
        return 0;
    experiment_diag_error(d, n, "%s: bad glob '%s': it %s", path, Q(n->str), why);
    return ERR_INVALID;
}

/* The string value of key in map checked against its row (and as a glob when glob), copied;
 * NULL when absent or bad. */
static char *get_str(struct experiment_diags *d, const struct ynode *map,
                     const struct format_section *sec, const char *key, const char *where, int glob)
{
    const struct ynode *n = ynode_get(map, key);
    char path[96];
    if (n == NULL)
        return NULL;
    snprintf(path, sizeof(path), "%s.%s", where, key);
    if (experiment_check_value(d, n, format_key_find(sec, key), path) < 0)
        return NULL;
    if (glob && check_glob(d, n, path) < 0)
        return NULL;
    return xstrdup(n->str);
}

/* A checked string list of map (each item a glob when glob); *n its length. */
static char **get_list(struct experiment_diags *d, const struct ynode *map,
                       const struct format_section *sec, const char *key, const char *where,
                       int glob, size_t *n)
{
    const struct ynode *l = ynode_get(map, key);
    char path[96];
    char **v;
    *n = 0;
    if (l == NULL)
        return NULL;
    snprintf(path, sizeof(path), "%s.%s", where, key);
    if (experiment_check_value(d, l, format_key_find(sec, key), path) < 0)
        return NULL;
    v = xcalloc(l->n ? l->n : 1, sizeof(*v));
    for (size_t i = 0; i < l->n; i++) {
        char ip[128];
        snprintf(ip, sizeof(ip), "%s[%zu]", path, i);
        if (glob)
            check_glob(d, l->items[i], ip);
        v[(*n)++] = xstrdup(l->items[i]->str);
    }
    return v;
}

static void parse_command(struct experiment_diags *d, const struct ynode *c, const char *where,
                          struct prule *r)
{
    char path[96];
    snprintf(path, sizeof(path), "%s.command", where);
    if (c->type == YNODE_MAP) {
        size_t before = d->nerrors;
        experiment_check_keys(d, c, &s_command, path);
        r->program = get_str(d, c, &s_command, "program", path, 1);
        r->args = get_list(d, c, &s_command, "args", path, 1, &r->nargs);
        if (d->nerrors == before && r->program == NULL)
            experiment_diag_error(d, c, "%s: missing program", path);
        return;
    }
    if (c->type != YNODE_STR) {
        experiment_diag_error(d, c,
                              "%s: expected a string ('git push *--force*') or a mapping "
                              "{program, args}, found %s",
                              path, ynode_type_name(c->type));
        return;
    }
    struct shell_list l = {0};
    struct err e = {0};
    if (shell_parse(c->str, c->len, &l, &e) < 0) {
        experiment_diag_error(d, c, "%s: cannot parse '%s': %s", path, Q(c->str), e.msg);
        goto out;
    }
    if (l.ncmds != 1 || l.cmds[0].nwords == 0 || l.cmds[0].nredir_out) {
        experiment_diag_error(d, c,
                              "%s: '%s' is not one program with its argument globs (use the "
                              "mapping form for anything else)",
                              path, Q(c->str));
        goto out;
    }
    for (size_t i = 0; i < l.cmds[0].nwords; i++) {
        const char *why = glob_problem(l.cmds[0].words[i].text);
        if (why) {
            experiment_diag_error(d, c, "%s: bad glob '%s': it %s", path,
                                  Q(l.cmds[0].words[i].text), why);
            goto out;
        }
    }
    r->program = xstrdup(l.cmds[0].words[0].text);
    r->nargs = l.cmds[0].nwords - 1;
    r->args = xcalloc(r->nargs ? r->nargs : 1, sizeof(*r->args));
    for (size_t i = 0; i < r->nargs; i++)
        r->args[i] = xstrdup(l.cmds[0].words[i + 1].text);
out:
    shell_list_free(&l);
}

static void parse_redact(struct experiment_diags *d, const struct ynode *map, const char *where,
                         struct prule *r)
{
    const struct ynode *l = ynode_get(map, "redact");
    char path[96];
    if (l == NULL)
        return;
    snprintf(path, sizeof(path), "%s.redact", where);
    if (experiment_check_value(d, l, format_key_find(&s_rule, "redact"), path) < 0)
        return;
    r->redact = xcalloc(l->n ? l->n : 1, sizeof(*r->redact));
    for (size_t i = 0; i < l->n; i++) {
        char why[160];
        int rc;
        if (regex_check(l->items[i]->str, why, sizeof(why)) < 0) {
            experiment_diag_error(d, l->items[i], "%s[%zu]: %s", path, i, why);
            continue;
        }
        if ((rc = regcomp(&r->redact[r->nredact], l->items[i]->str, REG_EXTENDED)) != 0) {
            regerror(rc, &r->redact[r->nredact], why, sizeof(why));
            regfree(&r->redact[r->nredact]);
            experiment_diag_error(d, l->items[i], "%s[%zu]: bad regular expression '%s': %s", path,
                                  i, Q(l->items[i]->str), why);
            continue;
        }
        r->nredact++;
    }
}

static int enum_index(const char *const *values, const char *s)
{
    for (int i = 0; values[i]; i++)
        if (strcmp(values[i], s) == 0)
            return i;
    return 0;
}

static void parse_rule(struct experiment_diags *d, const struct ynode *n, size_t idx,
                       const struct ynode *const *seen, struct policy *p)
{
    char where[32];
    size_t before = d->nerrors;
    struct prule r;
    const struct ynode *v;

    memset(&r, 0, sizeof(r));
    snprintf(where, sizeof(where), "rules[%zu]", idx);
    if (n->type != YNODE_MAP) {
        experiment_diag_error(d, n,
                              "%s: expected a mapping (id, effect and what it matches), "
                              "found %s",
                              where, ynode_type_name(n->type));
        return;
    }
    experiment_check_keys(d, n, &s_rule, where);
    if ((v = ynode_get(n, "id")) != NULL &&
        experiment_check_value(d, v, format_key_find(&s_rule, "id"), "id") == 0) {
        for (size_t i = 0; i < idx; i++)
            if (seen[i] && strcmp(seen[i]->str, v->str) == 0) {
                experiment_diag_error(d, v, "%s.id: duplicate rule id '%s' (first at line %d)",
                                      where, Q(v->str), seen[i]->line);
                break;
            }
        snprintf(r.id, sizeof(r.id), "%s", v->str);
    }
    r.tool = get_str(d, n, &s_rule, "tool", where, 1);
    r.mcp_server = get_str(d, n, &s_rule, "mcp_server", where, 1);
    r.reason = get_str(d, n, &s_rule, "reason", where, 0);
    r.paths = get_list(d, n, &s_rule, "paths", where, 1, &r.npaths);
    if ((v = ynode_get(n, "command")) != NULL)
        parse_command(d, v, where, &r);
    if ((v = ynode_get(n, "effect")) != NULL &&
        experiment_check_value(d, v, format_key_find(&s_rule, "effect"), "effect") == 0)
        r.effect = (enum policy_effect)enum_index(v_effect, v->str);
    if ((v = ynode_get(n, "mode")) != NULL &&
        experiment_check_value(d, v, format_key_find(&s_rule, "mode"), "mode") == 0)
        r.mode = (enum policy_mode)enum_index(v_mode, v->str);
    parse_redact(d, n, where, &r);
    if (ynode_get(n, "redact") && r.effect != POLICY_REDACT && d->nerrors == before)
        experiment_diag_error(d, ynode_key(n, "redact"),
                              "%s.redact: only a rule with effect redact takes patterns", where);
    if (d->nerrors != before) {
        prule_release(&r);
        return;
    }
    if (p->n == p->alloc) {
        p->alloc = p->alloc ? p->alloc * 2 : 16;
        p->rules = xrealloc(p->rules, p->alloc * sizeof(*p->rules));
    }
    p->rules[p->n++] = r;
}

static void parse_doc(struct experiment_diags *d, const struct ynode *root, struct policy *p)
{
    const struct ynode *rules;
    const struct ynode **seen;

    if (root == NULL || (root->type == YNODE_NULL))
        return; /* an empty file: no rules */
    if (root->type != YNODE_MAP) {
        experiment_diag_error(d, root, "expected a mapping with 'rules', found %s",
                              ynode_type_name(root->type));
        return;
    }
    experiment_check_keys(d, root, &s_policy, "");
    if (ynode_get(root, "version"))
        experiment_check_value(d, ynode_get(root, "version"), format_key_find(&s_policy, "version"),
                               "version");
    if ((rules = ynode_get(root, "rules")) == NULL ||
        experiment_check_value(d, rules, format_key_find(&s_policy, "rules"), "rules") < 0)
        return;
    if (p->n + rules->n > POLICY_RULES_MAX) {
        experiment_diag_error(d, rules, "rules: more than %d rules in all the policy's files",
                              POLICY_RULES_MAX);
        return;
    }
    seen = xcalloc(rules->n ? rules->n : 1, sizeof(*seen));
    for (size_t i = 0; i < rules->n; i++) {
        const struct ynode *it = rules->items[i], *id;
        if (it->type == YNODE_MAP && (id = ynode_get(it, "id")) != NULL && id->type == YNODE_STR)
            seen[i] = id;
        parse_rule(d, it, i, seen, p);
    }
    free(seen);
}

static const struct ydoc_limits policy_yaml_limits = {.kind = "a policy file"};

/* Parses one file's text into p (appending its rules); diagnostics into d. */
static void parse_text(struct experiment_diags *d, const char *text, size_t len, struct policy *p)
{
    struct ydoc doc;
    struct ydoc_problem fatal;
    int rc = ydoc_parse(text, len, &policy_yaml_limits, &doc, &fatal);

    for (size_t i = 0; i < doc.nproblems; i++) {
        struct ynode at = {.line = doc.problems[i].line, .col = doc.problems[i].col};
        experiment_diag_error(d, &at, "%s", doc.problems[i].msg);
    }
    if (rc < 0) {
        struct ynode at = {.line = fatal.line, .col = fatal.col};
        experiment_diag_error(d, &at, "%s", fatal.msg);
    } else {
        parse_doc(d, doc.root, p);
    }
    ydoc_release(&doc);
}

/* Formats d into diags and the first line into err; returns 0 or ERR_INVALID. */
static int report(const struct experiment_diags *d, const char *name, struct buf *diags,
                  struct err *err)
{
    struct buf b = BUF_INIT;
    if (d->nerrors == 0)
        return 0;
    experiment_diags_format(d, name, &b);
    if (diags)
        buf_add(diags, b.data, b.len);
    char *nl = strchr(b.data, '\n');
    if (nl)
        *nl = '\0';
    err_set(err, ERR_INVALID, "%s", b.data);
    buf_release(&b);
    return ERR_INVALID;
}

static int parse_into(struct policy *p, const char *name, const char *text, size_t len,
                      struct buf *diags, struct err *err)
{
    struct experiment_diags d = {0};
    int rc;
    parse_text(&d, text, len, p);
    rc = report(&d, name, diags, err);
    experiment_diags_release(&d);
    return rc;
}

int policy_parse(struct policy **out, const char *name, const char *text, size_t len,
                 struct buf *diags, struct err *err)
{
    struct policy *p = policy_builtin();
    int rc;

    *out = NULL;
    if (len > POLICY_FILE_MAX) {
        if (diags)
            buf_addf(diags, "%s:1:1: error: the file is over the limit of %zu bytes\n", name,
                     POLICY_FILE_MAX);
        policy_free(p);
        return err_set(err, ERR_INVALID, "%s:1:1: error: the file is over the limit of %zu bytes",
                       name, POLICY_FILE_MAX);
    }
    if ((rc = parse_into(p, name, text, len, diags, err)) < 0) {
        policy_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int policy_load_diags(struct policy **out, const char *const *paths, size_t npaths,
                      struct buf *diags, struct err *err)
{
    struct policy *p = policy_builtin();
    int rc = 0;

    *out = NULL;
    for (size_t i = 0; i < npaths; i++) {
        struct buf text = BUF_INIT;
        struct err re = {0};
        struct stat st;

        if (stat(paths[i], &st) < 0 && errno == ENOENT)
            continue;
        rc = fs_read_file(paths[i], POLICY_FILE_MAX, &text, &re);
        if (rc == ERR_LIMIT) {
            if (diags)
                buf_addf(diags, "%s:1:1: error: the file is over the limit of %zu bytes\n",
                         paths[i], POLICY_FILE_MAX);
            rc = err_set(err, ERR_INVALID, "%s:1:1: error: the file is over the limit of %zu bytes",
                         paths[i], POLICY_FILE_MAX);
        } else if (rc < 0) {
            if (diags)
                buf_addf(diags, "%s\n", re.msg);
            rc = err_set(err, ERR_IO, "%s", re.msg);
        } else {
            rc = parse_into(p, paths[i], text.data, text.len, diags, err);
        }
        buf_release(&text);
        if (rc < 0)
            goto fail;
    }
    *out = p;
    return 0;
fail:
    policy_free(p);
    return rc;
}

int policy_load(struct policy **out, const char *const *paths, size_t npaths, struct err *err)
{
    return policy_load_diags(out, paths, npaths, NULL, err);
}

json_t *policy_schema(void)
{
    json_t *root = json_pack("{s:s,s:s,s:s}", "$schema", SCHEMA_DIALECT, "$id",
                             "urn:faultline:policy", "title", "faultline policy");
    json_t *top = schema_section(&s_policy), *defs = json_object();
    json_t *cmd = json_pack("{s:[{s:s,s:i},o]}", "oneOf", "type", "string", "minLength", 1,
                            schema_section(&s_command));
    json_t *rule = schema_section(&s_rule);

    json_object_set_new(json_object_get(rule, "properties"), "command", cmd);
    json_object_set_new(defs, "policy_rule", rule);
    json_object_set_new(defs, "policy_command", schema_section(&s_command));
    json_object_update(root, top);
    json_decref(top);
    json_object_set_new(
        root, "description",
        json_string("A policy file of faultline's gates (.faultline/policy.yaml, "
                    "~/.config/faultline/policy.yaml; docs/gate.md). Generated by `faultline "
                    "schema --policy` from the same tables as the policy loader, which also "
                    "checks globs, regular expressions and unique ids."));
    json_object_set_new(root, "$defs", defs);
    return root;
}

/* ---- matching ---------------------------------------------------------------------------- */

/* What a call offers the rules, computed once per decision. */
struct facts {
    const char *tool, *server;
    char server_buf[128];
    int has_command, parsed;
    struct shell_list cmds;
    char **paths; /* absolute, normalised */
    size_t npaths, apaths;
};

/* Appends to out the normalised absolute form of path (relative ones against workdir): "." and
 * empty steps dropped, ".." removes the step before it and never goes above "/". */
static void path_normalise(const char *workdir, const char *path, struct buf *out)
{
    struct buf in = BUF_INIT;
    size_t keep[256], nkeep = 0;

    if (path[0] != '/')
        buf_addf(&in, "%s/", workdir && *workdir ? workdir : "/");
    buf_adds(&in, path);
    buf_reset(out);
    for (const char *p = in.data; *p;) {
        const char *s = p;
        while (*p && *p != '/')
            p++;
        size_t n = (size_t)(p - s);
        if (*p)
            p++;
        if (n == 0 || (n == 1 && s[0] == '.'))
            continue;
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            if (nkeep)
                buf_truncate(out, keep[--nkeep]);
            continue;
        }
        if (nkeep < sizeof(keep) / sizeof(keep[0]))
            keep[nkeep++] = out->len;
        buf_addc(out, '/');
        buf_add(out, s, n);
    }
    if (out->len == 0)
        buf_addc(out, '/');
    buf_release(&in);
}

#define FACT_PATHS_MAX 256

static void add_path(struct facts *f, const char *workdir, const char *path, size_t n)
{
    struct buf raw = BUF_INIT, norm = BUF_INIT;
    if (n == 0 || f->npaths >= FACT_PATHS_MAX)
        return;
    buf_add(&raw, path, n);
    path_normalise(workdir, raw.data, &norm);
    if (f->npaths == f->apaths) {
        f->apaths = f->apaths ? f->apaths * 2 : 8;
        f->paths = xrealloc(f->paths, f->apaths * sizeof(*f->paths));
    }
    f->paths[f->npaths++] = buf_detach(&norm, NULL);
    buf_release(&raw);
}

/* The files an apply_patch names: "*** Add File: P", "*** Update File: P", "*** Delete File:
 * P", "*** Move to: P" lines. */
static void patch_paths(struct facts *f, const char *workdir, const char *s)
{
    static const char *const heads[] = {
        "*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "};
    for (const char *line = s; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
            size_t h = strlen(heads[i]);
            if (len > h && strncmp(line, heads[i], h) == 0) {
                size_t n = len - h;
                while (n && (line[h + n - 1] == '\r' || line[h + n - 1] == ' '))
                    n--;
                add_path(f, workdir, line + h, n);
            }
        }
        line = end ? end + 1 : NULL;
    }
}

static void facts_init(struct facts *f, const struct policy_call *call, const char *cmd)
{
    static const char *const path_keys[] = {"file_path", "path", "notebook_path", "filePath"};
    const json_t *in = call->input;
    const char *key;
    json_t *v;

    memset(f, 0, sizeof(*f));
    f->tool = call->tool ? call->tool : "";
    f->server = call->mcp_server;
    if (f->server == NULL && strncmp(f->tool, "mcp__", 5) == 0) {
        const char *s = f->tool + 5, *e = strstr(s, "__");
        if (e && (size_t)(e - s) < sizeof(f->server_buf)) {
            memcpy(f->server_buf, s, (size_t)(e - s));
            f->server_buf[e - s] = '\0';
            f->server = f->server_buf;
        }
    }
    if (cmd) {
        struct err e = {0};
        f->has_command = 1;
        f->parsed = shell_parse(cmd, strlen(cmd), &f->cmds, &e) == 0;
        for (size_t i = 0; f->parsed && i < f->cmds.ncmds; i++)
            for (size_t j = 0; j < f->cmds.cmds[i].nredir_out; j++)
                add_path(f, call->workdir, f->cmds.cmds[i].redir_out[j],
                         strlen(f->cmds.cmds[i].redir_out[j]));
    }
    if (!json_is_object(in))
        return;
    for (size_t i = 0; i < sizeof(path_keys) / sizeof(path_keys[0]); i++)
        if (json_is_string(v = json_object_get(in, path_keys[i])))
            add_path(f, call->workdir, json_string_value(v), json_string_length(v));
    if (json_is_array(v = json_object_get(in, "paths"))) {
        size_t i;
        json_t *p;
        json_array_foreach(v, i, p) if (json_is_string(p))
            add_path(f, call->workdir, json_string_value(p), json_string_length(p));
    }
    json_object_foreach((json_t *)in, key,
                        v) if (json_is_string(v) && strstr(json_string_value(v), "*** Begin Patch"))
        patch_paths(f, call->workdir, json_string_value(v));
}

static void facts_release(struct facts *f)
{
    shell_list_free(&f->cmds);
    for (size_t i = 0; i < f->npaths; i++)
        free(f->paths[i]);
    free(f->paths);
}

static int glob_match(const char *glob, const char *s)
{
    return fnmatch(glob, s, 0) == 0;
}

/* Prefixes that run the command after them (and their own options): a command rule looks past
 * them, as the tier does. */
static int wrapper(const char *w)
{
    static const char *const names[] = {"sudo",    "env",     "nice", "nohup", "time",
                                        "timeout", "command", "exec", "xargs", "doas"};
    const char *b = strrchr(w, '/');
    b = b ? b + 1 : w;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(b, names[i]) == 0)
            return 1;
    return 0;
}

/* A word that may stand between a wrapper and its command: an option, an assignment (env
 * A=1), a number or a duration (nice -n 5, timeout 10s). */
static int wrapper_arg(const char *w)
{
    return w[0] == '-' || strchr(w, '=') != NULL || (w[0] >= '0' && w[0] <= '9');
}

static int program_match(const char *glob, const char *prog)
{
    const char *b;
    if (strchr(glob, '/'))
        return glob_match(glob, prog);
    b = strrchr(prog, '/');
    return glob_match(glob, b ? b + 1 : prog);
}

static int words_match(const struct prule *r, const struct shell_word *w, size_t n)
{
    size_t a = 0;
    if (!program_match(r->program, w[0].text))
        return 0;
    for (size_t i = 1; i < n && a < r->nargs; i++)
        if (glob_match(r->args[a], w[i].text))
            a++;
    return a == r->nargs;
}

static int simple_match(const struct prule *r, const struct shell_simple *c)
{
    for (size_t i = 0; i < c->nwords; i++) {
        if (words_match(r, c->words + i, c->nwords - i))
            return 1;
        if (wrapper(c->words[i].text) || (i > 0 && wrapper_arg(c->words[i].text)))
            continue;
        /* the value of a wrapper's option (sudo -u root, timeout -s KILL) */
        if (i > 0 && c->words[i - 1].text[0] == '-' && !wrapper(c->words[i - 1].text))
            continue;
        return 0;
    }
    return 0;
}

/* An unparsable command line: matched split on blanks, so that a rule cannot be dodged with an
 * unterminated quote. */
static int raw_match(const struct prule *r, const char *cmd)
{
    struct shell_word w[256];
    char *copy = xstrdup(cmd), *save = NULL;
    size_t n = 0;
    int m;
    for (char *t = strtok_r(copy, " \t\n", &save); t && n < 256; t = strtok_r(NULL, " \t\n", &save))
        w[n++] = (struct shell_word){.text = t};
    struct shell_simple c = {.words = w, .nwords = n};
    m = simple_match(r, &c);
    free(copy);
    return m;
}

static int command_match(const struct prule *r, const struct facts *f, const char *cmd)
{
    if (!f->has_command)
        return 0;
    if (!f->parsed)
        return raw_match(r, cmd);
    for (size_t i = 0; i < f->cmds.ncmds; i++)
        if (simple_match(r, &f->cmds.cmds[i]))
            return 1;
    return 0;
}

static int paths_match(const struct prule *r, const struct facts *f, const char *workdir)
{
    struct buf pat = BUF_INIT;
    int m = 0;
    for (size_t i = 0; i < r->npaths && !m; i++) {
        path_normalise(workdir, r->paths[i], &pat);
        for (size_t j = 0; j < f->npaths && !m; j++)
            m = glob_match(pat.data, f->paths[j]);
    }
    buf_release(&pat);
    return m;
}

static int rule_match(const struct prule *r, const struct facts *f, const struct policy_call *call,
                      const char *cmd)
{
    if (r->tool && !glob_match(r->tool, f->tool))
        return 0;
    if (r->mcp_server && (f->server == NULL || !glob_match(r->mcp_server, f->server)))
        return 0;
    if (r->program && !command_match(r, f, cmd))
        return 0;
    if (r->npaths && !paths_match(r, f, call->workdir))
        return 0;
    return 1;
}

/* ---- redaction --------------------------------------------------------------------------- */

static json_t *redact_string(const struct prule *r, const char *s, size_t n)
{
    struct buf a = BUF_INIT, b = BUF_INIT;
    json_t *j;

    redact_text(NULL, s, n, &a);
    for (size_t i = 0; i < r->nredact; i++) {
        regmatch_t m;
        const char *p = a.data;
        int flags = 0;
        buf_reset(&b);
        while (*p && regexec(&r->redact[i], p, 1, &m, flags) == 0) {
            if (m.rm_eo == m.rm_so) { /* an empty match: step over one byte */
                buf_add(&b, p, (size_t)m.rm_so + 1);
                p += m.rm_so + 1;
            } else {
                buf_add(&b, p, (size_t)m.rm_so);
                buf_adds(&b, REDACT_MARK);
                p += m.rm_eo;
            }
            flags = REG_NOTBOL;
        }
        buf_adds(&b, p);
        buf_reset(&a);
        buf_add(&a, b.data, b.len);
    }
    j = json_stringn(a.data, a.len);
    buf_release(&a);
    buf_release(&b);
    return j;
}

/* A copy of v with every string masked (new reference). */
static json_t *redact_json(const struct prule *r, const json_t *v, int depth)
{
    const char *k;
    json_t *c, *out;
    size_t i;

    if (depth > 64)
        return json_null();
    if (json_is_string(v))
        return redact_string(r, json_string_value(v), json_string_length(v));
    if (json_is_object(v)) {
        out = json_object();
        json_object_foreach((json_t *)v, k, c)
            json_object_set_new(out, k, redact_json(r, c, depth + 1));
        return out;
    }
    if (json_is_array(v)) {
        out = json_array();
        json_array_foreach(v, i, c) json_array_append_new(out, redact_json(r, c, depth + 1));
        return out;
    }
    return json_deep_copy(v);
}

/* ---- deciding ---------------------------------------------------------------------------- */

/* Appends w as one shell word: as it is when it holds only safe bytes, else in single quotes
 * (a ' inside as '\''). */
static void shell_quote(struct buf *b, const char *w)
{
    int plain = *w != '\0';
    for (const char *p = w; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%",
                       *p) != NULL;
    if (plain) {
        buf_adds(b, w);
        return;
    }
    buf_addc(b, '\'');
    for (const char *p = w; *p; p++) {
        if (*p == '\'')
            buf_adds(b, "'\\''");
        else
            buf_addc(b, *p);
    }
    buf_addc(b, '\'');
}

const char *policy_call_command(const struct policy_call *call, struct buf *buf)
{
    const json_t *c = json_is_object(call->input) ? json_object_get(call->input, "command") : NULL;
    size_t i;
    json_t *w;

    if (json_is_string(c))
        return json_string_value(c);
    if (!json_is_array(c) || json_array_size(c) == 0)
        return NULL;
    buf_reset(buf);
    json_array_foreach(c, i, w)
    {
        if (!json_is_string(w))
            return NULL;
        if (i)
            buf_addc(buf, ' ');
        shell_quote(buf, json_string_value(w));
    }
    return buf->data;
}

static void set_reason(struct policy_decision *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_reason(struct policy_decision *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->reason, sizeof(d->reason), fmt, ap);
    va_end(ap);
}

static void rule_reason(const struct prule *r, struct policy_decision *d)
{
    static const char *const verbs[] = {"allowed", "blocked", "held for approval", "redacted"};
    if (r->reason)
        set_reason(d, "[faultline] %s by policy rule '%s': %s", verbs[r->effect], r->id, r->reason);
    else
        set_reason(d, "[faultline] %s by policy rule '%s'", verbs[r->effect], r->id);
}

int policy_decide(const struct policy *p, const struct policy_call *call, struct policy_decision *d)
{
    struct buf b = BUF_INIT;
    struct facts f;
    const struct prule *by = NULL;
    const char *cmd;

    memset(d, 0, sizeof(*d));
    cmd = policy_call_command(call, &b);
    if (cmd)
        tier_of_command(cmd, strlen(cmd), &d->tier);
    facts_init(&f, call, cmd);
    for (size_t i = 0; p && i < p->n && by == NULL; i++) {
        const struct prule *r = &p->rules[i];
        if (!rule_match(r, &f, call, cmd))
            continue;
        if (r->mode == POLICY_MONITOR) {
            if (!d->monitored) {
                d->monitored = 1;
                snprintf(d->monitor_rule, sizeof(d->monitor_rule), "%s", r->id);
                d->monitor_effect = r->effect;
            }
            continue;
        }
        by = r;
    }
    if (by) {
        d->effect = by->effect;
        d->mode = POLICY_ENFORCE;
        snprintf(d->rule, sizeof(d->rule), "%s", by->id);
        rule_reason(by, d);
        if (by->effect == POLICY_REDACT && call->input)
            d->redacted_input = redact_json(by, call->input, 0);
    } else {
        d->from_default = 1;
        if (d->monitored) {
            d->mode = POLICY_MONITOR;
            snprintf(d->rule, sizeof(d->rule), "%s", d->monitor_rule);
        }
        if (d->tier.level == TIER_DESTRUCTIVE) {
            d->effect = POLICY_BLOCK;
            set_reason(d,
                       "[faultline] blocked: destructive command (%s): %s; the default policy "
                       "blocks the destructive tier",
                       d->tier.pattern, d->tier.command);
        } else {
            d->effect = POLICY_ALLOW;
            set_reason(d, "[faultline] allowed by the default policy");
        }
    }
    facts_release(&f);
    buf_release(&b);
    return 0;
}

void policy_decision_release(struct policy_decision *d)
{
    json_decref(d->redacted_input);
    d->redacted_input = NULL;
}

const char *policy_effect_name(enum policy_effect e)
{
    static const char *const names[] = {"allow", "block", "hold", "redact"};
    return (unsigned)e < 4 ? names[e] : "allow";
}

const char *policy_mode_name(enum policy_mode m)
{
    return m == POLICY_MONITOR ? "monitor" : "enforce";
}

const char *policy_tier_name(const struct policy_decision *d)
{
    if (d->tier.level == TIER_DESTRUCTIVE)
        return "destructive";
    return d->from_default ? "default" : "rule";
}

json_t *policy_decision_json(const struct policy_decision *d)
{
    json_t *j = json_object();
    json_object_set_new(j, "effect", json_string(policy_effect_name(d->effect)));
    json_object_set_new(j, "mode", json_string(policy_mode_name(d->mode)));
    json_object_set_new(j, "tier", json_string(policy_tier_name(d)));
    json_object_set_new(j, "tier_pattern",
                        *d->tier.pattern ? json_string(d->tier.pattern) : json_null());
    json_object_set_new(j, "command",
                        *d->tier.command ? json_string(d->tier.command) : json_null());
    json_object_set_new(j, "rule", *d->rule ? json_string(d->rule) : json_null());
    json_object_set_new(j, "from_default", json_boolean(d->from_default));
    json_object_set_new(j, "reason", json_string(d->reason));
    json_object_set_new(j, "monitor",
                        d->monitored ? json_pack("{s:s,s:s}", "rule", d->monitor_rule, "effect",
                                                 policy_effect_name(d->monitor_effect))
                                     : json_null());
    if (d->redacted_input)
        json_object_set(j, "redacted_input", d->redacted_input);
    return j;
}
