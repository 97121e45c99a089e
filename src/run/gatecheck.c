/*
 * gatecheck: see gatecheck.h. Reads at most the carried hook settings files (each bounded by
 * CARRY_FILE_MAX, as carry does) and stats two policy files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy/policy.h"
#include "run/carry.h"
#include "run/gatecheck.h"
#include "util/fs.h"
#include "util/banned.h"

static const char *const settings[] = {".claude/settings.json", ".claude/settings.local.json",
                                       ".codex/hooks.json", ".cursor/hooks.json"};
static const char *const gate_words[] = {"gate claude-code", "gate codex", "gate cursor"};

static int names_a_gate(const char *project, const char *rel)
{
    struct buf text = BUF_INIT;
    struct err e = {0};
    char path[4096];
    int found = 0;

    snprintf(path, sizeof(path), "%s/%s", project, rel);
    if (fs_read_file(path, CARRY_FILE_MAX, &text, &e) == 0)
        for (size_t i = 0; i < sizeof(gate_words) / sizeof(gate_words[0]) && !found; i++)
            found = memmem(text.data, text.len, gate_words[i], strlen(gate_words[i])) != NULL;
    buf_release(&text);
    return found;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int gatecheck_project(const char *project, const char *user_policy, struct buf *out)
{
    char path[4096];
    int gates = 0;

    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]) && !gates; i++)
        gates = names_a_gate(project, settings[i]);
    if (!gates) {
        buf_adds(out, "the project has no gates: no hook settings (.claude/settings.json, "
                      ".codex/hooks.json, .cursor/hooks.json) run `faultline gate`, so a "
                      "harness in the sandbox runs its built-in tools ungoverned (`faultline "
                      "connect` writes them)\n");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/%s", project, POLICY_PROJECT_FILE);
    if (!exists(path) && !(user_policy && *user_policy && exists(user_policy))) {
        buf_addf(out,
                 "the gates have no policy: neither %s nor the user's policy file (%s) exists, "
                 "so only the default policy (the destructive-command tier) applies\n",
                 POLICY_PROJECT_FILE, user_policy && *user_policy ? user_policy : "none");
        return 1;
    }
    return 0;
}

int gatecheck_warnings(const char *project, struct buf *out)
{
    struct buf user = BUF_INIT;
    const char *u = getenv("FAULTLINE_USER_POLICY"), *home = getenv("HOME");
    int n;

    if ((u == NULL || *u == '\0') && home && *home) {
        buf_addf(&user, "%s/%s", home, POLICY_USER_FILE);
        u = user.data;
    }
    n = gatecheck_project(project, u, out);
    buf_release(&user);
    return n;
}
