#!/usr/bin/env bash
# faultline mcp: no process of the server's tree outlives the shim, whatever ends it: the
# server exiting by itself, the client's EOF, SIGTERM to the shim, or SIGKILL of the shim
# (which runs no cleanup: the supervisor between the shim and the server does it). The tree
# (tests/e2e/mcp/tree_server.py) has a descendant in the server's group and one that escaped
# with setsid, with a child of its own; all hold the server's stdout.
. "$(dirname "$0")/lib.sh"
M="$FAULTLINE_ROOT/tests/e2e/mcp"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
export M PY

# count MARK: how many processes have MARK in their command line.
count() { pgrep -f -c -- "$1" || true; }
# settle MARK: waits (up to 10 s) for no process with MARK to be left; prints how many are.
settle() {
    local i n
    for i in $(seq 200); do
        n=$(count "$1")
        [ "$n" -eq 0 ] && break
        sleep 0.05
    done
    echo "$n"
}
# tree_up MARK: the server's 3 descendants are running.
tree_up() { [ "$(count "$1-")" -ge 3 ]; }
# start MARK MODE: the shim on fifos in $TMP, the client's end held on fds 3 (in) and 4 (out);
# sets SHIM; waits until the whole tree is up (the server, 3 descendants).
start() {
    rm -f "$TMP/in.$1" "$TMP/out.$1"
    mkfifo "$TMP/in.$1" "$TMP/out.$1"
    "$FAULTLINE" mcp --grace-ms 500 -- "$PY" "$M/tree_server.py" "$1" "$2" \
        <"$TMP/in.$1" >"$TMP/out.$1" 2>>"$TMP/shim.log" &
    SHIM=$!
    _pids+=("$SHIM")
    exec 3>"$TMP/in.$1" 4<"$TMP/out.$1"
    wait_for 10 tree_up "$1" || { echo "the tree did not start"; return 1; }
    echo "before: $(count "$1") processes with the marker (shim, supervisor, server, 3 descendants)"
}
export -f count settle tree_up start

for how in exit eof sigterm sigkill; do
    test_expect "$how: no process of the server's tree is left" '
        MARK=fl-t0430-'$how'-$$-$RANDOM
        case '$how' in
        exit) start "$MARK" exit; echo "{}" >&3 ;;
        eof) start "$MARK" eof; exec 3>&- ;;
        sigterm) start "$MARK" stay; kill -TERM "$SHIM" ;;
        sigkill) start "$MARK" stay; kill -KILL "$SHIM" ;;
        esac
        n=$(settle "$MARK")
        echo "after: $n"
        pgrep -af -- "$MARK" || true
        if [ "$n" -ne 0 ]; then
            echo "$n processes survived"
            for p in $(pgrep -f -- "$MARK"); do kill -KILL "$p"; done # ours: they carry $MARK
            exit 1
        fi
        # the shim itself: exited, with the status its end calls for
        for i in $(seq 100); do kill -0 "$SHIM" 2>/dev/null || break; sleep 0.05; done
        rc=0; wait "$SHIM" || rc=$?
        case '$how' in
        exit) want=7 ;; eof) want=0 ;; sigterm) want=143 ;; sigkill) want=137 ;;
        esac
        if [ "$rc" -ne "$want" ]; then echo "shim status $rc, want $want"; exit 1; fi
    '
done
test_done
