/*
 * yaml: builds a struct ynode tree from libyaml events, and a JSON view of it (see yaml.h).
 *
 * How: one pass over yaml_parser_parse() events with an explicit stack of open collections
 * (at most lim->max_depth deep, checked at each start event, so deep nesting costs nothing
 * before it is refused). A collection is attached to its parent when it ends, after its
 * duplicate keys are found (sort of key indices) and its subtree size is known. Anchors are
 * registered when their node is complete; an alias copies the anchored subtree after checking
 * that the copy keeps the total under lim->max_nodes, and that the text it copies keeps the
 * bytes added by all aliases under lim->max_alias_bytes (one long string aliased thousands of
 * times is few nodes but many bytes). Nodes dropped as duplicate keys are kept
 * in a graveyard until the parse ends, because an anchor may still point at them.
 *
 * libyaml marks are 0-based; ours are 1-based. Reader errors (bad UTF-8, control characters)
 * carry a byte offset instead of a mark: the line and column are computed from the text.
 *
 * The JSON view converts the tree and records a (JSON value, node) pair for every value; the
 * marks object keeps the tree, so a position is the node's own mark, or its key's. Lookups
 * are linear: they only happen when a loader reports an error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "util/yaml.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/num.h"
#include "util/text.h"
#include "util/banned.h"

struct frame {
    struct ynode *node;
    char *anchor;              /* registered when the collection ends */
    size_t cap;                /* allocated items (and keys) */
    struct ynode *pending_key; /* MAP: a key waiting for its value */
};

struct anchor {
    char *name;
    const struct ynode *node;
};

struct builder {
    struct ydoc_limits lim; /* the caller's, with defaults filled in */
    size_t nodes;
    size_t alias_bytes; /* text bytes copied by aliases so far */
    int depth;
    struct frame *stack; /* lim->max_depth entries */
    struct anchor *anchors;
    size_t nanchors;
    struct ynode **grave;
    size_t ngrave, gcap;
    struct ydoc *doc;
    struct ydoc_problem *fatal;
    size_t pcap;
};

static void ynode_free(struct ynode *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->n; i++) {
        ynode_free(n->items[i]);
        if (n->keys)
            ynode_free(n->keys[i]);
    }
    free(n->items);
    free(n->keys);
    free(n->str);
    free(n);
}

static int fail(struct builder *b, int code, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(struct builder *b, int code, int line, int col, const char *fmt, ...)
{
    va_list ap;
    b->fatal->line = line;
    b->fatal->col = col;
    va_start(ap, fmt);
    vsnprintf(b->fatal->msg, sizeof(b->fatal->msg), fmt, ap);
    va_end(ap);
    return code;
}

static void problem(struct builder *b, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void problem(struct builder *b, int line, int col, const char *fmt, ...)
{
    va_list ap;
    struct ydoc *d = b->doc;
    if (d->nproblems == b->pcap) {
        b->pcap = b->pcap ? b->pcap * 2 : 8;
        d->problems = xrealloc(d->problems, b->pcap * sizeof(*d->problems));
    }
    struct ydoc_problem *p = &d->problems[d->nproblems++];
    p->line = line;
    p->col = col;
    va_start(ap, fmt);
    vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
    va_end(ap);
}

static struct ynode *new_node(struct builder *b, enum ynode_type t, const yaml_mark_t *m)
{
    struct ynode *n;
    if (b->nodes >= b->lim.max_nodes) {
        fail(b, ERR_LIMIT, (int)m->line + 1, (int)m->column + 1,
             "more than %zu YAML nodes: too many for %s", b->lim.max_nodes, b->lim.kind);
        return NULL;
    }
    b->nodes++;
    n = xcalloc(1, sizeof(*n));
    n->type = t;
    n->line = (int)m->line + 1;
    n->col = (int)m->column + 1;
    n->size = 1;
    return n;
}

/* YAML 1.2 core schema for a plain scalar. */
static int is_null_text(const char *s)
{
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static int bool_text(const char *s, int *v)
{
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        return *v = 1, 1;
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        return *v = 0, 1;
    return 0;
}

static int all_of(const char *s, const char *set)
{
    if (!*s)
        return 0;
    return strspn(s, set) == strlen(s);
}

/* 1 when s is an integer in the core schema; 2 when it is one but out of range. */
static int int_text(const char *s, long long *v)
{
    const char *p = s;
    unsigned long long u = 0;

    if (!strncmp(s, "0x", 2) && all_of(s + 2, "0123456789abcdefABCDEF")) {
        for (p = s + 2; *p; p++) {
            int d = (*p <= '9') ? *p - '0' : (*p | 32) - 'a' + 10;
            if (u > (0x7fffffffffffffffULL - (unsigned)d) / 16)
                return 2;
            u = u * 16 + (unsigned)d;
        }
        *v = (long long)u;
        return 1;
    }
    if (!strncmp(s, "0o", 2) && all_of(s + 2, "01234567")) {
        for (p = s + 2; *p; p++) {
            if (u > (0x7fffffffffffffffULL - (unsigned)(*p - '0')) / 8)
                return 2;
            u = u * 8 + (unsigned)(*p - '0');
        }
        *v = (long long)u;
        return 1;
    }
    if (*p == '-' || *p == '+')
        p++;
    if (!all_of(p, "0123456789"))
        return 0;
    /* num_parse_ll takes no '+', which YAML allows */
    if (num_parse_ll(*s == '+' ? s + 1 : s, -0x7fffffffffffffffLL - 1, 0x7fffffffffffffffLL, v) < 0)
        return 2;
    return 1;
}

static int float_text(const char *s, double *v)
{
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF")) {
        *v = (*s == '-') ? -INFINITY : INFINITY;
        return 1;
    }
    if (p == s && (!strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN"))) {
        *v = NAN;
        return 1;
    }
    /* [-+]? ( \.[0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
    size_t digits = 0;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++, digits++;
    }
    if (digits == 0)
        return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '-' || *p == '+')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return 0;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p)
        return 0;
    /* strtod accepts this grammar (num_parse_double would refuse underflow); an overflow gives
     * inf, which the JSON conversion refuses. */
    *v = strtod(s, NULL);
    return 1;
}

/* Types the string node n by its text: as the core schema does (null, boolean, integer, float,
 * the first that fits) when tag is NULL, else only as that tag's type. 1 typed, 0 the text does
 * not fit (n stays a string), 2 an integer out of range. */
static int type_scalar(struct ynode *n, const char *tag)
{
    long long ll;
    int r;

    if ((!tag || !strcmp(tag, YAML_NULL_TAG)) && is_null_text(n->str)) {
        n->type = YNODE_NULL;
        return 1;
    }
    if ((!tag || !strcmp(tag, YAML_BOOL_TAG)) && bool_text(n->str, &n->b)) {
        n->type = YNODE_BOOL;
        return 1;
    }
    if ((!tag || !strcmp(tag, YAML_INT_TAG)) && (r = int_text(n->str, &ll)) != 0) {
        if (r == 2)
            return 2;
        n->type = YNODE_INT;
        n->i = ll;
        n->d = (double)ll;
        return 1;
    }
    if ((!tag || !strcmp(tag, YAML_FLOAT_TAG)) && float_text(n->str, &n->d)) {
        n->type = YNODE_REAL;
        return 1;
    }
    return 0;
}

static int make_scalar(struct builder *b, const yaml_event_t *ev, struct ynode **out)
{
    const char *val = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    char shown_buf[TEXT_SHOWN_SIZE];
    struct ynode *n;
    int r;

    if (memchr(val, '\0', len))
        return fail(b, ERR_PARSE, line, col, "a string holds a NUL character");
    n = new_node(b, YNODE_STR, &ev->start_mark);
    if (n == NULL)
        return ERR_LIMIT;
    n->str = xstrndup(val, len);
    n->len = len;
    *out = n;

    if (tag && strcmp(tag, "!") != 0) {
        if (!strcmp(tag, YAML_STR_TAG))
            return 0;
        if ((r = type_scalar(n, tag)) == 0)
            return fail(b, ERR_PARSE, line, col, "unsupported tag '%s' on '%s'",
                        text_shown(tag, strlen(tag), (char[TEXT_SHOWN_SIZE]){0}),
                        text_shown(val, len, shown_buf));
    } else if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !tag) {
        r = type_scalar(n, NULL);
    } else {
        return 0; /* quoted, block, or "!": a string */
    }
    if (r == 2)
        return fail(b, ERR_PARSE, line, col, "integer '%s' is out of range",
                    text_shown(val, len, shown_buf));
    return 0;
}

static int check_collection_tag(struct builder *b, const yaml_event_t *ev, const char *tag,
                                const char *want)
{
    if (tag == NULL || !strcmp(tag, "!") || !strcmp(tag, want))
        return 0;
    return fail(b, ERR_PARSE, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                "unsupported tag '%s'", text_shown(tag, strlen(tag), (char[TEXT_SHOWN_SIZE]){0}));
}

static void bury(struct builder *b, struct ynode *n)
{
    if (b->ngrave == b->gcap) {
        b->gcap = b->gcap ? b->gcap * 2 : 8;
        b->grave = xrealloc(b->grave, b->gcap * sizeof(*b->grave));
    }
    b->grave[b->ngrave++] = n;
}

static int cmp_key_index(const void *a, const void *b, void *ctx)
{
    struct ynode *const *keys = ctx;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int c = strcmp(keys[i]->str, keys[j]->str);
    if (c)
        return c;
    return (i > j) - (i < j);
}

/* Finds duplicate keys of a finished mapping, reports them and drops the later ones. */
static void dedupe_keys(struct builder *b, struct ynode *m)
{
    size_t *idx, i, w;
    char *drop;

    if (m->n < 2)
        return;
    idx = xmalloc(m->n * sizeof(*idx));
    drop = xcalloc(m->n, 1);
    for (i = 0; i < m->n; i++)
        idx[i] = i;
    qsort_r(idx, m->n, sizeof(*idx), cmp_key_index, m->keys);
    for (i = 1; i < m->n; i++) {
        struct ynode *k = m->keys[idx[i]], *first;
        size_t f = i;
        while (f > 0 && strcmp(m->keys[idx[f - 1]]->str, k->str) == 0)
            f--;
        if (f == i)
            continue;
        first = m->keys[idx[f]];
        drop[idx[i]] = 1;
        problem(b, k->line, k->col, "duplicate key '%s' (first at line %d, column %d)",
                text_shown(k->str, k->len, (char[TEXT_SHOWN_SIZE]){0}), first->line, first->col);
    }
    for (i = 0, w = 0; i < m->n; i++) {
        if (drop[i]) {
            m->size -= m->keys[i]->size + m->items[i]->size;
            bury(b, m->keys[i]);
            bury(b, m->items[i]);
            continue;
        }
        m->keys[w] = m->keys[i];
        m->items[w++] = m->items[i];
    }
    m->n = w;
    free(idx);
    free(drop);
}

static int register_anchor(struct builder *b, const char *name, const struct ynode *n, int line,
                           int col)
{
    if (name == NULL)
        return 0;
    if (b->nanchors >= YDOC_ANCHORS_MAX)
        return fail(b, ERR_LIMIT, line, col, "more than %d anchors", YDOC_ANCHORS_MAX);
    if (b->anchors == NULL)
        b->anchors = xcalloc(YDOC_ANCHORS_MAX, sizeof(*b->anchors));
    b->anchors[b->nanchors].name = xstrdup(name);
    b->anchors[b->nanchors++].node = n;
    return 0;
}

static struct ynode *copy_node(struct builder *b, const struct ynode *s)
{
    struct ynode *n = xcalloc(1, sizeof(*n));
    *n = *s;
    n->str = s->str ? xstrndup(s->str, s->len) : NULL;
    n->items = NULL;
    n->keys = NULL;
    if (s->n) {
        n->items = xcalloc(s->n, sizeof(*n->items));
        if (s->keys)
            n->keys = xcalloc(s->n, sizeof(*n->keys));
        for (size_t i = 0; i < s->n; i++) {
            n->items[i] = copy_node(b, s->items[i]);
            if (s->keys)
                n->keys[i] = copy_node(b, s->keys[i]);
        }
    }
    return n;
}

/* Text bytes (scalars and keys) in the subtree at n. */
static size_t text_bytes(const struct ynode *n)
{
    size_t t = n->str ? n->len : 0;
    for (size_t i = 0; i < n->n; i++) {
        t += text_bytes(n->items[i]);
        if (n->keys)
            t += text_bytes(n->keys[i]);
    }
    return t;
}

static int height(const struct ynode *n)
{
    int h = 0;
    if (n->type != YNODE_SEQ && n->type != YNODE_MAP)
        return 0;
    for (size_t i = 0; i < n->n; i++) {
        int c = height(n->items[i]);
        if (c > h)
            h = c;
    }
    return h + 1;
}

/* Adds a finished node to the open collection on top of the stack, or makes it the root. */
static int attach(struct builder *b, struct ynode *n)
{
    struct frame *f;

    if (b->depth == 0) {
        b->doc->root = n;
        return 0;
    }
    f = &b->stack[b->depth - 1];
    if (f->node->type == YNODE_MAP && f->pending_key == NULL) {
        if (n->type == YNODE_SEQ || n->type == YNODE_MAP) {
            int line = n->line, col = n->col;
            ynode_free(n);
            return fail(b, ERR_PARSE, line, col, "a mapping key must be a scalar, not a %s",
                        "list or mapping");
        }
        n->type = YNODE_STR; /* keys are text, whatever they look like */
        f->pending_key = n;
        return 0;
    }
    if (f->node->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 4;
        f->node->items = xrealloc(f->node->items, f->cap * sizeof(*f->node->items));
        if (f->node->type == YNODE_MAP)
            f->node->keys = xrealloc(f->node->keys, f->cap * sizeof(*f->node->keys));
    }
    if (f->node->type == YNODE_MAP) {
        f->node->keys[f->node->n] = f->pending_key;
        f->node->size += f->pending_key->size;
        f->pending_key = NULL;
    }
    f->node->items[f->node->n++] = n;
    f->node->size += n->size;
    return 0;
}

static int on_alias(struct builder *b, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    const struct ynode *target = NULL;
    char sb[TEXT_SHOWN_SIZE];

    if (b->lim.no_aliases)
        return fail(b, ERR_UNSUPPORTED, line, col, "YAML aliases are not supported in %s",
                    b->lim.kind);
    for (size_t i = b->nanchors; i > 0; i--) {
        if (strcmp(b->anchors[i - 1].name, name) == 0) {
            target = b->anchors[i - 1].node;
            break;
        }
    }
    if (target == NULL) {
        for (int d = 0; d < b->depth; d++)
            if (b->stack[d].anchor && strcmp(b->stack[d].anchor, name) == 0)
                return fail(
                    b, ERR_PARSE, line, col,
                    "alias '*%s' refers to a collection that contains it (a recursive alias)",
                    text_shown(name, strlen(name), sb));
        return fail(b, ERR_PARSE, line, col, "alias '*%s' refers to no anchor before it",
                    text_shown(name, strlen(name), sb));
    }
    if (target->size > b->lim.max_nodes - b->nodes)
        return fail(b, ERR_LIMIT, line, col,
                    "expanding alias '*%s' goes past %zu YAML nodes (an alias bomb?)",
                    text_shown(name, strlen(name), sb), b->lim.max_nodes);
    if (b->depth + height(target) > b->lim.max_depth)
        return fail(b, ERR_LIMIT, line, col, "expanding alias '*%s' nests deeper than %d levels",
                    text_shown(name, strlen(name), sb), b->lim.max_depth);
    size_t bytes = text_bytes(target);
    if (bytes > b->lim.max_alias_bytes - b->alias_bytes)
        return fail(b, ERR_LIMIT, line, col,
                    "expanding alias '*%s': aliases expand to more than %zu bytes",
                    text_shown(name, strlen(name), sb), b->lim.max_alias_bytes);
    b->alias_bytes += bytes;
    b->nodes += target->size;
    struct ynode *n = copy_node(b, target);
    n->line = line;
    n->col = col;
    return attach(b, n);
}

static int on_start(struct builder *b, const yaml_event_t *ev, enum ynode_type t)
{
    const char *anchor, *tag;
    struct ynode *n;
    struct frame *f;

    if (t == YNODE_SEQ) {
        anchor = (const char *)ev->data.sequence_start.anchor;
        tag = (const char *)ev->data.sequence_start.tag;
        if (check_collection_tag(b, ev, tag, YAML_SEQ_TAG) < 0)
            return ERR_PARSE;
    } else {
        anchor = (const char *)ev->data.mapping_start.anchor;
        tag = (const char *)ev->data.mapping_start.tag;
        if (check_collection_tag(b, ev, tag, YAML_MAP_TAG) < 0)
            return ERR_PARSE;
    }
    if (b->depth >= b->lim.max_depth)
        return fail(b, ERR_LIMIT, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                    "nesting deeper than %d levels", b->lim.max_depth);
    n = new_node(b, t, &ev->start_mark);
    if (n == NULL)
        return ERR_LIMIT;
    f = &b->stack[b->depth++];
    memset(f, 0, sizeof(*f));
    f->node = n;
    f->anchor = anchor ? xstrdup(anchor) : NULL;
    return 0;
}

static int on_end(struct builder *b)
{
    struct frame *f = &b->stack[b->depth - 1];
    struct ynode *n = f->node;
    char *anchor = f->anchor;
    int rc;

    if (n->type == YNODE_MAP)
        dedupe_keys(b, n);
    f->node = NULL;
    f->anchor = NULL;
    b->depth--;
    rc = attach(b, n);
    if (rc == 0)
        rc = register_anchor(b, anchor, n, n->line, n->col);
    free(anchor);
    return rc;
}

/* Line and column (1-based) of byte offset off in text. */
static void offset_mark(const char *text, size_t len, size_t off, int *line, int *col)
{
    int l = 1, c = 1;
    if (off > len)
        off = len;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n')
            l++, c = 1;
        else if (((unsigned char)text[i] & 0xc0) != 0x80)
            c++;
    }
    *line = l;
    *col = c;
}

/* What char_at returns past the text: -1 like EOF, never a byte (a byte is 0..255). */
#define YAML_NO_CHAR (-1)

/* The byte at 1-based (line, col) counting characters, or YAML_NO_CHAR. */
static int char_at(const char *text, size_t len, int line, int col)
{
    size_t i = 0;
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
        i = 3;
    for (int l = 1; l < line && i < len; i++)
        if (text[i] == '\n')
            l++;
    for (int c = 1; i < len; i++) {
        if (((unsigned char)text[i] & 0xc0) == 0x80)
            continue;
        if (c++ == col)
            return (unsigned char)text[i];
        if (text[i] == '\n')
            break;
    }
    return YAML_NO_CHAR;
}

static int parser_error(struct builder *b, yaml_parser_t *p, const char *text, size_t len)
{
    int line, col;
    const char *what = p->problem ? p->problem : "malformed YAML";

    if (p->error == YAML_MEMORY_ERROR)
        return fail(b, ERR_NOMEM, 1, 1, "out of memory while parsing YAML");
    if (p->error == YAML_READER_ERROR) {
        offset_mark(text, len, p->problem_offset, &line, &col);
        if (p->problem_value != -1)
            return fail(b, ERR_PARSE, line, col, "not a UTF-8 text file: %s (byte 0x%02x)", what,
                        (unsigned)p->problem_value & 0xff);
        return fail(b, ERR_PARSE, line, col, "not a UTF-8 text file: %s", what);
    }
    line = (int)p->problem_mark.line + 1;
    col = (int)p->problem_mark.column + 1;
    if (char_at(text, len, line, col) == '\t')
        return fail(b, ERR_PARSE, line, col,
                    "yaml: %s: a tab character (YAML indents with spaces, never tabs)", what);
    if (p->context)
        return fail(b, ERR_PARSE, line, col, "yaml: %s %s (line %d, column %d)", what, p->context,
                    (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
    return fail(b, ERR_PARSE, line, col, "yaml: %s", what);
}

static int cmp_problem(const void *a, const void *b)
{
    const struct ydoc_problem *x = a, *y = b;
    if (x->line != y->line)
        return x->line - y->line;
    return x->col - y->col;
}

int ydoc_parse(const char *text, size_t len, const struct ydoc_limits *lim, struct ydoc *doc,
               struct ydoc_problem *fatal)
{
    struct builder b;
    yaml_parser_t parser;
    yaml_event_t ev;
    int rc = 0, docs = 0, done = 0;

    memset(doc, 0, sizeof(*doc));
    memset(fatal, 0, sizeof(*fatal));
    memset(&b, 0, sizeof(b));
    if (lim)
        b.lim = *lim;
    if (b.lim.max_nodes == 0)
        b.lim.max_nodes = YDOC_NODES_MAX;
    if (b.lim.max_depth <= 0)
        b.lim.max_depth = YDOC_DEPTH_MAX;
    if (b.lim.max_alias_bytes == 0)
        b.lim.max_alias_bytes =
            len > YDOC_ALIAS_BYTES_MIN / 8 && len < SIZE_MAX / 8 ? len * 8 : YDOC_ALIAS_BYTES_MIN;
    if (b.lim.kind == NULL)
        b.lim.kind = "the file";
    b.doc = doc;
    b.fatal = fatal;
    b.stack = xcalloc((size_t)b.lim.max_depth + 1, sizeof(*b.stack));
    if (!yaml_parser_initialize(&parser)) {
        free(b.stack);
        return fail(&b, ERR_NOMEM, 1, 1, "out of memory");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

    while (!done && rc == 0) {
        struct ynode *n = NULL;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser_error(&b, &parser, text, len);
            break;
        }
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1)
                rc = fail(&b, ERR_PARSE, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
                          "a second YAML document: %s holds one", b.lim.kind);
            break;
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        case YAML_SCALAR_EVENT:
            rc = make_scalar(&b, &ev, &n);
            if (rc == 0)
                rc = attach(&b, n);
            else
                ynode_free(n);
            if (rc == 0 && ev.data.scalar.anchor)
                rc = register_anchor(&b, (const char *)ev.data.scalar.anchor, n, n->line, n->col);
            break;
        case YAML_ALIAS_EVENT:
            rc = on_alias(&b, &ev);
            break;
        case YAML_SEQUENCE_START_EVENT:
            rc = on_start(&b, &ev, YNODE_SEQ);
            break;
        case YAML_MAPPING_START_EVENT:
            rc = on_start(&b, &ev, YNODE_MAP);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            rc = on_end(&b);
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);

    /* Open collections are left only after an error: free them with their pending keys. */
    for (int d = b.depth - 1; d >= 0; d--) {
        ynode_free(b.stack[d].node);
        ynode_free(b.stack[d].pending_key);
        free(b.stack[d].anchor);
    }
    free(b.stack);
    for (size_t i = 0; i < b.nanchors; i++)
        free(b.anchors[i].name);
    free(b.anchors);
    for (size_t i = 0; i < b.ngrave; i++)
        ynode_free(b.grave[i]);
    free(b.grave);
    if (doc->nproblems > 1)
        qsort(doc->problems, doc->nproblems, sizeof(*doc->problems), cmp_problem);
    return rc;
}

void ydoc_release(struct ydoc *doc)
{
    ynode_free(doc->root);
    free(doc->problems);
    memset(doc, 0, sizeof(*doc));
}

/* key_index's "not there": an index, not an error code. */
#define YAML_NO_INDEX ((ptrdiff_t)-1)

/* The index of key in a MAP node, or YAML_NO_INDEX (absent, or map is not a mapping). */
static ptrdiff_t key_index(const struct ynode *map, const char *key)
{
    if (map == NULL || map->type != YNODE_MAP)
        return YAML_NO_INDEX;
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->keys[i]->str, key) == 0)
            return (ptrdiff_t)i;
    return YAML_NO_INDEX;
}

const struct ynode *ynode_key(const struct ynode *map, const char *key)
{
    ptrdiff_t i = key_index(map, key);
    return i == YAML_NO_INDEX ? NULL : map->keys[i];
}

const struct ynode *ynode_get(const struct ynode *map, const char *key)
{
    ptrdiff_t i = key_index(map, key);
    return i == YAML_NO_INDEX ? NULL : map->items[i];
}

const char *ynode_type_name(enum ynode_type t)
{
    switch (t) {
    case YNODE_NULL:
        return "null";
    case YNODE_BOOL:
        return "boolean";
    case YNODE_INT:
        return "integer";
    case YNODE_REAL:
        return "number";
    case YNODE_STR:
        return "string";
    case YNODE_SEQ:
        return "list";
    case YNODE_MAP:
        return "mapping";
    }
    return "?";
}

/* --- the JSON view --- */

struct json_mark {
    const json_t *j;       /* a value of the view (only compared, never dereferenced) */
    const struct ynode *n; /* the node it was made from */
};

struct ydoc_marks {
    struct ydoc doc; /* owns the nodes the pairs point at */
    struct json_mark *v;
    size_t n, cap;
};

static void mark_add(struct ydoc_marks *m, const json_t *j, const struct ynode *n)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->v = xrealloc(m->v, m->cap * sizeof(*m->v));
    }
    m->v[m->n].j = j;
    m->v[m->n++].n = n;
}

/* ynode_to_json, recording each value's node in m when m is non-NULL. */
static json_t *to_json(const struct ynode *n, const struct ynode **bad, struct ydoc_marks *m)
{
    json_t *j = NULL, *c;

    switch (n->type) {
    case YNODE_NULL:
        j = json_null();
        break;
    case YNODE_BOOL:
        j = json_boolean(n->b);
        break;
    case YNODE_INT:
        j = json_integer(n->i);
        break;
    case YNODE_REAL:
        if (isfinite(n->d))
            j = json_real(n->d);
        break;
    case YNODE_STR:
        j = json_stringn(n->str, n->len);
        break;
    case YNODE_SEQ:
    case YNODE_MAP:
        j = n->type == YNODE_SEQ ? json_array() : json_object();
        for (size_t i = 0; i < n->n; i++) {
            if ((c = to_json(n->items[i], bad, m)) == NULL) {
                json_decref(j);
                return NULL;
            }
            if (n->type == YNODE_SEQ) {
                json_array_append_new(j, c);
            } else if (json_object_setn_new(j, n->keys[i]->str, n->keys[i]->len, c) < 0) {
                *bad = n->keys[i];
                json_decref(j);
                return NULL;
            }
        }
        break;
    }
    if (j == NULL) {
        *bad = n;
        return NULL;
    }
    if (m)
        mark_add(m, j, n);
    return j;
}

json_t *ynode_to_json(const struct ynode *n, const struct ynode **bad)
{
    return to_json(n, bad, NULL);
}

void ydoc_marks_free(struct ydoc_marks *m)
{
    if (m == NULL)
        return;
    ydoc_release(&m->doc);
    free(m->v);
    free(m);
}

json_t *ydoc_parse_json(const char *text, size_t len, const char *name,
                        const struct ydoc_limits *lim, struct ydoc_marks **marks_out, struct err *e)
{
    struct ydoc_marks *m = xcalloc(1, sizeof(*m));
    struct ydoc_problem fatal;
    const struct ynode *bad = NULL;
    json_t *root = NULL;
    int rc;

    if (marks_out)
        *marks_out = NULL;
    rc = ydoc_parse(text, len, lim, &m->doc, &fatal);
    /* The first problem in file order wins, fatal or not (problems are sorted). */
    if (m->doc.nproblems > 0 && (rc == 0 || cmp_problem(&m->doc.problems[0], &fatal) < 0)) {
        const struct ydoc_problem *p = &m->doc.problems[0];
        err_set(e, ERR_PARSE, "%s:%d:%d: %s", name, p->line, p->col, p->msg);
        goto fail;
    }
    if (rc < 0) {
        err_set(e, rc, "%s:%d:%d: %s", name, fatal.line, fatal.col, fatal.msg);
        goto fail;
    }
    if (m->doc.root == NULL)
        root = json_null();
    else if ((root = to_json(m->doc.root, &bad, m)) == NULL) {
        err_set(e, ERR_PARSE,
                "%s:%d:%d: not representable as JSON (an infinite or NaN number, or bad UTF-8)",
                name, bad->line, bad->col);
        goto fail;
    }
    if (marks_out)
        *marks_out = m;
    else
        ydoc_marks_free(m);
    return root;

fail:
    ydoc_marks_free(m);
    return NULL;
}

int ydoc_json_mark(const struct ydoc_marks *m, const json_t *container, const char *key, int at_key,
                   int *line, int *col)
{
    const struct ynode *n = NULL;

    *line = *col = 0;
    if (m == NULL || container == NULL)
        return 0;
    for (size_t i = 0; i < m->n && n == NULL; i++)
        if (m->v[i].j == container)
            n = m->v[i].n;
    if (n && key)
        n = at_key ? ynode_key(n, key) : ynode_get(n, key);
    if (n == NULL)
        return 0;
    *line = n->line;
    *col = n->col;
    return 1;
}

int ydoc_json_err(struct err *e, int code, const char *name, const struct ydoc_marks *m,
                  const json_t *container, const char *key, int at_key, const char *msg)
{
    int line, col;
    if (ydoc_json_mark(m, container, key, at_key, &line, &col))
        return err_set(e, code, "%s:%d:%d: %s", name, line, col, msg);
    return err_set(e, code, "%s: %s", name, msg);
}
