/*
 * fuzz_policy: policy files (src/policy/policy.c) on untrusted text, and the decision of the
 * loaded policy for a few calls (a command, a path, an MCP tool, a redaction) so that every
 * rule that loads is also matched. Nothing may crash, leak or hang whatever the file says.
 */
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"
#include "util/buf.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const calls[][2] = {
        {"Bash", "{\"command\":\"cd /x && sudo git push --force origin main > out.txt\"}"},
        {"Edit", "{\"file_path\":\"../secrets/../../etc/passwd\"}"},
        {"apply_patch", "{\"input\":\"*** Begin Patch\\n*** Add File: a/b\\n*** End Patch\"}"},
        {"mcp__github__create_issue", "{\"title\":\"token ghp_abcdefghijklmnopqrstuvwxyz0123\"}"},
        {"shell", "{\"command\":[\"bash\",\"-lc\",\"rm -rf / 'x\"]}"},
    };
    struct policy *p = NULL;
    struct buf diags = BUF_INIT;
    struct err e = {0};

    if (policy_parse(&p, "fuzz.yaml", (const char *)data, size, &diags, &e) == 0) {
        for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
            json_t *in = json_loads(calls[i][1], 0, NULL);
            struct policy_call c = {.tool = calls[i][0], .input = in, .workdir = "/work"};
            struct policy_decision d;
            policy_decide(p, &c, &d);
            json_decref(policy_decision_json(&d));
            policy_decision_release(&d);
            json_decref(in);
        }
        policy_free(p);
    }
    buf_release(&diags);
    return 0;
}
