/*
 * supervise: the first process of a sandboxed command, reporting how it ended (supervise.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/supervise.h"
#include "util/err.h"
#include "util/num.h"

#include "util/banned.h"

static const int passed_on[] = {SIGTERM, SIGINT, SIGHUP};

int sandbox_supervise(int status_fd, char *const argv[])
{
    char line[64];
    int ws, n;
    pid_t pid;

    if (fcntl(status_fd, F_SETFD, FD_CLOEXEC) < 0) {
        fprintf(stderr, "faultline sandbox supervise: --status-fd %d: %s\n", status_fd,
                strerror(errno));
        return 127;
    }
    for (size_t i = 0; i < sizeof(passed_on) / sizeof(passed_on[0]); i++)
        signal(passed_on[i], SIG_IGN);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "faultline sandbox supervise: fork: %s\n", strerror(errno));
        return 127;
    }
    if (pid == 0) {
        for (size_t i = 0; i < sizeof(passed_on) / sizeof(passed_on[0]); i++)
            signal(passed_on[i], SIG_DFL);
        execvp(argv[0], argv);
        fprintf(stderr, "faultline sandbox supervise: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR)
            return 127;
    if (WIFSIGNALED(ws))
        n = snprintf(line, sizeof(line), "signal %d\n", WTERMSIG(ws));
    else
        n = snprintf(line, sizeof(line), "exit %d\n", WEXITSTATUS(ws));
    while (write(status_fd, line, (size_t)n) < 0 && errno == EINTR)
        ;
    close(status_fd);
    return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
}

int sandbox_read_status(int fd, int *code, int *sig)
{
    char line[64];
    ssize_t n;
    long long v;
    char *nl;

    *code = -1;
    *sig = 0;
    do
        n = read(fd, line, sizeof(line) - 1);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return ERR_PROTO;
    line[n] = '\0';
    if ((nl = strchr(line, '\n')) == NULL)
        return ERR_PROTO;
    *nl = '\0';
    if (strncmp(line, "exit ", 5) == 0 && num_parse_ll(line + 5, 0, 255, &v) == 0) {
        *code = (int)v;
        return 0;
    }
    if (strncmp(line, "signal ", 7) == 0 && num_parse_ll(line + 7, 1, 64, &v) == 0) {
        *sig = (int)v;
        return 0;
    }
    return ERR_PROTO;
}
