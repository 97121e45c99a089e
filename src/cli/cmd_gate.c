/*
 * cmd_gate: `faultline gate claude-code | codex | cursor` (a harness's pre-tool hook: the hook
 * input on stdin, the answer on stdout / stderr and in the exit code, docs/gate.md), and
 * `faultline gate explain ...` (cmd_gate_explain, the policy's own command).
 *
 * The environment: FAULTLINE_CONTROL_URL (the controller: it records the decision and may
 * inject a fault into an allowed call), FAULTLINE_USER_POLICY (the user's policy file; default
 * ~/.config/faultline/policy.yaml), CLAUDE_PROJECT_DIR (claude-code: the project, whose
 * .faultline/policy.yaml applies; otherwise the git top-level of the input's cwd).
 *
 * stdin is read to its end, at most GATE_INPUT_MAX + 1 bytes (more is oversized input) and for
 * at most GATE_STDIN_MS (a harness that never closes it gets the fail-safe answer for what
 * came). Exit codes (exitcodes.c): 0 answered (stdout says what), 2 denied through the exit
 * code (fail-safe answer to unreadable input), 64 usage.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "gate/gate.h"
#include "policy/policy.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define GATE_STDIN_MS 10000

/* Reads fd to its end into b, at most max bytes, within ms. 0 at the end, ERR_LIMIT at max,
 * ERR_TIMEOUT or ERR_IO otherwise: what was read stays in b. */
static int read_input(int fd, size_t max, int ms, struct buf *b)
{
    int64_t deadline = time_mono_ns() / 1000000 + ms;
    char chunk[65536];

    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - time_mono_ns() / 1000000;
        ssize_t n;
        if (left <= 0)
            return ERR_TIMEOUT;
        if (poll(&p, 1, (int)left) < 0) {
            if (errno == EINTR)
                continue;
            return ERR_IO;
        }
        if (p.revents == 0)
            continue;
        n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return ERR_IO;
        if (n == 0)
            return 0;
        if (b->len + (size_t)n > max) {
            buf_add(b, chunk, max - b->len);
            return ERR_LIMIT;
        }
        buf_add(b, chunk, (size_t)n);
    }
}

static int gate_decide(const char *harness_name)
{
    struct gate_opts o = {0};
    struct gate_result r;
    struct buf in = BUF_INIT, user = BUF_INIT;
    const char *home = getenv("HOME");
    int rc;

    if (gate_harness_find(harness_name, &o.harness) < 0) {
        fprintf(stderr, "faultline gate: unknown harness '%s' (claude-code, codex, cursor)\n",
                harness_name);
        return EXIT_USAGE;
    }
    o.control_url = getenv("FAULTLINE_CONTROL_URL");
    o.user_policy = getenv("FAULTLINE_USER_POLICY");
    if ((o.user_policy == NULL || *o.user_policy == '\0') && home && *home) {
        buf_addf(&user, "%s/%s", home, POLICY_USER_FILE);
        o.user_policy = user.data;
    }
    if (o.harness == GATE_CLAUDE_CODE)
        o.project_dir = getenv("CLAUDE_PROJECT_DIR");
    rc = read_input(STDIN_FILENO, GATE_INPUT_MAX + 1, GATE_STDIN_MS, &in);
    if (rc == ERR_TIMEOUT || rc == ERR_IO)
        fprintf(stderr, "faultline gate: stdin %s after %zu bytes\n",
                rc == ERR_TIMEOUT ? "not closed within 10 s" : "could not be read", in.len);
    gate_result_init(&r);
    gate_run(&o, in.data, in.len, &r);
    fs_write_all(STDOUT_FILENO, r.out.data, r.out.len);
    fs_write_all(STDERR_FILENO, r.err.data, r.err.len);
    rc = r.exit_code;
    gate_result_release(&r);
    buf_release(&in);
    buf_release(&user);
    return rc;
}

int cmd_gate(int argc, char **argv)
{
    int nargs, rc;
    const struct opt opts[] = {OPT_END()};
    const struct opt_cmd cmd = {
        .name = "gate",
        .usage = "claude-code | codex | cursor | explain ...",
        .about = "A harness's pre-tool hook: reads the hook input on stdin, decides the call with\n"
                 "the policy (the project's .faultline/policy.yaml, then $FAULTLINE_USER_POLICY or\n"
                 "~/.config/faultline/policy.yaml; the default policy blocks destructive commands)\n"
                 "and, with $FAULTLINE_CONTROL_URL, the controller, and answers in the harness's\n"
                 "format. `gate explain --help`: the decision for a command, for policy writers.\n",
        .opts = opts,
        .min_args = 1,
        .max_args = 1,
        .example = "gate claude-code <hook-input.json",
        .doc = "docs/gate.md",
    };

    if (argc >= 2 && strcmp(argv[1], "explain") == 0) {
        if (cmd_gate_explain == NULL) {
            fprintf(stderr, "faultline: 'gate explain' is not available in this build\n");
            return EXIT_FAIL;
        }
        return cmd_gate_explain(argc - 1, argv + 1);
    }
    if ((rc = cli_parse(&cmd, argc, argv, &nargs)) >= 0)
        return rc;
    return gate_decide(argv[0]);
}
