#!/usr/bin/env bash
# `faultline run --sandbox oci`: the same run in the oci backend (podman, docs/sandbox.md):
# the reference agent reaches the controller through the container's network namespace, the
# run is scored and the report names the backend; nothing is left behind.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/run/lib-run.sh"
export TMPDIR="$TMP/tmp"
mkdir -p "$TMPDIR"

test_expect "--sandbox oci: scored, the backend in the report" '
    command -v podman >/dev/null || { echo "podman missing: run scripts/bootstrap"; exit 1; }
    make_project p
    write_exp p/exp.yaml ocirun "echo cwd=\$(pwd) sandbox=\$FAULTLINE_SANDBOX; $RUN_AGENT" "test -d /work"
    commit p
    rc=0; timeout 300 "$FAULTLINE" run p/exp.yaml --sandbox oci --out out/o.json >run.out 2>run.err || rc=$?
    test "$rc" = 0 || { tail run.err; exit 1; }
    test "$(jq -r .verdict out/o.json)" = scored
    case "$(jq -r .sandbox out/o.json)" in oci*) ;; *) jq .sandbox out/o.json; exit 1 ;; esac
    grep -qx "cwd=/work sandbox=1" out/o/rep-001/agent.out
    grep -q "hello from the mock model" out/o/rep-001/agent.out
    no_leftovers p "$TMP/out/o"
'
test_done
