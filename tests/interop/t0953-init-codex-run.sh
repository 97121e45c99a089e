#!/usr/bin/env bash
# A new user's first Codex run, as the docs tell it: `faultline init --agent codex`, `faultline
# connect codex`, `faultline run`, offline, with the real Codex CLI. The experiment init writes
# must run as it is: Codex gets tools from the mock (init names gpt-5.5; with Codex's default
# model it offered none), and the gate `connect` wrote with this binary's host path runs in the
# sandbox (the carry-in points it at the sandbox's faultline; Codex reads it because init's
# command trusts the workspace and bypasses hook trust), so every exec_command call is decided
# by the gate.
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
chmod 711 "$TMP" # the sandbox (a user namespace) must reach the run folder below it
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
NM=$(cd "$FAULTLINE_ROOT/tests/interop/node_modules" && pwd -P)
export NM

mkdir -p "$TMP/p"
git -C "$TMP/p" init -q
echo "a project" >"$TMP/p/README"
git -C "$TMP/p" add README
git -C "$TMP/p" -c user.name=t -c user.email=t@localhost commit -qm init

test_expect "init, connect, run: codex's first run is scored and the task done in the baseline" '
    test -x "$NM/.bin/codex" || { echo "codex missing: run scripts/bootstrap"; exit 1; }
    cd p
    "$FAULTLINE" init --agent codex --fault llm.upstream_5xx >../init.out
    "$FAULTLINE" connect codex >../connect.out
    rc=0; timeout 400 "$FAULTLINE" run faultline/llm.upstream_5xx.yaml --ro-path "$NM" --out "$TMP/r.json" >../run.out 2>../run.err || rc=$?
    test "$(jq -r .verdict "$TMP/r.json")" = scored || { echo "rc $rc"; tail -n 20 ../run.err; ls "$TMP/r/rep-000"; tail -n 20 "$TMP"/r/rep-000/*.err "$TMP"/r/rep-000/sandbox* 2>/dev/null; exit 1; }
    test "$(jq -r ".repetitions[0].verify.exit_code" "$TMP/r.json")" = 0
'

test_expect "the gate decided the exec_command call of the baseline" '
    jq -s -e "[.[] | select(.kind==\"gate_decision\")] | length >= 1 and all(.[]; .tool==\"Bash\" and .decision==\"allow\")" "$TMP/r/rep-000/events.jsonl"
    jq -s -e "[.[] | select(.kind==\"model_request\")] | .[0].tools > 0" "$TMP/r/rep-000/events.jsonl"
'
test_done
