/* Unit tests for src/run/init: every agent with every fault of the catalog either renders an
 * experiment and a mock script that validate, or is refused with the reason (a boundary init
 * does not set up offline); nothing is ever replaced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "experiment/catalog.h"
#include "experiment/experiment.h"
#include "model/mockscript.h"
#include "run/init.h"
#include "util/fs.h"
#include "util/banned.h"

static int expect_written(enum init_agent a, const struct catalog_fault *f)
{
    if (strcmp(f->family, "llm") == 0)
        return 1;
    if (strcmp(f->family, "tool") == 0 || strcmp(f->family, "mcp") == 0 ||
        strcmp(f->family, "inject") == 0)
        return a != INIT_AGENT_CODEX;
    return 0;
}

static void test_every_pair_validates_or_is_refused(void **state)
{
    size_t n;
    const struct catalog_fault *fs = catalog_faults(&n);
    int written = 0;

    (void)state;
    for (int a = INIT_AGENT_CLAUDE_CODE; a <= INIT_AGENT_REFERENCE; a++) {
        for (size_t i = 0; i < n; i++) {
            struct buf exp = BUF_INIT, script = BUF_INIT;
            struct err e = {0};
            int rc = init_render((enum init_agent)a, fs[i].id, "m.yaml", &exp, &script, &e);

            if (!expect_written((enum init_agent)a, &fs[i])) {
                assert_int_equal(rc, ERR_INVALID);
                assert_true(strlen(e.msg) > 0);
            } else {
                struct experiment_diags d = {0};
                struct err pe = {0};
                struct experiment *x;
                struct mockscript *s;

                assert_int_equal(rc, 0);
                x = experiment_parse("init.yaml", exp.data, exp.len, &d, &pe);
                if (x == NULL) {
                    struct buf m = BUF_INIT;
                    experiment_diags_format(&d, "init.yaml", &m);
                    fail_msg("%s: %s\n%s", fs[i].id, m.data, exp.data);
                }
                assert_int_equal(x->nfaults, 1);
                assert_string_equal(x->faults[0].def->id, fs[i].id);
                assert_true(x->abort.cost_usd_above > 0);
                experiment_free(x);
                experiment_diags_release(&d);
                s = mockscript_parse(script.data, script.len, "m.yaml", &pe);
                assert_non_null(s);
                mockscript_free(s);
                written++;
            }
            buf_release(&exp);
            buf_release(&script);
        }
    }
    assert_true(written > 40);
}

static void test_write_never_replaces(void **state)
{
    char dir[] = "/tmp/test-init-XXXXXX";
    struct buf w = BUF_INIT, path = BUF_INIT, text = BUF_INIT;
    struct err e = {0};

    (void)state;
    assert_non_null(mkdtemp(dir));
    assert_int_equal(init_write(dir, INIT_AGENT_REFERENCE, "llm.rate_limit", &w, &e), 0);
    assert_non_null(strstr(w.data, "llm.rate_limit.yaml"));
    assert_non_null(strstr(w.data, "llm.rate_limit.model.yaml"));
    /* the user edits the script; a second init refuses and leaves it as it is */
    buf_addf(&path, "%s/llm.rate_limit.model.yaml", dir);
    assert_int_equal(fs_write_file(path.data, "edited\n", 7, &e), 0);
    err_clear(&e);
    assert_int_equal(init_write(dir, INIT_AGENT_REFERENCE, "llm.rate_limit", &w, &e),
                     ERR_INVALID);
    assert_non_null(strstr(e.msg, "exists already"));
    assert_int_equal(fs_read_file(path.data, 1024, &text, &e), 0);
    assert_string_equal(text.data, "edited\n");
    err_clear(&e);
    assert_int_equal(fs_remove_tree(dir, &e), 0);
    buf_release(&w);
    buf_release(&path);
    buf_release(&text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_pair_validates_or_is_refused),
        cmocka_unit_test(test_write_never_replaces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
