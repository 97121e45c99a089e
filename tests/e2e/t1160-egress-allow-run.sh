#!/usr/bin/env bash
# The experiment's `egress: {allow: [HOSTS]}` (docs/egress.md, docs/experiment-format.md):
# `faultline run` passes it to the controller (--egress-allow), the egress proxy lets curl in
# the sandbox reach an allowed host (an exact name and a `*.` suffix) and refuses any other one
# with 403, plain HTTP and CONNECT alike, recording `policy: "egress.allow"`; the run's score
# shows no_policy_hits failing in the repetition whose agent reached a host off the list, and
# passing in the one that did not. Bad patterns are refused FILE:LINE:COL.
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
ALLOWED="curl -sS --max-time 10 -o /dev/null -w \"allowed:%{http_code}\n\" http://registry.test:$HP/left-pad.json; curl -sS --max-time 10 -o /dev/null -w \"suffix:%{http_code}\n\" http://api.mirror.test:$HP/left-pad.json"
OTHER="curl -sS --max-time 10 -D - http://other.test:$HP/left-pad.json; echo; curl -sS --max-time 10 -o /dev/null -w \"connect:%{http_connect}\n\" -p http://other.test:$HP/ 2>&1"
LIST='egress:
  allow: [registry.test, "*.mirror.test"]'
# exp NAME AGENT EXTRA: an experiment with no_policy_hits among its probes
exp() {
    write_exp "$TMP/p/$1.yaml" "$1" "$2; $RUN_AGENT" "true" "$3"
    sed -i 's/^  - {id: task_success, weight: 1}$/  - {id: task_success, weight: 1}\n  - {id: no_policy_hits, weight: 1}/' "$TMP/p/$1.yaml"
}
exp leaves "$ALLOWED; $OTHER" "$LIST"
exp stays "$ALLOWED" "$LIST"
exp open "$ALLOWED; $OTHER" ""
commit "$TMP/p"
cd "$TMP"
RES=(--resolve "registry.test:$HP:127.0.0.1" --resolve "api.mirror.test:$HP:127.0.0.1" --resolve "other.test:$HP:127.0.0.1")
for x in leaves stays open; do
    rc=0
    "$FAULTLINE" run p/$x.yaml --out "$TMP/$x/report.json" "${RES[@]}" >$x.out 2>$x.err || rc=$?
    echo "$rc" >$x.rc
done
export HP

test_expect "the three runs are scored" '
    for x in leaves stays open; do
        test "$(cat $x.rc)" = 0 || { cat $x.err; exit 1; }
    done
'

test_expect "allowed hosts (exact and by suffix) are reached through the proxy, in both repetitions" '
    for x in leaves stays; do
        for r in rep-000 rep-001; do
            o=$x/report/$r/agent.out
            e=$x/report/$r/events.jsonl
            grep -q "^allowed:200$" $o || { cat $o; exit 1; }
            grep -q "^suffix:200$" $o
            jq -se "any(.[]; .kind == \"egress_request\" and .host == \"registry.test\" and .status == 200 and (has(\"policy\") | not))" $e
            jq -se "any(.[]; .kind == \"egress_request\" and .host == \"api.mirror.test\" and .status == 200)" $e
            jq -se "any(.[]; .kind == \"plan_loaded\" and .component == \"controller-egress\" and .egress_allow == 2)" $e
        done
    done
'

test_expect "a host off the list: 403 with the reason, plain HTTP and CONNECT, a policy event each" '
    for r in rep-000 rep-001; do
        o=leaves/report/$r/agent.out
        e=leaves/report/$r/events.jsonl
        grep -q "^HTTP/1.1 403 Forbidden" $o || { cat $o; exit 1; }
        grep -q "host not on the experiment.s egress allow list" $o
        grep -q "^connect:403$" $o
        jq -se "[.[] | select(.kind == \"egress_request\" and .host == \"other.test\")] | length == 2 and all(.status == 403 and .policy == \"egress.allow\") and (map(.method) | sort) == [\"CONNECT\", \"GET\"]" $e
        if grep -q "left-pad\"" $o; then echo "a refused request reached the server"; exit 1; fi
    done
    if grep -q "other.test" www.log; then echo "the stand-in saw other.test"; exit 1; fi
'

test_expect "no_policy_hits (scored on the faulted repetition) fails on the refusal, passes when the agent kept to the list" '
    jq -e ".result.repetitions[1].probes[] | select(.id == \"no_policy_hits\") | .result == \"fail\" and .evidence.kind == \"egress_request\"" leaves/report.json
    jq -e ".result.repetitions[1].probes[] | select(.id == \"no_policy_hits\") | .result == \"pass\"" stays/report.json
'

test_expect "without egress.allow every host is allowed and no_policy_hits is not evaluated (no gate)" '
    o=open/report/rep-001/agent.out
    grep -q "^connect:200$" $o || { cat $o; exit 1; }
    e=open/report/rep-001/events.jsonl
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"other.test\" and .method == \"GET\" and .status == 200)" $e
    jq -se "any(.[]; .kind == \"plan_loaded\" and .component == \"controller-egress\" and has(\"egress_allow\")) | not" $e
    jq -e ".result.repetitions[1].probes[] | select(.id == \"no_policy_hits\") | .result == \"not_evaluated\"" open/report.json
'

test_expect "bad allow entries are refused with FILE:LINE:COL" '
    cp p/open.yaml bad1.yaml
    printf "%s\n" "egress:" "  allow: [\"bad host\"]" >>bad1.yaml
    if "$FAULTLINE" validate bad1.yaml >v1.out 2>&1; then cat v1.out; exit 1; fi
    cat v1.out
    grep -Eq "bad1.yaml:[0-9]+:[0-9]+: .*egress.allow\[0\]" v1.out
    cp p/open.yaml bad2.yaml
    printf "%s\n" "egress:" "  allow: []" "  deny: [x]" >>bad2.yaml
    if "$FAULTLINE" validate bad2.yaml >v2.out 2>&1; then cat v2.out; exit 1; fi
    cat v2.out
    grep -Eq "bad2.yaml:[0-9]+:[0-9]+: .*egress.allow" v2.out
    grep -Eq "bad2.yaml:[0-9]+:[0-9]+: .*deny" v2.out
'

test_expect "faultline proxy refuses a bad --egress-allow as a usage error" '
    rc=0
    "$FAULTLINE" proxy --plan x --events y --egress-allow "a b" >p.out 2>&1 || rc=$?
    cat p.out
    test "$rc" = 64
    grep -q "egress allow" p.out
'

test_done
