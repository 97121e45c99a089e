/*
 * egress: the controller's forward proxy for the agent's outbound traffic (docs/egress.md).
 *
 * Its own listener (controller_config.egress_listen / egress_listen_fd), not the model API's:
 * the agent's tools reach it through HTTP_PROXY / HTTPS_PROXY. It takes two request forms:
 *
 *   CONNECT host:port HTTP/1.1    a tunnel: "200 Connection established", then bytes both
 *                                 ways, blind (TLS is not terminated)
 *   GET http://host[:port]/path   plain HTTP, forwarded in origin form with "Connection: close"
 *                                 (one request per client connection)
 *
 * A target host the experiment's allow list does not match (egress_policy.h: --egress-allow)
 * is refused first, 403, the event naming the rule (policy: "egress.allow"). Then each
 * request is decided by the plan (plan_decide with the controller-egress injector and the
 * host): egress.dns_fail answers 502 with the canary in the reason phrase and the body, as a
 * proxy does for a name it cannot resolve; egress.credential_401 answers a plain request 401
 * (the body and WWW-Authenticate of intercept_answer_401). A CONNECT to a host an intercepting
 * fault matches (intercept_wanted) is answered 200 and handed to intercept_start before any
 * decision, so that the plan counts the HTTP requests inside it, not the connection. Then the
 * destination is resolved: a --resolve entry (curl's HOST:PORT:ADDR) first, else a literal
 * address, else DNS. A loopback, private, link-local or unspecified address is refused (403)
 * unless a --resolve entry named it: the proxy must never become the sandbox's way into the
 * host's own services.
 *
 * Connection states (conn_* functions):
 *   HEAD      --head complete, CONNECT-->        decide -> RESOLVE or answered (CLOSING)
 *   HEAD      --head complete, absolute-form-->  decide -> RESOLVE or answered (CLOSING)
 *   HEAD      --bad head / too long / timeout--> 400 / 431 / 408, CLOSING
 *   RESOLVE   --address (on_resolved)-->         CONNECT_UP (bufferevent_socket_connect)
 *   RESOLVE   --no address-->                    502, CLOSING
 *   CONNECT_UP --connected (on_up_event)-->      RELAY (200 sent, or the head forwarded)
 *   CONNECT_UP --refused / timeout-->            502 / 504, CLOSING
 *   RELAY     --EOF or error on either side-->   CLOSING (the other side's output flushed)
 *   CLOSING   --output written-->                freed (conn_end: the egress_request event)
 *
 * Every connection ends with exactly one egress_request event (host, port, method, path,
 * status, bytes each way, duration, faulted, error). Limits: a head of EGRESS_HEAD_MAX bytes,
 * the controller's client timeout for the head, its connect timeout for the upstream, its
 * idle timeout inside a relay, its max_conns connections, and a relay buffers at most
 * EGRESS_RELAY_HIGH bytes per direction before it stops reading the sender.
 */
#ifndef FAULTLINE_CONTROL_EGRESS_H
#define FAULTLINE_CONTROL_EGRESS_H

#include <stddef.h>

#include <sys/socket.h>

#include "util/err.h"

struct ctl_handler;

#define EGRESS_HEAD_MAX (16 * 1024)     /* bytes of a proxy request head */
#define EGRESS_HOST_MAX 253             /* a DNS name's longest text form */
#define EGRESS_PATH_MAX 2048            /* bytes of the path kept for the event */
#define EGRESS_RELAY_HIGH (1024 * 1024) /* buffered bytes per direction before backpressure */
#define EGRESS_RESOLVE_MAX 64           /* --resolve entries */

/* The egress proxy as a controller handler: it serves its own listener, so it takes no
 * routed requests (handle NULL); registered only when an egress listener is configured. */
extern const struct ctl_handler egress_handler;

/* A request target split into host (lowercase, no brackets) and port. */
struct egress_target {
    char host[EGRESS_HOST_MAX + 1];
    int port;
    const char *path; /* absolute form: the origin-form rest ("/" when empty); borrowed */
};

/* Parses a CONNECT target "host:port" or "[v6]:port" (a port is required, 1..65535). 0, or
 * ERR_PARSE with e set ("malformed CONNECT target"). */
int egress_parse_authority(const char *s, struct egress_target *t, struct err *e);
/* Parses an absolute-form target "http://host[:port][/path]" (port 80 by default). 0, or
 * ERR_PARSE (not absolute form, bad host or port) or ERR_UNSUPPORTED (a scheme other than
 * http: https goes through CONNECT). t->path points into s. */
int egress_parse_absolute(const char *s, struct egress_target *t, struct err *e);

/* One --resolve entry: HOST:PORT:ADDR (curl's meaning: connections to HOST:PORT go to ADDR;
 * ADDR an IPv4 literal or an IPv6 one in brackets; PORT 1..65535, or * for any). */
struct egress_resolve {
    char host[EGRESS_HOST_MAX + 1];
    int port; /* 0: any */
    struct sockaddr_storage addr;
    socklen_t addrlen;
};
/* Parses one entry. 0, or ERR_INVALID with e naming what is wrong. */
int egress_resolve_parse(const char *spec, struct egress_resolve *r, struct err *e);

/* 1 when the address is one the proxy refuses unless a --resolve entry names it: loopback
 * (127/8, ::1), private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16,
 * fe80::/10), shared (100.64/10), unspecified or "this network" (0/8, ::), multicast and
 * broadcast; an IPv4-mapped IPv6 address as its IPv4 one. */
int egress_addr_internal(const struct sockaddr *sa);

struct ctl;
struct plan_decision;
struct catalog_fault;
/* The plan's decision on one egress call to host (plan_decide with the controller-egress
 * injector; the fault allowed by ctl_fault_allowed): the catalog row of the fault that fires,
 * with *d filled, or NULL when none does (or the plan has no egress fault). Every call counts
 * for the faults matching host. Used by the proxy for each request and by the DNS stub
 * (dnsstub.h) for each query of a name an egress.dns_fail fault matches. */
const struct catalog_fault *egress_decide(struct ctl *ctl, const char *host,
                                          struct plan_decision *d);

/* How a connection of the transparent listeners (transparent.h) is taken. */
#define EGRESS_ADOPT_HTTP 1      /* :80: a request in origin form, routed by its Host field */
#define EGRESS_ADOPT_TLS 2       /* :443: TLS to host (the ClientHello's SNI), still unread */
#define EGRESS_ADOPT_HOST_PORT 3 /* egress.host_ports: bytes to the host's 127.0.0.1:port */

struct bufferevent;
/* Takes a client connection of the transparent listeners (ownership of client: it is freed on
 * every path) and serves it as the proxy does, its egress_request with `mode: transparent`:
 * HTTP as a plain request (forwarded, or answered by a fault); TLS as a blind tunnel to
 * host:443 (the ClientHello, still in client's input, relayed first) or, for a host an
 * intercepting fault matches, intercept_start. 0, or ERR_UNSUPPORTED (no egress proxy
 * registered) / ERR_LIMIT (max_conns): client closed. Callable from a callback. */
int egress_adopt(struct ctl *ctl, struct bufferevent *client, int how, const char *host);
/* Takes a connection of an egress.host_ports listener (hostport.h; ownership of client, freed
 * on every path) and relays it blind, as a tunnel, to the host's own 127.0.0.1:port: the one
 * loopback destination the proxy dials without a --resolve entry. Its egress_request has
 * `mode: host_port`, `method: TCP`; a refused connect ends it with status 502 and the
 * client's connection reset (no HTTP answer: the client may speak anything). 0, or
 * ERR_UNSUPPORTED (no egress proxy) / ERR_LIMIT (max_conns): client closed. Callable from a
 * callback. */
int egress_adopt_host_port(struct ctl *ctl, struct bufferevent *client, int port);
/* 1 when the egress proxy is registered on ctl (egress_adopt can take connections). */
int egress_serving(struct ctl *ctl);

#endif
