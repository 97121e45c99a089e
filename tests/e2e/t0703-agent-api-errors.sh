#!/usr/bin/env bash
# t0703-agent-api-errors: the model API failing: connection refused (clear error, exit 1,
# bounded time, bounded retries), an error status whose message (with its canary) must
# reach stdout, retried for 529 and not for 400, retry-after honoured, a stream cut
# mid-way, a hung server (read timeout), a non-JSON body, a body over --max-response.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/agent/common.sh"

start_mock M "$AGENT_DIR/errors.yaml"
# a port nobody listens on: bind it, note it, release it
DEAD=$(free_port)
export DEAD

# start_fake MODE: the misbehaving server of fake_model.py; exports FAKE_URL and FAKE_LOG.
start_fake() {
    start_bg "$PYTHON" "$AGENT_DIR/fake_model.py" "$TMP/fake-$1.port" "$1" "$TMP/fake-$1.log"
    wait_file 10 "$TMP/fake-$1.port" || { echo "fake model did not start"; return 1; }
    export FAKE_URL="http://127.0.0.1:$(cat "$TMP/fake-$1.port")" FAKE_LOG="$TMP/fake-$1.log"
}

for api in anthropic openai responses; do
    test_expect "$api: connection refused: a clear error, exit 1, in bounded time" "
        start=\$(date +%s%N)
        set +e; agent $api http://127.0.0.1:\$DEAD --retries 0 --prompt hi >out 2>err; rc=\$?; set -e
        end=\$(date +%s%N)
        cat out
        test \$rc = 1
        grep -qx '\[error\] model API: cannot connect to 127.0.0.1:'\$DEAD': Connection refused' out
        test \$(( (end - start) / 1000000 )) -lt 5000
    "
done

test_expect "connection refused with the default 2 retries: 3 attempts, backing off, < 5 s" '
    start=$(date +%s%N)
    set +e; agent anthropic http://127.0.0.1:$DEAD --prompt hi >out 2>err; rc=$?; set -e
    end=$(date +%s%N)
    test $rc = 1
    test $(grep -c "^\[retry\] model API: cannot connect" out) = 2
    grep -q "(retry 2 of 2 in 1.0 s)" out
    test $(( (end - start) / 1000000 )) -ge 1400
    test $(( (end - start) / 1000000 )) -lt 5000
'

for api in anthropic openai responses; do
    test_expect "$api: a 529 is retried twice, then its message (with the canary) is printed" "
        before=\$(requests \"\$M_REC\")
        set +e; agent $api \"\$M_URL\" --retry-max-wait 0.1 --prompt 'please fail-529' >out 2>err; rc=\$?; set -e
        cat out
        test \$rc = 1
        test \$(grep -c '^\[retry\] model API: HTTP 529 .*overloaded for the test E-FAULTLINE-0badc0de' out) = 2
        grep -q '^\[error\] model API: HTTP 529 .*: overloaded for the test E-FAULTLINE-0badc0de\$' out
        test \$(( \$(requests \"\$M_REC\") - before )) = 3
    "
    test_expect "$api: a 400 is not retried and its message is printed" "
        before=\$(requests \"\$M_REC\")
        set +e; agent $api \"\$M_URL\" --prompt 'please fail-400' >out 2>err; rc=\$?; set -e
        test \$rc = 1
        grep -q '^\[error\] model API: HTTP 400 invalid_request_error: your request is bad E-FAULTLINE-0badf00d\$' out
        refute grep -q '^\[retry\]' out
        test \$(( \$(requests \"\$M_REC\") - before )) = 1
    "
done

start_fake retry-after
test_expect "retry-after is honoured, then the answer comes; the key is sent as x-api-key" '
    ANTHROPIC_API_KEY=sk-test-123 agent anthropic "$FAKE_URL" --prompt hi >out 2>err
    cat out
    grep -q "^\[retry\] model API: HTTP 429 rate_limit_error: slow down, retry in 1 s E-FAULTLINE-aaaa0001 (retry 1 of 2 in 1.0 s)" out
    test "$(tail -n 1 out)" = "recovered after the rate limit"
    "$PYTHON" - "$FAKE_LOG" <<PY
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 2, rows
assert rows[1]["t"] - rows[0]["t"] >= 0.95, rows
assert all(r["x_api_key"] == "sk-test-123" and r["anthropic_version"] == "2023-06-01" for r in rows), rows
assert all(r["path"] == "/v1/messages" for r in rows), rows
PY
    refute grep -q sk-test-123 out err
'

start_fake cut
test_expect "a stream cut mid-way is an error (not retried), after the text that came" '
    set +e; agent anthropic "$FAKE_URL" --prompt hi >out 2>err; rc=$?; set -e
    cat out
    test $rc = 1
    grep -q "^partial answer$" out
    grep -q "^\[error\] model API: HTTP 200 stream_incomplete (in the response stream): the event stream broke" out
    test $(wc -l <"$FAKE_LOG") = 1
'

start_fake hang
test_expect "a server that never answers: the read timeout ends the call" '
    start=$(date +%s%N)
    set +e; agent anthropic "$FAKE_URL" --read-timeout 1 --retries 1 --retry-max-wait 0.1 --prompt hi >out 2>err; rc=$?; set -e
    end=$(date +%s%N)
    cat out
    test $rc = 1
    grep -q "^\[error\] model API: waiting for 127.0.0.1:[0-9]*: nothing for 1 s" out
    test $(( (end - start) / 1000000 )) -lt 6000
'

test_expect "SIGTERM while waiting: exit 1 at once, the MCP server it started is gone" '
    mark=mini-marker-$$-$RANDOM
    start=$(date +%s%N)
    # timeout passes the SIGTERM on to the agent
    MINI_MCP_LOG=/dev/null ANTHROPIC_BASE_URL=$FAKE_URL timeout 60 "$FAULTLINE" agent --retries 0 \
        --mcp "mini=exec $PYTHON $AGENT_DIR/mini_mcp.py $mark" --prompt hi >out 2>err &
    pid=$!
    for i in $(seq 100); do grep -q "^\[agent\]" out 2>/dev/null && break; sleep 0.1; done
    sleep 0.3
    kill -TERM $pid
    set +e; wait $pid; rc=$?; set -e
    end=$(date +%s%N)
    cat out
    test $rc = 1
    grep -q "^\[error\] interrupted while calling the model API" out
    test $(( (end - start) / 1000000 )) -lt 8000
    refute pgrep -f "$mark" >/dev/null
'

start_fake notjson
test_expect "a 200 that is not JSON is an error naming what came" '
    set +e; agent anthropic "$FAKE_URL" --retries 0 --prompt hi --no-stream >out 2>err; rc=$?; set -e
    test $rc = 1
    grep -q "^\[error\] model API: HTTP 200 invalid_response: <html><body>502 from some proxy" out
'

start_fake huge
test_expect "a response over --max-response is refused" '
    set +e; agent anthropic "$FAKE_URL" --retries 0 --max-response 2048 --prompt hi >out 2>err; rc=$?; set -e
    test $rc = 1
    grep -q "^\[error\] model API: response body of 100000000 bytes is over the limit of 2048" out
'
test_done
