#!/usr/bin/env python3
"""two_writes.py HOST:PORT: 20 control API posts on one keep-alive connection, each written as
head then body in two send()s without TCP_NODELAY (as many HTTP clients do). Prints the worst
latency in ms."""
import socket, sys, time
host, port = sys.argv[1].split(":")
s = socket.create_connection((host, int(port)))
body = b'[{"kind":"note","x":1}]'
head = b"POST /_faultline/events HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
worst = 0
for i in range(20):
    t0 = time.monotonic()
    s.sendall(head)
    s.sendall(body)
    data = b""
    while b"appended" not in data:
        data += s.recv(65536)
    worst = max(worst, time.monotonic() - t0)
print(round(worst * 1000))
