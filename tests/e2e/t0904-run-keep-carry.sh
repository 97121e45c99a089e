#!/usr/bin/env bash
# Each repetition's worktree (git worktree add --detach of HEAD) gets the project's
# uncommitted hook settings and gate files carried in, with the project's absolute path
# rewritten to /work; a committed file is never replaced, its paths are still rewritten; the
# output names every file carried in or rewritten. --keep leaves the worktrees (paths in
# rep.json); without it, none is left.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

make_project "$TMP/p"
P=$(cd "$TMP/p" && pwd -P)
export P
mkdir -p "$P/.claude" "$P/.faultline"
printf '{"hooks": "%s/.faultline/gate.sh", "other": "%s2/x"}\n' "$P" "$P" >"$P/.claude/settings.json"
write_exp "$P/exp.yaml" carry \
    "cat .claude/settings.json .claude/settings.local.json .faultline/gate.sh; pwd; git status --porcelain >/dev/null 2>&1 || true" \
    "test -f .faultline/gate.sh"
commit "$P"
printf '{"local": "%s", "cmd": "%s/.faultline/gate.sh"}\n' "$P" "$P" >"$P/.claude/settings.local.json"
printf '#!/bin/sh\n# gate at %s/.faultline\nexit 0\n' "$P" >"$P/.faultline/gate.sh"
echo '{"committed": "untouched"}' >"$TMP/committed.json"
cd "$TMP"

test_expect "carried in and rewritten; the committed file rewritten, not replaced" '
    rc=0; "$FAULTLINE" run p/exp.yaml --keep --out out/k.json >run.out 2>run.err || rc=$?
    test "$rc" = 2 || { echo "exit $rc"; cat run.err; exit 1; }  # no model call: no fault fired
    grep -q "rep 0: rewrote .claude/settings.json (1 path to /work)" run.err
    grep -q "rep 0: carried in .claude/settings.local.json (2 paths rewritten to /work)" run.err
    grep -q "rep 0: carried in .faultline/gate.sh (1 path rewritten to /work)" run.err
    o=out/k/rep-000/agent.out
    grep -q "{\"hooks\": \"/work/.faultline/gate.sh\", \"other\": \"${P}2/x\"}" $o
    grep -q "{\"local\": \"/work\", \"cmd\": \"/work/.faultline/gate.sh\"}" $o
    grep -q "# gate at /work/.faultline" $o
    grep -qx /work $o
    test "$(jq -r .exit_code out/k/rep-000/verify.json)" = 0
    # the project itself is untouched
    grep -q "$P/.faultline/gate.sh" p/.claude/settings.json
    grep -q "\"local\": \"$P\"" p/.claude/settings.local.json
'

test_expect "--keep leaves each worktree, named in rep.json and in git worktree list" '
    for r in rep-000 rep-001; do
        w=$(jq -r .worktree out/k/$r/rep.json)
        test -d "$w"
        test -f "$w/.faultline/gate.sh"
        git -C p worktree list | grep -q "^$w "
    done
    for r in rep-000 rep-001; do git -C p worktree remove --force "$(jq -r .worktree out/k/$r/rep.json)"; done
    test "$(git -C p worktree list | wc -l)" = 1
    rm -rf "$TMPDIR"/faultline-run.*
'

test_expect "without --keep no worktree is left" '
    rc=0; "$FAULTLINE" run p/exp.yaml --out out/n.json >run.out 2>run.err || rc=$?
    test "$rc" = 2
    test "$(jq -r .worktree out/n/rep-000/rep.json)" = null
    no_leftovers p "$TMP/out/n"
'
test_done
