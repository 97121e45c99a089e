#!/usr/bin/env bash
# bench/b06-proxy.sh: the controller's cost as a reverse proxy, side by side in one run.
#
#   latency   wrk, 1 connection: p50/p99 of a 1 KiB non-streaming call to the mock model
#             directly, through `faultline proxy`, and through nginx (the reference C proxy,
#             1 worker, keep-alive upstream); the added latency is each minus the direct one.
#             With 2+ CPUs the load generator is pinned to CPU 0 and the servers to CPU 1
#             (taskset), so that wrk never waits for a server to give up its CPU
#   throughput wrk, 64 connections, 2 threads, nothing pinned: requests/s of the same three,
#             and the CPU time each proxy spends per call (utime + stime / calls)
#   streams   500 concurrent slow streams through the controller (upstream stand-in
#             tests/e2e/proxy/upstream.py, 9 events 250 ms apart): the controller's peak RSS
#
# Rounds alternate direct / faultline / nginx so that load from elsewhere on the machine hits
# all three alike. Added latency is computed per round (target minus direct, measured seconds
# apart) and the median over ROUNDS (default 9) is reported; throughput is the median too.
# Everything binds 127.0.0.1 and is stopped by PID. Figures go to docs/performance.md
# (## proxy).
set -u
: "${FAULTLINE:?run through make bench (bench/run sets FAULTLINE)}"
ROOT=${FAULTLINE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
ROUNDS=${ROUNDS:-9}
DUR=${DUR:-2}
T=$(mktemp -d "${TMPDIR:-/tmp}/faultline-bench.XXXXXX")
PY=$(python3 -c 'import sys; print(sys.executable)')
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
need() { command -v "$1" >/dev/null || { echo "b06-proxy: $1 is not installed; skipped"; exit 1; }; }
need wrk
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "b06-proxy: nginx is not installed"; exit 1; }
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$PY" "$ROOT/bench/proxy/body.py" "$T"
cat >"$T/mock.yaml" <<'YAML'
name: bench
rules: []
fallback: {text: "Hello from the mock model, through the proxy under test."}
YAML
printf '{"version":1,"run":"bench","canary":"E-FAULTLINE-00000000","faults":[],"abort":{"cost_usd_above":1000000}}\n' >"$T/plan.json"

"$FAULTLINE" mock-model --script "$T/mock.yaml" --ready-file "$T/mock.ready" >/dev/null 2>"$T/mock.log" &
pids+=($!)
wait_file "$T/mock.ready" || { echo "mock-model did not start"; exit 1; }
MOCK=$(cat "$T/mock.ready")
"$FAULTLINE" proxy --plan "$T/plan.json" --events "$T/events.jsonl" --upstream-anthropic "http://$MOCK" \
    --ready-file "$T/px.ready" 2>"$T/proxy.log" &
PXPID=$!
pids+=($PXPID)
wait_file "$T/px.ready" || { echo "faultline proxy did not start"; exit 1; }
PX=$(cat "$T/px.ready")

NPORT=$(free_port)
mkdir -p "$T/nginx"
cat >"$T/nginx/nginx.conf" <<NGINX
worker_processes 1;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $T/nginx/body;
    proxy_temp_path $T/nginx/proxy;
    fastcgi_temp_path $T/nginx/fastcgi;
    uwsgi_temp_path $T/nginx/uwsgi;
    scgi_temp_path $T/nginx/scgi;
    upstream mock { server $MOCK; keepalive 64; }
    server {
        listen 127.0.0.1:$NPORT;
        client_max_body_size 32m;
        location / {
            proxy_pass http://mock;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }
    }
}
NGINX
"$NGINX" -p "$T/nginx" -c "$T/nginx/nginx.conf" -g 'daemon off;' 2>"$T/nginx/stderr" &
NGPID=$!
pids+=($NGPID)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$NPORT/" && break; sleep 0.1; done
NG=127.0.0.1:$NPORT
NGWORKER=$(pgrep -P "$NGPID" | head -n 1)
MOCKPID=${pids[0]}

# pin PIDS_CPUS WRK_CPU: affinity for the servers and the load generator ("" = not pinned)
PIN_OK=0
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then PIN_OK=1; fi
WRK_PIN=()
pin() {
    [ "$PIN_OK" = 1 ] || return 0
    for p in "$MOCKPID" "$PXPID" "$NGPID" "$NGWORKER"; do taskset -pc "$1" "$p" >/dev/null; done
    if [ -n "$2" ]; then WRK_PIN=(taskset -c "$2"); else WRK_PIN=(); fi
}
cputime() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # clock ticks

# check that all three answer the same request
for a in "$MOCK" "$PX" "$NG"; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://$a/v1/messages" -H 'x-api-key: k' \
        -d '{"model":"claude-haiku-4-5","messages":[{"role":"user","content":"hi"}]}')
    [ "$code" = 200 ] || { echo "b06-proxy: $a answered $code"; exit 1; }
done

# us VALUE_WITH_UNIT: wrk latency ("812.00us", "1.23ms", "2.00s") in microseconds
us() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) m = 1; else if (v ~ /ms$/) m = 1000; else if (v ~ /s$/) m = 1000000; printf "%d", n * m }'; }
# run NAME TARGET CONNS THREADS: one wrk run; appends "p50 p99 rps" to $T/NAME.CONNS
run() {
    local out
    out=$("${WRK_PIN[@]}" wrk -t"$4" -c"$3" -d"${DUR}s" --latency -s "$T/post1k.lua" "http://$2/v1/messages")
    if echo "$out" | grep -q "Non-2xx"; then echo "b06-proxy: $1 answered errors"; echo "$out"; exit 1; fi
    echo "$(us "$(echo "$out" | awk '$1 == "50%" {print $2}')") $(us "$(echo "$out" | awk '$1 == "99%" {print $2}')") $(echo "$out" | awk '/Requests\/sec/ {printf "%d", $2}')" >>"$T/$1.$3"
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
col() { awk -v c="$2" '{ print $c }' "$T/$1" | median; }

px_ticks=0 ng_ticks=0 px_calls=0 ng_calls=0
for r in $(seq "$ROUNDS"); do
    pin 1 0
    for t in direct:$MOCK faultline:$PX nginx:$NG; do run "${t%%:*}" "${t#*:}" 1 1; done
    pin 0-"$(( $(nproc) - 1 ))" ""
    for t in direct:$MOCK faultline:$PX nginx:$NG; do
        n=${t%%:*}
        [ "$n" = faultline ] && a=$(cputime "$PXPID")
        [ "$n" = nginx ] && a=$(cputime "$NGWORKER")
        run "$n" "${t#*:}" 64 2
        calls=$(( $(tail -n 1 "$T/$n.64" | awk '{print $3}') * DUR ))
        [ "$n" = faultline ] && px_ticks=$((px_ticks + $(cputime "$PXPID") - a)) && px_calls=$((px_calls + calls))
        [ "$n" = nginx ] && ng_ticks=$((ng_ticks + $(cputime "$NGWORKER") - a)) && ng_calls=$((ng_calls + calls))
    done
done

# added NAME COL: the median over rounds of (NAME's figure - direct's figure in that round)
added() { paste -d' ' "$T/$1.1" "$T/direct.1" | awk -v c="$2" '{ print $c - $(c + 3) }' | median; }
printf '\n1 KiB non-streaming calls, %s rounds of %ss, medians (load average now: %s; latency runs pinned: %s)\n' \
    "$ROUNDS" "$DUR" "$(cut -d' ' -f1-3 /proc/loadavg)" "$([ "$PIN_OK" = 1 ] && echo yes || echo no)"
printf '%-10s %10s %10s %12s %12s %14s\n' target "p50 (us)" "p99 (us)" "added p50" "added p99" "req/s (c=64)"
for n in direct faultline nginx; do
    p50=$(col $n.1 1); p99=$(col $n.1 2); rps=$(col $n.64 3)
    a50=0 a99=0
    [ "$n" != direct ] && a50=$(added "$n" 1) && a99=$(added "$n" 2)
    printf '%-10s %10s %10s %12s %12s %14s\n' "$n" "$p50" "$p99" "$a50" "$a99" "$rps"
done
fa=$(added faultline 1); na=$(added nginx 1)
awk -v f="$fa" -v n="$na" 'BEGIN { if (n > 0) printf "added p50, faultline / nginx: %.2fx (target <= 1.5x)\n", f / n }'
hz=$(getconf CLK_TCK)
awk -v pt="$px_ticks" -v pc="$px_calls" -v nt="$ng_ticks" -v nc="$ng_calls" -v hz="$hz" 'BEGIN {
    if (pc > 0 && nc > 0)
        printf "CPU per call at c=64 (utime+stime): faultline %.1f us, nginx %.1f us\n", pt * 1e6 / hz / pc, nt * 1e6 / hz / nc }'


# 500 concurrent slow streams through the controller, against the upstream stand-in.
rm -f "$T/up.port"
"$PY" "$ROOT/tests/e2e/proxy/upstream.py" "$T/up.port" 2>/dev/null &
pids+=($!)
wait_file "$T/up.port" || { echo "upstream stand-in did not start"; exit 1; }
"$FAULTLINE" proxy --plan "$T/plan.json" --events "$T/events-s.jsonl" \
    --upstream-anthropic "http://127.0.0.1:$(cat "$T/up.port")" --ready-file "$T/pxs.ready" \
    --max-conns 2000 2>"$T/proxy-s.log" &
SPID=$!
pids+=($SPID)
wait_file "$T/pxs.ready" || { echo "faultline proxy (streams) did not start"; exit 1; }
rss() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status"; }
idle=$(rss $SPID)
wrk -t2 -c500 -d8s --timeout 10s -s "$T/stream.lua" "http://$(cat "$T/pxs.ready")/v1/messages" >"$T/streams.out" &
wpid=$!
peak=0 maxopen=0
for _ in $(seq 80); do
    kill -0 $wpid 2>/dev/null || break
    r=$(rss $SPID); [ "$r" -gt "$peak" ] && peak=$r
    o=$(curl -s "http://$(cat "$T/pxs.ready")/_faultline/state" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["calls_in_flight"])')
    [ "$o" -gt "$maxopen" ] && maxopen=$o
    sleep 0.1
done
wait $wpid
hwm=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$SPID/status")
printf '\n500 concurrent streams (9 SSE events, 250 ms apart) through the controller\n'
printf 'streams in flight at most: %s; RSS idle %s KiB, peak sampled %s KiB, VmHWM %s KiB (target <= 16384)\n' \
    "$maxopen" "$idle" "$peak" "$hwm"
grep -E "requests in|Requests/sec|Non-2xx|Socket errors" "$T/streams.out"
