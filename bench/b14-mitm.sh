#!/usr/bin/env bash
# bench/b14-mitm.sh: what the egress interception adds to an HTTPS request, against nginx
# terminating TLS as a reverse proxy, in one run (docs/performance.md, "egress interception").
#
# The origin costs nearly nothing: nginx over TLS (a test CA made here, a certificate for
# api.github.com), `return 200` with a fixed 1 KiB body, one worker. Three paths to it, each
# one keep-alive TLS connection of sequential GETs (bench/mitm/client.py, p50 of N):
#   direct     the client to the origin
#   faultline  the client through `faultline proxy`'s egress listener: CONNECT, then TLS
#              with the run's CA (the host is intercepted: an egress.credential_401 whose
#              after_calls is never reached), each request decided by the plan, recorded, and
#              forwarded over a verified, pooled TLS connection to the origin (--resolve,
#              --upstream-ca)
#   nginx      the client to nginx terminating TLS (the same kind of certificate) and
#              proxying to the origin over TLS (verified, keep-alive, session reuse)
# added p50 = each path's minus direct's in the same round; the row's ratio is the median over
# ROUNDS of faultline's added / nginx's added. Bar: <= 1.5x. With 2+ CPUs the client is
# pinned to CPU 0 and the servers to CPU 1. Everything binds 127.0.0.1 and is stopped by PID.
set -u
: "${FAULTLINE:?run through make bench (bench/run sets FAULTLINE)}"
ROOT=${FAULTLINE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
ROUNDS=${ROUNDS:-7}
N=${N:-1500}
T=$(mktemp -d "${TMPDIR:-/tmp}/faultline-bench.XXXXXX")
PY=$(python3 -c 'import sys; print(sys.executable)')
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "b14-mitm: nginx is not installed: NOT MET (not measured)"; exit 1; }
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# the origin's PKI
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -keyout "$T/ca.key" \
    -out "$T/test-ca.pem" -subj "/CN=bench CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/srv.key" -out "$T/srv.csr" \
    -subj "/CN=api.github.com" 2>/dev/null
printf 'subjectAltName=DNS:api.github.com\nextendedKeyUsage=serverAuth\n' >"$T/srv.ext"
openssl x509 -req -in "$T/srv.csr" -CA "$T/test-ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 2 \
    -out "$T/srv.pem" -extfile "$T/srv.ext" 2>/dev/null
BODY=$(head -c 1024 /dev/zero | tr '\0' 'x')

nginx_start() { # NAME SERVERS
    mkdir -p "$T/$1"
    cat >"$T/$1/nginx.conf" <<NGINX
worker_processes 1;
pid $T/$1/nginx.pid;
error_log $T/$1/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $T/$1/body;
    proxy_temp_path $T/$1/proxy;
    fastcgi_temp_path $T/$1/fastcgi;
    uwsgi_temp_path $T/$1/uwsgi;
    scgi_temp_path $T/$1/scgi;
    keepalive_requests 1000000;
    ssl_protocols TLSv1.2 TLSv1.3;
$2
}
NGINX
    "$NGINX" -p "$T/$1" -c "$T/$1/nginx.conf" -g 'daemon off;' 2>"$T/$1/stderr" &
    pids+=($!)
}
UPORT=$(free_port) NPORT=$(free_port)
nginx_start up "
    server { listen 127.0.0.1:$UPORT ssl; ssl_certificate $T/srv.pem; ssl_certificate_key $T/srv.key;
             location / { default_type application/json; return 200 '$BODY'; } }"
UPPID=${pids[-1]}
nginx_start ngp "
    upstream upt { server 127.0.0.1:$UPORT; keepalive 64; }
    server { listen 127.0.0.1:$NPORT ssl; ssl_certificate $T/srv.pem; ssl_certificate_key $T/srv.key;
             location / { proxy_pass https://upt; proxy_http_version 1.1; proxy_set_header Connection \"\";
                          proxy_ssl_server_name on; proxy_ssl_name api.github.com; proxy_ssl_verify on;
                          proxy_ssl_trusted_certificate $T/test-ca.pem; proxy_ssl_session_reuse on;
                          proxy_buffering off; } }"
NGPID=${pids[-1]}

printf '%s\n' '{"version":1,"run":"bench","canary":"E-FAULTLINE-00000000","faults":[{"kind":"egress.credential_401","safety":"fail-safe","injectors":["controller-egress"],"match":{"host":"api.github.com"},"after_calls":1000000000000}],"abort":{"cost_usd_above":1000000}}' >"$T/plan.json"
mkdir -p "$T/ca"
"$FAULTLINE" proxy --plan "$T/plan.json" --events "$T/events.jsonl" --ready-file "$T/px.ready" \
    --egress-listen 127.0.0.1:0 --egress-ready-file "$T/eg.ready" --ca-dir "$T/ca" \
    --upstream-ca "$T/test-ca.pem" --resolve "api.github.com:$UPORT:127.0.0.1" 2>"$T/proxy.log" &
pids+=($!)
PXPID=$!
wait_file "$T/eg.ready" || { echo "b14-mitm: faultline proxy did not start"; cat "$T/proxy.log"; exit 1; }
EG=$(cat "$T/eg.ready")

c() { "${PIN[@]}" "$PY" "$ROOT/bench/mitm/client.py" "$@"; }
PIN=()
# each path answers before anything is measured
sleep 0.3
c "$T/test-ca.pem" api.github.com "$UPORT" 20 >/dev/null || { echo "b14-mitm: the origin does not answer"; cat "$T/up/stderr"; exit 1; }
c "$T/test-ca.pem" api.github.com "$NPORT" 20 >/dev/null || { echo "b14-mitm: the nginx proxy does not answer"; cat "$T/ngp/stderr"; exit 1; }
c "$T/ca/ca.pem" api.github.com "$UPORT" 20 "$EG" >/dev/null || { echo "b14-mitm: the interception does not answer"; cat "$T/proxy.log"; exit 1; }
jq -se 'any(.[]; .kind == "egress_request" and .intercepted == true and .status == 200)' "$T/events.jsonl" >/dev/null ||
    { echo "b14-mitm: the faultline path was not intercepted"; exit 1; }

if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    for p in "$UPPID" "$NGPID" "$PXPID" $(pgrep -P "$UPPID") $(pgrep -P "$NGPID"); do taskset -pc 1 "$p" >/dev/null; done
    PIN=(taskset -c 0)
    pinned=yes
else
    pinned=no
fi
: >"$T/rounds"
for r in $(seq "$ROUNDS"); do
    d=$(c "$T/test-ca.pem" api.github.com "$UPORT" "$N") || exit 1
    f=$(c "$T/ca/ca.pem" api.github.com "$UPORT" "$N" "$EG") || exit 1
    n=$(c "$T/test-ca.pem" api.github.com "$NPORT" "$N") || exit 1
    echo "$d $f $n" >>"$T/rounds"
done
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
D=$(awk '{print $1}' "$T/rounds" | median)
FA=$(awk '{print $2 - $1}' "$T/rounds" | median)
NA=$(awk '{print $3 - $1}' "$T/rounds" | median)
RATIO=$(awk '{ d = $3 - $1; print (d > 0) ? ($2 - $1) / d : 1e9 }' "$T/rounds" | median)
v=met
awk -v r="$RATIO" 'BEGIN { exit !(r <= 1.5) }' || v="NOT MET"
printf '\n%s rounds of %s requests, medians; ratio = the median of the per-round ratios; pinned: %s\n' "$ROUNDS" "$N" "$pinned"
printf '  origin: nginx over TLS, return 200 (1 KiB); reference: nginx terminating TLS, proxying over TLS\n'
printf '  %-44s %8s us  reference %8s us  ratio %5.2fx  %s (bar <= 1.5x)\n' \
    "added p50, intercepted HTTPS request" "$FA" "$NA" "$RATIO" "$v"
printf '  (direct to the origin: p50 %s us; per round "direct faultline nginx": %s)\n' "$D" "$(paste -sd';' "$T/rounds")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$v" = met ] || echo "targets NOT MET: mitm: added p50 of an intercepted request"
exit 0
