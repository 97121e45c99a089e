/*
 * netstat: what the sandbox's network namespace counted of connections that went nowhere
 * (sandbox.h sandbox_netstat). A child joins the namespace (sandbox_enter_net) and reads
 * /proc/self/net/snmp and snmp6, which show the reader's own namespace:
 *
 *   Ip: OutNoRoutes, Ip6OutNoRoutes   a packet to an address with no route (only lo is up
 *                                     inside: any raw IP but loopback), e.g. connect(2) failing
 *                                     with ENETUNREACH
 *   Tcp: AttemptFails                 a connection that failed before it was established: on
 *                                     loopback, a port nothing listens on (refused)
 *
 * Measured (docs/egress.md): `curl http://93.184.216.34/` inside counts one OutNoRoutes,
 * `curl http://127.0.0.1:9/` one AttemptFails; both work unprivileged and as root, as
 * sandbox_enter_net does. The counters are the namespace's, so everything that ran in it
 * counts (the agent, verify, their children).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "util/banned.h"

#define NETSTAT_TIMEOUT_MS 2000

/* The value of field name on the "prefix:" value line after its header line (snmp's layout:
 * a header line of names, then a line of values). */
static uint64_t snmp_field(const char *text, const char *prefix, const char *name)
{
    char hdr[32];
    const char *h, *v;
    size_t plen;

    plen = (size_t)snprintf(hdr, sizeof(hdr), "%s:", prefix);
    for (h = text; (h = strstr(h, hdr)) != NULL; h += plen) {
        if (h != text && h[-1] != '\n')
            continue;
        v = strchr(h, '\n');
        if (v == NULL || strncmp(v + 1, hdr, plen) != 0)
            return 0;
        v += 1 + plen;
        /* walk both lines token by token */
        const char *hp = h + plen;
        for (;;) {
            while (*hp == ' ')
                hp++;
            while (*v == ' ')
                v++;
            if (*hp == '\n' || *hp == '\0' || *v == '\n' || *v == '\0')
                return 0;
            size_t hl = strcspn(hp, " \n"), vl = strcspn(v, " \n");
            if (hl == strlen(name) && strncmp(hp, name, hl) == 0)
                return strtoull(v, NULL, 10);
            hp += hl;
            v += vl;
        }
    }
    return 0;
}

/* snmp6's layout: "Name value" per line. */
static uint64_t snmp6_field(const char *text, const char *name)
{
    size_t n = strlen(name);

    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, name, n) == 0 && (l[n] == ' ' || l[n] == '\t'))
            return strtoull(l + n, NULL, 10);
    return 0;
}

static size_t slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL)
        return 0;
    n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n;
}

int sandbox_netstat(const struct sandbox *sb, struct sandbox_netstat *out, struct err *e)
{
    int fds[2], status, r;
    uint64_t v[2] = {0, 0};
    pid_t pid;
    ssize_t n;
    struct pollfd pfd;

    memset(out, 0, sizeof(*out));
    if (pipe(fds) < 0)
        return err_set(e, ERR_SYS, "pipe: %s", strerror(errno));
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return err_set(e, ERR_SYS, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        static char text[16384];
        close(fds[0]);
        if (sandbox_enter_net(sb) != 0)
            _exit(1);
        if (slurp("/proc/self/net/snmp", text, sizeof(text)) > 0) {
            v[0] = snmp_field(text, "Ip", "OutNoRoutes");
            v[1] = snmp_field(text, "Tcp", "AttemptFails");
        }
        if (slurp("/proc/self/net/snmp6", text, sizeof(text)) > 0)
            v[0] += snmp6_field(text, "Ip6OutNoRoutes");
        _exit(write(fds[1], v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : 1);
    }
    close(fds[1]);
    pfd.fd = fds[0];
    pfd.events = POLLIN;
    do {
        r = poll(&pfd, 1, NETSTAT_TIMEOUT_MS);
    } while (r < 0 && errno == EINTR);
    n = r > 0 ? read(fds[0], v, sizeof(v)) : -1;
    close(fds[0]);
    if (n != (ssize_t)sizeof(v))
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof(v))
        return err_set(e, ERR_SYS, "cannot read the sandbox's network counters");
    out->no_route = v[0];
    out->refused = v[1];
    return 0;
}
