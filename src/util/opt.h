/*
 * opt: table-driven command-line flags (git's parse-options), one parser for every subcommand.
 *
 * A command describes itself with a struct opt_cmd: its name, usage line, a paragraph, a table of
 * struct opt ending with OPT_T_END, an example and its docs page. opt_parse walks argv against the
 * table: `--name=value` and `--name value` both work, `-x` for a one-letter alias, `--` ends the
 * flags, a lone `-` is an argument (stdin, where the command says so), flags and arguments may
 * be mixed (unless OPT_ARGS_AFTER_DASHDASH). An unknown flag gets one wording everywhere, with a
 * "did you mean" from text_suggest. Integer flags go through util/num with the range in the
 * table. `-h`/`--help` anywhere before `--` wins over everything else, so the help shows the
 * defaults as the table's values held them before parsing.
 *
 * Defaults are stated once: the value a pointer holds before opt_parse, set by the command or
 * by the module's init function (controller_config_init, mcp_relay_opts_init), never a text
 * copy of it. A string's .def text is only for what no value can say ("stderr" for a NULL
 * log file, "$FAULTLINE_PLAN"). opt_help prints both the same way.
 */
#ifndef FAULTLINE_UTIL_OPT_H
#define FAULTLINE_UTIL_OPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/err.h"

enum opt_type {
    OPT_T_END = 0, /* ends a table */
    OPT_T_BOOL,    /* int *value set to 1; takes no value */
    OPT_T_STRING,  /* const char **value = the argument (borrowed from argv) */
    OPT_T_INT,     /* int *value, an integer in [min, max] */
    OPT_T_SIZE,    /* size_t *value, an integer in [min, max] */
    OPT_T_U64,     /* uint64_t *value, decimal or 0x-hex (num_parse_u64) */
    OPT_T_SECS,    /* int *value in milliseconds; the argument is seconds (a decimal), the
                    range [min, max] is in milliseconds */
    OPT_T_CALL     /* cb(opt, argument, e); value is the callback's context */
};

struct opt;
/* A flag with its own handling (repeatable, NAME=VALUE, a file to read): 0, or a negative ERR_*
 * with e set; opt_parse then stops and returns it. */
typedef int (*opt_cb)(const struct opt *o, const char *arg, struct err *e);

struct opt {
    enum opt_type type;
    const char *name; /* long name without the dashes */
    char alias;       /* a one-letter alias (-q), or 0 */
    const char *argh; /* the value's placeholder in the help ("FILE"); NULL for OPT_T_BOOL */
    const char *help; /* one line, lowercase */
    void *value;
    long long min, max; /* OPT_T_INT, OPT_T_SIZE, OPT_T_SECS */
    const char *def;    /* the default as shown, when *value is not it; NULL: shown from *value */
    int *given;         /* when not NULL, set to 1 when the flag is given */
    opt_cb cb;          /* OPT_T_CALL */
};

/* Table entries (designated, so an added field needs no edit here). A NULL def shows *value. */
#define OPT_BOOL(n, a, v, h)                                                                       \
    {                                                                                              \
        .type = OPT_T_BOOL, .name = (n), .alias = (a), .help = (h), .value = (v)                   \
    }
#define OPT_STRING(n, ah, v, d, h)                                                                 \
    {                                                                                              \
        .type = OPT_T_STRING, .name = (n), .argh = (ah), .help = (h), .value = (v), .def = (d)     \
    }
#define OPT_INT(n, ah, v, lo, hi, h)                                                               \
    {                                                                                              \
        .type = OPT_T_INT, .name = (n), .argh = (ah), .help = (h), .value = (v), .min = (lo),      \
        .max = (hi)                                                                                \
    }
#define OPT_SIZE(n, ah, v, lo, hi, h)                                                              \
    {                                                                                              \
        .type = OPT_T_SIZE, .name = (n), .argh = (ah), .help = (h), .value = (v), .min = (lo),     \
        .max = (hi)                                                                                \
    }
/* With the default shown from .def: a module fills it in later (the value holds "unset").
 * Prefer an init function that sets the value, so the default is written once. */
#define OPT_INT_D(n, ah, v, lo, hi, d, h)                                                          \
    {                                                                                              \
        .type = OPT_T_INT, .name = (n), .argh = (ah), .help = (h), .value = (v), .min = (lo),      \
        .max = (hi), .def = (d)                                                                    \
    }
#define OPT_SIZE_D(n, ah, v, lo, hi, d, h)                                                         \
    {                                                                                              \
        .type = OPT_T_SIZE, .name = (n), .argh = (ah), .help = (h), .value = (v), .min = (lo),     \
        .max = (hi), .def = (d)                                                                    \
    }
#define OPT_U64(n, ah, v, g, h)                                                                    \
    {                                                                                              \
        .type = OPT_T_U64, .name = (n), .argh = (ah), .help = (h), .value = (v), .given = (g)      \
    }
#define OPT_SECS(n, ah, v, lo, hi, h)                                                              \
    {                                                                                              \
        .type = OPT_T_SECS, .name = (n), .argh = (ah), .help = (h), .value = (v), .min = (lo),     \
        .max = (hi)                                                                                \
    }
#define OPT_CALL(n, ah, f, ctx, h)                                                                 \
    {                                                                                              \
        .type = OPT_T_CALL, .name = (n), .argh = (ah), .help = (h), .value = (ctx), .cb = (f)      \
    }
#define OPT_END()                                                                                  \
    {                                                                                              \
        .type = OPT_T_END                                                                          \
    }

/* opt_cmd.flags */
#define OPT_ARGS_AFTER_DASHDASH                                                                    \
    1 /* arguments only after `--`, which then ends parsing: the                                   \
         rest (flags or not) belongs to the command (mcp's server) */

struct opt_cmd {
    const char *name;  /* "plan": messages read "faultline plan: ..." */
    const char *usage; /* after "usage: faultline NAME ": "EXPERIMENT --rep N [--seed S]" */
    const char *about; /* what the command does, a few lines ending in '\n' */
    const struct opt *opts;
    int min_args, max_args; /* how many arguments; max_args -1: any number */
    const char *example;    /* one command line, without "faultline " */
    const char *doc;        /* the docs page: "docs/plan.md" */
    unsigned flags;
};

/* opt_parse's result other than an error: the help was asked for (print opt_help, exit 0). */
#define OPT_HELP 1

/* Parses argv[1..argc) (argv[0] is the command name) against c->opts, setting the values. The
 * arguments that are not flags are moved, in order, to argv[0..*nargs), argv[*nargs] = NULL
 * (argv holds argc + 1 pointers, as main's does). Returns 0, OPT_HELP, or
 * ERR_INVALID with e->msg a usage message (unknown flag with its did-you-mean, a missing or
 * extra value, a number out of range, too few or too many arguments), or the error of an
 * OPT_T_CALL callback. On OPT_HELP nothing was set. */
int opt_parse(const struct opt_cmd *c, int argc, char **argv, int *nargs, struct err *e);

/* The full help: usage, about, each flag with its range and default, the example and the docs
 * page. Defaults are read from the values: call it before opt_parse or on its OPT_HELP. */
void opt_help(const struct opt_cmd *c, FILE *f);

/* A usage error: "faultline NAME: MSG", the usage line and a pointer to --help, on stderr. */
void opt_usage_error(const struct opt_cmd *c, const char *msg);

#endif
