#!/usr/bin/env bash
# faultline run as an unprivileged user (the usual case on a workstation): the sandbox's
# namespaces belong to that user's own user namespace, so the controller's health is asked
# from inside it (sandbox_enter_net), the agent reaches the controller, the fault reaches the
# agent, verify runs, and the run scores as it does for root; nothing is left behind.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
if [ "$(id -u)" != 0 ]; then
    echo "t0914 needs root to become another user (setpriv)"; exit 1
fi
U=$TMP/u
mkdir -p "$U/tmp" "$U/bin"
cp "$FAULTLINE" "$U/bin/faultline"
make_project "$U/p"
write_exp "$U/p/exp.yaml" unpriv "$RUN_AGENT; echo done > f.txt; git status --porcelain" \
    "test -f f.txt"
commit "$U/p"
chown -R 65534:65534 "$U"
export U
as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups \
        env HOME="$U" TMPDIR="$U/tmp" XDG_STATE_HOME="$U/state" PATH="$U/bin:/usr/bin:/bin" "$@"
}
export -f as_nobody

test_expect "a run as nobody: the fault reaches the agent, verify runs, the verdict is scored" '
    rc=0; (cd "$U/p" && as_nobody faultline run exp.yaml --out "$U/out/r.json") >run.out 2>run.err || rc=$?
    test "$rc" = 0 || { echo "exit $rc"; cat run.err; exit 1; }
    test "$(jq -r .verdict "$U/out/r.json")" = scored
    test "$(jq -r "[.repetitions[] | select(.status == \"complete\")] | length" "$U/out/r.json")" = 2
    test "$(jq -r .verify.exit_code "$U/out/r/rep-001/rep.json")" = 0
    # the rate limit reached the reference agent through the controller
    test "$(jq -r "select(.kind == \"fault_injected\") | .fault" "$U/out/r/rep-001/events.jsonl")" = llm.rate_limit
    # git works in the workspace: the only change is the file the agent wrote
    grep -qx "?? f.txt" "$U/out/r/rep-000/agent.out"
    if ls "$U/tmp" | grep -q faultline-run; then echo "left: $(ls "$U/tmp")"; exit 1; fi
    if pgrep -f -- "$U/out/r" >/dev/null; then pgrep -af -- "$U/out/r"; exit 1; fi
'
test_done
