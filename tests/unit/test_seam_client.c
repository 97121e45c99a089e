/* Unit tests for src/seam/client (the control API client under the seam): URL parsing,
 * Content-Length / chunked / until-close bodies, keep-alive reuse and reconnect, limits,
 * timeouts, refused connections, bad responses, and the decide/events/health helpers. The
 * server is a forked child in this file, on 127.0.0.1, answering by request path. */
#include <arpa/inet.h>
#include <errno.h>
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

#include "seam/client.h"
#include "experiment/catalog.h"
#include "util/timeutil.h"
#include "util/banned.h"

static pid_t server_pid;
static int server_port;
static char url[64];

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

/* Serves one connection until the peer closes it or a mode closes it. */
static void serve_conn(int fd, int conn_no)
{
    char buf[65536];
    size_t have = 0;

    for (;;) {
        char *end, *cl, path[256], out[70000];
        size_t head, body = 0;
        ssize_t r;

        while ((end = memmem(buf, have, "\r\n\r\n", 4)) == NULL) {
            r = read(fd, buf + have, sizeof(buf) - have - 1);
            if (r <= 0)
                return;
            have += (size_t)r;
        }
        buf[have] = '\0';
        head = (size_t)(end - buf) + 4;
        cl = strcasestr(buf, "Content-Length:");
        if (cl && cl < end)
            body = strtoul(cl + 15, NULL, 10);
        while (have < head + body) {
            r = read(fd, buf + have, sizeof(buf) - have - 1);
            if (r <= 0)
                return;
            have += (size_t)r;
        }
        if (sscanf(buf, "%*s %255s", path) != 1)
            return;
        if (strcmp(path, "/p/cl") == 0 || strcmp(path, "/_faultline/decide") == 0 ||
            strcmp(path, "/_faultline/events") == 0) {
            /* Echo the body back, with the connection number. */
            char json[40000];
            snprintf(json, sizeof(json), "{\"conn\":%d,\"got\":%.*s}", conn_no, (int)body,
                     body ? buf + head : "null");
            snprintf(out, sizeof(out),
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "\r\n%s",
                     strlen(json), json);
            send_str(fd, out);
        } else if (strcmp(path, "/_faultline/health") == 0) {
            send_str(fd, "HTTP/1.1 200 OK\r\ncontent-length: 38\r\n\r\n"
                         "{\"ok\":true,\"run\":\"r1\",\"plan_loaded\":1}");
        } else if (strcmp(path, "/p/chunked") == 0) {
            send_str(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "4\r\n{\"a\"\r\n5;ext=1\r\n:1234\r\n1\r\n}\r\n0\r\n\r\n");
        } else if (strcmp(path, "/p/close") == 0) {
            send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"closed\":true}");
            close(fd);
            return;
        } else if (strcmp(path, "/p/big") == 0) {
            send_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n{");
        } else if (strcmp(path, "/p/bigchunk") == 0) {
            send_str(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "fffffff\r\n{");
        } else if (strcmp(path, "/p/hang") == 0) {
            sleep(3);
            return;
        } else if (strcmp(path, "/p/garbage") == 0) {
            send_str(fd, "SSH-2.0-OpenSSH\r\n\r\n");
        } else if (strcmp(path, "/p/400") == 0) {
            send_str(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 54\r\n\r\n"
                         "{\"error\":{\"type\":\"bad_request\",\"message\":\"bad stuff\"}}");
        } else if (strcmp(path, "/p/kill") == 0) {
            /* Answer, then close the kept connection while the client is idle. */
            send_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
            usleep(100000);
            close(fd);
            return;
        } else {
            send_str(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        }
        memmove(buf, buf + head + body, have - head - body);
        have -= head + body;
    }
}

static int setup_server(void **state)
{
    int fds[2], lfd, one = 1;
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);

    assert_int_equal(pipe(fds), 0);
    server_pid = fork();
    assert_true(server_pid >= 0);
    if (server_pid == 0) {
        int conn_no = 0;
        close(fds[0]);
        lfd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 16) < 0)
            _exit(1);
        getsockname(lfd, (struct sockaddr *)&sa, &sl);
        {
            int port = ntohs(sa.sin_port);
            if (write(fds[1], &port, sizeof(port)) != sizeof(port))
                _exit(1);
        }
        close(fds[1]);
        alarm(120); /* never outlive the test by much */
        for (;;) {
            int c = accept(lfd, NULL, NULL);
            if (c < 0)
                continue;
            serve_conn(c, ++conn_no);
            close(c);
        }
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &server_port, sizeof(server_port)), sizeof(server_port));
    close(fds[0]);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/p/", server_port);
    return 0;
}

static int teardown_server(void **state)
{
    kill(server_pid, SIGKILL);
    waitpid(server_pid, NULL, 0);
    return 0;
}

static void test_url_parsing(void **state)
{
    struct err e = {0};
    struct seam_client *c;
    const char *bad[] = {"https://127.0.0.1:1", "ftp://x", "http://", "http://:80",
                         "http://h:0",         "http://h:99999", "http://h:8x", "http://[::1",
                         NULL};

    for (int i = 0; bad[i]; i++) {
        err_clear(&e);
        assert_null(seam_client_new(bad[i], &e));
        assert_int_equal(e.code, ERR_INVALID);
    }
    c = seam_client_new("http://[::1]:8080/", &e);
    assert_non_null(c);
    seam_client_free(c);
    c = seam_client_new("http://localhost", &e);
    assert_non_null(c);
    seam_client_free(c);
    seam_client_free(NULL);
}

static void test_content_length_and_reuse(void **state)
{
    struct err e = {0};
    struct seam_client *c = seam_client_new(url, &e);
    json_t *body = json_pack("{s:s}", "x", "y"), *reply = NULL, *reply2 = NULL;

    assert_non_null(c);
    assert_int_equal(seam_client_post_json(c, "/cl", body, &reply, &e), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(reply, "got"), "x")), "y");
    /* The second request reuses the connection. */
    assert_int_equal(seam_client_post_json(c, "/cl", body, &reply2, &e), 0);
    assert_int_equal(json_integer_value(json_object_get(reply2, "conn")),
                     json_integer_value(json_object_get(reply, "conn")));
    json_decref(reply);
    json_decref(reply2);
    json_decref(body);
    seam_client_free(c);
}

static void test_body_framings(void **state)
{
    struct err e = {0};
    struct seam_client *c = seam_client_new(url, &e);
    struct buf resp = BUF_INIT;
    int status;

    assert_int_equal(seam_client_request(c, "GET", "/chunked", NULL, 0, &status, &resp, &e), 0);
    assert_int_equal(status, 200);
    assert_string_equal(resp.data, "{\"a\":1234}");
    buf_reset(&resp);
    assert_int_equal(seam_client_request(c, "GET", "/close", NULL, 0, &status, &resp, &e), 0);
    assert_string_equal(resp.data, "{\"closed\":true}");
    buf_reset(&resp);
    /* After a close, the next request opens a new connection by itself. */
    assert_int_equal(seam_client_request(c, "GET", "/chunked", NULL, 0, &status, &resp, &e), 0);
    assert_string_equal(resp.data, "{\"a\":1234}");
    buf_reset(&resp);
    assert_int_equal(seam_client_request(c, "GET", "/nothing", NULL, 0, &status, &resp, &e), 0);
    assert_int_equal(status, 404);
    buf_release(&resp);
    seam_client_free(c);
}

static void test_reconnect_after_idle_close(void **state)
{
    struct err e = {0};
    struct seam_client *c = seam_client_new(url, &e);
    struct buf resp = BUF_INIT;
    int status;

    assert_int_equal(seam_client_request(c, "GET", "/kill", NULL, 0, &status, &resp, &e), 0);
    usleep(300000); /* the server closed the kept connection meanwhile */
    buf_reset(&resp);
    assert_int_equal(seam_client_request(c, "GET", "/chunked", NULL, 0, &status, &resp, &e), 0);
    assert_string_equal(resp.data, "{\"a\":1234}");
    buf_release(&resp);
    seam_client_free(c);
}

static void test_limits_and_errors(void **state)
{
    struct err e = {0};
    struct seam_client *c = seam_client_new(url, &e);
    struct buf resp = BUF_INIT;
    json_t *reply = NULL, *body = json_object();
    int status;
    int64_t t0;

    seam_client_set_limits(c, 5000, 5000, 1024);
    assert_int_equal(seam_client_request(c, "GET", "/big", NULL, 0, &status, &resp, &e), ERR_LIMIT);
    err_clear(&e);
    assert_int_equal(seam_client_request(c, "GET", "/bigchunk", NULL, 0, &status, &resp, &e),
                     ERR_LIMIT);
    err_clear(&e);
    assert_int_equal(seam_client_request(c, "GET", "/garbage", NULL, 0, &status, &resp, &e),
                     ERR_PROTO);
    err_clear(&e);
    seam_client_set_limits(c, 0, 500, 0);
    t0 = time_mono_ns();
    assert_int_equal(seam_client_request(c, "GET", "/hang", NULL, 0, &status, &resp, &e),
                     ERR_TIMEOUT);
    assert_true(time_mono_ns() - t0 < 2000000000LL);
    assert_non_null(strstr(e.msg, "500 ms"));
    err_clear(&e);
    seam_client_set_limits(c, 0, 5000, 0);
    assert_int_equal(seam_client_post_json(c, "/400", body, &reply, &e), ERR_PROTO);
    assert_non_null(strstr(e.msg, "400"));
    assert_non_null(strstr(e.msg, "bad stuff"));
    assert_null(reply);
    buf_release(&resp);
    json_decref(body);
    seam_client_free(c);
}

static void test_refused(void **state)
{
    struct err e = {0};
    struct seam_client *c;
    struct buf resp = BUF_INIT;
    int status, fd = socket(AF_INET, SOCK_STREAM, 0), port;
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    char u[64];

    /* A port that was free a moment ago and has no listener. */
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    port = ntohs(sa.sin_port);
    close(fd);
    snprintf(u, sizeof(u), "http://127.0.0.1:%d", port);
    c = seam_client_new(u, &e);
    assert_int_equal(seam_client_request(c, "GET", "/", NULL, 0, &status, &resp, &e), ERR_IO);
    assert_non_null(strstr(e.msg, "cannot connect"));
    buf_release(&resp);
    seam_client_free(c);
}

static void test_helpers(void **state)
{
    struct err e = {0};
    char base[64];
    struct seam_client *c;
    struct plan_call pc = {0};
    json_t *reply = NULL, *args = json_pack("{s:s}", "path", "README.md");
    json_t *evs = json_array();

    snprintf(base, sizeof(base), "http://127.0.0.1:%d", server_port);
    c = seam_client_new(base, &e);
    pc.component = CATALOG_INJ_MCP;
    pc.tool = "read";
    pc.server = "fs";
    pc.args = args;
    assert_int_equal(seam_client_decide(c, &pc, &reply, &e), 0);
    {
        json_t *got = json_object_get(reply, "got");
        assert_string_equal(json_string_value(json_object_get(got, "component")), "mcp");
        assert_string_equal(json_string_value(json_object_get(got, "tool")), "read");
        assert_string_equal(json_string_value(json_object_get(got, "server")), "fs");
        assert_true(json_is_null(json_object_get(got, "host")));
        assert_string_equal(json_string_value(json_object_get(json_object_get(got, "args"), "path")),
                            "README.md");
    }
    json_decref(reply);
    pc.component = CATALOG_INJ_MCP | CATALOG_INJ_GATE;
    assert_int_equal(seam_client_decide(c, &pc, &reply, &e), ERR_INVALID);
    err_clear(&e);
    for (int i = 0; i < 1001; i++)
        json_array_append_new(evs, json_pack("{s:s}", "kind", "warning"));
    assert_int_equal(seam_client_post_events(c, evs, &e), ERR_LIMIT);
    err_clear(&e);
    json_array_clear(evs);
    json_array_append_new(evs, json_pack("{s:s}", "kind", "warning"));
    assert_int_equal(seam_client_post_events(c, evs, &e), 0);
    assert_int_equal(seam_client_health(c, &reply, &e), 0);
    assert_true(json_is_true(json_object_get(reply, "ok")));
    json_decref(reply);
    json_decref(args);
    json_decref(evs);
    seam_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_parsing),
        cmocka_unit_test(test_content_length_and_reuse),
        cmocka_unit_test(test_body_framings),
        cmocka_unit_test(test_reconnect_after_idle_close),
        cmocka_unit_test(test_limits_and_errors),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_helpers),
    };
    return cmocka_run_group_tests(tests, setup_server, teardown_server);
}
