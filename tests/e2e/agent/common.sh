# tests/e2e/agent/common.sh: helpers for the `faultline agent` end-to-end tests, sourced after
# tests/e2e/lib.sh. Every agent run is under `timeout`.
AGENT_DIR="$FAULTLINE_ROOT/tests/e2e/agent"
# the interpreter itself: a version-manager shim in front of python3 can cost seconds a start
PYTHON=$(python3 -c 'import sys; print(sys.executable)')
export AGENT_DIR PYTHON

# start_mock NAME SCRIPT: starts `faultline mock-model` on a free port with a record file;
# exports NAME_URL (http://127.0.0.1:PORT) and NAME_REC (the record file).
start_mock() {
    local name=$1 script=$2
    start_bg "$FAULTLINE" mock-model --script "$script" --listen 127.0.0.1:0 \
        --ready-file "$TMP/$name.ready" --record "$TMP/$name.rec" >/dev/null 2>"$TMP/$name.log"
    if ! wait_file 10 "$TMP/$name.ready"; then
        cat "$TMP/$name.log"
        echo "mock-model $name did not start"
        return 1
    fi
    export "${name}_URL=http://$(cat "$TMP/$name.ready")" "${name}_REC=$TMP/$name.rec"
}

# agent API URL ARGS...: runs the agent against URL speaking API (anthropic, openai,
# responses) with the base URL in the variable that API reads; at most 60 s.
agent() {
    local api=$1 url=$2
    shift 2
    if [ "$api" = anthropic ]; then
        ANTHROPIC_BASE_URL=$url OPENAI_BASE_URL= timeout 60 "$FAULTLINE" agent --api "$api" "$@"
    else
        OPENAI_BASE_URL=$url/v1 ANTHROPIC_BASE_URL= timeout 60 "$FAULTLINE" agent --api "$api" "$@"
    fi
}

# requests FILE: how many requests a mock-model record file holds.
requests() { [ -f "$1" ] && wc -l <"$1" | tr -d ' ' || echo 0; }

export -f agent requests
