"""A small MCP stdio client for `faultline world` in the e2e tests: one request at a time,
every read with a timeout (a hung world fails the test, never the suite)."""
import json, os, select, subprocess, sys

FAULTLINE = os.environ["FAULTLINE"]


class World:
    def __init__(self, args, env=None):
        e = dict(os.environ)
        for k in ("FAULTLINE_CONTROL_URL", "FAULTLINE_PLAN", "FAULTLINE_EVENTS", "FAULTLINE_LEDGER"):
            e.pop(k, None)
        e.update(env or {})
        self.p = subprocess.Popen([FAULTLINE, "world"] + args, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
        self.next_id = 1
        self.buf = b""

    def send_raw(self, line):
        self.p.stdin.write(line if isinstance(line, bytes) else line.encode())
        self.p.stdin.flush()

    def read(self, timeout=10):
        while b"\n" not in self.buf:
            r, _, _ = select.select([self.p.stdout], [], [], timeout)
            if not r:
                raise TimeoutError("no answer from faultline world within %s s" % timeout)
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                raise EOFError("faultline world closed its stdout")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, method, params=None, timeout=10):
        i = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg) + "\n")
        r = self.read(timeout)
        assert r.get("id") == i, r
        return r

    def initialize(self, version="2025-06-18"):
        r = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "e2e", "version": "1"}})
        self.send_raw('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        return r

    def call(self, name, args, timeout=10):
        return self.request("tools/call", {"name": name, "arguments": args}, timeout)

    def close(self, timeout=10):
        self.p.stdin.close()
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise
        self.stderr = self.p.stderr.read().decode()
        return rc


def text(r):
    return r["result"]["content"][0]["text"]


def events(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]
