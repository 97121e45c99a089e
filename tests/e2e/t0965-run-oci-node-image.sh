#!/usr/bin/env bash
# `faultline run --sandbox oci` with the experiment's `sandbox_image: node`: the repetitions
# run in the self-contained -node image (no bind of the host's /usr), where Node.js runs and
# the reference agent (the bound faultline, whose libraries the image holds) reaches the
# controller through the container's network namespace; the run is scored.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"
cd "$TMP"

test_expect "sandbox_image: node: the run happens in the -node image, scored" '
    command -v podman >/dev/null || { echo "podman missing: run scripts/bootstrap"; exit 1; }
    make_project p
    agent="if grep -q \" /usr \" /proc/self/mountinfo; then echo host-usr; fi; node -e \"console.log(\\\"node-\\\" + (6 * 7))\"; $RUN_AGENT"
    write_exp p/exp.yaml ocinode "$agent" "node -e \"process.exit(0)\"" "sandbox_image: node"
    commit p
    rc=0; timeout 300 "$FAULTLINE" run p/exp.yaml --sandbox oci --out out/o.json >run.out 2>run.err || rc=$?
    test "$rc" = 0 || { tail run.err; exit 1; }
    test "$(jq -r .verdict out/o.json)" = scored
    grep -qx node-42 out/o/rep-001/agent.out
    grep -q "hello from the mock model" out/o/rep-001/agent.out
    refute grep -q host-usr out/o/rep-000/agent.out out/o/rep-001/agent.out
    test "$(jq -r .verify.exit_code out/o/rep-001/rep.json)" = 0
    no_leftovers p "$TMP/out/o"
    test -z "$(podman ps -a --filter name=^faultline- --format {{.Names}})"
'
test_done
