#!/usr/bin/env python3
"""tests/e2e/agent/fake_model.py: a deliberately misbehaving model API for the agent's error
tests (t0703), speaking raw HTTP/1.1 so every byte is under control. The mock model
(`faultline mock-model`) only answers well-formed replies and scripted error statuses; this
covers what it cannot: retry-after headers, a stream cut mid-way, a hung server, a non-JSON
body, an oversized body.

usage: fake_model.py PORTFILE MODE LOGFILE
Binds 127.0.0.1:0, writes the port to PORTFILE, appends one JSON line per request to LOGFILE
({"t": seconds, "path", "x_api_key", "authorization", "anthropic_version"}).
Modes:
  retry-after  first request: 429, retry-after: 1, an Anthropic error with a canary; then 200
  cut          200 chunked event stream that stops (connection closed) after one text delta
  hang         reads the request and never answers
  notjson      200 application/json whose body is HTML
  huge         200 with Content-Length: 100000000 (and a little of it)
"""
import json
import os
import socket
import socketserver
import sys
import time

portfile, mode, logfile = sys.argv[1], sys.argv[2], sys.argv[3]
count = 0


def read_request(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    while len(body) < n:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return lines[0].split(" ")[1], headers


def anthropic_text(text):
    return json.dumps({"id": "msg_fake", "type": "message", "role": "assistant",
                       "model": "fake-model", "content": [{"type": "text", "text": text}],
                       "stop_reason": "end_turn",
                       "usage": {"input_tokens": 10, "output_tokens": 5}}).encode()


def respond(sock, status, headers, body):
    reason = {200: "OK", 429: "Too Many Requests"}.get(status, "X")
    out = "HTTP/1.1 %d %s\r\n" % (status, reason)
    for k, v in headers:
        out += "%s: %s\r\n" % (k, v)
    sock.sendall(out.encode() + b"\r\n" + body)


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        global count
        req = read_request(self.request)
        if req is None:
            return
        path, h = req
        count += 1
        with open(logfile, "a") as f:
            f.write(json.dumps({"t": time.time(), "path": path,
                                "x_api_key": h.get("x-api-key"),
                                "authorization": h.get("authorization"),
                                "anthropic_version": h.get("anthropic-version")}) + "\n")
        if mode == "retry-after":
            if count == 1:
                body = json.dumps({"type": "error", "error": {
                    "type": "rate_limit_error",
                    "message": "slow down, retry in 1 s E-FAULTLINE-aaaa0001"}}).encode()
                respond(self.request, 429, [("content-type", "application/json"),
                                            ("retry-after", "1"),
                                            ("content-length", str(len(body)))], body)
            else:
                body = anthropic_text("recovered after the rate limit")
                respond(self.request, 200, [("content-type", "application/json"),
                                            ("content-length", str(len(body)))], body)
        elif mode == "cut":
            events = [
                ("message_start", {"type": "message_start", "message": {
                    "id": "msg_cut", "type": "message", "role": "assistant", "model": "fake",
                    "content": [], "stop_reason": None,
                    "usage": {"input_tokens": 3, "output_tokens": 1}}}),
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta",
                                                   "text": "partial answer"}}),
            ]
            respond(self.request, 200, [("content-type", "text/event-stream"),
                                        ("transfer-encoding", "chunked")], b"")
            for name, data in events:
                ev = ("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode()
                self.request.sendall(b"%x\r\n%s\r\n" % (len(ev), ev))
            # a chunk header promising more than is sent, then the connection closes
            self.request.sendall(b"100\r\nevent: content_blo")
        elif mode == "hang":
            time.sleep(60)
        elif mode == "notjson":
            body = b"<html><body>502 from some proxy</body></html>"
            respond(self.request, 200, [("content-type", "application/json"),
                                        ("content-length", str(len(body)))], body)
        elif mode == "huge":
            respond(self.request, 200, [("content-type", "application/json"),
                                        ("content-length", "100000000")], b"{" * 4096)
        try:
            self.request.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Handler)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
