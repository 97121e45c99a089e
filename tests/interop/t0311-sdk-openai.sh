#!/usr/bin/env bash
# t0311-sdk-openai: the official openai SDK (tests/interop/node_modules) against
# `faultline mock-model`: Chat Completions and Responses, create and stream (include_usage,
# sequence numbers, the SDK's accumulating helpers), tool calls and results, cache usage, and
# errors in the provider's format.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
INTEROP="$FAULTLINE_ROOT/tests/interop"

start_bg "$FAULTLINE" mock-model --script "$INTEROP/sdk-mock.yaml" --listen 127.0.0.1:0 \
    --ready-file "$TMP/ready" >/dev/null 2>"$TMP/mock.log"
MOCK_PID=$LAST_PID
wait_file 10 "$TMP/ready" || { cat "$TMP/mock.log"; echo "mock-model did not start"; }
export MOCK_URL="http://$(cat "$TMP/ready")"

for s in chatCreate chatStream chatToolError responsesCreate responsesStream responsesToolResult cacheUsage errors; do
    test_expect "openai sdk: $s" "timeout 60 node '$INTEROP/sdk-openai.mjs' $s"
done
test_expect "mock-model still serving after every scenario" 'kill -0 '"$MOCK_PID"
test_done
