"""A scriptable MCP client for the shim's end-to-end tests: starts `faultline mcp ... -- SERVER`
and exchanges lines with it, every wait with a timeout.

    from mcpclient import Shim
    s = Shim(["--plan", "p.json", "--", "python3", "fake_server.py"])
    s.initialize()
    r = s.call("echo", {"message": "hi"})
    s.close(); code = s.wait()
"""
import json
import os
import select
import subprocess
import sys
import time

FAULTLINE = os.environ.get("FAULTLINE", "faultline")
HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = [sys.executable, os.path.join(HERE, "fake_server.py")]


class Timeout(Exception):
    pass


class Shim:
    """sandbox: pass --i-have-a-sandbox (mutating faults apply standalone); None: when the
    test exported MCPCLIENT_SANDBOX=1 (a switch of this helper, not of faultline)."""

    def __init__(self, args, env=None, stderr=None, sandbox=None):
        e = dict(os.environ)
        e.update(env or {})
        if sandbox is None:
            sandbox = os.environ.get("MCPCLIENT_SANDBOX") == "1"
        flags = ["--i-have-a-sandbox"] if sandbox else []
        self.p = subprocess.Popen([FAULTLINE, "mcp"] + flags + list(args), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=stderr, env=e)
        self.buf = b""
        self.lines = []  # every line received, raw
        self.next_id = 1

    def send_raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, obj):
        self.send_raw((json.dumps(obj, separators=(",", ":")) + "\n").encode())

    def request(self, method, params=None, rid=None):
        if rid is None:
            rid = self.next_id
            self.next_id += 1
        m = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)
        return rid

    def read_line(self, timeout=10.0):
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0:
                raise Timeout("no line within %.1fs (have %r)" % (timeout, self.buf[:200]))
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if not r:
                continue
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
            if not chunk:
                raise EOFError("shim closed stdout (have %r)" % self.buf[:200])
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        self.lines.append(line)
        return line

    def recv(self, timeout=10.0):
        return json.loads(self.read_line(timeout))

    def wait_for(self, rid, timeout=10.0):
        """The reply to rid; other messages seen meanwhile are kept in self.other."""
        end = time.time() + timeout
        self.other = getattr(self, "other", [])
        while True:
            m = self.recv(max(0.01, end - time.time()))
            if isinstance(m, dict) and m.get("id") == rid and "method" not in m:
                return m
            self.other.append(m)

    def initialize(self, version="2025-11-25"):
        rid = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                          "clientInfo": {"name": "e2e", "version": "1"}})
        r = self.wait_for(rid)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def call(self, name, arguments=None, timeout=10.0):
        rid = self.request("tools/call", {"name": name, "arguments": arguments or {}})
        return self.wait_for(rid, timeout)

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass

    def wait(self, timeout=15.0):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise Timeout("shim did not exit within %.1fs" % timeout)

    def rest(self, timeout=5.0):
        """Everything the shim still writes until it closes stdout."""
        out = self.buf
        self.buf = b""
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if left <= 0:
                raise Timeout("stdout still open")
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if not r:
                continue
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
            if not chunk:
                return out
            out += chunk


def events(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


# The MCP faults the catalog classes fail-safe (`faultline list --json`); the rest are mutating.
FAIL_SAFE = {"tool.error", "tool.latency", "tool.timeout", "tool.partial_failure",
             "tool.transient_error", "tool.rate_limit", "tool.malformed_response",
             "tool.auth_expiry", "mcp.capability_downgrade"}


def plan(faults, canary="E-FAULTLINE-00c0ffee", run="e2e-mcp-1"):
    """A plan file's JSON (docs/plan.md) with these faults (kind, match, options...)."""
    fl = []
    for i, f in enumerate(faults):
        g = {"index": i, "injectors": ["mcp"], "match": {}, "after_calls": 0, "times": -1,
             "probability": 1, "options": {},
             "safety": "fail-safe" if f["kind"] in FAIL_SAFE else "mutating"}
        g.update(f)
        fl.append(g)
    return {"version": 1, "run": run, "rep": 1, "faulted": bool(fl), "canary": canary,
            "seed": "0x0000000000000001", "faults": fl}


def write_plan(path, faults, **kw):
    with open(path, "w") as f:
        json.dump(plan(faults, **kw), f)
    return path
