#!/usr/bin/env bash
# The Node gate SDK (sdk/node) against a real controller: its tests (sdk/node/test, node:test)
# run with FAULTLINE_CONTROL_URL pointing at a `faultline proxy` with gate faults and a policy.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/sdk/lib-sdk.sh"
command -v node >/dev/null || { echo "FAIL - node is not installed"; exit 1; }
start_sdk_controller

test_expect "the Node SDK's tests pass against the controller" '
    timeout 60 node --test "$FAULTLINE_ROOT/sdk/node/test/" >node.out 2>&1 || { cat node.out; exit 1; }
    grep -q "^# pass 7" node.out || { cat node.out; exit 1; }
    grep -q "^# fail 0" node.out
'

test_expect "the controller saw each SDK call as harness sdk" '
    jq -se "[.[] | select(.kind == \"gate_decision\")] | length == 8 and all(.harness == \"sdk\")" "$SDK_EVENTS"
    jq -se "[.[] | select(.kind == \"fault_injected\") | .fault] == [\"tool.error\", \"permission.deny_or_delay\"]" "$SDK_EVENTS"
'

test_done
