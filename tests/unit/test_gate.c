/* Unit tests for src/gate: each harness's hook input (hook.h), the answers in each harness's
 * format, the lax command recovery of unreadable input, and gate_run's flow: the local
 * decision, the fail-safe answers, and the controller's word (POST /_faultline/gate) from a
 * fake controller forked in this file on 127.0.0.1, which records each request body in a file
 * and answers by the call's tool name. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gate/gate.h"
#include "gate/hook.h"
#include "run/gatecheck.h"
#include "util/fs.h"
#include "helpers.h"
#include "util/banned.h"

static pid_t server_pid;
static char url[64];
static struct ut_tmpfile requests; /* one line per request: PATH BODY */

/* ---- the fake controller ---- */

static void send_str(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void reply_json(int fd, const char *body)
{
    char head[128];
    snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", strlen(body));
    send_str(fd, head);
    send_str(fd, body);
}

static void serve_conn(int fd)
{
    static char buf[1 << 21];
    size_t have = 0;

    for (;;) {
        char *end, *cl, path[256];
        size_t head, body = 0;
        ssize_t r;
        json_t *req;
        const char *tool;
        FILE *f;

        while ((end = memmem(buf, have, "\r\n\r\n", 4)) == NULL) {
            r = read(fd, buf + have, sizeof(buf) - have - 1);
            if (r <= 0)
                return;
            have += (size_t)r;
        }
        head = (size_t)(end - buf) + 4;
        buf[have] = '\0';
        if ((cl = strcasestr(buf, "content-length:")) && cl < end)
            body = strtoul(cl + 15, NULL, 10);
        while (have < head + body) {
            r = read(fd, buf + have, sizeof(buf) - have - 1);
            if (r <= 0)
                return;
            have += (size_t)r;
        }
        if (sscanf(buf, "%*s %255s", path) != 1)
            return;
        f = fopen(requests.path, "a");
        fprintf(f, "%s %.*s\n", path, (int)body, buf + head);
        fclose(f);
        req = json_loadb(buf + head, body, 0, NULL);
        tool = json_string_value(json_object_get(req, "tool"));
        if (strcmp(path, "/_faultline/events") == 0)
            reply_json(fd, "{\"appended\":1}");
        else if (tool && strcmp(tool, "fake_allow") == 0)
            reply_json(fd, "{\"decision\":\"allow\",\"code\":null,\"reason\":\"\"}");
        else if (tool && strcmp(tool, "fake_deny") == 0)
            reply_json(fd, "{\"decision\":\"deny\",\"code\":\"CHAOS_FAULT\",\"reason\":\"[faultline] "
                           "tool failed (E-FAULTLINE-0badc0de)\"}");
        else if (tool && strcmp(tool, "fake_held") == 0)
            reply_json(fd, "{\"decision\":\"held\",\"code\":\"HELD\",\"reason\":\"[faultline] HELD: "
                           "awaiting approval (E-FAULTLINE-0badc0de)\"}");
        else if (tool && strcmp(tool, "fake_redact") == 0)
            reply_json(fd, "{\"decision\":\"allow\",\"code\":null,\"reason\":\"\","
                           "\"input\":{\"command\":\"echo [REDACTED]\"}}");
        else if (tool && strcmp(tool, "fake_bad") == 0)
            reply_json(fd, "{\"decision\":\"maybe\"}");
        else
            send_str(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        json_decref(req);
        memmove(buf, buf + head + body, have - head - body);
        have -= head + body;
    }
}

static int setup_server(void **state)
{
    int fds[2], lfd, one = 1, port;
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);

    ut_tmpfile_init(&requests);
    assert_int_equal(pipe(fds), 0);
    server_pid = fork();
    assert_true(server_pid >= 0);
    if (server_pid == 0) {
        close(fds[0]);
        lfd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 16) < 0)
            _exit(1);
        getsockname(lfd, (struct sockaddr *)&sa, &sl);
        port = ntohs(sa.sin_port);
        if (write(fds[1], &port, sizeof(port)) != sizeof(port))
            _exit(1);
        close(fds[1]);
        alarm(120); /* never outlive the test by much */
        for (;;) {
            int c = accept(lfd, NULL, NULL);
            if (c < 0)
                continue;
            serve_conn(c);
            close(c);
        }
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &port, sizeof(port)), sizeof(port));
    close(fds[0]);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    return 0;
}

static int teardown_server(void **state)
{
    kill(server_pid, SIGKILL);
    waitpid(server_pid, NULL, 0);
    unlink(requests.path);
    return 0;
}

/* ---- helpers ---- */

static int parse(enum gate_harness h, const char *text, struct gate_call *c)
{
    struct err e = {0};
    return gate_hook_parse(h, text, strlen(text), c, &e);
}

/* gate_run on text with opts o; the result in *r (release with gate_result_release). */
static void run(const struct gate_opts *o, const char *text, struct gate_result *r)
{
    gate_result_init(r);
    gate_run(o, text, strlen(text), r);
}

static json_t *stdout_json(const struct gate_result *r)
{
    json_t *v = json_loadb(r->out.data, r->out.len, 0, NULL);
    assert_non_null(v);
    return v;
}

static const char *hso_string(const json_t *v, const char *key)
{
    return json_string_value(json_object_get(json_object_get(v, "hookSpecificOutput"), key));
}

/* ---- input ---- */

static void test_parse_claude_code(void **state)
{
    struct gate_call c;
    struct err e = {0};

    assert_int_equal(
        parse(GATE_CLAUDE_CODE,
              "{\"session_id\":\"abc\",\"transcript_path\":\"/x.jsonl\",\"cwd\":\"/proj\","
              "\"prompt_id\":\"p\",\"effort\":\"high\",\"permission_mode\":\"default\","
              "\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":"
              "{\"command\":\"rm -rf x\",\"description\":\"d\",\"timeout\":120000},"
              "\"tool_use_id\":\"toolu_01\",\"something_new\":[1,2,{}]}",
              &c),
        0);
    assert_int_equal(c.event, GATE_EV_PRE_TOOL);
    assert_string_equal(c.tool, "Bash");
    assert_string_equal(c.cwd, "/proj");
    assert_string_equal(c.tool_use_id, "toolu_01");
    assert_null(c.mcp_server);
    assert_string_equal(json_string_value(json_object_get(c.input, "command")), "rm -rf x");
    gate_call_release(&c);

    assert_int_equal(parse(GATE_CLAUDE_CODE,
                           "{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"mcp__files__read\","
                           "\"tool_input\":{\"path\":\"/etc\"}}",
                           &c),
                     0);
    assert_string_equal(c.mcp_server, "files");
    gate_call_release(&c);

    /* no event name: a pre-tool call; another event: no opinion */
    assert_int_equal(parse(GATE_CLAUDE_CODE, "{\"tool_name\":\"Edit\"}", &c), 0);
    assert_int_equal(c.event, GATE_EV_PRE_TOOL);
    assert_true(json_is_object(c.input));
    gate_call_release(&c);
    assert_int_equal(parse(GATE_CLAUDE_CODE,
                           "{\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Bash\"}", &c),
                     0);
    assert_int_equal(c.event, GATE_EV_OTHER);
    gate_call_release(&c);

    /* refusals */
    assert_int_equal(parse(GATE_CLAUDE_CODE, "{\"tool_input\":{}}", &c), ERR_INVALID);
    gate_call_release(&c);
    assert_int_equal(parse(GATE_CLAUDE_CODE, "{\"tool_name\":\"Bash\",\"tool_input\":[1]}", &c),
                     ERR_INVALID);
    gate_call_release(&c);
    assert_int_equal(parse(GATE_CLAUDE_CODE, "{\"tool_name\":7}", &c), ERR_INVALID);
    gate_call_release(&c);
    assert_int_equal(parse(GATE_CLAUDE_CODE, "[1]", &c), ERR_PARSE);
    gate_call_release(&c);
    assert_int_equal(parse(GATE_CLAUDE_CODE, "{\"tool_name\":\"Bash\"", &c), ERR_PARSE);
    gate_call_release(&c);
    /* a second command must not hide the first from the policy */
    assert_int_equal(parse(GATE_CLAUDE_CODE,
                           "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf ~\","
                           "\"command\":\"ls\"}}",
                           &c),
                     ERR_PARSE);
    gate_call_release(&c);
    {
        char *big = xmalloc(GATE_INPUT_MAX + 2);
        memset(big, ' ', GATE_INPUT_MAX + 1);
        big[GATE_INPUT_MAX + 1] = '\0';
        assert_int_equal(gate_hook_parse(GATE_CLAUDE_CODE, big, GATE_INPUT_MAX + 1, &c, &e),
                         ERR_LIMIT);
        gate_call_release(&c);
        free(big);
    }
}

static void test_parse_codex(void **state)
{
    struct gate_call c;

    assert_int_equal(parse(GATE_CODEX,
                           "{\"session_id\":\"s\",\"turn_id\":\"t\",\"transcript_path\":null,"
                           "\"cwd\":\"/work\",\"hook_event_name\":\"PreToolUse\",\"model\":\"m\","
                           "\"permission_mode\":\"default\",\"tool_name\":\"Bash\","
                           "\"tool_input\":{\"command\":[\"rm\",\"-rf\",\"/\"]},"
                           "\"tool_use_id\":\"c1\",\"agent_id\":\"a\",\"agent_type\":\"x\"}",
                           &c),
                     0);
    assert_string_equal(c.tool, "Bash");
    assert_string_equal(c.cwd, "/work");
    /* kept as sent: the policy joins an argv array */
    assert_true(json_is_array(json_object_get(c.input, "command")));
    gate_call_release(&c);
}

static void test_parse_cursor(void **state)
{
    struct gate_call c;

    assert_int_equal(parse(GATE_CURSOR,
                           "{\"hook_event_name\":\"beforeShellExecution\",\"conversation_id\":\"c\","
                           "\"generation_id\":\"g\",\"workspace_roots\":[\"/proj\"],"
                           "\"command\":\"git push --force\",\"cwd\":\"/proj/sub\"}",
                           &c),
                     0);
    assert_int_equal(c.event, GATE_EV_SHELL);
    assert_string_equal(c.tool, "Shell");
    assert_string_equal(c.project_dir, "/proj");
    assert_string_equal(c.cwd, "/proj/sub");
    ut_assert_json(c.input, "{\"command\":\"git push --force\"}");
    gate_call_release(&c);

    assert_int_equal(parse(GATE_CURSOR,
                           "{\"hook_event_name\":\"beforeMCPExecution\",\"tool_name\":\"search\","
                           "\"tool_input\":\"{\\\"q\\\":\\\"x\\\"}\",\"url\":\"http://m/mcp\"}",
                           &c),
                     0);
    assert_int_equal(c.event, GATE_EV_MCP);
    assert_string_equal(c.mcp_server, "http://m/mcp");
    ut_assert_json(c.input, "{\"q\":\"x\"}");
    gate_call_release(&c);

    assert_int_equal(parse(GATE_CURSOR,
                           "{\"hook_event_name\":\"preToolUse\",\"tool_name\":\"Shell\","
                           "\"tool_input\":{\"command\":\"ls\"}}",
                           &c),
                     0);
    assert_int_equal(c.event, GATE_EV_PRE_TOOL);
    gate_call_release(&c);

    assert_int_equal(parse(GATE_CURSOR, "{\"hook_event_name\":\"afterFileEdit\"}", &c), 0);
    assert_int_equal(c.event, GATE_EV_OTHER);
    gate_call_release(&c);
    assert_int_equal(parse(GATE_CURSOR, "{\"command\":\"ls\"}", &c), ERR_INVALID);
    gate_call_release(&c);
    assert_int_equal(parse(GATE_CURSOR, "{\"hook_event_name\":\"beforeShellExecution\"}", &c),
                     ERR_INVALID);
    gate_call_release(&c);
}

static void test_recover_command(void **state)
{
    struct {
        const char *text;
        int found;
        const char *cmd;
    } cases[] = {
        {"{\"tool_input\":{\"command\":\"rm -rf ~", 1, "rm -rf ~"},
        {"{\"tool_input\":{\"command\" :\n \"echo \\\"a\\\\b\\\" \\u00e9\\n\",", 1,
         "echo \"a\\b\" \xc3\xa9\n"},
        {"{\"cmd\":\"ls", 1, "ls"},
        {"{\"command\":[\"rm\"],\"x\":1", 0, ""},
        {"{\"description\":\"the command\",\"command\":\"x\"", 1, "x"},
        {"{\"command\"", 0, ""},
        {"\"command\":\"a\\", 1, "a"},
        {"\"command\":\"\\u12", 1, ""},
        {"", 0, ""},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct buf b = BUF_INIT;
        assert_int_equal(gate_hook_recover_command(cases[i].text, strlen(cases[i].text), &b),
                         cases[i].found);
        assert_string_equal(b.data, cases[i].cmd);
        buf_release(&b);
    }
}

/* ---- answers ---- */

static void render(enum gate_harness h, enum gate_event ev, enum gate_verdict v,
                   const char *updated, int failsafe, struct buf *out, struct buf *errb,
                   int *code)
{
    struct gate_call c = {.harness = h, .event = ev};
    struct gate_answer a = {.verdict = v};

    if (v != GATE_ALLOW)
        snprintf(a.reason, sizeof(a.reason), "[faultline] no");
    if (updated)
        a.updated_input = ut_json(updated);
    buf_reset(out);
    buf_reset(errb);
    gate_answer_render(&c, &a, failsafe, out, errb, code);
    gate_answer_release(&a);
}

static void test_answers(void **state)
{
    struct buf out = BUF_INIT, errb = BUF_INIT;
    json_t *v;
    int code;

    /* allow: no opinion for claude-code and codex, explicit for cursor */
    for (int h = GATE_CLAUDE_CODE; h <= GATE_CODEX; h++) {
        render(h, GATE_EV_PRE_TOOL, GATE_ALLOW, NULL, 0, &out, &errb, &code);
        assert_int_equal(code, 0);
        assert_int_equal(out.len, 0);
    }
    render(GATE_CURSOR, GATE_EV_SHELL, GATE_ALLOW, NULL, 0, &out, &errb, &code);
    assert_string_equal(out.data, "{\"permission\":\"allow\"}\n");

    /* deny and held, each harness */
    for (int h = GATE_CLAUDE_CODE; h <= GATE_CODEX; h++) {
        for (int verdict = GATE_DENY; verdict <= GATE_HELD; verdict++) {
            render(h, GATE_EV_PRE_TOOL, verdict, NULL, 0, &out, &errb, &code);
            assert_int_equal(code, 0);
            v = ut_json(out.data);
            ut_assert_json(v, "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
                              "\"permissionDecision\":\"deny\",\"permissionDecisionReason\":"
                              "\"[faultline] no\"}}");
            json_decref(v);
        }
    }
    render(GATE_CURSOR, GATE_EV_MCP, GATE_HELD, NULL, 0, &out, &errb, &code);
    assert_string_equal(out.data, "{\"permission\":\"deny\",\"user_message\":\"[faultline] no\","
                                  "\"agent_message\":\"[faultline] no\"}\n");

    /* a new input: allow + updatedInput; codex gets no field it does not know */
    render(GATE_CLAUDE_CODE, GATE_EV_PRE_TOOL, GATE_ALLOW, "{\"command\":\"x\"}", 0, &out, &errb,
           &code);
    v = ut_json(out.data);
    assert_string_equal(hso_string(v, "permissionDecision"), "allow");
    ut_assert_json(json_object_get(json_object_get(v, "hookSpecificOutput"), "updatedInput"),
                   "{\"command\":\"x\"}");
    json_decref(v);
    render(GATE_CODEX, GATE_EV_PRE_TOOL, GATE_ALLOW, "{\"command\":\"x\"}", 0, &out, &errb, &code);
    v = ut_json(out.data);
    ut_assert_json(v, "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
                      "\"permissionDecision\":\"allow\",\"updatedInput\":{\"command\":\"x\"}}}");
    json_decref(v);
    render(GATE_CURSOR, GATE_EV_PRE_TOOL, GATE_ALLOW, "{\"command\":\"x\"}", 0, &out, &errb,
           &code);
    assert_string_equal(out.data, "{\"permission\":\"allow\",\"updated_input\":{\"command\":\"x\"}}\n");
    /* cursor's shell hook cannot take a new input: the secret must not pass */
    render(GATE_CURSOR, GATE_EV_SHELL, GATE_ALLOW, "{\"command\":\"x\"}", 0, &out, &errb, &code);
    v = ut_json(out.data);
    assert_string_equal(json_string_value(json_object_get(v, "permission")), "deny");
    json_decref(v);

    /* no opinion on other events */
    render(GATE_CLAUDE_CODE, GATE_EV_OTHER, GATE_DENY, NULL, 0, &out, &errb, &code);
    assert_int_equal(out.len + (size_t)code, 0);

    /* fail-safe: exit 2 and the reason on stderr, nothing on stdout */
    for (int h = 0; h < GATE_NHARNESS; h++) {
        render(h, GATE_EV_PRE_TOOL, GATE_DENY, NULL, 1, &out, &errb, &code);
        assert_int_equal(code, 2);
        assert_int_equal(out.len, 0);
        assert_string_equal(errb.data, "[faultline] no\n");
        render(h, GATE_EV_PRE_TOOL, GATE_ALLOW, NULL, 1, &out, &errb, &code);
        assert_int_equal(code, 0);
        assert_int_equal(out.len, 0);
    }
    buf_release(&out);
    buf_release(&errb);
}

/* ---- the flow, without a controller ---- */

static void test_run_local(void **state)
{
    struct gate_opts o = {.harness = GATE_CLAUDE_CODE, .project_dir = "/nonexistent"};
    struct gate_result r;
    json_t *v;

    run(&o, "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf ~\"}}", &r);
    assert_int_equal(r.verdict, GATE_DENY);
    assert_int_equal(r.exit_code, 0);
    v = stdout_json(&r);
    assert_string_equal(hso_string(v, "permissionDecision"), "deny");
    assert_non_null(strstr(hso_string(v, "permissionDecisionReason"), "[faultline] "));
    json_decref(v);
    gate_result_release(&r);

    run(&o, "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls -la\"}}", &r);
    assert_int_equal(r.verdict, GATE_ALLOW);
    assert_int_equal(r.out.len, 0);
    assert_int_equal(r.err.len, 0);
    gate_result_release(&r);

    o.harness = GATE_CODEX;
    run(&o, "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":[\"rm\",\"-rf\",\"/\"]}}", &r);
    assert_int_equal(r.verdict, GATE_DENY);
    v = stdout_json(&r);
    assert_string_equal(hso_string(v, "permissionDecision"), "deny");
    json_decref(v);
    gate_result_release(&r);
}

static void test_run_failsafe(void **state)
{
    struct gate_opts o = {.harness = GATE_CODEX, .project_dir = "/nonexistent"};
    struct gate_result r;
    char *big;

    /* cut input, destructive command: closed */
    run(&o, "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf ~", &r);
    assert_int_equal(r.failsafe, 1);
    assert_int_equal(r.exit_code, 2);
    assert_int_equal(r.out.len, 0);
    assert_non_null(strstr(r.err.data, "destructive"));
    gate_result_release(&r);
    /* cut input, harmless command, or none: open, with a reason on stderr */
    run(&o, "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls", &r);
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.err.data, "not JSON"));
    gate_result_release(&r);
    run(&o, "\x01\x02garbage", &r);
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.err.data, "no command"));
    gate_result_release(&r);
    /* an input of the wrong shape is unreadable too */
    run(&o, "{\"tool_name\":\"Bash\",\"tool_input\":5,\"command\":\"rm -rf /\"}", &r);
    assert_int_equal(r.exit_code, 2);
    gate_result_release(&r);

    /* over the limit: only the first MiB is looked at */
    big = xmalloc(GATE_INPUT_MAX + 100);
    memset(big, ' ', GATE_INPUT_MAX + 99);
    big[GATE_INPUT_MAX + 99] = '\0';
    {
        const char *start = "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf / ";
        memcpy(big, start, strlen(start));
    }
    gate_result_init(&r);
    gate_run(&o, big, GATE_INPUT_MAX + 99, &r);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err.data, "over the limit"));
    gate_result_release(&r);
    /* a command that starts past the first MiB is not seen */
    memset(big, ' ', GATE_INPUT_MAX + 99);
    memcpy(big + GATE_INPUT_MAX + 2, "\"command\":\"rm -rf /\"", 20);
    gate_result_init(&r);
    gate_run(&o, big, GATE_INPUT_MAX + 99, &r);
    assert_int_equal(r.exit_code, 0);
    gate_result_release(&r);
    free(big);
}

static void test_run_policy_file(void **state)
{
    char dir[] = "/tmp/faultline-gate-XXXXXX";
    struct gate_opts o = {.harness = GATE_CLAUDE_CODE};
    struct gate_result r;
    char input[1024];
    json_t *v;

    assert_non_null(mkdtemp(dir));
    ut_put(dir, ".git/HEAD", "ref: refs/heads/main\n");
    ut_put(dir, "sub/deeper/x", "");
    ut_put(dir, ".faultline/policy.yaml", "rules: [[[\n");
    /* the project is the git top-level above the input's cwd: its broken file denies */
    snprintf(input, sizeof(input),
             "{\"cwd\":\"%s/sub/deeper\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":"
             "\"ls\"}}",
             dir);
    run(&o, input, &r);
    if (r.verdict == GATE_DENY) { /* once the policy engine reads files */
        v = stdout_json(&r);
        assert_non_null(strstr(hso_string(v, "permissionDecisionReason"), "policy.yaml:"));
        json_decref(v);
    }
    gate_result_release(&r);
    {
        char cmd[200];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
    }
}

/* ---- the flow, with a controller ---- */

/* The last request line the fake controller recorded: PATH and parsed BODY. */
static json_t *last_request(char *path, size_t pathsz)
{
    char *all = ut_slurp(requests.path, NULL), *line, *sp;
    json_t *v;

    assert_true(strlen(all) > 0);
    all[strlen(all) - 1] = '\0';
    line = strrchr(all, '\n') ? strrchr(all, '\n') + 1 : all;
    sp = strchr(line, ' ');
    assert_non_null(sp);
    snprintf(path, pathsz, "%.*s", (int)(sp - line), line);
    v = ut_json(sp + 1);
    free(all);
    return v;
}

static void test_run_controller(void **state)
{
    struct gate_opts o = {.harness = GATE_CLAUDE_CODE, .control_url = url,
                          .project_dir = "/nonexistent"};
    struct gate_result r;
    char path[64];
    json_t *v, *req;

    run(&o, "{\"tool_name\":\"fake_allow\",\"tool_input\":{\"command\":\"ls\"}}", &r);
    assert_int_equal(r.controlled, 1);
    assert_int_equal(r.verdict, GATE_ALLOW);
    assert_int_equal(r.out.len, 0);
    gate_result_release(&r);
    req = last_request(path, sizeof(path));
    assert_string_equal(path, "/_faultline/gate");
    ut_assert_json(req, "{\"harness\":\"claude-code\",\"tool\":\"fake_allow\",\"input\":"
                        "{\"command\":\"ls\"},\"mcp_server\":null,\"decided\":{\"effect\":"
                        "\"allow\",\"mode\":\"enforce\",\"tier\":\"default\",\"rule\":null,"
                        "\"reason\":\"\"}}");
    json_decref(req);

    /* the policy's block goes to the controller as decided */
    run(&o, "{\"tool_name\":\"fake_deny\",\"tool_input\":{\"command\":\"rm -rf ~\"}}", &r);
    req = last_request(path, sizeof(path));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(req, "decided"), "effect")), "block");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(req, "decided"), "tier")),
        "destructive");
    json_decref(req);
    assert_int_equal(r.verdict, GATE_DENY);
    v = stdout_json(&r);
    assert_string_equal(hso_string(v, "permissionDecisionReason"),
                        "[faultline] tool failed (E-FAULTLINE-0badc0de)");
    json_decref(v);
    gate_result_release(&r);

    o.harness = GATE_CODEX;
    run(&o, "{\"tool_name\":\"fake_held\",\"tool_input\":{}}", &r);
    assert_int_equal(r.verdict, GATE_HELD);
    v = stdout_json(&r);
    assert_string_equal(hso_string(v, "permissionDecision"), "deny");
    assert_string_equal(hso_string(v, "permissionDecisionReason"),
                        "[faultline] HELD: awaiting approval (E-FAULTLINE-0badc0de)");
    json_decref(v);
    gate_result_release(&r);

    run(&o, "{\"tool_name\":\"fake_redact\",\"tool_input\":{\"command\":\"echo sk-x\"}}", &r);
    v = stdout_json(&r);
    ut_assert_json(v, "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
                      "\"permissionDecision\":\"allow\",\"updatedInput\":{\"command\":\"echo "
                      "[REDACTED]\"}}}");
    json_decref(v);
    gate_result_release(&r);

    /* a controller answer that is no decision, a 404, no controller: decided here */
    o.harness = GATE_CLAUDE_CODE;
    run(&o, "{\"tool_name\":\"fake_bad\",\"tool_input\":{\"command\":\"rm -rf ~\"}}", &r);
    assert_int_equal(r.controlled, 0);
    assert_int_equal(r.verdict, GATE_DENY);
    assert_non_null(strstr(r.err.data, "decided here"));
    gate_result_release(&r);
    run(&o, "{\"tool_name\":\"unknown\",\"tool_input\":{}}", &r);
    assert_int_equal(r.controlled, 0);
    assert_int_equal(r.verdict, GATE_ALLOW);
    assert_non_null(strstr(r.err.data, "decided here"));
    gate_result_release(&r);
    o.control_url = "http://127.0.0.1:1";
    run(&o, "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf ~\"}}", &r);
    assert_int_equal(r.verdict, GATE_DENY);
    assert_non_null(strstr(r.err.data, "decided here"));
    gate_result_release(&r);
}

static void test_run_controller_warning(void **state)
{
    struct gate_opts o = {.harness = GATE_CURSOR, .control_url = url};
    struct gate_result r;
    char path[64];
    json_t *req;

    run(&o, "{\"hook_event_name\":\"beforeShellExecution\",\"command\":\"rm -rf /", &r);
    assert_int_equal(r.exit_code, 2);
    gate_result_release(&r);
    req = last_request(path, sizeof(path));
    assert_string_equal(path, "/_faultline/events");
    assert_string_equal(json_string_value(json_object_get(req, "kind")), "warning");
    assert_string_equal(json_string_value(json_object_get(req, "src")), "gate");
    assert_string_equal(json_string_value(json_object_get(req, "code")), "malformed_hook_input");
    assert_non_null(strstr(json_string_value(json_object_get(req, "message")), "cursor hook"));
    json_decref(req);
}

/* ---- the runner's warning ---- */

static void test_gatecheck(void **state)
{
    char dir[] = "/tmp/faultline-gatecheck-XXXXXX", user[128], cmd[200];
    struct buf w = BUF_INIT;

    assert_non_null(mkdtemp(dir));
    snprintf(user, sizeof(user), "%s-user.yaml", dir);
    /* no hook settings, or settings without a gate: no gates */
    assert_int_equal(gatecheck_project(dir, NULL, &w), 1);
    assert_non_null(strstr(w.data, "the project has no gates"));
    ut_put(dir, ".claude/settings.json",
           "{\"hooks\":{\"PreToolUse\":[{\"matcher\":\"Bash\",\"hooks\":[{\"type\":"
           "\"command\",\"command\":\"./lint.sh\"}]}]}}");
    buf_reset(&w);
    assert_int_equal(gatecheck_project(dir, NULL, &w), 1);
    assert_non_null(strstr(w.data, "no gates"));
    /* a gate, no policy anywhere */
    ut_put(dir, ".codex/hooks.json",
           "{\"hooks\":{\"PreToolUse\":[{\"hooks\":[{\"type\":\"command\",\"command\":"
           "\"/opt/bin/faultline gate codex\"}]}]}}");
    buf_reset(&w);
    assert_int_equal(gatecheck_project(dir, user, &w), 1);
    assert_non_null(strstr(w.data, "the gates have no policy"));
    /* the user's policy, or the project's: no warning */
    ut_put("/", user + 1, "rules: []\n");
    buf_reset(&w);
    assert_int_equal(gatecheck_project(dir, user, &w), 0);
    assert_int_equal(w.len, 0);
    unlink(user);
    ut_put(dir, ".faultline/policy.yaml", "rules: []\n");
    assert_int_equal(gatecheck_project(dir, NULL, &w), 0);
    /* cursor's settings count too */
    snprintf(cmd, sizeof(cmd), "rm -rf %s/.codex", dir);
    assert_int_equal(system(cmd), 0);
    ut_put(dir, ".cursor/hooks.json",
           "{\"version\":1,\"hooks\":{\"beforeShellExecution\":[{\"command\":"
           "\"faultline gate cursor\"}]}}");
    assert_int_equal(gatecheck_project(dir, NULL, &w), 0);
    buf_release(&w);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_claude_code),
        cmocka_unit_test(test_parse_codex),
        cmocka_unit_test(test_parse_cursor),
        cmocka_unit_test(test_recover_command),
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_run_local),
        cmocka_unit_test(test_run_failsafe),
        cmocka_unit_test(test_run_policy_file),
        cmocka_unit_test(test_run_controller),
        cmocka_unit_test(test_run_controller_warning),
        cmocka_unit_test(test_gatecheck),
    };
    return cmocka_run_group_tests(tests, setup_server, teardown_server);
}
