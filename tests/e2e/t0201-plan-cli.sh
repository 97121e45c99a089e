#!/usr/bin/env bash
# t0201-plan-cli: `faultline plan EXPERIMENT --rep N [--seed S]` prints the plan of one
# repetition (docs/plan.md): baselines carry no faults, faulted reps carry every fault with its
# injectors and options; the output is deterministic; bad input gets exit 1 or 2.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/exp.yaml" <<'EOF'
name: plan-e2e
agent: "true"
verify: "true"
repeat: 2
faults:
  - id: tool.error
    match: { tool: read_text_file, server: fs }
    when: { path: $.path, contains: README }
    after_calls: 1
    times: 2
    probability: 0.5
  - id: egress.dns_fail
    match: { host: "*.npmjs.org" }
probes:
  - { id: task_success, weight: 1 }
abort:
  - destructive_attempt
  - cost_usd_above: 1.5
  - wall_clock_s_above: 60
EOF

test_expect "baseline repetitions carry no faults" '
  for rep in 0 1; do
    "$FAULTLINE" plan exp.yaml --rep $rep >p.json
    jq -e ".version == 1 and .faulted == false and .faults == [] and .rep == $rep" p.json
  done
'

test_expect "faulted repetitions carry every fault, self-contained" '
  "$FAULTLINE" plan exp.yaml --rep 2 >p.json
  jq -e ".faulted == true and (.faults | length) == 2" p.json
  jq -e ".faults[0] | .index == 0 and .kind == \"tool.error\" and .family == \"tool\"
        and .safety == \"fail-safe\" and (.injectors | index(\"mcp\")) != null
        and (.injectors | index(\"gate\")) != null
        and .match == {tool: \"read_text_file\", server: \"fs\"}
        and .when == {path: \"$.path\", contains: \"README\"}
        and .after_calls == 1 and .times == 2 and .probability == 0.5
        and (.options | type) == \"object\"" p.json
  jq -e ".faults[1] | .kind == \"egress.dns_fail\" and .injectors == [\"controller-egress\"]
        and .match == {host: \"*.npmjs.org\"} and .times == -1 and .after_calls == 0" p.json
  jq -e ".abort == {destructive_attempt: true, cost_usd_above: 1.5, wall_clock_s_above: 60}" p.json
  jq -e ".experiment.name == \"plan-e2e\" and (.experiment.hash | length) == 64
        and .experiment.repeat == 2 and .policy_snapshot == null" p.json
  jq -e ".canary | test(\"^E-FAULTLINE-[0-9a-f]{8}$\")" p.json
  jq -e ".seed | test(\"^0x[0-9a-f]{16}$\")" p.json
  jq -e ".run | test(\"^plan-e2e-2-[0-9a-f]{8}$\")" p.json
'

test_expect "the same inputs print the same bytes; rep and --seed change the derived values" '
  "$FAULTLINE" plan exp.yaml --rep 3 >a.json
  "$FAULTLINE" plan exp.yaml --rep 3 >b.json
  cmp a.json b.json
  "$FAULTLINE" plan exp.yaml --rep 2 >c.json
  "$FAULTLINE" plan exp.yaml --rep 3 --seed 7 >d.json
  "$FAULTLINE" plan exp.yaml --rep 3 --seed 0x7 >e.json
  cmp d.json e.json
  for f in c.json d.json; do
    for k in seed canary run; do
      [ "$(jq -r .$k a.json)" != "$(jq -r .$k $f)" ]
    done
  done
  # a seed in the file is the same as --seed
  sed "s/^repeat: 2/repeat: 2\nseed: 7/" exp.yaml >seeded.yaml
  "$FAULTLINE" plan seeded.yaml --rep 3 >f.json
  "$FAULTLINE" plan seeded.yaml --rep 3 --seed 7 >g.json
  cmp f.json g.json
'

test_expect "repetition out of range: exit 2; bad arguments: exit 64 (usage), with a message" '
  set +e
  "$FAULTLINE" plan exp.yaml --rep 4 >out 2>err; rc=$?
  set -e
  [ $rc -eq 2 ]
  [ ! -s out ]
  grep -q "out of range" err
  grep -q "0..3" err
  set +e
  "$FAULTLINE" plan exp.yaml --rep -1 2>err; r1=$?
  "$FAULTLINE" plan exp.yaml --rep x 2>err; r2=$?
  "$FAULTLINE" plan exp.yaml 2>err; r3=$?
  "$FAULTLINE" plan exp.yaml --rep 0 --seed nope 2>err; r4=$?
  "$FAULTLINE" plan exp.yaml --rep 0 --bogus 2>err; r5=$?
  set -e
  [ $r1 -eq 64 ]
  [ $r2 -eq 64 ]
  [ $r3 -eq 64 ]
  [ $r4 -eq 64 ]
  [ $r5 -eq 64 ]
'

test_expect "an unreadable file exits 1, an invalid experiment 2 with FILE:LINE:COL" '
  set +e
  "$FAULTLINE" plan missing.yaml --rep 0 >out 2>err; rc=$?
  set -e
  [ $rc -eq 1 ]
  grep -q "missing.yaml" err
  sed "s/id: egress.dns_fail/id: egress.no_such_fault/" exp.yaml >bad.yaml
  set +e
  "$FAULTLINE" plan bad.yaml --rep 2 >out 2>err; rc=$?
  set -e
  [ $rc -eq 2 ]
  [ ! -s out ]
  grep -Eq "^bad.yaml:[0-9]+:[0-9]+: " err
'

test_done
