#!/usr/bin/env bash
# `faultline run` puts the egress proxy in front of the sandbox (docs/egress.md): the agent's
# environment names it (HTTP_PROXY / HTTPS_PROXY in both cases, NO_PROXY with loopback,
# NODE_USE_ENV_PROXY=1), its listener lives inside the sandbox's network namespace, and the
# run's --resolve reaches the controller. curl inside the sandbox reaches a local registry
# stand-in through it, and egress.dns_fail makes a matched host answer 502 with the canary.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

mkdir -p "$TMP/www"
echo '{"name":"left-pad","version":"1.3.0"}' >"$TMP/www/left-pad.json"
HP=$(free_port)
start_bg python3 -m http.server --bind 127.0.0.1 --directory "$TMP/www" "$HP" 2>"$TMP/www.log"
wait_for 10 curl -sS -o /dev/null "http://127.0.0.1:$HP/left-pad.json" || echo "the registry stand-in did not start"

make_project "$TMP/p"
AGENT="env | grep -i -E '^(https?_proxy|no_proxy|node_use_env_proxy)=' | sort; curl -sS --max-time 10 http://registry.test:$HP/left-pad.json; echo; curl -sS --max-time 10 -D - http://pkg.blocked.test/left-pad; echo; $RUN_AGENT"
write_exp "$TMP/p/exp.yaml" egress "$AGENT" "true"
set_faults "$TMP/p/exp.yaml" '  - id: egress.dns_fail
    match: {host: "*.blocked.test"}'
commit "$TMP/p"
cd "$TMP"
rc=0
"$FAULTLINE" run p/exp.yaml --out "$TMP/out/report.json" --resolve "registry.test:$HP:127.0.0.1" >run.out 2>run.err || rc=$?
echo "$rc" >run.rc
export HP

test_expect "the run is scored" '
    test "$(cat run.rc)" = 0 || { cat run.err; exit 1; }
'

test_expect "the agent's environment names the egress proxy inside the sandbox" '
    o=out/report/rep-001/agent.out
    cat $o
    grep -Eq "^HTTP_PROXY=http://127\.0\.0\.1:[0-9]+$" $o
    grep -Eq "^https_proxy=http://127\.0\.0\.1:[0-9]+$" $o
    grep -q "^NO_PROXY=localhost,127.0.0.1,::1$" $o
    grep -q "^NODE_USE_ENV_PROXY=1$" $o
    test "$(grep -Ei "^https?_proxy=" $o | cut -d= -f2 | sort -u | wc -l)" = 1
'

test_expect "curl in the sandbox reaches the --resolve host through the proxy, in both repetitions" '
    for r in rep-000 rep-001; do
        grep -q "\"name\":\"left-pad\"" out/report/$r/agent.out
        jq -se "any(.[]; .kind == \"egress_request\" and .host == \"registry.test\" and .status == 200 and .port == $HP)" out/report/$r/events.jsonl
    done
'

test_expect "egress.dns_fail in the faulted repetition: 502 with the canary, fault_injected, a faulted egress_request" '
    c=$(jq -r .canary out/report/rep-001/plan.json)
    grep -q "502 .*$c" out/report/rep-001/agent.out
    e=out/report/rep-001/events.jsonl
    jq -se "map(select(.kind == \"fault_injected\")) | length == 1 and .[0].fault == \"egress.dns_fail\" and .[0].target == \"pkg.blocked.test\" and .[0].component == \"controller-egress\"" $e
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"pkg.blocked.test\" and .faulted == true and .status == 502)" $e
    jq -se "any(.[]; .kind == \"plan_loaded\" and .component == \"controller-egress\" and .sandbox == \"netns\")" $e
'

test_expect "the baseline has no fault: the unresolvable host is a plain dns failure, no canary" '
    e=out/report/rep-000/events.jsonl
    jq -se "any(.[]; .kind == \"fault_injected\") | not" $e
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"pkg.blocked.test\" and .status == 502 and (.faulted // false) == false)" $e
'

test_done
