#!/usr/bin/env bash
# t1310-report-compare: `faultline compare A B` over real runs of the mock model. Run A's agent
# prints its canary (failure_surfaced passes: score 100) and the mock answers briefly; run B, of
# the same experiment after a commit, prints nothing of it (score 50) and the mock answers with
# 5000 tokens (its cost many times A's). A and B may be history run ids, report files or run
# folders; the figures come side by side with the change (text, --json, --format md);
# --max-score-drop and --max-cost-increase make it a gate that exits 8 naming what was
# exceeded; runs of different experiments are compared with a warning; bad input is one line
# and exit 1.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
make_project "$TMP/p"
printf 'echo "canary: $FAULTLINE_CANARY"\n%s\n' "$RUN_AGENT" >"$TMP/p/agent.sh"
write_exp "$TMP/p/exp.yaml" cmp "sh agent.sh" "true"
write_exp "$TMP/p/other.yaml" cmp-other "sh agent.sh" "true"
commit "$TMP/p"
cd "$TMP"

# run NAME EXP: a quiet run with its report at out/NAME.json; its exit code in NAME.rc
run() {
    local rc=0
    timeout 60 "$FAULTLINE" run "p/$2" --out "$TMP/out/$1.json" --quiet >"$1.out" 2>"$1.err" || rc=$?
    echo "$rc" >"$1.rc"
}
run a exp.yaml
printf '%s\n' "$RUN_AGENT" >p/agent.sh
cp p/pricey.yaml p/hello.yaml
commit p
run b exp.yaml
run c other.yaml

# cmp ARGS...: faultline compare ARGS, stdout in cmp.out, stderr in cmp.err, exit code in $rc
cmp_() {
    rc=0
    "$FAULTLINE" compare "$@" >cmp.out 2>cmp.err || rc=$?
}
export -f cmp_

test_expect "the runs: A scores 100, B 50 and costs more, both recorded in the history" '
    for n in a b c; do test "$(cat $n.rc)" = 0 || { cat $n.err; exit 1; }; done
    test "$(jq .resilience_score out/a.json)" = 100
    test "$(jq .resilience_score out/b.json)" = 50
    test "$(jq .experiment.hash out/a.json)" = "$(jq .experiment.hash out/b.json)"
    test "$("$FAULTLINE" history --json | jq -r "[.[].report] | join(\" \")")" = "$TMP/out/c.json $TMP/out/b.json $TMP/out/a.json"
'

test_expect "two reports side by side: score, probes, outcomes, cost, multiplier, tokens, change" '
    cmp_ out/a.json out/b.json
    test $rc = 0 || { cat cmp.err; exit 1; }
    test ! -s cmp.err
    grep -q "^A  out/a.json: cmp (scored, complete)\$" cmp.out
    grep -q "^B  out/b.json: cmp (scored, complete)\$" cmp.out
    grep -Eq "^resilience score +100.00 +50.00  -50.00\$" cmp.out
    grep -Eq "^probe failure_surfaced +1/1 1.0000 +0/1 0.0000  -1.0000\$" cmp.out
    grep -Eq "^probe task_success +1/1 1.0000 +1/1 1.0000  \+0.0000\$" cmp.out
    grep -Eq "^cost USD +[0-9.]+ +[0-9.]+  \+[0-9.]+ \(\+[0-9.]+%\)\$" cmp.out
    grep -Eq "^cost multiplier +[0-9.]+x +[0-9.]+x " cmp.out
    grep -Eq "^output tokens +[0-9]+ +10000  \+[0-9]+\$" cmp.out
    refute grep -q "warning" cmp.out
'

test_expect "--json: the figures as {a, b, change}, the same as the reports hold" '
    cmp_ out/a.json out/b.json --json
    test $rc = 0
    jq -e ".resilience_score == {\"a\": 100, \"b\": 50, \"change\": -50}" cmp.out
    jq -e "[.probes[] | select(.id == \"failure_surfaced\") | .pass_rate] == [{\"a\": 1, \"b\": 0, \"change\": -1}]" cmp.out
    a=$(jq "[.repetitions[].cost_usd] | add" out/a.json); b=$(jq "[.repetitions[].cost_usd] | add" out/b.json)
    jq -e --argjson a "$a" --argjson b "$b" ".cost_usd.a == \$a and .cost_usd.b == \$b and .cost_usd.change_pct > 1000" cmp.out
    ta=$(jq -s "[.[] | select(.kind == \"model_response\") | .usage.output_tokens] | add" out/a/rep-*/events.jsonl)
    jq -e --argjson t "$ta" ".tokens.output.a == \$t and .tokens.output.b == 10000" cmp.out
    jq -e ".outcomes | keys | length == 6" cmp.out
    jq -e ".same_experiment and .warnings == [] and .gate_failed == []" cmp.out
    jq -e ".a.source == \"out/a.json\" and .b.experiment == \"cmp\" and .a.run_dir == \"$TMP/out/a\"" cmp.out
'

test_expect "a run id of the history, a report file and a run folder give the same figures" '
    ida=$("$FAULTLINE" history --json | jq ".[] | select(.report == \"$TMP/out/a.json\") | .id")
    cmp_ "$ida" out/b --json
    test $rc = 0 || { cat cmp.err; exit 1; }
    jq -e ".a.source == \"run $ida\" and .b.source == \"out/b\"" cmp.out
    jq "del(.a, .b)" cmp.out >ids.json
    cmp_ out/a.json out/b.json --json
    jq "del(.a, .b)" cmp.out >files.json
    diff ids.json files.json
'

test_expect "--max-score-drop and --max-cost-increase: exit 8 naming each budget exceeded" '
    cmp_ out/a.json out/b.json --max-score-drop 10 --max-cost-increase 50%
    test $rc = 8
    test "$(wc -l <cmp.err)" = 2
    grep -q "^faultline compare: gate failed: resilience score dropped 50.00 points (100.00 to 50.00), over --max-score-drop 10\$" cmp.err
    grep -Eq "^faultline compare: gate failed: cost rose [0-9.]+% \(0.[0-9]+ to 0.[0-9]+ USD\), over --max-cost-increase 50%\$" cmp.err
    grep -q "^resilience score" cmp.out
    cmp_ out/a.json out/b.json --max-cost-increase 50 --json
    test $rc = 8
    jq -e ".gate_failed | length == 1 and (.[0] | startswith(\"cost rose\"))" cmp.out
'

test_expect "budgets that hold exit 0: a drop within it, a score that rose, a cost that fell" '
    cmp_ out/a.json out/b.json --max-score-drop 50 --max-cost-increase 1000000000
    test $rc = 0 || { cat cmp.err; exit 1; }
    test ! -s cmp.err
    cmp_ out/b.json out/a.json --max-score-drop 0 --max-cost-increase 0
    test $rc = 0 || { cat cmp.err; exit 1; }
    grep -Eq "^resilience score +50.00 +100.00  \+50.00\$" cmp.out
'

test_expect "runs of different experiments are compared, with a warning line" '
    cmp_ out/a.json out/c.json
    test $rc = 0 || { cat cmp.err; exit 1; }
    grep -q "^warning: comparing runs of different experiments: .cmp. (A) and .cmp-other. (B)\$" cmp.out
    cmp_ out/a.json out/c.json --json
    jq -e "(.same_experiment | not) and (.warnings | length == 1)" cmp.out
    cmp_ out/a.json out/c.json --format md
    grep -q "^- \*\*warning\*\*: comparing runs of different experiments" cmp.out
'

test_expect "--format md: a table, every row with its four cells" '
    cmp_ out/a.json out/b.json --format md
    test $rc = 0
    grep -q "^## faultline compare\$" cmp.out
    grep -qx "| figure | A | B | change |" cmp.out
    grep -qx "| --- | ---: | ---: | ---: |" cmp.out
    n=$(grep -c "^|" cmp.out)
    test "$(grep "^|" cmp.out | awk -F"|" "NF == 6" | wc -l)" = "$n"
    grep -qx "| resilience score | 100.00 | 50.00 | -50.00 |" cmp.out
    grep -qx "| probe failure\\\\_surfaced | 1/1 1.0000 | 0/1 0.0000 | -1.0000 |" cmp.out
'

test_expect "bad input: one line naming it, exit 1 (a full stdout too); bad flags exit 64" '
    jq ".format = 2" out/a.json >fmt2.json
    printf "{\"format\": 1,\n  \"result\": x}\n" >broken.json
    echo "{\"format\": 1}" >noresult.json
    mkdir empty
    for args in "nope.json out/b.json:cannot read .nope.json.: no such file or folder" \
        "out/a.json 999:run 999 is not in the history .$TMP/state/faultline/history.db." \
        "fmt2.json out/b.json:.fmt2.json. is a report of format 2; this faultline reads format 1" \
        "out/a.json broken.json:broken.json:2:13: " \
        "noresult.json out/a.json:.noresult.json. is not a faultline report (format 1 with a result)" \
        "out/a.json empty:cannot score .empty.: it has no run.json"; do
        a=${args%%:*}; want=${args#*:}
        cmp_ $a
        test $rc = 1 || { echo "$a: exit $rc"; cat cmp.err; exit 1; }
        test "$(wc -l <cmp.err)" = 1 || { echo "$a:"; cat cmp.err; exit 1; }
        grep -q "^faultline compare: $want" cmp.err || { echo "$a:"; cat cmp.err; exit 1; }
        test ! -s cmp.out
    done
    cmp_ 1 2 --history "$TMP/none.db"
    test $rc = 1
    grep -q "^faultline compare: run 1 is not in the history: there is no database .$TMP/none.db.\$" cmp.err
    test ! -e none.db
    rc=0; "$FAULTLINE" compare out/a.json out/b.json >/dev/full 2>cmp.err || rc=$?
    test $rc = 1
    grep -qx "faultline compare: cannot write to stdout" cmp.err
    rc=0; "$FAULTLINE" compare out/a.json out/b.json --max-score-drop 0 >/dev/full 2>cmp.err || rc=$?
    test $rc = 1
    for flags in "out/a.json" "out/a.json out/b.json --format html" "out/a.json out/b.json --max-cost-increase lots" \
        "out/a.json out/b.json --max-score-drop 101" "out/a.json out/b.json --max-cost-increase %"; do
        cmp_ $flags
        test $rc = 64 || { echo "$flags: exit $rc"; cat cmp.err; exit 1; }
    done
'

test_done
