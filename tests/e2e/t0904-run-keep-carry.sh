#!/usr/bin/env bash
# Each repetition's workspace (a copy of the run's one-commit repository of HEAD) gets the
# project's uncommitted hook settings and gate files carried in, with the project's absolute
# path rewritten to /work; a committed file is never replaced, its paths are still rewritten;
# the output names every file carried in or rewritten. git works inside /work (the commit is
# HEAD, the tree clean but for what was carried in, no remote, no host path), and the project's
# repository gains nothing (no worktree entry). --keep leaves the workspaces (paths in
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
    "cat .claude/settings.json .claude/settings.local.json .faultline/gate.sh; pwd; echo head=\$(git rev-parse HEAD); git status --porcelain | sed s/^/status:/; echo remotes=\$(git remote | wc -l); cat .git/config .git/HEAD | sed s/^/gitmeta:/" \
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
    # git inside: HEAD is the project'"'"'s commit, the committed file shows as rewritten, the
    # carried-in ones as untracked, nothing else; no remote, no host path in its metadata
    grep -qx "head=$(git -C p rev-parse HEAD)" $o
    test "$(grep -c "^status:" $o)" = 3
    grep -qx "status: M .claude/settings.json" $o
    grep -qx "status:?? .claude/settings.local.json" $o
    grep -qx "status:?? .faultline/" $o
    grep -qx "remotes=0" $o
    grep -q "^gitmeta:" $o
    if grep "^gitmeta:" $o | grep -q "$P"; then echo "host path in .git"; exit 1; fi
    # the project itself is untouched
    grep -q "$P/.faultline/gate.sh" p/.claude/settings.json
    grep -q "\"local\": \"$P\"" p/.claude/settings.local.json
'

test_expect "--keep leaves each workspace, named in rep.json; the project gains no worktree" '
    for r in rep-000 rep-001; do
        w=$(jq -r .workspace out/k/$r/rep.json)
        test -d "$w"
        test -f "$w/.faultline/gate.sh"
        # (owned by the sandbox user when the runner is root: git asks for safe.directory)
        test "$(git -c safe.directory="$w" -C "$w" rev-parse HEAD)" = "$(git -C p rev-parse HEAD)"
    done
    test "$(git -C p worktree list | wc -l)" = 1
    rm -rf "$TMPDIR"/faultline-run.*
'

test_expect "without --keep no workspace is left" '
    rc=0; "$FAULTLINE" run p/exp.yaml --out out/n.json >run.out 2>run.err || rc=$?
    test "$rc" = 2
    test "$(jq -r .workspace out/n/rep-000/rep.json)" = null
    no_leftovers p "$TMP/out/n"
'
test_done
