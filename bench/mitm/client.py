#!/usr/bin/env python3
"""bench/mitm/client.py: p50 of HTTPS GETs on one keep-alive connection (b14-mitm.sh).

usage: client.py CA HOST PORT N [PROXY_HOST:PROXY_PORT]

Connects to PORT on 127.0.0.1 (or through a CONNECT to HOST:PORT at the proxy), TLS with SNI
HOST verified against CA, then N sequential GETs of / with keep-alive, each timed from the
first byte written to the last body byte read. Prints the p50 in microseconds; the first
tenth of the requests warm up and are not counted.
"""
import socket
import ssl
import sys
import time

ca, host, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
proxy = sys.argv[5] if len(sys.argv) > 5 else None

if proxy:
    ph, pp = proxy.rsplit(":", 1)
    raw = socket.create_connection((ph, int(pp)), timeout=10)
    raw.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = raw.recv(4096)
        if not chunk:
            sys.exit("the proxy closed the connection")
        head += chunk
    if b" 200 " not in head.split(b"\r\n", 1)[0]:
        sys.exit("CONNECT refused: %r" % head[:80])
else:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
ctx = ssl.create_default_context(cafile=ca)
s = ctx.wrap_socket(raw, server_hostname=host)
req = b"GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port)
lat = []
buf = b""
for i in range(n):
    t0 = time.perf_counter_ns()
    s.sendall(req)
    while True:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            h = buf[:end].lower()
            k = h.find(b"content-length:")
            if k < 0:
                sys.exit("no content-length in %r" % h[:200])
            cl = int(h[k + 15:].split(b"\r\n", 1)[0])
            if len(buf) >= end + 4 + cl:
                if not h.startswith(b"http/1.1 200"):
                    sys.exit("answered %r" % h[:40])
                buf = buf[end + 4 + cl:]
                break
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("the connection closed after %d requests" % i)
        buf += chunk
    lat.append(time.perf_counter_ns() - t0)
lat = sorted(lat[n // 10:])
print(lat[len(lat) // 2] // 1000)
