#!/usr/bin/env bash
# The real Claude Code under `faultline run` in the native sandbox with an MCP server from the
# experiment's mcp_servers: Claude Code reads the configuration the runner writes
# ($FAULTLINE_MCP_CONFIG), which puts the server (tests/e2e/mcp/fake_server.py, bound in with
# --ro-path) behind `faultline mcp` in controller mode. In the faulted repetition tool.error
# fails the echo tool; the mock model reports the error with its canary, so failure_surfaced
# passes and the run is scored.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
NM=$(cd "$FAULTLINE_ROOT/tests/interop/node_modules" && pwd -P)
M=$(cd "$FAULTLINE_ROOT/tests/e2e/mcp" && pwd -P)
export NM M

make_project "$TMP/p"
cat >"$TMP/p/mock.yaml" <<'EOF2'
name: mcp-caller
rules:
  - name: call-echo
    when: {first_turn: true, tool_offered: mcp__fake__echo}
    reply:
      text: "Calling the echo tool."
      tool_calls: [{name: mcp__fake__echo, input: {message: "hello through the shim"}}]
  - name: report-failure
    when: {last_tool_result_error: true}
    reply: {text: "The tool FAILED: {{last_tool_result}} {{canary}}"}
  - name: report
    when: {has_tool_result: true}
    reply: {text: "The tool said: {{last_tool_result}}"}
fallback: {text: "no MCP tool was offered"}
EOF2
cat >"$TMP/p/exp.yaml" <<EOF2
name: claude-mcp-tool-error
agent: >-
  DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
  CLAUDE_CODE_MAX_RETRIES=2 claude -p "Use the echo tool" --mcp-config "\$FAULTLINE_MCP_CONFIG"
  --allowedTools mcp__fake__echo --output-format json </dev/null
verify: "true"
repeat: 1
model: {mock: mock.yaml}
mcp_servers:
  fake:
    command: python3
    args: [$M/fake_server.py]
faults:
  - id: tool.error
    match: {tool: echo, server: fake}
    message: the echo service is down
probes:
  - {id: failure_surfaced, weight: 3}
abort:
  - cost_usd_above: 5
  - wall_clock_s_above: 150
EOF2
commit "$TMP/p"
cd "$TMP"

test_expect "claude code calls the MCP tool through the shim in both repetitions; scored" '
    test -x "$NM/.bin/claude" || { echo "claude missing: run scripts/bootstrap"; exit 1; }
    rc=0; timeout 400 "$FAULTLINE" run p/exp.yaml --ro-path "$NM" --ro-path "$M" --out out/m.json \
        >run.out 2>run.err || rc=$?
    test "$rc" = 0 || { tail -n 20 run.err; exit 1; }
    test "$(jq -r .verdict out/m.json)" = scored
    test "$(jq -r "select(.type == \"result\") | .result" out/m/rep-000/agent.out)" = "The tool said: Echo: hello through the shim"
'

test_expect "the faulted call failed with the canary, and the agent said so" '
    canary=$(jq -r .canary out/m/rep-001/plan.json)
    test "$(jq -r "select(.type == \"result\") | .result" out/m/rep-001/agent.out)" = "The tool FAILED: the echo service is down [$canary] $canary"
    e=out/m/rep-001/events.jsonl
    jq -r "select(.kind==\"fault_injected\") | .src" $e | grep -qx mcp
    test "$(jq -r "select(.kind==\"tool_call\") | .tool" $e)" = echo
    test "$(jq -r ".result.probes[] | select(.id==\"failure_surfaced\") | .passed" out/m.json)" = 1
'

test_expect "nothing is left behind" '
    no_leftovers p "$TMP/out/m"
'
test_done
