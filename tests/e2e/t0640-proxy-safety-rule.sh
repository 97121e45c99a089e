#!/usr/bin/env bash
# The safety rule (docs/control-api.md): a controller answers mutating fault decisions only when
# it knows the agent is sandboxed: its --listen-fd listener is in another network namespace
# (what the runner hands it), or it was started by hand with --i-have-a-sandbox. Otherwise each
# mutating decision, asked through the control API or taken by the model proxy, is refused
# with a warning fault_refused, and fail-safe faults still apply.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

start_upstream
write_plan "$TMP/plan.json" '[
 {"kind":"inject.tool_result","safety":"mutating","injectors":["mcp"],"match":{"tool":"read"},"options":{"payload":"P"}},
 {"kind":"tool.stale_data","safety":"mutating","injectors":["mcp"],"match":{"tool":"list"}},
 {"kind":"tool.error","safety":"fail-safe","injectors":["mcp"],"match":{"tool":"add"}},
 {"kind":"llm.model_degrade","safety":"mutating","injectors":["controller-model"],"match":{"model":"*-deg"},"options":{"to_model":"claude-haiku-4-5"}}
]'

# decide_all URL: the decisions for read, list and add, one compact line each
decide_all() {
    local t
    for t in read list add; do
        ${NS:-} curl -sS --max-time 5 -X POST "$1/_faultline/decide" \
            -d "{\"component\":\"mcp\",\"tool\":\"$t\",\"server\":\"fs\"}" | jq -c .
    done
}
export -f decide_all

# 1. started by hand, no flag: refuses
start_proxy "$TMP/plan.json"
HAND=$A HAND_EV=$EVENTS
export HAND HAND_EV

test_expect "by hand without --i-have-a-sandbox: inject.tool_result and tool.stale_data are refused, tool.error answered" '
    decide_all "http://$HAND" >d.txt
    cat d.txt
    sed -n 1p d.txt | jq -e ".inject == false and .refused == \"inject.tool_result\""
    sed -n 2p d.txt | jq -e ".inject == false and .refused == \"tool.stale_data\""
    sed -n 3p d.txt | jq -e ".inject == true and .kind == \"tool.error\""
    curl -sS "http://$HAND/_faultline/health" | jq -e ".mutating_faults == false"
'

test_expect "each refusal is a warning fault_refused naming the fault; plan_loaded says no sandbox is known" '
    for i in $(seq 50); do test "$(jq -s "[.[] | select(.kind == \"warning\" and .code == \"fault_refused\")] | length" "$HAND_EV")" -ge 2 && break; sleep 0.1; done
    jq -c "select(.kind == \"warning\")" "$HAND_EV" >w.txt
    cat w.txt
    jq -se "map(select(.code == \"fault_refused\") | .fault) == [\"inject.tool_result\", \"tool.stale_data\"]" w.txt
    jq -se "map(select(.code == \"fault_refused\")) | all(.src == \"controller\" and (.message | test(\"--i-have-a-sandbox\")))" w.txt
    jq -se "map(select(.kind == \"plan_loaded\")) | length == 1 and .[0].sandbox == \"none\" and .[0].component == \"controller-model\"" "$HAND_EV"
'

test_expect "the model proxy refuses llm.model_degrade the same way: the request goes upstream unchanged" '
    test "$(curl -sS -o /dev/null -w "%{http_code}" "http://$HAND/v1/messages" -H "x-api-key: k" -d "{\"model\":\"x-deg\",\"messages\":[]}")" = 200
    upstream_log | jq -e "map(select(.path == \"/v1/messages\")) | last | .body | fromjson | .model == \"x-deg\""
    for i in $(seq 50); do jq -se "any(.[]; .fault == \"llm.model_degrade\")" "$HAND_EV" >/dev/null && break; sleep 0.1; done
    jq -se "any(.[]; .kind == \"warning\" and .code == \"fault_refused\" and .fault == \"llm.model_degrade\")" "$HAND_EV"
    jq -se "any(.[]; .kind == \"fault_injected\") | not" "$HAND_EV"
'

# 2. started by hand with the flag
EVENTS_DIR=$TMP/flag
mkdir -p "$EVENTS_DIR"
rm -f "$TMP/ready"
start_bg "$FAULTLINE" proxy --plan "$TMP/plan.json" --events "$EVENTS_DIR/events.jsonl" \
    --upstream-anthropic "$UP" --ready-file "$TMP/ready" --i-have-a-sandbox 2>>"$TMP/proxy.log"
wait_file 10 "$TMP/ready" || echo "proxy with the flag did not start"
FLAG=$(cat "$TMP/ready")
export FLAG EVENTS_DIR

test_expect "with --i-have-a-sandbox: every decision is answered, and plan_loaded says declared" '
    decide_all "http://$FLAG" >d.txt
    cat d.txt
    jq -se "map(.kind) == [\"inject.tool_result\", \"tool.stale_data\", \"tool.error\"]" d.txt
    curl -sS "http://$FLAG/_faultline/health" | jq -e ".mutating_faults == true"
    jq -se "map(select(.kind == \"plan_loaded\")) | .[0].sandbox == \"declared\"" "$EVENTS_DIR/events.jsonl"
    jq -se "any(.[]; .code == \"fault_refused\") | not" "$EVENTS_DIR/events.jsonl"
'

# 3. what the runner does: a --listen-fd listener made in another network namespace
NSDIR=$TMP/ns
mkdir -p "$NSDIR"
rm -f "$TMP/ready"
start_bg "$PY" "$PROXY_HELPERS/netns_proxy.py" "$NSDIR/holder.pid" new -- "$FAULTLINE" proxy \
    --plan "$TMP/plan.json" --events "$NSDIR/events.jsonl" --upstream-anthropic "$UP" \
    --ready-file "$TMP/ready" 2>>"$TMP/proxy.log"
wait_file 10 "$TMP/ready" || echo "proxy in the namespace did not start"
wait_file 10 "$NSDIR/holder.pid" || echo "no namespace holder"
NSA=$(cat "$TMP/ready")
NS="nsenter --net=/proc/$(cat "$NSDIR/holder.pid")/ns/net"
export NSA NS NSDIR

test_expect "a listener in another network namespace: no flag needed, every decision is answered" '
    refute curl -sS --max-time 2 "http://$NSA/_faultline/health"
    decide_all "http://$NSA" >d.txt
    cat d.txt
    jq -se "map(.kind) == [\"inject.tool_result\", \"tool.stale_data\", \"tool.error\"]" d.txt
    $NS curl -sS --max-time 5 "http://$NSA/_faultline/health" | jq -e ".mutating_faults == true"
    jq -se "map(select(.kind == \"plan_loaded\")) | .[0].sandbox == \"netns\"" "$NSDIR/events.jsonl"
    test "$($NS curl -sS -o /dev/null -w "%{http_code}" "http://$NSA/v1/messages" -H "x-api-key: k" -d "{\"model\":\"x-deg\",\"messages\":[]}")" = 200
    upstream_log | jq -e "map(select(.path == \"/v1/messages\")) | last | .body | fromjson | .model == \"claude-haiku-4-5\""
'

# 4. --listen-fd alone is no proof: a listener in the controller's own namespace
OWNDIR=$TMP/own
mkdir -p "$OWNDIR"
rm -f "$TMP/ready"
start_bg "$PY" "$PROXY_HELPERS/netns_proxy.py" "$OWNDIR/holder.pid" own -- "$FAULTLINE" proxy \
    --plan "$TMP/plan.json" --events "$OWNDIR/events.jsonl" --upstream-anthropic "$UP" \
    --ready-file "$TMP/ready" 2>>"$TMP/proxy.log"
wait_file 10 "$TMP/ready" || echo "proxy on an inherited listener did not start"
OWN=$(cat "$TMP/ready")
export OWN OWNDIR

test_expect "a --listen-fd listener in the controller's own namespace: refused as by hand" '
    NS= decide_all "http://$OWN" >d.txt
    cat d.txt
    jq -se "map(.inject) == [false, false, true]" d.txt
    jq -se "map(select(.kind == \"plan_loaded\")) | .[0].sandbox == \"none\"" "$OWNDIR/events.jsonl"
'

test_expect "--sandboxed is gone: an unknown option" '
    set +e
    "$FAULTLINE" proxy --plan "$TMP/plan.json" --events x.jsonl --sandboxed 2>err.txt
    test $? -eq 64 || exit 1
    grep -q "unknown option" err.txt
'

test_done
