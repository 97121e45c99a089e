#!/usr/bin/env bash
# `faultline schema`: a JSON Schema (draft 2020-12) that a real validator (ajv, pinned in
# tests/interop) compiles in strict mode, that accepts the shipped examples and rejects the
# seed's rules broken one at a time.
. "$(dirname "$0")/lib.sh"
export NM="$FAULTLINE_ROOT/tests/interop/node_modules"

cat >"$TMP/check.js" <<'JS'
// node check.js SCHEMA expect(valid|invalid) FILE.json...
const path = require('path');
const Ajv2020 = require(path.join(process.env.NM, 'ajv/dist/2020')).default;
const fs = require('fs');
const ajv = new Ajv2020({strict: true, allErrors: true});
const validate = ajv.compile(JSON.parse(fs.readFileSync(process.argv[2], 'utf8')));
let bad = 0;
for (const f of process.argv.slice(4)) {
  const ok = validate(JSON.parse(fs.readFileSync(f, 'utf8')));
  if (ok !== (process.argv[3] === 'valid')) {
    bad++;
    console.log(f + ': expected ' + process.argv[3] + ' ' + JSON.stringify(validate.errors));
  }
}
process.exit(bad ? 1 : 0);
JS

test_expect "schema prints a draft 2020-12 JSON Schema" '
    "$FAULTLINE" schema >schema.json
    test "$(jq -r ".[\"\$schema\"]" schema.json)" = "https://json-schema.org/draft/2020-12/schema"
    test "$(jq -r ".required | join(\",\")" schema.json)" = "name,agent,verify,faults,probes,abort"
    test "$(jq -r ".properties.repeat.maximum" schema.json)" = 20
'

test_expect "ajv (strict) compiles it and accepts the three examples" '
    test -d "$NM/ajv" || { echo "ajv missing: run scripts/bootstrap"; exit 1; }
    "$FAULTLINE" schema >schema.json
    for f in registry-down credential-revoked poisoned-readme; do
        "$FAULTLINE" validate --as-json "$EXAMPLES/$f.yaml" >$f.json
    done
    node check.js schema.json valid registry-down.json credential-revoked.json poisoned-readme.json
'

test_expect "the schema rejects what validate rejects (one broken rule per file)" '
    "$FAULTLINE" schema >schema.json
    "$FAULTLINE" validate --as-json "$EXAMPLES/registry-down.yaml" >base.json
    jq ".abort = [\"destructive_attempt\"]" base.json >no-cost.json
    jq "del(.faults[0].match)" base.json >no-host.json
    jq ".repeat = 21" base.json >repeat.json
    jq ".name = \"Bad_Name\"" base.json >name.json
    jq ".descripton = \"x\"" base.json >unknown-key.json
    jq ".faults[0].id = \"egress.dns_failure\"" base.json >unknown-fault.json
    jq ".faults[0] = {id: \"llm.rate_limit\", match: {tool: \"x\"}}" base.json >match-key.json
    jq ".faults[0] = {id: \"llm.rate_limit\", retry_after_s: 9999}" base.json >range.json
    jq ".faults[0] = {id: \"llm.model_degrade\"}" base.json >required-option.json
    jq ".probes[0].weight = 0" base.json >weight.json
    jq ".probes[2] = {id: \"cost_multiplier_below\", weight: 1}" base.json >value.json
    jq ".probes[0] = {id: \"task_success\", value: 1}" base.json >no-value.json
    jq ".faults[0] = {id: \"llm.rate_limit\", when: {path: \"\$.a\", equals: 1}}" base.json >when.json
    node check.js schema.json invalid no-cost.json no-host.json repeat.json name.json \
        unknown-key.json unknown-fault.json match-key.json range.json required-option.json \
        weight.json value.json no-value.json when.json
'

test_expect "validate agrees: the documents the schema rejects are invalid (JSON is YAML)" '
    "$FAULTLINE" validate --as-json "$EXAMPLES/registry-down.yaml" >base.json
    "$FAULTLINE" validate base.json >/dev/null
    jq ".abort = [\"destructive_attempt\"]" base.json >no-cost.yaml
    jq "del(.faults[0].match)" base.json >no-host.yaml
    jq ".probes[0] = {id: \"task_success\", value: 1}" base.json >no-value.yaml
    jq ".faults[0] = {id: \"llm.rate_limit\", when: {path: \"\$.a\", equals: 1}}" base.json >when.yaml
    for f in no-cost no-host no-value when; do
        rc=0; "$FAULTLINE" validate $f.yaml 2>/dev/null || rc=$?
        test "$rc" = 2
    done
'
test_done
