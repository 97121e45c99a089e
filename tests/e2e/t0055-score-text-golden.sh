#!/usr/bin/env bash
# t0055-score-text-golden: `faultline score` (the text summary, no --json) over every golden
# case in tests/data/score/<case>/ against its expected.txt (absent: expect no stdout). The
# text renderer reads the same struct score_result as the JSON one; this keeps its output
# byte for byte. Regenerate deliberately, as for t0500:
#   (cd tests/data/score/CASE && faultline score run > expected.txt)
. "$(dirname "$0")/lib.sh"

cases_dir="$FAULTLINE_ROOT/tests/data/score"

n=0
for d in "$cases_dir"/*/; do
    c=$(basename "$d")
    [ -d "$d/run" ] || continue
    n=$((n + 1))
    test_expect "score text golden: $c" '
        o="$TMP/'"$c"'"; mkdir -p "$o"
        rc=0
        (cd "'"$d"'" && timeout 30 "$FAULTLINE" score run >"$o/stdout" 2>"$o/stderr") || rc=$?
        want_exit=$(cat "'"$d"'expected.exit")
        [ "$rc" = "$want_exit" ] || { echo "exit $rc, expected $want_exit"; cat "$o/stderr"; exit 1; }
        if [ -f "'"$d"'expected.txt" ]; then
            diff -u "'"$d"'expected.txt" "$o/stdout"
        else
            [ ! -s "$o/stdout" ] || { echo "unexpected stdout:"; cat "$o/stdout"; exit 1; }
        fi
    '
done
test_expect "text golden cases exist" "[ $n -ge 15 ]"
test_expect "most cases have a text summary" "[ \$(ls '$cases_dir'/*/expected.txt | wc -l) -ge 15 ]"

test_done
