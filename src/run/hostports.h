/*
 * hostports: the experiment's egress.host_ports as the runner hands them to the controller
 * (docs/egress.md "Ports of the host"). sandbox_open bound 127.0.0.1:PORT inside the
 * namespace for each (sandbox_host_port_listener); the controller gets a descriptor of each
 * without close-on-exec and one `--host-port-fd FD:PORT[,FD:PORT...]` argument.
 */
#ifndef FAULTLINE_RUN_HOSTPORTS_H
#define FAULTLINE_RUN_HOSTPORTS_H

#include <stddef.h>

#include "sandbox/sandbox.h"
#include "util/buf.h"
#include "util/err.h"

struct hostports {
    int fd[SANDBOX_HOST_PORTS_MAX]; /* the duplicates, inherited by the controller */
    size_t n;
    struct buf arg; /* "FD:PORT,..." ("" when the sandbox has none) */
};

/* Duplicates every host-port listener of sb (above fd 2, inheritable) into hp and builds the
 * argument. 0, or ERR_SYS with e set (nothing left open). hp is released either way by
 * hostports_release. */
int hostports_dup(const struct sandbox *sb, struct hostports *hp, struct err *e);
/* Closes the duplicates (once the controller has them) and frees the argument. */
void hostports_release(struct hostports *hp);

#endif
