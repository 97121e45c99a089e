#!/usr/bin/env python3
"""tests/e2e/agent/mini_mcp.py: a small MCP stdio server for the agent's MCP client tests
(t0704), so they need no npm. Every message it receives is appended to $MINI_MCP_LOG (one
JSON line each). Before answering each tools/call it sends the client a ping request (which
the client must answer).

Tools: echo {text} -> "echo: TEXT"; fail {} -> isError with a canary; slow {seconds} ->
answers after that long (in a thread, so a notifications/cancelled is read and logged at
once); grow {} -> adds the tool "extra" and sends notifications/tools/list_changed;
extra {} -> "extra ran"; image {} -> an image item.
"""
import json
import os
import sys
import threading
import time

LOG = os.environ.get("MINI_MCP_LOG", "/dev/null")
out_lock = threading.Lock()
tools = [
    {"name": "echo", "description": "Echo the text back",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]}},
    {"name": "fail", "description": "Always fails", "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "Answers after a while",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "grow", "description": "Adds a tool", "inputSchema": {"type": "object"}},
    {"name": "image", "description": "Returns an image", "inputSchema": {"type": "object"}},
]
ping_id = 0


def send(msg):
    with out_lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def log(msg):
    with open(LOG, "a") as f:
        f.write(json.dumps(msg) + "\n")


def result(mid, res):
    send({"jsonrpc": "2.0", "id": mid, "result": res})


def text(t, is_error=False):
    return {"content": [{"type": "text", "text": t}], "isError": is_error}


def call(mid, name, args):
    global ping_id
    ping_id += 1
    send({"jsonrpc": "2.0", "id": "srv-%d" % ping_id, "method": "ping"})
    if name == "echo":
        result(mid, text("echo: " + str(args.get("text"))))
    elif name == "fail":
        result(mid, text("the tool failed E-FAULTLINE-bbbb0001", True))
    elif name == "slow":
        def later():
            time.sleep(float(args.get("seconds", 5)))
            result(mid, text("slow done"))
        threading.Thread(target=later, daemon=True).start()
    elif name == "grow":
        if not any(t["name"] == "extra" for t in tools):
            tools.append({"name": "extra", "description": "Added later",
                          "inputSchema": {"type": "object"}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        result(mid, text("added the tool extra"))
    elif name == "extra" and any(t["name"] == "extra" for t in tools):
        result(mid, text("extra ran"))
    elif name == "image":
        result(mid, {"content": [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602,
                                                     "message": "Unknown tool: " + name}})


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    log(msg)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        result(mid, {"protocolVersion": msg["params"]["protocolVersion"],
                     "capabilities": {"tools": {"listChanged": True}},
                     "serverInfo": {"name": "mini", "version": "1.0"}})
    elif method == "tools/list":
        result(mid, {"tools": tools})
    elif method == "tools/call":
        call(mid, msg["params"]["name"], msg["params"].get("arguments") or {})
    elif method is not None and mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}})
