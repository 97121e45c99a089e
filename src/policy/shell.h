/*
 * shell: a POSIX-ish lexer and parser for one shell command line, for policy decisions.
 *
 * It never runs or expands anything: it splits a command line into simple commands the way a
 * shell would (words after quote removal, assignments and redirections taken out), so that a
 * policy can look at a program and its arguments rather than at a substring. What it handles:
 * words and quoting ('...', "...", backslash, $'...'), comments, leading assignments
 * (FOO=1 cmd), redirections (> >> 2> &> < <<< and N>&M), the operators && || ; | & and newline,
 * subshells ( ... ), groups { ...; }, command substitution $( ... ) and `...` (their content is
 * parsed as nested commands), and the string argument of sh/bash/dash/zsh/ksh -c (bash -lc,
 * sh -ec, ...) re-parsed as nested commands. Every nested command is flattened into the one
 * list, in order of appearance.
 *
 * Limits: input over SHELL_MAX_INPUT bytes, nesting deeper than SHELL_MAX_DEPTH, more than
 * SHELL_MAX_WORDS words in total: ERR_INVALID with a message. An unterminated quote,
 * substitution, subshell or group is ERR_INVALID too.
 */
#ifndef FAULTLINE_POLICY_SHELL_H
#define FAULTLINE_POLICY_SHELL_H

#include <stddef.h>

#include "util/err.h"

#define SHELL_MAX_INPUT ((size_t)64 << 10)
#define SHELL_MAX_DEPTH 16
#define SHELL_MAX_WORDS 4096

struct shell_word {
    char *text;                 /* after quote removal; NUL-terminated */
    unsigned quoted : 1;        /* some part of it was quoted */
    unsigned has_expansion : 1; /* $VAR, ${...}, $(...), `...` left unexpanded as written */
};

struct shell_simple {
    struct shell_word *words; /* argv, assignments and redirections removed */
    size_t nwords;
    char **redir_out; /* targets of > >> >| &> (and 1> 2>), after quote removal */
    size_t nredir_out;
    int pipe_from_prev;      /* this command reads the previous one's stdout (cmd1 | cmd2) */
    int depth;               /* 0 at top level; +1 per subshell, group, substitution, sh -c ... */
    unsigned pipeline;       /* the pipeline it belongs to: the same number for every command of
                                one pipeline (those of a ( ) or { } element included), 1, 2, ... */
    const char *in_function; /* the function whose body holds it (NAME() { ...; }), or NULL;
                                one pointer per definition */
};

struct shell_list {
    struct shell_simple *cmds; /* every simple command in order, nested ones flattened in: the
                                  members of a pipeline are consecutive (cmds[i - 1] is what
                                  cmds[i] reads when pipe_from_prev), nested commands follow
                                  the pipeline that holds them */
    size_t ncmds;
    void *mem; /* the arena that holds every text and array above (private) */
};

/*
 * Parses src[0..len) (need not be NUL-terminated) into out, which the caller provides and
 * frees with shell_list_free (also after an error: out is then empty). Returns 0, or
 * ERR_INVALID with a message in err (unterminated quote, too deep, too long, too many words).
 */
int shell_parse(const char *src, size_t len, struct shell_list *out, struct err *err);
/* Frees what shell_parse stored in l; l is then empty. NULL is a no-op. */
void shell_list_free(struct shell_list *l);

/*
 * The index of the word that names the program a simple command runs, behind the prefixes
 * that run another command with their options: sudo, doas, env (and its VAR=x), nice, ionice,
 * timeout (and its DURATION), nohup, command, builtin, exec, stdbuf, xargs, time. n when there
 * is none (`sudo -v`, `command -v rm`, `env` alone).
 */
size_t shell_command_start(const struct shell_word *w, size_t n);
/* The program name of a command word: the basename of an absolute path (/usr/bin/rm -> rm),
 * other words as they are. Borrowed from word. */
const char *shell_program(const char *word);

#endif
