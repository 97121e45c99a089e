#!/usr/bin/env bash
# kill -9 of an MCP shim (faultline mcp) mid-run: its plan_loaded has no component_end, so the
# repetition ends with an error naming it, although the agent carried on and exited 0; the run
# still writes its report. A shim that ends with its agent is paired and leaves no error.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
cd "$TMP"

# a project whose agent calls the slow tool of the test server behind the shim
shim_project() { # DIR MS
    make_project "$1"
    cp "$FAULTLINE_ROOT/tests/e2e/mcp/fake_server.py" "$1/"
    cat >"$1/slow.yaml" <<Y
name: slow
rules:
  - name: call-slow
    when: {first_turn: true, tool_offered: mcp__tools__slow}
    reply:
      text: "calling slow"
      tool_calls: [{name: mcp__tools__slow, input: {ms: $2}}]
fallback:
  text: "done: {{last_tool_result}}"
Y
    write_exp "$1/exp.yaml" shimkill \
        "echo agent-started; faultline agent --quiet --mcp tools=\"faultline mcp --name tools -- python3 fake_server.py\" --prompt go" \
        "true" "model: {mock: slow.yaml}"
    commit "$1"
}

export -f shim_project

test_expect "the shim killed: a repetition error naming it, a report" '
    shim_project p 30000
    out=$TMP/out
    "$FAULTLINE" run p/exp.yaml --out $out/r.json >run.out 2>run.err &
    pid=$!
    trap "kill $pid 2>/dev/null || true" EXIT
    wait_for 60 grep -q "\"kind\":\"tool_call\"" $out/r/rep-000/events.jsonl || { cat run.err; exit 1; }
    # the shim itself (the oldest of that command line), not the sh -c the agent started it with
    shim=$(pgrep -o -f -x "faultline mcp --name tools -- python3 fake_server.py")
    test -n "$shim"
    kill -KILL $shim
    rc=0
    for i in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    wait $pid || rc=$?
    test "$rc" = 1
    test "$(jq -r .status $out/r/rep-000/rep.json)" = error
    jq -r .error $out/r/rep-000/rep.json | grep -q "an MCP shim (faultline mcp, pid [0-9]* in the sandbox) ended without a word"
    test "$(jq -r .verdict $out/r.json)" = aborted
    no_leftovers p "$out/r"
'

test_expect "a shim that ends with its agent: paired, no error" '
    shim_project q 10
    rc=0; "$FAULTLINE" run q/exp.yaml --out $TMP/o2/r.json >run2.out 2>run2.err || rc=$?
    test "$(jq -r .status $TMP/o2/r/rep-000/rep.json)" = complete
    grep -q "\"kind\":\"component_end\"" $TMP/o2/r/rep-000/events.jsonl
    grep "\"kind\":\"plan_loaded\"" $TMP/o2/r/rep-000/events.jsonl | grep -q "\"pid\":"
'
test_done
