/*
 * cmd_gate_explain: `faultline gate explain [--json] [--policy FILE]... -- COMMAND...` and
 * `faultline gate explain --tool NAME --input JSON`: the decision the gates would take for one
 * call (effect, tier, the rule that decided, a monitor rule that matched, the reason, the
 * redacted input), for people writing policies and for tests. Dispatched by cmd_gate.
 *
 * The call: COMMAND... is a Bash call (one argument: the command line as written; several:
 * the words of one command, quoted as a shell would need them); --tool and --input name any
 * other (an Edit, an MCP tool) or replace the tool of a command. The policy: each --policy
 * FILE in order (then the builtin default); without one, the gates' files: the project's
 * .faultline/policy.yaml under --project (default: the working directory), then the user's
 * ($FAULTLINE_USER_POLICY, else ~/.config/faultline/policy.yaml), each skipped when missing.
 * Exit: 0 printed, 1 a file cannot be read or stdout cannot be written, 2 an invalid policy
 * file (FILE:LINE:COL on stderr) or --input, 64 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "policy/policy.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/banned.h"

#define EXPLAIN_POLICIES_MAX 16
#define EXPLAIN_INPUT_MAX ((size_t)1 << 20)

struct explain_files {
    const char *v[EXPLAIN_POLICIES_MAX];
    size_t n;
};

static int on_policy(const struct opt *o, const char *arg, struct err *e)
{
    struct explain_files *f = o->value;
    if (f->n == EXPLAIN_POLICIES_MAX)
        return err_set(e, ERR_INVALID, "at most %d --policy files", EXPLAIN_POLICIES_MAX);
    f->v[f->n++] = arg;
    return 0;
}

static void print_text(const struct policy_decision *d, const char *tool)
{
    printf("decision: %s\n", policy_effect_name(d->effect));
    printf("tool:     %s\n", tool);
    if (d->tier.level == TIER_DESTRUCTIVE)
        printf("tier:     destructive (%s: %s)\n", d->tier.pattern, d->tier.command);
    else if (d->tier.level == TIER_UNPARSED)
        printf("tier:     unparsed (%s)\n", d->tier.command);
    else
        printf("tier:     normal\n");
    if (!d->from_default)
        printf("rule:     %s (enforce)\n", d->rule);
    else
        printf("rule:     none: the default policy decided\n");
    if (d->monitored)
        printf("monitor:  %s (would %s)\n", d->monitor_rule, policy_effect_name(d->monitor_effect));
    if (*d->reason)
        printf("reason:   %s\n", d->reason);
    if (d->redacted_input) {
        char *s = json_dumps(d->redacted_input, JSON_COMPACT | JSON_SORT_KEYS);
        printf("input:    %s\n", s ? s : "?");
        free(s);
    }
}

int cmd_gate_explain(int argc, char **argv)
{
    struct explain_files files = {0};
    const char *tool = NULL, *input = NULL, *server = NULL, *workdir = NULL, *project = ".";
    int json = 0, nargs, rc;
    const struct opt opts[] = {
        OPT_BOOL("json", 0, &json, "print the decision as one JSON object"),
        OPT_CALL("policy", "FILE", on_policy, &files,
                 "a policy file, in order (repeatable); none: the project's and the user's"),
        OPT_STRING("project", "DIR", &project, NULL,
                   "the project whose .faultline/policy.yaml applies (without --policy)"),
        OPT_STRING("tool", "NAME", &tool, NULL,
                   "the tool called (default Bash with a COMMAND): Edit, mcp__github__x ..."),
        OPT_STRING("input", "JSON", &input, NULL, "the tool input object"),
        OPT_STRING("mcp-server", "NAME", &server, NULL, "the MCP server of the tool"),
        OPT_STRING("workdir", "DIR", &workdir, NULL,
                   "what relative paths are resolved against (default /work)"),
        OPT_END(),
    };
    const struct opt_cmd cmd = {
        .name = "gate explain",
        .usage = "[--json] [--policy FILE]... [--tool NAME --input JSON] [-- COMMAND...]",
        .about = "Prints the decision the gates would take for one call: the effect (allow,\n"
                 "block, hold, redact), the destructive tier, the rule that decided (or the\n"
                 "default), a monitor rule that matched, the reason and the redacted input.\n"
                 "COMMAND... is a Bash call: one argument is the command line as written.\n",
        .opts = opts,
        .min_args = 0,
        .max_args = -1,
        .example = "gate explain --policy .faultline/policy.yaml -- 'git push --force'",
        .doc = "docs/gate.md",
        .flags = OPT_ARGS_AFTER_DASHDASH,
    };
    struct policy *p = NULL;
    struct policy_decision d;
    struct buf diags = BUF_INIT, cmdline = BUF_INIT, proj = BUF_INIT, user = BUF_INIT;
    struct err e = {0};
    json_t *in = NULL;
    const char *paths[2];
    const char *const *load = files.v;
    size_t nload = 0;
    int ret = EXIT_FAIL;

    memset(&d, 0, sizeof(d));
    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    if (nargs == 0 && (tool == NULL || input == NULL)) {
        opt_usage_error(&cmd, "give a COMMAND after --, or --tool and --input");
        return EXIT_USAGE;
    }
    if (input) {
        json_error_t je;
        if (strlen(input) > EXPLAIN_INPUT_MAX) {
            fprintf(stderr, "faultline gate explain: --input is over %zu bytes\n",
                    EXPLAIN_INPUT_MAX);
            return EXIT_INVALID;
        }
        in = json_loads(input, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(in)) {
            if (in)
                fprintf(stderr, "faultline gate explain: --input: not a JSON object\n");
            else
                fprintf(stderr, "faultline gate explain: --input:%d:%d: %s\n", je.line, je.column,
                        je.text);
            json_decref(in);
            return EXIT_INVALID;
        }
    } else {
        in = json_object();
    }
    if (nargs > 0) {
        json_t *words = json_array();
        for (int i = 0; i < nargs; i++)
            json_array_append_new(words, json_string(argv[i]));
        if (nargs == 1) {
            json_object_set(in, "command", json_array_get(words, 0));
        } else {
            struct policy_call c = {.input = json_pack("{s:O}", "command", words)};
            const char *line = policy_call_command(&c, &cmdline);
            json_object_set_new(in, "command", json_string(line ? line : ""));
            json_decref((json_t *)c.input);
        }
        json_decref(words);
        if (tool == NULL)
            tool = "Bash";
    }
    if (files.n) {
        nload = files.n;
    } else {
        const char *up = getenv("FAULTLINE_USER_POLICY"), *home = getenv("HOME");
        buf_addf(&proj, "%s/%s", project, POLICY_PROJECT_FILE);
        paths[nload++] = proj.data;
        if (up && *up)
            paths[nload++] = up;
        else if (home && *home) {
            buf_addf(&user, "%s/%s", home, POLICY_USER_FILE);
            paths[nload++] = user.data;
        }
        load = paths;
    }
    rc = policy_load_diags(&p, load, nload, &diags, &e);
    if (rc < 0) {
        fputs(diags.data, stderr);
        if (diags.len == 0)
            fprintf(stderr, "faultline gate explain: %s\n", e.msg);
        ret = rc == ERR_INVALID || rc == ERR_LIMIT ? EXIT_INVALID : EXIT_FAIL;
        goto out;
    }
    struct policy_call call = {
        .tool = tool, .input = in, .mcp_server = server, .workdir = workdir ? workdir : "/work"};
    policy_decide(p, &call, &d);
    if (json) {
        json_t *j = policy_decision_json(&d);
        json_object_set_new(j, "tool", json_string(tool));
        char *s = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (s == NULL) {
            fprintf(stderr, "faultline gate explain: cannot render the decision\n");
            goto out;
        }
        printf("%s\n", s);
        free(s);
    } else {
        print_text(&d, tool);
    }
    ret = cli_stdout_status("gate explain");
out:
    policy_decision_release(&d);
    policy_free(p);
    json_decref(in);
    buf_release(&diags);
    buf_release(&cmdline);
    buf_release(&proj);
    buf_release(&user);
    return ret;
}
