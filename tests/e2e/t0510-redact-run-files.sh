#!/usr/bin/env bash
# t0510-redact-run-files: secrets in model requests (headers, query strings, bodies, env
# output in a tool result) and in MCP tool arguments and output go through the whole chain
# (controller proxy -> mock model with --record and --log; MCP shim -> fake server), then every
# file the run wrote is grepped for each raw secret: none may appear anywhere.
. "$(dirname "$0")/lib.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
export M PY PYTHONPATH="$FAULTLINE_ROOT/tests/e2e/mcp"
RUN=$TMP/run
mkdir -p "$RUN"

# Each secret once raw; every one must be gone from every file of the run.
cat >"$TMP/secrets" <<'EOF2'
sk-ant-api03-HEADERsecret0123456789abcdef
sk-proj-BEARERsecret0123456789abcdefgh
AIzaSyQUERYsecret0123456789abcdefghijkl
wJalrXUtnFEMI/K7MDENG/bPxRfiCYENVSECRET
hunter2-db-password-0042
gho_ENVTOKENsecret0123456789abcdefghij
sk-proj-GLUEDsecret0123456789abcdefghij
xoxb-1234567890-0987654321-SLACKsecretAB
eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzZWNyZXQtand0In0.c2lnbmF0dXJlLXNlY3JldA
sk_live_4eC39HqLyjWDarjtSTRIPEsecret
ghp_MCPARGsecret0123456789abcdefghijklm
AKIAIOSFODNN7MCPOUT1
EOF2

cat >"$TMP/s.yaml" <<'YAML'
name: redact
rules:
  - name: any
    reply: {text: "ok"}
fallback: {text: "ok"}
YAML
printf '{"version":1,"run":"t-run","canary":"E-FAULTLINE-0123abcd","faults":[],"abort":{"cost_usd_above":100}}\n' >"$TMP/plan.json"

start_bg "$FAULTLINE" mock-model --script "$TMP/s.yaml" --listen 127.0.0.1:0 \
    --ready-file "$TMP/mock.ready" --record "$RUN/mock-record.jsonl" --log "$RUN/mock.log" \
    --log-level debug >"$TMP/mock.stdout"
wait_file 30 "$TMP/mock.ready" || { echo "FAIL - mock-model did not start"; exit 1; }
MOCK="http://$(cat "$TMP/mock.ready")"
start_bg "$FAULTLINE" proxy --plan "$TMP/plan.json" --events "$RUN/events.jsonl" \
    --upstream-anthropic "$MOCK" --upstream-openai "$MOCK/v1" --ready-file "$TMP/proxy.ready" \
    --log "$RUN/proxy.log" --log-level debug
wait_file 30 "$TMP/proxy.ready" || { echo "FAIL - the proxy did not start"; exit 1; }
A=$(cat "$TMP/proxy.ready")
export A MOCK RUN

test_expect "model calls carrying secrets in headers, query strings and bodies go through" '
    s() { sed -n "${1}p" secrets; }
    body=$(jq -nc --arg env "HOME=/root
AWS_SECRET_ACCESS_KEY=$(s 4)
DB_PASSWORD=$(s 5)
GITHUB_TOKEN=$(s 6)" --arg glued "see url?x%3D$(s 7)&y=1 and $(s 8) and $(s 9)" --arg k "$(s 10)" \
        "{model: \"claude-sonnet-4-5\", max_tokens: 5, metadata: {(\$k): 1},
          messages: [{role: \"user\", content: \$glued},
                     {role: \"user\", content: [{type: \"tool_result\", tool_use_id: \"t1\", content: \$env}]}]}")
    code=$(curl -sS -o out.json -w "%{http_code}" --max-time 20 "http://$A/v1/messages?key=$(s 3)" \
        -H "x-api-key: $(s 1)" -H "authorization: Bearer $(s 2)" -H "content-type: application/json" \
        --data-binary "$body")
    test "$code" = 200 || { echo "status $code"; cat out.json; exit 1; }
    code=$(curl -sS -o out2.json -w "%{http_code}" --max-time 20 "$MOCK/v1/messages?key=$(s 3)" \
        -H "content-type: application/json" --data-binary "$body")
    test "$code" = 200
'

test_expect "MCP tool arguments and output carrying secrets go through the shim" '
    s() { sed -n "${1}p" secrets; }
    export S11=$(s 11) S12=$(s 12)
    timeout 30 "$PY" - <<PY
import os
from mcpclient import Shim, FAKE
s = Shim(["--name", "fake", "--events", os.environ["RUN"] + "/mcp-events.jsonl", "--"] + FAKE)
s.initialize()
r = s.call("echo", {"message": "token " + os.environ["S11"] + " and AWS_ACCESS_KEY_ID=" + os.environ["S12"]})
assert "Echo:" in r["result"]["content"][0]["text"], r
s.close(); assert s.wait() == 0
PY
'

test_expect "the run wrote events, logs and a record" '
    for f in events.jsonl mcp-events.jsonl mock-record.jsonl mock.log proxy.log; do
        test -s "$RUN/$f"
    done
    grep -q model_request "$RUN/events.jsonl"
    grep -q tool_result "$RUN/mcp-events.jsonl"
'

test_expect "no raw secret in any file of the run" '
    bad=0
    while read -r sec; do
        if grep -rlF -- "$sec" "$RUN"; then echo "leaked: $sec"; bad=1; fi
    done <secrets
    test "$bad" = 0
'

test_done
