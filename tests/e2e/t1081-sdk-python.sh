#!/usr/bin/env bash
# The Python gate SDK (sdk/python) against a real controller: its tests (sdk/python/test,
# unittest) run with FAULTLINE_CONTROL_URL pointing at a `faultline proxy` with gate faults and
# a policy.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/sdk/lib-sdk.sh"
start_sdk_controller

test_expect "the Python SDK's tests pass against the controller" '
    timeout 60 "$PY" "$FAULTLINE_ROOT/sdk/python/test/test_gate.py" -v >py.out 2>&1 || { cat py.out; exit 1; }
    grep -q "^Ran 7 tests" py.out || { cat py.out; exit 1; }
    grep -qx OK py.out
'

test_expect "the controller saw each SDK call as harness sdk" '
    jq -se "[.[] | select(.kind == \"gate_decision\")] | length == 8 and all(.harness == \"sdk\")" "$SDK_EVENTS"
    jq -se "[.[] | select(.kind == \"fault_injected\") | .fault] == [\"tool.error\", \"permission.deny_or_delay\"]" "$SDK_EVENTS"
'

test_done
