#!/usr/bin/env python3
"""close_after.py MODE PORTFILE LOGFILE [CERT KEY]: an origin that answers one request per
connection with a complete keep-alive response (HTTP/1.1, Content-Length, no "Connection:
close") and then closes the connection. MODE: "plain" (TCP), "tls" (TLS with close_notify
before the close), "tls-dirty" (TLS closed without close_notify) or "tls-onewrite" (the
response's TLS records and the close_notify in one write(2) just before the close, so that
the peer reads the data and the end together). Every request it reads
appends one line to LOGFILE: "CONN_NUMBER METHOD PATH". The response body is a JSON Anthropic
message whose text names the connection number. One connection at a time."""
import json
import os
import socket
import ssl
import sys

mode, portfile, logfile = sys.argv[1:4]
ctx = None
if mode != "plain":
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[4], sys.argv[5])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(8)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
os.rename(portfile + ".tmp", portfile)


class OneWrite:
    """TLS over memory BIOs: recv decrypts from the socket, sendall only queues records,
    finish adds close_notify and writes every queued byte with one sendall."""

    def __init__(self, ctx, raw):
        self.raw = raw
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out, server_side=True)
        self.pending = b""
        while True:
            try:
                self.obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._pump()
        self.raw.sendall(self.out.read())

    def _pump(self):
        self.raw.sendall(self.out.read())
        d = self.raw.recv(65536)
        if not d:
            raise OSError("closed during TLS")
        self.inc.write(d)

    def recv(self, n):
        while True:
            try:
                return self.obj.read(n)
            except ssl.SSLWantReadError:
                self._pump()

    def sendall(self, data):
        self.obj.write(data)
        self.pending += self.out.read()

    def finish(self):
        try:
            self.obj.unwrap()
        except (ssl.SSLWantReadError, ssl.SSLError):
            pass  # close_notify is queued; the peer's is not awaited
        self.raw.sendall(self.pending + self.out.read())

    def close(self):
        self.raw.close()


nconn = 0
while True:
    raw, _ = srv.accept()
    nconn += 1
    raw.settimeout(10)
    try:
        if mode == "tls-onewrite":
            s = OneWrite(ctx, raw)
        else:
            s = ctx.wrap_socket(raw, server_side=True) if ctx else raw
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        if b"\r\n\r\n" not in data:
            raw.close()
            continue
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        headers = dict(l.split(b":", 1) for l in lines[1:] if b":" in l)
        headers = {k.strip().lower(): v.strip() for k, v in headers.items()}
        n = int(headers.get(b"content-length", b"0"))
        while len(body) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        method, path = lines[0].split(b" ")[0:2]
        with open(logfile, "a") as f:
            f.write("%d %s %s\n" % (nconn, method.decode(), path.decode()))
        out = json.dumps({"id": "msg_%d" % nconn, "type": "message", "role": "assistant",
                          "model": "claude-sonnet-4-5",
                          "content": [{"type": "text", "text": "connection %d" % nconn}],
                          "stop_reason": "end_turn",
                          "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
        s.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                  b"content-length: %d\r\n\r\n" % len(out) + out)
        if mode == "tls-onewrite":
            s.finish()  # the response, close_notify and the close in one go
        elif mode == "tls":
            try:
                s = s.unwrap()  # close_notify, then the TCP close
            except (ssl.SSLError, OSError):
                pass
        s.close()
    except (ssl.SSLError, OSError, ValueError):
        raw.close()
