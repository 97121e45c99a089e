#!/usr/bin/env bash
# t0045-agent-url-credentials: a password pasted into a model base URL never reaches a
# message: the one URL parser (src/util/url.c) refuses user info and quotes the URL with it
# replaced by "***", for the agent (ANTHROPIC_BASE_URL / OPENAI_BASE_URL) and the controller
# (--upstream-anthropic) alike.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/agent/common.sh"

cd "$TMP"
printf '{"version":1,"run":"t-run","canary":"E-FAULTLINE-0123abcd","faults":[],"abort":{"cost_usd_above":1}}\n' >plan.json

test_expect "the agent refuses a base URL with user info without printing the password" '
    set +e
    agent anthropic "http://user:hunter2pw@127.0.0.1:1" --retries 0 --prompt hi >out 2>err
    rc=$?
    set -e
    cat out err
    test $rc = 1
    grep -q "bad URL '"'"'http://\*\*\*@127.0.0.1:1'"'"': credentials in the URL" out
    if grep -q hunter2 out err; then echo "the password was printed"; exit 1; fi
'

test_expect "the same for a malformed URL with user info, and for OpenAI" '
    set +e
    agent openai "https://u:hunter2pw@[::1" --retries 0 --prompt hi >out 2>err
    rc=$?
    set -e
    cat out err
    test $rc = 1
    grep -q "\*\*\*@\[::1" out
    if grep -q hunter2 out err; then echo "the password was printed"; exit 1; fi
'

test_expect "the controller refuses an upstream URL with user info without printing it" '
    set +e
    timeout 20 "$FAULTLINE" proxy --plan plan.json --events ev.jsonl \
        --upstream-anthropic "https://k:hunter2pw@127.0.0.1:1/v1" >out 2>err
    rc=$?
    set -e
    cat out err
    test $rc != 0
    grep -q "\*\*\*@127.0.0.1:1/v1" err
    if grep -q hunter2 out err; then echo "the password was printed"; exit 1; fi
'

test_done
