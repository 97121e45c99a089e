#!/usr/bin/env bash
# The experiment's `egress: {host_ports: [PORTS]}` (docs/egress.md "Ports of the host"):
# `faultline run` binds 127.0.0.1:PORT inside the sandbox for each named port and the
# controller relays each connection to the host's own 127.0.0.1:PORT, one egress_request
# (`mode: host_port`) each. curl in the sandbox reaches a local server on a named port; a
# second server on a port not named stays unreachable (no listener inside, nothing relayed,
# the run's egress_uncovered warning); a named port nothing listens on is reset (curl: as if
# refused) and recorded `connect refused`; the forward proxy still refuses loopback, the named
# port included.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR" "$TMP/www" "$TMP/other"
echo "hello from the host's dev server" >"$TMP/www/hello.txt"
echo "the other server" >"$TMP/other/hello.txt"
HP=$(free_port)
OP=$(free_port)
RP=$(free_port)
while [ "$OP" = "$HP" ]; do OP=$(free_port); done
while [ "$RP" = "$HP" ] || [ "$RP" = "$OP" ]; do RP=$(free_port); done
start_bg python3 -m http.server --bind 127.0.0.1 --directory "$TMP/www" "$HP" 2>"$TMP/www.log"
start_bg python3 -m http.server --bind 127.0.0.1 --directory "$TMP/other" "$OP" 2>"$TMP/other.log"
wait_for 10 curl -sS -o /dev/null "http://127.0.0.1:$HP/hello.txt" || echo "the dev server did not start"
wait_for 10 curl -sS -o /dev/null "http://127.0.0.1:$OP/hello.txt" || echo "the other server did not start"
: >"$TMP/www.log"
: >"$TMP/other.log"

make_project "$TMP/p"
AGENT="curl -sS --max-time 10 http://127.0.0.1:$HP/hello.txt; echo NAMED-RC=\$?; curl -sS --max-time 5 http://127.0.0.1:$OP/hello.txt; echo OTHER-RC=\$?; curl -sS --max-time 5 http://127.0.0.1:$RP/; echo REFUSED-RC=\$?; curl -sS --max-time 5 -o /dev/null -w \"proxied:%{http_code}\n\" --noproxy \"\" -x \"\$http_proxy\" http://127.0.0.1:$HP/hello.txt; $RUN_AGENT"
write_exp "$TMP/p/exp.yaml" host-ports "$AGENT" "true" "egress:
  host_ports: [$HP, $RP]"
commit "$TMP/p"
cd "$TMP"
rc=0
"$FAULTLINE" run p/exp.yaml --out "$TMP/out/report.json" >run.out 2>run.err || rc=$?
echo "$rc" >run.rc
export HP OP RP

test_expect "the run is scored" '
    test "$(cat run.rc)" = 0 || { cat run.err; exit 1; }
'

test_expect "a named host port is reached from the sandbox at 127.0.0.1:PORT, in both repetitions, one event each" '
    for r in rep-000 rep-001; do
        o=out/report/$r/agent.out
        e=out/report/$r/events.jsonl
        grep -qx "hello from the host.s dev server" $o || { cat $o; cat out/report/$r/agent.err; exit 1; }
        grep -qx "NAMED-RC=0" $o
        jq -se "[.[] | select(.kind == \"egress_request\" and .mode == \"host_port\" and .port == $HP)] | length == 1 and all(.method == \"TCP\" and .host == \"127.0.0.1\" and .status == 200 and .bytes_in > 100 and .bytes_out > 50 and (.duration_ms | type) == \"number\" and (has(\"error\") | not))" $e
    done
    test "$(grep -c "GET /hello.txt" www.log)" = 2
'

test_expect "a host port not named is unreachable: nothing listens inside, nothing reaches the host server" '
    for r in rep-000 rep-001; do
        o=out/report/$r/agent.out
        e=out/report/$r/events.jsonl
        grep -qx "OTHER-RC=7" $o || { cat $o; exit 1; }
        grep -q "Failed to connect to 127.0.0.1 port $OP" out/report/$r/agent.err
        jq -se "any(.[]; .kind == \"egress_request\" and .port == $OP) | not" $e
        jq -se "any(.[]; .kind == \"warning\" and .code == \"egress_uncovered\")" $e
    done
    if grep -q "GET" other.log; then echo "the unnamed server was reached"; cat other.log; exit 1; fi
'

test_expect "a named port nothing listens on: the connection is reset, recorded connect refused" '
    for r in rep-000 rep-001; do
        o=out/report/$r/agent.out
        e=out/report/$r/events.jsonl
        grep -Eqx "REFUSED-RC=(7|52|56)" $o || { cat $o; exit 1; }
        jq -se "[.[] | select(.kind == \"egress_request\" and .port == $RP)] | length == 1 and all(.mode == \"host_port\" and .status == 502 and .error == \"connect refused\")" $e
    done
'

test_expect "the forward proxy still refuses loopback, a named host port included" '
    for r in rep-000 rep-001; do
        grep -qx "proxied:403" out/report/$r/agent.out || { cat out/report/$r/agent.out; exit 1; }
        jq -se "any(.[]; .kind == \"egress_request\" and .method == \"GET\" and .port == $HP and .status == 403 and (has(\"mode\") | not))" out/report/$r/events.jsonl
    done
'

test_done
