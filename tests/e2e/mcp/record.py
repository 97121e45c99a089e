#!/usr/bin/env python3
"""record.py OUT.json CMD [ARGS...]: relays stdin/stdout to CMD line by line and records the
session as [{"dir": "c2s"|"s2c", "line": "..."}] in OUT.json (lines without their newline).
Used once to make a fixture (tests/e2e/mcp/everything-session.json) from a real session."""
import json
import subprocess
import sys
import threading

out_path, cmd = sys.argv[1], sys.argv[2:]
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
log, lock = [], threading.Lock()


def s2c():
    for line in p.stdout:
        with lock:
            log.append({"dir": "s2c", "line": line.decode().rstrip("\n")})
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()


t = threading.Thread(target=s2c)
t.start()
for line in sys.stdin.buffer:
    with lock:
        log.append({"dir": "c2s", "line": line.decode().rstrip("\n")})
    p.stdin.write(line)
    p.stdin.flush()
p.stdin.close()
try:
    p.wait(3)
except subprocess.TimeoutExpired:
    p.terminate()
t.join(3)
with open(out_path, "w") as f:
    json.dump(log, f, indent=1, ensure_ascii=False)
