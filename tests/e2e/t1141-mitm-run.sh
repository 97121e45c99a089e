#!/usr/bin/env bash
# egress.credential_401 through `faultline run`: inside the sandbox the run's CA is trusted
# with nothing but what the runner gives the agent (the bundle bound over
# /etc/ssl/certs/ca-certificates.crt, SSL_CERT_FILE and the other five variables naming it),
# and curl, node fetch (undici) and Python urllib each make three requests to their own host
# of a code-hosting API stand-in (a local HTTPS server with its own test CA, trusted by the
# controller through the run's --upstream-ca). In the faulted repetition each host's fault has
# after_calls 2: two requests forwarded, the third answered 401 with the canary (GitHub's
# JSON for api.github.com, a plain body for the others). The baseline has no fault: every
# request passes, through blind tunnels.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
. "$FAULTLINE_ROOT/tests/e2e/mitm/lib-mitm.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

command -v curl >/dev/null || { echo "curl missing"; exit 1; }
mitm_test_ca "$TMP/pki"
mitm_start_api "$TMP/pki"

make_project "$TMP/p"
cp "$TMP/pki/test-ca.pem" "$MITM_HELPERS/fetch3.js" "$MITM_HELPERS/get3.py" "$TMP/p/"
cat >"$TMP/p/agent.sh" <<SH
set -u
P=$API_PORT
env | grep -E '^(SSL_CERT_FILE|NODE_EXTRA_CA_CERTS|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|GIT_SSL_CAINFO|CODEX_CA_CERTIFICATE)=' | sort
echo "== bare"
# nothing but the sandbox's own trust: the run's CA
curl -sS --max-time 10 -w ' %{http_code}\n' https://bare.example.test:\$P/user 2>&1
# the stand-in's test CA stands in for the public CA of the real hosts (blind tunnels)
cat "\$SSL_CERT_FILE" test-ca.pem >/tmp/trust.pem
export SSL_CERT_FILE=/tmp/trust.pem NODE_EXTRA_CA_CERTS=/tmp/trust.pem CURL_CA_BUNDLE=/tmp/trust.pem
echo "== curl"
curl -sS --max-time 10 -w ' %{http_code}\n' -H "Authorization: token s3cret" https://api.github.com:\$P/user https://api.github.com:\$P/repos/o/r https://api.github.com:\$P/user/repos 2>&1
echo "== node"
node --no-warnings fetch3.js https://code.example.test:\$P/a https://code.example.test:\$P/b https://code.example.test:\$P/c 2>&1
echo "== python"
python3 get3.py https://git.example.test:\$P/a https://git.example.test:\$P/b https://git.example.test:\$P/c 2>&1
echo "== end"
SH
write_exp "$TMP/p/exp.yaml" mitm "sh agent.sh; $RUN_AGENT" "true"
python3 - "$TMP/p/exp.yaml" <<'PY'
import sys
p = sys.argv[1]
f = "".join("  - id: egress.credential_401\n    match: {host: %s}\n    after_calls: %d\n" % (h, n)
            for h, n in (("api.github.com", 2), ("code.example.test", 2), ("git.example.test", 2),
                         ("bare.example.test", 0)))
s = open(p).read().replace("faults:\n  - id: llm.rate_limit\n    times: 1\n    retry_after_s: 0\n",
                           "faults:\n" + f)
open(p, "w").write(s)
PY
commit "$TMP/p"
cd "$TMP"
rc=0
res=()
for h in api.github.com code.example.test git.example.test bare.example.test; do
    res+=(--resolve "$h:$API_PORT:127.0.0.1")
done
timeout 120 "$FAULTLINE" run p/exp.yaml --out "$TMP/out/report.json" "${res[@]}" \
    --upstream-ca "$TMP/pki/test-ca.pem" >run.out 2>run.err || rc=$?
echo "$rc" >run.rc
export API_PORT

# section REP NAME: the agent's output lines of one client
section() { sed -n "/^== $2\$/,/^== /p" "out/report/$1/agent.out" | sed "1d;\$d"; }
export -f section

test_expect "the run is scored" '
    test "$(cat run.rc)" = 0 || { cat run.err; exit 1; }
'

test_expect "the agent is given the bundle under all six names; it holds the run's CA" '
    o=out/report/rep-001/agent.out
    for v in SSL_CERT_FILE NODE_EXTRA_CA_CERTS REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO CODEX_CA_CERTIFICATE; do
        grep -qx "$v=/etc/ssl/certs/ca-certificates.crt" $o
    done
    for r in rep-000 rep-001; do
        test -s out/report/$r/ca.pem
        test -s out/report/$r/ca-bundle.pem
        refute grep -rq "PRIVATE KEY" out/report/$r
    done
    refute cmp -s out/report/rep-000/ca.pem out/report/rep-001/ca.pem # a CA per repetition
'

test_expect "faulted: with the sandbox's own trust alone, curl is intercepted (401, not a certificate error)" '
    section rep-001 bare
    section rep-001 bare | grep -q " 401$"
    section rep-001 bare | grep -q "E-FAULTLINE-"
'

test_expect "faulted: curl, node fetch and Python urllib: 200, 200, then 401 with the canary, each on its host" '
    c=$(jq -r .canary out/report/rep-001/plan.json)
    section rep-001 curl
    section rep-001 node
    section rep-001 python
    test "$(section rep-001 curl | grep -c "octocat.* 200$")" = 2
    section rep-001 curl | sed -n 3p | grep -q "^{\"message\":\"Bad credentials (.*$c.*documentation_url.* 401$"
    test "$(section rep-001 node | grep -c "^200 .*octocat")" = 2
    section rep-001 node | sed -n 3p | grep -q "^401 401 Unauthorized: .*$c"
    test "$(section rep-001 python | grep -c "^200 .*octocat")" = 2
    section rep-001 python | sed -n 3p | grep -q "^401 401 Unauthorized: .*$c"
'

test_expect "faulted: the events: nine intercepted requests and four fault_injected, the counts per host" '
    e=out/report/rep-001/events.jsonl
    for h in api.github.com code.example.test git.example.test; do
        jq -se "[.[] | select(.kind == \"egress_request\" and .host == \"$h\")] | length == 3 and all(.intercepted == true and .port == $API_PORT) and map(.status) == [200, 200, 401]" $e
        jq -se "[.[] | select(.kind == \"fault_injected\" and .target == \"$h\")] | length == 1 and .[0].call_index == 2 and .[0].fault == \"egress.credential_401\" and .[0].component == \"controller-egress\"" $e
    done
    jq -se "[.[] | select(.kind == \"fault_injected\")] | length == 4" $e
    refute grep -q s3cret $e
'

test_expect "baseline: no fault, every request passes through a blind tunnel" '
    e=out/report/rep-000/events.jsonl
    for n in curl node python; do section rep-000 $n; test "$(section rep-000 $n | grep -c octocat)" = 3; done
    jq -se "any(.[]; .kind == \"fault_injected\") | not" $e
    jq -se "[.[] | select(.kind == \"egress_request\" and .method == \"CONNECT\" and .intercepted == false)] | length >= 3" $e
    # nothing intercepted: with the sandbox trust alone the stand-in is a stranger (its test CA)
    section rep-000 bare | grep -q "SSL certificate problem"
'

test_done
