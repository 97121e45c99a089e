#!/usr/bin/env python3
"""bench/attack/attack.py: attacks the controller as an adversary would, while a well-behaved
client keeps calling, and prints what held.

    attack.py --faultline BIN [--seconds S] [--only NAME[,NAME...]] [--json]

Each attack runs for S seconds (default 60) against a fresh `faultline proxy` in front of
`faultline mock-model` (both on 127.0.0.1, stopped by PID at the end). Throughout, one
well-behaved client sends small non-streaming calls on a kept connection, one after the other,
each with a 5 s deadline, and a second one opens a new connection per call. Reported per attack:
the well-behaved calls answered and lost, their p50/p99/max latency, the controller's RSS at
the start, at its peak and at the end, and whether it was still alive. Figures go to
docs/reliability.md.

Attacks:
  idle         1,000 kept-alive connections that made one call and then stay idle
  slowloris    1,000 sockets sending a request head one byte a second
  slowcap      the controller with --max-conns 256 and 400 slowloris sockets (over the cap)
  malformed    41 kinds of malformed request, each on its own connection, in a loop
  midstream    streaming calls that hang up after the first bytes of the reply, 32 at a time
  hugebody     valid 9 MiB and 30 MiB model calls, one after another, on kept connections
               (OpenAI chat calls, served by a second mock model)
  halfclose    complete requests followed by shutdown(SHUT_WR): is each one answered?

Nothing here asserts: it measures. The tests in tests/e2e hold the assertions.
"""
import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SMALL = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 16,
                    "messages": [{"role": "user", "content": "hello"}]}).encode()
STREAM = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 16, "stream": True,
                     "messages": [{"role": "user", "content": "hello"}]}).encode()


def request(body, path="/v1/messages", extra=b""):
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"content-type: application/json\r\nx-api-key: sk-attack-0123456789\r\n"
            b"anthropic-version: 2023-06-01\r\n" + extra +
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def huge_body(size):
    """An OpenAI chat call of about size bytes: it goes to the second mock model, so that what
    the well-behaved client (on the Anthropic API, the first mock) measures is the
    controller's loop, not a mock model busy parsing 30 MiB."""
    pad = size - len(SMALL) - 64
    return json.dumps({"model": "gpt-4o-mini",
                       "messages": [{"role": "user", "content": "x" * pad}]}).encode()


MALFORMED = [
    b"\r\n\r\n", b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"GET / HTTP/1.1\r\n\r\n",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-length: -1\r\n\r\n",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-length: 99999999999999999999\r\n\r\n",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n0\r\n\r\n",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ntransfer-encoding: gzip\r\n\r\n",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhelloXX",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-length: 2\r\n\r\n{}",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-length: 4\r\n\r\nnull",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-length: 3\r\n\r\n[1]",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\n\r\n\xff\xfe\x00\x01\x02",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-length: 13\r\n\r\n{\"model\":123}",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-length: 14\r\n\r\n{\"stream\":\"x\"}",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\ncontent-length: 2\r\n\r\n{}",
    b"POST /v1/responses HTTP/1.1\r\nHost: x\r\ncontent-length: 1\r\n\r\n{",
    b"POST /nowhere HTTP/1.1\r\nHost: x\r\ncontent-length: 2\r\n\r\n{}",
    b"DELETE /v1/messages HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /_faultline/events HTTP/1.1\r\nHost: x\r\ncontent-length: 1\r\n\r\n[",
    b"POST /_faultline/decide HTTP/1.1\r\nHost: x\r\ncontent-length: 4\r\n\r\nnull",
    b"GET /_faultline/state?" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"X-Long: " + b"a" * 70000 + b"\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(500)) + b"\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\n bad-fold: y\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost x\r\n\r\n",
    b"GET / HTTP/1.1\r\nHo\x00st: x\r\n\r\n",
    b"GET / HTTP/1.1\nHost: x\n\n",
    b"GET  /  HTTP/1.1\r\n\r\n",
    b"G\x80T / HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nconnection: upgrade\r\nupgrade: h2c\r\n\r\n",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + os.urandom(64),
    os.urandom(512),
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nexpect: 100-continue\r\ncontent-length: 10\r\n\r\n",
    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-length: 100\r\n\r\n{\"model\":",
    b"GET /_faultline/health HTTP/1.1\r\nHost: x\r\n\r\nGET /_faultline/health HTTP/1.1\r\nHost: x\r\n\r\n" * 50,
    b"POST /v1/messages HTTP/1.0\r\ncontent-length: 2\r\n\r\n{}",
]


class Proc:
    def __init__(self, argv, log):
        self.p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(log, "w"),
                                  preexec_fn=raise_nofile)

    def rss_kib(self):
        try:
            with open("/proc/%d/status" % self.p.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return 0
        return 0

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def wait_file(path, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            with open(path) as f:
                return f.read().strip()
        time.sleep(0.05)
    raise RuntimeError("%s never appeared" % path)


async def read_response(reader, deadline):
    """Reads one HTTP response (head + content-length or chunked body); returns the status."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), deadline)
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    hdr = {}
    for ln in lines[1:]:
        if b":" in ln:
            k, v = ln.split(b":", 1)
            hdr[k.strip().lower()] = v.strip()
    if b"content-length" in hdr:
        await asyncio.wait_for(reader.readexactly(int(hdr[b"content-length"])), deadline)
    elif hdr.get(b"transfer-encoding", b"").lower() == b"chunked":
        while True:
            size_line = await asyncio.wait_for(reader.readuntil(b"\r\n"), deadline)
            n = int(size_line.split(b";")[0], 16)
            await asyncio.wait_for(reader.readexactly(n + 2), deadline)
            if n == 0:
                break
    return status, hdr


class Good:
    """The well-behaved clients: one on a kept connection, one reconnecting per call."""

    def __init__(self, addr):
        self.addr = addr
        self.lat = []
        self.ok = 0
        self.lost = 0
        self.stop = False

    async def call(self, reader, writer, t0, extra=b""):
        """One small call on an open connection; counts it as answered, with its latency since
        t0 (the connect included when it opened the connection)."""
        writer.write(request(SMALL, extra=extra))
        await writer.drain()
        status, _ = await read_response(reader, 5)
        if status != 200:
            raise RuntimeError("status %d" % status)
        self.ok += 1
        self.lat.append(time.monotonic() - t0)

    async def kept(self):
        reader = writer = None
        while not self.stop:
            t0 = time.monotonic()
            try:
                if writer is None:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection(*self.addr), 5)
                await self.call(reader, writer, t0)
            except Exception:
                self.lost += 1
                if writer is not None:
                    writer.close()
                reader = writer = None
            await asyncio.sleep(0.02)
        if writer is not None:
            writer.close()

    async def fresh(self):
        while not self.stop:
            t0 = time.monotonic()
            writer = None
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(*self.addr), 5)
                await self.call(reader, writer, t0, b"connection: close\r\n")
            except Exception:
                self.lost += 1
            finally:
                if writer is not None:
                    writer.close()
            await asyncio.sleep(0.05)


async def hold_open(socks):
    for w in socks:
        try:
            w.close()
        except Exception:
            pass


async def attack_idle(addr, secs, stats):
    socks = []
    for _ in range(1000):
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(*addr), 5)
            w.write(request(SMALL))
            await w.drain()
            await read_response(r, 5)
            socks.append(w)
        except Exception:
            stats["setup_errors"] = stats.get("setup_errors", 0) + 1
    stats["connections"] = len(socks)
    await asyncio.sleep(secs)
    await hold_open(socks)


async def slowloris(addr, n, secs, stats):
    socks = []
    for _ in range(n):
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(*addr), 5)
            socks.append(w)
        except Exception:
            stats["setup_errors"] = stats.get("setup_errors", 0) + 1
    stats["sockets"] = len(socks)
    head = request(SMALL)
    end = time.monotonic() + secs
    i = 0
    while time.monotonic() < end:
        for w in list(socks):
            if w.is_closing():
                socks.remove(w)
                stats["closed_by_server"] = stats.get("closed_by_server", 0) + 1
                # an attacker reconnects at once
                try:
                    r, w2 = await asyncio.wait_for(asyncio.open_connection(*addr), 1)
                    socks.append(w2)
                except Exception:
                    pass
                continue
            try:
                w.write(head[i % 40:i % 40 + 1])
            except Exception:
                pass
        i += 1
        await asyncio.sleep(1)
    await hold_open(socks)


async def attack_slowloris(addr, secs, stats):
    await slowloris(addr, 1000, secs, stats)


async def attack_slowcap(addr, secs, stats):
    await slowloris(addr, 400, secs, stats)


async def attack_malformed(addr, secs, stats):
    end = time.monotonic() + secs
    sent = 0
    codes = {}
    while time.monotonic() < end:
        for m in MALFORMED:
            w = None
            try:
                r, w = await asyncio.wait_for(asyncio.open_connection(*addr), 5)
                w.write(m)
                await w.drain()
                data = await asyncio.wait_for(r.read(4096), 3)
                c = data.split(b" ")[1].decode() if data.startswith(b"HTTP/1.") else "none"
                codes[c] = codes.get(c, 0) + 1
            except Exception:
                codes["timeout/reset"] = codes.get("timeout/reset", 0) + 1
            finally:
                if w is not None:
                    w.close()
            sent += 1
            if time.monotonic() >= end:
                break
    stats["requests"] = sent
    stats["answers"] = codes


async def attack_midstream(addr, secs, stats):
    end = time.monotonic() + secs
    n = 0

    async def one():
        nonlocal n
        while time.monotonic() < end:
            w = None
            try:
                r, w = await asyncio.wait_for(asyncio.open_connection(*addr), 5)
                w.write(request(STREAM))
                await w.drain()
                await asyncio.wait_for(r.read(64), 5)
            except Exception:
                pass
            finally:
                if w is not None:
                    w.transport.abort()
            n += 1

    await asyncio.gather(*[one() for _ in range(32)])
    stats["streams_cut"] = n


async def attack_hugebody(addr, secs, stats):
    end = time.monotonic() + secs
    bodies = [request(huge_body(9 << 20), "/v1/chat/completions"),
              request(huge_body(30 << 20), "/v1/chat/completions")]
    answers = {}
    i = 0
    r = w = None
    while time.monotonic() < end:
        try:
            if w is None:
                r, w = await asyncio.wait_for(asyncio.open_connection(*addr), 5)
            w.write(bodies[i % 2])
            await w.drain()
            status, _ = await read_response(r, 30)
            answers[str(status)] = answers.get(str(status), 0) + 1
        except Exception as e:
            answers[type(e).__name__] = answers.get(type(e).__name__, 0) + 1
            if w is not None:
                w.close()
            r = w = None
        i += 1
    if w is not None:
        w.close()
    stats["calls"] = i
    stats["answers"] = answers


async def attack_halfclose(addr, secs, stats):
    end = time.monotonic() + secs
    answered = silent = 0
    while time.monotonic() < end:
        s = socket.socket()
        s.setblocking(False)
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.sock_connect(s, addr), 5)
            await loop.sock_sendall(s, request(SMALL))
            s.shutdown(socket.SHUT_WR)
            data = await asyncio.wait_for(loop.sock_recv(s, 4096), 3)
            if data.startswith(b"HTTP/1.1 200"):
                answered += 1
            else:
                silent += 1
        except Exception:
            silent += 1
        finally:
            s.close()
        await asyncio.sleep(0.05)
    stats["answered"] = answered
    stats["not_answered"] = silent


ATTACKS = {
    "idle": (attack_idle, []),
    "slowloris": (attack_slowloris, []),
    "slowcap": (attack_slowcap, ["--max-conns", "256"]),
    "malformed": (attack_malformed, []),
    "midstream": (attack_midstream, []),
    "hugebody": (attack_hugebody, []),
    "halfclose": (attack_halfclose, []),
}


def start(args, tmp, extra):
    mock_script = os.path.join(tmp, "mock.yaml")
    with open(mock_script, "w") as f:
        f.write("name: attack\nrules: []\nfallback: {text: \"hello from the mock\"}\n")
    plan = os.path.join(tmp, "plan.json")
    with open(plan, "w") as f:
        f.write('{"version":1,"run":"attack","canary":"E-FAULTLINE-00000000","faults":[],'
                '"abort":{"cost_usd_above":1000000}}\n')
    for name in ("mock.ready", "mock2.ready", "px.ready"):
        try:
            os.unlink(os.path.join(tmp, name))
        except FileNotFoundError:
            pass
    mock = Proc([args.faultline, "mock-model", "--script", mock_script, "--ready-file",
                 os.path.join(tmp, "mock.ready")], os.path.join(tmp, "mock.log"))
    up = wait_file(os.path.join(tmp, "mock.ready"))
    mock2 = Proc([args.faultline, "mock-model", "--script", mock_script, "--ready-file",
                  os.path.join(tmp, "mock2.ready")], os.path.join(tmp, "mock2.log"))
    up2 = wait_file(os.path.join(tmp, "mock2.ready"))
    px = Proc([args.faultline, "proxy", "--plan", plan, "--events",
               os.path.join(tmp, "events.jsonl"), "--upstream-anthropic", "http://" + up,
               "--upstream-openai", "http://" + up2,
               "--ready-file", os.path.join(tmp, "px.ready")] + extra,
              os.path.join(tmp, "proxy.log"))
    host, port = wait_file(os.path.join(tmp, "px.ready")).rsplit(":", 1)
    return [mock, mock2], px, (host, int(port))


async def run_one(name, args, tmp):
    fn, extra = ATTACKS[name]
    mocks, px, addr = start(args, tmp, extra)
    good = Good(addr)
    stats = {}
    rss = [px.rss_kib()]

    async def sample():
        while not good.stop:
            rss.append(px.rss_kib())
            await asyncio.sleep(1)

    tasks = [asyncio.create_task(good.kept()), asyncio.create_task(good.fresh()),
             asyncio.create_task(sample())]
    t0 = time.monotonic()
    try:
        await asyncio.wait_for(fn(addr, args.seconds, stats), args.seconds + 120)
    except asyncio.TimeoutError:
        stats["attack_timed_out"] = True
    good.stop = True
    await asyncio.gather(*tasks, return_exceptions=True)
    alive = px.alive()
    rss.append(px.rss_kib())
    px.stop()
    for m in mocks:
        m.stop()
    lat = sorted(good.lat)

    def pct(p):
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 1) if lat else None

    return {"attack": name, "seconds": round(time.monotonic() - t0, 1), "alive": alive,
            "good_ok": good.ok, "good_lost": good.lost, "p50_ms": pct(0.5),
            "p99_ms": pct(0.99), "max_ms": round(lat[-1] * 1000, 1) if lat else None,
            "rss_kib_start": rss[0], "rss_kib_peak": max(rss), "rss_kib_end": rss[-1],
            "stats": stats}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--faultline", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    raise_nofile()
    names = [n for n in args.only.split(",") if n] or list(ATTACKS)
    for n in names:
        if n not in ATTACKS:
            sys.exit("attack.py: unknown attack '%s' (known: %s)" % (n, ", ".join(ATTACKS)))
    results = []
    with tempfile.TemporaryDirectory(prefix="faultline-attack.") as tmp:
        for n in names:
            r = asyncio.run(run_one(n, args, tmp))
            results.append(r)
            if not args.json:
                print("%-10s alive=%s good calls ok=%d lost=%d p50=%sms p99=%sms max=%sms "
                      "rss KiB start=%d peak=%d end=%d %s" % (
                          r["attack"], "yes" if r["alive"] else "NO", r["good_ok"],
                          r["good_lost"], r["p50_ms"], r["p99_ms"], r["max_ms"],
                          r["rss_kib_start"], r["rss_kib_peak"], r["rss_kib_end"],
                          json.dumps(r["stats"], sort_keys=True)), flush=True)
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
