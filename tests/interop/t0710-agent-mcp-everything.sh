#!/usr/bin/env bash
# t0710-agent-mcp-everything: `faultline agent --mcp` against the reference MCP server
# @modelcontextprotocol/server-everything (tests/interop/node_modules), with the model played
# by `faultline mock-model`: its 13 tools are offered as mcp__everything__*, echo and get-sum
# are called over each API, invalid arguments come back as an error, and a long-running call
# past --mcp-timeout is cancelled.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/agent/common.sh"
EVERYTHING="$FAULTLINE_ROOT/tests/interop/node_modules/.bin/mcp-server-everything"
export EVERYTHING

start_mock M "$AGENT_DIR/everything.yaml"

for api in anthropic openai responses; do
    test_expect "$api: the model calls mcp__everything__echo; the canary comes back" "
        agent $api \"\$M_URL\" --mcp \"everything=\$EVERYTHING\" --prompt 'call echo' >out 2>err
        cat out
        grep -q '^\[mcp\] everything: 13 tools' out
        grep -qx '\[tool\] mcp__everything__echo {\"message\":\"hello from faultline E-FAULTLINE-cccc0001\"}' out
        grep -qx '\[result\] mcp__everything__echo ok: Echo: hello from faultline E-FAULTLINE-cccc0001' out
        test \"\$(tail -n 1 out)\" = 'Tool said: Echo: hello from faultline E-FAULTLINE-cccc0001'
    "
done

test_expect "every tool is offered under its mcp__everything__ name" '
    grep -q "\"mcp__everything__trigger-long-running-operation\"" "$M_REC"
    "$PYTHON" - "$M_REC" <<PY
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
names = set(rows[0]["tools"])
assert len(names) == 13 and all(n.startswith("mcp__everything__") for n in names), names
PY
'

test_expect "get-sum computes 2 + 40" '
    agent anthropic "$M_URL" --mcp "everything=$EVERYTHING" --prompt "call sum" >out 2>err
    grep -q "^\[result\] mcp__everything__get-sum ok: .*42" out
'

test_expect "invalid arguments come back to the model as an error" '
    agent anthropic "$M_URL" --mcp "everything=$EVERYTHING" --prompt "call bad args" >out 2>err
    cat out
    grep -q "^\[result\] mcp__everything__get-sum error: " out
    grep -q "^Tool failed: " out
'

test_expect "a long-running call past --mcp-timeout is cancelled, the agent goes on" '
    start=$(date +%s%N)
    agent anthropic "$M_URL" --mcp "everything=$EVERYTHING" --mcp-timeout 1 --prompt "call long" >out 2>err
    end=$(date +%s%N)
    cat out
    grep -q "^\[result\] mcp__everything__trigger-long-running-operation error: MCP server .everything.: no answer to tools/call within 1000 ms" out
    test $(( (end - start) / 1000000 )) -lt 15000
'
test_done
