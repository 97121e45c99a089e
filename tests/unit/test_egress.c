/* Unit tests for src/control/egress's pure parts: CONNECT and absolute-form targets,
 * --resolve entries, and which destination addresses the proxy refuses unless named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "control/egress.h"
#include "control/hostport.h"
#include "util/banned.h"

static void test_authority(void **state)
{
    struct egress_target t;
    struct err e = {0};

    (void)state;
    assert_int_equal(egress_parse_authority("Registry.NPMjs.org:443", &t, &e), 0);
    assert_string_equal(t.host, "registry.npmjs.org");
    assert_int_equal(t.port, 443);
    assert_int_equal(egress_parse_authority("[::1]:8443", &t, &e), 0);
    assert_string_equal(t.host, "::1");
    assert_int_equal(t.port, 8443);
    assert_int_equal(egress_parse_authority("example.com.:1", &t, &e), 0);
    assert_string_equal(t.host, "example.com");

    const char *bad[] = {"",
                         "example.com",
                         "example.com:",
                         "example.com:0",
                         "example.com:65536",
                         "example.com:80x",
                         "example.com:-1",
                         ":443",
                         "[::1]",
                         "[::1:443",
                         "::1:443",
                         "exa mple.com:443",
                         "a@b:443",
                         "host:443/path",
                         NULL};
    for (int i = 0; bad[i]; i++) {
        struct err e2 = {0};
        if (egress_parse_authority(bad[i], &t, &e2) != ERR_PARSE)
            fail_msg("accepted '%s'", bad[i]);
        assert_non_null(strstr(e2.msg, "CONNECT target"));
    }
    char longhost[300];
    memset(longhost, 'a', 260);
    memcpy(longhost + 260, ":443", 5);
    assert_int_equal(egress_parse_authority(longhost, &t, &e), ERR_PARSE);
}

static void test_absolute(void **state)
{
    struct egress_target t;
    struct err e = {0};

    (void)state;
    assert_int_equal(egress_parse_absolute("http://Registry.test/left-pad?x=1", &t, &e), 0);
    assert_string_equal(t.host, "registry.test");
    assert_int_equal(t.port, 80);
    assert_string_equal(t.path, "/left-pad?x=1");
    assert_int_equal(egress_parse_absolute("HTTP://h:8080", &t, &e), 0);
    assert_int_equal(t.port, 8080);
    assert_string_equal(t.path, "/");
    assert_int_equal(egress_parse_absolute("http://[fe80::1]:81/p", &t, &e), 0);
    assert_string_equal(t.host, "fe80::1");
    assert_string_equal(t.path, "/p");

    struct err e2 = {0};
    assert_int_equal(egress_parse_absolute("https://h/", &t, &e2), ERR_UNSUPPORTED);
    assert_non_null(strstr(e2.msg, "CONNECT"));
    const char *bad[] = {"/origin-form", "ftp://h/",    "http://",     "http:///x", "http://u@h/",
                         "http://h:0/",  "http://h:x/", "http://h h/", NULL};
    for (int i = 0; bad[i]; i++) {
        struct err e3 = {0};
        if (egress_parse_absolute(bad[i], &t, &e3) != ERR_PARSE)
            fail_msg("accepted '%s'", bad[i]);
    }
}

static void test_resolve(void **state)
{
    struct egress_resolve r;
    struct err e = {0};

    (void)state;
    assert_int_equal(egress_resolve_parse("Registry.test:8080:127.0.0.1", &r, &e), 0);
    assert_string_equal(r.host, "registry.test");
    assert_int_equal(r.port, 8080);
    assert_int_equal(r.addr.ss_family, AF_INET);
    assert_int_equal(egress_resolve_parse("h:*:[::1]", &r, &e), 0);
    assert_int_equal(r.port, 0);
    assert_int_equal(r.addr.ss_family, AF_INET6);

    const char *bad[] = {"h",
                         "h:80",
                         "h:80:",
                         ":80:127.0.0.1",
                         "h:0:127.0.0.1",
                         "h:70000:127.0.0.1",
                         "h:80:localhost",
                         "h:80:[::1",
                         "h:80:1.2.3",
                         "h:x:127.0.0.1",
                         NULL};
    for (int i = 0; bad[i]; i++) {
        struct err e2 = {0};
        if (egress_resolve_parse(bad[i], &r, &e2) != ERR_INVALID)
            fail_msg("accepted '%s'", bad[i]);
        assert_non_null(strstr(e2.msg, "--resolve"));
    }
}

static int internal(const char *a)
{
    struct sockaddr_in s4 = {.sin_family = AF_INET};
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};

    if (inet_pton(AF_INET, a, &s4.sin_addr) == 1)
        return egress_addr_internal((struct sockaddr *)&s4);
    assert_int_equal(inet_pton(AF_INET6, a, &s6.sin6_addr), 1);
    return egress_addr_internal((struct sockaddr *)&s6);
}

static void test_internal(void **state)
{
    const char *in[] = {"127.0.0.1",
                        "127.255.0.9",
                        "10.0.0.1",
                        "172.16.0.1",
                        "172.31.255.255",
                        "192.168.1.1",
                        "169.254.169.254",
                        "100.64.0.1",
                        "0.0.0.0",
                        "224.0.0.1",
                        "255.255.255.255",
                        "::1",
                        "::",
                        "fc00::1",
                        "fd12::1",
                        "fe80::1",
                        "ff02::1",
                        "::ffff:127.0.0.1",
                        "::ffff:10.0.0.1",
                        NULL};
    const char *out[] = {"1.1.1.1",        "8.8.8.8",     "172.15.255.255", "172.32.0.1",
                         "192.169.0.1",    "100.128.0.1", "11.0.0.1",       "2606:4700::1111",
                         "::ffff:8.8.8.8", NULL};

    (void)state;
    for (int i = 0; in[i]; i++)
        if (!internal(in[i]))
            fail_msg("'%s' not refused", in[i]);
    for (int i = 0; out[i]; i++)
        if (internal(out[i]))
            fail_msg("'%s' refused", out[i]);
}

/* --host-port-fd FD:PORT[,FD:PORT...] (hostport.h): appended across repeats, ports once each,
 * at most max in all. */
static void test_host_port_spec(void **state)
{
    struct hostport_spec v[3];
    struct err e = {0};
    size_t n = 0;

    (void)state;
    assert_int_equal(hostport_parse("7:5432,9:3000", v, 3, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].fd, 7);
    assert_int_equal(v[0].port, 5432);
    assert_int_equal(v[1].fd, 9);
    assert_int_equal(v[1].port, 3000);
    assert_int_equal(hostport_parse("0:65535", v, 3, &n, &e), 0);
    assert_int_equal(n, 3);
    assert_int_equal(hostport_parse("11:1", v, 3, &n, &e), ERR_LIMIT);
    assert_non_null(strstr(e.msg, "at most 3 host ports"));
    n = 0;
    memset(&e, 0, sizeof(e));
    assert_int_equal(hostport_parse("7:5432,8:5432", v, 3, &n, &e), ERR_INVALID);
    assert_non_null(strstr(e.msg, "port 5432 given twice"));
    static const char *const bad[] = {"",        "7",           "7:",   ":80",        "7:0",
                                      "7:65536", "x:80",        "7:8x", "7:80,",      "-1:80",
                                      "7:80:1",  "123456789:1", ",",    "7:80,,8:81", NULL};
    for (int i = 0; bad[i]; i++) {
        struct err be = {0};
        n = 0;
        if (hostport_parse(bad[i], v, 3, &n, &be) != ERR_INVALID)
            fail_msg("'%s' accepted", bad[i]);
        assert_non_null(strstr(be.msg, "--host-port-fd"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_authority),      cmocka_unit_test(test_absolute),
        cmocka_unit_test(test_resolve),        cmocka_unit_test(test_internal),
        cmocka_unit_test(test_host_port_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
