#!/usr/bin/env bash
# t1030-gate-harness-answers: `faultline gate claude-code | codex | cursor` as a harness runs
# it, a process with the hook input on stdin: a destructive Bash call is denied in each
# harness's own format (exit 0), a harmless one gets no opinion (claude-code, codex) or an
# explicit allow (cursor); unknown fields are ignored; unreadable input (cut, not JSON, over
# 1 MiB) fails closed with exit 2 and the reason on stderr only when its command is
# destructive; an event the gate does not decide gets no answer; a controller that cannot be
# reached leaves the local decision, with a note on stderr; the project's policy file is
# looked up from the input's cwd; a bad harness is a usage error.
. "$(dirname "$0")/lib.sh"

PY=$(python3 -c 'import sys; print(sys.executable)')
export PY
unset FAULTLINE_CONTROL_URL CLAUDE_PROJECT_DIR
export FAULTLINE_USER_POLICY=$TMP/no-user-policy.yaml

# hso FILE KEY: a field of the hookSpecificOutput on stdout
hso() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["hookSpecificOutput"][sys.argv[2]])' "$1" "$2"; }
export -f hso

test_expect "claude-code: rm -rf ~ is denied with permissionDecision deny and a [faultline] reason" '
    printf "%s" "{\"session_id\":\"s\",\"cwd\":\"$TMP\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf ~\",\"description\":\"d\"},\"tool_use_id\":\"t1\",\"brand_new_field\":{\"x\":[1]}}" >in.json
    "$FAULTLINE" gate claude-code <in.json >out 2>err
    test "$(hso out hookEventName)" = PreToolUse
    test "$(hso out permissionDecision)" = deny
    hso out permissionDecisionReason | grep -q "^\[faultline\] .*destructive"
    test ! -s err
'

test_expect "codex: the same call is denied in the deny JSON (never ask)" '
    printf "%s" "{\"session_id\":\"s\",\"turn_id\":\"t\",\"transcript_path\":null,\"cwd\":\"$TMP\",\"hook_event_name\":\"PreToolUse\",\"model\":\"m\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"sh -c \\\"rm -rf ~\\\"\"},\"tool_use_id\":\"c1\"}" >in.json
    "$FAULTLINE" gate codex <in.json >out 2>err
    test "$(hso out permissionDecision)" = deny
    refute grep -q ask out
    "$PY" -c "import json,sys; d=json.load(open(\"out\")); assert set(d)=={\"hookSpecificOutput\"} and set(d[\"hookSpecificOutput\"])=={\"hookEventName\",\"permissionDecision\",\"permissionDecisionReason\"}, d"
'

test_expect "cursor: beforeShellExecution of git push --force is denied with user and agent messages" '
    printf "%s" "{\"hook_event_name\":\"beforeShellExecution\",\"conversation_id\":\"c\",\"generation_id\":\"g\",\"workspace_roots\":[\"$TMP\"],\"command\":\"git push --force origin main\",\"cwd\":\"$TMP\"}" >in.json
    "$FAULTLINE" gate cursor <in.json >out 2>err
    "$PY" -c "import json; d=json.load(open(\"out\")); assert d[\"permission\"]==\"deny\" and d[\"agent_message\"].startswith(\"[faultline] \") and d[\"user_message\"]==d[\"agent_message\"], d"
'

test_expect "a harmless call: no opinion for claude-code and codex, allow for cursor" '
    for h in claude-code codex; do
        printf "%s" "{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf node_modules\"}}" | "$FAULTLINE" gate $h >out 2>err
        test ! -s out
        test ! -s err
    done
    printf "%s" "{\"hook_event_name\":\"beforeShellExecution\",\"command\":\"echo \\\"rm -rf /\\\"\"}" | "$FAULTLINE" gate cursor >out
    grep -qx "{\"permission\":\"allow\"}" out
'

test_expect "an event the gate does not decide (PostToolUse, afterFileEdit) gets no answer" '
    printf "%s" "{\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf ~\"},\"tool_response\":{}}" | "$FAULTLINE" gate claude-code >out
    test ! -s out
    printf "%s" "{\"hook_event_name\":\"afterFileEdit\",\"file_path\":\"x\"}" | "$FAULTLINE" gate cursor >out
    test ! -s out
'

test_expect "cut input with a destructive command: exit 2, the reason on stderr, nothing on stdout" '
    for h in claude-code codex cursor; do
        rc=0
        printf "%s" "{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"sudo rm -rf --no-preserve-root /" | "$FAULTLINE" gate $h >out 2>err || rc=$?
        test "$rc" = 2
        test ! -s out
        grep -q "^\[faultline\] blocked: the hook input could not be read" err
    done
'

test_expect "unreadable input without a destructive command fails open, saying why on stderr" '
    printf "not json at all" | "$FAULTLINE" gate codex >out 2>err
    test ! -s out
    grep -q "not JSON.*no command in it: allowed" err
    printf "%s" "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls -la" | "$FAULTLINE" gate claude-code >out 2>err
    grep -q "not destructive: allowed" err
'

test_expect "over 1 MiB of input: refused as oversized, fails closed on the destructive command it starts with" '
    "$PY" -c "import sys; sys.stdout.write(\"{\\\"tool_name\\\":\\\"Bash\\\",\\\"tool_input\\\":{\\\"command\\\":\\\"rm -rf /\\\",\\\"pad\\\":\\\"\" + \"x\" * (2 << 20) + \"\\\"}}\")" >big.json
    rc=0
    timeout 20 "$FAULTLINE" gate claude-code <big.json >out 2>err || rc=$?
    test "$rc" = 2
    grep -q "over the limit of 1048576" err
'

test_expect "no controller at FAULTLINE_CONTROL_URL: decided here, said on stderr" '
    port=$(free_port)
    printf "%s" "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf ~\"}}" | FAULTLINE_CONTROL_URL=http://127.0.0.1:$port timeout 20 "$FAULTLINE" gate claude-code >out 2>err
    test "$(hso out permissionDecision)" = deny
    grep -q "the controller could not be asked.*decided here" err
'

test_expect "the project policy file is found from the input cwd (git top-level); a broken one denies with FILE:LINE:COL" '
    mkdir -p proj/sub && git -C proj init -q
    mkdir -p proj/.faultline
    printf "rules:\n  - id: [unclosed\n" >proj/.faultline/policy.yaml
    printf "%s" "{\"cwd\":\"$TMP/proj/sub\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls\"}}" | "$FAULTLINE" gate codex >out 2>err
    test "$(hso out permissionDecision)" = deny
    hso out permissionDecisionReason | grep -q "policy.yaml:[0-9]*:[0-9]*"
'

test_expect "an unknown harness is a usage error (64); --help names the page" '
    rc=0
    "$FAULTLINE" gate claude </dev/null 2>err || rc=$?
    test "$rc" = 64
    grep -q "unknown harness" err
    "$FAULTLINE" gate --help | grep -q "docs/gate.md"
'

test_done
