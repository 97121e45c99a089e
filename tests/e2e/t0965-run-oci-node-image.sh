#!/usr/bin/env bash
# `faultline run --sandbox oci` with the experiment's `sandbox_image: node`: the repetitions
# run in the self-contained -node image (no bind of the host's /usr), where Node.js runs and
# the reference agent (the bound faultline, whose libraries the image holds) reaches the
# controller through the container's network namespace; the run is scored. `--sandbox-image
# node` alone (no --sandbox, no sandbox_image) picks the oci backend for that run; with
# `--sandbox native` an image is ignored with a warning.
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
test_expect "--sandbox-image node alone: the run is an oci run in the -node image" '
    command -v podman >/dev/null || { echo "podman missing: run scripts/bootstrap"; exit 1; }
    make_project q
    write_exp q/exp.yaml ocicli "node -e \"console.log(\\\"cli-\\\" + (6 * 7))\"; $RUN_AGENT" "true"
    commit q
    rc=0; timeout 300 "$FAULTLINE" run q/exp.yaml --sandbox-image node --out out/q.json >runq.out 2>runq.err || rc=$?
    test "$rc" = 0 || { tail runq.err; exit 1; }
    test "$(jq -r .sandbox out/q/rep-001/rep.json)" = oci
    grep -qx cli-42 out/q/rep-001/agent.out
    no_leftovers q "$TMP/out/q"
'

test_expect "--sandbox native with an image: a warning, the native sandbox" '
    make_project n
    write_exp n/exp.yaml nat "true" "true" "sandbox_image: node"
    commit n
    rc=0; timeout 120 "$FAULTLINE" run n/exp.yaml --sandbox native --out out/n.json >runn.out 2>runn.err || rc=$?
    test "$rc" = 2 || { echo "exit $rc"; tail runn.err; exit 1; }  # no model call: no fault fired
    grep -q "warning: the sandbox image .node. is ignored: the native sandbox runs no image" runn.err
    test "$(jq -r .sandbox out/n/rep-000/rep.json)" = native
'
test_done
