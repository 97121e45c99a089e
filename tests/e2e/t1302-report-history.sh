#!/usr/bin/env bash
# t1302-report-history: `faultline run` records each run in the history database
# ($XDG_STATE_HOME/faultline/history.db by default, FAULTLINE_HISTORY or --history to move it,
# --no-history to skip); `faultline history` lists the runs newest first (--experiment,
# --limit, --json); a corrupt database is a warning and the run still succeeds, saying its
# history was not recorded.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
make_project "$TMP/p"
write_exp "$TMP/p/exp.yaml" hist-a "$RUN_AGENT" "true"
write_exp "$TMP/p/exp2.yaml" hist-b "$RUN_AGENT" "true"
commit "$TMP/p"
cd "$TMP"

# run NAME EXP FLAGS...: a quiet run, report out/NAME.json, exit code in NAME.rc
run() {
    local name=$1 exp=$2 rc=0
    shift 2
    timeout 60 "$FAULTLINE" run "p/$exp" --out "$TMP/out/$name.json" --quiet "$@" >"$name.out" 2>"$name.err" || rc=$?
    echo "$rc" >"$name.rc"
}
run one exp.yaml
run two exp2.yaml
run three exp.yaml
run skipped exp.yaml --no-history
FAULTLINE_HISTORY="$TMP/env.db" run env exp.yaml
run flag exp.yaml --history "$TMP/flag.db"
head -c 8192 /dev/urandom >corrupt.db
run corrupt exp.yaml --history "$TMP/corrupt.db"

test_expect "runs are recorded in \$XDG_STATE_HOME/faultline/history.db, listed newest first" '
    for n in one two three skipped; do test "$(cat $n.rc)" = 0 || { cat $n.err; exit 1; }; done
    test -s state/faultline/history.db
    "$FAULTLINE" history --json >all.json
    test "$(jq length all.json)" = 3
    test "$(jq -r "[.[].report] | join(\" \")" all.json)" = "$TMP/out/three.json $TMP/out/two.json $TMP/out/one.json"
    test "$(jq -r ".[0].verdict" all.json)" = "$(jq -r .verdict out/three.json)"
    test "$(jq -r ".[0].resilience_score" all.json)" = "$(jq -r .resilience_score out/three.json)"
    test "$(jq -r ".[0].experiment_hash" all.json)" = "$(jq -r .experiment.hash out/three.json)"
    test "$(jq -r ".[0].faultline_version" all.json)" = "$("$FAULTLINE" --version | cut -d" " -f2)"
    # the commit the repetitions ran on, and the tokens the model was sent and gave back
    test "$(jq -r ".[0].git_commit" all.json)" = "$(git -C p rev-parse HEAD)"
    test "$(jq -r ".[0].git_commit" all.json)" = "$(jq -r .experiment.commit out/three.json)"
    in=$(jq "[.repetitions[].tokens.input] | add" out/three.json)
    out=$(jq "[.repetitions[].tokens.output] | add" out/three.json)
    test "$in" -gt 0
    test "$out" -gt 0
    test "$(jq -r ".[0].input_tokens" all.json)" = "$in"
    test "$(jq -r ".[0].output_tokens" all.json)" = "$out"
    # the same usage the controller recorded in the events
    test "$(cat out/three/rep-*/events.jsonl | jq -s "[.[] | select(.kind == \"model_response\") | .usage.output_tokens] | add")" = "$out"
'

test_expect "history --experiment and --limit; the table for people" '
    "$FAULTLINE" history --json --experiment hist-b >b.json
    test "$(jq -r "[.[].experiment] | join(\" \")" b.json)" = hist-b
    "$FAULTLINE" history --json --limit 2 >l.json
    test "$(jq length l.json)" = 2
    "$FAULTLINE" history >table.txt
    test "$(wc -l <table.txt)" = 4
    head -1 table.txt | grep -q "^id .*experiment .*verdict .*score .*cost USD .*tokens .*commit .*outcomes"
    sed -n 2p table.txt | grep -q " $(git -C p rev-parse HEAD | cut -c1-7) "
    sed -n 2p table.txt | grep -q "hist-a .*scored"
'

test_expect "--no-history records nothing; FAULTLINE_HISTORY and --history move the database" '
    refute grep -q "$TMP/out/skipped.json" all.json
    test "$(cat env.rc)" = 0; test "$(cat flag.rc)" = 0
    test "$("$FAULTLINE" history --json --history env.db | jq -r ".[].report")" = "$TMP/out/env.json"
    test "$(FAULTLINE_HISTORY=$TMP/flag.db "$FAULTLINE" history --json | jq -r ".[].report")" = "$TMP/out/flag.json"
'

test_expect "a corrupt database: a warning, the run still succeeds and writes its report" '
    test "$(cat corrupt.rc)" = 0 || { cat corrupt.err; exit 1; }
    grep -q "^faultline run: warning: the run.s history was not recorded: history .$TMP/corrupt.db.: cannot open: file is not a database\$" corrupt.err
    test -s out/corrupt.json
    test -s out/corrupt.html
    rc=0; "$FAULTLINE" history --history corrupt.db 2>h.err || rc=$?
    test "$rc" = 1
    grep -q "file is not a database" h.err
    rc=0; "$FAULTLINE" history --limit 0 2>/dev/null || rc=$?
    test "$rc" = 64
'

test_done
