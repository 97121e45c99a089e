#!/usr/bin/env bash
# egress.dns_fail reaches the real Claude Code's model: under `faultline run`, Claude Code's
# Bash tool runs curl against a package registry (a local stand-in, reached through the egress
# proxy and the run's --resolve). In the baseline the package's JSON is the tool result the
# model receives; in the faulted repetition the proxy answers the registry's name as
# unresolvable (502, with the repetition's canary), and that answer is what Claude Code sent
# the model next (the mock quotes the tool result it received).
. "$FAULTLINE_ROOT/tests/e2e/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
NM=$(cd "$FAULTLINE_ROOT/tests/interop/node_modules" && pwd -P)
export NM

mkdir -p "$TMP/www"
echo '{"name":"left-pad","version":"1.3.0"}' >"$TMP/www/left-pad.json"
HP=$(free_port)
start_bg python3 -m http.server --bind 127.0.0.1 --directory "$TMP/www" "$HP" 2>"$TMP/www.log"
wait_for 10 curl -sS -o /dev/null "http://127.0.0.1:$HP/left-pad.json" || echo "the registry stand-in did not start"
export HP

make_project "$TMP/p"
cp "$EXAMPLES/models/resilient.yaml" "$TMP/p/"
cat >"$TMP/p/exp.yaml" <<EOF2
name: claude-dns-fail
agent: >-
  DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
  CLAUDE_CODE_MAX_RETRIES=3 claude -p "Please run \\\`curl -sS --max-time 10 http://registry.test:$HP/left-pad.json\\\` and tell me how it went"
  --allowedTools Bash --output-format json </dev/null
verify: "true"
repeat: 1
model: {mock: resilient.yaml}
faults:
  - id: egress.dns_fail
    match: {host: registry.test}
probes:
  - {id: failure_surfaced, weight: 1}
abort:
  - cost_usd_above: 5
  - wall_clock_s_above: 150
EOF2
commit "$TMP/p"
cd "$TMP"

test_expect "claude code under faultline run with egress.dns_fail: the run is scored" '
    test -x "$NM/.bin/claude" || { echo "claude missing: run scripts/bootstrap"; exit 1; }
    grep -q "curl -sS --max-time 10 http://registry.test:$HP/left-pad.json" p/exp.yaml
    rc=0; timeout 400 "$FAULTLINE" run p/exp.yaml --ro-path "$NM" --resolve "registry.test:$HP:127.0.0.1" --out out/cc.json >run.out 2>run.err || rc=$?
    test "$(jq -r .verdict out/cc.json)" = scored || { echo "rc $rc"; tail -n 20 run.err; exit 1; }
'

test_expect "baseline: the package reached the model through the egress proxy" '
    a=out/cc/rep-000/agent.out
    jq -e "select(.type==\"result\") | .result | test(\"Done: the command succeeded\") and contains(\"left-pad\")" $a
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"registry.test\" and .status == 200)" out/cc/rep-000/events.jsonl
'

test_expect "faulted: the dns failure with the canary reached the model" '
    a=out/cc/rep-001/agent.out
    canary=$(jq -r .canary out/cc/rep-001/plan.json)
    test -n "$canary"
    e=out/cc/rep-001/events.jsonl
    jq -se "map(select(.kind == \"fault_injected\")) | length == 1 and .[0].fault == \"egress.dns_fail\" and .[0].target == \"registry.test\"" $e
    jq -se "any(.[]; .kind == \"egress_request\" and .host == \"registry.test\" and .faulted == true and .status == 502)" $e
    jq -r "select(.type==\"result\") | .result" $a
    jq -e --arg c "$canary" "select(.type==\"result\") | .result | contains(\$c) and (contains(\"left-pad\\\"\") | not)" $a
    # never forwarded: the registry saw the start-up probe and the baseline, nothing more
    test "$(grep -c "GET /left-pad.json" "$TMP/www.log")" = 2
'

test_expect "nothing is left behind" '
    no_leftovers p "$TMP/out/cc"
'
test_done
