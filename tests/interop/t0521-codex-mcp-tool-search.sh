#!/usr/bin/env bash
# t0521-codex-mcp-tool-search: the real Codex CLI calls an MCP tool through `faultline mcp`,
# offline against `faultline mock-model`. Codex 0.171 offers MCP tools only through its client
# side tool search: the mock answers with a tool_search_call, Codex sends back a
# tool_search_output holding the server's namespace (mcp__fake) and its tools, and the mock then
# calls the tool as a function_call in that namespace. Without a fault the tool's result reaches
# the model; with tool.error the model sees the error and its canary.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
. "$FAULTLINE_ROOT/tests/interop/lib-codex.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
export M PY

cat >"$TMP/mock.yaml" <<'EOF'
name: codex-mcp-caller
description: finds the fake server's echo tool through Codex's tool search, calls it, reports.
rules:
  - name: search
    when: {first_turn: true, tool_offered: tool_search}
    reply:
      tool_calls: [{name: tool_search, input: {query: "echo", limit: 8}}]
  - name: call-echo
    when: {tool_offered: mcp__fake__echo, has_tool_result: false}
    reply:
      text: "Calling the echo tool."
      tool_calls: [{name: mcp__fake__echo, input: {message: "hello through the shim"}}]
  - name: report-failure
    when: {last_tool_result_error: true}
    reply: {text: "The tool FAILED: {{last_tool_result}} {{canary}}"}
  - name: report
    when: {has_tool_result: true}
    reply: {text: "The tool said: {{last_tool_result}}"}
fallback: {text: "no MCP tool was found"}
EOF
start_bg "$FAULTLINE" mock-model --script "$TMP/mock.yaml" --listen 127.0.0.1:0 \
    --ready-file "$TMP/mock.ready" --record "$TMP/mock.jsonl" >/dev/null 2>"$TMP/mock.log"
wait_file 10 "$TMP/mock.ready" || echo "mock-model did not start"

# run_fake DIR [PLAN]: codex exec in DIR/work with the fake MCP server behind the shim
# (lib-codex.sh).
run_fake() {
    run_codex "$1" "$1/work" fake "Use the echo tool" "${2:-}" "$PY" "$M/fake_server.py"
}
export -f run_fake

test_expect "codex finds the MCP tool by tool search and calls it through the shim" '
    run_fake "$TMP/ok"
    grep -q "^The tool said: " "$TMP/ok/out.txt"
    grep -q "^Echo: hello through the shim" "$TMP/ok/out.txt"
    "$PY" - "$TMP/ok/events.jsonl" <<PY
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
calls = [e for e in ev if e["kind"] == "tool_call"]
assert len(calls) == 1 and calls[0]["tool"] == "echo" and calls[0]["server"] == "fake", ev
assert calls[0]["args"] == {"message": "hello through the shim"}, calls
PY
'

test_expect "the mock saw the search, the call in the namespace, then the result" '
    "$PY" - "$TMP/mock.jsonl" <<PY
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
recs = [r for r in recs if r["api"] == "openai.responses"][:3]
assert [r["rule_name"] for r in recs] == ["search", "call-echo", "report"], recs
assert "tool_search" in recs[0]["tools"] and "mcp__fake__echo" not in recs[0]["tools"], recs[0]
assert "mcp__fake__echo" in recs[1]["tools"], recs[1]
PY
'

test_expect "tool.error through the shim: the canary reaches the model behind Codex" '
    "$PY" -c "
import json
json.dump({\"version\": 1, \"run\": \"codex-1\", \"canary\": \"E-FAULTLINE-c0dec0de\", \"seed\": 1,
           \"faults\": [{\"kind\": \"tool.error\", \"injectors\": [\"mcp\"],
                        \"match\": {\"tool\": \"echo\", \"server\": \"fake\"},
                        \"options\": {\"message\": \"the backend is down\"}}]},
          open(\"$TMP/err-plan.json\", \"w\"))
"
    run_fake "$TMP/err" "$TMP/err-plan.json"
    grep -q "^The tool FAILED: " "$TMP/err/out.txt"
    grep -q "the backend is down \[E-FAULTLINE-c0dec0de\] E-FAULTLINE-c0dec0de$" "$TMP/err/out.txt"
    grep -q "\"kind\":\"fault_injected\"" "$TMP/err/events.jsonl"
    grep -q "\"rule_name\":\"report-failure\"" "$TMP/mock.jsonl"
'

test_done
