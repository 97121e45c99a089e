#!/usr/bin/env bash
# bench/b06-proxy.sh: the controller's cost as a reverse proxy, against nginx, in one run.
#
# The upstream costs nearly nothing: nginx `return 200` with a fixed body (a 1 KiB Messages
# response with usage, or a whole SSE stream of 29 events), one worker, started here on
# 127.0.0.1. In front of it, side by side: `faultline proxy` (a plan whose fault never matches,
# events on) and nginx as a reverse proxy (one worker, keep-alive upstream, buffering off).
#
#   latency    wrk, 1 connection: p50 of a 1 KiB non-streaming call to the upstream directly,
#              through faultline and through nginx; added p50 = each minus direct's, in the
#              same round. With 2+ CPUs wrk is pinned to CPU 0 and the servers to CPU 1.
#   throughput wrk, 50 connections, 2 threads, nothing pinned: req/s of both proxies, and the
#              CPU time (utime + stime) each proxy process spends per call.
#   streaming  the same at c=50 with streaming calls: CPU per SSE event relayed.
#   mock model the controller in front of `faultline mock-model` (the old method's upstream),
#              req/s against nginx in front of the same mock: a row without a bar.
#   streams    500 concurrent slow streams (tests/e2e/proxy/upstream.py, 9 events 250 ms
#              apart) through the controller: its peak RSS.
#
# Rounds alternate faultline / nginx so that load from elsewhere hits both alike; each row's
# ratio is the median over ROUNDS (default 7) of that round's ratio, the figures are medians.
# Every row prints the figure, the reference, the ratio and met / NOT MET against the bars of
# docs/performance.md (## proxy); the load average is printed before and after. Everything binds
# 127.0.0.1 and is stopped by PID.
set -u
: "${FAULTLINE:?run through make bench (bench/run sets FAULTLINE)}"
ROOT=${FAULTLINE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
ROUNDS=${ROUNDS:-7}
DUR=${DUR:-2}
T=$(mktemp -d "${TMPDIR:-/tmp}/faultline-bench.XXXXXX")
PY=$(python3 -c 'import sys; print(sys.executable)')
pids=()
notmet=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
need() { command -v "$1" >/dev/null || { echo "b06-proxy: $1 is not installed: NOT MET (not measured)"; exit 1; }; }
need wrk
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "b06-proxy: nginx is not installed: NOT MET (not measured)"; exit 1; }
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }
wait_http() { for _ in $(seq 100); do curl -s -o /dev/null "http://$1/" && return 0; sleep 0.1; done; return 1; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

"$PY" "$ROOT/bench/proxy/body.py" "$T"
SSE_EVENTS=$(cat "$T/sse.events")
cat >"$T/mock.yaml" <<'YAML'
name: bench
rules: []
fallback: {text: "Hello from the mock model, through the proxy under test."}
YAML
printf '%s\n' '{"version":1,"run":"bench","canary":"E-FAULTLINE-00000000","faults":[{"kind":"llm.upstream_5xx","safety":"fail-safe","injectors":["controller-model"],"match":{"model":"never-*"},"options":{"status":503}}],"abort":{"cost_usd_above":1000000}}' >"$T/plan.json"

# nginx CONF_NAME SERVERS: starts an nginx with one worker and the given server blocks
nginx_start() {
    mkdir -p "$T/$1"
    cat >"$T/$1/nginx.conf" <<NGINX
worker_processes 1;
pid $T/$1/nginx.pid;
error_log $T/$1/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $T/$1/body;
    proxy_temp_path $T/$1/proxy;
    fastcgi_temp_path $T/$1/fastcgi;
    uwsgi_temp_path $T/$1/uwsgi;
    scgi_temp_path $T/$1/scgi;
    client_max_body_size 32m;
    keepalive_requests 1000000;
$2
}
NGINX
    "$NGINX" -p "$T/$1" -c "$T/$1/nginx.conf" -g 'daemon off;' 2>"$T/$1/stderr" &
    pids+=($!)
}
UPORT=$(free_port) SPORT=$(free_port)
UP=127.0.0.1:$UPORT UPS=127.0.0.1:$SPORT
nginx_start up "
    server { listen $UP; location / { default_type application/json; return 200 $(cat "$T/resp1k.ngx"); } }
    server { listen $UPS; location / { default_type text/event-stream; return 200 $(cat "$T/sse.ngx"); } }"
UPPID=${pids[-1]}
wait_http "$UP" || { echo "b06-proxy: the upstream nginx did not start"; cat "$T/up/stderr"; exit 1; }

"$FAULTLINE" mock-model --script "$T/mock.yaml" --ready-file "$T/mock.ready" >/dev/null 2>"$T/mock.log" &
MOCKPID=$!
pids+=($MOCKPID)
wait_file "$T/mock.ready" || { echo "mock-model did not start"; exit 1; }
MOCK=$(cat "$T/mock.ready")

# px NAME UPSTREAM: a controller in front of UPSTREAM; sets PX_<NAME> (address), PXPID_<NAME>
px() {
    "$FAULTLINE" proxy --plan "$T/plan.json" --events "$T/events-$1.jsonl" --upstream-anthropic "http://$2" \
        --ready-file "$T/px-$1.ready" --max-conns 2000 2>"$T/proxy-$1.log" &
    pids+=($!)
    printf -v "PXPID_$1" %s $!
    wait_file "$T/px-$1.ready" || { echo "faultline proxy ($1) did not start"; exit 1; }
    printf -v "PX_$1" %s "$(cat "$T/px-$1.ready")"
}
px json "$UP"
px sse "$UPS"
px mock "$MOCK"

NP1=$(free_port) NP2=$(free_port) NP3=$(free_port)
ng_server() { # LISTEN UPSTREAM_NAME
    echo "    server { listen $1; location / { proxy_pass http://$2; proxy_http_version 1.1;
        proxy_set_header Connection \"\"; proxy_buffering off; } }"
}
nginx_start ngp "
    upstream upj { server $UP; keepalive 64; }
    upstream ups { server $UPS; keepalive 64; }
    upstream upm { server $MOCK; keepalive 64; }
$(ng_server 127.0.0.1:$NP1 upj)
$(ng_server 127.0.0.1:$NP2 ups)
$(ng_server 127.0.0.1:$NP3 upm)"
NGPID=${pids[-1]}
NG_json=127.0.0.1:$NP1 NG_sse=127.0.0.1:$NP2 NG_mock=127.0.0.1:$NP3
wait_http "$NG_json" || { echo "b06-proxy: the nginx proxy did not start"; cat "$T/ngp/stderr"; exit 1; }
NGWORKER=$(pgrep -P "$NGPID" | head -n 1)
UPWORKER=$(pgrep -P "$UPPID" | head -n 1)

# every path answers the same request
for a in "$UP" "$PX_json" "$NG_json" "$PX_mock" "$NG_mock"; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://$a/v1/messages" -H 'x-api-key: k' \
        -d '{"model":"claude-haiku-4-5","messages":[{"role":"user","content":"hi"}]}')
    [ "$code" = 200 ] || { echo "b06-proxy: $a answered $code"; exit 1; }
done
for a in "$PX_sse" "$NG_sse"; do
    n=$(curl -s "http://$a/v1/messages" -H 'x-api-key: k' \
        -d '{"model":"claude-haiku-4-5","stream":true,"messages":[{"role":"user","content":"hi"}]}' | grep -c '^event: ')
    [ "$n" = "$SSE_EVENTS" ] || { echo "b06-proxy: $a relayed $n SSE events of $SSE_EVENTS"; exit 1; }
done

PIN_OK=0
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then PIN_OK=1; fi
WRK_PIN=()
pin() { # SERVER_CPUS WRK_CPU
    [ "$PIN_OK" = 1 ] || return 0
    for p in "$UPPID" "$UPWORKER" "$MOCKPID" "$PXPID_json" "$PXPID_sse" "$PXPID_mock" "$NGPID" "$NGWORKER"; do
        taskset -pc "$1" "$p" >/dev/null
    done
    if [ -n "$2" ]; then WRK_PIN=(taskset -c "$2"); else WRK_PIN=(); fi
}
cputime() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # clock ticks
HZ=$(getconf CLK_TCK)
us() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) m = 1; else if (v ~ /ms$/) m = 1000; else if (v ~ /s$/) m = 1000000; printf "%d", n * m }'; }
# run FILE TARGET CONNS THREADS SCRIPT [PID]: one wrk run; appends "p50 rps us_cpu_per_call" to $T/FILE
run() {
    local out a=0 b=0 calls
    [ -n "${6:-}" ] && a=$(cputime "$6")
    out=$("${WRK_PIN[@]}" wrk -t"$4" -c"$3" -d"${DUR}s" --latency -s "$T/$5" "http://$2/v1/messages")
    [ -n "${6:-}" ] && b=$(cputime "$6")
    if echo "$out" | grep -qE "Non-2xx|Socket errors"; then echo "b06-proxy: $1 answered errors"; echo "$out"; exit 1; fi
    calls=$(echo "$out" | awk '/requests in/ {print $1}')
    echo "$(us "$(echo "$out" | awk '$1 == "50%" {print $2}')") $(echo "$out" | awk '/Requests\/sec/ {printf "%d", $2}')" \
        "$(awk -v t=$((b - a)) -v c="$calls" -v hz="$HZ" 'BEGIN { printf "%.2f", (c > 0) ? t * 1e6 / hz / c : 0 }')" >>"$T/$1"
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
col() { awk -v c="$2" '{ print $c }' "$T/$1" | median; }
# ratio A COLA B COLB [SUB SUBCOL]: median over rounds of A/B (each minus SUB first, if given)
ratio() {
    if [ -n "${5:-}" ]; then
        paste -d' ' "$T/$1" "$T/$3" "$T/$5" | awk -v a="$2" -v b="$4" -v s="$6" \
            '{ n = $a - $(s + 6); d = $(b + 3) - $(s + 6); if (d > 0) print n / d; else print 1e9 }' | median
    else
        paste -d' ' "$T/$1" "$T/$3" | awk -v a="$2" -v b="$4" '{ if ($(b + 3) > 0) print $a / $(b + 3); else print 1e9 }' | median
    fi
}
added() { paste -d' ' "$T/$1" "$T/direct.1" | awk '{ print $1 - $4 }' | median; }

for r in $(seq "$ROUNDS"); do
    pin 1 0
    for t in direct:$UP faultline:$PX_json nginx:$NG_json; do run "${t%%:*}.1" "${t#*:}" 1 1 post1k.lua; done
    pin 0-"$(($(nproc) - 1))" ""
    run faultline.50 "$PX_json" 50 2 post1k.lua "$PXPID_json"
    run nginx.50 "$NG_json" 50 2 post1k.lua "$NGWORKER"
    run faultline.sse "$PX_sse" 50 2 sse.lua "$PXPID_sse"
    run nginx.sse "$NG_sse" 50 2 sse.lua "$NGWORKER"
    run faultline.mock "$PX_mock" 50 2 post1k.lua "$PXPID_mock"
    run nginx.mock "$NG_mock" 50 2 post1k.lua "$NGWORKER"
done

# row NAME FIGURE REFERENCE RATIO OP BAR GOAL UNIT: prints one target's line (BAR "" = no bar)
row() {
    local v="reported, no bar"
    if [ -n "$6" ]; then
        if awk -v f="$4" -v b="$6" -v op="$5" 'BEGIN { exit !((op == "<=") ? f <= b : f >= b) }'; then
            v="met"
        else
            v="NOT MET"
            notmet+=("proxy: $1")
        fi
        v="$v (bar $5 ${6}x, goal $5 ${7}x)"
    fi
    printf '  %-44s %10s %-5s  reference %10s  ratio %5.2fx  %s\n' "$1" "$2" "$8" "$3" "$4" "$v"
}
printf '\n%s rounds of %ss, medians; ratio = the median of the per-round ratios; latency runs pinned: %s\n' \
    "$ROUNDS" "$DUR" "$([ "$PIN_OK" = 1 ] && echo yes || echo no)"
printf '  upstream: nginx return 200 (1 KiB JSON, or %s SSE events); reference: nginx reverse proxy\n' "$SSE_EVENTS"
row "CPU per 1 KiB call, c=50" "$(col faultline.50 3)" "$(col nginx.50 3)" \
    "$(ratio faultline.50 3 nginx.50 3)" "<=" 1.5 1.0 us
row "req/s, 1 KiB calls, c=50" "$(col faultline.50 2)" "$(col nginx.50 2)" \
    "$(ratio faultline.50 2 nginx.50 2)" ">=" 0.8 1.0 req/s
row "added p50, 1 KiB call, c=1" "$(added faultline.1)" "$(added nginx.1)" \
    "$(ratio faultline.1 1 nginx.1 1 direct.1 1)" "<=" 1.2 1.0 us
row "CPU per SSE event relayed, c=50" \
    "$(awk -v v="$(col faultline.sse 3)" -v n="$SSE_EVENTS" 'BEGIN { printf "%.2f", v / n }')" \
    "$(awk -v v="$(col nginx.sse 3)" -v n="$SSE_EVENTS" 'BEGIN { printf "%.2f", v / n }')" \
    "$(ratio faultline.sse 3 nginx.sse 3)" "" "" "" us
row "req/s, upstream = faultline mock-model, c=50" "$(col faultline.mock 2)" "$(col nginx.mock 2)" \
    "$(ratio faultline.mock 2 nginx.mock 2)" "" "" "" req/s
printf '  (direct to the upstream at c=1: p50 %s us; faultline %s us, nginx %s us)\n' \
    "$(col direct.1 1)" "$(col faultline.1 1)" "$(col nginx.1 1)"

# 500 concurrent slow streams through the controller, against the upstream stand-in.
rm -f "$T/up.port"
"$PY" "$ROOT/tests/e2e/proxy/upstream.py" "$T/up.port" 2>/dev/null &
pids+=($!)
wait_file "$T/up.port" || { echo "upstream stand-in did not start"; exit 1; }
px slow "127.0.0.1:$(cat "$T/up.port")"
SPID=$PXPID_slow
rss() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status"; }
idle=$(rss "$SPID")
wrk -t2 -c500 -d8s --timeout 10s -s "$T/stream.lua" "http://$PX_slow/v1/messages" >"$T/streams.out" &
wpid=$!
maxopen=0
for _ in $(seq 80); do
    kill -0 $wpid 2>/dev/null || break
    o=$(curl -s "http://$PX_slow/_faultline/state" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["calls_in_flight"])')
    [ "$o" -gt "$maxopen" ] && maxopen=$o
    sleep 0.1
done
wait $wpid
hwm=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$SPID/status")
v="met"
if [ "$maxopen" -lt 500 ] || [ "$hwm" -gt 16384 ]; then v="NOT MET"; notmet+=("proxy: 500 streams' peak RSS"); fi
printf '  %-44s %10s KiB  (idle %s KiB; streams in flight at most %s)  bar <= 16384 KiB with 500 in flight: %s\n' \
    "peak RSS (VmHWM), 500 concurrent streams" "$hwm" "$idle" "$maxopen" "$v"
grep -E "Non-2xx|Socket errors" "$T/streams.out"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${#notmet[@]}" -gt 0 ]; then
    printf 'targets NOT MET: %s\n' "$(IFS=';'; echo "${notmet[*]}")"
fi
exit 0
