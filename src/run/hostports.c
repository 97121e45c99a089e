/*
 * hostports: the host-port listeners handed to the controller (hostports.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "run/hostports.h"
#include "util/banned.h"

int hostports_dup(const struct sandbox *sb, struct hostports *hp, struct err *e)
{
    int port, lfd;

    hp->n = 0;
    buf_init(&hp->arg, 0);
    for (size_t i = 0; (lfd = sandbox_host_port_listener(sb, i, &port)) >= 0; i++) {
        int fd = fcntl(lfd, F_DUPFD, 3);
        if (fd < 0) {
            int err = errno;
            hostports_release(hp);
            return err_set(e, ERR_SYS, "dup: %s", strerror(err));
        }
        hp->fd[hp->n++] = fd;
        buf_addf(&hp->arg, "%s%d:%d", i ? "," : "", fd, port);
    }
    return 0;
}

void hostports_release(struct hostports *hp)
{
    for (size_t i = 0; i < hp->n; i++)
        close(hp->fd[i]);
    hp->n = 0;
    buf_release(&hp->arg);
}
