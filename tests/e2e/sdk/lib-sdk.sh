# tests/e2e/sdk/lib-sdk.sh: the controller the gate SDKs' tests run against (t1080, t1081);
# source it after lib.sh.
PY=$(python3 -c 'import sys; print(sys.executable)')
export PY

# start_sdk_controller: a `faultline proxy` with a permission hold (delay 1 s, once) on Bash,
# tool.error on Write, and a policy blocking curl and redacting hunter[0-9]+ in echo commands;
# exports FAULTLINE_CONTROL_URL, FAULTLINE_TEST_CANARY and SDK_EVENTS.
start_sdk_controller() {
    cat >"$TMP/plan.json" <<'J'
{"version": 1, "run": "t-sdk", "canary": "E-FAULTLINE-5d4c3b2a", "faults": [
 {"kind": "permission.deny_or_delay", "safety": "fail-safe", "injectors": ["gate"],
  "match": {"tool": "Bash"}, "times": 1, "options": {"mode": "delay", "delay_s": 1}},
 {"kind": "tool.error", "safety": "fail-safe", "injectors": ["gate", "mcp"],
  "match": {"tool": "Write"}, "options": {"message": "disk quota exceeded"}}]}
J
    cat >"$TMP/policy.yaml" <<'Y'
rules:
  - {id: no-curl, command: {program: curl}, effect: block}
  - {id: mask, tool: Bash, command: {program: echo}, effect: redact, redact: ['hunter[0-9]+']}
Y
    SDK_EVENTS=$TMP/events.jsonl
    start_bg "$FAULTLINE" proxy --plan "$TMP/plan.json" --events "$SDK_EVENTS" \
        --policy "$TMP/policy.yaml" --ready-file "$TMP/ready" 2>>"$TMP/proxy.log"
    wait_file 10 "$TMP/ready" || { echo "FAIL - the controller did not start"; cat "$TMP/proxy.log"; exit 1; }
    FAULTLINE_CONTROL_URL=http://$(cat "$TMP/ready")
    FAULTLINE_TEST_CANARY=E-FAULTLINE-5d4c3b2a
    export FAULTLINE_CONTROL_URL FAULTLINE_TEST_CANARY SDK_EVENTS
}
