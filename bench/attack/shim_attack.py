#!/usr/bin/env python3
"""bench/attack/shim_attack.py: attacks the MCP shim (`faultline mcp`) from both sides and
prints what held.

    shim_attack.py --faultline BIN [--json]

Each attack starts `faultline mcp` standalone (a plan with one tool.error fault on a tool the
attack never calls, so the plan engine and the events writer are on) in front of
tests/e2e/mcp/fake_server.py, with a deadline on every read, and reports whether every request
was answered, the time it took, the shim's peak RSS and whether it exited cleanly.

Attacks:
  bigline-client   a 100 MB line from the client, then a ping: the big line is refused, the
                   ping answered
  bigline-server   the server answers one call with a 100 MB line: the client gets an error
                   for that call, and the next call is answered
  death-pending    1,000 tools/call in flight (slow tool), then the server is killed: every
                   call answered (error) and the shim exits
  garbage          random byte lines from the client interleaved with 1,000 valid calls, and a
                   server that writes non-JSON lines first: every valid call answered
  surrogates       server replies Node's JSON.parse accepts and jansson does not (a lone
                   surrogate escape, a raw 0xff byte, 1e400): each relayed

Nothing here asserts: it measures. The tests in tests/e2e hold the assertions.
"""
import argparse
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FAKE = [sys.executable, os.path.join(ROOT, "tests", "e2e", "mcp", "fake_server.py")]

# The demo experiment's faulted repetition: a tool.error on write_file, which these attacks
# never call (the fake server has no such tool).
EXPERIMENT = os.path.join(ROOT, "examples", "demo", "tool-error.yaml")


class Shim:
    def __init__(self, faultline, tmp, server_argv):
        plan = os.path.join(tmp, "plan.json")
        with open(plan, "w") as f:
            subprocess.run([faultline, "plan", EXPERIMENT, "--rep", "1"], stdout=f, check=True)
        self.events = os.path.join(tmp, "events.jsonl")
        self.p = subprocess.Popen([faultline, "mcp", "--plan", plan, "--events", self.events,
                                   "--"] + server_argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, "shim.err"), "w"))
        self.buf = b""
        self.peak = 0

    def rss(self):
        try:
            with open("/proc/%d/status" % self.p.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        v = int(line.split()[1])
                        self.peak = max(self.peak, v)
                        return v
        except OSError:
            pass
        return 0

    def send(self, obj_or_bytes):
        data = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode() + b"\n"
        view = memoryview(data)
        while view:
            _, w, _ = select.select([], [self.p.stdin], [], 10)
            if not w:
                raise TimeoutError("shim does not read")
            n = os.write(self.p.stdin.fileno(), view[:1 << 20])
            view = view[n:]
            self.rss()

    def recv(self, timeout=10):
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if not r:
                return None
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
            if not chunk:
                return None
            self.buf += chunk
            self.rss()
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def initialize(self):
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "attack", "version": "1"}}})
        if self.recv() is None:
            raise RuntimeError("no initialize reply")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self, timeout=10):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return "hung"


def call(i, tool="echo", args=None):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": tool, "arguments": args if args is not None else {"message": "m%d" % i}}}


def collect(s, ids, timeout):
    got = {}
    end = time.monotonic() + timeout
    while len(got) < len(ids) and time.monotonic() < end:
        line = s.recv(max(0.1, end - time.monotonic()))
        if line is None:
            break
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m.get("id") in ids:
            got[m["id"]] = "error" if "error" in m or (m.get("result") or {}).get("isError") else "ok"
    return got


def a_bigline_client(fl, tmp):
    s = Shim(fl, tmp, FAKE)
    s.initialize()
    t0 = time.monotonic()
    big = b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"message":"' + b"a" * (100 << 20) + b'"}}}\n'
    try:
        s.send(big)
    except Exception as e:
        return {"sent": False, "error": str(e), "exit": s.close(), "rss_peak_kib": s.peak}
    s.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
    got = collect(s, {"big", "p"}, 20)
    return {"big_line": got.get("big", "no answer"), "ping": got.get("p", "no answer"),
            "seconds": round(time.monotonic() - t0, 2), "exit": s.close(), "rss_peak_kib": s.peak}


def a_bigline_server(fl, tmp):
    s = Shim(fl, tmp, FAKE)
    s.initialize()
    t0 = time.monotonic()
    s.send(call(1, "huge", {"n": 100 << 20}))
    s.send(call(2))
    got = collect(s, {1, 2}, 60)
    return {"huge_call": got.get(1, "no answer"), "next_call": got.get(2, "no answer"),
            "seconds": round(time.monotonic() - t0, 2), "exit": s.close(), "rss_peak_kib": s.peak}


def a_death_pending(fl, tmp):
    pidfile = os.path.join(tmp, "server.pid")
    wrapper = ["sh", "-c", 'echo $$ >"$0"; exec "$@"', pidfile] + FAKE
    s = Shim(fl, tmp, wrapper)
    s.initialize()
    ids = set(range(1, 1001))
    for i in sorted(ids):
        s.send(call(i, "slow", {"ms": 60000}))
    time.sleep(0.5)
    with open(pidfile) as f:
        os.kill(int(f.read()), signal.SIGKILL)
    t0 = time.monotonic()
    got = collect(s, ids, 30)
    return {"answered": len(got), "of": len(ids), "errors": sum(1 for v in got.values() if v == "error"),
            "seconds": round(time.monotonic() - t0, 2), "exit": s.close(), "rss_peak_kib": s.peak}


def a_garbage(fl, tmp):
    s = Shim(fl, tmp, FAKE + ["--garbage"])
    s.initialize()
    t0 = time.monotonic()
    ids = set(range(1, 1001))
    for i in sorted(ids):
        s.send(os.urandom(200).replace(b"\n", b"x") + b"\n")
        s.send(call(i))
    got = collect(s, ids, 30)
    return {"answered": len(got), "of": len(ids), "ok": sum(1 for v in got.values() if v == "ok"),
            "seconds": round(time.monotonic() - t0, 2), "exit": s.close(), "rss_peak_kib": s.peak}


SURROGATE_SERVER = r'''
import sys
replies = [b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"cut \\ud83d"}]}}',
           b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"raw \xff byte"}]}}',
           b'{"jsonrpc":"2.0","id":%s,"result":{"content":[],"n":1e400}}']
n = 0
for line in sys.stdin.buffer:
    if b'"initialize"' in line:
        sys.stdout.buffer.write(b'{"jsonrpc":"2.0","id":"init","result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}\n')
    elif b'"tools/call"' in line:
        i = line.split(b'"id":')[1].split(b',')[0].strip()
        sys.stdout.buffer.write(replies[n % 3] % i + b"\n")
        n += 1
    sys.stdout.buffer.flush()
'''


def a_surrogates(fl, tmp):
    path = os.path.join(tmp, "surrogate_server.py")
    with open(path, "w") as f:
        f.write(SURROGATE_SERVER)
    s = Shim(fl, tmp, [sys.executable, path])
    s.initialize()
    t0 = time.monotonic()
    for i in (1, 2, 3):
        s.send(call(i))
    got = {}
    for _ in range(3):
        line = s.recv(5)
        if line is None:
            break
        for i in (1, 2, 3):
            if line.startswith(b'{"jsonrpc":"2.0","id":%d,' % i):
                got[i] = "relayed"
    return {"relayed": len(got), "of": 3, "seconds": round(time.monotonic() - t0, 2),
            "exit": s.close(), "rss_peak_kib": s.peak}


ATTACKS = {"bigline-client": a_bigline_client, "bigline-server": a_bigline_server,
           "death-pending": a_death_pending, "garbage": a_garbage, "surrogates": a_surrogates}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--faultline", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(ATTACKS)
    results = []
    for n in names:
        if n not in ATTACKS:
            sys.exit("shim_attack.py: unknown attack '%s' (known: %s)" % (n, ", ".join(ATTACKS)))
        with tempfile.TemporaryDirectory(prefix="faultline-shim-attack.") as tmp:
            try:
                r = ATTACKS[n](args.faultline, tmp)
            except Exception as e:
                r = {"failed": "%s: %s" % (type(e).__name__, e)}
        r = dict(attack=n, **r)
        results.append(r)
        if not args.json:
            print("%-15s %s" % (n, json.dumps({k: v for k, v in r.items() if k != "attack"})),
                  flush=True)
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
