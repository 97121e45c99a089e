# tests/e2e/lib.sh: sourced by every end-to-end test (git's t/test-lib.sh, much smaller).
#
#   . "$(dirname "$0")/lib.sh"
#   test_expect "what it checks" 'shell commands that must succeed'
#   ...
#   test_done
#
# Each test script gets a fresh temp dir ($TMP, removed at exit), $FAULTLINE (the binary under
# test; built one if unset), helpers for daemons on 127.0.0.1 with a free port, waits with a
# timeout, and cleanup that kills only the PIDs it started. test_done prints
# "N passed, N failed" and exits non-zero on any failure.
set -u
: "${FAULTLINE_ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${FAULTLINE:=$FAULTLINE_ROOT/faultline}"
export FAULTLINE FAULTLINE_ROOT
TMP=$(mktemp -d "${TMPDIR:-/tmp}/faultline-e2e.XXXXXX")
# `faultline run` records each run in a history database: the test's own, never the user's
export XDG_STATE_HOME="$TMP/state"
unset FAULTLINE_HISTORY
EXAMPLES="$FAULTLINE_ROOT/examples"
_passed=0 _failed=0 _pids=()

# Kills the recorded PIDs: SIGTERM, then up to ~5 s each to exit (polled with kill -0), then
# SIGKILL, so a daemon that ignores SIGTERM cannot hang the suite.
_cleanup() {
    local p i
    for p in "${_pids[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${_pids[@]}"; do
        for i in $(seq 100); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.05
        done
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$TMP"
}
trap _cleanup EXIT

# test_expect DESCRIPTION COMMANDS: runs COMMANDS in a subshell with `set -e`, in $TMP.
test_expect() {
    local desc=$1 body=$2 out
    if out=$(cd "$TMP" && bash -ec "$body" 2>&1); then
        _passed=$((_passed + 1)); echo "ok - $desc"
    else
        _failed=$((_failed + 1)); echo "FAIL - $desc"; printf '%s\n' "$out" | sed 's/^/    /' | tail -n 30
    fi
}

test_done() {
    echo "$_passed passed, $_failed failed"
    [ "$_failed" -eq 0 ]
    exit $?
}

# free_port: prints a TCP port on 127.0.0.1 that was free a moment ago.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_bg CMD...: starts a daemon, records its PID for cleanup, sets $LAST_PID.
start_bg() {
    "$@" &
    LAST_PID=$!
    _pids+=("$LAST_PID")
}

# wait_for SECONDS COMMAND...: retries COMMAND every 50 ms until it succeeds or time runs out.
wait_for() {
    local secs=$1; shift
    local end=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.05
    done
}

# wait_file SECONDS FILE: waits until FILE exists and is not empty.
wait_file() { wait_for "$1" test -s "$2"; }

# refute COMMAND...: fails (status 1, with a message) when COMMAND succeeds. Use it instead of
# `! COMMAND`, which `set -e` ignores everywhere but on a body's last line (so it could never
# fail); tests/lint-assertions refuses the `!` form and non-final `&&` chains of checks.
refute() {
    if "$@"; then
        echo "refute: this succeeded and should not have: $*" >&2
        return 1
    fi
    return 0
}

# tls_servers: in $TMP, three self-signed certificates (cert.pem for 127.0.0.1 and localhost,
# name.pem for localhost only, other.pem for other.example) and two TLS model stand-ins
# (tests/e2e/agent/tls_model.py) serving cert.pem and name.pem; sets and exports PORT and NPORT.
tls_servers() {
    command -v openssl >/dev/null || { echo "openssl CLI missing"; exit 1; }
    (cd "$TMP" &&
        openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 \
            -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2>/dev/null &&
        openssl req -x509 -newkey rsa:2048 -nodes -keyout other-key.pem -out other.pem -days 2 \
            -subj /CN=other -addext "subjectAltName=DNS:other.example" 2>/dev/null &&
        openssl req -x509 -newkey rsa:2048 -nodes -keyout name-key.pem -out name.pem -days 2 \
            -subj /CN=localhost -addext "subjectAltName=DNS:localhost" 2>/dev/null) ||
        { echo "tls_servers: openssl failed"; exit 1; }
    local model="$FAULTLINE_ROOT/tests/e2e/agent/tls_model.py"
    start_bg python3 "$model" "$TMP/cert.pem" "$TMP/key.pem" "$TMP/tls.port"
    start_bg python3 "$model" "$TMP/name.pem" "$TMP/name-key.pem" "$TMP/name.port"
    wait_file 10 "$TMP/tls.port" || echo "the TLS server did not start"
    wait_file 10 "$TMP/name.port" || echo "the second TLS server did not start"
    PORT=$(cat "$TMP/tls.port") NPORT=$(cat "$TMP/name.port")
    export PORT NPORT
}

export TMP EXAMPLES
export -f free_port wait_for wait_file refute
