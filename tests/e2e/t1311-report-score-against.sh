#!/usr/bin/env bash
# t1311-report-score-against: `faultline score RUN_DIR --against REPORT.json` regrades a run
# folder that `faultline run` wrote and compares it with the stored report: exit 0 when every
# figure is the same; exit 3 and one line per figure that differs (its path, the stored and the
# regraded value) when the stored report says otherwise (a report an older scorer wrote, here
# edited) or the folder changed since; --json for machines; a report that cannot be read or is
# of another format is one line and exit 1, never a verdict's code.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
make_project "$TMP/p"
printf 'echo "canary: $FAULTLINE_CANARY"\n%s\n' "$RUN_AGENT" >"$TMP/p/agent.sh"
write_exp "$TMP/p/exp.yaml" drift "sh agent.sh" "true"
commit "$TMP/p"
cd "$TMP"
rc=0
timeout 60 "$FAULTLINE" run p/exp.yaml --out "$TMP/out/r.json" --quiet >run.out 2>run.err || rc=$?
echo "$rc" >run.rc

# against RUN_DIR REPORT [FLAGS]: stdout in a.out, stderr in a.err, exit code in $rc
against() {
    rc=0
    "$FAULTLINE" score "$1" --against "$2" "${@:3}" >a.out 2>a.err || rc=$?
}
export -f against

test_expect "the stored report of a fresh run: identical, exit 0, nothing on stdout" '
    test "$(cat run.rc)" = 0 || { cat run.err; exit 1; }
    test "$(jq .resilience_score out/r.json)" = 100
    against out/r out/r.json
    test $rc = 0 || { cat a.out a.err; exit 1; }
    test ! -s a.out
    grep -Eq "^faultline score: the regrade of .out/r. matches .out/r.json. \([0-9]+ figures\)\$" a.err
    against out/r out/r.json --json
    test $rc = 0
    jq -e ".identical and .differences == [] and .figures > 100" a.out
'

test_expect "figures a stored report holds otherwise: exit 3, one line each, path stored regraded" '
    jq ".result.probes |= map(if .id == \"task_success\" then .pass_rate = 0.5 else . end)
        | .result.repetitions[1].outcome = \"SILENT_FAILURE\" | .resilience_score = 75
        | .result.warnings = [\"old\"]" out/r.json >old.json
    against out/r old.json
    test $rc = 3 || { cat a.out a.err; exit 1; }
    test "$(wc -l <a.out)" = 4 || { cat a.out; exit 1; }
    grep -qx "result.probes\[task_success\].pass_rate: stored 0.5, regraded 1.0" a.out
    grep -qx "result.repetitions\[1\].outcome: stored \"SILENT_FAILURE\", regraded \"$(jq -r .result.repetitions[1].outcome out/r.json)\"" a.out
    grep -qx "resilience_score: stored 75, regraded 100.0" a.out
    grep -qx "result.warnings\[0\]: stored \"old\", regraded absent" a.out
    grep -q "^faultline score: 4 of the [0-9]* figures of .old.json. differ from the regrade of .out/r. (scorer drift)\$" a.err
    against out/r old.json --json
    test $rc = 3
    jq -e "(.identical | not) and (.differences | length == 4)" a.out
    jq -e ".differences[] | select(.path == \"result.probes[task_success].pass_rate\") | .stored == 0.5 and .regraded == 1" a.out
    jq -e ".differences[] | select(.path == \"result.warnings[0]\") | (has(\"regraded\") | not)" a.out
'

test_expect "a run folder that changed since its report: the regrade names what moved" '
    cp -r out/r changed
    sed -i "s/E-FAULTLINE-[0-9a-f]*/(gone)/g" changed/rep-001/agent.out
    against changed out/r.json
    test $rc = 3 || { cat a.out a.err; exit 1; }
    grep -qx "result.probes\[failure_surfaced\].pass_rate: stored 1.0, regraded 0.0" a.out
    grep -qx "resilience_score: stored 100.0, regraded 50.0" a.out
    grep -q "^result.repetitions\[1\].probes\[failure_surfaced\].result: stored \"pass\", regraded \"fail\"\$" a.out
'

test_expect "an unreadable report or folder: one line, exit 1 (not a verdict code)" '
    jq ".format = 2" out/r.json >fmt2.json
    printf "[1,\n" >bad.json
    against out/r fmt2.json
    test $rc = 1
    grep -qx "faultline score: .fmt2.json. is a report of format 2; this faultline reads format 1" a.err
    against out/r bad.json
    test $rc = 1
    grep -q "^faultline score: bad.json:2:" a.err
    test "$(wc -l <a.err)" = 1
    against out/r nope.json
    test $rc = 1
    test "$(wc -l <a.err)" = 1
    grep -q "nope.json" a.err
    against nowhere out/r.json
    test $rc = 1
    test "$(wc -l <a.err)" = 1
    rc=0; "$FAULTLINE" score out/r --against 2>/dev/null || rc=$?
    test $rc = 64
'

test_done
