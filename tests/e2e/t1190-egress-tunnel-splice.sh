#!/usr/bin/env bash
# A blind CONNECT tunnel of the egress proxy (docs/egress.md), moved by splice(2)
# (src/control/egress_tunnel.c): 64 MiB down and 8 MiB up arrive intact (sha256 at both ends),
# the bytes sent along with the CONNECT head included; each side's EOF is passed on as a
# half-close while the other direction keeps flowing (a client that half-closes still gets
# the answer sent after it; an upstream that half-closes first still gets the upload); the
# egress_request event counts every byte each way; a silent tunnel ends at the idle timeout.
. "$(dirname "$0")/lib.sh"

PY=$(command -v python3)
head -c $((64 << 20)) /dev/urandom >"$TMP/down.bin"
head -c $((8 << 20)) /dev/urandom >"$TMP/up.bin"
DOWN_SHA=$(sha256sum <"$TMP/down.bin" | cut -d' ' -f1)
UP_SHA=$(sha256sum <"$TMP/up.bin" | cut -d' ' -f1)
export DOWN_SHA UP_SHA

# two origins on loopback: "after-eof" reads the upload to EOF, then sends the download;
# "first" sends the download and half-closes at once, then reads the upload to EOF. Each
# writes the sha256 and length of what it received to its file.
cat >"$TMP/origin.py" <<'PY'
import hashlib, os, socket, sys, threading
down, out = sys.argv[1], sys.argv[2]
def serve(l, mode):
    c, _ = l.accept()
    c.settimeout(30)
    def upload():
        h, n = hashlib.sha256(), 0
        while True:
            b = c.recv(1 << 20)
            if not b:
                break
            h.update(b); n += len(b)
        with open(os.path.join(out, mode + ".got.tmp"), "w") as f:
            f.write("%s %d\n" % (h.hexdigest(), n))
        os.rename(os.path.join(out, mode + ".got.tmp"), os.path.join(out, mode + ".got"))
    def download():
        with open(down, "rb") as f:
            c.sendfile(f)
        c.shutdown(socket.SHUT_WR)
    if mode == "after-eof":
        upload(); download()
    else:
        download(); upload()
    c.close()
ports = []
ts = []
def silent(l):
    c, _ = l.accept()  # says nothing, reads nothing, until the proxy gives up
    c.settimeout(20)
    try:
        c.recv(1)
    except OSError:
        pass
    c.close()
for mode in ("after-eof", "first", "silent"):
    if mode == "silent":
        l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
        ports.append(str(l.getsockname()[1]))
        t = threading.Thread(target=silent, args=(l,)); t.start(); ts.append(t)
        continue
    l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
    ports.append(str(l.getsockname()[1]))
    t = threading.Thread(target=serve, args=(l, mode)); t.start(); ts.append(t)
with open(os.path.join(out, "ports.tmp"), "w") as f:
    f.write(" ".join(ports) + "\n")
os.rename(os.path.join(out, "ports.tmp"), os.path.join(out, "ports"))
for t in ts:
    t.join()
PY
start_bg "$PY" "$TMP/origin.py" "$TMP/down.bin" "$TMP"
wait_file 10 "$TMP/ports" || echo "the origins did not start"
read -r P1 P2 P3 <"$TMP/ports"
export P1 P2 P3

printf '{"version":1,"run":"t-run","canary":"E-FAULTLINE-0123abcd","faults":[{"kind":"egress.dns_fail","safety":"fail-safe","injectors":["controller-egress"],"match":{"host":"never.invalid"}}],"abort":{"cost_usd_above":100}}\n' >"$TMP/plan.json"
EVENTS="$TMP/events.jsonl"
start_bg "$FAULTLINE" proxy --plan "$TMP/plan.json" --events "$EVENTS" --egress-listen 127.0.0.1:0 \
    --egress-ready-file "$TMP/egress" --resolve "after-eof.test:$P1:127.0.0.1" \
    --resolve "first.test:$P2:127.0.0.1" --resolve "silent.test:$P3:127.0.0.1" \
    --idle-timeout-ms 3000 --log-level info 2>"$TMP/proxy.log"
PROXY_PID=$LAST_PID
wait_file 10 "$TMP/egress" || echo "no egress address"
EG=$(cat "$TMP/egress")
export EG PROXY_PID EVENTS PY

# client.py HOST PORT MODE: CONNECT with the upload's first 1000 bytes in the same write as
# the head; "after-eof": the rest of the upload, a half-close, then the download read;
# "first": the download read to its EOF first, then the upload and the close. Prints the
# download's sha256 and length.
cat >"$TMP/client.py" <<'PY'
import hashlib, socket, sys
eg, host, port, mode, up = sys.argv[1:6]
data = open(up, "rb").read()
h, p = eg.rsplit(":", 1)
s = socket.create_connection((h, int(p)), timeout=30)
s.sendall(b"CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host.encode(), port.encode(), host.encode(), port.encode()) + data[:1000])
head = b""
while b"\r\n\r\n" not in head:
    b = s.recv(1)
    if not b:
        raise SystemExit("closed in the CONNECT answer: %r" % head)
    head += b
assert head.startswith(b"HTTP/1.1 200"), head
def upload():
    s.sendall(data[1000:])
    s.shutdown(socket.SHUT_WR)
def download():
    d, n = hashlib.sha256(), 0
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        d.update(b); n += len(b)
    return "%s %d" % (d.hexdigest(), n)
if mode == "after-eof":
    upload(); r = download()
else:
    r = download(); upload()
    s.settimeout(10)
    assert s.recv(1) == b""  # the proxy closes once the upload is through
print(r)
PY

test_expect "64 MiB down after the client half-closed its 8 MiB upload: intact both ways" '
    timeout 50 "$PY" "$TMP/client.py" "$EG" after-eof.test "$P1" after-eof "$TMP/up.bin" >got.txt
    cat got.txt
    test "$(cat got.txt)" = "$DOWN_SHA $((64 << 20))"
    wait_file 10 "$TMP/after-eof.got"
    test "$(cat "$TMP/after-eof.got")" = "$UP_SHA $((8 << 20))"
'

test_expect "the upstream half-closes first: the client still reads all, then its upload arrives" '
    timeout 50 "$PY" "$TMP/client.py" "$EG" first.test "$P2" first "$TMP/up.bin" >got.txt
    test "$(cat got.txt)" = "$DOWN_SHA $((64 << 20))"
    wait_file 10 "$TMP/first.got"
    test "$(cat "$TMP/first.got")" = "$UP_SHA $((8 << 20))"
'

test_expect "a tunnel where nothing moves either way ends after the idle timeout" '
    "$PY" -c "
import socket, sys, time
h, p = sys.argv[1].rsplit(\":\", 1)
s = socket.create_connection((h, int(p)), timeout=15)
s.sendall(b\"CONNECT silent.test:%s HTTP/1.1\\r\\n\\r\\n\" % sys.argv[2].encode())
t = time.time()
d = s.recv(100)
assert d.startswith(b\"HTTP/1.1 200\"), d
assert s.recv(1) == b\"\"
assert 2.5 < time.time() - t < 12, time.time() - t
" "$EG" "$P3"
    wait_for 5 jq -se "any(.[]; .kind == \"egress_request\" and .host == \"silent.test\" and .error == \"idle timeout\")" "$EVENTS"
'

test_expect "each tunnel is one egress_request counting every byte each way, no error" '
    wait_for 10 jq -se "map(select(.kind == \"egress_request\" and .host != \"silent.test\")) | length == 2" "$EVENTS"
    jq -c "select(.kind == \"egress_request\" and .host != \"silent.test\")" "$EVENTS" >e.json
    cat e.json
    jq -se "map(select(.method == \"CONNECT\" and .status == 200 and .bytes_out == $((8 << 20)) and .bytes_in == $((64 << 20)) and (.error // null) == null and .duration_ms >= 0)) | map(.host) | sort == [\"after-eof.test\", \"first.test\"]" e.json
    refute grep -E "Sanitizer|runtime error|relayed through user space" "$TMP/proxy.log"
'

test_done
