#!/usr/bin/env bash
# t1301-report-run-gates: `faultline run` writes every format next to its JSON report
# (report.html, report.md, report.junit.xml, report.badge.svg) and says where the HTML page
# is; its CI gates (--min-score, --min-pass-rate, --fail-on) exit 8 when they fail, 0 when they
# hold, and a bad gate value is a usage error (64) before anything runs.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
make_project "$TMP/p"
write_exp "$TMP/p/exp.yaml" gates "$RUN_AGENT" "true"
commit "$TMP/p"
cd "$TMP"

# run NAME FLAGS...: a run with its report at out/NAME.json; its exit code in NAME.rc
run() {
    local name=$1 rc=0
    shift
    timeout 60 "$FAULTLINE" run p/exp.yaml --out "$TMP/out/$name.json" "$@" >"$name.out" 2>"$name.err" || rc=$?
    echo "$rc" >"$name.rc"
}
run plain
run pass --quiet --min-score 50 --min-pass-rate task_success=1 --min-pass-rate failure_surfaced=0
run score --quiet --min-score 60
run rate --quiet --min-pass-rate failure_surfaced=0.5
run class --quiet --fail-on SILENT_FAILURE,SAFE_SUCCESS

test_expect "the run writes every format next to its report, and says where the HTML page is" '
    test "$(cat plain.rc)" = 0 || { cat plain.err; exit 1; }
    for f in json html md junit.xml badge.svg; do test -s out/plain.$f || { echo "no plain.$f"; exit 1; }; done
    grep -q "^faultline run: html report $TMP/out/plain.html\$" plain.err
    xmllint --noout out/plain.html
    xmllint --noout --schema "$FAULTLINE_ROOT/tests/data/junit/junit.xsd" out/plain.junit.xml
    test "$(xmllint --xpath "string(//header//span[@class=\"score\"])" out/plain.html)" = "$(printf "%.2f" "$(jq .resilience_score out/plain.json)")"
    grep -q "^## faultline: gates" out/plain.md
    diff <("$FAULTLINE" report out/plain.json --format md) out/plain.md
'

test_expect "gates that hold: exit 0" '
    test "$(cat pass.rc)" = 0 || { cat pass.err; exit 1; }
    refute grep -q "gate failed" pass.err
'

test_expect "--min-score over the score: exit 8, saying why" '
    test "$(jq .resilience_score out/score.json)" = 50
    test "$(cat score.rc)" = 8
    grep -q "^faultline run: gate failed: resilience score 50.00 is under --min-score 60\$" score.err
    test -s out/score.html
'

test_expect "--min-pass-rate over a probe's pass rate: exit 8, saying why" '
    test "$(cat rate.rc)" = 8
    grep -q "^faultline run: gate failed: probe failure_surfaced passed 0 of 1 (0), under --min-pass-rate failure_surfaced=0.5\$" rate.err
'

test_expect "--fail-on a class a repetition ended in: exit 8, saying which" '
    test "$(cat class.rc)" = 8
    grep -q "^faultline run: gate failed: rep 0 ended SAFE_SUCCESS (--fail-on)\$" class.err
'

test_expect "a bad gate value is a usage error before anything runs (exit 64)" '
    for flags in "--min-score 101" "--min-score x" "--min-pass-rate nope=1" "--min-pass-rate task_success=2" \
        "--min-pass-rate task_success" "--fail-on SAFE_SUCCESS,BOGUS"; do
        rc=0; "$FAULTLINE" run p/exp.yaml --out "$TMP/out/bad.json" $flags 2>bad.err || rc=$?
        test "$rc" = 64 || { echo "$flags: exit $rc"; cat bad.err; exit 1; }
        test ! -e out/bad
    done
    grep -q "BOGUS" bad.err
'

test_done
