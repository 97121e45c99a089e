/*
 * tier: minimal first version (the pattern table follows).
 */
#include <stdio.h>
#include <string.h>

#include "policy/shell.h"
#include "policy/tier.h"
#include "util/banned.h"

static const char *const tier_ids[] = {"rm-recursive-root"};

int tier_of_command(const char *cmd, size_t len, struct tier_result *res)
{
    struct shell_list l;
    struct err e = {0};
    int rc;

    memset(res, 0, sizeof(*res));
    rc = shell_parse(cmd, len, &l, &e);
    if (rc < 0) {
        res->level = TIER_UNPARSED;
        snprintf(res->command, sizeof(res->command), "%.150s", e.msg);
        shell_list_free(&l);
        return ERR_INVALID;
    }
    shell_list_free(&l);
    return 0;
}

const char *const *tier_pattern_ids(size_t *n)
{
    *n = sizeof(tier_ids) / sizeof(tier_ids[0]);
    return tier_ids;
}
