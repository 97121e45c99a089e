#!/usr/bin/env bash
# faultline init, then faultline run: a new user's first run is two commands, offline. init
# writes a commented experiment and its mock script (untracked files of the project do not
# make the tree dirty when they are the run's own inputs), never replaces a file, and refuses a
# fault it writes no experiment for.
. "$(dirname "$0")/lib.sh"

chmod 711 "$TMP"
export NM="$FAULTLINE_ROOT/tests/interop/node_modules"
mkproj() {
    mkdir -p "$1"
    git -C "$1" init -q
    echo "a project" >"$1/README"
    git -C "$1" add README
    git -C "$1" -c user.name=t -c user.email=t@localhost commit -qm init
}
export -f mkproj

test_expect "init writes both files; run scores them in the sandbox (reference agent, llm.rate_limit)" '
    mkproj p1
    cd p1
    "$FAULTLINE" init >../out1
    grep -q "faultline/llm.rate_limit.yaml" ../out1
    grep -q "faultline/llm.rate_limit.model.yaml" ../out1
    grep -q "^# " faultline/llm.rate_limit.yaml
    "$FAULTLINE" validate faultline/llm.rate_limit.yaml
    "$FAULTLINE" run faultline/llm.rate_limit.yaml --quiet --out "$PWD/../r1.json"
    test "$(jq -r .verdict ../r1.json)" = scored
    test "$(jq -r ".repetitions[0].verify.exit_code" ../r1.json)" = 0
    test "$(jq -r ".repetitions[1].faulted" ../r1.json)" = true
'

test_expect "an MCP fault for the reference agent: tool.error surfaced" '
    mkproj p2
    cd p2
    "$FAULTLINE" init --agent reference --fault tool.error >../out2
    "$FAULTLINE" run faultline/tool.error.yaml --quiet --ro-path "$NM" --out "$PWD/../r2.json"
    test "$(jq -r .verdict ../r2.json)" = scored
    jq -e ".result.probes[] | select(.id == \"failure_surfaced\") | .pass_rate == 1" ../r2.json
'

test_expect "a second init replaces nothing (exit 1) and leaves the edit made since" '
    mkproj p3
    cd p3
    "$FAULTLINE" init --fault llm.latency >/dev/null
    echo "# my edit" >>faultline/llm.latency.model.yaml
    before=$(sha256sum faultline/llm.latency.model.yaml)
    set +e
    "$FAULTLINE" init --fault llm.latency 2>../err3
    rc=$?
    set -e
    test "$rc" = 1
    grep -q "exists already" ../err3
    test "$(sha256sum faultline/llm.latency.model.yaml)" = "$before"
'

test_expect "a fault init writes nothing for, and codex with an MCP fault, exit 2 with the reason" '
    mkproj p4
    cd p4
    set +e
    "$FAULTLINE" init --fault egress.dns_fail 2>err1; rc1=$?
    "$FAULTLINE" init --agent codex --fault tool.error 2>err2; rc2=$?
    "$FAULTLINE" init --fault no.such 2>err3; rc3=$?
    set -e
    test "$rc1" = 2
    test "$rc2" = 2
    test "$rc3" = 2
    grep -q "network egress" err1
    grep -q "llm.\* faults only" err2
    grep -q "unknown fault" err3
    test ! -e faultline
'

test_done
