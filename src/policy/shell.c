/*
 * shell: a POSIX-ish lexer and recursive-descent parser for one command line (policy/shell.h).
 *
 * Grammar (what is recognised; anything else is words):
 *   list     := pipeline ((&& | || | ; | & | newline) pipeline)*
 *   pipeline := command ((| | |&) newline* command)*
 *   command  := ( list ) | (( arithmetic )) | { list } | NAME ( ) command | function NAME command
 *             | reserved* simple          reserved: if then else elif fi do done while until !
 *   simple   := (assignment | redirection | word)*
 * A word is lexed by lex_word: quotes are removed, expansions ($VAR ${...} $((...)) $(...)
 * `...` <(...) >(...)) are kept as written and flag the word; $(...), `...` and <(...) are
 * parsed as nested lists (depth + 1) while the word is lexed. After a simple command is
 * complete, the string of sh/bash/dash/zsh/ksh -c (behind sudo, env, ...: shell_command_start)
 * and the words of eval are parsed again as nested lists. Here-document bodies are skipped at
 * the newline that ends their line.
 *
 * Order of the flattened list: the commands of one pipeline are consecutive (parse_pipeline
 * moves the nested ones of its members after them), so cmds[i - 1] is the command whose stdout
 * cmds[i] reads when pipe_from_prev is set; nested commands follow the pipeline they sit in.
 *
 * Memory: all texts and the final word and redirection arrays live in one arena of chunks
 * (shell_list.mem); words are built in one reusable buffer per depth and simple commands in one
 * reusable vector per depth, so a typical command line costs a handful of allocations, none
 * per character.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/shell.h"
#include "util/buf.h"
#include "util/banned.h"

#define SHELL_HEREDOC_MAX 16

struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

/* A simple command under construction at one depth. */
struct simple_vec {
    struct shell_word *words;
    size_t nwords, awords;
    char **redir;
    size_t nredir, aredir;
};

struct heredoc {
    const char *delim; /* arena text */
    int strip_tabs;    /* <<- */
    int feed;          /* the body is what a shell runs: parse it */
};

struct sp {
    const char *s; /* current source (the input, or a nested string) */
    size_t len, pos;
    int depth, max_depth;
    struct shell_list *out;
    size_t acmds;
    struct arena_chunk *arena;
    struct buf wbuf[SHELL_MAX_DEPTH + 1];
    struct simple_vec vec[SHELL_MAX_DEPTH + 1];
    size_t nwords_total;
    unsigned next_pipeline, cur_pipeline;
    int inherit_pipeline; /* inside ( ) or { } of a pipeline: its commands share the id */
    int pipe_pending;     /* the next command appended reads the previous one's stdout */
    const char *func;     /* the function whose body is being parsed */
    int brace;            /* number of open { } groups in the current source */
    int stdin_shell;      /* the last simple command is a shell that runs its stdin */
    struct heredoc hd[SHELL_HEREDOC_MAX];
    size_t nhd;
    struct err *err;
};

enum term { TERM_NONE, TERM_PAREN, TERM_BRACE, TERM_CASE };

static int parse_list(struct sp *p, enum term term);
static int parse_command(struct sp *p, enum term term);

static void *arena_alloc(struct sp *p, size_t n)
{
    struct arena_chunk *c = p->arena;
    size_t need = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);

    if (c == NULL || c->cap - c->used < need) {
        size_t cap = c ? c->cap * 2 : 1024;
        if (cap < need)
            cap = need;
        c = xmalloc(sizeof(*c) + cap);
        c->next = p->arena;
        c->used = 0;
        c->cap = cap;
        p->arena = c;
    }
    void *r = (char *)c->data + c->used;
    c->used += need;
    return r;
}

static char *arena_strndup(struct sp *p, const char *s, size_t n)
{
    char *r = arena_alloc(p, n + 1);
    memcpy(r, s, n);
    r[n] = '\0';
    return r;
}

/* Character classes: CH_META ends an unquoted word, CH_SPECIAL needs lex_word's attention
 * inside one (quotes, expansions, escapes, the = of an assignment). */
enum { CH_BLANK = 1, CH_META = 2, CH_SPECIAL = 4 };
static const unsigned char ch_class[256] = {
    [' '] = CH_BLANK | CH_META,
    ['\t'] = CH_BLANK | CH_META,
    ['\r'] = CH_BLANK | CH_META,
    ['\n'] = CH_META,
    [';'] = CH_META,
    ['&'] = CH_META,
    ['|'] = CH_META,
    ['<'] = CH_META,
    ['>'] = CH_META,
    ['('] = CH_META,
    [')'] = CH_META,
    ['\\'] = CH_SPECIAL,
    ['\''] = CH_SPECIAL,
    ['"'] = CH_SPECIAL,
    ['$'] = CH_SPECIAL,
    ['`'] = CH_SPECIAL,
    ['='] = CH_SPECIAL,
};

static int is_blank(char c)
{
    return ch_class[(unsigned char)c] & CH_BLANK;
}

/* Characters that end an unquoted word. */
static int is_meta(char c)
{
    return ch_class[(unsigned char)c] & CH_META;
}

static int is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_name_char(char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9');
}

static int peek(const struct sp *p, size_t off)
{
    return p->pos + off < p->len ? (unsigned char)p->s[p->pos + off] : -1;
}

static void skip_blanks(struct sp *p)
{
    for (;;) {
        if (p->pos < p->len && is_blank(p->s[p->pos])) {
            p->pos++;
        } else if (peek(p, 0) == '\\' && peek(p, 1) == '\n') {
            p->pos += 2;
        } else {
            return;
        }
    }
}

static void skip_comment(struct sp *p)
{
    while (p->pos < p->len && p->s[p->pos] != '\n')
        p->pos++;
}

static int enter(struct sp *p)
{
    if (p->depth + 1 > SHELL_MAX_DEPTH)
        return err_set(p->err, ERR_INVALID, "command nested deeper than %d levels",
                       SHELL_MAX_DEPTH);
    p->depth++;
    if (p->depth > p->max_depth)
        p->max_depth = p->depth;
    return 0;
}

static int count_word(struct sp *p)
{
    if (++p->nwords_total > SHELL_MAX_WORDS)
        return err_set(p->err, ERR_INVALID, "command has more than %d words", SHELL_MAX_WORDS);
    return 0;
}

static int nested_string(struct sp *p, const char *s, size_t n);

/* Consumes the newline at pos, then the bodies of the here-documents of its line; a body that
 * feeds a shell (sh <<EOF, cat <<EOF | bash) is parsed as a nested list. */
static int take_newline(struct sp *p)
{
    size_t nhd = p->nhd;
    int rc = 0;

    p->pos++;
    p->nhd = 0;
    for (size_t h = 0; h < nhd; h++) {
        struct heredoc hd = p->hd[h];
        size_t dl = strlen(hd.delim), body = p->pos, body_end = p->len;
        while (p->pos < p->len) {
            size_t line = p->pos, b = line, e = line;
            while (e < p->len && p->s[e] != '\n')
                e++;
            p->pos = e < p->len ? e + 1 : e;
            if (hd.strip_tabs)
                while (b < e && p->s[b] == '\t')
                    b++;
            if (e - b == dl && memcmp(p->s + b, hd.delim, dl) == 0) {
                body_end = line; /* the body ends where the delimiter's line starts */
                break;
            }
        }
        if (hd.feed && rc == 0 && body_end > body) {
            size_t save = p->pos;
            rc = nested_string(p, p->s + body, body_end - body);
            p->pos = save;
        }
    }
    return rc;
}

/* Skips blanks, comments and newlines (and here-document bodies). */
static int skip_space(struct sp *p)
{
    int rc;
    for (;;) {
        skip_blanks(p);
        if (peek(p, 0) == '#') {
            skip_comment(p);
        } else if (peek(p, 0) == '\n') {
            if ((rc = take_newline(p)) < 0)
                return rc;
        } else {
            return 0;
        }
    }
}

/*
 * Parses a nested list in the current source from pos (after "$(", "<(", "(" ...) up to the
 * closing ')', which it consumes. what names the construct in the error message.
 */
static int nested_paren(struct sp *p, const char *what)
{
    unsigned cur = p->cur_pipeline;
    int inherit = p->inherit_pipeline, pending = p->pipe_pending, brace = p->brace, rc;
    const char *func = p->func;

    if ((rc = enter(p)) < 0)
        return rc;
    p->inherit_pipeline = 0;
    p->pipe_pending = 0;
    p->brace = 0;
    p->func = NULL;
    rc = parse_list(p, TERM_PAREN);
    if (rc == 0 && peek(p, 0) != ')')
        rc = err_set(p->err, ERR_INVALID, "unterminated %s", what);
    if (rc == 0)
        p->pos++;
    p->depth--;
    p->cur_pipeline = cur;
    p->inherit_pipeline = inherit;
    p->pipe_pending = pending;
    p->brace = brace;
    p->func = func;
    return rc;
}

/* Parses the string s[0..n) as a nested list (backquotes, sh -c, eval). */
static int nested_string(struct sp *p, const char *s, size_t n)
{
    const char *os = p->s, *func = p->func;
    size_t olen = p->len, opos = p->pos, onhd = p->nhd;
    struct heredoc ohd[SHELL_HEREDOC_MAX];
    unsigned cur = p->cur_pipeline;
    int inherit = p->inherit_pipeline, pending = p->pipe_pending, brace = p->brace, rc;

    if ((rc = enter(p)) < 0)
        return rc;
    memcpy(ohd, p->hd, onhd * sizeof(ohd[0]));
    p->s = s;
    p->len = n;
    p->pos = 0;
    p->nhd = 0;
    p->inherit_pipeline = 0;
    p->pipe_pending = 0;
    p->brace = 0;
    p->func = NULL;
    rc = parse_list(p, TERM_NONE);
    if (rc == 0 && p->pos < p->len)
        rc = err_set(p->err, ERR_INVALID, "unexpected '%c'", p->s[p->pos]);
    p->depth--;
    p->s = os;
    p->len = olen;
    p->pos = opos;
    memcpy(p->hd, ohd, onhd * sizeof(ohd[0]));
    p->nhd = onhd;
    p->cur_pipeline = cur;
    p->inherit_pipeline = inherit;
    p->pipe_pending = pending;
    p->brace = brace;
    p->func = func;
    return rc;
}

/* Skips a balanced (( ... )) or ${ ... } from pos (at the opening) without parsing it. */
static int skip_balanced(struct sp *p, char open, char close, const char *what)
{
    int level = 0;
    while (p->pos < p->len) {
        char c = p->s[p->pos++];
        if (c == '\\' && p->pos < p->len) {
            p->pos++;
        } else if (c == '\'' && close == '}') {
            const char *q = memchr(p->s + p->pos, '\'', p->len - p->pos);
            if (q == NULL)
                break;
            p->pos = (size_t)(q - p->s) + 1;
        } else if (c == open) {
            level++;
        } else if (c == close && --level == 0) {
            return 0;
        }
    }
    return err_set(p->err, ERR_INVALID, "unterminated %s", what);
}

/* The value of a hexadecimal digit, or 16 for any other character (or the end: c < 0). */
static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return 16;
}

/* $'...' from pos (after the quote): ANSI-C escapes into b. */
static int lex_ansi(struct sp *p, struct buf *b)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos++];
        if (c == '\'')
            return 0;
        if (c != '\\' || p->pos >= p->len) {
            buf_addc(b, c);
            continue;
        }
        c = p->s[p->pos++];
        switch (c) {
        case 'n':
            buf_addc(b, '\n');
            break;
        case 't':
            buf_addc(b, '\t');
            break;
        case 'r':
            buf_addc(b, '\r');
            break;
        case 'a':
            buf_addc(b, '\a');
            break;
        case 'b':
            buf_addc(b, '\b');
            break;
        case 'e':
        case 'E':
            buf_addc(b, 27);
            break;
        case 'f':
            buf_addc(b, '\f');
            break;
        case 'v':
            buf_addc(b, '\v');
            break;
        case 'x': {
            int v = 0, k = 0, h;
            while (k < 2 && (h = hexval(peek(p, 0))) < 16) {
                v = v * 16 + h;
                p->pos++;
                k++;
            }
            if (k == 0)
                buf_adds(b, "\\x");
            else if (v != 0)
                buf_addc(b, (char)v);
            break;
        }
        case '0':
        case '1':
        case '2':
        case '3':
        case '4':
        case '5':
        case '6':
        case '7': {
            int v = c - '0', k = 1;
            while (k < 3 && peek(p, 0) >= '0' && peek(p, 0) <= '7') {
                v = v * 8 + (p->s[p->pos++] - '0');
                k++;
            }
            if ((v & 0xff) != 0)
                buf_addc(b, (char)(v & 0xff));
            break;
        }
        default: /* \\ \' \" \? and unknown escapes */
            if (c != '\\' && c != '\'' && c != '"' && c != '?')
                buf_addc(b, '\\');
            buf_addc(b, c);
            break;
        }
    }
    return err_set(p->err, ERR_INVALID, "unterminated $'...' quote");
}

/* `...` from pos (after the opening backquote): the content, unescaped, parsed as a list. */
static int lex_backquote(struct sp *p, struct buf *b)
{
    struct buf inner = BUF_INIT;
    size_t start = p->pos - 1;
    int rc;

    for (;;) {
        if (p->pos >= p->len) {
            buf_release(&inner);
            return err_set(p->err, ERR_INVALID, "unterminated backquote");
        }
        char c = p->s[p->pos++];
        if (c == '`')
            break;
        if (c == '\\' && p->pos < p->len &&
            (p->s[p->pos] == '`' || p->s[p->pos] == '\\' || p->s[p->pos] == '$')) {
            c = p->s[p->pos++];
        }
        buf_addc(&inner, c);
    }
    rc = nested_string(p, inner.data, inner.len);
    buf_release(&inner);
    if (rc == 0)
        buf_add(b, p->s + start, p->pos - start);
    return rc;
}

/* An expansion from pos (at '$'); appends it as written and sets *exp, or a literal '$'. */
static int lex_dollar(struct sp *p, struct buf *b, int *exp)
{
    size_t start = p->pos;
    int c = peek(p, 1), rc;

    if (c == '(' && peek(p, 2) == '(') {
        p->pos++;
        if ((rc = skip_balanced(p, '(', ')', "$((")) < 0)
            return rc;
    } else if (c == '(') {
        p->pos += 2;
        if ((rc = nested_paren(p, "$(")) < 0)
            return rc;
    } else if (c == '{') {
        p->pos++;
        if ((rc = skip_balanced(p, '{', '}', "${")) < 0)
            return rc;
    } else if (c >= 0 && is_name_start((char)c)) {
        p->pos += 2;
        while (p->pos < p->len && is_name_char(p->s[p->pos]))
            p->pos++;
    } else if (c >= 0 && (strchr("0123456789@*#?$!-", c) != NULL)) {
        p->pos += 2;
    } else {
        p->pos++;
        buf_addc(b, '$');
        return 0;
    }
    *exp = 1;
    buf_add(b, p->s + start, p->pos - start);
    return 0;
}

struct lexed {
    int quoted, exp, assign;
};

/*
 * Lexes one word from pos into b (emptied first). Returns 1 when a word was read, 0 when pos
 * is at an operator, a comment or the end, or an error.
 */
static int lex_word(struct sp *p, struct buf *b, struct lexed *lx)
{
    int name_ok = 1, any = 0, rc;

    buf_reset(b);
    memset(lx, 0, sizeof(*lx));
    if (peek(p, 0) == '#')
        return 0;
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if ((c == '<' || c == '>') && peek(p, 1) == '(') {
            size_t start = p->pos;
            p->pos += 2;
            if ((rc = nested_paren(p, "process substitution")) < 0)
                return rc;
            buf_add(b, p->s + start, p->pos - start);
            lx->exp = 1;
            any = 1;
            name_ok = 0;
            continue;
        }
        if (is_meta(c))
            break;
        any = 1;
        if (c == '\\') {
            if (peek(p, 1) == '\n') {
                p->pos += 2;
                continue;
            }
            p->pos++;
            if (p->pos < p->len)
                buf_addc(b, p->s[p->pos++]);
            else
                buf_addc(b, '\\');
            lx->quoted = 1;
            name_ok = 0;
        } else if (c == '\'') {
            const char *q = memchr(p->s + p->pos + 1, '\'', p->len - p->pos - 1);
            if (q == NULL)
                return err_set(p->err, ERR_INVALID, "unterminated single quote");
            buf_add(b, p->s + p->pos + 1, (size_t)(q - p->s) - p->pos - 1);
            p->pos = (size_t)(q - p->s) + 1;
            lx->quoted = 1;
            name_ok = 0;
        } else if (c == '$' && peek(p, 1) == '\'') {
            p->pos += 2;
            if ((rc = lex_ansi(p, b)) < 0)
                return rc;
            lx->quoted = 1;
            name_ok = 0;
        } else if (c == '"' || (c == '$' && peek(p, 1) == '"')) {
            p->pos += c == '$' ? 2 : 1;
            for (;;) {
                if (p->pos >= p->len)
                    return err_set(p->err, ERR_INVALID, "unterminated double quote");
                char d = p->s[p->pos];
                if (d == '"') {
                    p->pos++;
                    break;
                }
                if (d == '\\' && p->pos + 1 < p->len) {
                    char e = p->s[p->pos + 1];
                    p->pos += 2;
                    if (e == '\n')
                        continue;
                    if (e != '$' && e != '`' && e != '"' && e != '\\')
                        buf_addc(b, '\\');
                    buf_addc(b, e);
                } else if (d == '$') {
                    if ((rc = lex_dollar(p, b, &lx->exp)) < 0)
                        return rc;
                } else if (d == '`') {
                    p->pos++;
                    if ((rc = lex_backquote(p, b)) < 0)
                        return rc;
                    lx->exp = 1;
                } else {
                    buf_addc(b, d);
                    p->pos++;
                }
            }
            lx->quoted = 1;
            name_ok = 0;
        } else if (c == '$') {
            if ((rc = lex_dollar(p, b, &lx->exp)) < 0)
                return rc;
            name_ok = 0;
        } else if (c == '`') {
            p->pos++;
            if ((rc = lex_backquote(p, b)) < 0)
                return rc;
            lx->exp = 1;
            name_ok = 0;
        } else if (c == '=' && name_ok && b->len > 0 && !lx->assign) {
            lx->assign = 1;
            buf_addc(b, c);
            p->pos++;
            if (peek(p, 0) == '(') { /* a=(1 2 3): an array, kept as written */
                size_t start = p->pos;
                if ((rc = skip_balanced(p, '(', ')', "array assignment")) < 0)
                    return rc;
                buf_add(b, p->s + start, p->pos - start);
            }
        } else {
            /* a run of plain characters, appended at once */
            size_t j = p->pos + 1;
            while (j < p->len && !(ch_class[(unsigned char)p->s[j]] & (CH_META | CH_SPECIAL)))
                j++;
            if (!lx->assign && name_ok) {
                if (b->len == 0 && !is_name_start(c))
                    name_ok = 0;
                for (size_t k = p->pos; k < j && name_ok; k++)
                    if (!is_name_char(p->s[k]))
                        name_ok = 0;
            }
            buf_add(b, p->s + p->pos, j - p->pos);
            p->pos = j;
        }
    }
    return any;
}

static void vec_add_word(struct simple_vec *v, const struct shell_word *w)
{
    if (v->nwords == v->awords) {
        v->awords = v->awords ? v->awords * 2 : 16;
        v->words = xrealloc(v->words, v->awords * sizeof(*v->words));
    }
    v->words[v->nwords++] = *w;
}

static void vec_add_redir(struct simple_vec *v, char *t)
{
    if (v->nredir == v->aredir) {
        v->aredir = v->aredir ? v->aredir * 2 : 4;
        v->redir = xrealloc(v->redir, v->aredir * sizeof(*v->redir));
    }
    v->redir[v->nredir++] = t;
}

/* Appends the simple command held in v (if it has words or output redirections). */
static void emit(struct sp *p, struct simple_vec *v)
{
    struct shell_list *l = p->out;
    struct shell_simple *c;

    if (v->nwords == 0 && v->nredir == 0)
        return;
    if (l->ncmds == p->acmds) {
        p->acmds = p->acmds ? p->acmds * 2 : 8;
        l->cmds = xrealloc(l->cmds, p->acmds * sizeof(*l->cmds));
    }
    c = &l->cmds[l->ncmds++];
    memset(c, 0, sizeof(*c));
    if (v->nwords > 0) {
        c->words = arena_alloc(p, v->nwords * sizeof(*c->words));
        memcpy(c->words, v->words, v->nwords * sizeof(*c->words));
    }
    c->nwords = v->nwords;
    if (v->nredir > 0) {
        c->redir_out = arena_alloc(p, v->nredir * sizeof(*c->redir_out));
        memcpy(c->redir_out, v->redir, v->nredir * sizeof(*c->redir_out));
    }
    c->nredir_out = v->nredir;
    c->depth = p->depth;
    c->pipeline = p->cur_pipeline;
    c->in_function = p->func;
    if (p->pipe_pending) {
        c->pipe_from_prev = 1;
        p->pipe_pending = 0;
    }
}

/* Basename of an absolute path ("/usr/bin/rm" -> "rm"); other words unchanged. */
const char *shell_program(const char *word)
{
    if (word[0] == '/') {
        const char *s = strrchr(word, '/');
        if (s[1] != '\0')
            return s + 1;
    }
    return word;
}

static int word_in(const char *w, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(w, *set) == 0)
            return 1;
    return 0;
}

/* Does option word o (e.g. "-u", "--user") take the next word as its value? */
static int takes_value(const char *o, const char *const *shorts, const char *const *longs)
{
    if (o[1] == '-')
        return strchr(o, '=') == NULL && word_in(o, longs);
    /* a short cluster: the value is the rest of the cluster, or the next word when the
     * option letter that takes it comes last */
    for (const char *c = o + 1; *c; c++) {
        for (const char *const *s = shorts; *s; s++) {
            if ((*s)[1] == *c)
                return c[1] == '\0';
        }
    }
    return 0;
}

size_t shell_command_start(const struct shell_word *w, size_t n)
{
    static const char *const sudo_s[] = {"-u", "-g", "-h", "-p", "-C", "-D",
                                         "-r", "-t", "-U", "-T", NULL};
    static const char *const sudo_l[] = {
        "--user", "--group",      "--host",       "--prompt",          "--chdir", "--role",
        "--type", "--other-user", "--close-from", "--command-timeout", NULL};
    static const char *const env_s[] = {"-u", "-C", "-S", NULL};
    static const char *const env_l[] = {"--unset", "--chdir", "--split-string", NULL};
    static const char *const nice_s[] = {"-n", NULL};
    static const char *const nice_l[] = {"--adjustment", NULL};
    static const char *const to_s[] = {"-s", "-k", NULL};
    static const char *const to_l[] = {"--signal", "--kill-after", NULL};
    static const char *const exec_s[] = {"-a", NULL};
    static const char *const none[] = {NULL};
    static const char *const xa_s[] = {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", NULL};
    static const char *const xa_l[] = {
        "--arg-file", "--delimiter", "--eof",       "--replace",          "--max-lines",
        "--max-args", "--max-procs", "--max-chars", "--process-slot-var", NULL};
    static const char *const time_s[] = {"-f", "-o", NULL};
    static const char *const time_l[] = {"--format", "--output", NULL};
    size_t i = 0;

    while (i < n) {
        const char *prog = shell_program(w[i].text);
        const char *const *vs, *const *vl;
        int dur = 0, envvars = 0;

        if (prog[0] == '\0' || strchr("sdenitbcx", prog[0]) == NULL)
            return i;
        if (strcmp(prog, "sudo") == 0 || strcmp(prog, "doas") == 0) {
            vs = sudo_s;
            vl = sudo_l;
        } else if (strcmp(prog, "env") == 0) {
            vs = env_s;
            vl = env_l;
            envvars = 1;
        } else if (strcmp(prog, "nice") == 0 || strcmp(prog, "ionice") == 0) {
            vs = nice_s;
            vl = nice_l;
        } else if (strcmp(prog, "timeout") == 0) {
            vs = to_s;
            vl = to_l;
            dur = 1;
        } else if (strcmp(prog, "nohup") == 0 || strcmp(prog, "builtin") == 0 ||
                   strcmp(prog, "stdbuf") == 0 || strcmp(prog, "nocorrect") == 0) {
            vs = none;
            vl = none;
        } else if (strcmp(prog, "command") == 0) {
            /* command -v / -V only print what a name is */
            if (i + 1 < n && (strcmp(w[i + 1].text, "-v") == 0 || strcmp(w[i + 1].text, "-V") == 0))
                return n;
            vs = none;
            vl = none;
        } else if (strcmp(prog, "exec") == 0) {
            vs = exec_s;
            vl = none;
        } else if (strcmp(prog, "xargs") == 0) {
            vs = xa_s;
            vl = xa_l;
        } else if (strcmp(prog, "time") == 0) {
            vs = time_s;
            vl = time_l;
        } else {
            return i;
        }
        i++;
        while (i < n) {
            const char *a = w[i].text;
            if (strcmp(a, "--") == 0) {
                i++;
                break;
            }
            if (a[0] == '-' && a[1] != '\0') {
                i += takes_value(a, vs, vl) ? 2 : 1;
            } else if (envvars && strchr(a, '=') != NULL) {
                i++;
            } else {
                break;
            }
        }
        if (dur && i < n)
            i++; /* timeout's DURATION */
    }
    return n;
}

enum sh_kind { SH_NONE, SH_C, SH_STDIN, SH_EVAL };

/* What a simple command does with shell text: sh -c STRING (*ci: its index), a shell reading
 * its stdin (sh, bash -s, bash -x), eval (*ci: its first argument), or nothing of that. */
static enum sh_kind shell_kind(const struct shell_word *w, size_t n, size_t *ci)
{
    static const char *const shells[] = {"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", NULL};
    size_t i = shell_command_start(w, n);
    const char *prog;
    int has_c = 0, has_s = 0;

    if (i >= n)
        return SH_NONE;
    prog = shell_program(w[i].text);
    if (prog[0] == '\0' || strchr("sbdzkame", prog[0]) == NULL)
        return SH_NONE;
    if (strcmp(prog, "su") == 0) { /* su [options] [-] [USER] -c COMMAND */
        for (i++; i + 1 < n; i++)
            if (strcmp(w[i].text, "-c") == 0 || strcmp(w[i].text, "--command") == 0) {
                *ci = i + 1;
                return SH_C;
            }
        return SH_NONE;
    }
    if (strcmp(prog, "eval") == 0) {
        *ci = i + 1;
        return i + 1 < n ? SH_EVAL : SH_NONE;
    }
    if (!word_in(prog, shells))
        return SH_NONE;
    for (i++; i < n; i++) {
        const char *a = w[i].text;
        if (a[0] != '-' && a[0] != '+')
            break;
        if (strcmp(a, "--") == 0 || strcmp(a, "-") == 0) {
            i++;
            break;
        }
        if (a[1] == '-')
            continue; /* --login, --norc ... */
        if (strchr(a + 1, 'c') != NULL)
            has_c = 1;
        if (strchr(a + 1, 's') != NULL)
            has_s = 1;
        if ((strchr(a + 1, 'o') != NULL || strchr(a + 1, 'O') != NULL) && i + 1 < n)
            i++; /* -o pipefail */
    }
    if (has_c) {
        *ci = i;
        return i < n ? SH_C : SH_NONE;
    }
    return has_s || i >= n ? SH_STDIN : SH_NONE;
}

/* After a simple command: the string of sh -c, the words of eval, the here-string or the
 * here-documents a shell reads, parsed as nested lists. */
static int reparse(struct sp *p, const struct shell_word *w, size_t n, const char *herestr,
                   size_t hd_start)
{
    size_t ci = 0;
    enum sh_kind k = shell_kind(w, n, &ci);
    int rc;

    switch (k) {
    case SH_EVAL: {
        struct buf all = BUF_INIT;
        for (size_t i = ci; i < n; i++) {
            if (i > ci)
                buf_addc(&all, ' ');
            buf_adds(&all, w[i].text);
        }
        rc = nested_string(p, all.data, all.len);
        buf_release(&all);
        return rc;
    }
    case SH_C:
        return nested_string(p, w[ci].text, strlen(w[ci].text));
    case SH_STDIN:
        p->stdin_shell = 1;
        for (size_t h = hd_start; h < p->nhd; h++)
            p->hd[h].feed = 1;
        return herestr ? nested_string(p, herestr, strlen(herestr)) : 0;
    default:
        return 0;
    }
}

static int reserved_prefix(const char *w)
{
    static const char *const r[] = {"if",   "then",  "else",  "elif", "fi",   "do",
                                    "done", "while", "until", "!",    "esac", NULL};
    if (strchr("itefdwu!", w[0]) == NULL || w[0] == '\0')
        return 0;
    return word_in(w, r);
}

/* At command position: is pos at the word "}" closing a group? */
static int at_close_brace(const struct sp *p)
{
    int c = peek(p, 1);
    return p->brace > 0 && peek(p, 0) == '}' && (c < 0 || is_meta((char)c));
}

/* Is pos at the unquoted word w (followed by a delimiter or the end)? */
static int at_word(const struct sp *p, const char *w)
{
    size_t n = strlen(w);
    int c;
    if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n) != 0)
        return 0;
    c = peek(p, n);
    return c < 0 || is_meta((char)c);
}

/* In a case item: is pos at its end (;; ;& ;;&) or at the esac that ends the case? */
static int at_case_end(const struct sp *p)
{
    return (peek(p, 0) == ';' && (peek(p, 1) == ';' || peek(p, 1) == '&')) || at_word(p, "esac");
}

/* case WORD in [(]PATTERN[|PATTERN]...) LIST ;; ... esac, from after the word "case". The
 * patterns are skipped, each item's list is parsed (depth + 1). */
static int parse_case(struct sp *p)
{
    struct buf *b = &p->wbuf[p->depth];
    struct lexed lx;
    int rc, seen_in = 0;

    while (!seen_in) {
        if ((rc = skip_space(p)) < 0)
            return rc;
        if ((rc = lex_word(p, b, &lx)) < 0)
            return rc;
        if (rc == 0)
            return err_set(p->err, ERR_INVALID, "unterminated case");
        if ((rc = count_word(p)) < 0)
            return rc;
        seen_in = !lx.quoted && strcmp(b->data, "in") == 0;
    }
    for (;;) {
        if ((rc = skip_space(p)) < 0)
            return rc;
        if (p->pos >= p->len)
            return err_set(p->err, ERR_INVALID, "unterminated case");
        if (at_word(p, "esac")) {
            p->pos += 4;
            return 0;
        }
        if (peek(p, 0) == '(')
            p->pos++;
        for (;;) { /* the patterns */
            skip_blanks(p);
            if (peek(p, 0) == ')') {
                p->pos++;
                break;
            }
            if (peek(p, 0) == '|') {
                p->pos++;
                continue;
            }
            if ((rc = lex_word(p, b, &lx)) < 0)
                return rc;
            if (rc == 0)
                return err_set(p->err, ERR_INVALID, "unterminated case pattern");
            if ((rc = count_word(p)) < 0)
                return rc;
        }
        if ((rc = enter(p)) < 0)
            return rc;
        rc = parse_list(p, TERM_CASE);
        p->depth--;
        if (rc < 0)
            return rc;
        if (peek(p, 0) == ';') {
            p->pos += 2;
            if (peek(p, 0) == '&')
                p->pos++;
        }
    }
}

/* A redirection operator at pos (after an optional fd number). Consumes it; returns its kind:
 * 0 none, 1 output to a file, 2 input or a dup (target not a written file), 3 here-document,
 * 4 here-string. */
static int lex_redir(struct sp *p, int *strip_tabs)
{
    size_t save = p->pos;
    int c;

    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
        p->pos++;
    c = peek(p, 0);
    if (c == '&' && peek(p, 1) == '>') {
        p->pos += 2;
        if (peek(p, 0) == '>')
            p->pos++;
        return 1;
    }
    if (c == '>') {
        p->pos++;
        if (peek(p, 0) == '>' || peek(p, 0) == '|') {
            p->pos++;
        } else if (peek(p, 0) == '&') {
            p->pos++;
            skip_blanks(p);
            c = peek(p, 0);
            return (c == '-' || (c >= '0' && c <= '9')) ? 2 : 1;
        }
        return 1;
    }
    if (c == '<') {
        p->pos++;
        if (peek(p, 0) == '<') {
            p->pos++;
            if (peek(p, 0) == '<') {
                p->pos++;
                return 4;
            }
            *strip_tabs = peek(p, 0) == '-';
            if (*strip_tabs)
                p->pos++;
            return 3;
        }
        if (peek(p, 0) == '&' || peek(p, 0) == '>')
            p->pos++;
        return 2;
    }
    p->pos = save;
    return 0;
}

/* At the body of a function definition: something other than an operator or the end. */
static int body_follows(struct sp *p)
{
    int c = peek(p, 0);
    if (c < 0 || (is_meta((char)c) && c != '('))
        return err_set(p->err, ERR_INVALID, "function without a body");
    return 0;
}

static int parse_simple(struct sp *p, enum term term)
{
    struct simple_vec *v = &p->vec[p->depth];
    struct buf *b = &p->wbuf[p->depth];
    struct lexed lx;
    const char *herestr = NULL;
    size_t hd_start = p->nhd;
    int rc;

    v->nwords = 0;
    v->nredir = 0;
    for (;;) {
        skip_blanks(p);
        if (p->pos >= p->len)
            break;
        char c = p->s[p->pos];
        if (v->nwords == 0 && (at_close_brace(p) || (term == TERM_CASE && at_case_end(p))))
            break;
        int procsub = (c == '<' || c == '>') && peek(p, 1) == '(';
        if (!procsub &&
            ((c >= '0' && c <= '9') || c == '<' || c == '>' || (c == '&' && peek(p, 1) == '>'))) {
            int strip = 0, kind = lex_redir(p, &strip);
            if (kind > 0) {
                skip_blanks(p);
                if ((rc = lex_word(p, b, &lx)) < 0)
                    return rc;
                if (rc == 0)
                    return err_set(p->err, ERR_INVALID, "redirection without a target");
                if ((rc = count_word(p)) < 0)
                    return rc;
                if (kind == 1)
                    vec_add_redir(v, arena_strndup(p, b->data, b->len));
                if (kind == 4)
                    herestr = arena_strndup(p, b->data, b->len);
                if (kind == 3) {
                    if (p->nhd == SHELL_HEREDOC_MAX)
                        return err_set(p->err, ERR_INVALID, "more than %d here-documents",
                                       SHELL_HEREDOC_MAX);
                    p->hd[p->nhd].delim = arena_strndup(p, b->data, b->len);
                    p->hd[p->nhd++].strip_tabs = strip;
                }
                continue;
            }
        }
        if (c == '(') {
            /* NAME ( ) body: a function definition */
            size_t save = p->pos;
            p->pos++;
            skip_blanks(p);
            if (v->nwords == 1 && v->nredir == 0 && peek(p, 0) == ')') {
                const char *func = p->func;
                p->pos++;
                p->func = v->words[0].text;
                v->nwords = 0;
                if ((rc = skip_space(p)) < 0 || (rc = body_follows(p)) < 0)
                    return rc;
                if ((rc = enter(p)) < 0)
                    return rc;
                rc = parse_command(p, term);
                p->depth--;
                p->func = func;
                return rc;
            }
            p->pos = save;
            return err_set(p->err, ERR_INVALID, "unexpected '('");
        }
        if (is_meta(c) && !procsub)
            break;
        rc = lex_word(p, b, &lx);
        if (rc < 0)
            return rc;
        if (rc == 0) { /* a comment */
            skip_comment(p);
            break;
        }
        if ((rc = count_word(p)) < 0)
            return rc;
        if (v->nwords == 0 && lx.assign)
            continue;
        if (v->nwords == 0 && !lx.quoted && !lx.exp) {
            if (reserved_prefix(b->data))
                continue;
            if (strcmp(b->data, "case") == 0) {
                if ((rc = parse_case(p)) < 0)
                    return rc;
                v = &p->vec[p->depth];
                v->nwords = 0;
                v->nredir = 0;
                continue;
            }
            if (strcmp(b->data, "{") == 0 || strcmp(b->data, "function") == 0) {
                int fn = b->data[0] == 'f';
                const char *func = p->func;
                if (fn) {
                    skip_blanks(p);
                    if ((rc = lex_word(p, b, &lx)) < 0)
                        return rc;
                    if (rc == 0)
                        return err_set(p->err, ERR_INVALID, "function without a name");
                    p->func = arena_strndup(p, b->data, b->len);
                    skip_blanks(p);
                    if (peek(p, 0) == '(') {
                        p->pos++;
                        skip_blanks(p);
                        if (peek(p, 0) != ')')
                            return err_set(p->err, ERR_INVALID, "unexpected '('");
                        p->pos++;
                    }
                    if ((rc = skip_space(p)) < 0 || (rc = body_follows(p)) < 0)
                        return rc;
                }
                if ((rc = enter(p)) < 0)
                    return rc;
                if (fn) {
                    rc = parse_command(p, term);
                } else {
                    p->brace++;
                    rc = parse_list(p, TERM_BRACE);
                    p->brace--;
                    if (rc == 0 && !(peek(p, 0) == '}'))
                        rc = err_set(p->err, ERR_INVALID, "unterminated '{' group");
                    if (rc == 0)
                        p->pos++;
                }
                p->depth--;
                p->func = func;
                if (rc < 0)
                    return rc;
                /* redirections after the group */
                v = &p->vec[p->depth];
                v->nwords = 0;
                v->nredir = 0;
                continue;
            }
        }
        struct shell_word w = {0};
        w.text = arena_strndup(p, b->data, b->len);
        w.quoted = lx.quoted ? 1 : 0;
        w.has_expansion = lx.exp ? 1 : 0;
        vec_add_word(v, &w);
    }
    if (v->nwords == 0 && v->nredir == 0)
        return 0;
    {
        struct shell_word *words = NULL;
        size_t n = v->nwords;
        emit(p, v);
        if (n > 0)
            words = p->out->cmds[p->out->ncmds - 1].words;
        return n > 0 ? reparse(p, words, n, herestr, hd_start) : 0;
    }
}

static int parse_command(struct sp *p, enum term term)
{
    int rc;

    skip_blanks(p);
    if (peek(p, 0) == '(' && peek(p, 1) == '(') {
        if ((rc = skip_balanced(p, '(', ')', "((")) < 0)
            return rc;
        return parse_simple(p, term);
    }
    if (peek(p, 0) == '(') {
        int inherit = p->inherit_pipeline, brace = p->brace;
        p->pos++;
        if ((rc = enter(p)) < 0)
            return rc;
        p->inherit_pipeline = 1;
        p->brace = 0;
        rc = parse_list(p, TERM_PAREN);
        if (rc == 0 && peek(p, 0) != ')')
            rc = err_set(p->err, ERR_INVALID, "unterminated '(' subshell");
        if (rc == 0)
            p->pos++;
        p->depth--;
        p->inherit_pipeline = inherit;
        p->brace = brace;
        if (rc < 0)
            return rc;
        return parse_simple(p, term); /* redirections after the subshell */
    }
    {
        int inherit = p->inherit_pipeline;
        p->inherit_pipeline = 1;
        rc = parse_simple(p, term);
        p->inherit_pipeline = inherit;
        return rc;
    }
}

/* Moves the commands of [start, end) that are not members of pipeline id after the members,
 * keeping each group's order. */
static void partition(struct sp *p, size_t start, unsigned id)
{
    struct shell_simple *c = p->out->cmds, *tmp;
    size_t end = p->out->ncmds, k = 0, i;
    int mixed = 0;

    for (i = start; i < end; i++)
        if (c[i].pipeline != id)
            mixed = 1;
    if (!mixed)
        return;
    tmp = xmalloc((end - start) * sizeof(*tmp));
    for (i = start; i < end; i++)
        if (c[i].pipeline == id)
            tmp[k++] = c[i];
    for (i = start; i < end; i++)
        if (c[i].pipeline != id)
            tmp[k++] = c[i];
    memcpy(c + start, tmp, (end - start) * sizeof(*tmp));
    free(tmp);
}

static int parse_pipeline(struct sp *p, enum term term)
{
    unsigned outer = p->cur_pipeline, id;
    size_t start = p->out->ncmds, hd_start = p->nhd;
    int rc, member = 0;

    if (!p->inherit_pipeline || p->cur_pipeline == 0)
        p->cur_pipeline = ++p->next_pipeline;
    id = p->cur_pipeline;
    for (;;) {
        p->stdin_shell = 0;
        if ((rc = parse_command(p, term)) < 0)
            return rc;
        if (member++ > 0 && p->stdin_shell) /* cat <<EOF | sh: the body is the script */
            for (size_t h = hd_start; h < p->nhd; h++)
                p->hd[h].feed = 1;
        skip_blanks(p);
        if (peek(p, 0) == '|' && peek(p, 1) != '|') {
            p->pos += peek(p, 1) == '&' ? 2 : 1;
            if ((rc = skip_space(p)) < 0)
                return rc;
            /* the next member reads a pipe only if a member before it ran something */
            p->pipe_pending = 0;
            for (size_t k = p->out->ncmds; k-- > start;)
                if (p->out->cmds[k].pipeline == id) {
                    p->pipe_pending = 1;
                    break;
                }
            continue;
        }
        break;
    }
    p->pipe_pending = 0;
    partition(p, start, id);
    p->cur_pipeline = outer;
    return 0;
}

static int parse_list(struct sp *p, enum term term)
{
    int rc;

    for (;;) {
        if ((rc = skip_space(p)) < 0)
            return rc;
        if (p->pos >= p->len) {
            if (term == TERM_PAREN)
                return err_set(p->err, ERR_INVALID, "unterminated '('");
            if (term == TERM_BRACE)
                return err_set(p->err, ERR_INVALID, "unterminated '{' group");
            if (term == TERM_CASE)
                return err_set(p->err, ERR_INVALID, "unterminated case");
            return 0;
        }
        char c = p->s[p->pos];
        if (c == ')') {
            if (term == TERM_PAREN)
                return 0;
            return err_set(p->err, ERR_INVALID, "unexpected ')'");
        }
        if (term == TERM_BRACE && at_close_brace(p))
            return 0;
        if (term == TERM_CASE && at_case_end(p))
            return 0;
        if (c == ';' || c == '&' || c == '|') {
            p->pos++; /* a stray separator (;; of case, a leading &&): skipped */
            continue;
        }
        size_t before = p->pos;
        if ((rc = parse_pipeline(p, term)) < 0)
            return rc;
        skip_blanks(p);
        if (p->pos < p->len) {
            c = p->s[p->pos];
            if ((c == '&' || c == '|') && peek(p, 1) == c)
                p->pos += 2;
            else if (c == '&' || (c == ';' && !(term == TERM_CASE && at_case_end(p))))
                p->pos++;
        }
        if (p->pos == before) /* no progress: a character the grammar does not take */
            return err_set(p->err, ERR_INVALID, "unexpected '%c'", p->s[p->pos]);
    }
}

int shell_parse(const char *src, size_t len, struct shell_list *out, struct err *err)
{
    struct sp p;
    int rc;

    memset(out, 0, sizeof(*out));
    if (len > SHELL_MAX_INPUT)
        return err_set(err, ERR_INVALID, "command longer than %zu bytes", SHELL_MAX_INPUT);
    if (memchr(src, '\0', len) != NULL)
        return err_set(err, ERR_INVALID, "command contains a NUL byte");
    memset(&p, 0, sizeof(p));
    p.s = src;
    p.len = len;
    p.out = out;
    p.err = err;
    for (int d = 0; d <= SHELL_MAX_DEPTH; d++)
        buf_init(&p.wbuf[d], SHELL_MAX_INPUT * 2);
    rc = parse_list(&p, TERM_NONE);
    for (int d = 0; d <= p.max_depth; d++) {
        buf_release(&p.wbuf[d]);
        free(p.vec[d].words);
        free(p.vec[d].redir);
    }
    out->mem = p.arena;
    if (rc < 0) {
        shell_list_free(out);
        return ERR_INVALID;
    }
    return 0;
}

void shell_list_free(struct shell_list *l)
{
    struct arena_chunk *c, *next;

    if (l == NULL)
        return;
    for (c = l->mem; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    free(l->cmds);
    memset(l, 0, sizeof(*l));
}
