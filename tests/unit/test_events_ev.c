/* Unit tests for src/events/ev (the event constructors) and the kinds table's ids: every id is
 * its row, ev_new stamps the kind and the time it happened, the setters set what the table
 * lists and abort on what it does not (a writer cannot emit an undocumented field). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "events/ev.h"
#include "events/events.h"
#include "events/kinds.h"
#include "util/timeutil.h"
#include "helpers.h"
#include "util/banned.h"

/* The name of each id, written out by hand: the enum and the table are tied here. */
static const struct {
    enum evkind_id id;
    const char *name;
} ids[] = {
    {EVKIND_PLAN_LOADED, "plan_loaded"},
    {EVKIND_MODEL_REQUEST, "model_request"},
    {EVKIND_MODEL_RESPONSE, "model_response"},
    {EVKIND_TOOL_CALL, "tool_call"},
    {EVKIND_TOOL_RESULT, "tool_result"},
    {EVKIND_EGRESS_REQUEST, "egress_request"},
    {EVKIND_GATE_DECISION, "gate_decision"},
    {EVKIND_FAULT_INJECTED, "fault_injected"},
    {EVKIND_EFFECT, "effect"},
    {EVKIND_ABORT, "abort"},
    {EVKIND_VERIFY, "verify"},
    {EVKIND_WARNING, "warning"},
    {EVKIND_RUN_START, "run_start"},
    {EVKIND_AGENT_EXIT, "agent_exit"},
    {EVKIND_RUN_END, "run_end"},
    {EVKIND_COMPONENT_END, "component_end"},
    {EVKIND_DNS_QUERY, "dns_query"},
};

static void test_ids_are_rows(void **state)
{
    size_t n;
    const struct evkind *all = evkind_all(&n);

    assert_int_equal(n, EVKIND_COUNT);
    assert_int_equal(sizeof(ids) / sizeof(ids[0]), EVKIND_COUNT);
    for (size_t i = 0; i < EVKIND_COUNT; i++) {
        assert_int_equal(ids[i].id, i);
        assert_ptr_equal(evkind_get(ids[i].id), &all[i]);
        assert_string_equal(evkind_get(ids[i].id)->name, ids[i].name);
    }
}

static void test_new_stamps_kind_and_time(void **state)
{
    int64_t before = time_now_us();
    json_t *ev = ev_new(EVKIND_TOOL_RESULT);
    int64_t us = json_integer_value(json_object_get(ev, "t_us"));

    assert_string_equal(json_string_value(json_object_get(ev, "kind")), "tool_result");
    assert_true(us >= before && us <= time_now_us());
    assert_int_equal(json_integer_value(json_object_get(ev, "t")), us / 1000);
    assert_int_equal(events_time_us(ev), us);
    assert_int_equal(json_object_size(ev), 3);
    json_decref(ev);
}

static void test_setters(void **state)
{
    json_t *ev = ev_new(EVKIND_TOOL_RESULT), *args = json_pack("{s:i}", "a", 1);
    struct err e = {0};

    ev_set_str(ev, "tool", "read");
    ev_set_strn(ev, "server", "fsX", 2);
    ev_set_str(ev, "id", NULL); /* nothing */
    ev_set_bool(ev, "ok", 0);
    ev_set_int(ev, "duration_ms", 12);
    ev_set_ref(ev, "result", args);
    ev_set(ev, "faulted", NULL); /* nothing */
    ev_set_str(ev, "error", "bad \xff byte");
    json_decref(args);
    ut_assert_json(json_object_get(ev, "result"), "{\"a\":1}");
    assert_string_equal(json_string_value(json_object_get(ev, "server")), "fs");
    assert_null(json_object_get(ev, "id"));
    assert_null(json_object_get(ev, "faulted"));
    assert_string_equal(json_string_value(json_object_get(ev, "error")), "bad \xef\xbf\xbd byte");
    assert_int_equal(evkind_check_listed(ev, &e), 0);
    ev_assert_listed(ev);
    json_decref(ev);

    ev = ev_new(EVKIND_MODEL_RESPONSE);
    ev_set_num(ev, "cost_usd", 0.5);
    ev_set_int(ev, "cost_total_usd", 1); /* an integer is a number */
    ev_set_str(ev, "src", "controller"); /* common fields are listed for every kind */
    ev_set_int(ev, "t_us", 5);
    ev_update(ev, NULL);
    args = ut_json("{\"stop_reason\":\"end_turn\",\"tool_calls\":2}");
    ev_update(ev, args);
    json_decref(args);
    assert_int_equal(json_integer_value(json_object_get(ev, "tool_calls")), 2);
    assert_int_equal(evkind_check_listed(ev, NULL), 0);
    json_decref(ev);
}

static void test_check_field(void **state)
{
    const struct evkind *k = evkind_get(EVKIND_PLAN_LOADED);
    json_t *s = json_string("mcp"), *bad = json_string("nobody"), *i = json_integer(1);
    struct err e = {0};

    assert_int_equal(evkind_check_field(k, "component", s, NULL), 0);
    assert_int_equal(evkind_check_field(k, "component", bad, &e), ERR_INVALID);
    assert_non_null(strstr(e.msg, "component"));
    assert_int_equal(evkind_check_field(k, "faulted", i, NULL), ERR_INVALID);
    assert_int_equal(evkind_check_field(k, "t_us", i, NULL), 0);
    assert_int_equal(evkind_check_field(k, "canary", json_null(), NULL), 0); /* optional */
    assert_int_equal(evkind_check_field(k, "plan", json_null(), NULL), ERR_INVALID);
    memset(&e, 0, sizeof(e));
    assert_int_equal(evkind_check_field(k, "unread", i, &e), ERR_NOTFOUND);
    assert_non_null(strstr(e.msg, "'unread' is not in the events table"));
    assert_int_equal(evkind_check_field(k, "kind", s, NULL), ERR_NOTFOUND);
    /* model_request's unread is a row of its own (the proxy writes it) */
    assert_int_equal(
        evkind_check_field(evkind_get(EVKIND_MODEL_REQUEST), "unread", json_true(), NULL), 0);
    json_decref(s);
    json_decref(bad);
    json_decref(i);

    s = ut_json("{\"kind\":\"warning\",\"code\":\"c\",\"extra\":1}");
    assert_int_equal(evkind_check_listed(s, &e), ERR_NOTFOUND);
    json_decref(s);
    s = ut_json("{\"kind\":\"no_such_kind\"}");
    assert_int_equal(evkind_check_listed(s, &e), ERR_NOTFOUND);
    json_decref(s);
}

/* Runs fn in a child; 1 when the child died of SIGABRT (an assert). */
static int aborts(void (*fn)(void))
{
    int status;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        fclose(stderr); /* the assert's message and the log line are expected */
        fn();
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void set_undocumented(void)
{
    json_t *ev = ev_new(EVKIND_MODEL_REQUEST);
    ev_set_bool(ev, "sneaky", 1);
}

static void set_wrong_type(void)
{
    json_t *ev = ev_new(EVKIND_MODEL_REQUEST);
    ev_set_str(ev, "messages", "three");
}

static void set_wrong_value(void)
{
    json_t *ev = ev_new(EVKIND_FAULT_INJECTED);
    ev_set_str(ev, "component", "controller");
}

static void set_on_kindless(void)
{
    json_t *ev = json_object();
    ev_set_int(ev, "t", 1);
}

static void listed_undocumented(void)
{
    json_t *ev = ev_new(EVKIND_WARNING);
    json_object_set_new(ev, "sneaky", json_true()); /* built around the setters */
    ev_assert_listed(ev);
}

static void set_documented(void)
{
    json_t *ev = ev_new(EVKIND_WARNING);
    ev_set_str(ev, "code", "c");
    ev_assert_listed(ev);
    json_decref(ev);
}

static void test_undocumented_field_aborts(void **state)
{
    assert_true(aborts(set_undocumented));
    assert_true(aborts(set_wrong_type));
    assert_true(aborts(set_wrong_value));
    assert_true(aborts(set_on_kindless));
    assert_true(aborts(listed_undocumented));
    assert_false(aborts(set_documented));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_are_rows),
        cmocka_unit_test(test_new_stamps_kind_and_time),
        cmocka_unit_test(test_setters),
        cmocka_unit_test(test_check_field),
        cmocka_unit_test(test_undocumented_field_aborts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
