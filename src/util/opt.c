/*
 * opt: the table-driven flag parser (see opt.h). Two passes over argv: the first only looks for
 * -h/--help before `--` (so the help wins over any error and shows untouched defaults), the
 * second sets values and gathers the arguments.
 */
#include <string.h>

#include "util/num.h"
#include "util/opt.h"
#include "util/text.h"
#include "util/banned.h"

#define OPT_NAMES_MAX 64

static int is_help(const char *a)
{
    return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0;
}

static const struct opt *find_long(const struct opt *t, const char *name, size_t len)
{
    for (; t->type != OPT_T_END; t++)
        if (strlen(t->name) == len && strncmp(t->name, name, len) == 0)
            return t;
    return NULL;
}

static const struct opt *find_alias(const struct opt *t, char c)
{
    for (; t->type != OPT_T_END; t++)
        if (t->alias && t->alias == c)
            return t;
    return NULL;
}

static int unknown(const struct opt *t, const char *arg, size_t len, struct err *e)
{
    const char *names[OPT_NAMES_MAX];
    char word[72], shown[TEXT_SHOWN_SIZE];
    size_t n = 0;

    for (; t->type != OPT_T_END && n < OPT_NAMES_MAX - 1; t++)
        names[n++] = t->name;
    names[n++] = "help";
    text_shown(arg, strlen(arg), shown);
    /* compare without the dashes and without "=value" */
    size_t skip = strncmp(arg, "--", 2) == 0 ? 2 : 1;
    size_t wl = len > skip ? len - skip : 0;
    if (wl >= sizeof(word))
        wl = sizeof(word) - 1;
    memcpy(word, arg + skip, wl);
    word[wl] = '\0';
    const char *s = wl ? text_suggest(word, names, n) : NULL;
    if (s)
        return err_set(e, ERR_INVALID, "unknown option '%s' (did you mean '--%s'?)", shown, s);
    return err_set(e, ERR_INVALID, "unknown option '%s'", shown);
}

static int set_value(const struct opt *o, const char *v, struct err *e)
{
    char shown[TEXT_SHOWN_SIZE];
    long long n;
    double d;

    text_shown(v, strlen(v), shown);
    switch (o->type) {
    case OPT_T_STRING:
        *(const char **)o->value = v;
        return 0;
    case OPT_T_INT:
    case OPT_T_SIZE:
        if (num_parse_ll(v, o->min, o->max, &n) < 0)
            return err_set(e, ERR_INVALID, "--%s: expected an integer in %lld..%lld, got '%s'",
                           o->name, o->min, o->max, shown);
        if (o->type == OPT_T_INT)
            *(int *)o->value = (int)n;
        else
            *(size_t *)o->value = (size_t)n;
        return 0;
    case OPT_T_U64:
        if (num_parse_u64(v, (uint64_t *)o->value) < 0)
            return err_set(e, ERR_INVALID,
                           "--%s: expected a decimal or 0x-hex 64-bit integer, got '%s'", o->name,
                           shown);
        return 0;
    case OPT_T_SECS:
        if (num_parse_double(v, (double)o->min / 1000.0, (double)o->max / 1000.0, &d) < 0)
            return err_set(e, ERR_INVALID, "--%s: expected seconds in %g..%g, got '%s'", o->name,
                           (double)o->min / 1000.0, (double)o->max / 1000.0, shown);
        n = (long long)(d * 1000.0 + 0.5);
        *(int *)o->value = (int)(n < o->min ? o->min : n > o->max ? o->max : n);
        return 0;
    case OPT_T_CALL:
        return o->cb(o, v, e);
    default:
        return err_set(e, ERR_INVALID, "--%s: bad table entry", o->name);
    }
}

int opt_parse(const struct opt_cmd *c, int argc, char **argv, int *nargs, struct err *e)
{
    int i, n = 0, after = !(c->flags & OPT_ARGS_AFTER_DASHDASH);

    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i];
        if (is_help(a))
            return OPT_HELP;
        /* a flag's value is not a flag: `--prompt -h` is a prompt */
        const struct opt *o = NULL;
        if (a[0] == '-' && a[1] == '-' && strchr(a, '=') == NULL)
            o = find_long(c->opts, a + 2, strlen(a + 2));
        else if (a[0] == '-' && a[1] != '\0' && a[1] != '-' && a[2] == '\0')
            o = find_alias(c->opts, a[1]);
        if (o && o->type != OPT_T_BOOL)
            i++;
    }
    for (i = 1; i < argc; i++) {
        char *a = argv[i];
        const struct opt *o;
        const char *v = NULL;
        char shown[TEXT_SHOWN_SIZE];

        if (strcmp(a, "--") == 0) {
            for (i++; i < argc; i++)
                argv[n++] = argv[i];
            break;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (!after) {
                text_shown(a, strlen(a), shown);
                return err_set(e, ERR_INVALID, "unexpected argument '%s' (arguments go after --)",
                               shown);
            }
            argv[n++] = a;
            continue;
        }
        if (a[1] == '-') {
            const char *eq = strchr(a + 2, '=');
            size_t len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
            o = find_long(c->opts, a + 2, len);
            if (o == NULL)
                return unknown(c->opts, a, len + 2, e);
            if (eq)
                v = eq + 1;
        } else {
            o = a[2] == '\0' ? find_alias(c->opts, a[1]) : NULL;
            if (o == NULL)
                return unknown(c->opts, a, strlen(a), e);
        }
        if (o->given)
            *o->given = 1;
        if (o->type == OPT_T_BOOL) {
            if (v)
                return err_set(e, ERR_INVALID, "--%s takes no value", o->name);
            *(int *)o->value = 1;
            continue;
        }
        if (v == NULL) {
            if (i + 1 >= argc)
                return err_set(e, ERR_INVALID, "--%s needs a value (%s)", o->name,
                               o->argh ? o->argh : "VALUE");
            v = argv[++i];
        }
        int rc = set_value(o, v, e);
        if (rc < 0)
            return rc;
    }
    if (n < argc)
        argv[n] = NULL;
    if (n < c->min_args && (c->flags & OPT_ARGS_AFTER_DASHDASH))
        return err_set(e, ERR_INVALID, "no command (give it after --)");
    if (n < c->min_args)
        return err_set(e, ERR_INVALID, "%s",
                       c->min_args == 1 && n == 0 ? "missing argument" : "too few arguments");
    if (c->max_args >= 0 && n > c->max_args) {
        char shown[TEXT_SHOWN_SIZE];
        text_shown(argv[c->max_args], strlen(argv[c->max_args]), shown);
        return err_set(e, ERR_INVALID, "unexpected argument '%s'", shown);
    }
    *nargs = n;
    return 0;
}

/* The default of o as text into out (empty: none to show). */
static void default_text(const struct opt *o, char *out, size_t size)
{
    out[0] = '\0';
    if (o->def) {
        snprintf(out, size, "%s", o->def);
        return;
    }
    /* an integer below its range is "not set" (a required flag, an optional fd): no default */
    switch (o->type) {
    case OPT_T_STRING:
        if (*(const char **)o->value)
            snprintf(out, size, "%s", *(const char **)o->value);
        break;
    case OPT_T_INT:
        if (*(int *)o->value >= o->min)
            snprintf(out, size, "%d", *(int *)o->value);
        break;
    case OPT_T_SIZE:
        if ((long long)*(size_t *)o->value >= o->min)
            snprintf(out, size, "%zu", *(size_t *)o->value);
        break;
    case OPT_T_SECS:
        if (*(int *)o->value >= o->min)
            snprintf(out, size, "%g", *(int *)o->value / 1000.0);
        break;
    default:
        break;
    }
}

void opt_help(const struct opt_cmd *c, FILE *f)
{
    const struct opt *o;
    char left[64], def[128];

    fprintf(f, "usage: faultline %s%s%s\n\n%s\noptions:\n", c->name, *c->usage ? " " : "", c->usage,
            c->about);
    for (o = c->opts; o->type != OPT_T_END; o++) {
        if (o->alias)
            snprintf(left, sizeof(left), "-%c, --%s%s%s", o->alias, o->name, o->argh ? " " : "",
                     o->argh ? o->argh : "");
        else
            snprintf(left, sizeof(left), "--%s%s%s", o->name, o->argh ? " " : "",
                     o->argh ? o->argh : "");
        fprintf(f, "  %-26s %s", left, o->help);
        default_text(o, def, sizeof(def));
        if (o->type == OPT_T_INT || o->type == OPT_T_SIZE)
            fprintf(f, " (%lld..%lld%s%s)", o->min, o->max, def[0] ? ", default " : "", def);
        else if (o->type == OPT_T_SECS)
            fprintf(f, " (%g..%g s%s%s)", (double)o->min / 1000.0, (double)o->max / 1000.0,
                    def[0] ? ", default " : "", def);
        else if (def[0])
            fprintf(f, " (default %s)", def);
        fputc('\n', f);
    }
    fprintf(f, "  %-26s %s\n", "-h, --help", "show this help");
    fprintf(f, "\nexample:\n  faultline %s\n\nsee %s\n", c->example, c->doc);
}

void opt_usage_error(const struct opt_cmd *c, const char *msg)
{
    fprintf(stderr, "faultline %s: %s\nusage: faultline %s%s%s\n(faultline %s --help for more)\n",
            c->name, msg, c->name, *c->usage ? " " : "", c->usage, c->name);
}
