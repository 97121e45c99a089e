# tests/interop/lib-codex.sh: the real Codex CLI against `faultline mock-model`, with one MCP
# server behind `faultline mcp`; sourced by the Codex interop tests after tests/e2e/lib.sh,
# with the mock model's address in $TMP/mock.ready.
CODEX="$FAULTLINE_ROOT/tests/interop/node_modules/.bin/codex"
export CODEX

# run_codex DIR CWD SERVER PROMPT PLAN SERVER_ARGV...: codex exec in CWD with SERVER (its
# command line SERVER_ARGV) behind the shim, events in DIR/events.jsonl, the shim's plan PLAN
# ("" for none); stdout to DIR/out.txt, stderr to DIR/err.txt. Codex's config goes to
# DIR/codex: a custom provider on the mock model (Responses API; Codex ignores OPENAI_BASE_URL
# for its built-in one). `required = true` makes Codex wait for the server before its first
# request (it starts MCP servers in the background otherwise, and the first tool search can
# come before the server's tools are known). The shim refuses mutating faults outside a
# sandbox unless told it runs in one (docs/mcp-shim.md): these runs are on the host.
run_codex() {
    local dir=$1 cwd=$2 server=$3 prompt=$4 plan=$5 args a
    shift 5
    mkdir -p "$dir/home" "$dir/codex" "$cwd"
    args="\"mcp\", \"--name\", \"$server\", \"--i-have-a-sandbox\", \"--events\", \"$dir/events.jsonl\""
    [ -z "$plan" ] || args="$args, \"--plan\", \"$plan\""
    args="$args, \"--\""
    for a in "$@"; do args="$args, \"$a\""; done
    cat >"$dir/codex/config.toml" <<TOML
model = "gpt-5.5"
model_provider = "mock"

[model_providers.mock]
name = "faultline mock-model"
base_url = "http://$(cat "$TMP/mock.ready")/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"

[mcp_servers.$server]
command = "$FAULTLINE"
args = [$args]
required = true
TOML
    (cd "$cwd" && MOCK_API_KEY=sk-test CODEX_HOME="$dir/codex" HOME="$dir/home" \
        timeout 120 "$CODEX" exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox \
        "$prompt" </dev/null >"$dir/out.txt" 2>"$dir/err.txt")
}
export -f run_codex

# codex_agent_script FILE: writes the agent command's script for Codex under `faultline run`
# (`sh FILE "PROMPT"`): a custom provider on the controller's $OPENAI_BASE_URL (Responses API;
# gpt-5.5, with which Codex offers the mock its tools), the workspace trusted and hook trust
# bypassed, so that the project's .codex/hooks.json (the gates) is run (docs/gate.md).
codex_agent_script() {
    cat >"$1" <<'EOF2'
#!/bin/sh
mkdir -p "$HOME/.codex"
cat >"$HOME/.codex/config.toml" <<TOML
model = "gpt-5.5"
model_provider = "proxied"
[model_providers.proxied]
name = "mock model through faultline"
base_url = "$OPENAI_BASE_URL/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
[projects."$PWD"]
trust_level = "trusted"
TOML
CODEX_HOME="$HOME/.codex" exec codex exec --skip-git-repo-check \
    --dangerously-bypass-approvals-and-sandbox --dangerously-bypass-hook-trust "$1" </dev/null
EOF2
}
