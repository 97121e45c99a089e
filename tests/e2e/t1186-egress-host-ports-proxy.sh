#!/usr/bin/env bash
# `faultline proxy --host-port-fd FD:PORT` without a sandbox (docs/egress.md "Ports of the
# host"): a listening socket inherited by the controller leads to the host's 127.0.0.1:PORT,
# relayed blind whatever the protocol (here a line protocol that is not HTTP), each
# connection one egress_request with `mode: host_port` and its exact byte counts; the host
# service closing first still delivers its answer; a port nothing listens on is reset
# (ECONNRESET, no HTTP answer), status 502, `connect refused`; a client that half-closes
# still gets its answer.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"
write_plan "$TMP/plan.json" '[]'
cd "$TMP"
cat >harness.py <<'PY'
import json, os, socket, subprocess, sys, threading, time

exe = sys.argv[1]
# the host's service: reads one line, answers "echo:LINE" and closes
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
hport = srv.getsockname()[1]
def serve():
    while True:
        c, _ = srv.accept()
        data = b""
        while not data.endswith(b"\n"):
            d = c.recv(4096)
            if not d:
                break
            data += d
        c.sendall(b"echo:" + data)
        c.close()
threading.Thread(target=serve, daemon=True).start()
# a port nothing listens on
dead = socket.socket()
dead.bind(("127.0.0.1", 0))
dport = dead.getsockname()[1]
dead.close()
# the two listeners the sandbox would bind, inherited by the controller
l1, l2 = socket.socket(), socket.socket()
for l in (l1, l2):
    l.bind(("127.0.0.1", 0))
    l.listen(8)
    l.set_inheritable(True)
spec = "%d:%d,%d:%d" % (l1.fileno(), hport, l2.fileno(), dport)
p = subprocess.Popen([exe, "proxy", "--plan", "plan.json", "--events", "ev.jsonl",
                      "--ready-file", "ready", "--egress-listen", "127.0.0.1:0",
                      "--host-port-fd", spec],
                     pass_fds=[l1.fileno(), l2.fileno()], stderr=open("proxy.log", "w"))
try:
    for _ in range(200):
        if os.path.exists("ready") and os.path.getsize("ready") > 0:
            break
        time.sleep(0.05)
    else:
        sys.exit("the controller did not start")
    def ask(line, half_close):
        c = socket.create_connection(l1.getsockname(), timeout=10)
        c.sendall(line)
        if half_close:
            c.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            d = c.recv(4096)
            if not d:
                break
            got += d
        c.close()
        return got.decode().strip()
    print("answer:" + ask(b"PING 42\n", False))
    # a client that half-closes (shuts its sending side, then reads) still gets the answer
    print("half:" + ask(b"HALF 7\n", True))
    c = socket.create_connection(l2.getsockname(), timeout=10)
    try:
        d = c.recv(4096)
        print("refused:eof:%r" % d)
    except ConnectionResetError:
        print("refused:reset")
    c.close()
    # both events written (the controller queues them while serving)
    for _ in range(200):
        evs = [json.loads(x) for x in open("ev.jsonl")]
        if sum(1 for e in evs if e["kind"] == "egress_request") >= 3:
            break
        time.sleep(0.05)
finally:
    p.terminate()
    p.wait(timeout=10)
print("hport=%d dport=%d" % (hport, dport))
PY
rc=0
timeout 40 python3 harness.py "$FAULTLINE" >h.out 2>h.err || rc=$?
echo "$rc" >h.rc
HPORT=$(sed -n 's/^hport=\([0-9]*\) .*/\1/p' h.out)
DPORT=$(sed -n 's/.* dport=\([0-9]*\)$/\1/p' h.out)
export HPORT DPORT

test_expect "the harness ran" '
    cat h.out h.err
    test "$(cat h.rc)" = 0
    test -n "$HPORT"
'

test_expect "a line protocol that is not HTTP is relayed both ways; the host closing first delivers its answer" '
    grep -qx "answer:echo:PING 42" h.out
    jq -se "[.[] | select(.kind == \"egress_request\" and .port == $HPORT)] | length == 2 and all(.mode == \"host_port\" and .method == \"TCP\" and .host == \"127.0.0.1\" and .status == 200 and (has(\"error\") | not)) and (map([.bytes_out, .bytes_in]) | sort) == [[7, 12], [8, 13]]" ev.jsonl
'

test_expect "a client that half-closes still gets the answer (the tunnel shuts the host side's write, then relays the answer)" '
    grep -qx "half:echo:HALF 7" h.out
'

test_expect "a port nothing listens on: reset, no HTTP answer, status 502 connect refused" '
    grep -qx "refused:reset" h.out
    jq -se "[.[] | select(.kind == \"egress_request\" and .port == $DPORT)] | length == 1 and all(.mode == \"host_port\" and .status == 502 and .error == \"connect refused\" and .bytes_in == 0)" ev.jsonl
'

test_done
