#!/usr/bin/env bash
# t0301-mock-model-http: `faultline mock-model` over HTTP with curl: startup (ready file,
# printed address, --listen-fd), the routes Claude Code and Codex use, streaming framing per
# API, bad input (malformed JSON 400, body over the limit 413, unknown path 404, wrong method
# 405, all JSON), the request record, loopback-only binding, and a clean stop on SIGTERM.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/s.yaml" <<'YAML'
name: http
rules:
  - name: tool
    when: {first_turn: true, tool_offered: shell}
    reply:
      text: "Running it."
      tool_calls: [{name: shell, input: {command: "echo hi"}}]
fallback: {text: "plain answer"}
YAML

start_bg "$FAULTLINE" mock-model --script "$TMP/s.yaml" --listen 127.0.0.1:0 --max-body 2000 \
    --ready-file "$TMP/ready" --record "$TMP/rec.jsonl" >"$TMP/stdout" 2>"$TMP/stderr"
MOCK_PID=$LAST_PID
# 30 s: the server starts under ASan on a loaded machine
test_expect "mock-model starts within 30 s" "wait_file 30 '$TMP/ready' || { cat '$TMP/stderr'; false; }"
export URL="http://$(cat "$TMP/ready")" MOCK_PID

# json_get FILE EXPR: evaluates a Python expression over the JSON document d in FILE.
json_get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
export -f json_get

test_expect "ready file and stdout name the same loopback address" '
    grep -Eq "^127\.0\.0\.1:[0-9]+$" ready
    test "$(cat stdout)" = "$(cat ready)"
'
test_expect "HEAD / answers 200 (Claude Code probes it)" '
    test "$(curl -s -o /dev/null -w "%{http_code}" -I "$URL/")" = 200
'
test_expect "malformed JSON gets 400 with an Anthropic error body" '
    code=$(curl -s -o body.json -w "%{http_code}" -H "x-api-key: k" "$URL/v1/messages?beta=true" -d "{\"model\": ")
    test "$code" = 400
    test "$(json_get body.json "d[\"type\"]")" = error
    test "$(json_get body.json "d[\"error\"][\"type\"]")" = invalid_request_error
    json_get body.json "d[\"error\"][\"message\"]" | grep -q "invalid JSON at line 1"
'
test_expect "malformed JSON on an OpenAI path gets the OpenAI error shape" '
    code=$(curl -s -o body.json -w "%{http_code}" "$URL/v1/chat/completions" -d "[1,2]")
    test "$code" = 400
    test "$(json_get body.json "d[\"error\"][\"type\"]")" = invalid_request_error
    test "$(json_get body.json "d[\"error\"][\"param\"]")" = None
'
test_expect "a field of the wrong type gets 400" '
    code=$(curl -s -o body.json -w "%{http_code}" "$URL/v1/responses" -d "{\"input\": 5}")
    test "$code" = 400
    json_get body.json "d[\"error\"][\"message\"]" | grep -q "input"
'
test_expect "a body over --max-body gets 413, and the server keeps serving" '
    head -c 5000 /dev/zero | tr "\0" x >big
    code=$(curl -s -o /dev/null -w "%{http_code}" "$URL/v1/messages" --data-binary @big)
    test "$code" = 413
    test "$(curl -s -o /dev/null -w "%{http_code}" "$URL/")" = 200
'
test_expect "an unknown path gets 404 JSON; GET on an API path 405" '
    test "$(curl -s -o body.json -w "%{http_code}" "$URL/v1/embeddings")" = 404
    json_get body.json "d[\"error\"][\"message\"]" | grep -q "no route for GET /v1/embeddings"
    test "$(curl -s -o body.json -w "%{http_code}" "$URL/v1/responses")" = 405
'
test_expect "a path that is not UTF-8 gets a JSON 404 and a record line (bytes as U+FFFD)" '
    python3 - "$(cat ready)" <<PY
import json, socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=10)
s.sendall(b"GET /v1/\\xff\\xfe\\xc3 HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
head, _, body = data.partition(b"\\r\\n\\r\\n")
assert head.startswith(b"HTTP/1.1 404"), head
msg = json.loads(body)["error"]["message"]
assert msg == "no route for GET /v1/\\ufffd\\ufffd\\ufffd", msg
PY
    python3 - <<PY
import json, time
for _ in range(100):
    paths = [json.loads(l)["path"] for l in open("rec.jsonl")]
    if "/v1/\\ufffd\\ufffd\\ufffd" in paths:
        break
    time.sleep(0.05)
else:
    raise SystemExit("no record line: %r" % paths)
PY
'
test_expect "Anthropic stream: event lines, message_start first, message_stop last" '
    curl -sN "$URL/v1/messages" -d "{\"model\":\"claude-haiku-4-5\",\"stream\":true,\"tools\":[{\"name\":\"shell\"}],\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}" >s.txt
    test "$(grep -c "^event: " s.txt)" = "$(grep -c "^data: " s.txt)"
    test "$(grep "^event: " s.txt | head -n1)" = "event: message_start"
    test "$(grep "^event: " s.txt | tail -n1)" = "event: message_stop"
    grep -q "\"stop_reason\":\"tool_use\"" s.txt
    grep -q "\"partial_json\"" s.txt
'
test_expect "chat stream: data lines only, usage chunk with include_usage, then [DONE]" '
    curl -sN "$URL/v1/chat/completions" -d "{\"model\":\"gpt-5.4\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}" >c.txt
    refute grep -q "^event:" c.txt
    test "$(grep "^data: " c.txt | tail -n1)" = "data: [DONE]"
    grep "^data: " c.txt | tail -n2 | head -n1 | grep -q "\"choices\":\[\],\"usage\":{\"prompt_tokens\""
'
test_expect "Responses stream: sequence numbers 0..n-1, response.completed last, no [DONE]" '
    curl -sN "$URL/v1/responses" -d "{\"model\":\"gpt-5.5\",\"stream\":true,\"input\":\"go\"}" >r.txt
    python3 - r.txt <<PY
import json, sys
events = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: ")]
assert [e["sequence_number"] for e in events] == list(range(len(events)))
assert events[-1]["type"] == "response.completed"
assert events[-1]["response"]["usage"]["output_tokens"] == 3  # "plain answer" is 12 bytes
PY
    refute grep -q DONE r.txt
'
test_expect "count_tokens answers {input_tokens}" '
    curl -s "$URL/v1/messages/count_tokens?beta=true" -d "{\"model\":\"m\",\"messages\":[]}" >t.json
    test "$(json_get t.json "d[\"input_tokens\"]")" = 7
'
test_expect "the record file has one line per request, without secrets" '
    curl -s -o /dev/null -H "x-api-key: sk-secret-value" "$URL/v1/messages" -d "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
    # the path is recorded: a key in its query string is redacted there (tests/mutation)
    curl -s -o /dev/null "$URL/v1/messages?key=sk-secret-value" -d "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
    grep -q "key=\[REDACTED\]" rec.jsonl
    test "$(wc -l <rec.jsonl)" -ge 10
    tail -n1 rec.jsonl | grep -q "\"rule\":-1"
    refute grep -q sk-secret-value rec.jsonl
'
test_expect "SIGTERM stops the server cleanly (exit 0)" '
    kill -TERM $MOCK_PID
    for i in $(seq 100); do kill -0 $MOCK_PID 2>/dev/null || break; sleep 0.05; done
    refute kill -0 $MOCK_PID 2>/dev/null
'
wait "$MOCK_PID"; rc=$?
test_expect "... and its exit status was 0" "test $rc = 0"

test_expect "--listen-fd serves on an inherited listening socket" '
    python3 - "$FAULTLINE" "$TMP/s.yaml" "$TMP/fd.ready" <<PY &
import os, socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
os.set_inheritable(s.fileno(), True)
os.execv(sys.argv[1], [sys.argv[1], "mock-model", "--script", sys.argv[2], "--listen-fd",
                       str(s.fileno()), "--ready-file", sys.argv[3]])
PY
    pid=$!
    wait_file 30 fd.ready
    curl -s "http://$(cat fd.ready)/v1/chat/completions" -d "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}" >fd.json
    kill -TERM $pid; wait $pid
    test "$(json_get fd.json "d[\"choices\"][0][\"message\"][\"content\"]")" = "plain answer"
'
test_expect "a non-loopback listen address is refused (exit 2)" '
    rc=0; timeout 10 "$FAULTLINE" mock-model --script s.yaml --listen 0.0.0.0:0 2>err || rc=$?
    test $rc = 2
    grep -q "loopback only" err
    for a in 127.example.com:0 127.0.0.1.nip.io:0 "[::]:0" "127.0.0.1: 80"; do
        rc=0; timeout 10 "$FAULTLINE" mock-model --script s.yaml --listen "$a" 2>err || rc=$?
        test $rc = 2 || { echo "$a: exit $rc"; exit 1; }
        grep -Eq "loopback only|bad port" err
    done
'
test_expect "an invalid script is refused with FILE:LINE:COL (exit 2); --check accepts a good one; no --script is a usage error (64)" '
    printf "rules:\n  - when: {frist_turn: true}\n    reply: {text: x}\n" >bad.yaml
    rc=0; "$FAULTLINE" mock-model --script bad.yaml --check 2>err || rc=$?
    test $rc = 2
    grep -q "bad.yaml:2:12: unknown condition .frist_turn." err
    "$FAULTLINE" mock-model --script s.yaml --check | grep -q ": ok"
    rc=0; "$FAULTLINE" mock-model --script /nonexistent.yaml --check 2>err || rc=$?
    test $rc = 1
    rc=0; "$FAULTLINE" mock-model 2>err || rc=$?
    test $rc = 64
'
test_done
