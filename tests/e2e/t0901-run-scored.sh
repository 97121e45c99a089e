#!/usr/bin/env bash
# `faultline run` end to end in the sandbox, on the mock model: a scored verdict (exit 0), the
# run folder of docs/run-folder.md, the report (the same figures as `faultline score` on the
# run folder, valid against `faultline schema --report`, on stdout with --json, under $TMPDIR
# by default), the runner's own events, and what the agent sees: the controller's URLs, the
# run id and canary, only the named environment, and a placeholder key: a mock run never
# hands the user's API key to anything.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp" NM="$FAULTLINE_ROOT/tests/interop/node_modules"
mkdir -p "$TMPDIR"
export ANTHROPIC_API_KEY=sk-ant-api03-e2eRealKeyMustNeverLeaveXXXXXXXXXXXXXXXX
export OPENAI_API_KEY=sk-proj-e2eRealOpenAIKeyMustNeverLeaveXXXXXXXXXX
export NAMED_VAR=passed-in UNNAMED_VAR=must-not-be-seen

make_project "$TMP/p"
write_exp "$TMP/p/exp.yaml" scored \
    "echo \"key=\$ANTHROPIC_API_KEY okey=\$OPENAI_API_KEY named=\$NAMED_VAR unnamed=\${UNNAMED_VAR:-absent} run=\$FAULTLINE_RUN canary=\$FAULTLINE_CANARY sandbox=\$FAULTLINE_SANDBOX\"; echo \"urls=\$ANTHROPIC_BASE_URL \$OPENAI_BASE_URL \$FAULTLINE_CONTROL_URL\"; $RUN_AGENT" \
    "true" "env: [NAMED_VAR]"
commit "$TMP/p"
cd "$TMP"
rc=0
"$FAULTLINE" run p/exp.yaml --out "$TMP/out/report.json" >run.out 2>run.err || rc=$?
echo "$rc" >run.rc

test_expect "the run is scored (exit 0) and says where the report is" '
    test "$(cat run.rc)" = 0 || { cat run.err; exit 1; }
    test "$(jq -r .verdict out/report.json)" = scored
    grep -q "report $TMP/out/report.json" run.err
    grep -q "run folder $TMP/out/report\$" run.err
'

test_expect "the run folder has every file of docs/run-folder.md" '
    test "$(jq -r .status out/report/run.json)" = complete
    test "$(jq -r .experiment.name out/report/run.json)" = scored
    for r in rep-000 rep-001; do
        for f in plan.json events.jsonl agent.out agent.err verify.json rep.json proxy.log; do
            test -f out/report/$r/$f || { echo "no $r/$f"; exit 1; }
        done
    done
    test "$(jq -r .faulted out/report/rep-000/plan.json)" = false
    test "$(jq -r .faulted out/report/rep-001/plan.json)" = true
    test "$(jq -r .exit_code out/report/rep-001/verify.json)" = 0
    test "$(jq -r .status out/report/rep-001/rep.json)" = complete
    test "$(jq -r .agent.exit_code out/report/rep-001/rep.json)" = 0
'

test_expect "the report holds the same figures as faultline score on the run folder" '
    rc=0; "$FAULTLINE" score out/report --json >score.json || rc=$?
    test "$rc" = 0
    diff <(jq -S . score.json) <(jq -S .result out/report.json)
    test "$(jq -r .resilience_score out/report.json)" = "$(jq -r .resilience_score score.json)"
    test "$(jq ".repetitions | length" out/report.json)" = 2
    test "$(jq -r ".repetitions[1].canary" out/report.json)" = "$(jq -r .canary out/report/rep-001/plan.json)"
'

test_expect "the fault fired in the faulted repetition and the agent retried through it" '
    grep -q "\"kind\":\"fault_injected\"" out/report/rep-001/events.jsonl
    refute grep -q "\"kind\":\"fault_injected\"" out/report/rep-000/events.jsonl
    grep -q "hello from the mock model" out/report/rep-001/agent.out
    grep -q "hello from the mock model" run.out
'

test_expect "the runner writes agent_exit, verify and run_end, continuing the file order" '
    e=out/report/rep-001/events.jsonl
    test "$(jq -r "select(.kind==\"agent_exit\") | .exit_code" $e)" = 0
    test "$(jq -r "select(.kind==\"verify\") | .exit_code" $e)" = 0
    test "$(jq -r "select(.kind==\"run_end\") | .outcome" $e)" = completed
    test "$(jq -r "select(.kind==\"run_end\") | .src" $e)" = runner
    jq -s "[.[].seq] as \$s | \$s == (\$s | sort) and (\$s | unique | length) == (\$s | length)" $e | grep -qx true
'

test_expect "the runner's events match docs/events.md (t0031's check)" '
    sed -n "/^cat >\"\$TMP\/check.py\" <<.PY.\$/,/^PY\$/p" "$FAULTLINE_ROOT/tests/e2e/t0031-events-writers-match-doc.sh" |
        sed "1d;\$d" >check.py
    test -s check.py
    python3 check.py "$FAULTLINE_ROOT/docs/events.md" out/report/rep-000/events.jsonl out/report/rep-001/events.jsonl >kinds.txt
    for k in run_start agent_exit verify run_end; do grep -q "$k=2" kinds.txt || { cat kinds.txt; exit 1; }; done
'

test_expect "the agent sees the controller, run id, canary, the named variable, nothing else" '
    o=out/report/rep-001/agent.out
    grep -q "named=passed-in unnamed=absent" $o
    grep -q "run=$(jq -r .run out/report/rep-001/plan.json) canary=$(jq -r .canary out/report/rep-001/plan.json) sandbox=1" $o
    grep -Eq "^urls=http://127.0.0.1:([0-9]+) http://127.0.0.1:\1 http://127.0.0.1:\1\$" $o
'

test_expect "a mock run never hands the real API keys to anything" '
    grep -q "key=faultline-mock-key okey=faultline-mock-key" out/report/rep-000/agent.out
    refute grep -rq "e2eRealKeyMustNeverLeave" out
    refute grep -rq "e2eRealOpenAIKeyMustNeverLeave" out
    refute grep -q "e2eRealKeyMustNeverLeave" run.out run.err
    # every model call was answered by the mock (nothing else is reachable offline)
    test "$(jq -r "select(.kind==\"model_response\") | .status" out/report/rep-000/events.jsonl | sort -u)" = 200
'

test_expect "the report validates against faultline schema --report (ajv, strict)" '
    test -d "$NM/ajv" || { echo "ajv missing: run scripts/bootstrap"; exit 1; }
    "$FAULTLINE" schema --report >schema.json
    node -e "
const Ajv = require(process.env.NM + \"/ajv/dist/2020\").default;
const fs = require(\"fs\");
const v = new Ajv({strict: true, allErrors: true}).compile(JSON.parse(fs.readFileSync(\"schema.json\")));
if (!v(JSON.parse(fs.readFileSync(\"out/report.json\")))) { console.log(JSON.stringify(v.errors)); process.exit(1); }
if (v({format: 1})) process.exit(1);
"
'

test_expect "--json prints the report on stdout; the default report goes under TMPDIR" '
    rc=0; "$FAULTLINE" run p/exp.yaml --json >j.out 2>j.err || rc=$?
    test "$rc" = 0
    path=$(sed -n "s/^faultline run: report //p" j.err)
    case "$path" in "$TMPDIR"/faultline-scored-*.json) ;; *) echo "report at $path"; exit 1 ;; esac
    diff <(jq -S "del(.run_dir)" j.out) <(jq -S "del(.run_dir)" "$path") >/dev/null ||
        diff <(jq -S . j.out) <(jq -S . "$path")
    refute grep -q "hello from the mock model" j.out
    test -d "${path%.json}"
'

test_expect "--quiet prints nothing but errors" '
    rc=0; "$FAULTLINE" run p/exp.yaml --quiet --out q.json >q.out 2>q.err || rc=$?
    test "$rc" = 0
    test ! -s q.out
    test ! -s q.err
'

test_expect "nothing is left behind: workspaces, temporary directories, processes, mounts" '
    no_leftovers p "$TMP/out/report"
    test "$(git -C p status --porcelain)" = ""
'
test_done
