/*
 * jschema: see jschema.h. jschema_new walks the schema once into a tree of struct node (one per
 * schema object: the type bits, bounds, enum, compiled pattern, properties and items);
 * jschema_check walks a value down the same tree, building the path of the first problem only
 * when there is one.
 */
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/err.h"
#include "util/jschema.h"
#include "util/regex_safe.h"
#include "util/banned.h"

enum {
    T_NULL = 1 << 0,
    T_BOOL = 1 << 1,
    T_INT = 1 << 2,
    T_NUM = 1 << 3,
    T_STR = 1 << 4,
    T_ARR = 1 << 5,
    T_OBJ = 1 << 6,
    T_ANY = 0x7f
};

static const struct {
    const char *name;
    unsigned bit;
} type_names[] = {{"null", T_NULL},  {"boolean", T_BOOL}, {"integer", T_INT}, {"number", T_NUM},
                  {"string", T_STR}, {"array", T_ARR},    {"object", T_OBJ}};

struct prop {
    const char *name; /* borrowed from the schema copy */
    struct node *schema;
    int required;
};

struct node {
    unsigned types;
    int has_min, has_max;
    double min, max;
    long min_len, max_len; /* -1: none */
    json_t *enumv;         /* borrowed from the schema copy, or NULL */
    regex_t re;
    int has_re;
    struct prop *props;
    size_t nprops;
    const char **req_unknown; /* required names with no properties entry */
    size_t nreq_unknown;
    int no_additional;
    struct node *items;
};

struct jschema {
    json_t *copy;
    struct node *root;
};

struct compile {
    struct jschema_where *w;
    char *msg;
    size_t n;
    size_t nodes;
    int failed;
};

static void node_free(struct node *nd)
{
    if (nd == NULL)
        return;
    if (nd->has_re)
        regfree(&nd->re);
    for (size_t i = 0; i < nd->nprops; i++)
        node_free(nd->props[i].schema);
    free(nd->props);
    free(nd->req_unknown);
    node_free(nd->items);
    free(nd);
}

static void refuse(struct compile *c, const char *fmt, const char *arg)
{
    if (c->failed)
        return;
    c->failed = 1;
    snprintf(c->msg, c->n, fmt, arg);
}

static void push(struct compile *c, const char *step)
{
    if (c->w && c->w->nsteps < sizeof(c->w->steps) / sizeof(c->w->steps[0]))
        c->w->steps[c->w->nsteps++] = step;
}

static void pop(struct compile *c)
{
    if (c->w && !c->failed && c->w->nsteps > 0)
        c->w->nsteps--;
}

static int is_annotation(const char *k)
{
    static const char *const ann[] = {"description", "title",    "default", "examples",
                                      "$schema",     "$comment", "format",  NULL};
    for (const char *const *a = ann; *a; a++)
        if (strcmp(*a, k) == 0)
            return 1;
    return 0;
}

static unsigned type_bit(const json_t *v)
{
    if (!json_is_string(v))
        return 0;
    for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
        if (strcmp(type_names[i].name, json_string_value(v)) == 0)
            return type_names[i].bit;
    return 0;
}

static long nonneg_int(struct compile *c, const char *k, const json_t *v)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 100000000) {
        refuse(c, "'%s' must be an integer from 0 to 100000000", k);
        return 0;
    }
    return (long)json_integer_value(v);
}

static struct node *compile(struct compile *c, const json_t *s, int depth);

static void compile_key(struct compile *c, struct node *nd, const char *k, const json_t *v,
                        int depth)
{
    if (is_annotation(k))
        return;
    if (strcmp(k, "type") == 0) {
        nd->types = 0;
        if (json_is_array(v) && json_array_size(v) > 0) {
            for (size_t i = 0; i < json_array_size(v); i++) {
                unsigned b = type_bit(json_array_get(v, i));
                if (b == 0)
                    refuse(c, "'%s': expected a type name or a list of them", k);
                nd->types |= b;
            }
        } else if ((nd->types = type_bit(v)) == 0) {
            refuse(
                c,
                "'%s': expected null, boolean, integer, number, string, array or object (or a list of them)",
                k);
        }
        if (nd->types & T_NUM)
            nd->types |= T_INT;
    } else if (strcmp(k, "minimum") == 0 || strcmp(k, "maximum") == 0) {
        if (!json_is_number(v)) {
            refuse(c, "'%s' must be a number", k);
            return;
        }
        if (k[1] == 'i') {
            nd->has_min = 1;
            nd->min = json_number_value(v);
        } else {
            nd->has_max = 1;
            nd->max = json_number_value(v);
        }
    } else if (strcmp(k, "minLength") == 0) {
        nd->min_len = nonneg_int(c, k, v);
    } else if (strcmp(k, "maxLength") == 0) {
        nd->max_len = nonneg_int(c, k, v);
    } else if (strcmp(k, "enum") == 0) {
        if (!json_is_array(v) || json_array_size(v) == 0) {
            refuse(c, "'%s' must be a non-empty list", k);
        } else if (json_array_size(v) > JSCHEMA_ENUM_MAX) {
            char lim[96];
            snprintf(lim, sizeof(lim), "'%%s' has more than %d values", JSCHEMA_ENUM_MAX);
            refuse(c, lim, k);
        } else {
            nd->enumv = (json_t *)v;
        }
    } else if (strcmp(k, "pattern") == 0) {
        char why[160];
        if (!json_is_string(v)) {
            refuse(c, "'%s' must be a string", k);
            return;
        }
        if (regex_check(json_string_value(v), why, sizeof(why)) < 0) {
            char m[256];
            snprintf(m, sizeof(m), "'pattern': regular expression refused: %s", why);
            refuse(c, "%s", m);
            return;
        }
        if (regcomp(&nd->re, json_string_value(v), REG_EXTENDED | REG_NOSUB) != 0) {
            refuse(c, "'%s': not a valid POSIX extended regular expression", k);
            return;
        }
        nd->has_re = 1;
    } else if (strcmp(k, "additionalProperties") == 0) {
        if (!json_is_boolean(v))
            refuse(c, "'%s': only true or false is supported", k);
        else
            nd->no_additional = json_is_false(v);
    } else if (strcmp(k, "items") == 0) {
        nd->items = compile(c, v, depth + 1);
    } else if (strcmp(k, "properties") == 0) {
        const char *pk;
        json_t *pv;
        if (!json_is_object(v)) {
            refuse(c, "'%s' must be a mapping of names to schemas", k);
            return;
        }
        if (json_object_size(v) > JSCHEMA_PROPS_MAX) {
            char lim[96];
            snprintf(lim, sizeof(lim), "'%%s' has more than %d entries", JSCHEMA_PROPS_MAX);
            refuse(c, lim, k);
            return;
        }
        nd->props = xcalloc(json_object_size(v) + 1, sizeof(*nd->props));
        json_object_foreach((json_t *)v, pk, pv)
        {
            push(c, pk);
            struct node *sub = compile(c, pv, depth + 1);
            pop(c);
            if (sub == NULL)
                return;
            nd->props[nd->nprops].name = pk;
            nd->props[nd->nprops++].schema = sub;
        }
    } else if (strcmp(k, "required") == 0) {
        if (!json_is_array(v)) {
            refuse(c, "'%s' must be a list of names", k);
            return;
        }
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!json_is_string(json_array_get(v, i))) {
                refuse(c, "'%s' must be a list of names", k);
                return;
            }
    } else {
        refuse(c, "unsupported keyword '%s' (docs/world.md lists the supported subset)", k);
    }
}

static struct node *compile(struct compile *c, const json_t *s, int depth)
{
    struct node *nd;
    const char *k;
    json_t *v, *req;

    if (c->failed)
        return NULL;
    if (!json_is_object(s)) {
        refuse(c, "%s", "a schema must be a mapping");
        return NULL;
    }
    if (depth >= JSCHEMA_DEPTH_MAX) {
        char lim[96];
        snprintf(lim, sizeof(lim), "schemas nest more than %d levels%%s", JSCHEMA_DEPTH_MAX);
        refuse(c, lim, "");
        return NULL;
    }
    if (++c->nodes > JSCHEMA_NODES_MAX) {
        char lim[96];
        snprintf(lim, sizeof(lim), "more than %d schemas in one%%s", JSCHEMA_NODES_MAX);
        refuse(c, lim, "");
        return NULL;
    }
    nd = xcalloc(1, sizeof(*nd));
    nd->types = T_ANY;
    nd->min_len = nd->max_len = -1;
    json_object_foreach((json_t *)s, k, v)
    {
        push(c, k);
        compile_key(c, nd, k, v, depth);
        if (c->failed) {
            node_free(nd);
            return NULL;
        }
        pop(c);
    }
    req = json_object_get(s, "required");
    for (size_t i = 0; json_is_array(req) && i < json_array_size(req); i++) {
        const char *name = json_string_value(json_array_get(req, i));
        size_t j;
        for (j = 0; j < nd->nprops; j++)
            if (strcmp(nd->props[j].name, name) == 0)
                break;
        if (j < nd->nprops) {
            nd->props[j].required = 1;
        } else {
            nd->req_unknown =
                xrealloc(nd->req_unknown, (nd->nreq_unknown + 1) * sizeof(*nd->req_unknown));
            nd->req_unknown[nd->nreq_unknown++] = name;
        }
    }
    return nd;
}

struct jschema *jschema_new(const json_t *schema, struct jschema_where *where, char *msg, size_t n)
{
    struct compile c = {where, msg, n, 0, 0};
    struct jschema *s;
    json_t *copy;

    if (where)
        where->nsteps = 0;
    if (n)
        msg[0] = '\0';
    copy = json_deep_copy(schema);
    if (copy == NULL) {
        snprintf(msg, n, "a schema must be a mapping");
        return NULL;
    }
    if (where) /* the steps point into the caller's schema: compile that, keep the copy */
        c.w = where;
    struct node *root = compile(&c, schema, 0);
    if (root == NULL) {
        json_decref(copy);
        return NULL;
    }
    /* recompile over the copy so that every borrowed name lives as long as s */
    node_free(root);
    c.w = NULL;
    c.nodes = 0;
    root = compile(&c, copy, 0);
    s = xcalloc(1, sizeof(*s));
    s->copy = copy;
    s->root = root;
    return s;
}

void jschema_free(struct jschema *s)
{
    if (s == NULL)
        return;
    node_free(s->root);
    json_decref(s->copy);
    free(s);
}

/* ---- checking ---- */

struct path {
    const char *steps[JSCHEMA_DEPTH_MAX + 1];
    size_t idx[JSCHEMA_DEPTH_MAX + 1]; /* for array steps (steps[i] NULL) */
    size_t n;
};

static const char *found_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "a list";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

static unsigned bit_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return T_OBJ;
    case JSON_ARRAY:
        return T_ARR;
    case JSON_STRING:
        return T_STR;
    case JSON_INTEGER:
        return T_INT;
    case JSON_REAL: {
        double d = json_real_value(v);
        return d == floor(d) && fabs(d) < 9007199254740992.0 ? T_INT | T_NUM : T_NUM;
    }
    case JSON_TRUE:
    case JSON_FALSE:
        return T_BOOL;
    default:
        return T_NULL;
    }
}

static void say(const struct path *p, char *msg, size_t n, const char *fmt, const char *a,
                const char *b)
{
    struct buf t = BUF_INIT;
    buf_addc(&t, '$');
    for (size_t i = 0; i < p->n; i++) {
        if (p->steps[i])
            buf_addf(&t, ".%.64s", p->steps[i]);
        else
            buf_addf(&t, "[%zu]", p->idx[i]);
    }
    buf_adds(&t, ": ");
    buf_addf(&t, fmt, a, b);
    snprintf(msg, n, "%s", t.data);
    buf_release(&t);
}

static size_t code_points(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

static int check(const struct node *nd, const json_t *v, struct path *p, char *msg, size_t n)
{
    unsigned bit = bit_of(v);
    char num[64];

    if (p->n >= JSCHEMA_DEPTH_MAX) {
        say(p, msg, n, "nested too deeply%s%s", "", "");
        return ERR_INVALID;
    }
    if (!(nd->types & bit)) {
        char want[160] = "";
        for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
            if ((nd->types & type_names[i].bit) &&
                !(type_names[i].bit == T_INT && (nd->types & T_NUM)))
                snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s",
                         want[0] ? " or " : "", type_names[i].name);
        say(p, msg, n, "expected %s, found %s", want, found_name(v));
        return ERR_INVALID;
    }
    if (nd->enumv) {
        size_t i;
        for (i = 0; i < json_array_size(nd->enumv); i++)
            if (json_equal(json_array_get(nd->enumv, i), (json_t *)v))
                break;
        if (i == json_array_size(nd->enumv)) {
            say(p, msg, n, "not one of the allowed values%s%s", "", "");
            return ERR_INVALID;
        }
    }
    if (bit & (T_INT | T_NUM)) {
        double d = json_number_value(v);
        if (nd->has_min && d < nd->min) {
            snprintf(num, sizeof(num), "%.15g", nd->min);
            say(p, msg, n, "below the minimum %s%s", num, "");
            return ERR_INVALID;
        }
        if (nd->has_max && d > nd->max) {
            snprintf(num, sizeof(num), "%.15g", nd->max);
            say(p, msg, n, "above the maximum %s%s", num, "");
            return ERR_INVALID;
        }
    }
    if (bit == T_STR) {
        size_t cp = code_points(json_string_value(v), json_string_length(v));
        if (nd->min_len >= 0 && cp < (size_t)nd->min_len) {
            snprintf(num, sizeof(num), "%ld", nd->min_len);
            say(p, msg, n, "shorter than %s characters%s", num, "");
            return ERR_INVALID;
        }
        if (nd->max_len >= 0 && cp > (size_t)nd->max_len) {
            snprintf(num, sizeof(num), "%ld", nd->max_len);
            say(p, msg, n, "longer than %s characters%s", num, "");
            return ERR_INVALID;
        }
        if (nd->has_re && (strlen(json_string_value(v)) != json_string_length(v) ||
                           regexec(&nd->re, json_string_value(v), 0, NULL, 0) != 0)) {
            say(p, msg, n, "does not match the pattern%s%s", "", "");
            return ERR_INVALID;
        }
    }
    if (bit == T_ARR && nd->items) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            p->steps[p->n] = NULL;
            p->idx[p->n++] = i;
            int rc = check(nd->items, json_array_get(v, i), p, msg, n);
            p->n--;
            if (rc < 0)
                return rc;
        }
    }
    if (bit == T_OBJ) {
        const char *k;
        json_t *m;
        for (size_t i = 0; i < nd->nreq_unknown; i++)
            if (json_object_get(v, nd->req_unknown[i]) == NULL) {
                say(p, msg, n, "'%.64s' is required%s", nd->req_unknown[i], "");
                return ERR_INVALID;
            }
        for (size_t i = 0; i < nd->nprops; i++) {
            json_t *pv = json_object_get(v, nd->props[i].name);
            if (pv == NULL) {
                if (nd->props[i].required) {
                    say(p, msg, n, "'%.64s' is required%s", nd->props[i].name, "");
                    return ERR_INVALID;
                }
                continue;
            }
            p->steps[p->n++] = nd->props[i].name;
            int rc = check(nd->props[i].schema, pv, p, msg, n);
            p->n--;
            if (rc < 0)
                return rc;
        }
        if (nd->no_additional) {
            json_object_foreach((json_t *)v, k, m)
            {
                size_t i;
                for (i = 0; i < nd->nprops; i++)
                    if (strcmp(nd->props[i].name, k) == 0)
                        break;
                if (i == nd->nprops) {
                    say(p, msg, n, "'%.64s' is not allowed (additionalProperties is false)%s", k,
                        "");
                    return ERR_INVALID;
                }
            }
        }
    }
    return 0;
}

int jschema_check(const struct jschema *s, const json_t *v, char *msg, size_t n)
{
    struct path p;
    p.n = 0;
    if (n)
        msg[0] = '\0';
    return check(s->root, v, &p, msg, n);
}
