#!/usr/bin/env python3
"""control_server.py PORTFILE DECISIONS.json EVENTS.jsonl [--chunked] [--close]: a stand-in for
the controller's control API (docs/control-api.md) for the shim's tests, on 127.0.0.1.

DECISIONS.json: a list of {"tool": NAME, "kind": ID, "options": {...}}; a decide request for a
tool takes the first unused entry naming it (inject: true), else inject: false. Every request
body of POST /_faultline/decide is appended to EVENTS.jsonl.decide, every event of POST
/_faultline/events to EVENTS.jsonl (one line each, as received). The bound port is written to
PORTFILE. --chunked answers with chunked bodies; --close closes the connection after each reply;
--lose-first-events reads the first POST /_faultline/events, writes its events to
EVENTS.jsonl.lost and closes the connection without answering (a controller that may or may not
have recorded them). Health and every decision say "mutating_faults": true (a controller
that knows its sandbox); --health-silent leaves it out of the health answer (a controller whose
health answer the shim missed: its decisions still say it).
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

portfile, decisions_path, events_path = sys.argv[1:4]
chunked = "--chunked" in sys.argv
close = "--close" in sys.argv
lose_first = ["--lose-first-events" in sys.argv]
health_silent = "--health-silent" in sys.argv
decisions = json.load(open(decisions_path))
used = [False] * len(decisions)
CANARY = "E-FAULTLINE-5eed5eed"


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half = len(body) // 2
            for part in (body[:half], body[half:]):
                if part:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def do_GET(self):
        if self.path == "/_faultline/health":
            h = {"ok": True, "run": "ctl-run", "plan_loaded": True}
            if not health_silent:
                h["mutating_faults"] = True
            return self.reply(200, h)
        self.reply(404, {"error": {"type": "not_found", "message": "no such path"}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        try:
            body = json.loads(self.rfile.read(n))
        except ValueError:
            return self.reply(400, {"error": {"type": "bad_request", "message": "bad JSON"}})
        if self.path == "/_faultline/decide":
            with open(events_path + ".decide", "a") as f:
                f.write(json.dumps(body) + "\n")
            for i, d in enumerate(decisions):
                if not used[i] and d["tool"] == body.get("tool"):
                    used[i] = True
                    return self.reply(200, {"inject": True, "fault_index": i, "kind": d["kind"],
                                            "options": d.get("options", {}), "call_index": 0,
                                            "canary": CANARY, "mutating_faults": True})
            return self.reply(200, {"inject": False, "canary": CANARY, "mutating_faults": True})
        if self.path == "/_faultline/events":
            evs = body if isinstance(body, list) else [body]
            if lose_first[0]:
                lose_first[0] = False
                with open(events_path + ".lost", "a") as f:
                    for e in evs:
                        f.write(json.dumps(e) + "\n")
                self.close_connection = True
                return
            with open(events_path, "a") as f:
                for e in evs:
                    f.write(json.dumps(e) + "\n")
            return self.reply(200, {"appended": len(evs)})
        self.reply(404, {"error": {"type": "not_found", "message": "no such path"}})


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
