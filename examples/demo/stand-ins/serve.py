#!/usr/bin/env python3
"""examples/demo/stand-ins/serve.py: the offline stand-in for the npm registry and the GitHub
API in `make demo` (scripts/demo sends registry.npmjs.org and api.github.com to it with
`faultline run --resolve`). GET /a/b answers the file a/b.json under this directory (the query
ignored) as application/json, anything else 404. Listens on 127.0.0.1, port 0, and writes the
port to PORTFILE.

usage: serve.py PORTFILE
"""
import http.server
import os
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?", 1)[0].strip("/")
        file = os.path.normpath(os.path.join(ROOT, path + ".json"))
        if ".." in path.split("/") or not file.startswith(ROOT + os.sep) or not os.path.isfile(file):
            self.send_error(404)
            return
        with open(file, "rb") as f:
            body = f.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass


def main():
    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
