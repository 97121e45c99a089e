#!/usr/bin/env bash
# t1031-run-gate-warning: `faultline run` warns once, before the first repetition, when the
# project has no gates (no hook settings run `faultline gate`) or the gates have no policy
# (neither the project's .faultline/policy.yaml nor the user's file exists); a project with a
# gate and a policy gets neither warning. The runs are the reference agent against the mock
# model (the warning is not a refusal: each is scored).
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
export HOME="$TMP/home" FAULTLINE_USER_POLICY="$TMP/home/no-such-policy.yaml"
mkdir -p "$HOME"

# project NAME: a project with one experiment (the reference agent saying hello)
project() {
    make_project "$TMP/$1"
    write_exp "$TMP/$1/exp.yaml" "$1" "$RUN_AGENT" "true"
}
project none
commit "$TMP/none"
project nopolicy
mkdir -p "$TMP/nopolicy/.claude"
printf '%s\n' '{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"faultline gate claude-code"}]}]}}' >"$TMP/nopolicy/.claude/settings.json"
commit "$TMP/nopolicy"
project governed
mkdir -p "$TMP/governed/.codex" "$TMP/governed/.faultline"
printf '%s\n' '{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"faultline gate codex"}]}]}}' >"$TMP/governed/.codex/hooks.json"
printf 'rules: []\n' >"$TMP/governed/.faultline/policy.yaml"
commit "$TMP/governed"
cd "$TMP"

test_expect "no gates: one warning that the project has no gates, and the run goes on" '
    timeout 120 "$FAULTLINE" run none/exp.yaml --out out/none.json >none.out 2>none.err
    test "$(jq -r .verdict out/none.json)" = scored
    test "$(grep -c "^faultline run: warning: the project has no gates" none.err)" = 1
    refute grep -q "the gates have no policy" none.err
'

test_expect "a gate without a policy file: the gates have no policy" '
    timeout 120 "$FAULTLINE" run nopolicy/exp.yaml --out out/np.json >np.out 2>np.err
    test "$(grep -c "^faultline run: warning: the gates have no policy" np.err)" = 1
    refute grep -q "has no gates" np.err
'

test_expect "a gate and the project policy: no warning" '
    timeout 120 "$FAULTLINE" run governed/exp.yaml --out out/gv.json >gv.out 2>gv.err
    test "$(jq -r .verdict out/gv.json)" = scored
    refute grep -q "warning: the" gv.err
'

test_expect "the user policy file counts as a policy" '
    printf "rules: []\n" >"$FAULTLINE_USER_POLICY"
    timeout 120 "$FAULTLINE" run nopolicy/exp.yaml --out out/np2.json >np2.out 2>np2.err
    refute grep -q "warning: the" np2.err
'
test_done
