#!/usr/bin/env bash
# bench/b15-egress.sh: the egress proxy's CONNECT tunnel throughput against a direct loopback
# transfer, in the same run (docs/performance.md, ## egress).
#
# A source on 127.0.0.1 sends SIZE_MB (default 256) MiB with sendfile(2) to each connection;
# a reader (one Python process, recv_into a 1 MiB buffer) takes it directly, then through
# `faultline proxy --egress-listen` (CONNECT bench.test:PORT, the name sent to the source by
# --resolve; a plan whose fault never matches, events on). Rounds alternate direct / tunnel;
# the figures are medians over ROUNDS (default 5), the ratio is the median of each round's
# ratio. Bar: tunnel >= 0.5x direct. Prints met / NOT MET; everything binds 127.0.0.1 and is
# stopped by PID.
set -u
: "${FAULTLINE:?run through make bench (bench/run sets FAULTLINE)}"
ROUNDS=${ROUNDS:-5}
SIZE_MB=${SIZE_MB:-256}
T=$(mktemp -d "${TMPDIR:-/tmp}/faultline-bench.XXXXXX")
PY=$(python3 -c 'import sys; print(sys.executable)')
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT

head -c $((SIZE_MB << 20)) /dev/zero >"$T/blob"
"$PY" - "$T/blob" "$T/src.port" <<'PY' &
import os, socket, sys, threading
blob, portfile = sys.argv[1:3]
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16)
open(portfile + ".tmp", "w").write(str(s.getsockname()[1])); os.rename(portfile + ".tmp", portfile)
def serve(c):
    with c, open(blob, "rb") as f:
        c.sendfile(f)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
pids+=($!)
for i in $(seq 100); do [ -s "$T/src.port" ] && break; sleep 0.05; done
SP=$(cat "$T/src.port")
printf '{"version":1,"run":"bench","canary":"E-FAULTLINE-0123abcd","faults":[{"kind":"egress.dns_fail","safety":"fail-safe","injectors":["controller-egress"],"match":{"host":"never.invalid"}}],"abort":{"cost_usd_above":100}}\n' >"$T/plan.json"
"$FAULTLINE" proxy --plan "$T/plan.json" --events "$T/events.jsonl" --egress-listen 127.0.0.1:0 \
    --egress-ready-file "$T/egress" --resolve "bench.test:$SP:127.0.0.1" --log-level warn 2>"$T/proxy.log" &
pids+=($!)
for i in $(seq 100); do [ -s "$T/egress" ] && break; sleep 0.05; done
EG=$(cat "$T/egress")
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$SP" "$EG" "$ROUNDS" "$SIZE_MB" <<'PY'
import socket, statistics, sys, time
sp, eg, rounds, size_mb = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
want = size_mb << 20
buf = bytearray(1 << 20)
def drain(s):
    n, t0 = 0, time.perf_counter()
    while n < want:
        k = s.recv_into(buf)
        if k == 0:
            raise SystemExit("short transfer: %d of %d bytes" % (n, want))
        n += k
    return want / (time.perf_counter() - t0) / (1 << 20)
def direct():
    with socket.create_connection(("127.0.0.1", sp)) as s:
        return drain(s)
def tunnel():
    h, p = eg.rsplit(":", 1)
    with socket.create_connection((h, int(p))) as s:
        s.sendall(b"CONNECT bench.test:%d HTTP/1.1\r\nHost: bench.test:%d\r\n\r\n" % (sp, sp))
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        if not head.startswith(b"HTTP/1.1 200"):
            raise SystemExit("CONNECT refused: %r" % head)
        return drain(s)
d, t, r = [], [], []
for i in range(rounds):
    a = direct(); b = tunnel()
    d.append(a); t.append(b); r.append(b / a)
ratio = statistics.median(r)
print("direct loopback %d MiB: %.0f MiB/s (median of %d)" % (size_mb, statistics.median(d), rounds))
print("CONNECT tunnel  %d MiB: %.0f MiB/s (median of %d)" % (size_mb, statistics.median(t), rounds))
print("tunnel / direct: %.2fx (bar >= 0.5x): %s" % (ratio, "met" if ratio >= 0.5 else "NOT MET"))
sys.exit(0 if ratio >= 0.5 else 1)
PY
rc=$?
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -q '"kind":"egress_request"' "$T/events.jsonl" 2>/dev/null || { sleep 1; }
exit $rc
