#!/usr/bin/env bash
# The controller's own upstream retries (429, 5xx, connection errors, with backoff and
# retry-after), upstream timeouts, an upstream that is down, and pooled connections the
# upstream closed meanwhile.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/proxy/lib-proxy.sh"

start_upstream
write_plan "$TMP/plan.json" '[]' 100
start_proxy "$TMP/plan.json" --retries 2 --retry-base-ms 50 --retry-max-ms 400 \
    --first-byte-timeout-ms 400

post() { # BODY [CURL ARGS...]
    local b=$1; shift
    curl -sS -D h.txt -o out.json -w "%{http_code}" "http://$A/v1/messages" -H "x-api-key: k" -d "$b" "$@"
}
seen() { upstream_log | jq "[.[] | select(.headers[] | .[0] == \"x-test-id\" and .[1] == \"$1\")] | length"; }
export -f post seen

test_expect "503 twice, then 200: the agent sees only the 200; two retries recorded" '
    test "$(post "{\"model\":\"r1\",\"messages\":[]}" -H "x-test-mode: status:503:2" -H "x-test-id: r1")" = 200
    test "$(seen r1)" -eq 3
    ev model_response "select(.model == \"r1\")" | jq -e ".status == 200 and .retries == 2"
'

test_expect "a persistent 529 is passed on after the retries are spent, with backoff between attempts" '
    s=$(date +%s%N)
    test "$(post "{\"model\":\"r2\",\"messages\":[]}" -H "x-test-mode: status:529" -H "x-test-id: r2")" = 529
    ms=$(( ($(date +%s%N) - s) / 1000000 ))
    echo "took $ms ms"
    test "$ms" -ge 150            # 50 + 100 ms of backoff
    test "$(seen r2)" -eq 3
    jq -e ".error.type == \"overloaded_error\"" out.json
'

test_expect "429 with retry-after within the cap is waited out and retried" '
    test "$(post "{\"model\":\"r3\",\"messages\":[]}" -H "x-test-mode: status:429:1" -H "x-test-id: r3" -H "x-test-retry-after: 0")" = 200
    test "$(seen r3)" -eq 2
'

test_expect "429 asking for a longer wait than the cap is passed on at once, retry-after included" '
    test "$(post "{\"model\":\"r4\",\"messages\":[]}" -H "x-test-mode: status:429" -H "x-test-id: r4" -H "x-test-retry-after: 30")" = 429
    test "$(seen r4)" -eq 1
    grep -qi "^retry-after: 30" h.txt
'

test_expect "a 400 is not retried" '
    test "$(post "{\"model\":\"r5\",\"messages\":[]}" -H "x-test-mode: status:400" -H "x-test-id: r5")" = 400
    test "$(seen r5)" -eq 1
'

test_expect "an upstream that closes without answering is retried, then 502 in the provider format" '
    test "$(post "{\"model\":\"r6\",\"messages\":[]}" -H "x-test-mode: close" -H "x-test-id: r6")" = 502
    # 3 attempts; an attempt that went out on a pooled connection is also sent once more on a
    # fresh one (the upstream may have closed the idle connection just then)
    test "$(seen r6)" -ge 3
    test "$(seen r6)" -le 6
    jq -e ".type == \"error\" and .error.type == \"api_error\" and (.error.message | contains(\"upstream\"))" out.json
    ev model_response "select(.model == \"r6\")" | jq -e ".status == 502 and (.error | length > 0)"
'

test_expect "an upstream that never answers times out: 504 after the retries" '
    s=$(date +%s%N)
    test "$(post "{\"model\":\"r7\",\"messages\":[]}" -H "x-test-mode: hang" -H "x-test-id: r7")" = 504
    ms=$(( ($(date +%s%N) - s) / 1000000 ))
    echo "took $ms ms"
    test "$ms" -ge 1200
    test "$ms" -lt 5000
    test "$(seen r7)" -eq 3
'

test_expect "the proxy still serves after all that" '
    test "$(post "{\"model\":\"ok\",\"messages\":[]}")" = 200
'

stop_proxy

# Upstream down: nothing listens on the port.
DOWN=$(free_port)
export DOWN
test_expect "upstream down: 502 JSON error and an event, for model calls and pass-through alike" '
    "$FAULTLINE" proxy --plan "$TMP/plan.json" --events down.jsonl --upstream-anthropic "http://127.0.0.1:$DOWN" \
        --upstream-openai "http://127.0.0.1:$DOWN" --ready-file down.ready --retries 1 --retry-base-ms 20 2>down.log &
    pid=$!
    wait_file 10 down.ready
    a=$(cat down.ready)
    code=$(curl -sS -o o1.json -w "%{http_code}" "http://$a/v1/chat/completions" -d "{\"model\":\"gpt-5.4\",\"messages\":[]}")
    code2=$(curl -sS -o o2.json -w "%{http_code}" "http://$a/v1/models")
    kill $pid; wait $pid || true
    test "$code" = 502
    test "$code2" = 502
    jq -e ".error.type == \"server_error\" and (.error.message | contains(\"cannot connect\"))" o1.json
    jq -e ".error.message | contains(\"cannot connect\")" o2.json
    jq -se "[.[] | select(.kind == \"model_response\" and .status == 502)] | length == 1" down.jsonl
    jq -se "[.[] | select(.kind == \"warning\" and .code == \"upstream_error\")] | length == 1" down.jsonl
'

# An upstream that closes each connection shortly after one response, without saying so: the
# next request on the pooled connection fails before any byte and is sent again, invisibly.
test_expect "a pooled connection the upstream closed is replaced without a retry or an error" '
    "$PY" - >once.port <<PY &
import socket, sys, threading, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
body = b"{\"id\":\"m\",\"type\":\"message\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}"
def serve(c):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d: return
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(rest) < n: rest += c.recv(65536)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    time.sleep(0.1); c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
    upid=$!
    wait_file 10 once.port
    "$FAULTLINE" proxy --plan "$TMP/plan.json" --events once.jsonl --upstream-anthropic "http://127.0.0.1:$(cat once.port)" \
        --ready-file once.ready --retries 0 2>once.log &
    pid=$!
    wait_file 10 once.ready
    a=$(cat once.ready)
    c1=$(curl -sS -o /dev/null -w "%{http_code}" "http://$a/v1/messages" -d "{\"model\":\"x\",\"messages\":[]}")
    sleep 0.4
    c2=$(curl -sS -o /dev/null -w "%{http_code}" "http://$a/v1/messages" -d "{\"model\":\"x\",\"messages\":[]}")
    kill $pid $upid; wait $pid || true
    echo "codes $c1 $c2"
    test "$c1" = 200
    test "$c2" = 200
'

test_done
