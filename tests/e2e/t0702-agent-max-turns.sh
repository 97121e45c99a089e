#!/usr/bin/env bash
# t0702-agent-max-turns: with the stubborn fixture the model repeats a failing call forever;
# the agent stops at --max-turns with exit 3, having made exactly that many model calls.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/agent/common.sh"

start_mock M "$EXAMPLES/models/stubborn.yaml"

n=0
for api in anthropic openai responses; do
    n=$((n + 3))
    test_expect "$api: max turns reached: exit 3 after 3 model calls and 3 tool calls" "
        mkdir w-$api && cd w-$api
        set +e; agent $api \"\$M_URL\" --shell --max-turns 3 --prompt 'Please run \`false\`' >out 2>err; rc=\$?; set -e
        cat out
        test \$rc = 3
        test \$(grep -c '^\[tool\] shell {\"command\":\"false\"}\$' out) = 3
        test \$(grep -c '^\[result\] shell error: Exit code 1\$' out) = 3
        grep -qx '\[stopped\] max turns (3) reached; the model still wanted tools' out
        test \$(requests \"\$M_REC\") = $n
    "
done

test_expect "a model that succeeds first time ends well inside the limit" '
    agent anthropic "$M_URL" --shell --max-turns 2 --prompt "Please run \`true\`" >out 2>err
    test "$(tail -n 1 out)" = "Done: the command succeeded."
'
test_done
