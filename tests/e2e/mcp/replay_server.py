#!/usr/bin/env python3
"""replay_server.py SESSION.json [IN_LOG]: plays the server side of a recorded session
(record.py): after reading the k-th client line it writes the server lines recorded between
client lines k and k+1 (and, at start, those recorded before the first client line). Every line
read is appended to IN_LOG byte for byte, so a test can compare it with what the client sent."""
import json
import sys

session = json.load(open(sys.argv[1]))
in_log = open(sys.argv[2], "ab") if len(sys.argv) > 2 else None
groups, cur = [[]], None
for ev in session:
    if ev["dir"] == "c2s":
        groups.append([])
    else:
        groups[-1].append(ev["line"])
out = sys.stdout.buffer


def emit(lines):
    for line in lines:
        out.write(line.encode() + b"\n")
    out.flush()


emit(groups[0])
k = 0
for line in sys.stdin.buffer:
    if in_log:
        in_log.write(line)
        in_log.flush()
    k += 1
    if k < len(groups):
        emit(groups[k])
