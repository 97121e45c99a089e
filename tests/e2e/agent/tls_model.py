#!/usr/bin/env python3
"""tests/e2e/agent/tls_model.py: a one-answer Anthropic-style model over HTTPS for the agent's
TLS test (t0705). usage: tls_model.py CERT KEY PORTFILE. Every POST gets a 200 JSON message
whose text says which Host header came."""
import json
import os
import socket
import ssl
import sys

cert, key, portfile = sys.argv[1:4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
os.rename(portfile + ".tmp", portfile)
while True:
    conn, _ = srv.accept()
    try:
        t = ctx.wrap_socket(conn, server_side=True)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = t.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        headers = dict(l.split(b":", 1) for l in head.split(b"\r\n")[1:] if b":" in l)
        headers = {k.strip().lower(): v.strip() for k, v in headers.items()}
        n = int(headers.get(b"content-length", b"0"))
        while len(body) < n:
            body += t.recv(65536)
        out = json.dumps({"type": "message", "role": "assistant", "model": "tls-model",
                          "content": [{"type": "text", "text": "hello over TLS to " +
                                       headers.get(b"host", b"").decode()}],
                          "stop_reason": "end_turn",
                          "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
        t.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                  b"content-length: %d\r\n\r\n" % len(out) + out)
        t.close()
    except (ssl.SSLError, OSError):
        conn.close()
