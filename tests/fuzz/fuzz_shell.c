/*
 * fuzz_shell: the shell parser (src/policy/shell.c) and the destructive tier on untrusted
 * command lines (what an agent hands its Bash tool).
 *
 * For every input: shell_parse succeeds or fails with ERR_INVALID and a message; on success
 * every command is within the limits (depth, words), every word is a string, a command that
 * reads a pipe follows a member of its own pipeline, and shell_command_start stays in range.
 * tier_of_command must agree with the parser (TIER_UNPARSED exactly when it failed), name a
 * pattern of the table when destructive and keep its texts inside their arrays. A disagreement
 * aborts (a crash for libFuzzer, a failed replay in `make check`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/shell.h"
#include "policy/tier.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_list(const struct shell_list *l)
{
    size_t words = 0;

    for (size_t i = 0; i < l->ncmds; i++) {
        const struct shell_simple *c = &l->cmds[i];
        size_t k;
        if (c->depth < 0 || c->depth > SHELL_MAX_DEPTH)
            abort();
        if (c->nwords == 0 && c->nredir_out == 0)
            abort();
        for (size_t j = 0; j < c->nwords; j++)
            if (c->words[j].text == NULL || strlen(c->words[j].text) > SHELL_MAX_INPUT * 2)
                abort();
        for (size_t j = 0; j < c->nredir_out; j++)
            if (c->redir_out[j] == NULL)
                abort();
        if (c->pipe_from_prev && (i == 0 || l->cmds[i - 1].pipeline != c->pipeline))
            abort();
        k = shell_command_start(c->words, c->nwords);
        if (k > c->nwords)
            abort();
        if (k < c->nwords && shell_program(c->words[k].text) == NULL)
            abort();
        words += c->nwords + c->nredir_out;
    }
    if (words > SHELL_MAX_WORDS)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    struct shell_list l;
    struct tier_result r;
    struct err e = {0};
    int rc = shell_parse(s, size, &l, &e), trc;

    if (rc != 0 && (rc != ERR_INVALID || e.msg[0] == '\0' || l.ncmds != 0))
        abort();
    if (rc == 0)
        check_list(&l);
    shell_list_free(&l);

    trc = tier_of_command(s, size, &r);
    if ((trc != 0) != (rc != 0) || (trc != 0) != (r.level == TIER_UNPARSED))
        abort();
    if (memchr(r.pattern, '\0', sizeof(r.pattern)) == NULL ||
        memchr(r.command, '\0', sizeof(r.command)) == NULL)
        abort();
    if (r.level == TIER_DESTRUCTIVE) {
        size_t n;
        const char *const *ids = tier_pattern_ids(&n);
        int found = 0;
        for (size_t i = 0; i < n; i++)
            found |= strcmp(ids[i], r.pattern) == 0;
        if (!found)
            abort();
    } else if (r.pattern[0] != '\0') {
        abort();
    }
    return 0;
}
