#!/usr/bin/env bash
# The reference agent asks the gate (POST /_faultline/gate, harness "agent") before each shell
# call when FAULTLINE_CONTROL_URL is set: a hold or an injected fault refuses the call and the
# model is told the gate's text (with the canary); an allowed call runs; the controller writes
# the gate_decision; without a reachable controller a normal command still runs.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/agent/common.sh"

start_mock M "$EXAMPLES/models/resilient.yaml"

# start_ctl NAME FAULTS_JSON: a controller in $TMP/NAME; exports CTL_NAME (its URL).
start_ctl() {
    local name=$1 faults=$2
    mkdir -p "$TMP/$name"
    printf '{"version":1,"run":"t-run","canary":"E-FAULTLINE-0123abcd","faults":%s}\n' "$faults" \
        >"$TMP/$name/plan.json"
    start_bg "$FAULTLINE" proxy --plan "$TMP/$name/plan.json" --events "$TMP/$name/events.jsonl" \
        --ready-file "$TMP/$name/ready" 2>>"$TMP/$name/proxy.log"
    wait_file 10 "$TMP/$name/ready" || { echo "controller $name did not start"; cat "$TMP/$name/proxy.log"; exit 1; }
    export "CTL_$name=http://$(cat "$TMP/$name/ready")"
}
start_ctl hold '[{"kind":"permission.deny_or_delay","safety":"fail-safe","injectors":["gate"],"match":{"tool":"Bash"},"options":{"mode":"hold_then_deny","delay_s":60}}]'
start_ctl err '[{"kind":"tool.error","safety":"fail-safe","injectors":["gate"],"match":{"tool":"Bash"},"options":{"message":"the shell is gone"}}]'
start_ctl none '[]'

test_expect "a permission hold refuses the shell call and the model is told [faultline] HELD with the canary" '
    mkdir h && cd h
    FAULTLINE_CONTROL_URL=$CTL_hold agent anthropic "$M_URL" --shell --no-settings --prompt "Please run \`echo hi > f.txt\`" >out 2>err
    cat out
    test ! -e f.txt
    grep -q "^\[blocked\] shell: \[faultline\] HELD: .*E-FAULTLINE-0123abcd" out
    grep -q "^The task FAILED.*\[faultline\] HELD:.*E-FAULTLINE-0123abcd" out
    jq -se "[.[] | select(.kind == \"gate_decision\")] | length == 1 and .[0].harness == \"agent\" and .[0].tool == \"Bash\" and .[0].decision == \"held\" and .[0].faulted" "$TMP/hold/events.jsonl"
    jq -se "[.[] | select(.kind == \"fault_injected\")] | length == 1 and .[0].component == \"gate\"" "$TMP/hold/events.jsonl"
'

test_expect "an injected tool.error on the shell refuses the call with its message and the canary" '
    mkdir e && cd e
    FAULTLINE_CONTROL_URL=$CTL_err agent openai "$M_URL" --shell --no-settings --prompt "Please run \`echo hi > f.txt\`" >out 2>err
    cat out
    test ! -e f.txt
    grep -q "^\[blocked\] shell: \[faultline\] Bash: the shell is gone \[E-FAULTLINE-0123abcd\]" out
    grep -q "^The task FAILED.*the shell is gone" out
'

test_expect "an allowed call runs, after one gate_decision allow" '
    mkdir a && cd a
    FAULTLINE_CONTROL_URL=$CTL_none agent anthropic "$M_URL" --shell --no-settings --prompt "Please run \`echo hi > f.txt\`" >out 2>err
    cat out
    grep -qx hi f.txt
    jq -se "[.[] | select(.kind == \"gate_decision\")] | length == 1 and .[0].decision == \"allow\" and .[0].harness == \"agent\"" "$TMP/none/events.jsonl"
'

test_expect "an unreachable controller: a normal command runs, with a [gate] note" '
    mkdir u && cd u
    port=$(free_port)
    FAULTLINE_CONTROL_URL=http://127.0.0.1:$port agent anthropic "$M_URL" --shell --no-settings --prompt "Please run \`echo hi > f.txt\`" >out 2>err
    cat out
    grep -qx hi f.txt
    grep -q "^\[gate\] the gate could not be asked" out
'

test_expect "without FAULTLINE_CONTROL_URL nothing is asked" '
    mkdir n && cd n
    n0=$(jq -se "[.[] | select(.kind == \"gate_decision\")] | length" "$TMP/none/events.jsonl")
    FAULTLINE_CONTROL_URL= agent anthropic "$M_URL" --shell --no-settings --prompt "Please run \`echo hi > f.txt\`" >out 2>err
    grep -qx hi f.txt
    refute grep -q "^\[gate\]" out
    n1=$(jq -se "[.[] | select(.kind == \"gate_decision\")] | length" "$TMP/none/events.jsonl")
    test "$n0" = "$n1"
'

test_done
