#!/usr/bin/env bash
# The controller's DNS stub (docs/egress.md "The DNS stub") on `faultline proxy --dns-listen`:
# an A query answers the stub's loopback address, AAAA NODATA, a name under egress.dns_fail
# NXDOMAIN with its fault_injected, and garbage, truncated, oversized datagrams and responses
# get FORMERR or nothing, one dns_query event each; the stub keeps answering after them.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

# dq.py PORT NAME TYPE | dq.py PORT --raw HEX | dq.py PORT --size N: one datagram, prints the
# reply as "rcode=R an=N addr=A" or "no reply" (after 1 s)
cat >"$TMP/dq.py" <<'PY'
import socket, struct, sys
port = int(sys.argv[1])
if sys.argv[2] == "--raw":
    msg = bytes.fromhex(sys.argv[3])
elif sys.argv[2] == "--size":
    msg = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"\x00" * (int(sys.argv[3]) - 12)
else:
    name, qtype = sys.argv[2], int(sys.argv[3])
    q = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\x00"
    msg = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + q + struct.pack(">HH", qtype, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1.0)
s.sendto(msg, ("127.0.0.1", port))
try:
    r = s.recv(65535)
except socket.timeout:
    print("no reply")
    sys.exit(0)
rcode, an = r[3] & 0xF, struct.unpack(">H", r[6:8])[0]
addr = socket.inet_ntoa(r[-4:]) if an else "-"
print("rcode=%d an=%d addr=%s id=%04x" % (rcode, an, addr, struct.unpack(">H", r[0:2])[0]))
PY

start_upstream
write_plan "$TMP/plan.json" '[
 {"kind":"egress.dns_fail","safety":"fail-safe","injectors":["controller-egress"],"match":{"host":"*.blocked.test"}}
]'
DP=$(free_port)
start_proxy "$TMP/plan.json" --dns-listen "127.0.0.1:$DP"
export DP
dq() { "$PY" "$TMP/dq.py" "$DP" "$@"; }
export -f dq

# wait_ev N FILTER: waits (5 s) until N events match the jq FILTER
wait_ev() {
    wait_for 5 jq -se "map(select($2)) | length >= $1" "$EVENTS"
}
export -f wait_ev

test_expect "an A query answers the stub's loopback address, with its dns_query event" '
    test "$(dq Registry.Example.org 1)" = "rcode=0 an=1 addr=127.0.0.1 id=1234"
    wait_ev 1 ".kind == \"dns_query\" and .name == \"Registry.Example.org\""
    ev dns_query "select(.name == \"Registry.Example.org\")" >e.json
    cat e.json
    jq -e ".qtype == 1 and .answer == \"address\" and .address == \"127.0.0.1\" and (.faulted // false) == false" e.json
'

test_expect "AAAA and other types: NODATA" '
    test "$(dq registry.example.org 28)" = "rcode=0 an=0 addr=- id=1234"
    test "$(dq registry.example.org 65)" = "rcode=0 an=0 addr=- id=1234"
    wait_ev 1 ".kind == \"dns_query\" and .qtype == 28 and .answer == \"nodata\""
'

test_expect "egress.dns_fail: a matched name is NXDOMAIN, with fault_injected; others still resolve" '
    test "$(dq pkg.blocked.test 1)" = "rcode=3 an=0 addr=- id=1234"
    test "$(dq pkg.blocked.test 28)" = "rcode=3 an=0 addr=- id=1234"
    test "$(dq pkg.open.test 1)" = "rcode=0 an=1 addr=127.0.0.1 id=1234"
    wait_ev 2 ".kind == \"fault_injected\""
    jq -se "map(select(.kind == \"fault_injected\")) | length == 2 and all(.[]; .fault == \"egress.dns_fail\" and .target == \"pkg.blocked.test\" and .component == \"controller-egress\" and .detail.via == \"dns\" and .canary == \"E-FAULTLINE-0123abcd\")" "$EVENTS"
    jq -se "map(select(.kind == \"dns_query\" and .name == \"pkg.blocked.test\")) | length == 2 and all(.[]; .answer == \"nxdomain\" and .faulted == true)" "$EVENTS"
'

test_expect "garbage, truncated, oversized and responses: FORMERR or nothing, an event each" '
    test "$(dq --raw 0102)" = "no reply"
    test "$(dq --raw 123401000001000000000000037777)" = "rcode=1 an=0 addr=- id=1234"
    test "$(dq --raw 1234010000010000000000000777777703636f6d00000100)" = "rcode=1 an=0 addr=- id=1234"
    test "$(dq --raw 123401000001000000000000c00c00010001)" = "rcode=1 an=0 addr=- id=1234"
    test "$(dq --raw 123481000001000000000000037777770000010001)" = "no reply"
    test "$(dq --raw 123411000001000000000000037777770000010001)" = "rcode=4 an=0 addr=- id=1234"
    test "$(dq --size 5000)" = "no reply"
    test "$(dq --size 60000)" = "no reply"
    wait_ev 8 ".kind == \"dns_query\" and .answer != \"address\" and .answer != \"nodata\" and .answer != \"nxdomain\""
    jq -se "map(select(.kind == \"dns_query\" and .answer == \"dropped\")) | length == 4 and all(.[]; .name == \"?\" and (.error | length) > 0)" "$EVENTS"
    jq -se "map(select(.kind == \"dns_query\" and .answer == \"formerr\")) | length == 3" "$EVENTS"
    jq -se "any(.[]; .kind == \"dns_query\" and .answer == \"dropped\" and (.error | test(\"60000 bytes\")))" "$EVENTS"
'

test_expect "the stub keeps answering, and the controller is alive" '
    test "$(dq after.example.org 1)" = "rcode=0 an=1 addr=127.0.0.1 id=1234"
    kill -0 "$PROXY_PID"
'

stop_proxy
test_expect "a stopped controller leaves whole events: every line is JSON" '
    jq -c . "$EVENTS" >/dev/null
    test "$(grep -c "\"kind\":\"dns_query\"" "$EVENTS")" -ge 15
'

test_done
