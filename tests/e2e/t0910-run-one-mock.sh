#!/usr/bin/env bash
# One mock model serves every repetition of a mock run (a script answers each request alone):
# started once before the first repetition, its log in the run folder (mock.log), stopped at
# the end, with --jobs 1 and with --jobs 2 (forked repetitions share it).
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

make_project "$TMP/p"
write_exp "$TMP/p/exp.yaml" one-mock "$RUN_AGENT" "true"
sed -i 's/^repeat: 1$/repeat: 2/' "$TMP/p/exp.yaml"
commit "$TMP/p"
cd "$TMP"

for jobs in 1 2; do
test_expect "--jobs $jobs: one mock model for the 4 repetitions, its log in the run folder" '
    jobs='"$jobs"'
    rc=0
    timeout 120 "$FAULTLINE" run p/exp.yaml --quiet --jobs $jobs --out out$jobs/r.json \
        >run$jobs.out 2>run$jobs.err || rc=$?
    test "$rc" = 0 || { echo "exit $rc"; cat run$jobs.err; jq -c "{status, verdict, error}" out$jobs/r.json; exit 1; }
    test "$(jq "[.repetitions[] | select(.status == \"complete\")] | length" out$jobs/r.json)" = 4 ||
        { jq -c ".repetitions[] | [.status, .error]" out$jobs/r.json; exit 1; }
    for i in 000 001 002 003; do
        grep -q "hello from the mock model" out$jobs/r/rep-$i/agent.out ||
            { cat out$jobs/r/rep-$i/agent.out out$jobs/r/rep-$i/agent.err; exit 1; }
        refute test -e out$jobs/r/rep-$i/mock.log
    done
    test "$(grep -c "serving script" out$jobs/r/mock.log)" = 1 || { cat out$jobs/r/mock.log; exit 1; }
    test "$(grep -c "POST /v1/messages" out$jobs/r/mock.log)" -ge 4 || { cat out$jobs/r/mock.log; exit 1; }
    grep -q "stopping" out$jobs/r/mock.log || { cat out$jobs/r/mock.log; exit 1; }
    no_leftovers p "$TMP/out$jobs/r"
'
done
test_done
