#!/usr/bin/env bash
# Bad `egress.host_ports` (docs/experiment-format.md): `faultline validate` refuses a port out
# of range, a duplicate, a port the sandbox serves itself (53, 80, 443), a string, an empty or
# too long list, each at FILE:LINE:COL of its item; `faultline schema` states the same rule;
# `faultline proxy` refuses a malformed --host-port-fd as a usage error and host ports without
# the egress proxy they go through.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"
export -f write_plan
cd "$TMP"
base() {
    cat <<'Y'
name: t
agent: run-agent
verify: 'true'
faults:
  - id: tool.error
probes:
  - {id: task_success, weight: 1}
abort:
  - cost_usd_above: 1
egress:
Y
}
# bad NAME LINE_OF_EGRESS_VALUE: writes NAME.yaml with that host_ports line
bad() {
    { base; printf '  host_ports: %s\n' "$2"; } >"$1.yaml"
}
bad range "[5432, 0, 70000]"
bad twice "[5432, 5432]"
bad own "[53, 80, 443]"
bad text "['5432']"
bad empty "[]"
bad long "[$(seq -s ', ' 10001 10033)]"
{ base; printf '  host_ports: [5432, 3000]\n'; } >good.yaml

test_expect "a valid list is accepted" '
    "$FAULTLINE" validate good.yaml
'

test_expect "out of range: each bad item at its line and column" '
    if "$FAULTLINE" validate range.yaml >o 2>&1; then cat o; exit 1; fi
    cat o
    grep -q "^range.yaml:11:22: error: egress.host_ports\[1\]: must be a port from 1 to 65535, found 0" o
    grep -q "^range.yaml:11:25: error: egress.host_ports\[2\]: must be a port from 1 to 65535, found 70000" o
'

test_expect "a duplicate, and the sandbox's own ports" '
    if "$FAULTLINE" validate twice.yaml >o 2>&1; then cat o; exit 1; fi
    grep -q "^twice.yaml:11:22: error: egress.host_ports\[1\]: port 5432 is listed twice" o
    if "$FAULTLINE" validate own.yaml >o 2>&1; then cat o; exit 1; fi
    cat o
    test "$(grep -c "is the sandbox.s own" o)" = 3
    grep -q "^own.yaml:11:16: error: egress.host_ports\[0\]: port 53 is the sandbox.s own" o
    grep -q "^own.yaml:11:24: error: egress.host_ports\[2\]: port 443 is the sandbox.s own" o
'

test_expect "a string, an empty list, 33 ports" '
    if "$FAULTLINE" validate text.yaml >o 2>&1; then cat o; exit 1; fi
    grep -q "^text.yaml:11:16: error: egress.host_ports\[0\]: expected an integer, found the string" o
    if "$FAULTLINE" validate empty.yaml >o 2>&1; then cat o; exit 1; fi
    grep -q "^empty.yaml:11:15: error: egress.host_ports: must have 1 to 32 items, found 0" o
    if "$FAULTLINE" validate long.yaml >o 2>&1; then cat o; exit 1; fi
    grep -q "^long.yaml:11:15: error: egress.host_ports: must have 1 to 32 items, found 33" o
'

test_expect "the schema states the rule" '
    "$FAULTLINE" schema >s.json
    jq -e ".\"\$defs\".egress.properties.host_ports | .maxItems == 32 and .uniqueItems and .items.minimum == 1 and .items.maximum == 65535 and .items.not.enum == [53, 80, 443]" s.json
'

test_expect "faultline proxy: a malformed --host-port-fd is a usage error" '
    for v in "7=expected FD:PORT" "7:0=bad port .0. (1 to 65535)" "x:80=bad descriptor .x." "7:80,8:80=port 80 given twice"; do
        rc=0
        "$FAULTLINE" proxy --plan x --events y --host-port-fd "${v%%=*}" >p.out 2>&1 || rc=$?
        cat p.out
        test "$rc" = 64
        grep -q -- "--host-port-fd.*${v#*=}" p.out
    done
'

test_expect "faultline proxy: host ports need the egress proxy" '
    write_plan plan.json "[]"
    rc=0
    timeout 20 "$FAULTLINE" proxy --plan plan.json --events ev.jsonl --host-port-fd 0:5432 >p.out 2>&1 || rc=$?
    cat p.out
    test "$rc" = 2
    grep -q "needs the egress proxy" p.out
'

test_done
