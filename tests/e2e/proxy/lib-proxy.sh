# tests/e2e/proxy/lib-proxy.sh: helpers for the controller's end-to-end tests; source it after
# lib.sh. Daemons start at the top level of a test script (so cleanup knows their PIDs) and
# their addresses are exported for the test bodies.
PROXY_HELPERS="$FAULTLINE_ROOT/tests/e2e/proxy"
# The interpreter itself, not a version-manager shim (which can take 100s of ms to start).
PY=$(python3 -c 'import sys; print(sys.executable)')
export PROXY_HELPERS PY

# start_upstream: the scriptable stand-in model API (upstream.py); sets and exports UP.
start_upstream() {
    rm -f "$TMP/up.port"
    start_bg "$PY" "$PROXY_HELPERS/upstream.py" "$TMP/up.port"
    UP_PID=$LAST_PID
    wait_file 10 "$TMP/up.port" || { echo "upstream did not start"; return 1; }
    UP="http://127.0.0.1:$(cat "$TMP/up.port")"
    export UP UP_PID
}

# write_plan FILE FAULTS_JSON [CEILING]: a plan with run id t-run and canary E-FAULTLINE-0123abcd.
write_plan() {
    printf '{"version":1,"run":"t-run","canary":"E-FAULTLINE-0123abcd","faults":%s,"abort":{"cost_usd_above":%s}}\n' \
        "$2" "${3:-100}" >"$1"
}

# start_proxy PLAN [ARGS...]: starts the controller against $UP; sets and exports A (its
# HOST:PORT), PROXY_PID and EVENTS. Log in $TMP/proxy.log.
start_proxy() {
    local plan=$1; shift
    rm -f "$TMP/ready"
    EVENTS="$TMP/events.jsonl"
    start_bg "$FAULTLINE" proxy --plan "$plan" --events "$EVENTS" --upstream-anthropic "$UP" \
        --upstream-openai "$UP/v1" --ready-file "$TMP/ready" --log-level info "$@" \
        2>>"$TMP/proxy.log"
    PROXY_PID=$LAST_PID
    wait_file 10 "$TMP/ready" || { echo "proxy did not start"; cat "$TMP/proxy.log"; return 1; }
    A=$(cat "$TMP/ready")
    export A PROXY_PID EVENTS
}

# stop_proxy: SIGTERM and wait (at most 5 s).
stop_proxy() {
    kill -TERM "$PROXY_PID" 2>/dev/null
    local end=$((SECONDS + 5))
    while kill -0 "$PROXY_PID" 2>/dev/null; do
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.02
    done
    wait "$PROXY_PID" 2>/dev/null
    return 0
}

# ev KIND [JQ_FILTER]: prints the events of KIND (one compact JSON a line), filtered.
ev() {
    jq -c "select(.kind == \"$1\")${2:+ | $2}" "$EVENTS"
}

# upstream_log: every request the upstream saw, as a JSON array.
upstream_log() { curl -sS "$UP/_upstream/log"; }

export -f ev upstream_log
