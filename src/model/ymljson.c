/*
 * ymljson: YAML to jansson through libyaml's event parser (not yaml_parser_load, which
 * expands aliases into shared nodes). A stack of open containers; each scalar, mapping or
 * sequence start becomes a value attached to the top container (as the pending key's value,
 * or appended); a mapping's first scalar in each pair is its key. Every value's position is
 * recorded in a flat table keyed by (parent container, key or index); lookups are linear,
 * which is fine because they only happen when reporting an error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "model/ymljson.h"
#include "util/buf.h"
#include "util/num.h"
#include "util/banned.h"

struct mark {
    const json_t *parent; /* NULL for the root */
    const json_t *value;  /* the node itself (borrowed; for containers' own positions) */
    char *key;            /* object member, or NULL */
    size_t index;         /* array index when key is NULL */
    int line, col;
    int key_line, key_col; /* position of the key of an object member */
};

struct ymljson_marks {
    struct mark *v;
    size_t n, alloc;
};

struct frame {
    json_t *node;
    char *key; /* mapping: the pending key, NULL when the next scalar is a key */
    int key_line, key_col;
};

void ymljson_marks_free(struct ymljson_marks *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].key);
    free(m->v);
    free(m);
}

static void mark_add(struct ymljson_marks *m, const json_t *parent, const json_t *value,
                     const char *key, size_t index, yaml_mark_t pos, int key_line, int key_col)
{
    if (m == NULL)
        return;
    if (m->n == m->alloc) {
        m->alloc = m->alloc ? m->alloc * 2 : 64;
        m->v = xrealloc(m->v, m->alloc * sizeof(*m->v));
    }
    m->v[m->n].parent = parent;
    m->v[m->n].value = value;
    m->v[m->n].key = key ? xstrdup(key) : NULL;
    m->v[m->n].index = index;
    m->v[m->n].line = (int)pos.line + 1;
    m->v[m->n].col = (int)pos.column + 1;
    m->v[m->n].key_line = key_line + 1;
    m->v[m->n].key_col = key_col + 1;
    m->n++;
}

int ymljson_mark(const struct ymljson_marks *m, const json_t *container, const char *key,
                 size_t index, int *line, int *col)
{
    int self = key == NULL && index == (size_t)-1;

    *line = *col = 0;
    if (m == NULL || container == NULL)
        return 0;
    for (size_t i = 0; i < m->n; i++) {
        const struct mark *k = &m->v[i];
        int hit;
        if (self)
            hit = k->value == container;
        else if (k->parent != container)
            hit = 0;
        else if (key)
            hit = k->key && strcmp(k->key, key) == 0;
        else
            hit = k->key == NULL && k->index == index;
        if (hit) {
            *line = k->line;
            *col = k->col;
            return 1;
        }
    }
    return 0;
}

int ymljson_key_mark(const struct ymljson_marks *m, const json_t *object, const char *key,
                     int *line, int *col)
{
    *line = *col = 0;
    if (m == NULL || object == NULL || key == NULL)
        return 0;
    for (size_t i = 0; i < m->n; i++) {
        const struct mark *k = &m->v[i];
        if (k->parent == object && k->key && strcmp(k->key, key) == 0) {
            *line = k->key_line;
            *col = k->key_col;
            return 1;
        }
    }
    return 0;
}

static int is_one_of(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

/* Types a plain scalar by the core schema. */
static json_t *plain_scalar(const char *s, size_t len)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    long long ll;
    double d;

    if (strlen(s) != len)
        return json_stringn(s, len); /* embedded NUL: keep as a string */
    if (is_one_of(s, nulls))
        return json_null();
    if (is_one_of(s, trues))
        return json_true();
    if (is_one_of(s, falses))
        return json_false();
    if ((s[0] >= '0' && s[0] <= '9') ||
        ((s[0] == '-' || s[0] == '+') && s[1] >= '0' && s[1] <= '9')) {
        if (num_parse_ll(s, -0x7fffffffffffffffLL, 0x7fffffffffffffffLL, &ll) == 0)
            return json_integer(ll);
        uint64_t u;
        if (strncmp(s, "0x", 2) == 0 && num_parse_u64(s, &u) == 0 && u <= 0x7fffffffffffffffULL)
            return json_integer((json_int_t)u);
        if (strpbrk(s, "0123456789") && !strpbrk(s, "xXoO_:") &&
            num_parse_double(s, -1e308, 1e308, &d) == 0)
            return json_real(d);
    } else if (s[0] == '.' && s[1] >= '0' && s[1] <= '9' &&
               num_parse_double(s, -1e308, 1e308, &d) == 0) {
        return json_real(d);
    }
    return json_stringn(s, len);
}

json_t *ymljson_parse(const char *text, size_t len, const char *name,
                      struct ymljson_marks **marks_out, struct err *e)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    struct frame stack[YMLJSON_DEPTH_MAX + 1];
    size_t depth = 0, nodes = 0;
    int docs = 0, done = 0;
    json_t *root = NULL;
    struct ymljson_marks *marks = xcalloc(1, sizeof(*marks));

    if (name == NULL)
        name = "<yaml>";
    if (marks_out)
        *marks_out = NULL;
    memset(stack, 0, sizeof(stack));
    if (!yaml_parser_initialize(&parser)) {
        free(marks);
        err_set(e, ERR_NOMEM, "%s: cannot initialise the YAML parser", name);
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

    while (!done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            err_set(e, ERR_PARSE, "%s:%zu:%zu: %s", name, parser.problem_mark.line + 1,
                    parser.problem_mark.column + 1,
                    parser.problem ? parser.problem : "invalid YAML");
            goto fail;
        }
        json_t *value = NULL;
        int opens = 0;
        yaml_mark_t pos = ev.start_mark;

        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1) {
                err_set(e, ERR_PARSE, "%s:%zu:%zu: more than one YAML document", name, pos.line + 1,
                        pos.column + 1);
                yaml_event_delete(&ev);
                goto fail;
            }
            break;
        case YAML_ALIAS_EVENT:
            err_set(e, ERR_UNSUPPORTED, "%s:%zu:%zu: YAML aliases are not supported", name,
                    pos.line + 1, pos.column + 1);
            yaml_event_delete(&ev);
            goto fail;
        case YAML_SCALAR_EVENT: {
            const char *s = (const char *)ev.data.scalar.value;
            size_t n = ev.data.scalar.length;
            const char *tag = (const char *)ev.data.scalar.tag;
            if (depth > 0 && json_is_object(stack[depth - 1].node) &&
                stack[depth - 1].key == NULL) {
                /* a mapping key */
                if (memchr(s, '\0', n)) {
                    err_set(e, ERR_PARSE, "%s:%zu:%zu: NUL in a mapping key", name, pos.line + 1,
                            pos.column + 1);
                    yaml_event_delete(&ev);
                    goto fail;
                }
                if (json_object_get(stack[depth - 1].node, s)) {
                    err_set(e, ERR_PARSE, "%s:%zu:%zu: duplicate key '%s'", name, pos.line + 1,
                            pos.column + 1, s);
                    yaml_event_delete(&ev);
                    goto fail;
                }
                stack[depth - 1].key = xstrndup(s, n);
                stack[depth - 1].key_line = (int)pos.line;
                stack[depth - 1].key_col = (int)pos.column;
                break;
            }
            if (ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
                (tag && strcmp(tag, YAML_STR_TAG) == 0))
                value = json_stringn(s, n);
            else
                value = plain_scalar(s, n);
            if (value == NULL) {
                err_set(e, ERR_PARSE, "%s:%zu:%zu: scalar is not valid UTF-8", name, pos.line + 1,
                        pos.column + 1);
                yaml_event_delete(&ev);
                goto fail;
            }
            break;
        }
        case YAML_SEQUENCE_START_EVENT:
            value = json_array();
            opens = 1;
            break;
        case YAML_MAPPING_START_EVENT:
            value = json_object();
            opens = 1;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0)
                depth--;
            break;
        default:
            break;
        }
        if (value == NULL) {
            yaml_event_delete(&ev);
            continue;
        }
        if (++nodes > YMLJSON_NODES_MAX) {
            err_set(e, ERR_LIMIT, "%s:%zu:%zu: more than %d YAML nodes", name, pos.line + 1,
                    pos.column + 1, YMLJSON_NODES_MAX);
            json_decref(value);
            yaml_event_delete(&ev);
            goto fail;
        }
        if (depth == 0) {
            if (root == NULL) {
                root = value;
                mark_add(marks, NULL, value, NULL, 0, pos, (int)pos.line, (int)pos.column);
            } else {
                json_decref(value); /* cannot happen with one document */
            }
        } else {
            struct frame *top = &stack[depth - 1];
            if (json_is_object(top->node)) {
                if (top->key == NULL) {
                    err_set(e, ERR_PARSE, "%s:%zu:%zu: a mapping key must be a scalar", name,
                            pos.line + 1, pos.column + 1);
                    json_decref(value);
                    yaml_event_delete(&ev);
                    goto fail;
                }
                json_object_set_new(top->node, top->key, value);
                mark_add(marks, top->node, value, top->key, 0, pos, top->key_line, top->key_col);
                free(top->key);
                top->key = NULL;
            } else {
                mark_add(marks, top->node, value, NULL, json_array_size(top->node), pos,
                         (int)pos.line, (int)pos.column);
                json_array_append_new(top->node, value);
            }
        }
        if (opens) {
            if (depth >= YMLJSON_DEPTH_MAX) {
                err_set(e, ERR_LIMIT, "%s:%zu:%zu: nesting deeper than %d", name, pos.line + 1,
                        pos.column + 1, YMLJSON_DEPTH_MAX);
                yaml_event_delete(&ev);
                goto fail;
            }
            stack[depth].node = value; /* borrowed: owned by its parent or root */
            stack[depth].key = NULL;
            depth++;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    if (root == NULL)
        root = json_null();
    if (marks_out)
        *marks_out = marks;
    else
        ymljson_marks_free(marks);
    return root;

fail:
    for (size_t i = 0; i <= YMLJSON_DEPTH_MAX; i++)
        free(stack[i].key);
    yaml_parser_delete(&parser);
    json_decref(root);
    ymljson_marks_free(marks);
    return NULL;
}
