/* Unit tests for src/sandbox: the oci backend's argument vector, for podman and for docker
 * (no docker engine runs here, so its vector is checked here and the podman one also for real
 * in tests/e2e/t0961), and the environment every backend gives the sandbox. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <stdio.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/backend.h"
#include "sandbox/oci.h"
#include "util/fs.h"
#include "util/proc.h"
#include "util/banned.h"

static const char *const spec_env[] = {"ANTHROPIC_API_KEY=sk-secret-value",
                                       "FAULTLINE_CANARY=E-FAULTLINE-01234567", NULL};
static const char *const spec_ro[] = {"/opt/agent/node_modules", NULL};

static void fill(struct sandbox *sb)
{
    memset(sb, 0, sizeof(*sb));
    sb->workdir = (char *)"/tmp/wt/work";
    sb->homedir = (char *)"/tmp/wt/home";
    sb->self_exe = (char *)"/usr/local/bin/faultline";
    sb->env = (char **)spec_env;
    sb->ro_paths = (char **)spec_ro;
    sb->limits.nproc = 512;
    sb->limits.nofile = 4096;
    sb->limits.fsize_mb = 1024;
    sb->limits.memory_mb = 2048;
    sb->status_wfd = -1;
}

/* The index of s in a's vector after from, or -1. */
static long find(const struct args *a, size_t from, const char *s)
{
    for (size_t i = from; i < a->n; i++)
        if (strcmp(a->v[i], s) == 0)
            return (long)i;
    return -1;
}

/* flag followed by value somewhere in the vector */
static int has_pair(const struct args *a, const char *flag, const char *value)
{
    for (size_t i = 0; i + 1 < a->n; i++)
        if (strcmp(a->v[i], flag) == 0 && strcmp(a->v[i + 1], value) == 0)
            return 1;
    return 0;
}

static void check_common(const struct args *a)
{
    assert_true(has_pair(a, "--cap-drop", "ALL"));
    assert_true(has_pair(a, "--security-opt", "no-new-privileges"));
    assert_true(has_pair(a, "--user", "65534:65534"));
    assert_true(has_pair(a, "--pids-limit", "512"));
    assert_true(has_pair(a, "--ulimit", "nproc=512:512"));
    assert_true(has_pair(a, "--ulimit", "nofile=4096:4096"));
    assert_true(has_pair(a, "--memory", "2048m"));
    assert_true(find(a, 0, "--read-only") > 0);
    assert_true(has_pair(a, "--tmpfs", "/tmp"));
    assert_true(has_pair(a, "--volume", "/tmp/wt/work:/work"));
    assert_true(has_pair(a, "--volume", "/tmp/wt/home:/home/agent"));
    assert_true(
        has_pair(a, "--volume", "/usr/local/bin/faultline:/opt/faultline/bin/faultline:ro"));
    assert_true(has_pair(a, "--volume", "/opt/agent/node_modules:/opt/agent/node_modules:ro"));
    assert_true(has_pair(a, "--volume", "/usr:/usr:ro"));
    assert_true(has_pair(a, "--workdir", "/work"));
    /* variables by name only: no value ever in the vector */
    assert_true(has_pair(a, "--env", "ANTHROPIC_API_KEY"));
    assert_true(has_pair(a, "--env", "FAULTLINE_CANARY"));
    assert_true(has_pair(a, "--env", "HOME"));
    assert_true(has_pair(a, "--env", "FAULTLINE_SANDBOX"));
    for (size_t i = 0; i < a->n; i++)
        assert_null(strstr(a->v[i], "sk-secret-value"));
    /* the image, then the command, last */
    assert_string_equal(a->v[a->n - 4], OCI_DEFAULT_IMAGE);
    assert_string_equal(a->v[a->n - 3], "/bin/sh");
    assert_string_equal(a->v[a->n - 2], "-c");
    assert_string_equal(a->v[a->n - 1], "claude -p hi");
    assert_null(a->v[a->n]);
}

static void test_podman_argv(void **state)
{
    struct sandbox sb;
    struct args a = {0};

    (void)state;
    fill(&sb);
    oci_argv(&a, "podman", &sb, "faultline-1", "/proc/7/fd/9", "claude -p hi");
    assert_string_equal(a.v[0], "podman");
    assert_string_equal(a.v[1], "run");
    assert_true(find(&a, 0, "--rm") > 0);
    assert_true(has_pair(&a, "--name", "faultline-1"));
    assert_true(has_pair(&a, "--network", "ns:/proc/7/fd/9"));
    check_common(&a);
    args_release(&a);
}

static void test_docker_argv(void **state)
{
    struct sandbox sb;
    struct args a = {0};

    (void)state;
    fill(&sb);
    oci_argv(&a, "docker", &sb, "faultline-2", "/proc/7/fd/9", "claude -p hi");
    assert_string_equal(a.v[0], "docker");
    assert_string_equal(a.v[1], "run");
    /* docker cannot join a namespace by path: no network at all, never the host's */
    assert_true(has_pair(&a, "--network", "none"));
    assert_int_equal(find(&a, 0, "ns:/proc/7/fd/9"), -1);
    check_common(&a);
    args_release(&a);
}

static void test_user_image_gets_no_host_usr(void **state)
{
    struct sandbox sb;
    struct args a = {0};

    (void)state;
    fill(&sb);
    sb.image = (char *)"localhost/my-agent:2";
    oci_argv(&a, "podman", &sb, "faultline-3", "/proc/7/fd/9", "true");
    assert_false(has_pair(&a, "--volume", "/usr:/usr:ro"));
    assert_string_equal(a.v[a.n - 4], "localhost/my-agent:2");
    args_release(&a);
}

/* A gated spawn with a status pipe: podman passes it in as descriptor 3 and the command runs
 * under the supervisor; docker cannot pass it, so it runs the command alone. */
static void test_oci_argv_supervised(void **state)
{
    struct sandbox sb;
    struct args a = {0};
    long img;

    (void)state;
    fill(&sb);
    sb.status_wfd = 7;
    oci_argv(&a, "podman", &sb, "faultline-4", "/proc/7/fd/9", "claude -p hi");
    assert_true(has_pair(&a, "--preserve-fds", "1"));
    img = find(&a, 0, OCI_DEFAULT_IMAGE);
    assert_true(img > 0);
    assert_string_equal(a.v[img + 1], "/opt/faultline/bin/faultline");
    assert_string_equal(a.v[img + 2], "sandbox");
    assert_string_equal(a.v[img + 3], "supervise");
    assert_string_equal(a.v[img + 4], "--status-fd");
    assert_string_equal(a.v[img + 5], "3");
    assert_string_equal(a.v[img + 6], "--");
    assert_string_equal(a.v[img + 7], "/bin/sh");
    assert_string_equal(a.v[a.n - 1], "claude -p hi");
    args_release(&a);

    oci_argv(&a, "docker", &sb, "faultline-5", "/proc/7/fd/9", "claude -p hi");
    assert_int_equal(find(&a, 0, "--preserve-fds"), -1);
    assert_int_equal(find(&a, 0, "supervise"), -1);
    check_common(&a);
    args_release(&a);

    /* no faultline bound: nothing to supervise with */
    sb.self_exe = NULL;
    oci_argv(&a, "podman", &sb, "faultline-6", "/proc/7/fd/9", "true");
    assert_int_equal(find(&a, 0, "--preserve-fds"), -1);
    assert_int_equal(find(&a, 0, "supervise"), -1);
    args_release(&a);
}

/* `--sandbox-image node` is the -node image, which has its own /usr and /etc. */
static void test_node_image_is_self_contained(void **state)
{
    struct sandbox sb;
    struct args a = {0};

    (void)state;
    assert_string_equal(oci_image_name(NULL), OCI_DEFAULT_IMAGE);
    assert_string_equal(oci_image_name("node"), OCI_NODE_IMAGE);
    assert_string_equal(oci_image_name("localhost/my-agent:2"), "localhost/my-agent:2");
    fill(&sb);
    sb.image = (char *)"node";
    oci_argv(&a, "podman", &sb, "faultline-7", "/proc/7/fd/9", "true");
    assert_string_equal(a.v[a.n - 4], OCI_NODE_IMAGE);
    assert_false(has_pair(&a, "--volume", "/usr:/usr:ro"));
    assert_false(has_pair(&a, "--volume", "/etc:/etc:ro"));
    /* the same rules as every image */
    assert_true(has_pair(&a, "--cap-drop", "ALL"));
    assert_true(has_pair(&a, "--user", "65534:65534"));
    assert_true(find(&a, 0, "--read-only") > 0);
    assert_true(has_pair(&a, "--network", "ns:/proc/7/fd/9"));
    assert_true(
        has_pair(&a, "--volume", "/usr/local/bin/faultline:/opt/faultline/bin/faultline:ro"));
    args_release(&a);
}

/* The images are imported with the engine's own flags: docker's import has no --quiet. */
static void test_import_argv(void **state)
{
    struct args a = {0};

    (void)state;
    oci_import_argv(&a, "podman", "/tmp/x/root.tar", OCI_NODE_IMAGE,
                    "LABEL faultline.libs=/l/a.so");
    assert_string_equal(a.v[0], "podman");
    assert_string_equal(a.v[1], "import");
    assert_true(find(&a, 0, "--quiet") > 0);
    assert_true(has_pair(&a, "--change", "CMD [\"/bin/sh\"]"));
    assert_true(has_pair(&a, "--change", "LABEL faultline.libs=/l/a.so"));
    assert_string_equal(a.v[a.n - 2], "/tmp/x/root.tar");
    assert_string_equal(a.v[a.n - 1], OCI_NODE_IMAGE);
    args_release(&a);
    oci_import_argv(&a, "docker", "/tmp/x/root.tar", OCI_DEFAULT_IMAGE, NULL);
    assert_string_equal(a.v[0], "docker");
    assert_int_equal(find(&a, 0, "--quiet"), -1);
    assert_int_equal(find(&a, 0, "--change"), -1);
    assert_string_equal(a.v[a.n - 1], OCI_DEFAULT_IMAGE);
    args_release(&a);
}

static void test_env_sets_home_path_and_flag(void **state)
{
    struct sandbox sb;
    char **env;
    int home = 0, path = 0, flag = 0, key = 0;

    (void)state;
    fill(&sb);
    env = sandbox_env(&sb);
    for (char **v = env; *v; v++) {
        home += strcmp(*v, "HOME=/home/agent") == 0;
        path += strncmp(*v, "PATH=/opt/faultline/bin:", 24) == 0;
        flag += strcmp(*v, "FAULTLINE_SANDBOX=1") == 0;
        key += strcmp(*v, "ANTHROPIC_API_KEY=sk-secret-value") == 0;
    }
    assert_int_equal(home, 1);
    assert_int_equal(path, 1);
    assert_int_equal(flag, 1);
    assert_int_equal(key, 1);
    free(env);
}

/* dir (a mkdtemp template) made, traversable by the sandbox user, with work (dir/w, mode
 * work_mode) and home (dir/h, 0700) in it. */
static void make_dirs(char *dir, char *work, size_t wsize, mode_t work_mode, char *home,
                      size_t hsize)
{
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0711);
    snprintf(work, wsize, "%s/w", dir);
    snprintf(home, hsize, "%s/h", dir);
    assert_int_equal(mkdir(work, work_mode), 0);
    chmod(work, work_mode); /* past the umask */
    assert_int_equal(mkdir(home, 0700), 0);
}

/* A real sandbox: spawn, let the command end, then kill with a long grace: nothing is left,
 * so the kill returns at once instead of waiting the grace out. */
static void test_kill_after_exit_is_immediate(void **state)
{
    char dir[] = "/tmp/test-sandbox-XXXXXX";
    char work[64], home[64];
    struct sandbox_spec spec;
    struct sandbox *sb = NULL;
    struct proc p;
    struct err e = {0};
    int lfd = -1;
    uint16_t port;
    uint64_t t0;

    (void)state;
    make_dirs(dir, work, sizeof(work), 0700, home, sizeof(home));
    memset(&spec, 0, sizeof(spec));
    spec.workdir = work;
    spec.homedir = home;
    assert_int_equal(sandbox_open(&sb, &spec, &lfd, &port, &e), 0);
    assert_true(port > 0);
    assert_int_equal(sandbox_spawn(sb, "exit 3", -1, -1, &p, &e), 0);
    assert_int_equal(proc_wait(&p, 10000), 0);
    assert_int_equal(proc_exit_code(&p), 3);
    proc_release(&p);
    t0 = sandbox_mono_ms();
    assert_int_equal(sandbox_kill(sb, 3000), 0);
    assert_true(sandbox_mono_ms() - t0 < 500);
    /* and a command still running is ended within the grace */
    assert_int_equal(sandbox_spawn(sb, "sleep 60", -1, -1, &p, &e), 0);
    t0 = sandbox_mono_ms();
    assert_int_equal(sandbox_kill(sb, 3000), 0);
    assert_int_equal(proc_wait(&p, 5000), 0);
    assert_true(sandbox_mono_ms() - t0 < 3000);
    proc_release(&p);
    close(lfd);
    sandbox_close(sb);
    assert_int_equal(fs_remove_tree(dir, &e), 0);
}

/* A gated command runs nothing before sandbox_go, and nothing at all after sandbox_no_go. */
static void test_gated_spawn_waits_for_go(void **state)
{
    char dir[] = "/tmp/test-sandbox-XXXXXX";
    char work[64], home[64], ran[96];
    struct sandbox_spec spec;
    struct sandbox *sb = NULL;
    struct proc p;
    struct err e = {0};
    struct stat st;
    int lfd = -1;
    uint16_t port;

    (void)state;
    /* the sandbox user (nobody, as root) writes the marker in work */
    make_dirs(dir, work, sizeof(work), 0777, home, sizeof(home));
    snprintf(ran, sizeof(ran), "%s/ran", work);
    memset(&spec, 0, sizeof(spec));
    spec.workdir = work;
    spec.homedir = home;
    assert_int_equal(sandbox_open(&sb, &spec, &lfd, &port, &e), 0);

    /* held at the gate: the sandbox is up, the command has not run */
    assert_int_equal(
        sandbox_spawn_gated(sb, "read -r x || true; touch /work/ran; exit 4", -1, -1, NULL, &p, &e),
        0);
    assert_int_equal(proc_wait(&p, 300), ERR_TIMEOUT);
    assert_int_not_equal(stat(ran, &st), 0);
    /* let go: it runs, with /dev/null as stdin (its read sees the end at once) */
    assert_int_equal(sandbox_go(sb, &p, &e), 0);
    assert_int_equal(proc_wait(&p, 10000), 0);
    assert_int_equal(proc_exit_code(&p), 4);
    assert_int_equal(stat(ran, &st), 0);
    proc_release(&p);
    unlink(ran);

    /* the gate closed: it exits SANDBOX_GATE_CLOSED without running */
    assert_int_equal(sandbox_spawn_gated(sb, "touch /work/ran", -1, -1, NULL, &p, &e), 0);
    sandbox_no_go(&p);
    assert_int_equal(proc_wait(&p, 10000), 0);
    assert_int_equal(proc_exit_code(&p), SANDBOX_GATE_CLOSED);
    assert_int_not_equal(stat(ran, &st), 0);
    proc_release(&p);

    assert_int_equal(sandbox_kill(sb, 3000), 0);
    close(lfd);
    sandbox_close(sb);
    assert_int_equal(fs_remove_tree(dir, &e), 0);
}

/* The listeners of sandbox_open for spec.host_ports (sandbox.h): one per port, on 127.0.0.1:PORT
 * inside the namespace, in the spec's order, besides the controller's ephemeral ones; the
 * userns descriptor still found after them when the caller is not root. 0 when they check. */
static int check_host_ports(const char *work, const char *home, int want_userns)
{
    static const int ports[] = {5432, 3000};
    struct sandbox_spec spec;
    struct sandbox *sb = NULL;
    struct sockaddr_in sa;
    socklen_t salen;
    struct err e = {0};
    int lfd = -1, hp = 0, rc = 1;
    uint16_t port, eport;

    memset(&spec, 0, sizeof(spec));
    spec.workdir = work;
    spec.homedir = home;
    spec.host_ports = ports;
    spec.nhost_ports = 2;
    if (sandbox_open(&sb, &spec, &lfd, &port, &e) != 0) {
        fprintf(stderr, "sandbox_open: %s\n", e.msg);
        return 1;
    }
    sandbox_egress_listener(sb, &eport);
    for (size_t i = 0; i < 2; i++) {
        int fd = sandbox_host_port_listener(sb, i, &hp);
        salen = sizeof(sa);
        if (fd < 0 || hp != ports[i] || getsockname(fd, (struct sockaddr *)&sa, &salen) != 0 ||
            ntohs(sa.sin_port) != ports[i] || sa.sin_addr.s_addr != htonl(INADDR_LOOPBACK))
            goto out;
    }
    if (sandbox_host_port_listener(sb, 2, &hp) != ERR_NOTFOUND || port == 5432 || port == 3000 ||
        eport == 5432 || eport == 3000 || (sb->userns_fd >= 0) != want_userns)
        goto out;
    if (want_userns) { /* the descriptor is the user namespace's, not a listener's */
        char link[64], target[64] = {0};
        snprintf(link, sizeof(link), "/proc/self/fd/%d", sb->userns_fd);
        if (readlink(link, target, sizeof(target) - 1) < 0 || strncmp(target, "user:[", 6) != 0)
            goto out;
    }
    rc = 0;
out:
    close(lfd);
    sandbox_close(sb);
    return rc;
}

static void test_host_port_listeners(void **state)
{
    char dir[] = "/tmp/test-sandbox-XXXXXX";
    char work[64], home[64];
    struct sandbox_spec spec;
    struct sandbox *sb = NULL;
    struct err e = {0};
    int lfd = -1, status;
    uint16_t port;
    static const int bad[] = {80};
    int many[SANDBOX_HOST_PORTS_MAX + 1];
    pid_t pid;

    (void)state;
    make_dirs(dir, work, sizeof(work), 0700, home, sizeof(home));
    assert_int_equal(check_host_ports(work, home, geteuid() != 0), 0);
    if (geteuid() == 0) { /* and as an unprivileged user (a user namespace of its own) */
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) /* dumpable again after setuid, as a process started by the user is */
            _exit(setgid(65534) != 0 || setuid(65534) != 0 || prctl(PR_SET_DUMPABLE, 1) != 0
                      ? 2
                      : check_host_ports(work, home, 1));
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    /* a port the namespace already serves (transparent mode's 80): refused, nothing left */
    memset(&spec, 0, sizeof(spec));
    spec.workdir = work;
    spec.homedir = home;
    spec.host_ports = bad;
    spec.nhost_ports = 1;
    assert_int_equal(sandbox_open(&sb, &spec, &lfd, &port, &e), ERR_SYS);
    assert_null(sb);
    assert_non_null(strstr(e.msg, "Address already in use"));
    for (size_t i = 0; i < SANDBOX_HOST_PORTS_MAX + 1; i++)
        many[i] = (int)(10000 + i);
    spec.host_ports = many;
    spec.nhost_ports = SANDBOX_HOST_PORTS_MAX + 1;
    memset(&e, 0, sizeof(e));
    assert_int_equal(sandbox_open(&sb, &spec, &lfd, &port, &e), ERR_LIMIT);
    spec.nhost_ports = SANDBOX_HOST_PORTS_MAX; /* 32 at once is fine */
    assert_int_equal(sandbox_open(&sb, &spec, &lfd, &port, &e), 0);
    close(lfd);
    sandbox_close(sb);
    assert_int_equal(fs_remove_tree(dir, &e), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_podman_argv),
        cmocka_unit_test(test_docker_argv),
        cmocka_unit_test(test_user_image_gets_no_host_usr),
        cmocka_unit_test(test_oci_argv_supervised),
        cmocka_unit_test(test_node_image_is_self_contained),
        cmocka_unit_test(test_import_argv),
        cmocka_unit_test(test_env_sets_home_path_and_flag),
        cmocka_unit_test(test_kill_after_exit_is_immediate),
        cmocka_unit_test(test_gated_spawn_waits_for_go),
        cmocka_unit_test(test_host_port_listeners),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
