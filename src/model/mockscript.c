/*
 * mockscript: mock model scripts (see mockscript.h and docs/mock-model.md).
 *
 * Loading turns the YAML (through the JSON view of util/yaml.h, which keeps positions, refuses
 * aliases and duplicate keys) into rules: each rule is a list of conditions (all must hold) and
 * a reply template. Everything a reply can need is checked at load time (keys, types, regexes
 * compile, template variables exist) so a script that loads never fails at request time.
 * Answering is two steps: build a view of the request's conversation (mockscript_view_init:
 * turn count, tool results, user text, offered tools, the last tool call, a canary), then walk
 * the rules in order and render the first match.
 *
 * Templates: "{{ name }}" with name one of the variables in var_names[]; "match.N" (N 0..9)
 * is group N of the rule's one "*_matches" condition. Values longer than MOCKSCRIPT_ECHO_MAX
 * are cut (with "...").
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/mockscript.h"
#include "util/fs.h"
#include "util/yaml.h"
#include "util/regex_safe.h"
#include "util/banned.h"

#define DEFAULT_ERROR_PATTERN                                                                      \
    "[Ee]xit code:? *[1-9]|exited with code [1-9]|\"exit_code\": *[1-9]|[Ee]rror|ERROR|"           \
    "[Ff]ailed|FAILED|[Pp]ermission denied|[Nn]ot found|E-[A-Z]+-[0-9a-f]{8}"

enum cond_kind {
    C_FIRST_TURN,
    C_TURN,
    C_MIN_TURN,
    C_MAX_TURN,
    C_TOOL_OFFERED,
    C_TOOL_NOT_OFFERED,
    C_API,
    C_HAS_TOOL_RESULT,
    C_LAST_ERROR,
    C_LAST_CONTAINS,
    C_LAST_MATCHES,
    C_ANY_CONTAINS,
    C_ANY_MATCHES,
    C_USER_CONTAINS,
    C_USER_MATCHES,
    C_TEXT_CONTAINS,
    C_TEXT_MATCHES,
    C_MODEL_CONTAINS
};

enum cond_type { T_BOOL, T_INT, T_NAMES, T_STRING, T_REGEX };

static const struct {
    const char *key;
    enum cond_kind kind;
    enum cond_type type;
} cond_table[] = {
    {"first_turn", C_FIRST_TURN, T_BOOL},
    {"turn", C_TURN, T_INT},
    {"min_turn", C_MIN_TURN, T_INT},
    {"max_turn", C_MAX_TURN, T_INT},
    {"tool_offered", C_TOOL_OFFERED, T_NAMES},
    {"tool_not_offered", C_TOOL_NOT_OFFERED, T_NAMES},
    {"api", C_API, T_NAMES},
    {"has_tool_result", C_HAS_TOOL_RESULT, T_BOOL},
    {"last_tool_result_error", C_LAST_ERROR, T_BOOL},
    {"last_tool_result_contains", C_LAST_CONTAINS, T_STRING},
    {"last_tool_result_matches", C_LAST_MATCHES, T_REGEX},
    {"any_tool_result_contains", C_ANY_CONTAINS, T_STRING},
    {"any_tool_result_matches", C_ANY_MATCHES, T_REGEX},
    {"last_user_text_contains", C_USER_CONTAINS, T_STRING},
    {"last_user_text_matches", C_USER_MATCHES, T_REGEX},
    {"text_contains", C_TEXT_CONTAINS, T_STRING},
    {"text_matches", C_TEXT_MATCHES, T_REGEX},
    {"model_contains", C_MODEL_CONTAINS, T_STRING},
};

struct cond {
    enum cond_kind kind;
    int b;
    long long n;
    json_t *names; /* T_NAMES: array of strings (owned) */
    char *s;       /* T_STRING */
    regex_t re;    /* T_REGEX */
    int has_re;
};

struct reply_tpl {
    char *text;         /* template or NULL */
    json_t *tool_calls; /* array of {"name","input"} with templated strings (owned) */
    int repeat_last;
    int error_status;
    char *error_message; /* template */
    int has_usage;
    int64_t usage[4]; /* input, cache_write, cache_read, output; -1 computed */
};

struct rule {
    char *name;
    struct cond *conds;
    size_t nconds;
    int regex_cond; /* index of the one *_matches condition, -1 none */
    struct reply_tpl reply;
};

struct mockscript {
    char *name;
    char *model;
    regex_t error_re;
    struct rule *rules;
    size_t nrules;
    int has_fallback;
    struct reply_tpl fallback;
};

/* --- templates --- */

static const char *const var_names[] = {
    "last_tool_result",  "last_user_text", "canary", "turn", "model",
    "tool_result_count", "last_tool_name", NULL};

/* Scans "{{ name }}" at s (s points at "{{"): sets the name span, returns the length of the
 * whole placeholder, 0 when s is not a well-formed placeholder. */
static size_t placeholder(const char *s, const char **name, size_t *nlen)
{
    const char *p = s + 2;
    while (*p == ' ')
        p++;
    const char *b = p;
    while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '.')
        p++;
    *name = b;
    *nlen = (size_t)(p - b);
    while (*p == ' ')
        p++;
    if (*nlen == 0 || p[0] != '}' || p[1] != '}')
        return 0;
    return (size_t)(p + 2 - s);
}

/* match_group's and var_index's "not one of them": below every index, not an error code. */
#define NO_INDEX (-1)

/* The N of a "match.N" placeholder name, or NO_INDEX. */
static int match_group(const char *name, size_t n)
{
    if (n == 7 && strncmp(name, "match.", 6) == 0 && name[6] >= '0' && name[6] <= '9')
        return name[6] - '0';
    return NO_INDEX;
}

/* The index of name in var_names, or NO_INDEX. */
static int var_index(const char *name, size_t n)
{
    for (int i = 0; var_names[i]; i++)
        if (strlen(var_names[i]) == n && strncmp(var_names[i], name, n) == 0)
            return i;
    return NO_INDEX;
}

/* Checks every placeholder of t. Returns 0, or ERR_INVALID with bad (a copy of the
 * placeholder) set.
 * *uses_match is set when a match.N appears. */
static int tpl_check(const char *t, char *bad, size_t bad_size, int *uses_match)
{
    for (const char *p = strstr(t, "{{"); p; p = strstr(p + 2, "{{")) {
        const char *name;
        size_t n, len = placeholder(p, &name, &n);
        if (len == 0 || (var_index(name, n) == NO_INDEX && match_group(name, n) == NO_INDEX)) {
            size_t k = strcspn(p, "\n");
            snprintf(bad, bad_size, "%.*s", (int)(k < 40 ? k : 40), p);
            return ERR_INVALID;
        }
        if (match_group(name, n) != NO_INDEX)
            *uses_match = 1;
    }
    return 0;
}

struct render_ctx {
    const struct mockscript_view *v;
    const char *subject; /* the string the rule's regex matched, or NULL */
    regmatch_t groups[10];
};

static void add_capped(struct buf *out, const char *s, size_t n)
{
    if (n > MOCKSCRIPT_ECHO_MAX) {
        buf_add(out, s, MOCKSCRIPT_ECHO_MAX);
        buf_adds(out, "...");
    } else {
        buf_add(out, s, n);
    }
}

static void render(const char *t, const struct render_ctx *c, struct buf *out)
{
    const struct mockscript_view *v = c->v;
    const char *p = t;
    for (;;) {
        const char *q = strstr(p, "{{");
        if (q == NULL) {
            buf_adds(out, p);
            return;
        }
        buf_add(out, p, (size_t)(q - p));
        const char *name;
        size_t n, len = placeholder(q, &name, &n);
        if (len == 0) { /* cannot happen after tpl_check; keep the text */
            buf_adds(out, "{{");
            p = q + 2;
            continue;
        }
        int g = match_group(name, n);
        switch (g != NO_INDEX ? 100 + g : var_index(name, n)) {
        case 0:
            add_capped(out, v->last_result.data, v->last_result.len);
            break;
        case 1:
            add_capped(out, v->last_user.data, v->last_user.len);
            break;
        case 2:
            buf_adds(out, v->canary);
            break;
        case 3:
            buf_addf(out, "%zu", v->turn);
            break;
        case 4:
            buf_adds(out, v->model);
            break;
        case 5:
            buf_addf(out, "%zu", v->tool_results);
            break;
        case 6: {
            const char *nm = json_string_value(json_object_get(v->last_call, "name"));
            buf_adds(out, nm ? nm : "");
            break;
        }
        default:
            if (g >= 0 && c->subject && c->groups[g].rm_so >= 0)
                add_capped(out, c->subject + c->groups[g].rm_so,
                           (size_t)(c->groups[g].rm_eo - c->groups[g].rm_so));
            break;
        }
        p = q + len;
    }
}

/* Renders every string inside j (a deep copy the caller owns) in place. */
static void render_json(json_t *j, const struct render_ctx *c)
{
    size_t i;
    const char *k;
    json_t *v;

    if (json_is_object(j)) {
        json_object_foreach(j, k, v)
        {
            if (json_is_string(v)) {
                struct buf b = BUF_INIT;
                render(json_string_value(v), c, &b);
                json_object_set_new(j, k, json_stringn(b.data, b.len));
                buf_release(&b);
            } else {
                render_json(v, c);
            }
        }
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, v)
        {
            if (json_is_string(v)) {
                struct buf b = BUF_INIT;
                render(json_string_value(v), c, &b);
                json_array_set_new(j, i, json_stringn(b.data, b.len));
                buf_release(&b);
            } else {
                render_json(v, c);
            }
        }
    }
}

/* --- loading --- */

struct loader {
    const char *name;
    struct ydoc_marks *marks;
    struct err *e;
};

static int lerr(struct loader *L, const json_t *container, const char *key, int at_key,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int lerr(struct loader *L, const json_t *container, const char *key, int at_key,
                const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ydoc_json_err(L->e, ERR_INVALID, L->name, L->marks, container, key, at_key, msg);
}

/* Fails on a key of o not in allowed (NULL-terminated). */
static int check_keys(struct loader *L, const json_t *o, const char *const *allowed,
                      const char *what)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        size_t i;
        for (i = 0; allowed[i] && strcmp(allowed[i], k) != 0; i++)
            ;
        if (allowed[i] == NULL)
            return lerr(L, o, k, 1, "unknown key '%.64s' in %s", k, what);
    }
    return 0;
}

static int check_template(struct loader *L, const json_t *container, const char *key, const char *t,
                          int *uses_match)
{
    char bad[64];
    if (tpl_check(t, bad, sizeof(bad), uses_match) < 0)
        return lerr(L, container, key, 0,
                    "unknown template '%s' (variables: last_tool_result, last_user_text, canary, "
                    "turn, model, tool_result_count, last_tool_name, match.N)",
                    bad);
    return 0;
}

/* Checks the templates in every string of j; container/key locate j for messages. */
static int check_json_templates(struct loader *L, const json_t *container, const char *key,
                                const json_t *j, int *uses_match)
{
    size_t i;
    const char *k;
    json_t *v;
    if (json_is_string(j))
        return check_template(L, container, key, json_string_value(j), uses_match);
    if (json_is_object(j)) {
        json_object_foreach((json_t *)j, k, v)
        {
            if (check_json_templates(L, j, k, v, uses_match) < 0)
                return L->e ? L->e->code : ERR_INVALID;
        }
    }
    if (json_is_array(j)) {
        json_array_foreach(j, i, v)
        {
            if (check_json_templates(L, container, key, v, uses_match) < 0)
                return L->e ? L->e->code : ERR_INVALID;
        }
    }
    return 0;
}

static int compile_regex(struct loader *L, const json_t *container, const char *key,
                         const char *pattern, regex_t *re)
{
    char why[96];
    if (regex_check(pattern, why, sizeof(why)) < 0)
        return lerr(L, container, key, 0, "regular expression '%.60s' refused: %s", pattern, why);
    int rc = regcomp(re, pattern, REG_EXTENDED);
    if (rc != 0) {
        char msg[128];
        regerror(rc, re, msg, sizeof(msg));
        regfree(re);
        return lerr(L, container, key, 0, "bad regular expression '%.60s': %s", pattern, msg);
    }
    return 0;
}

static void reply_tpl_free(struct reply_tpl *r)
{
    free(r->text);
    free(r->error_message);
    json_decref(r->tool_calls);
    memset(r, 0, sizeof(*r));
}

static int parse_reply(struct loader *L, const json_t *o, struct reply_tpl *r, int *uses_match)
{
    static const char *const keys[] = {"text",  "tool_calls", "repeat_last_tool_call",
                                       "error", "usage",      NULL};
    static const char *const call_keys[] = {"name", "input", NULL};
    static const char *const err_keys[] = {"status", "message", NULL};
    static const char *const usage_keys[] = {"input_tokens", "cache_write_tokens",
                                             "cache_read_tokens", "output_tokens", NULL};
    const json_t *v;
    size_t i;

    memset(r, 0, sizeof(*r));
    r->tool_calls = json_array();
    for (i = 0; i < 4; i++)
        r->usage[i] = -1;
    if (!json_is_object(o))
        return lerr(L, o, NULL, 0, "a reply must be a mapping");
    if (check_keys(L, o, keys, "a reply") < 0)
        return ERR_INVALID;
    v = json_object_get(o, "text");
    if (v) {
        if (!json_is_string(v))
            return lerr(L, o, "text", 0, "'text' must be a string");
        if (check_template(L, o, "text", json_string_value(v), uses_match) < 0)
            return ERR_INVALID;
        r->text = xstrdup(json_string_value(v));
    }
    v = json_object_get(o, "tool_calls");
    if (v) {
        const json_t *call;
        if (!json_is_array(v))
            return lerr(L, o, "tool_calls", 0, "'tool_calls' must be a list");
        json_array_foreach(v, i, call)
        {
            if (!json_is_object(call))
                return lerr(L, call, NULL, 0, "a tool call must be a mapping with 'name'");
            if (check_keys(L, call, call_keys, "a tool call") < 0)
                return ERR_INVALID;
            const json_t *name = json_object_get(call, "name");
            const json_t *input = json_object_get(call, "input");
            if (!json_is_string(name) || json_string_length(name) == 0)
                return lerr(L, call, NULL, 0, "a tool call needs a 'name' string");
            if (input && !json_is_object(input))
                return lerr(L, call, "input", 0, "'input' must be a mapping");
            if (input && check_json_templates(L, call, "input", input, uses_match) < 0)
                return ERR_INVALID;
            json_array_append_new(r->tool_calls,
                                  json_pack("{s:O,s:o}", "name", name, "input",
                                            input ? json_deep_copy(input) : json_object()));
        }
    }
    v = json_object_get(o, "repeat_last_tool_call");
    if (v) {
        if (!json_is_boolean(v))
            return lerr(L, o, "repeat_last_tool_call", 0, "must be true or false");
        r->repeat_last = json_is_true(v);
    }
    v = json_object_get(o, "error");
    if (v) {
        if (!json_is_object(v))
            return lerr(L, o, "error", 0, "'error' must be a mapping with 'status'");
        if (check_keys(L, v, err_keys, "an error reply") < 0)
            return ERR_INVALID;
        const json_t *st = json_object_get(v, "status");
        const json_t *msg = json_object_get(v, "message");
        if (!json_is_integer(st) || json_integer_value(st) < 400 || json_integer_value(st) > 599)
            return lerr(L, v, st ? "status" : NULL, 0, "'status' must be a number in 400..599");
        if (msg && !json_is_string(msg))
            return lerr(L, v, "message", 0, "'message' must be a string");
        if (msg && check_template(L, v, "message", json_string_value(msg), uses_match) < 0)
            return ERR_INVALID;
        r->error_status = (int)json_integer_value(st);
        r->error_message = xstrdup(msg ? json_string_value(msg) : "mock-model error");
    }
    v = json_object_get(o, "usage");
    if (v) {
        if (!json_is_object(v))
            return lerr(L, o, "usage", 0, "'usage' must be a mapping of token counts");
        if (check_keys(L, v, usage_keys, "usage") < 0)
            return ERR_INVALID;
        for (i = 0; i < 4; i++) {
            const json_t *n = json_object_get(v, usage_keys[i]);
            if (n == NULL)
                continue;
            if (!json_is_integer(n) || json_integer_value(n) < 0 ||
                json_integer_value(n) > 1000000000)
                return lerr(L, v, usage_keys[i], 0, "'%s' must be a count from 0 to 1e9",
                            usage_keys[i]);
            r->usage[i] = json_integer_value(n);
            r->has_usage = 1;
        }
    }
    return 0;
}

static int parse_cond(struct loader *L, const json_t *when, const char *key, const json_t *v,
                      struct cond *c)
{
    size_t i;
    memset(c, 0, sizeof(*c));
    for (i = 0; i < sizeof(cond_table) / sizeof(cond_table[0]); i++)
        if (strcmp(cond_table[i].key, key) == 0)
            break;
    if (i == sizeof(cond_table) / sizeof(cond_table[0]))
        return lerr(L, when, key, 1, "unknown condition '%.64s'", key);
    c->kind = cond_table[i].kind;
    switch (cond_table[i].type) {
    case T_BOOL:
        if (!json_is_boolean(v))
            return lerr(L, when, key, 0, "'%s' must be true or false", key);
        c->b = json_is_true(v);
        break;
    case T_INT:
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return lerr(L, when, key, 0, "'%s' must be a non-negative integer", key);
        c->n = json_integer_value(v);
        break;
    case T_NAMES: {
        const json_t *x;
        size_t k;
        c->names = json_array();
        if (json_is_string(v)) {
            json_array_append(c->names, (json_t *)v);
        } else if (json_is_array(v) && json_array_size(v) > 0) {
            json_array_foreach(v, k, x)
            {
                if (!json_is_string(x))
                    return lerr(L, when, key, 0, "'%s' must be a name or a list of names", key);
                json_array_append(c->names, (json_t *)x);
            }
        } else {
            return lerr(L, when, key, 0, "'%s' must be a name or a list of names", key);
        }
        if (c->kind == C_API) {
            json_array_foreach(c->names, k, x)
            {
                const char *s = json_string_value(x);
                if (strcmp(s, "anthropic") && strcmp(s, "chat") && strcmp(s, "responses"))
                    return lerr(L, when, key, 0,
                                "unknown api '%.32s' (anthropic, chat or responses)", s);
            }
        }
        break;
    }
    case T_STRING:
        if (!json_is_string(v))
            return lerr(L, when, key, 0, "'%s' must be a string", key);
        c->s = xstrdup(json_string_value(v));
        break;
    case T_REGEX:
        if (!json_is_string(v))
            return lerr(L, when, key, 0, "'%s' must be a regular expression string", key);
        if (compile_regex(L, when, key, json_string_value(v), &c->re) < 0)
            return ERR_INVALID;
        c->has_re = 1;
        break;
    }
    return 0;
}

static void rule_free(struct rule *r)
{
    for (size_t i = 0; i < r->nconds; i++) {
        json_decref(r->conds[i].names);
        free(r->conds[i].s);
        if (r->conds[i].has_re)
            regfree(&r->conds[i].re);
    }
    free(r->conds);
    free(r->name);
    reply_tpl_free(&r->reply);
}

static int parse_rule(struct loader *L, const json_t *o, struct rule *r)
{
    static const char *const keys[] = {"name", "when", "reply", NULL};
    const json_t *when, *reply, *name;
    const char *k;
    json_t *v;
    int uses_match = 0, nregex = 0;

    memset(r, 0, sizeof(*r));
    r->regex_cond = -1;
    if (!json_is_object(o))
        return lerr(L, o, NULL, 0, "a rule must be a mapping with 'reply'");
    if (check_keys(L, o, keys, "a rule") < 0)
        return ERR_INVALID;
    name = json_object_get(o, "name");
    if (name && !json_is_string(name))
        return lerr(L, o, "name", 0, "'name' must be a string");
    r->name = xstrdup(name ? json_string_value(name) : "");
    when = json_object_get(o, "when");
    if (when && !json_is_object(when) && !json_is_null(when))
        return lerr(L, o, "when", 0, "'when' must be a mapping of conditions");
    r->conds = xcalloc(json_object_size(when) + 1, sizeof(*r->conds));
    json_object_foreach((json_t *)when, k, v)
    {
        if (parse_cond(L, when, k, v, &r->conds[r->nconds]) < 0) {
            r->nconds++; /* free what was built */
            return ERR_INVALID;
        }
        if (r->conds[r->nconds].has_re) {
            nregex++;
            r->regex_cond = (int)r->nconds;
        }
        r->nconds++;
    }
    reply = json_object_get(o, "reply");
    if (reply == NULL)
        return lerr(L, o, NULL, 0, "a rule needs a 'reply'");
    if (parse_reply(L, reply, &r->reply, &uses_match) < 0)
        return ERR_INVALID;
    if (uses_match && nregex != 1)
        return lerr(L, o, "reply", 1,
                    "{{match.N}} needs exactly one '*_matches' condition in the rule (it has %d)",
                    nregex);
    return 0;
}

void mockscript_free(struct mockscript *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->nrules; i++)
        rule_free(&s->rules[i]);
    free(s->rules);
    reply_tpl_free(&s->fallback);
    regfree(&s->error_re);
    free(s->name);
    free(s->model);
    free(s);
}

struct mockscript *mockscript_parse(const char *text, size_t len, const char *name, struct err *e)
{
    static const char *const keys[] = {"name",  "description", "model", "error_pattern",
                                       "rules", "fallback",    NULL};
    static const struct ydoc_limits yaml_limits = {
        .max_nodes = 200000, .no_aliases = 1, .kind = "a mock-model script"};
    struct loader L = {name ? name : "<script>", NULL, e};
    struct mockscript *s = NULL;
    json_t *root;
    const json_t *v, *rules;
    int uses_match = 0;

    if (len > MOCKSCRIPT_FILE_MAX) {
        err_set(e, ERR_LIMIT, "%s: larger than %zu bytes", L.name, MOCKSCRIPT_FILE_MAX);
        return NULL;
    }
    root = ydoc_parse_json(text, len, L.name, &yaml_limits, &L.marks, e);
    if (root == NULL)
        return NULL;
    s = xcalloc(1, sizeof(*s));
    const char *pattern = DEFAULT_ERROR_PATTERN;
    if (!json_is_object(root)) {
        lerr(&L, root, NULL, 0, "a script is a mapping with 'rules'");
        goto fail_noregex;
    }
    if (check_keys(&L, root, keys, "the script") < 0)
        goto fail_noregex;
    v = json_object_get(root, "error_pattern");
    if (v) {
        if (!json_is_string(v)) {
            lerr(&L, root, "error_pattern", 0, "'error_pattern' must be a string");
            goto fail_noregex;
        }
        pattern = json_string_value(v);
    }
    if (compile_regex(&L, root, "error_pattern", pattern, &s->error_re) < 0)
        goto fail_noregex;
    v = json_object_get(root, "name");
    if (v && !json_is_string(v)) {
        lerr(&L, root, "name", 0, "'name' must be a string");
        goto fail;
    }
    s->name = xstrdup(v ? json_string_value(v) : "");
    v = json_object_get(root, "description");
    if (v && !json_is_string(v)) {
        lerr(&L, root, "description", 0, "'description' must be a string");
        goto fail;
    }
    v = json_object_get(root, "model");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || json_string_length(v) == 0 ||
            json_string_length(v) >= WIRE_MODEL_MAX) {
            lerr(&L, root, "model", 0, "'model' must be a model name");
            goto fail;
        }
        s->model = xstrdup(json_string_value(v));
    }
    rules = json_object_get(root, "rules");
    if (!json_is_array(rules)) {
        lerr(&L, root, rules ? "rules" : NULL, 0, "a script needs a 'rules' list");
        goto fail;
    }
    if (json_array_size(rules) > MOCKSCRIPT_RULES_MAX) {
        lerr(&L, root, "rules", 0, "more than %d rules", MOCKSCRIPT_RULES_MAX);
        goto fail;
    }
    s->rules = xcalloc(json_array_size(rules) + 1, sizeof(*s->rules));
    for (size_t i = 0; i < json_array_size(rules); i++) {
        int rc = parse_rule(&L, json_array_get(rules, i), &s->rules[i]);
        s->nrules++;
        if (rc < 0)
            goto fail;
    }
    v = json_object_get(root, "fallback");
    if (v) {
        int rc = parse_reply(&L, v, &s->fallback, &uses_match);
        s->has_fallback = 1;
        if (rc < 0)
            goto fail;
        if (uses_match) {
            lerr(&L, root, "fallback", 1, "the fallback has no condition for {{match.N}}");
            goto fail;
        }
    }
    json_decref(root);
    ydoc_marks_free(L.marks);
    return s;

fail_noregex:
    /* error_re was never compiled: give mockscript_free something to free */
    regcomp(&s->error_re, "x", REG_EXTENDED);
fail:
    mockscript_free(s);
    json_decref(root);
    ydoc_marks_free(L.marks);
    return NULL;
}

struct mockscript *mockscript_load(const char *path, struct err *e)
{
    struct buf b = BUF_INIT;
    struct mockscript *s = NULL;
    if (fs_read_file(path, MOCKSCRIPT_FILE_MAX, &b, e) == 0)
        s = mockscript_parse(b.data, b.len, path, e);
    buf_release(&b);
    return s;
}

const char *mockscript_name(const struct mockscript *s)
{
    return s->name;
}

const char *mockscript_model(const struct mockscript *s)
{
    return s->model;
}

int64_t mockscript_tokens(size_t bytes)
{
    int64_t t = (int64_t)((bytes + 3) / 4);
    return t > 0 ? t : 1;
}

/* --- the conversation view --- */

static void add_joined(struct buf *b, const char *s, size_t n)
{
    if (b->len >= MOCKSCRIPT_TEXT_MAX)
        return;
    if (b->len > 0)
        buf_addc(b, '\n');
    if (b->len + n > MOCKSCRIPT_TEXT_MAX)
        n = MOCKSCRIPT_TEXT_MAX - b->len;
    buf_add(b, s, n);
}

/* Text of content: a string, or the "text" of each part (any part type), "\n"-joined. */
static void text_of(const json_t *content, struct buf *out)
{
    size_t i;
    const json_t *p;
    if (json_is_string(content)) {
        add_joined(out, json_string_value(content), json_string_length(content));
        return;
    }
    json_array_foreach(content, i, p)
    {
        const json_t *t = json_object_get(p, "text");
        if (json_is_string(t))
            add_joined(out, json_string_value(t), json_string_length(t));
    }
}

static void note_result(struct mockscript_view *v, const struct mockscript *s,
                        const json_t *content, int flagged_error)
{
    buf_reset(&v->last_result);
    text_of(content, &v->last_result);
    add_joined(&v->all_results, v->last_result.data, v->last_result.len);
    v->tool_results++;
    v->last_result_error =
        flagged_error || regexec(&s->error_re, v->last_result.data, 0, NULL, 0) == 0;
}

static void note_user_text(struct mockscript_view *v, const json_t *content)
{
    struct buf t = BUF_INIT;
    text_of(content, &t);
    if (t.len > 0) {
        buf_reset(&v->last_user);
        buf_add(&v->last_user, t.data, t.len);
        add_joined(&v->user_text, t.data, t.len);
    }
    buf_release(&t);
}

static void note_call(struct mockscript_view *v, const json_t *name, const json_t *input)
{
    if (!json_is_string(name))
        return;
    json_decref(v->last_call);
    v->last_call = json_pack("{s:O,s:o}", "name", name, "input",
                             input ? json_incref((json_t *)input) : json_object());
}

/* Parses arguments given as a JSON string; the string itself when not an object. */
static json_t *parse_args(const json_t *args)
{
    if (json_is_string(args)) {
        json_t *j = json_loadb(json_string_value(args), json_string_length(args), 0, NULL);
        if (json_is_object(j))
            return j;
        json_decref(j);
        return json_pack("{s:O}", "input", args);
    }
    return json_is_object(args) ? json_incref((json_t *)args) : json_object();
}

static int has_role(const json_t *m, const char *role)
{
    const char *r = json_string_value(json_object_get(m, "role"));
    return r && strcmp(r, role) == 0;
}

static int is_suffix(const char *s, const char *suffix)
{
    size_t n = s ? strlen(s) : 0, k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void view_anthropic(struct mockscript_view *v, const struct mockscript *s,
                           const json_t *msgs)
{
    size_t i, k;
    const json_t *m, *b;
    json_array_foreach(msgs, i, m)
    {
        const json_t *content = json_object_get(m, "content");
        if (has_role(m, "assistant")) {
            v->turn++;
            json_array_foreach(content, k, b)
            {
                const char *t = json_string_value(json_object_get(b, "type"));
                if (t && strcmp(t, "tool_use") == 0)
                    note_call(v, json_object_get(b, "name"), json_object_get(b, "input"));
            }
        } else if (has_role(m, "user")) {
            if (json_is_string(content)) {
                note_user_text(v, content);
                continue;
            }
            json_t *texts = json_array();
            json_array_foreach(content, k, b)
            {
                const char *t = json_string_value(json_object_get(b, "type"));
                if (t && strcmp(t, "tool_result") == 0)
                    note_result(v, s, json_object_get(b, "content"),
                                json_is_true(json_object_get(b, "is_error")));
                else if (t && strcmp(t, "text") == 0)
                    json_array_append(texts, (json_t *)b);
            }
            if (json_array_size(texts) > 0)
                note_user_text(v, texts);
            json_decref(texts);
        }
    }
}

static void view_chat(struct mockscript_view *v, const struct mockscript *s, const json_t *msgs)
{
    size_t i, k;
    const json_t *m, *tc;
    json_array_foreach(msgs, i, m)
    {
        if (has_role(m, "assistant")) {
            v->turn++;
            json_array_foreach(json_object_get(m, "tool_calls"), k, tc)
            {
                const json_t *fn = json_object_get(tc, "function");
                json_t *args = parse_args(json_object_get(fn, "arguments"));
                note_call(v, json_object_get(fn, "name"), args);
                json_decref(args);
            }
        } else if (has_role(m, "tool")) {
            note_result(v, s, json_object_get(m, "content"), 0);
        } else if (has_role(m, "user")) {
            note_user_text(v, json_object_get(m, "content"));
        }
    }
}

static void view_responses(struct mockscript_view *v, const struct mockscript *s,
                           const json_t *input)
{
    size_t i;
    const json_t *it;
    int in_assistant = 0;

    if (json_is_string(input)) {
        note_user_text(v, input);
        return;
    }
    json_array_foreach(input, i, it)
    {
        const char *type = json_string_value(json_object_get(it, "type"));
        int assistant_side = has_role(it, "assistant") || is_suffix(type, "_call") ||
                             (type && strcmp(type, "reasoning") == 0);
        if (assistant_side && !in_assistant)
            v->turn++;
        in_assistant = assistant_side;
        if (is_suffix(type, "_call")) {
            const json_t *args = json_object_get(it, "arguments");
            if (args == NULL)
                args = json_object_get(it, "input");
            if (args == NULL)
                args = json_object_get(it, "action");
            json_t *a = parse_args(args);
            note_call(v, json_object_get(it, "name"), a);
            json_decref(a);
        } else if (is_suffix(type, "_call_output")) {
            note_result(v, s, json_object_get(it, "output"), 0);
        } else if (has_role(it, "user")) {
            note_user_text(v, json_object_get(it, "content"));
        }
    }
}

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* The last "E-<UPPER>+-<8 hex>" token in s, into out; 1 found. */
static int find_canary(const char *s, size_t n, char *out, size_t size)
{
    int found = 0;
    for (size_t i = 0; i + 12 <= n; i++) {
        if (s[i] != 'E' || s[i + 1] != '-' || (i > 0 && s[i - 1] >= 'A' && s[i - 1] <= 'Z'))
            continue;
        size_t j = i + 2;
        while (j < n && s[j] >= 'A' && s[j] <= 'Z' && j - i < 40)
            j++;
        if (j == i + 2 || j + 9 > n || s[j] != '-')
            continue;
        size_t k;
        for (k = 0; k < 8 && is_hex(s[j + 1 + k]); k++)
            ;
        if (k < 8 || (j + 9 < n && is_hex(s[j + 9])))
            continue;
        snprintf(out, size, "%.*s", (int)(j + 9 - i), s + i);
        found = 1;
    }
    return found;
}

static void collect_tools(struct mockscript_view *v, const json_t *tools)
{
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t)
    {
        const json_t *name = json_object_get(t, "name");
        if (!json_is_string(name))
            name = json_object_get(json_object_get(t, "function"), "name");
        if (!json_is_string(name))
            name = json_object_get(t, "type"); /* e.g. Responses "local_shell", "web_search" */
        if (json_is_string(name))
            json_array_append(v->offered, (json_t *)name);
    }
}

int mockscript_view_init(struct mockscript_view *v, const struct mockscript *s, enum wire_api api,
                         const json_t *req, struct err *e)
{
    memset(v, 0, sizeof(*v));
    v->api = api;
    v->model = "";
    buf_init(&v->last_result, 0);
    buf_init(&v->last_user, 0);
    buf_init(&v->user_text, 0);
    buf_init(&v->all_results, 0);
    v->offered = json_array();
    if (!json_is_object(req))
        return err_set(e, ERR_INVALID, "request is not a JSON object");
    const char *model = json_string_value(json_object_get(req, "model"));
    v->model = model ? model : "";
    collect_tools(v, json_object_get(req, "tools"));
    if (api == WIRE_API_OPENAI_RESPONSES) {
        const json_t *input = json_object_get(req, "input");
        if (!json_is_string(input) && !json_is_array(input))
            return err_set(e, ERR_INVALID, "'input' must be a string or an array");
        view_responses(v, s, input);
    } else {
        const json_t *msgs = json_object_get(req, "messages");
        if (!json_is_array(msgs))
            return err_set(e, ERR_INVALID, "'messages' must be an array");
        if (api == WIRE_API_OPENAI_CHAT)
            view_chat(v, s, msgs);
        else
            view_anthropic(v, s, msgs);
    }
    if (!find_canary(v->last_result.data, v->last_result.len, v->canary, sizeof(v->canary)) &&
        !find_canary(v->all_results.data, v->all_results.len, v->canary, sizeof(v->canary)))
        find_canary(v->user_text.data, v->user_text.len, v->canary, sizeof(v->canary));
    return 0;
}

void mockscript_view_release(struct mockscript_view *v)
{
    buf_release(&v->last_result);
    buf_release(&v->last_user);
    buf_release(&v->user_text);
    buf_release(&v->all_results);
    json_decref(v->offered);
    json_decref(v->last_call);
    v->offered = v->last_call = NULL;
}

/* --- matching and rendering --- */

static int offered(const struct mockscript_view *v, const json_t *names)
{
    size_t i, k;
    const json_t *n, *o;
    json_array_foreach(names, i, n)
    {
        json_array_foreach(v->offered, k, o)
        {
            if (strcmp(json_string_value(n), json_string_value(o)) == 0)
                return 1;
        }
    }
    return 0;
}

static const char *api_short(enum wire_api api)
{
    switch (api) {
    case WIRE_API_OPENAI_CHAT:
        return "chat";
    case WIRE_API_OPENAI_RESPONSES:
        return "responses";
    default:
        return "anthropic";
    }
}

static int cond_holds(const struct cond *c, const struct mockscript_view *v, struct render_ctx *ctx)
{
    const char *subject = NULL;
    size_t i;
    const json_t *n;

    switch (c->kind) {
    case C_FIRST_TURN:
        return (v->turn == 0) == c->b;
    case C_TURN:
        return (long long)v->turn == c->n;
    case C_MIN_TURN:
        return (long long)v->turn >= c->n;
    case C_MAX_TURN:
        return (long long)v->turn <= c->n;
    case C_TOOL_OFFERED:
        return offered(v, c->names);
    case C_TOOL_NOT_OFFERED:
        return !offered(v, c->names);
    case C_API:
        json_array_foreach(c->names, i, n)
        {
            if (strcmp(json_string_value(n), api_short(v->api)) == 0)
                return 1;
        }
        return 0;
    case C_HAS_TOOL_RESULT:
        return (v->tool_results > 0) == c->b;
    case C_LAST_ERROR:
        return (v->tool_results > 0 && v->last_result_error) == c->b;
    case C_LAST_CONTAINS:
        return v->tool_results > 0 && strstr(v->last_result.data, c->s) != NULL;
    case C_ANY_CONTAINS:
        return strstr(v->all_results.data, c->s) != NULL && v->tool_results > 0;
    case C_USER_CONTAINS:
        return strstr(v->last_user.data, c->s) != NULL;
    case C_TEXT_CONTAINS:
        return strstr(v->user_text.data, c->s) != NULL;
    case C_MODEL_CONTAINS:
        return strstr(v->model, c->s) != NULL;
    case C_LAST_MATCHES:
        if (v->tool_results == 0)
            return 0;
        subject = v->last_result.data;
        break;
    case C_ANY_MATCHES:
        if (v->tool_results == 0)
            return 0;
        subject = v->all_results.data;
        break;
    case C_USER_MATCHES:
        subject = v->last_user.data;
        break;
    case C_TEXT_MATCHES:
        subject = v->user_text.data;
        break;
    }
    if (regexec(&c->re, subject, 10, ctx->groups, 0) != 0)
        return 0;
    ctx->subject = subject;
    return 1;
}

void mockscript_reply_init(struct mockscript_reply *r)
{
    memset(r, 0, sizeof(*r));
    buf_init(&r->text, 0);
    buf_init(&r->error_message, 0);
    r->tool_calls = json_array();
    r->rule = -1;
    r->rule_name = "";
    r->usage_input = r->usage_cache_write = r->usage_cache_read = r->usage_output = -1;
}

void mockscript_reply_release(struct mockscript_reply *r)
{
    buf_release(&r->text);
    buf_release(&r->error_message);
    json_decref(r->tool_calls);
    r->tool_calls = NULL;
}

static void render_reply(const struct reply_tpl *t, const struct render_ctx *ctx,
                         struct mockscript_reply *r)
{
    size_t i;
    const json_t *call;

    if (t->text)
        render(t->text, ctx, &r->text);
    json_array_foreach(t->tool_calls, i, call)
    {
        json_t *c = json_deep_copy(call);
        render_json(json_object_get(c, "input"), ctx);
        json_array_append_new(r->tool_calls, c);
    }
    if (t->repeat_last && ctx->v->last_call)
        json_array_append_new(r->tool_calls, json_deep_copy(ctx->v->last_call));
    if (t->error_status) {
        r->error_status = t->error_status;
        render(t->error_message, ctx, &r->error_message);
    }
    r->has_usage = t->has_usage;
    r->usage_input = t->usage[0];
    r->usage_cache_write = t->usage[1];
    r->usage_cache_read = t->usage[2];
    r->usage_output = t->usage[3];
}

int mockscript_reply(const struct mockscript *s, const struct mockscript_view *v,
                     struct mockscript_reply *r)
{
    mockscript_reply_release(r);
    mockscript_reply_init(r);
    for (size_t i = 0; i < s->nrules; i++) {
        const struct rule *rule = &s->rules[i];
        struct render_ctx ctx;
        size_t k;
        memset(&ctx, 0, sizeof(ctx));
        ctx.v = v;
        for (k = 0; k < rule->nconds; k++) {
            struct render_ctx tmp = ctx;
            if (!cond_holds(&rule->conds[k], v, &tmp))
                break;
            if ((int)k == rule->regex_cond)
                ctx = tmp;
        }
        if (k < rule->nconds)
            continue;
        r->rule = (int)i;
        r->rule_name = rule->name;
        render_reply(&rule->reply, &ctx, r);
        return 0;
    }
    struct render_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.v = v;
    if (s->has_fallback)
        render_reply(&s->fallback, &ctx, r);
    else
        buf_addf(&r->text, "mock-model: no rule matched (turn %zu)", v->turn);
    return 0;
}
