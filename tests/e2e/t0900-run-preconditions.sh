#!/usr/bin/env bash
# `faultline run` refuses to start, with a one-line reason and its own exit code, when a
# precondition fails (docs/run.md, docs/cli.md): an invalid experiment (3), an unhealthy
# sandbox backend (4), no git repository or a dirty working tree (5, naming the dirty paths),
# a mock script that is missing or does not load (6), a run folder that exists already (7);
# usage errors are 64. A refused run leaves nothing: no run folder, no workspace.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

test_expect "an invalid experiment: exit 3 with FILE:LINE:COL" '
    make_project p
    printf "name: Bad Name\nagent: x\n" >p/exp.yaml
    commit p
    rc=0; "$FAULTLINE" run p/exp.yaml --out r.json 2>err || rc=$?
    test "$rc" = 3
    grep -q "^p/exp.yaml:[0-9]*:[0-9]*: error:" err
    grep -q "^faultline run: refused: " err
    test "$(grep -c "refused" err)" = 1
    refute test -e r
'

test_expect "an experiment that cannot be read: exit 3" '
    rc=0; "$FAULTLINE" run missing.yaml 2>err || rc=$?
    test "$rc" = 3
    grep -q "refused: .*missing.yaml" err
'

test_expect "not in a git repository: exit 5" '
    make_project p
    rm -rf p/.git
    write_exp p/exp.yaml nogit "true" "true"
    rc=0; "$FAULTLINE" run p/exp.yaml --out r.json 2>err || rc=$?
    test "$rc" = 5
    grep -q "refused: .*not in a git repository" err
    refute test -e r
'

test_expect "a dirty working tree: exit 5, naming each dirty path; carried-in files do not count" '
    make_project p
    write_exp p/exp.yaml dirty "true" "true"
    echo one >p/tracked.txt
    commit p
    echo two >p/tracked.txt
    echo new >p/untracked.txt
    mkdir -p p/.claude p/.faultline && echo "{}" >p/.claude/settings.local.json && echo x >p/.faultline/gate.sh
    rc=0; "$FAULTLINE" run p/exp.yaml --out r.json 2>err || rc=$?
    test "$rc" = 5
    grep -q "refused: the working tree of .* is not clean" err
    grep -q "tracked.txt" err
    grep -q "untracked.txt" err
    refute grep -q "settings.local.json" err
    refute grep -q "gate.sh" err
    refute test -e r
    test "$(git -C p worktree list | wc -l)" = 1
'

test_expect "a clean tree with only carried-in files untracked is accepted past the tree check" '
    make_project p
    write_exp p/exp.yaml clean "true" "true" "model: {mock: nope.yaml}"
    commit p
    mkdir -p p/.claude && echo "{}" >p/.claude/settings.local.json
    rc=0; "$FAULTLINE" run p/exp.yaml --out r.json 2>err || rc=$?
    test "$rc" = 6
'

test_expect "a missing mock script: exit 6" '
    make_project p
    write_exp p/exp.yaml nomock "true" "true" "model: {mock: nope.yaml}"
    commit p
    rc=0; "$FAULTLINE" run p/exp.yaml --out r.json 2>err || rc=$?
    test "$rc" = 6
    grep -q "refused: .*nope.yaml" err
    refute test -e r
'

test_expect "a mock script that does not load: exit 6 with its position" '
    make_project p
    printf "rules: [oops\n" >p/bad.yaml
    write_exp p/exp.yaml badmock "true" "true" "model: {mock: bad.yaml}"
    commit p
    rc=0; "$FAULTLINE" run p/exp.yaml --out r.json 2>err || rc=$?
    test "$rc" = 6
    grep -q "refused: .*bad.yaml" err
'

test_expect "a paid model without its key: exit 6, saying how to run offline" '
    make_project p
    write_exp p/exp.yaml paid "true" "true" "model: anthropic"
    write_exp p/exp2.yaml paid2 "true" "true" "model: openai"
    commit p
    rc=0; env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY "$FAULTLINE" run p/exp.yaml --out paid.json 2>err || rc=$?
    test "$rc" = 6
    grep -q "refused: no ANTHROPIC_API_KEY in the environment for model .anthropic.: set it, or run offline with .model: {mock: SCRIPT}." err
    rc=0; env -u OPENAI_API_KEY ANTHROPIC_API_KEY=x "$FAULTLINE" run p/exp2.yaml --out paid.json 2>err || rc=$?
    test "$rc" = 6
    grep -q "no OPENAI_API_KEY" err
    refute test -e paid
'

test_expect "a run folder that exists already: exit 7, and it is not touched" '
    make_project p
    write_exp p/exp.yaml exists "true" "true"
    commit p
    mkdir r && echo keep >r/mine
    rc=0; "$FAULTLINE" run p/exp.yaml --out r.json 2>err || rc=$?
    test "$rc" = 7
    grep -q "refused: the run folder .*r. already exists" err
    test "$(cat r/mine)" = keep
    test "$(ls r)" = mine
'

test_expect "as root, a TMPDIR the sandbox cannot reach: exit 7 naming the directory, nothing made" '
    make_project p
    write_exp p/exp.yaml unreachable "true" "true"
    commit p
    mkdir -p shut/tmp && chmod 700 shut
    rc=0; TMPDIR="$PWD/shut/tmp" "$FAULTLINE" run p/exp.yaml --out unreachable.json 2>err || rc=$?
    if [ "$(id -u)" != 0 ]; then
        # unprivileged, the sandbox maps this user to itself: the owner passes through
        if grep -q "cannot reach TMPDIR" err; then cat err; exit 1; fi
        exit 0
    fi
    test "$rc" = 7
    grep -q "refused: the sandbox cannot reach TMPDIR .*shut/tmp.: .*shut. is mode 0700" err
    test -z "$(ls shut/tmp)"
    refute test -e unreachable
'

test_expect "an unhealthy sandbox backend: exit 4, never a run on the host" '
    make_project p
    write_exp p/exp.yaml nosandbox "touch ran-on-host" "true"
    commit p
    rc=0; env PATH=/nonexistent "$FAULTLINE" run p/exp.yaml --out unhealthy.json 2>err || rc=$?
    test "$rc" = 4
    grep -q "refused: .*bwrap" err
    refute test -e unhealthy
    refute test -e p/ran-on-host
'

test_expect "usage errors: exit 64" '
    rc=0; "$FAULTLINE" run 2>err || rc=$?
    test "$rc" = 64
    rc=0; "$FAULTLINE" run x.yaml --sandbox bogus 2>err || rc=$?
    test "$rc" = 64
    grep -q "expected native or oci" err
    rc=0; "$FAULTLINE" run x.yaml --model-upstream "ftp://x" 2>err || rc=$?
    test "$rc" = 64
    rc=0; "$FAULTLINE" run x.yaml --ro-path relative/dir 2>err || rc=$?
    test "$rc" = 64
'

test_expect "nothing is left in the temporary directory by refused runs" '
    test -z "$(ls "$TMPDIR")"
'
test_done
