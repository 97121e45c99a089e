/* Unit tests for src/util/fs: fs_open_regular and fs_open_beneath on FIFOs, symbolic links and
 * escapes, through openat2 and through the openat(O_NOFOLLOW) walk. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/fs.h"
#include "helpers.h"
#include "util/banned.h"

static char root[64], outside[64];

static void check_beneath(int walk)
{
    struct err e = {0};
    struct buf b = BUF_INIT;
    char path[256], target[256];
    int fd;

    fs_force_walk(walk);
    /* a regular file, also one folder down */
    assert_int_equal(fs_read_file_beneath(root, "rep-000/a.json", 100, &b, &e), 0);
    assert_string_equal(b.data, "{}");
    buf_reset(&b);
    /* a FIFO: refused without blocking */
    err_clear(&e);
    assert_true(fs_open_beneath(root, "rep-000/fifo", &e) < 0);
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(e.msg, "not a regular file"));
    /* a file that is a link out of the folder, and a folder that is one */
    err_clear(&e);
    assert_true(fs_open_beneath(root, "link.json", &e) < 0);
    assert_int_equal(errno, ELOOP);
    assert_non_null(strstr(e.msg, "symbolic link"));
    err_clear(&e);
    assert_true(fs_open_beneath(root, "rep-001/secret.json", &e) < 0);
    assert_int_equal(errno, ELOOP);
    /* a link inside the folder is refused too (no link is followed) */
    err_clear(&e);
    assert_true(fs_open_beneath(root, "rep-000/inner.json", &e) < 0);
    assert_int_equal(errno, ELOOP);
    /* missing, absolute, ".." */
    err_clear(&e);
    assert_true(fs_open_beneath(root, "rep-000/none.json", &e) < 0);
    assert_int_equal(errno, ENOENT);
    assert_true(fs_open_beneath(root, "/etc/passwd", &e) < 0);
    assert_true(fs_open_beneath(root, "../x", &e) < 0);
    assert_true(fs_open_beneath(root, "rep-000/../link.json", &e) < 0);
    /* exists: links are seen, not followed; a FIFO exists */
    assert_true(fs_exists_beneath(root, "link.json"));
    assert_true(fs_exists_beneath(root, "rep-000/fifo"));
    assert_false(fs_exists_beneath(root, "rep-000/none.json"));
    /* the root itself may be a link (the user named it) */
    snprintf(path, sizeof(path), "%s/root-link", outside);
    unlink(path);
    assert_int_equal(symlink(root, path), 0);
    fd = fs_open_beneath(path, "rep-000/a.json", &e);
    assert_true(fd >= 0);
    close(fd);
    snprintf(target, sizeof(target), "%s/rep-000/fifo", root);
    err_clear(&e);
    assert_true(fs_open_regular(target, &e) < 0);
    assert_non_null(strstr(e.msg, "not a regular file"));
    buf_release(&b);
    fs_force_walk(0);
}

static void test_open_beneath(void **state)
{
    char path[256], target[256];
    struct err e = {0};

    snprintf(root, sizeof(root), "/tmp/faultline-test-fs-XXXXXX");
    assert_non_null(mkdtemp(root));
    snprintf(outside, sizeof(outside), "/tmp/faultline-test-fs-out-XXXXXX");
    assert_non_null(mkdtemp(outside));
    snprintf(path, sizeof(path), "%s/rep-000", root);
    assert_int_equal(fs_mkdirs(path, &e), 0);
    ut_put(root, "rep-000/a.json", "{}");
    ut_put(outside, "secret.json", "AKIAIOSFODNN7EXAMPLE");
    snprintf(path, sizeof(path), "%s/rep-000/fifo", root);
    assert_int_equal(mkfifo(path, 0600), 0);
    snprintf(path, sizeof(path), "%s/link.json", root);
    snprintf(target, sizeof(target), "%s/secret.json", outside);
    assert_int_equal(symlink(target, path), 0);
    snprintf(path, sizeof(path), "%s/rep-001", root);
    assert_int_equal(symlink(outside, path), 0);
    snprintf(path, sizeof(path), "%s/rep-000/inner.json", root);
    assert_int_equal(symlink("a.json", path), 0);

    check_beneath(0); /* openat2 where the kernel has it */
    check_beneath(1); /* the walk */

    snprintf(path, sizeof(path), "rm -rf %s %s", root, outside);
    assert_int_equal(system(path), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_beneath),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
