#!/usr/bin/env bash
# Transparent mode inside `faultline run` (docs/egress.md): curl with the proxy variables
# ignored (--noproxy '*') resolves a name through the sandbox's DNS stub, connects to the
# sandbox's 127.0.0.1:80, and the controller routes it by its Host field to the --resolve'd
# local stand-in: the body arrives and the request is an egress_request with `mode:
# transparent`. Under egress.dns_fail curl reports it cannot resolve the matched host. The
# stand-in must listen on port 80 of the host's loopback, so the test runs in a network
# namespace of its own (unshare -n), which needs root.
if [ "$(id -u)" != 0 ]; then
    echo "t1183 needs root for a network namespace of its own (unshare -n)"; exit 1
fi
if [ -z "${T1183_IN_NS:-}" ]; then
    exec unshare -n env T1183_IN_NS=1 bash "$0" "$@"
fi
ip link set lo up
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

mkdir -p "$TMP/www"
echo '{"name":"left-pad","version":"1.3.0"}' >"$TMP/www/left-pad.json"
start_bg python3 -m http.server --bind 127.0.0.1 --directory "$TMP/www" 80 2>"$TMP/www.log"
wait_for 10 curl -sS -o /dev/null "http://127.0.0.1/left-pad.json" || echo "the registry stand-in did not start"

make_project "$TMP/p"
AGENT="curl -sS --max-time 10 --noproxy \"*\" http://registry.test/left-pad.json; echo; curl -sS --max-time 3 --noproxy \"*\" http://pkg.blocked.test/x; echo CURL-RC=\$?; $RUN_AGENT"
write_exp "$TMP/p/exp.yaml" transparent "$AGENT" "true"
set_faults "$TMP/p/exp.yaml" '  - id: egress.dns_fail
    match: {host: "*.blocked.test"}'
commit "$TMP/p"
cd "$TMP"
rc=0
"$FAULTLINE" run p/exp.yaml --out "$TMP/out/report.json" --resolve "registry.test:80:127.0.0.1" >run.out 2>run.err || rc=$?
echo "$rc" >run.rc

test_expect "the run is scored" '
    test "$(cat run.rc)" = 0 || { cat run.err; exit 1; }
'

test_expect "curl without the proxy reaches the stand-in by name through the stub and :80, recorded" '
    for r in rep-000 rep-001; do
        o=out/report/$r/agent.out
        cat $o
        grep -q "\"name\":\"left-pad\"" $o
        jq -se "any(.[]; .kind == \"egress_request\" and .host == \"registry.test\" and .mode == \"transparent\" and .status == 200 and .path == \"/left-pad.json\")" out/report/$r/events.jsonl
        jq -se "any(.[]; .kind == \"dns_query\" and .name == \"registry.test\" and .answer == \"address\")" out/report/$r/events.jsonl
    done
    grep -q "GET /left-pad.json" www.log
    jq -se "any(.[]; .kind == \"warning\" and .code == \"egress_uncovered\") | not" out/report/rep-000/events.jsonl
'

test_expect "egress.dns_fail: curl reports it cannot resolve the host (exit 6), in the faulted repetition" '
    grep -q "Could not resolve host: pkg.blocked.test" out/report/rep-001/agent.err
    grep -qx "CURL-RC=6" out/report/rep-001/agent.out
    jq -se "any(.[]; .kind == \"fault_injected\" and .target == \"pkg.blocked.test\" and .detail.via == \"dns\")" out/report/rep-001/events.jsonl
'

test_expect "the baseline: the same host resolves through the stub, no fault" '
    jq -se "any(.[]; .kind == \"dns_query\" and .name == \"pkg.blocked.test\" and .answer == \"address\")" out/report/rep-000/events.jsonl
    jq -se "any(.[]; .kind == \"fault_injected\") | not" out/report/rep-000/events.jsonl
    if grep -q "Could not resolve host" out/report/rep-000/agent.err; then exit 1; fi
'

test_done
