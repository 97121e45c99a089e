#!/usr/bin/env bash
# egress.credential_401 through `faultline proxy` on loopback: curl, node fetch (undici) and
# Python urllib each make three HTTPS requests to a code-hosting API stand-in (a local HTTPS
# server with its own test CA, reached as api.github.com through --resolve, trusted by the
# controller through --upstream-ca). Under credential_401 with after_calls 2 the first two
# pass through the interception to the stand-in and the third gets GitHub's 401 with the
# canary; curl sends its three on one connection, so the count is of requests, not
# connections. With no fault the same requests pass (a blind tunnel). The clients trust the
# run's CA through the bundle the controller wrote (ca-bundle.pem: the system's CAs + it).
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"
. "$FAULTLINE_ROOT/tests/e2e/mitm/lib-mitm.sh"

command -v curl >/dev/null || { echo "curl missing"; exit 1; }
mitm_test_ca "$TMP/pki"
mitm_start_api "$TMP/pki"
start_upstream

# run_client NAME PLAN_FAULTS: a fresh controller with that plan, then client NAME's three
# requests through its egress proxy; the client's lines in NAME.out, the events in NAME.jsonl.
run_client() {
    local name=$1 faults=$2 base="https://api.github.com:$API_PORT"
    write_plan "$TMP/plan-$name.json" "$faults"
    rm -rf "$TMP/ca-$name" "$TMP/egress"
    mkdir -p "$TMP/ca-$name"
    EVENTS_SAVE="$TMP/$name.jsonl"
    start_proxy "$TMP/plan-$name.json" --egress-listen 127.0.0.1:0 --egress-ready-file "$TMP/egress" \
        --ca-dir "$TMP/ca-$name" --upstream-ca "$TMP/pki/test-ca.pem" \
        --resolve "api.github.com:$API_PORT:127.0.0.1"
    wait_file 10 "$TMP/egress" || { echo "no egress address"; return 1; }
    local eg bundle="$TMP/$name-trust.pem"
    eg="http://$(cat "$TMP/egress")"
    # what the client trusts: the controller's bundle (the system's CAs + the run's CA) and,
    # standing in for the public CA of the real host, the stand-in's test CA
    cat "$TMP/ca-$name/ca-bundle.pem" "$TMP/pki/test-ca.pem" >"$bundle"
    : >"$API_LOG"
    case $name in
    curl*)
        # one invocation, one connection, three requests
        HTTPS_PROXY=$eg CURL_CA_BUNDLE=$bundle timeout 20 curl -sS --max-time 10 \
            -H "Authorization: token s3cret" -w ' %{http_code} %{num_connects}\n' \
            "$base/user" "$base/repos/o/r" "$base/user/repos" >"$TMP/$name.out" 2>&1 || true ;;
    node*)
        HTTPS_PROXY=$eg NODE_EXTRA_CA_CERTS=$bundle timeout 20 node --no-warnings "$MITM_HELPERS/fetch3.js" \
            "$base/user" "$base/repos/o/r" "$base/user/repos" >"$TMP/$name.out" 2>&1 || true ;;
    python*)
        https_proxy=$eg SSL_CERT_FILE=$bundle timeout 20 python3 "$MITM_HELPERS/get3.py" \
            "$base/user" "$base/repos/o/r" "$base/user/repos" >"$TMP/$name.out" 2>&1 || true ;;
    esac
    cp "$API_LOG" "$TMP/$name.api"
    stop_proxy
    cp "$EVENTS" "$TMP/$name.jsonl"
    rm -f "$EVENTS"
}

F401='[{"kind":"egress.credential_401","safety":"fail-safe","injectors":["controller-egress"],"match":{"host":"api.github.com"},"after_calls":2}]'
for c in curl node python; do
    run_client "$c" "$F401"
    run_client "$c-nofault" '[]'
done
export TMP

# check_401 NAME: two answers from the stand-in, then GitHub's 401 with the canary; the events.
check_401() {
    local n=$1 o="$TMP/$1.out" e="$TMP/$1.jsonl"
    cat "$o"
    test "$(grep -c octocat "$o")" = 2
    test "$(grep -c "\"authorized\": true" "$o")" = 2 # the client's credential reached the origin
    grep -q "Bad credentials" "$o"
    grep -q "E-FAULTLINE-0123abcd" "$o"
    grep -q "documentation_url" "$o"
    test "$(cat "$TMP/$n.api")" = "$(printf "GET /user\nGET /repos/o/r")"
    jq -se "[.[] | select(.kind == \"egress_request\")] | length == 3 and all(.intercepted == true and .host == \"api.github.com\" and .port == $API_PORT and .method == \"GET\") and map(.status) == [200, 200, 401] and map(.path) == [\"/user\", \"/repos/o/r\", \"/user/repos\"] and .[2].faulted == true" "$e"
    jq -se "[.[] | select(.kind == \"fault_injected\")] | length == 1 and .[0].fault == \"egress.credential_401\" and .[0].target == \"api.github.com\" and .[0].canary == \"E-FAULTLINE-0123abcd\" and .[0].call_index == 2 and .[0].component == \"controller-egress\" and .[0].detail.status == 401" "$e"
    refute grep -q s3cret "$e"
}
export -f check_401

test_expect "curl: one connection, three requests: 200, 200, then 401 with the canary" '
    check_401 curl
    grep -q "\"path\": \"/user\", \"authorized\": true} 200 1$" "$TMP/curl.out"
    test "$(grep -c " 0$" "$TMP/curl.out")" = 2 # the second and third reused the connection
    grep -q "} 401 0$" "$TMP/curl.out"
'

test_expect "node fetch (undici, EnvHttpProxyAgent, NODE_EXTRA_CA_CERTS): 200, 200, then 401" '
    check_401 node
    test "$(sed -n 3p "$TMP/node.out" | cut -d" " -f1)" = 401
'

test_expect "Python urllib (https_proxy, SSL_CERT_FILE): three connections, 200, 200, then 401" '
    check_401 python
    test "$(sed -n 3p "$TMP/python.out" | cut -d" " -f1)" = 401
'

test_expect "no fault: every request passes, through a blind tunnel, no fault_injected" '
    for n in curl-nofault node-nofault python-nofault; do
        cat "$TMP/$n.out"
        test "$(grep -c octocat "$TMP/$n.out")" = 3
        test "$(wc -l <"$TMP/$n.api")" = 3
        jq -se "any(.[]; .kind == \"fault_injected\") | not" "$TMP/$n.jsonl"
        jq -se "any(.[]; .kind == \"egress_request\" and .method == \"CONNECT\" and .host == \"api.github.com\" and .intercepted == false)" "$TMP/$n.jsonl"
        refute grep -q s3cret "$TMP/$n.jsonl"
    done
'

test_expect "the run folder keeps the CA certificate and the bundle, never a key" '
    d=$TMP/ca-curl
    openssl x509 -in $d/ca.pem -noout -subject | grep -q "faultline run CA"
    tail -n +1 $d/ca-bundle.pem | grep -q "BEGIN CERTIFICATE"
    test "$(openssl x509 -in $d/ca.pem -outform der | sha256sum)" = "$(awk "/BEGIN/{c=\"\"} {c=c \$0 \"\n\"} END{printf \"%s\", c}" $d/ca-bundle.pem | openssl x509 -outform der | sha256sum)"
    refute grep -rq "PRIVATE KEY" $d
'

test_done
