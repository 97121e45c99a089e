#!/usr/bin/env bash
# The controller as a reverse proxy: ready file, health, pass-through of bodies, headers and
# query strings, streaming, token and cost accounting, key redaction, clean SIGTERM.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

KEY=sk-ant-api03-secretsecretsecret-0123456789
OKEY=sk-proj-openaisecret-abcdefghij0123
export KEY OKEY
start_upstream
write_plan "$TMP/plan.json" '[]' 100
start_proxy "$TMP/plan.json"

test_expect "ready file holds the bound address and health answers with the run id" '
    grep -Eq "^127\.0\.0\.1:[0-9]+$" ready
    curl -sS "http://$A/_faultline/health" | jq -e ".ok == true and .run == \"t-run\" and .plan_loaded == true"
'

test_expect "plan_loaded is the first event" '
    head -n 1 "$EVENTS" | jq -e ".kind == \"plan_loaded\" and .component == \"controller-model\" and .canary == \"E-FAULTLINE-0123abcd\""
'

test_expect "body, unknown fields and roles, headers and query string reach the upstream untouched" '
    body="{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":5,\"zzz_unknown\":{\"a\":[1,2.50,\"\\u00e9\"]},\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"hi\"}]}"
    curl -sS "http://$A/v1/messages?beta=true" -H "x-test-mode: echo" -H "x-api-key: $KEY" \
        -H "anthropic-beta: a,b" -H "x-custom-thing: 42" -H "Accept-Encoding: gzip" \
        -H "content-type: application/json" --data-binary "$body" >out.json
    jq -e --arg b "$body" ".body == \$b" out.json
    jq -e ".path == \"/v1/messages?beta=true\"" out.json
    jq -e "[.headers[] | select(.[0] == \"x-api-key\")][0][1] == \"$KEY\"" out.json
    jq -e "[.headers[] | select(.[0] == \"x-custom-thing\")][0][1] == \"42\"" out.json
    jq -e "[.headers[] | select(.[0] == \"anthropic-beta\")][0][1] == \"a,b\"" out.json
    jq -e "[.headers[] | select(.[0] | ascii_downcase == \"accept-encoding\")] | length == 0" out.json
'

test_expect "a non-streaming Anthropic call is forwarded and accounted" '
    curl -sS -D h.txt "http://$A/v1/messages" -H "x-api-key: $KEY" \
        -d "{\"model\":\"claude-sonnet-4-5\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" >out.json
    jq -e ".usage.output_tokens == 500 and .content[0].text == \"Hello from upstream\"" out.json
    grep -qi "^x-upstream: yes" h.txt
    ev model_response "select(.model == \"claude-sonnet-4-5\" and .stream == false)" | tail -n 1 >r.json
    jq -e ".status == 200 and .usage.input_tokens == 1000 and .usage.output_tokens == 500" r.json
    # claude-sonnet-4-5: 3 USD/M input, 15 USD/M output
    jq -e "(.cost_usd - 0.0105 | fabs) < 1e-9" r.json
'

test_expect "a stream is forwarded event by event and its usage read from message_start/message_delta" '
    curl -sSN "http://$A/v1/messages" -H "x-api-key: $KEY" \
        -d "{\"model\":\"claude-sonnet-4-5\",\"stream\":true,\"messages\":[]}" >s.txt
    test "$(grep -c "^event: " s.txt)" -eq 9
    grep -q "^event: message_stop" s.txt
    ev model_response "select(.stream == true)" | tail -n 1 >r.json
    jq -e ".usage.input_tokens == 1000 and .usage.output_tokens == 500 and .stop_reason == \"end_turn\" and .text == \"Hello from upstream\"" r.json
'

test_expect "a slow stream reaches the client before it ends (not buffered whole)" '
    "$PY" - "$A" <<PY
import socket, sys, time
host, port = sys.argv[1].split(":")
s = socket.create_connection((host, int(port)))
body = b"{\"model\":\"claude-sonnet-4-5\",\"stream\":true,\"messages\":[]}"
s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-test-mode: slow:300\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
t0 = time.time(); data = b""
while b"message_start" not in data:
    chunk = s.recv(65536)
    assert chunk, "closed"
    data += chunk
first = time.time() - t0
assert first < 1.0, "first event after %.2f s" % first
while b"message_stop" not in data:
    data += s.recv(65536)
total = time.time() - t0
assert total > 2.0, "whole stream in %.2f s" % total
print("first event after %.2f s, whole stream %.2f s" % (first, total))
PY
'

test_expect "OpenAI chat (stream with include_usage) and responses (response.completed) are accounted" '
    curl -sS "http://$A/v1/chat/completions" -H "authorization: Bearer $OKEY" \
        -d "{\"model\":\"gpt-5.4\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"messages\":[]}" >c.txt
    grep -q "data: \[DONE\]" c.txt
    curl -sS "http://$A/v1/responses" -H "authorization: Bearer $OKEY" \
        -d "{\"model\":\"gpt-5.4\",\"stream\":true,\"input\":\"hi\"}" >r.txt
    grep -q "response.completed" r.txt
    ev model_response "select(.model == \"gpt-5.4\")" >m.json
    test "$(wc -l <m.json)" -eq 2
    jq -se "all(.[]; .usage.input_tokens == 1000 and .usage.output_tokens == 500)" m.json
    # gpt-5.4: 2.50 USD/M input, 15 USD/M output
    jq -se "all(.[]; (.cost_usd - 0.01 | fabs) < 1e-9)" m.json
'

test_expect "model_request events name api, model, stream, path; the running total adds up" '
    ev model_request "select(.api == \"openai-responses\")" | jq -e ".model == \"gpt-5.4\" and .stream == true and .path == \"/v1/responses\""
    jq -se "[.[] | select(.kind == \"model_response\")] as \$r | ((\$r | map(.cost_usd) | add) - (\$r[-1].cost_total_usd) | fabs) < 1e-9" "$EVENTS"
    # a call in flight is in neither the running total nor the file, and may end between the
    # two reads: compare once none is (an earlier test leaves a slow stream running)
    wait_for 10 sh -c "curl -sS http://$A/_faultline/state | jq -e \".calls_in_flight == 0\""
    curl -sS "http://$A/_faultline/state" >st.json
    jq -e ".calls_in_flight == 0" st.json
    jq -se "(.[0].cost_usd - ([.[1:][] | select(.kind == \"model_response\") | .cost_usd] | add) | fabs) < 1e-9" st.json "$EVENTS"
'

test_expect "count_tokens and unknown paths pass through without model events" '
    n=$(ev model_request | wc -l)
    curl -sS "http://$A/v1/messages/count_tokens?beta=true" -H "x-api-key: $KEY" -d "{\"model\":\"m\",\"messages\":[]}" | jq -e ".input_tokens == 42"
    curl -sS -o /dev/null -w "%{http_code}" "http://$A/v1/models" -H "x-api-key: $KEY" | grep -q 404
    curl -sS -o /dev/null -w "%{http_code}" -I "http://$A/" | grep -q 404
    test "$(ev model_request | wc -l)" -eq "$n"
'

test_expect "keys never reach the events file or the log" '
    # the path is recorded: a key in its query string is redacted there (tests/mutation)
    curl -sS -o /dev/null "http://$A/v1/messages?key=$KEY" -H "x-api-key: $KEY" -d "{\"model\":\"claude-haiku-4-5\",\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
    wait_for 10 grep -q "key=\[REDACTED\]" "$EVENTS"
    refute grep -q "$KEY" "$EVENTS"
    refute grep -q "$OKEY" "$EVENTS"
    refute grep -q "$KEY" proxy.log
    refute grep -q "$OKEY" proxy.log
    grep -q "x-api-key" <(upstream_log)
'

test_expect "SIGTERM stops it within a second, cutting an open stream and recording its end" '
    "$PY" - "$A" <<PY &
import socket, sys
host, port = sys.argv[1].split(":")
s = socket.create_connection((host, int(port)))
body = b"{\"model\":\"claude-sonnet-4-5\",\"stream\":true,\"messages\":[]}"
s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-test-mode: slow:1000\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
s.settimeout(5)
data = s.recv(65536)
open("streaming", "w").write("yes")
while data:
    data = s.recv(65536)
PY
    client=$!
    wait_file 10 streaming
    start=$(date +%s%N)
    kill -TERM "$PROXY_PID"
    for i in $(seq 100); do kill -0 "$PROXY_PID" 2>/dev/null || break; sleep 0.01; done
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    echo "stopped in $ms ms"
    refute kill -0 "$PROXY_PID" 2>/dev/null
    test "$ms" -lt 1000
    wait "$client"
    tail -n 1 "$EVENTS" | jq -e ".kind == \"model_response\" and .error == \"controller stopped\""
'

test_expect "an inherited listening socket (--listen-fd) is served" '
    "$PY" - "$FAULTLINE" "$TMP/plan.json" "$UP" <<PY
import os, socket, subprocess, sys, time, urllib.request
fl, plan, up = sys.argv[1:4]
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
fd = s.fileno(); os.set_inheritable(fd, True)
p = subprocess.Popen([fl, "proxy", "--plan", plan, "--events", "fd-events.jsonl",
                      "--upstream-anthropic", up, "--listen-fd", str(fd), "--ready-file", "fd-ready"],
                     pass_fds=(fd,))
s.close()
try:
    for _ in range(100):
        if os.path.exists("fd-ready"): break
        time.sleep(0.05)
    assert open("fd-ready").read().strip() == "127.0.0.1:%d" % port
    r = urllib.request.urlopen("http://127.0.0.1:%d/_faultline/health" % port, timeout=5).read()
    assert b"t-run" in r, r
finally:
    p.terminate(); p.wait(5)
PY
'

test_expect "missing flags exit 64 (usage); a bad plan or listen address exits 2" '
    set +e
    "$FAULTLINE" proxy --events x.jsonl; test $? -eq 64 || exit 1
    "$FAULTLINE" proxy --plan p --events x.jsonl --retries=21; test $? -eq 64 || exit 1
    echo "{\"version\":1}" >bad.json
    "$FAULTLINE" proxy --plan bad.json --events x.jsonl 2>err.txt; test $? -eq 2 || exit 1
    "$FAULTLINE" proxy --plan "$TMP/plan.json" --events x.jsonl --listen nonsense 2>err.txt; test $? -eq 2 || exit 1
    grep -q "invalid listen address" err.txt
'

test_done
