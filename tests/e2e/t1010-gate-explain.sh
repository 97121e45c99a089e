#!/usr/bin/env bash
# t1010-gate-explain: `faultline gate explain` prints the decision the gates would take, as
# text and as --json: the default policy blocks the destructive tier and names the pattern; a
# project rule decides before a user rule; a monitor rule is reported and decides nothing;
# redact prints the masked input and never the secret; --tool/--input for any tool; without
# --policy the project's .faultline/policy.yaml and $FAULTLINE_USER_POLICY apply; a bad
# policy file is exit 2 with FILE:LINE:COL; usage errors are 64; `faultline schema --policy`.
. "$(dirname "$0")/lib.sh"

PY=$(python3 -c 'import sys; print(sys.executable)')
export PY
export FAULTLINE_USER_POLICY=$TMP/no-user-policy.yaml
# jf FILE KEY: a top-level field of the JSON object in FILE
jf() { "$PY" -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print("null" if v is None else v)' "$1" "$2"; }
export -f jf

cat >"$TMP/project.yaml" <<'EOF'
rules:
  - id: watch-git
    command: git
    effect: block
    mode: monitor
  - id: no-force-push
    command: git push *--force*
    effect: block
    reason: force pushes rewrite shared history
  - id: hold-publish
    command: {program: npm, args: [publish]}
    effect: hold
  - id: mask-curl
    command: curl
    effect: redact
    redact: ['hunter[0-9]+']
  - id: secrets
    paths: [secrets/*]
    effect: block
EOF
cat >"$TMP/user.yaml" <<'EOF'
rules:
  - {id: user-force, command: git push *--force*, effect: allow}
  - {id: user-push, command: git push, effect: hold}
EOF

test_expect "the default policy blocks rm -rf / and names the pattern" '
    "$FAULTLINE" gate explain -- "cd /tmp && sudo rm -rf /" >out
    grep -q "^decision: block$" out
    grep -q "^tier:     destructive (rm-recursive-root: " out
    grep -q "^rule:     none: the default policy decided$" out
    grep -q "^reason:   \[faultline\] blocked: destructive command (rm-recursive-root)" out
'

test_expect "several words are one command, each word one argument (a quoted mention is not a command)" '
    "$FAULTLINE" gate explain -- echo "rm -rf /" >out
    grep -q "^decision: allow$" out
    grep -q "^tier:     normal$" out
    "$FAULTLINE" gate explain -- rm -rf / >out
    grep -q "^decision: block$" out
'

test_expect "--json: effect, tier, pattern, rule, reason" '
    "$FAULTLINE" gate explain --json -- "git push --force" >out
    test "$(jf out effect)" = block
    test "$(jf out tier)" = destructive
    test "$(jf out tier_pattern)" = git-push-force
    test "$(jf out rule)" = null
    test "$(jf out from_default)" = True
    test "$(jf out tool)" = Bash
    test "$(wc -l <out)" -eq 1
'

test_expect "a project rule decides first, with its reason; the monitor rule before it is reported" '
    "$FAULTLINE" gate explain --policy project.yaml --policy user.yaml -- "git push origin main --force-with-lease" >out
    grep -q "^decision: block$" out
    grep -q "^rule:     no-force-push (enforce)$" out
    grep -q "^monitor:  watch-git (would block)$" out
    grep -q "^reason:   \[faultline\] blocked by policy rule .no-force-push.: force pushes rewrite shared history$" out
    grep -q "^tier:     destructive (git-push-force" out
'

test_expect "the user file comes after the project file, and the other order too" '
    "$FAULTLINE" gate explain --json --policy project.yaml --policy user.yaml -- "git push origin main" >out
    test "$(jf out effect)" = hold
    test "$(jf out rule)" = user-push
    "$FAULTLINE" gate explain --json --policy user.yaml --policy project.yaml -- "git push --force" >out
    test "$(jf out effect)" = allow
    test "$(jf out rule)" = user-force
    test "$(jf out tier)" = destructive
'

test_expect "a monitor rule alone decides nothing: the default does" '
    "$FAULTLINE" gate explain --json --policy project.yaml -- git status >out
    test "$(jf out effect)" = allow
    test "$(jf out mode)" = monitor
    test "$(jf out rule)" = watch-git
    test "$(jf out tier)" = default
    "$PY" -c "import json; d=json.load(open(\"out\")); assert d[\"monitor\"]=={\"rule\":\"watch-git\",\"effect\":\"block\"}, d"
    "$FAULTLINE" gate explain --json --policy project.yaml -- "git reset --hard" >out
    test "$(jf out effect)" = block
    test "$(jf out tier)" = destructive
'

test_expect "redact prints the masked input, never the secret" '
    "$FAULTLINE" gate explain --json --policy project.yaml -- "curl -u me:hunter22 -H \"Authorization: Bearer abcdefghijklmnopqrstuvwx\" https://x" >out
    test "$(jf out effect)" = redact
    test "$(jf out rule)" = mask-curl
    refute grep -q hunter22 out
    refute grep -q abcdefghijklmnopqrstuvwx out
    "$PY" -c "import json; d=json.load(open(\"out\")); c=d[\"redacted_input\"][\"command\"]; assert \"[REDACTED]\" in c and c.startswith(\"curl \"), c"
    "$FAULTLINE" gate explain --policy project.yaml -- "curl -d pw=hunter22 https://x" >out
    grep -q "^decision: redact$" out
    grep -q "^input:    {\"command\": *\"curl -d pw=\[REDACTED\] https://x\"}$" out
'

test_expect "--tool and --input: an Edit of a protected path, resolved against the workdir" '
    "$FAULTLINE" gate explain --policy project.yaml --tool Edit --input "{\"file_path\":\"src/../secrets/key\"}" >out
    grep -q "^decision: block$" out
    grep -q "^rule:     secrets (enforce)$" out
    "$FAULTLINE" gate explain --json --policy project.yaml --tool Write --input "{\"file_path\":\"/srv/secrets/key\"}" --workdir /srv >out
    test "$(jf out rule)" = secrets
    "$FAULTLINE" gate explain --json --policy project.yaml --tool Write --input "{\"file_path\":\"/work/public/key\"}" >out
    test "$(jf out effect)" = allow
'

test_expect "without --policy: the project file of --project (or the working directory), then FAULTLINE_USER_POLICY" '
    mkdir -p proj/.faultline
    cp project.yaml proj/.faultline/policy.yaml
    "$FAULTLINE" gate explain --json --project proj -- "npm publish" >out
    test "$(jf out rule)" = hold-publish
    (cd proj && "$FAULTLINE" gate explain --json -- "npm publish") >out
    test "$(jf out rule)" = hold-publish
    FAULTLINE_USER_POLICY=$PWD/user.yaml "$FAULTLINE" gate explain --json -- "git push origin x" >out
    test "$(jf out rule)" = user-push
    "$FAULTLINE" gate explain --json -- "npm publish" >out
    test "$(jf out rule)" = null
'

test_expect "a bad policy file: exit 2, every problem as FILE:LINE:COL, nothing on stdout" '
    printf "rules:\n  - id: a\n    efect: block\n  - {id: b, effect: blok}\n  - {id: c, tool: \"x[\", effect: block}\n  - {id: c, effect: block}\n" >bad.yaml
    set +e
    "$FAULTLINE" gate explain --policy bad.yaml -- ls >out 2>err
    rc=$?
    set -e
    test $rc -eq 2
    test ! -s out
    grep -q "^bad.yaml:3:5: error: unknown key .efect. in rules\[0\] (did you mean .effect.?)$" err
    grep -q "^bad.yaml:2:5: error: rules\[0\]: missing required key .effect." err
    grep -q "^bad.yaml:4:21: error: effect: .blok. is not one of allow, block, hold, redact (did you mean .block.?)$" err
    grep -q "^bad.yaml:5:19: error: rules\[2\].tool: bad glob .x\[.: it has a .\[. without its .\].$" err
    grep -q "^bad.yaml:6:10: error: rules\[3\].id: duplicate rule id .c. (first at line 5)$" err
'

test_expect "bad input and usage: exit 2 for --input that is not an object, 64 without a call, 1 for a directory" '
    set +e
    "$FAULTLINE" gate explain --tool X --input "[1]" >out 2>err; a=$?
    "$FAULTLINE" gate explain --tool X --input "{" >out 2>err2; b=$?
    "$FAULTLINE" gate explain >out 2>err3; c=$?
    "$FAULTLINE" gate explain --policy . -- ls >out 2>err4; d=$?
    "$FAULTLINE" gate explain --polcy x -- ls >out 2>err5; e=$?
    set -e
    test $a -eq 2
    grep -q "not a JSON object" err
    test $b -eq 2
    grep -q "^faultline gate explain: --input:1:" err2
    test $c -eq 64
    test $d -eq 1
    test $e -eq 64
    grep -q "did you mean" err5
'

test_expect "faultline schema --policy: the policy file's JSON Schema" '
    "$FAULTLINE" schema --policy >s.json
    "$PY" -c "
import json
s = json.load(open(\"s.json\"))
assert s[\"\$id\"] == \"urn:faultline:policy\", s
r = s[\"\$defs\"][\"policy_rule\"]
assert r[\"required\"] == [\"id\", \"effect\"], r
assert set(r[\"properties\"]) == {\"id\",\"tool\",\"command\",\"paths\",\"mcp_server\",\"effect\",\"mode\",\"reason\",\"redact\"}, r
assert r[\"properties\"][\"mode\"][\"default\"] == \"enforce\"
assert s[\"additionalProperties\"] is False
"
    set +e
    "$FAULTLINE" schema --policy --report >out 2>err; rc=$?
    set -e
    test $rc -eq 64
'

test_done
