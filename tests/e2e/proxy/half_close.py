#!/usr/bin/env python3
"""half_close.py HOST:PORT PATH [BODY [HEADER...]]: sends one complete request, shuts its write
side (shutdown(SHUT_WR)) at once, and reads until the server closes (10 s at most). Prints one
JSON line: the status (null when nothing came), whether the server then closed, the time to
the close in ms, and the body."""
import json, socket, sys, time

host, port = sys.argv[1].split(":")
path = sys.argv[2]
body = sys.argv[3].encode() if len(sys.argv) > 3 else b""
extra = "".join(h + "\r\n" for h in sys.argv[4:]).encode()
method = b"POST" if body else b"GET"
req = b"%s %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s" % (
    method, path.encode(), extra, len(body), body)
s = socket.create_connection((host, int(port)))
t0 = time.monotonic()
s.sendall(req)
s.shutdown(socket.SHUT_WR)
s.settimeout(10)
data, closed = b"", False
try:
    while True:
        d = s.recv(65536)
        if not d:
            closed = True
            break
        data += d
except OSError:
    pass
ms = round((time.monotonic() - t0) * 1000)
status = None
if data.startswith(b"HTTP/1.1 "):
    status = int(data[9:12])
print(json.dumps({"status": status, "closed": closed, "ms": ms,
                  "body": data.split(b"\r\n\r\n", 1)[-1].decode("latin-1")}))
