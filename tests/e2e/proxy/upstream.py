#!/usr/bin/env python3
"""A scriptable stand-in for the model APIs, for the controller's end-to-end tests.

    upstream.py PORTFILE     binds 127.0.0.1:0, writes the port to PORTFILE, serves forever

Speaks HTTP/1.1 with keep-alive. Behaviour is chosen per request by the x-test-mode header
(unknown headers pass the proxy untouched, so the test controls the upstream through it):

  (none)            a normal answer in the API's format, streamed when the body says stream
  status:N[:K]      answer N with the provider's error body (only the first K times per
                    x-test-id when K is given; afterwards normal)
  retry-after:S     with status: also send retry-after: S
  garbage           200 text/event-stream whose body is not SSE
  slow:MS           stream with MS milliseconds between events
  drop:N            stream N events, then close the connection without ending the body
  big:N             stream N content_block_delta events of 1 KiB each, as fast as possible
  hang              read the request, never answer
  close             close the connection without answering
  echo              answer 200 with the request as JSON: method, path, headers, body

GET /_upstream/log returns every request seen (method, path, headers, body) as JSON.
"""
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = []
COUNTS = {}
LOCK = threading.Lock()


def anthropic_events(model, text="Hello from upstream"):
    words = text.split(" ")
    ev = [("message_start", {"type": "message_start", "message": {
        "id": "msg_up1", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 1000, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "output_tokens": 1}}}),
          ("content_block_start", {"type": "content_block_start", "index": 0,
                                   "content_block": {"type": "text", "text": ""}}),
          ("ping", {"type": "ping"})]
    for i, w in enumerate(words):
        ev.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": (" " if i else "") + w}}))
    ev += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
           ("message_delta", {"type": "message_delta",
                              "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                              "usage": {"output_tokens": 500}}),
           ("message_stop", {"type": "message_stop"})]
    return ["event: %s\ndata: %s\n\n" % (n, json.dumps(d)) for n, d in ev]


def anthropic_body(model):
    return {"id": "msg_up1", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "Hello from upstream"}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1000, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 500}}


def chat_events(model):
    base = {"id": "chatcmpl-up1", "object": "chat.completion.chunk", "created": 1, "model": model}
    out = []
    for d, fr in (({"role": "assistant", "content": ""}, None), ({"content": "Hello"}, None),
                  ({"content": " from upstream"}, None), ({}, "stop")):
        out.append(dict(base, choices=[{"index": 0, "delta": d, "finish_reason": fr}]))
    out.append(dict(base, choices=[], usage={"prompt_tokens": 1000, "completion_tokens": 500,
                                             "total_tokens": 1500}))
    return ["data: %s\n\n" % json.dumps(o) for o in out] + ["data: [DONE]\n\n"]


def chat_body(model):
    return {"id": "chatcmpl-up1", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant",
                                                 "content": "Hello from upstream"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}}


def responses_body(model):
    return {"id": "resp_up1", "object": "response", "created_at": 1, "status": "completed",
            "model": model, "output": [{"type": "message", "id": "msg_1", "status": "completed",
                                        "role": "assistant", "content": [
                                            {"type": "output_text", "text": "Hello from upstream",
                                             "annotations": []}]}],
            "usage": {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 500, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 1500}}


def responses_events(model):
    r = responses_body(model)
    seq = [("response.created", {"response": dict(r, status="in_progress", output=[])}),
           ("response.output_text.delta", {"item_id": "msg_1", "output_index": 0,
                                           "content_index": 0, "delta": "Hello"}),
           ("response.output_text.delta", {"item_id": "msg_1", "output_index": 0,
                                           "content_index": 0, "delta": " from upstream"}),
           ("response.completed", {"response": r})]
    out = []
    for i, (t, d) in enumerate(seq):
        d = dict(d, type=t, sequence_number=i)
        out.append("event: %s\ndata: %s\n\n" % (t, json.dumps(d)))
    return out


def error_body(path, status):
    if "/messages" in path:
        t = {429: "rate_limit_error", 529: "overloaded_error", 400: "invalid_request_error"}.get(
            status, "api_error")
        return {"type": "error", "error": {"type": t, "message": "upstream says %d" % status}}
    return {"error": {"message": "upstream says %d" % status, "type": "server_error",
                      "param": None, "code": None}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, status, obj, extra=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-upstream", "yes")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, s):
        b = s.encode() if isinstance(s, str) else s
        self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
        self.wfile.flush()

    def do_HEAD(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        if self.path == "/_upstream/log":
            with LOCK:
                self.send_json(200, LOG)
            return
        self.handle_any(b"")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        self.handle_any(body)

    def handle_any(self, body):
        entry = {"method": self.command, "path": self.path,
                 "headers": [[k, v] for k, v in self.headers.items()],
                 "body": body.decode("utf-8", "replace")}
        with LOCK:
            LOG.append(entry)
        mode = self.headers.get("x-test-mode", "")
        try:
            req = json.loads(body) if body else {}
        except ValueError:
            req = None
        if mode == "echo":
            self.send_json(200, entry)
            return
        if mode == "hang":
            time.sleep(3600)
            return
        if mode == "close":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if mode.startswith("status:"):
            parts = mode.split(":")
            status = int(parts[1])
            limit = int(parts[2]) if len(parts) > 2 else None
            key = self.headers.get("x-test-id", "")
            with LOCK:
                COUNTS[key] = COUNTS.get(key, 0) + 1
                hits = COUNTS[key]
            if limit is None or hits <= limit:
                extra = []
                ra = self.headers.get("x-test-retry-after")
                if ra:
                    extra.append(("retry-after", ra))
                self.send_json(status, error_body(self.path, status), extra)
                return
        if req is None or not isinstance(req, dict):
            self.send_json(400, error_body(self.path, 400))
            return
        model = req.get("model", "m")
        stream = req.get("stream") is True
        path = self.path.split("?")[0]
        if mode == "garbage":
            self.start_stream()
            self.chunk(b"\x00\xff not sse at all \r\r\n\n data without colon {{{\n\n")
            self.chunk(b"event: message_start\ndata: {broken json\n\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        if path.endswith("/messages"):
            events, whole = anthropic_events(model), anthropic_body(model)
        elif path.endswith("/chat/completions"):
            events, whole = chat_events(model), chat_body(model)
        elif path.endswith("/responses"):
            events, whole = responses_events(model), responses_body(model)
        elif path.endswith("/count_tokens"):
            self.send_json(200, {"input_tokens": 42})
            return
        else:
            self.send_json(404, {"error": {"type": "not_found_error", "message": self.path}})
            return
        if not stream:
            self.send_json(200, whole)
            return
        if mode.startswith("big:"):
            n = int(mode.split(":")[1])
            filler = "x" * 1000
            events = events[:2] + [
                "event: content_block_delta\ndata: %s\n\n" % json.dumps(
                    {"type": "content_block_delta", "index": 0,
                     "delta": {"type": "text_delta", "text": filler}})] * n + events[-3:]
        delay = int(mode.split(":")[1]) / 1000.0 if mode.startswith("slow:") else 0
        drop = int(mode.split(":")[1]) if mode.startswith("drop:") else None
        self.start_stream()
        for i, e in enumerate(events):
            if drop is not None and i >= drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.chunk(e)
            if delay:
                time.sleep(delay)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, request, client_address):
        pass  # a client (the proxy) that went away mid-answer is expected here


def main():
    srv = Server(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
