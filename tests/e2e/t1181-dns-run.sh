#!/usr/bin/env bash
# `faultline run` makes the controller's DNS stub the sandbox's resolver (docs/sandbox.md,
# docs/egress.md): /etc/resolv.conf inside says `nameserver 127.0.0.1`, names resolve to the
# stub's loopback address, each query is a dns_query event, and under egress.dns_fail a matched
# name does not resolve (getent fails) in the faulted repetition only. A connection to a raw IP
# and one to a closed loopback port fail as they always did, and the run warns about them.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

make_project "$TMP/p"
AGENT="cat /etc/resolv.conf; echo RES=\$(getent ahostsv4 registry.test | head -n 1); if getent hosts pkg.blocked.test; then echo BLOCKED-RESOLVES; else echo BLOCKED-FAILS; fi; curl -sS --max-time 3 --noproxy \"*\" http://93.184.216.34/; curl -sS --max-time 3 --noproxy \"*\" http://127.0.0.1:9/; $RUN_AGENT"
write_exp "$TMP/p/exp.yaml" dnsrun "$AGENT" "true"
set_faults "$TMP/p/exp.yaml" '  - id: egress.dns_fail
    match: {host: "*.blocked.test"}'
commit "$TMP/p"
cd "$TMP"
rc=0
"$FAULTLINE" run p/exp.yaml --out "$TMP/out/report.json" >run.out 2>run.err || rc=$?
echo "$rc" >run.rc

test_expect "the run is scored" '
    test "$(cat run.rc)" = 0 || { cat run.err; exit 1; }
'

test_expect "the sandbox resolves with the stub: resolv.conf names 127.0.0.1, names answer 127.0.0.1" '
    for r in rep-000 rep-001; do
        o=out/report/$r/agent.out
        cat $o
        grep -qx "nameserver 127.0.0.1" $o
        grep -q "^RES=127\.0\.0\.1 " $o
        jq -se "any(.[]; .kind == \"dns_query\" and .name == \"registry.test\" and .answer == \"address\")" out/report/$r/events.jsonl
    done
'

test_expect "egress.dns_fail: the matched name does not resolve in the faulted repetition, with its events" '
    grep -qx BLOCKED-FAILS out/report/rep-001/agent.out
    e=out/report/rep-001/events.jsonl
    jq -se "any(.[]; .kind == \"dns_query\" and .name == \"pkg.blocked.test\" and .answer == \"nxdomain\" and .faulted == true)" $e
    jq -se "any(.[]; .kind == \"fault_injected\" and .fault == \"egress.dns_fail\" and .target == \"pkg.blocked.test\" and .detail.via == \"dns\")" $e
'

test_expect "the baseline: the same name resolves, no fault" '
    grep -qx BLOCKED-RESOLVES out/report/rep-000/agent.out
    jq -se "any(.[]; .kind == \"fault_injected\") | not" out/report/rep-000/events.jsonl
'

test_expect "a raw IP and a closed loopback port: the run warns the agent left by a way not covered" '
    for r in rep-000 rep-001; do
        grep -q "Failed to connect to 93.184.216.34" out/report/$r/agent.err
        jq -se "map(select(.kind == \"warning\" and .code == \"egress_uncovered\")) | length == 1 and (.[0].message | test(\"1 packet.* no route .* 1 connection.* refused\"))" out/report/$r/events.jsonl
    done
    grep -q "warning: something in the sandbox tried to leave" run.err
'

test_done
