/* Unit tests for src/seam/seam: the one client a boundary component gets decisions from and
 * sends events through. Standalone (plan in-process, own events file: decisions and counters,
 * events stamped and written on flush, plan_loaded first, the component's name as src),
 * without plan or events (no faults, nothing recorded), plans refused by src/plan's validated
 * loader in both modes, and controller mode with a bad URL or an unreachable controller
 * (not fatal; decisions fail fast, never inject). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "experiment/catalog.h"
#include "seam/seam.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define FAULT(kind, tool, extra)                                                                   \
    "{\"index\": 0, \"kind\": \"" kind                                                             \
    "\", \"injectors\": [\"mcp\"], \"match\": {\"tool\": \"" tool                                  \
    "\"}, \"after_calls\": 0, \"times\": 1, \"probability\": 1, \"options\": {}, "                 \
    "\"safety\": \"fail-safe\"" extra "}"
#define PLAN(faults)                                                                               \
    "{\"version\": 1, \"run\": \"unit-seam-1\", \"rep\": 1, \"faulted\": true, \"canary\": "       \
    "\"E-FAULTLINE-00c0ffee\", \"seed\": \"0x0000000000000001\", \"faults\": [" faults "]}"

static char dir[64];

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

static void write_text(const char *name, const char *text)
{
    char p[128];
    struct err e = {0};

    path_in(p, sizeof(p), name);
    assert_int_equal(fs_write_file(p, text, strlen(text), &e), 0);
}

static json_t *read_events(const char *name)
{
    char p[128];
    struct buf b = BUF_INIT;
    struct err e = {0};
    json_t *out = json_array();
    char *line, *save = NULL;

    path_in(p, sizeof(p), name);
    if (fs_read_file(p, 1 << 20, &b, &e) == 0) {
        for (line = strtok_r(b.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            json_t *ev = json_loads(line, 0, NULL);
            assert_non_null(ev);
            json_array_append_new(out, ev);
        }
    }
    buf_release(&b);
    return out;
}

/* The events in name once it holds at least n (the seam's writer thread appends them after
 * seam_flush), polled for up to 10 s. */
static json_t *wait_events(const char *name, size_t n)
{
    json_t *got = read_events(name);

    for (int i = 0; i < 1000 && json_array_size(got) < n; i++) {
        json_decref(got);
        time_sleep_ms(10);
        got = read_events(name);
    }
    return got;
}

static struct plan_call call_of(const char *tool)
{
    struct plan_call c;

    memset(&c, 0, sizeof(c));
    c.component = CATALOG_INJ_MCP;
    c.tool = tool;
    c.server = "fake";
    return c;
}

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/test_seam.XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_standalone(void **state)
{
    char plan[128], events[128];
    struct seam_opts o = {.component = "gate"};
    struct err e = {0};
    struct seam_decision d;
    struct plan_call c = call_of("echo");
    struct seam *s;
    json_t *ev, *got;
    int64_t before, after, us;

    write_text("plan.json", PLAN(FAULT("tool.error", "echo", "")));
    path_in(plan, sizeof(plan), "plan.json");
    path_in(events, sizeof(events), "events.jsonl");
    o.plan_path = plan;
    o.events_path = events;
    s = seam_new(&o, &e);
    assert_non_null(s);
    assert_int_equal(seam_records(s), 1);
    assert_string_equal(seam_canary(s), "E-FAULTLINE-00c0ffee");
    assert_int_equal(json_array_size(seam_plan_faults(s)), 1);
    /* times 1: the first matching call only; the plan in-process keeps the counters */
    assert_int_equal(seam_decide(s, &c, &d), 0);
    assert_int_equal(d.inject, 1);
    assert_string_equal(d.kind, "tool.error");
    assert_int_equal(d.fault_index, 0);
    assert_int_equal(d.safety, 0);
    json_decref(d.options);
    assert_int_equal(seam_decide(s, &c, &d), 0);
    assert_int_equal(d.inject, 0);
    c = call_of("other");
    assert_int_equal(seam_decide(s, &c, &d), 0);
    assert_int_equal(d.inject, 0);
    assert_null(d.options);
    assert_int_equal(seam_select(s, 0, "k", 0, 1.0), 1);
    assert_int_equal(seam_select(s, 0, "k", 0, 0.0), 0);

    before = time_now_us();
    ev = json_pack("{s:s, s:s}", "kind", "tool_call", "tool", "echo");
    seam_emit(s, ev);
    json_decref(ev);
    after = time_now_us();
    /* queued until the flush: only plan_loaded could be there (it is queued too) */
    got = read_events("events.jsonl");
    assert_int_equal(json_array_size(got), 0);
    json_decref(got);
    time_sleep_ms(5);
    seam_flush(s);
    got = wait_events("events.jsonl", 2); /* the writer thread appends them */
    assert_int_equal(json_array_size(got), 2);
    ev = json_array_get(got, 0);
    assert_string_equal(json_string_value(json_object_get(ev, "kind")), "plan_loaded");
    assert_string_equal(json_string_value(json_object_get(ev, "component")), "gate");
    assert_string_equal(json_string_value(json_object_get(ev, "src")), "gate");
    assert_int_equal(json_integer_value(json_object_get(ev, "faults")), 1);
    ev = json_array_get(got, 1);
    assert_string_equal(json_string_value(json_object_get(ev, "kind")), "tool_call");
    assert_true(json_is_integer(json_object_get(ev, "t")));
    /* the time it was emitted (it happened), not the flush's 5 ms later */
    us = json_integer_value(json_object_get(ev, "t_us"));
    assert_true(us >= before && us <= after);
    assert_int_equal(json_integer_value(json_object_get(ev, "t")), us / 1000);
    assert_string_equal(json_string_value(json_object_get(ev, "run")), "unit-seam-1");
    json_decref(got);
    seam_free(s);
    seam_free(NULL);
}

/* Standalone events go through the writer thread (evwriter.h) in the order emitted, in many
 * batches, past its queue's bound (the caller then waits for room: none is dropped), and what
 * is still queued at seam_free is written before the file closes. */
static void test_standalone_writer(void **state)
{
    char events[128];
    struct seam_opts o = {.component = "mcp"};
    struct err e = {0};
    struct seam *s;
    json_t *got, *ev;
    size_t i;
    enum { N = 5000 };

    path_in(events, sizeof(events), "writer.jsonl");
    o.events_path = events;
    s = seam_new(&o, &e);
    assert_non_null(s);
    for (i = 0; i < N; i++) {
        ev = json_pack("{s:s, s:s, s:I}", "kind", "tool_call", "tool", "echo", "seq",
                       (json_int_t)i);
        seam_emit(s, ev);
        json_decref(ev);
        if (i < 2000 ? i % 7 == 0 : i == 3500)
            seam_flush(s); /* small batches, then big ones (seam_emit flushes at 1000) */
    }
    seam_free(s); /* the last ones were never flushed: seam_free hands them over */
    got = read_events("writer.jsonl");
    assert_int_equal(json_array_size(got), N);
    json_array_foreach(got, i, ev)
    {
        assert_int_equal(json_integer_value(json_object_get(ev, "seq")), (json_int_t)i);
        assert_string_equal(json_string_value(json_object_get(ev, "kind")), "tool_call");
    }
    json_decref(got);
}

/* seam_decide_reads_args: a decision reads the call's arguments only for a plan fault with
 * `when` (the loaded plan writes "when": null for the others), or in controller mode: the MCP
 * shim parses a tools/call's arguments only then. */
static void test_decide_reads_args(void **state)
{
    char plan[128];
    struct seam_opts o = {.component = "mcp"};
    struct err e = {0};
    struct seam *s;

    s = seam_new(&o, &e);
    assert_int_equal(seam_decide_reads_args(s), 0); /* no plan: nothing decided */
    seam_free(s);
    write_text("plan.json", PLAN(FAULT("tool.error", "echo", "")));
    path_in(plan, sizeof(plan), "plan.json");
    o.plan_path = plan;
    s = seam_new(&o, &e);
    assert_non_null(s);
    assert_int_equal(seam_decide_reads_args(s), 0);
    seam_free(s);
    write_text("plan.json",
               PLAN(FAULT("tool.error", "echo", ", \"when\": {\"path\": \"$.path\", \"matches\": \"x\"}")));
    s = seam_new(&o, &e);
    if (s == NULL)
        fail_msg("%s", e.msg);
    assert_int_equal(seam_decide_reads_args(s), 1);
    seam_free(s);
}

static void test_nothing(void **state)
{
    struct seam_opts o = {.component = "mcp"};
    struct err e = {0};
    struct seam_decision d;
    struct plan_call c = call_of("echo");
    struct seam *s = seam_new(&o, &e);
    json_t *ev;

    assert_non_null(s);
    assert_int_equal(seam_records(s), 0);
    assert_null(seam_canary(s));
    assert_null(seam_plan_faults(s));
    assert_int_equal(seam_decide(s, &c, &d), 0);
    assert_int_equal(d.inject, 0);
    ev = json_pack("{s:s}", "kind", "tool_call");
    seam_emit(s, ev); /* dropped */
    json_decref(ev);
    seam_flush(s);
    seam_free(s);
}

/* In a child: a standalone seam recording to a file emits ev (text); returns 1 when the child
 * died of SIGABRT, the assert of an event the events table does not allow. */
static int emit_aborts(const char *text)
{
    char events[128];
    int status;
    pid_t pid;

    path_in(events, sizeof(events), "undoc.jsonl");
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct seam_opts o = {.component = "mcp", .events_path = events};
        struct err e = {0};
        struct seam *s = seam_new(&o, &e);
        json_t *ev = json_loads(text, 0, NULL);
        fclose(stderr);
        if (s == NULL || ev == NULL)
            _exit(3);
        seam_emit(s, ev);
        json_decref(ev);
        seam_free(s);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

/* Every event a component emits is held to the events table (ev.h): a field it does not list
 * for the kind, a wrong type, a kind it has no row for, is a bug that aborts, never a line. */
static void test_emit_undocumented(void **state)
{
    assert_false(emit_aborts("{\"kind\":\"warning\",\"code\":\"c\",\"message\":\"m\"}"));
    assert_true(emit_aborts("{\"kind\":\"warning\",\"code\":\"c\",\"sneaky\":1}"));
    assert_true(emit_aborts("{\"kind\":\"tool_call\",\"tool\":3}"));
    assert_true(emit_aborts("{\"kind\":\"tool_calls\",\"tool\":\"x\"}"));
}

/* One plan reader in both modes: what src/plan refuses, the seam refuses, before any
 * connection is made (the controller URL here would not answer anyway). */
static void test_invalid_plans(void **state)
{
    static const char *const bad[] = {
        "{not json",
        PLAN(FAULT("tool.error", "echo", ", \"injectors\": [\"nobody\"]")),
        PLAN(FAULT("tool.error", "echo", ", \"safety\": \"maybe\"")),
        PLAN(FAULT("tool.error", "echo", ", \"index\": 3")),
        PLAN(FAULT("tool.error", "echo", ", \"probability\": 7")),
        PLAN("1, 2"),
        "{\"faults\": []}",
    };
    char plan[128];
    struct err e = {0};

    path_in(plan, sizeof(plan), "bad.json");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        for (int ctl = 0; ctl < 2; ctl++) {
            struct seam_opts o = {.component = "mcp", .plan_path = plan};
            if (ctl)
                o.control_url = "http://127.0.0.1:1";
            write_text("bad.json", bad[i]);
            err_clear(&e);
            assert_null(seam_new(&o, &e));
            assert_true(e.code == ERR_PARSE || e.code == ERR_INVALID);
            assert_non_null(strstr(e.msg, "bad.json"));
        }
    }
    struct seam_opts o = {.component = "mcp", .plan_path = "/nonexistent/plan.json"};
    err_clear(&e);
    assert_null(seam_new(&o, &e));
    assert_int_not_equal(e.code, 0);
    /* an events file that cannot be opened */
    o.plan_path = NULL;
    o.events_path = dir; /* a directory */
    err_clear(&e);
    assert_null(seam_new(&o, &e));
    assert_int_not_equal(e.code, 0);
}

static int closed_port(void)
{
    struct sockaddr_in a;
    socklen_t n = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &n), 0);
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static void test_controller(void **state)
{
    char url[64], plan[128];
    struct seam_opts o = {.component = "mcp"};
    struct err e = {0};
    struct seam_decision d;
    struct plan_call c = call_of("echo");
    struct seam *s;
    int64_t t0;

    o.control_url = "https://127.0.0.1:1"; /* plain http only */
    assert_null(seam_new(&o, &e));
    assert_int_equal(e.code, ERR_INVALID);
    o.control_url = "not a url";
    err_clear(&e);
    assert_null(seam_new(&o, &e));
    assert_int_equal(e.code, ERR_INVALID);

    /* Nobody listens: not fatal; the health check opens the breaker, so a decision fails at
     * once (no wait) and never injects, even with a plan that would. */
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", closed_port());
    write_text("plan.json", PLAN(FAULT("tool.error", "echo", "")));
    path_in(plan, sizeof(plan), "plan.json");
    o.control_url = url;
    o.plan_path = plan;
    o.decide_ms = 300;
    err_clear(&e);
    s = seam_new(&o, &e);
    assert_non_null(s);
    assert_int_equal(e.code, 0);
    assert_int_equal(seam_records(s), 1);
    assert_string_equal(seam_canary(s), "E-FAULTLINE-00c0ffee");
    assert_int_equal(json_array_size(seam_plan_faults(s)), 1);
    t0 = time_mono_ns();
    for (int i = 0; i < 3; i++) {
        assert_true(seam_decide(s, &c, &d) < 0);
        assert_int_equal(d.inject, 0);
        assert_null(d.options);
    }
    assert_true(time_mono_ns() - t0 < 200 * 1000000LL);
    seam_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_standalone),        cmocka_unit_test(test_nothing),
        cmocka_unit_test(test_decide_reads_args),
        cmocka_unit_test(test_emit_undocumented), cmocka_unit_test(test_invalid_plans),
        cmocka_unit_test(test_controller),        cmocka_unit_test(test_standalone_writer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
