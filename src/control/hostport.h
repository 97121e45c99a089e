/*
 * hostport: the experiment's egress.host_ports (docs/egress.md "Ports of the host"). The
 * sandbox binds 127.0.0.1:PORT inside its network namespace for each named port and the
 * runner hands the listeners over (`faultline proxy --host-port-fd FD:PORT`); the controller,
 * outside the namespace, accepts on each and gives the connection to the egress proxy
 * (egress_adopt_host_port), which relays its bytes blind to the host's own 127.0.0.1:PORT:
 * loopback is allowed for exactly these ports, the forward proxy still refuses it otherwise.
 * Each connection is one egress_request with `mode: "host_port"` (method `TCP`, host
 * 127.0.0.1, the port, bytes each way, duration; status 200 once the host port answered, 502
 * and `error: connect refused` when it refused, the agent's connection then reset).
 *
 *   accepted --egress_adopt_host_port--> the proxy's (CONNECT_UP, RELAY, as a tunnel)
 *   accepted --stopping / max_conns-->   closed at once
 *
 * No fault applies to these connections (the egress faults match host names).
 */
#ifndef FAULTLINE_CONTROL_HOSTPORT_H
#define FAULTLINE_CONTROL_HOSTPORT_H

#include <stddef.h>

#include "util/err.h"

#define HOSTPORT_MAX 32 /* --host-port-fd entries */

struct ctl_handler;

/* Registered when the controller is given host ports; serves their listeners. */
extern const struct ctl_handler hostport_handler;

/* One inherited listener and the host port it leads to. */
struct hostport_spec {
    int fd;   /* a listening socket (inside the sandbox's namespace) */
    int port; /* 1..65535: the host's 127.0.0.1:port */
};

/* Parses "FD:PORT[,FD:PORT...]" (the value of --host-port-fd), appending to out[*n] (at most
 * max in all). 0, or ERR_INVALID (malformed, FD not 0..65535, PORT not 1..65535, a port
 * given twice) / ERR_LIMIT (more than max) with e set. */
int hostport_parse(const char *spec, struct hostport_spec *out, size_t max, size_t *n,
                   struct err *e);

#endif
