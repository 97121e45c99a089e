#!/usr/bin/env bash
# t1011-connect: `faultline connect` on real files in a project: new files for every harness
# pointing at this binary by its absolute path (and the command written runs the gate);
# merging into existing settings keeps their entries and keys; a second run changes nothing
# (bytes, time, no new backup); FILE.bak holds the previous version; --dry-run prints a
# unified diff and writes nothing; --remove takes out only faultline's entries; one harness
# touches only its file; a file that is not JSON is refused with FILE:LINE:COL and left as it
# was; usage errors.
. "$(dirname "$0")/lib.sh"

PY=$(python3 -c 'import sys; print(sys.executable)')
export PY
SELF=$(readlink -f "$FAULTLINE")
export SELF
unset FAULTLINE_CONTROL_URL CLAUDE_PROJECT_DIR
export FAULTLINE_USER_POLICY=$TMP/no-user-policy.yaml
# cmd FILE HARNESS: the command of faultline's hook in FILE
cmd() { "$PY" - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
h = d["hooks"]
if sys.argv[2] == "cursor":
    cs = [e["command"] for ev in ("beforeShellExecution", "beforeMCPExecution", "preToolUse") for e in h[ev] if "gate" in e["command"]]
    assert len(cs) == 3 and len(set(cs)) == 1, cs
    print(cs[0])
else:
    cs = [x["command"] for g in h["PreToolUse"] for x in g["hooks"] if "gate" in x["command"]]
    assert len(cs) == 1, cs
    print(cs[0])
EOF
}
export -f cmd

test_expect "new files for every harness, each naming this binary by its absolute path" '
    mkdir p1
    cd p1
    "$FAULTLINE" connect >out
    grep -q "^.claude/settings.json: connected (new file)$" out
    grep -q "^.codex/hooks.json: connected (new file)$" out
    grep -q "^.cursor/hooks.json: connected (new file)$" out
    test "$(cmd .claude/settings.json claude-code)" = "$SELF gate claude-code"
    test "$(cmd .codex/hooks.json codex)" = "$SELF gate codex"
    test "$(cmd .cursor/hooks.json cursor)" = "$SELF gate cursor"
    "$PY" -c "import json; d=json.load(open(\".claude/settings.json\")); g=d[\"hooks\"][\"PreToolUse\"][0]; assert g[\"matcher\"]==\"*\" and g[\"hooks\"][0][\"type\"]==\"command\", d"
    "$PY" -c "import json; d=json.load(open(\".cursor/hooks.json\")); assert d[\"version\"]==1, d"
    ls -a .claude .codex .cursor >ls.out
    refute grep -q "\.bak" ls.out
'

test_expect "the command written runs the gate: a destructive Bash call is denied" '
    mkdir p2
    cd p2
    "$FAULTLINE" connect claude-code >/dev/null
    c=$(cmd .claude/settings.json claude-code)
    printf "%s" "{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf /\"}}" | sh -c "$c" >out
    "$PY" -c "import json; d=json.load(open(\"out\")); assert d[\"hookSpecificOutput\"][\"permissionDecision\"]==\"deny\", d"
'

test_expect "merging keeps the existing entries and keys; FILE.bak holds the previous version" '
    mkdir -p p3/.claude
    cd p3
    printf "%s\n" "{\"permissions\":{\"allow\":[\"Bash(ls:*)\"]},\"hooks\":{\"PreToolUse\":[{\"matcher\":\"Bash\",\"hooks\":[{\"type\":\"command\",\"command\":\"./check.sh\"}]}],\"Stop\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"./stop.sh\"}]}]},\"model\":\"m\"}" >.claude/settings.json
    cp .claude/settings.json before.json
    "$FAULTLINE" connect claude-code >out
    grep -q "^.claude/settings.json: connected (the previous version in .claude/settings.json.bak)$" out
    cmp before.json .claude/settings.json.bak
    "$PY" - <<EOF
import json
d = json.load(open(".claude/settings.json"))
assert list(d) == ["permissions", "hooks", "model"], list(d)
assert d["permissions"] == {"allow": ["Bash(ls:*)"]} and d["model"] == "m"
pre = d["hooks"]["PreToolUse"]
assert pre[0] == {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}, pre
assert pre[1]["hooks"][0]["command"] == "$SELF gate claude-code", pre
assert d["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "./stop.sh"}]}]
EOF
    test ! -e .codex
    test ! -e .cursor
'

test_expect "a second connect changes nothing: same bytes, same time, no new backup" '
    mkdir -p p4/.codex
    cd p4
    printf "{\"hooks\":{}}" >.codex/hooks.json
    "$FAULTLINE" connect codex >/dev/null
    cp .codex/hooks.json first.json
    cp .codex/hooks.json.bak first.bak
    m=$(stat -c %Y.%y .codex/hooks.json)
    sleep 1
    "$FAULTLINE" connect codex >out
    grep -q "^.codex/hooks.json: already connected$" out
    cmp first.json .codex/hooks.json
    cmp first.bak .codex/hooks.json.bak
    test "$(stat -c %Y.%y .codex/hooks.json)" = "$m"
    "$FAULTLINE" connect codex --dry-run >out
    grep -q "^.codex/hooks.json: already connected$" out
'

test_expect "--dry-run prints a unified diff and writes nothing" '
    mkdir -p p5/.cursor
    cd p5
    printf "%s\n" "{\"version\":1,\"hooks\":{\"afterFileEdit\":[{\"command\":\"./fmt.sh\"}]}}" >.cursor/hooks.json
    cp .cursor/hooks.json before.json
    "$FAULTLINE" connect cursor --dry-run >diff.out
    cmp before.json .cursor/hooks.json
    test ! -e .cursor/hooks.json.bak
    test ! -e .claude
    head -2 diff.out >heads
    printf "%s\n" "--- .cursor/hooks.json" "+++ .cursor/hooks.json" | cmp - heads
    grep -q "^@@ -1,1 +1," diff.out
    grep -q "^-{\"version\":1,\"hooks\":{\"afterFileEdit\":\[{\"command\":\"./fmt.sh\"}\]}}$" diff.out
    grep -q "^+        \"command\": \"$SELF gate cursor\"$" diff.out
    # the diff applies: patch turns the file into what connect writes
    if command -v patch >/dev/null; then
        cp before.json work.json
        sed "s|^--- .cursor/hooks.json|--- work.json|; s|^+++ .cursor/hooks.json|+++ work.json|" diff.out | patch -s work.json
        "$FAULTLINE" connect cursor >/dev/null
        cmp work.json .cursor/hooks.json
    fi
    "$FAULTLINE" connect --dry-run >all.out
    grep -q "^--- /dev/null$" all.out
    grep -q "^+++ .claude/settings.json$" all.out
    test ! -e .claude
'

test_expect "--remove takes out only faultline entries, keeping a backup; twice is a no-op" '
    mkdir -p p6/.claude
    cd p6
    printf "%s\n" "{\"hooks\":{\"PreToolUse\":[{\"matcher\":\"Bash\",\"hooks\":[{\"type\":\"command\",\"command\":\"./check.sh\"}]}]},\"x\":1}" >.claude/settings.json
    cp .claude/settings.json orig.json
    "$FAULTLINE" connect >/dev/null
    cp .claude/settings.json connected.json
    "$FAULTLINE" connect --remove >out
    grep -q "^.claude/settings.json: faultline hooks removed (the previous version in .claude/settings.json.bak)$" out
    cmp connected.json .claude/settings.json.bak
    "$PY" -c "import json; assert json.load(open(\".claude/settings.json\"))==json.load(open(\"orig.json\"))"
    "$PY" -c "import json; assert json.load(open(\".codex/hooks.json\"))=={}"
    "$PY" -c "import json; assert json.load(open(\".cursor/hooks.json\"))=={\"version\":1}"
    "$FAULTLINE" connect --remove >out
    grep -q "^.claude/settings.json: no faultline hooks$" out
    grep -q "^.codex/hooks.json: no faultline hooks$" out
'

test_expect "--project DIR: the files go under DIR" '
    mkdir q
    "$FAULTLINE" connect codex --project q >out
    test -s q/.codex/hooks.json
    test ! -e .codex
'

test_expect "a settings file that is not JSON, or not shaped as its harness reads it: exit 2, left as it was" '
    mkdir -p p7/.claude p7/.codex
    cd p7
    printf "{\n  \"hooks\": [,\n}\n" >.claude/settings.json
    printf "{\"hooks\":{\"PreToolUse\":{}}}" >.codex/hooks.json
    cp .claude/settings.json c.before
    cp .codex/hooks.json x.before
    set +e
    "$FAULTLINE" connect >out 2>err
    rc=$?
    set -e
    test $rc -eq 2
    grep -q "^faultline connect: .claude/settings.json:2:13: .* (nothing written)$" err
    grep -q "^faultline connect: .codex/hooks.json: hooks.PreToolUse is not a list (nothing written)$" err
    cmp c.before .claude/settings.json
    cmp x.before .codex/hooks.json
    test ! -e .claude/settings.json.bak
    grep -q "^.cursor/hooks.json: connected (new file)$" out
'

test_expect "usage: an unknown harness or option is 64" '
    set +e
    "$FAULTLINE" connect claude >out 2>err; a=$?
    "$FAULTLINE" connect --dryrun >out 2>err2; b=$?
    "$FAULTLINE" connect codex cursor >out 2>err3; c=$?
    set -e
    test $a -eq 64
    grep -q "unknown harness .claude.: claude-code, codex, cursor or all" err
    test $b -eq 64
    grep -q "did you mean" err2
    test $c -eq 64
    test ! -e .claude
'

test_done
