#!/usr/bin/env python3
"""A small MCP stdio server for the shim's end-to-end tests, with switches for misbehaviour.

Tools: echo {message}, add {a, b}, read {path} (outputSchema), huge {n} (a result of n bytes),
slow {ms} (answers after ms). Speaks the initialize handshake (2025-11-25) and answers
server/discover (2026-07-28) too.

  --log-in FILE        append every line received to FILE (byte for byte, with its newline)
  --garbage            write non-JSON lines to stdout before the first reply
  --die-after N        after the N-th request, write half a reply and exit 3
  --exit-after N       after answering the N-th request, exit with status 5
  --ignore-term        ignore SIGTERM
  --stay-after-eof     keep running after stdin closes
  --grandchild FILE    start a sleeping grandchild (same process group) and write its pid to FILE
  --roots              after notifications/initialized, ask the client roots/list with id 0
  --stderr TEXT        write TEXT to stderr at start
  --no-list-changed    announce tools without listChanged
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

args = sys.argv[1:]


def opt(name, default=None):
    if name in args:
        i = args.index(name)
        return args[i + 1] if i + 1 < len(args) else default
    return default


def flag(name):
    return name in args


log_in = opt("--log-in")
die_after = int(opt("--die-after", "0"))
exit_after = int(opt("--exit-after", "0"))
out_lock = threading.Lock()

if flag("--ignore-term"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if opt("--stderr"):
    sys.stderr.write(opt("--stderr") + "\n")
    sys.stderr.flush()
if opt("--grandchild"):
    p = subprocess.Popen(["sleep", "299.7"])  # an unusual length, for ps
    with open(opt("--grandchild"), "w") as f:
        f.write(str(p.pid))

TOOLS = [
    {"name": "echo", "description": "Echoes back the input",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                     "required": ["message"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "add", "description": "Adds two numbers",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                     "required": ["a", "b"]}},
    {"name": "read", "description": "Reads a file",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
     "outputSchema": {"type": "object", "properties": {"size": {"type": "number"}, "text": {"type": "string"}},
                      "required": ["size", "text"]}},
    {"name": "delete", "description": "Deletes a file",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
     "annotations": {"readOnlyHint": False, "destructiveHint": True}},
    {"name": "huge", "description": "A big result",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "number"}}}},
    {"name": "slow", "description": "Answers late",
     "inputSchema": {"type": "object", "properties": {"ms": {"type": "number"}}}},
]


def send(obj, raw=None):
    data = raw if raw is not None else json.dumps(obj, separators=(",", ":")) + "\n"
    with out_lock:
        sys.stdout.write(data)
        sys.stdout.flush()


def result(rid, res):
    send({"jsonrpc": "2.0", "id": rid, "result": res})


def text(t, is_error=False):
    r = {"content": [{"type": "text", "text": t}]}
    if is_error:
        r["isError"] = True
    return r


def call_tool(rid, params):
    name = params.get("name")
    a = params.get("arguments") or {}
    if name == "echo":
        return result(rid, text("Echo: " + str(a.get("message"))))
    if name == "add":
        return result(rid, text("The sum of %s and %s is %s." % (a.get("a"), a.get("b"),
                                                                 (a.get("a") or 0) + (a.get("b") or 0))))
    if name == "read":
        body = "contents of " + str(a.get("path"))
        return result(rid, {"content": [{"type": "text", "text": json.dumps({"size": len(body), "text": body})}],
                            "structuredContent": {"size": len(body), "text": body}})
    if name == "delete":
        return result(rid, text("deleted " + str(a.get("path"))))
    if name == "huge":
        return result(rid, text("x" * int(a.get("n", 1000))))
    if name == "slow":
        def later():
            time.sleep(float(a.get("ms", 100)) / 1000.0)
            result(rid, text("slow done"))
        threading.Thread(target=later, daemon=True).start()
        return None
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool: %s" % name}})


def main():
    requests = 0
    garbage_sent = False
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            break
        if log_in:
            with open(log_in, "ab") as f:
                f.write(line)
        try:
            msg = json.loads(line)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        if not isinstance(msg, dict):
            continue
        method = msg.get("method")
        rid = msg.get("id")
        if flag("--garbage") and not garbage_sent:
            garbage_sent = True
            send(None, raw="Starting fake server...\nnot json either\n")
        if method is None:
            continue  # a response to our request
        if rid is None:
            if method == "notifications/initialized" and flag("--roots"):
                send({"jsonrpc": "2.0", "id": 0, "method": "roots/list"})
            continue
        requests += 1
        if die_after and requests >= die_after:
            send(None, raw='{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"te' % json.dumps(rid))
            os._exit(3)
        if method == "initialize":
            caps = {"tools": {} if flag("--no-list-changed") else {"listChanged": True}}
            result(rid, {"protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-11-25"),
                         "capabilities": caps, "serverInfo": {"name": "fake", "version": "1.0"}})
        elif method == "server/discover":
            result(rid, {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                         "capabilities": {"tools": {"listChanged": True}}})
        elif method == "tools/list":
            result(rid, {"tools": TOOLS})
        elif method == "tools/call":
            call_tool(rid, msg.get("params") or {})
        elif method == "ping":
            result(rid, {})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
        if exit_after and requests >= exit_after:
            sys.stdout.flush()
            os._exit(5)
    if flag("--stay-after-eof"):
        while True:
            time.sleep(1)


main()
