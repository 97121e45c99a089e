#!/usr/bin/env bash
# The oci backend (podman with runc, the image made from local files on first use): the same
# rules as the native sandbox, for real. docker's argument vector is checked in
# tests/unit/test_sandbox.c (no docker engine runs here).
. "$(dirname "$0")/lib.sh"

chmod 711 "$TMP"
mkdir -p "$TMP/work"
export WORK="$TMP/work"
sbx() { "$FAULTLINE" sandbox exec --sandbox oci --work "$WORK" "$@"; }
export -f sbx

test_expect "the oci health check passes (the default image is there or made)" '
    "$FAULTLINE" sandbox check --sandbox oci | grep -q "oci: healthy"
    podman image inspect localhost/faultline-sandbox:1 >/dev/null
'

test_expect "it runs as nobody with no capabilities in /work, which reaches the host" '
    sbx -- "id -u; pwd; grep ^CapEff /proc/self/status; echo inside >/work/made" >out
    grep -qx 65534 out
    grep -qx /work out
    grep -q "CapEff:.0000000000000000" out
    grep -qx inside "$WORK/made"
'

test_expect "system directories are read-only, root-owned files unreadable" '
    if sbx -- "echo x >/usr/t0961-x" 2>err; then echo "wrote /usr"; exit 1; fi
    grep -q "Read-only file system" err
    test ! -e /usr/t0961-x
    if sbx -- "cat /etc/shadow" >out 2>err; then echo "read shadow"; exit 1; fi
    refute grep -q "^root:" out
'

test_expect "only the named variables get in, and its only interface is lo" '
    export T0961_SECRET=hunter2 T0961_NAMED=visible
    sbx --env T0961_NAMED -- env >out
    refute grep -q hunter2 out
    grep -qx T0961_NAMED=visible out
    grep -qx FAULTLINE_SANDBOX=1 out
    sbx -- "cat /proc/net/dev" >dev
    test "$(tail -n +3 dev | wc -l)" = 1
    tail -n +3 dev | grep -qE "^ *lo:"
'

test_expect "no container is left behind" '
    sbx -- "(sleep 300 &) ; echo started" >out
    grep -qx started out
    test -z "$(podman ps -a --filter name=^faultline- --format {{.Names}})"
'

test_done
