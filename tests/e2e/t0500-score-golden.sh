#!/usr/bin/env bash
# t0500-score-golden: `faultline score --json` over every golden case in tests/data/score/<case>/
# and a diff with what the case expects. A case is files only:
#
#   run/             the run folder (docs/run-folder.md)
#   expected.json    the expected stdout of `faultline score run --json` (absent: expect none)
#   expected.exit    the expected exit code (0 scored, 1 aborted or unreadable, 2 invalid)
#   expected.stderr  optional: the expected stderr (for folders that cannot be read)
#
# The command runs inside the case folder with the relative path `run`, so output never holds
# an absolute path. Regenerating expected output is deliberate, never automatic:
#
#   tests/e2e/t0500-score-golden.sh --regenerate [CASE...]
#
# rewrites the expected files of the named cases (all when none is named) from the current
# binary; review `git diff tests/data/score` before committing.
. "$(dirname "$0")/lib.sh"

cases_dir="$FAULTLINE_ROOT/tests/data/score"
export cases_dir

run_case() { # CASE OUTDIR: runs the scorer on one case, leaving stdout, stderr, exit in OUTDIR
    local rc=0
    (cd "$cases_dir/$1" && "$FAULTLINE" score run --json >"$2/stdout" 2>"$2/stderr") || rc=$?
    echo "$rc" >"$2/exit"
}
export -f run_case

if [ "${1:-}" = "--regenerate" ]; then
    shift
    names=("$@")
    [ ${#names[@]} -gt 0 ] || names=($(ls "$cases_dir"))
    for c in "${names[@]}"; do
        [ -d "$cases_dir/$c/run" ] || { echo "no case '$c'" >&2; exit 2; }
        o="$TMP/$c"; mkdir -p "$o"
        run_case "$c" "$o"
        if [ -s "$o/stdout" ]; then cp "$o/stdout" "$cases_dir/$c/expected.json"; else rm -f "$cases_dir/$c/expected.json"; fi
        cp "$o/exit" "$cases_dir/$c/expected.exit"
        if [ -s "$o/stderr" ]; then cp "$o/stderr" "$cases_dir/$c/expected.stderr"; else rm -f "$cases_dir/$c/expected.stderr"; fi
        echo "regenerated $c (exit $(cat "$o/exit"))"
    done
    exit 0
fi

n=0
for d in "$cases_dir"/*/; do
    c=$(basename "$d")
    [ -d "$d/run" ] || continue
    n=$((n + 1))
    test_expect "score golden: $c" '
        o="$TMP/'"$c"'"; mkdir -p "$o"
        run_case '"$c"' "$o"
        want_exit=$(cat "'"$d"'expected.exit")
        got_exit=$(cat "$o/exit")
        [ "$got_exit" = "$want_exit" ] || { echo "exit $got_exit, expected $want_exit"; cat "$o/stderr"; exit 1; }
        if [ -f "'"$d"'expected.json" ]; then
            diff -u "'"$d"'expected.json" "$o/stdout"
        else
            [ ! -s "$o/stdout" ] || { echo "unexpected stdout:"; cat "$o/stdout"; exit 1; }
        fi
        if [ -f "'"$d"'expected.stderr" ]; then diff -u "'"$d"'expected.stderr" "$o/stderr"; fi
    '
done
test_expect "golden cases exist" "[ $n -ge 15 ]"

# Determinism: the same folder scores to the same bytes, and a copy elsewhere too.
test_expect "scoring is deterministic and path-independent" '
    c=$(ls "'"$cases_dir"'" | head -n 1)
    (cd "'"$cases_dir"'/$c" && "$FAULTLINE" score run --json >"$TMP/a.json"; true)
    cp -R "'"$cases_dir"'/$c/run" "$TMP/copy"
    (cd "$TMP" && "$FAULTLINE" score copy --json >"$TMP/b.json"; true)
    cmp "$TMP/a.json" "$TMP/b.json"
'

test_expect "the text summary names the verdict and the score" '
    out=$(cd "'"$cases_dir"'/all-pass" && "$FAULTLINE" score run) || true
    echo "$out" | grep -q "scored (exit 0)"
    echo "$out" | grep -q "resilience score: 100.00"
'

test_expect "usage errors exit 64 (never a verdict code), an unreadable folder exits 1" '
    set +e
    "$FAULTLINE" score >/dev/null 2>&1; a=$?
    "$FAULTLINE" score a b >/dev/null 2>&1; b=$?
    "$FAULTLINE" score --bogus x >/dev/null 2>&1; c=$?
    "$FAULTLINE" score "$TMP/nonexistent" --json >/dev/null 2>"$TMP/err"; d=$?
    set -e
    [ $a = 64 ]
    [ $b = 64 ]
    [ $c = 64 ]
    [ $d = 1 ]
    grep -q "no run.json" "$TMP/err"
'

test_done
