#!/usr/bin/env python3
"""A code-hosting API stand-in over HTTPS for the interception tests.

usage: api.py CERT KEY PORTFILE LOG

Answers every GET with 200 {"login":"octocat","path":PATH,"authorized":BOOL} (keep-alive,
HTTP/1.1), writes "METHOD PATH" per request to LOG, and the port it bound on 127.0.0.1 to
PORTFILE once serving.
"""
import http.server
import json
import os
import ssl
import sys

cert, key, portfile, log = sys.argv[1:5]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        with open(log, "a") as f:
            f.write("%s %s\n" % (self.command, self.path))
        body = json.dumps({"login": "octocat", "path": self.path,
                           "authorized": "Authorization" in self.headers}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
tmp = portfile + ".tmp"
with open(tmp, "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(tmp, portfile)
srv.serve_forever()
