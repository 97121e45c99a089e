#!/usr/bin/env bash
# t0701-agent-hook: PreToolUse hooks in Claude Code's format before the agent's tool calls:
# exit 2 blocks the call and its stderr reaches the model as an error result; a JSON deny
# does the same; the hook gets Claude Code's input (the shell is "Bash"); .claude/settings.json
# hooks apply with their matcher; a failing hook (exit 1) fails open; updatedInput is used;
# "continue": false stops the agent.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/agent/common.sh"

start_mock M "$EXAMPLES/models/resilient.yaml"

cat >"$TMP/block.sh" <<'SH'
#!/bin/sh
cat >"$HOOK_LOG"
echo "blocked by policy: no writes here E-FAULTLINE-cafe0001" >&2
exit 2
SH
cat >"$TMP/deny-json.sh" <<'SH'
#!/bin/sh
cat >/dev/null
printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"json says no E-FAULTLINE-cafe0002"}}'
SH
cat >"$TMP/broken.sh" <<'SH'
#!/bin/sh
cat >/dev/null
echo "hook crashed" >&2
exit 1
SH
cat >"$TMP/rewrite.sh" <<'SH'
#!/bin/sh
cat >/dev/null
printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo rewritten > r.txt"}}}'
SH
cat >"$TMP/stop.sh" <<'SH'
#!/bin/sh
cat >/dev/null
printf '%s\n' '{"continue":false,"stopReason":"the gate ended the session"}'
SH
chmod +x "$TMP"/*.sh
export HOOK_LOG

for api in anthropic openai responses; do
    test_expect "$api: a hook that exits 2 blocks the call; the model sees its stderr" "
        mkdir b-$api && cd b-$api
        export HOOK_LOG=\$PWD/hook-input.json
        agent $api \"\$M_URL\" --shell --hook '$TMP/block.sh' --prompt 'Please run \`echo hi > f.txt\`' >out 2>err
        cat out
        test ! -e f.txt
        grep -qx '\[blocked\] shell: blocked by policy: no writes here E-FAULTLINE-cafe0001' out
        grep -q '^The task FAILED.*blocked by policy: no writes here E-FAULTLINE-cafe0001' out
        grep -q '1 blocked' err
    "
done

test_expect "the hook gets Claude Code's PreToolUse input, the shell as Bash" '
    "$PYTHON" - b-anthropic/hook-input.json "$TMP/b-anthropic" <<PY
import json, sys
d = json.load(open(sys.argv[1]))
assert d["hook_event_name"] == "PreToolUse", d
assert d["tool_name"] == "Bash", d
assert d["tool_input"] == {"command": "echo hi > f.txt"}, d
assert d["cwd"] == sys.argv[2], d
assert d["tool_use_id"] and d["session_id"], d
assert d["permission_mode"] == "default", d
PY
'

test_expect "a JSON permissionDecision deny blocks with its reason" '
    mkdir j && cd j
    agent anthropic "$M_URL" --shell --hook "$TMP/deny-json.sh" --prompt "Please run \`echo hi > f.txt\`" >out 2>err
    test ! -e f.txt
    grep -q "^The task FAILED.*json says no E-FAULTLINE-cafe0002" out
'

test_expect ".claude/settings.json hooks apply when their matcher matches" '
    mkdir -p s/.claude && cd s
    export HOOK_LOG=$PWD/in.json
    printf "%s\n" "{\"hooks\":{\"PreToolUse\":[{\"matcher\":\"Bash\",\"hooks\":[{\"type\":\"command\",\"command\":\"$TMP/block.sh\",\"timeout\":30}]}]}}" >.claude/settings.json
    agent anthropic "$M_URL" --shell --prompt "Please run \`echo hi > f.txt\`" >out 2>err
    test ! -e f.txt
    grep -q "^\[blocked\] shell: blocked by policy" out
'

test_expect "... and not when it does not, nor with --no-settings" '
    mkdir -p n/.claude && cd n
    printf "%s\n" "{\"hooks\":{\"PreToolUse\":[{\"matcher\":\"Write|Edit\",\"hooks\":[{\"type\":\"command\",\"command\":\"$TMP/block.sh\"}]}]}}" >.claude/settings.json
    agent anthropic "$M_URL" --shell --prompt "Please run \`echo hi > f.txt\`" >out 2>err
    test "$(cat f.txt)" = hi
    rm f.txt
    printf "%s\n" "{\"hooks\":{\"PreToolUse\":[{\"matcher\":\"*\",\"hooks\":[{\"type\":\"command\",\"command\":\"$TMP/block.sh\"}]}]}}" >.claude/settings.local.json
    agent anthropic "$M_URL" --shell --no-settings --prompt "Please run \`echo hi > f.txt\`" >out 2>err
    test "$(cat f.txt)" = hi
'

test_expect "a malformed settings file is a usage error naming FILE:LINE:COL" '
    mkdir -p m/.claude && cd m
    printf "{\n  \"hooks\": [,]\n}\n" >.claude/settings.json
    set +e; agent anthropic "$M_URL" --shell --prompt x >out 2>err; rc=$?; set -e
    test $rc = 2
    grep -q "\.claude/settings.json:2:" err
'

test_expect "a hook that fails (exit 1) fails open: the call runs" '
    mkdir o && cd o
    agent anthropic "$M_URL" --shell --hook "$TMP/broken.sh" --prompt "Please run \`echo hi > f.txt\`" >out 2>err
    test "$(cat f.txt)" = hi
    grep -q "^\[hook\] hook exited with status 1: hook crashed; the call proceeds" out
'

test_expect "an allow with updatedInput runs the updated input" '
    mkdir u && cd u
    agent anthropic "$M_URL" --shell --hook "$TMP/rewrite.sh" --prompt "Please run \`echo hi > f.txt\`" >out 2>err
    test ! -e f.txt
    test "$(cat r.txt)" = rewritten
'

test_expect "continue:false stops the agent with exit 1" '
    mkdir t && cd t
    set +e; agent anthropic "$M_URL" --shell --hook "$TMP/stop.sh" --prompt "Please run \`echo hi > f.txt\`" >out 2>err; rc=$?; set -e
    test $rc = 1
    test ! -e f.txt
    grep -q "^\[stopped\] a hook stopped the agent: the gate ended the session" out
'
test_done
