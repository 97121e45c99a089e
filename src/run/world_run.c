/*
 * world_run: see world_run.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/replay.h"
#include "run/world_run.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

#define PATH_MAX_ 4096

int world_run_config(const json_t *world, const char *home, json_t *servers, struct err *e)
{
    const char *name = json_string_value(json_object_get(world, "name"));
    char path[PATH_MAX_];
    char *text;
    int rc;

    if (name == NULL)
        name = "world";
    if (json_object_get(servers, name))
        return err_set(e, ERR_INVALID, "the world's server name '%s' is also an MCP server", name);
    text = json_dumps(world, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    if (text == NULL)
        return err_set(e, ERR_IO, "cannot serialize the world");
    snprintf(path, sizeof(path), "%s/world.json", home);
    rc = fs_write_file(path, text, strlen(text), e);
    free(text);
    if (rc < 0)
        return rc;
    json_object_set_new(servers, name,
                        json_pack("{s:s,s:s,s:[s,s,s,s]}", "type", "stdio", "command",
                                  SANDBOX_BINDIR "/faultline", "args", "world", WORLD_RUN_FILE,
                                  "--ledger", WORLD_RUN_LEDGER));
    return 0;
}

int world_run_collect(const char *home, const char *repdir, int *copied, struct err *e)
{
    struct buf b = BUF_INIT;
    struct err re = {0};
    char path[PATH_MAX_];
    int rc;

    *copied = 0;
    if (!fs_exists_beneath(home, "ledger.json"))
        return 0;
    rc = fs_read_file_beneath(home, "ledger.json", WORLD_RUN_LEDGER_MAX, &b, &re);
    if (rc < 0) {
        rc = err_set(e, rc, "the world's ledger: %s", re.msg);
        goto done;
    }
    snprintf(path, sizeof(path), "%s/ledger.json", repdir);
    if ((rc = fs_write_file(path, b.data, b.len, e)) == 0) {
        *copied = 1;
        rc = replay_record(repdir, e); /* what a replay checks the folder against */
    }
done:
    buf_release(&b);
    return rc;
}
