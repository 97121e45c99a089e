/*
 * shell: minimal first version (words split on blanks); the full parser follows.
 */
#include <stdlib.h>
#include <string.h>

#include "policy/shell.h"
#include "util/buf.h"
#include "util/banned.h"

int shell_parse(const char *src, size_t len, struct shell_list *out, struct err *err)
{
    struct shell_simple *c;
    size_t i = 0;

    memset(out, 0, sizeof(*out));
    if (len > SHELL_MAX_INPUT)
        return err_set(err, ERR_INVALID, "command longer than %zu bytes", SHELL_MAX_INPUT);
    out->cmds = xcalloc(1, sizeof(*out->cmds));
    out->ncmds = 1;
    c = &out->cmds[0];
    c->words = xcalloc(len / 2 + 1, sizeof(*c->words));
    while (i < len) {
        size_t s;
        while (i < len && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n'))
            i++;
        s = i;
        while (i < len && src[i] != ' ' && src[i] != '\t' && src[i] != '\n')
            i++;
        if (i > s)
            c->words[c->nwords++].text = xstrndup(src + s, i - s);
    }
    return 0;
}

void shell_list_free(struct shell_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->ncmds; i++) {
        for (size_t j = 0; j < l->cmds[i].nwords; j++)
            free(l->cmds[i].words[j].text);
        free(l->cmds[i].words);
        for (size_t j = 0; j < l->cmds[i].nredir_out; j++)
            free(l->cmds[i].redir_out[j]);
        free(l->cmds[i].redir_out);
    }
    free(l->cmds);
    memset(l, 0, sizeof(*l));
}
