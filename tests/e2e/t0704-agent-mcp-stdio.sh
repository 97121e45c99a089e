#!/usr/bin/env bash
# t0704-agent-mcp-stdio: the agent's MCP client against a small stdio server
# (tests/e2e/agent/mini_mcp.py): the handshake (initialize 2025-06-18, initialized,
# tools/list), tools offered as mcp__NAME__TOOL, tools/call and its result, isError results,
# server pings answered, a per-call timeout with notifications/cancelled, tools/list again
# after list_changed, unknown tools, and servers that fail to start or never answer.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/agent/common.sh"

start_mock M "$AGENT_DIR/mini-mcp.yaml"
MINI="$PYTHON $AGENT_DIR/mini_mcp.py"
export MINI

for api in anthropic openai responses; do
    test_expect "$api: the model calls mcp__mini__echo and gets its result" "
        export MINI_MCP_LOG=\$PWD/mini-$api.log
        agent $api \"\$M_URL\" --mcp \"mini=\$MINI\" --prompt 'call echo' >out 2>err
        cat out
        grep -qx '\[mcp\] mini: 5 tools (mini 1.0)' out
        grep -qx '\[tool\] mcp__mini__echo {\"text\":\"hello mini\"}' out
        grep -qx '\[result\] mcp__mini__echo ok: echo: hello mini' out
        test \"\$(tail -n 1 out)\" = 'Tool said: echo: hello mini'
    "
done

test_expect "the handshake: initialize 2025-06-18, then initialized, tools/list, tools/call; pings answered" '
    "$PYTHON" - mini-anthropic.log <<PY
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1])]
kinds = [m.get("method") or ("response:" + str(m.get("id"))) for m in msgs]
assert kinds[:4] == ["initialize", "notifications/initialized", "tools/list", "tools/call"], kinds
init = msgs[0]["params"]
assert init["protocolVersion"] == "2025-06-18" and init["clientInfo"]["name"] == "faultline-agent", init
call = msgs[3]["params"]
assert call == {"name": "echo", "arguments": {"text": "hello mini"}}, call
pong = [m for m in msgs if m.get("id") == "srv-1"]
assert pong and pong[0]["result"] == {} and "method" not in pong[0], msgs
PY
'

test_expect "an isError result goes back to the model as an error" '
    agent anthropic "$M_URL" --mcp "mini=$MINI" --prompt "call fail" >out 2>err
    grep -qx "\[result\] mcp__mini__fail error: the tool failed E-FAULTLINE-bbbb0001" out
    test "$(tail -n 1 out)" = "Tool failed: the tool failed E-FAULTLINE-bbbb0001"
'

test_expect "a tool call past --mcp-timeout is cancelled and reported to the model" '
    export MINI_MCP_LOG=$PWD/slow.log
    start=$(date +%s%N)
    agent anthropic "$M_URL" --mcp "mini=$MINI" --mcp-timeout 1 --prompt "call slow" >out 2>err
    end=$(date +%s%N)
    cat out
    grep -q "^\[result\] mcp__mini__slow error: MCP server .mini.: no answer to tools/call within 1000 ms" out
    grep -q "^Tool failed: MCP server" out
    test $(( (end - start) / 1000000 )) -lt 5000
    "$PYTHON" - slow.log <<PY
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1])]
call = [m for m in msgs if m.get("method") == "tools/call"][0]
cancel = [m for m in msgs if m.get("method") == "notifications/cancelled"]
assert cancel and cancel[0]["params"]["requestId"] == call["id"], msgs
PY
'

test_expect "after notifications/tools/list_changed the new tool is listed and offered" '
    export MINI_MCP_LOG=$PWD/grow.log
    agent anthropic "$M_URL" --mcp "mini=$MINI" --prompt "call grow" >out 2>err
    cat out
    grep -qx "\[result\] mcp__mini__extra ok: extra ran" out
    test "$(grep -c "\"tools/list\"" grow.log)" = 2
'

test_expect "an image item is summarised for the model" '
    agent anthropic "$M_URL" --mcp "mini=$MINI" --prompt "call image" >out 2>err
    grep -qx "\[result\] mcp__mini__image ok: \[image image/png, 12 bytes of base64\]" out
'

test_expect "a call to a tool that was never offered is an error result" '
    agent anthropic "$M_URL" --mcp "mini=$MINI" --prompt "call ghost" >out 2>err
    grep -qx "\[result\] mcp__mini__ghost error: unknown tool .mcp__mini__ghost." out
'

test_expect "a server that exits at once: exit 1 with its status and stderr" '
    set +e; agent anthropic "$M_URL" --mcp "bad=echo cannot start >&2; exit 3" --prompt x >out 2>err; rc=$?; set -e
    cat out
    test $rc = 1
    grep -q "^\[error\] MCP server .bad.: MCP server .bad. closed its output (exited with status 3; stderr: cannot start)" out
'

test_expect "a server that never answers initialize: exit 1 within the start timeout" '
    start=$(date +%s%N)
    set +e; agent anthropic "$M_URL" --mcp "mute=sleep 30" --mcp-start-timeout 1 --prompt x >out 2>err; rc=$?; set -e
    end=$(date +%s%N)
    cat out
    test $rc = 1
    grep -q "^\[error\] MCP server .mute.: MCP server .mute.: no answer to initialize within 1000 ms" out
    test $(( (end - start) / 1000000 )) -lt 8000
'
test_done
