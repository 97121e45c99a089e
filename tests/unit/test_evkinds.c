/* Unit tests for src/events/kinds: the table's consistency, every kind's example, the kinds
 * the code emits today (listed by hand: a new kind without a row fails here), evkind_check's
 * reports (missing and ill-typed fields named), and the page filler's markers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "events/events.h"
#include "events/kinds.h"
#include "experiment/catalog.h"
#include "util/buf.h"
#include "util/fs.h"
#include "helpers.h"
#include "util/banned.h"

static json_t *example(const struct evkind *k)
{
    json_error_t je;
    json_t *j = json_loads(k->example, JSON_REJECT_DUPLICATES, &je);
    if (j == NULL)
        fail_msg("%s: example is not JSON: %s", k->name, je.text);
    return j;
}

static void assert_err_names(const json_t *ev, int code, const char *field)
{
    struct err e = {0};
    char q[80];
    int rc = evkind_check(ev, &e);
    snprintf(q, sizeof(q), "'%s'", field);
    if (rc != code || strstr(e.msg, q) == NULL) {
        char *s = json_dumps(ev, JSON_COMPACT);
        print_error("event %s: rc %d, message '%s', wanted %d naming %s\n", s, rc, e.msg, code, q);
        free(s);
        fail();
    }
}

static void test_table_consistent(void **state)
{
    size_t n, nc;
    const struct evkind *k = evkind_all(&n);
    const struct evkind_field *c = evkind_common(&nc);

    assert_true(n >= 15);
    assert_true(nc >= 6);
    assert_string_equal(c[0].name, "t");
    assert_string_equal(c[1].name, "t_us");
    assert_string_equal(c[5].name, "kind");
    for (size_t i = 0; i < n; i++) {
        assert_true(strspn(k[i].name, "abcdefghijklmnopqrstuvwxyz_") == strlen(k[i].name));
        assert_ptr_equal(evkind_find(k[i].name), &k[i]); /* unique */
        assert_non_null(k[i].title);
        assert_non_null(k[i].example);
        assert_true((k[i].src | k[i].src_later) != 0);
        assert_int_equal(k[i].src & k[i].src_later, 0);
        assert_int_equal((k[i].src | k[i].src_later) & ~EVKIND_SRC_ALL, 0);
        assert_int_equal(evkind_planned(&k[i]), k[i].src == 0);
        assert_true(k[i].nfields >= 1);
        for (size_t f = 0; f < k[i].nfields; f++) {
            const struct evkind_field *fd = &k[i].fields[f];
            assert_ptr_equal(evkind_field(&k[i], fd->name), fd); /* unique */
            assert_true(fd->types != 0 && (fd->types & ~EVKIND_T_ANY) == 0);
            assert_true(fd->meaning && fd->meaning[0]);
            for (size_t j = 0; j < nc; j++)
                assert_string_not_equal(fd->name, c[j].name);
            if (fd->values)
                assert_true(fd->types & EVKIND_T_STRING);
        }
    }
    assert_null(evkind_find("no_such_kind"));
    assert_null(evkind_find(NULL));
    assert_string_equal(evkind_src_name(EVKIND_SRC_RUNNER), "runner");
    assert_null(evkind_src_name(EVKIND_SRC_MCP | EVKIND_SRC_GATE));
    assert_null(evkind_src_name(0));
}

/* One enum of components for the events table, the catalog's injectors and the scorer: every
 * bit has a component name and a src value that lead back to it, the controller's two sides
 * write "controller", and each catalog injector is named as its component. */
static void test_components(void **state)
{
    unsigned all = 0;

    for (unsigned b = 1; b & EVKIND_SRC_ALL; b <<= 1) {
        const char *name = evkind_component_name(b);
        const char *src = evkind_src_name(b);
        assert_string_not_equal(name, "?");
        assert_int_equal(evkind_component_bit(name), b);
        assert_non_null(src);
        assert_true(evkind_src_bits(src) & b);
        all |= b;
    }
    assert_int_equal(all, EVKIND_SRC_ALL);
    assert_string_equal(evkind_src_name(EVKIND_SRC_CONTROLLER_MODEL), "controller");
    assert_string_equal(evkind_src_name(EVKIND_SRC_CONTROLLER), "controller");
    assert_int_equal(evkind_src_bits("controller"), EVKIND_SRC_CONTROLLER);
    assert_int_equal(evkind_src_bits("mcp"), EVKIND_SRC_MCP);
    assert_int_equal(evkind_src_bits("controller-model"), 0);
    assert_int_equal(evkind_src_bits(NULL), 0);
    assert_string_equal(evkind_component_name(EVKIND_SRC_CONTROLLER_EGRESS), "controller-egress");
    assert_string_equal(evkind_component_name(EVKIND_SRC_CONTROLLER), "?");
    assert_int_equal(evkind_component_bit("controller"), 0);
    assert_int_equal(evkind_component_bit(NULL), 0);
    for (unsigned b = 1; b & CATALOG_INJ_ALL; b <<= 1) {
        assert_string_equal(catalog_injector_name(b), evkind_component_name(b));
        assert_int_equal(catalog_injector_from_name(evkind_component_name(b)), b);
    }
    assert_null(catalog_injector_name(EVKIND_SRC_RUNNER));
    assert_int_equal(catalog_injector_from_name("agent"), 0);
    /* every src value the common field allows names some component */
    const struct evkind_field *c;
    size_t nc;
    c = evkind_common(&nc);
    for (size_t i = 0; i < nc; i++)
        if (strcmp(c[i].name, "src") == 0)
            for (const char *const *v = c[i].values; *v; v++)
                assert_int_not_equal(evkind_src_bits(*v), 0);
}

static void test_examples_pass(void **state)
{
    size_t n;
    const struct evkind *k = evkind_all(&n);

    for (size_t i = 0; i < n; i++) {
        json_t *j = example(&k[i]);
        struct err e = {0};
        assert_string_equal(json_string_value(json_object_get(j, "kind")), k[i].name);
        if (evkind_check(j, &e) != 0)
            fail_msg("%s: example rejected: %s", k[i].name, e.msg);
        /* the example's src is one of the kind's writers, now or to come */
        const char *src = json_string_value(json_object_get(j, "src"));
        int found = 0;
        for (unsigned b = 1; b & EVKIND_SRC_ALL; b <<= 1)
            found |= ((k[i].src | k[i].src_later) & b) && strcmp(evkind_src_name(b), src) == 0;
        assert_true(found);
        json_decref(j);
    }
}

/* Every kind the code writes today, from `grep -rn '"kind"' src/` and the ctl_emit /
 * ctl_emit_soon / ctl_warn calls (src/control/controller.c, proxy.c; src/mcp/session.c,
 * src/seam/seam.c). A writer that emits a new kind adds it here, and a row to the table. */
static const char *const emitted[] = {
    "plan_loaded",    /* controller.c emit_plan_loaded, seam.c emit_plan_loaded */
    "model_request",  /* proxy.c proxy_handle */
    "model_response", /* proxy.c */
    "abort",          /* core.c ctl_check_ceiling, cost ceiling */
    "fault_injected", /* proxy.c emit_fault, session.c emit_fault and mcp.annotation_lie */
    "warning",        /* controller.c ctl_warn, on_reject; session.c; seam.c events_dropped, controller_slow */
    "tool_call",      /* session.c emit_tool_call */
    "tool_result",    /* session.c emit_tool_result */
};

/* Every kind scoring reads (src/score/repscan.c). */
static const char *const read_by_scoring[] = {
    "abort",         "agent_exit",    "effect",         "egress_request", "fault_injected",
    "gate_decision", "model_request", "model_response", "plan_loaded",    "run_end",
    "tool_call",     "tool_result",   "verify",
};

static void test_code_kinds_have_rows(void **state)
{
    for (size_t i = 0; i < sizeof(emitted) / sizeof(emitted[0]); i++) {
        const struct evkind *k = evkind_find(emitted[i]);
        if (k == NULL)
            fail_msg("kind '%s' is written but has no row", emitted[i]);
        if (evkind_planned(k))
            fail_msg("kind '%s' is written but its row says not yet", emitted[i]);
    }
    for (size_t i = 0; i < sizeof(read_by_scoring) / sizeof(read_by_scoring[0]); i++)
        if (evkind_find(read_by_scoring[i]) == NULL)
            fail_msg("kind '%s' is read by scoring but has no row", read_by_scoring[i]);
}

static void test_missing_required_named(void **state)
{
    size_t n, nc;
    const struct evkind *k = evkind_all(&n);
    const struct evkind_field *c = evkind_common(&nc);

    for (size_t i = 0; i < n; i++) {
        json_t *ex = example(&k[i]);
        for (size_t f = 0; f < k[i].nfields; f++) {
            const struct evkind_field *fd = &k[i].fields[f];
            json_t *j = json_deep_copy(ex);
            json_object_del(j, fd->name);
            if (fd->required) {
                assert_err_names(j, ERR_INVALID, fd->name);
                if (!(fd->types & EVKIND_T_NULL)) { /* null is absent */
                    json_object_set_new(j, fd->name, json_null());
                    assert_err_names(j, ERR_INVALID, fd->name);
                }
            } else {
                assert_int_equal(evkind_check(j, NULL), 0);
                json_object_set_new(j, fd->name, json_null());
                assert_int_equal(evkind_check(j, NULL), 0);
            }
            json_decref(j);
        }
        for (size_t f = 0; f < nc; f++) {
            json_t *j = json_deep_copy(ex);
            json_object_del(j, c[f].name);
            if (c[f].required)
                assert_err_names(j, ERR_INVALID, c[f].name);
            else
                assert_int_equal(evkind_check(j, NULL), 0);
            json_decref(j);
        }
        json_decref(ex);
    }
}

/* A value of a type the field does not allow, or NULL when it allows every type. */
static json_t *wrong_value(unsigned types)
{
    if (!(types & EVKIND_T_STRING))
        return json_string("x");
    if (!(types & EVKIND_T_OBJECT))
        return json_object();
    if (!(types & EVKIND_T_BOOLEAN))
        return json_true();
    return NULL;
}

static void test_wrong_types_named(void **state)
{
    size_t n, nc;
    const struct evkind *k = evkind_all(&n);
    const struct evkind_field *c = evkind_common(&nc);
    int checked = 0;

    for (size_t i = 0; i < n; i++) {
        json_t *ex = example(&k[i]);
        for (size_t f = 0; f < k[i].nfields + nc; f++) {
            const struct evkind_field *fd =
                f < k[i].nfields ? &k[i].fields[f] : &c[f - k[i].nfields];
            json_t *bad, *j;
            if (strcmp(fd->name, "kind") == 0 || (bad = wrong_value(fd->types)) == NULL)
                continue; /* kind: another kind's check, tested below */
            j = json_deep_copy(ex);
            json_object_set_new(j, fd->name, bad);
            assert_err_names(j, ERR_INVALID, fd->name);
            json_decref(j);
            checked++;
        }
        json_decref(ex);
    }
    assert_true(checked > 100);
}

static void test_check_details(void **state)
{
    const struct evkind *gd = evkind_find("gate_decision");
    const struct evkind *pl = evkind_find("plan_loaded");
    json_t *j = example(gd);
    struct err e = {0};

    /* unknown fields are allowed */
    json_object_set_new(j, "something_new", json_integer(1));
    assert_int_equal(evkind_check(j, NULL), 0);
    /* a value outside the allowed ones */
    json_object_set_new(j, "decision", json_string("maybe"));
    assert_err_names(j, ERR_INVALID, "decision");
    json_decref(j);
    /* an integer is a number; a real is not an integer */
    j = example(evkind_find("abort"));
    json_object_set_new(j, "value", json_integer(2));
    assert_int_equal(evkind_check(j, NULL), 0);
    json_object_set_new(j, "seq", json_real(1.5));
    assert_err_names(j, ERR_INVALID, "seq");
    json_decref(j);
    /* array items are typed */
    j = example(pl);
    json_array_append_new(json_object_get(j, "injectors"), json_integer(3));
    assert_err_names(j, ERR_INVALID, "injectors");
    json_decref(j);
    /* src and via have closed sets */
    j = example(pl);
    json_object_set_new(j, "src", json_string("someone"));
    assert_err_names(j, ERR_INVALID, "src");
    json_object_set_new(j, "src", json_string("mcp"));
    json_object_set_new(j, "via", json_string("carrier_pigeon"));
    assert_err_names(j, ERR_INVALID, "via");
    json_decref(j);
    /* unknown kind, no kind, not an object */
    j = json_pack("{s:s,s:I,s:I,s:s,s:s}", "kind", "no_such_kind", "t", (json_int_t)1, "seq",
                  (json_int_t)0, "run", "r", "src", "mcp");
    assert_int_equal(evkind_check(j, &e), ERR_NOTFOUND);
    assert_non_null(strstr(e.msg, "no_such_kind"));
    json_object_del(j, "kind");
    assert_err_names(j, ERR_INVALID, "kind");
    json_decref(j);
    j = json_array();
    assert_int_equal(evkind_check(j, NULL), ERR_INVALID);
    json_decref(j);
    assert_int_equal(evkind_check(NULL, NULL), ERR_INVALID);
}

/* What the events writer stamps on a caller's object satisfies the common fields. */
static void test_writer_output_passes(void **state)
{
    struct ut_tmpfile t;
    const char *path = t.path;
    struct err e = {0};
    struct events_writer *w;
    struct events_reader *r;
    json_t *f = json_pack("{s:s,s:s}", "code", "plan_missing", "message", "no plan");
    json_t *ev = NULL;

    ut_tmpfile_init(&t);
    w = events_open(path, "r-1", "mcp", &e);
    assert_non_null(w);
    assert_int_equal(events_emit(w, "warning", f), 0);
    events_close(w);
    r = events_reader_open(path, &e);
    assert_non_null(r);
    assert_int_equal(events_next(r, &ev), 1);
    if (evkind_check(ev, &e) != 0)
        fail_msg("written warning rejected: %s", e.msg);
    json_decref(ev);
    events_reader_free(r);
    json_decref(f);
    unlink(path);
}

static void test_fill_page(void **state)
{
    static const char page[] = "# Title\n\nprose\n<!-- generated: common -->\nold\n"
                               "<!-- end generated: common -->\nmiddle\n"
                               "<!-- generated: kinds -->\n<!-- end generated: kinds -->\ntail";
    struct buf out = BUF_INIT, again = BUF_INIT, common = BUF_INIT;
    struct err e = {0};

    assert_int_equal(evkind_fill_page(page, strlen(page), &out, &e), 0);
    assert_non_null(strstr(out.data, "# Title\n\nprose\n<!-- generated: common -->\n\n| field"));
    assert_null(strstr(out.data, "\nold\n"));
    assert_non_null(strstr(out.data, "\n<!-- end generated: common -->\nmiddle\n"));
    assert_non_null(strstr(out.data, "### tool_result: a tool call finished\n"));
    assert_non_null(strstr(out.data, "| `delivered` | boolean | no |"));
    assert_non_null(strstr(out.data, "| `via` | string | no |"));
    assert_non_null(strstr(out.data, "### effect: a simulated backend changed its world\n\n"
                                     "Written by `world`."));
    assert_non_null(strstr(out.data, "### verify: the verify command ran (or was skipped)\n\n"
                                     "Written by `runner`."));
    assert_int_equal(strcmp(out.data + out.len - 5, "\ntail"), 0);
    evkind_markdown_common(&common);
    assert_non_null(strstr(out.data, common.data));
    /* filling a filled page changes nothing */
    assert_int_equal(evkind_fill_page(out.data, out.len, &again, &e), 0);
    assert_string_equal(again.data, out.data);

    static const char *const bad[] = {
        "<!-- generated: kinds -->\n<!-- end generated: kinds -->\n", /* no common */
        "<!-- generated: common -->\n<!-- generated: kinds -->\n",    /* nested */
        "<!-- generated: common -->\n<!-- end generated: common -->\n"
        "<!-- generated: kinds -->\n",     /* unclosed */
        "<!-- end generated: kinds -->\n", /* close only */
        "<!-- generated: faults -->\n",    /* unknown */
        "<!-- generated: common -->\n<!-- end generated: common -->\n"
        "<!-- generated: common -->\n<!-- end generated: common -->\n", /* twice */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct err e2 = {0};
        buf_reset(&again);
        assert_int_equal(evkind_fill_page(bad[i], strlen(bad[i]), &again, &e2), ERR_INVALID);
        assert_true(e2.msg[0] != '\0');
    }
    buf_release(&out);
    buf_release(&again);
    buf_release(&common);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_consistent),     cmocka_unit_test(test_components),
        cmocka_unit_test(test_examples_pass),
        cmocka_unit_test(test_code_kinds_have_rows), cmocka_unit_test(test_missing_required_named),
        cmocka_unit_test(test_wrong_types_named),    cmocka_unit_test(test_check_details),
        cmocka_unit_test(test_writer_output_passes), cmocka_unit_test(test_fill_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
