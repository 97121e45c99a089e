#!/usr/bin/env bash
# The oci backend's -node image (docs/sandbox.md): localhost/faultline-sandbox-node:1, made on
# first use from this machine's files (no registry), self-contained (its own /usr and /etc,
# none of the host's bound in) with Node.js, npm and git, and run with the same rules as the
# default image. `--sandbox-image node` names it; a Containerfile FROM it extends it.
# podman keeps this test's images in a store of its own under $TMP (CONTAINERS_STORAGE_CONF),
# so that the image is made from nothing here without removing the one other runs use.
. "$(dirname "$0")/lib.sh"

NODE_IMAGE=localhost/faultline-sandbox-node:1
chmod 711 "$TMP"
mkdir -p "$TMP/storage" "$TMP/storage-run"
printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' \
    "$TMP/storage" "$TMP/storage-run" >"$TMP/storage.conf"
export CONTAINERS_STORAGE_CONF="$TMP/storage.conf"
mkdir -p "$TMP/work"
export WORK="$TMP/work" NODE_IMAGE
sbx() { "$FAULTLINE" sandbox exec --sandbox oci --work "$WORK" "$@"; }
export -f sbx

test_expect "sandbox check --sandbox-image node makes the image when missing, then runs true" '
    command -v podman >/dev/null || { echo "podman missing: run scripts/bootstrap"; exit 1; }
    test "$(podman info --format {{.Store.GraphRoot}})" = "$TMP/storage"
    if podman image exists $NODE_IMAGE; then echo "the test store has the image"; exit 1; fi
    timeout 300 "$FAULTLINE" sandbox check --sandbox oci --sandbox-image node >out 2>err ||
        { cat err; exit 1; }
    grep -q "oci: healthy" out
    podman image exists $NODE_IMAGE
    # labelled with the libraries of the faultline that made it
    podman image inspect --format "{{index .Labels \"faultline.libs\"}}" $NODE_IMAGE >libs
    grep -q "libc.so.6" libs
    id=$(podman image inspect --format {{.Id}} $NODE_IMAGE)
    # made once: a second check finds it and keeps it
    "$FAULTLINE" sandbox check --sandbox oci --sandbox-image $NODE_IMAGE | grep -q "oci: healthy"
    test "$(podman image inspect --format {{.Id}} $NODE_IMAGE)" = "$id"
'

test_expect "node, npm, git and the bound faultline run inside" '
    sbx --sandbox-image node -- "node -e \"console.log(6 * 7)\"; npm --version; git --version; faultline --version" >out 2>err ||
        { cat err; exit 1; }
    grep -qx 42 out
    grep -qx "$(npm --version)" out
    grep -q "^git version" out
    grep -q "^faultline " out
    sbx --sandbox-image node -- "git init -q /work/repo && git -C /work/repo status --short && echo git-ok" >out
    grep -qx git-ok out
'

test_expect "its /usr and /etc are its own: none bound from the host (the default image binds both)" '
    sbx --sandbox-image node -- "cat /proc/self/mountinfo" >mi
    awk "{print \$5}" mi >points
    grep -qx /work points
    refute grep -qxE "/usr|/usr/.*|/etc" points
    sbx -- "cat /proc/self/mountinfo" | awk "{print \$5}" >dpoints
    grep -qx /usr dpoints
    grep -qx /etc dpoints
'

test_expect "the same rules: nobody, no capabilities, only lo, and a write outside /work fails" '
    sbx --sandbox-image node -- "id -u; grep ^CapEff /proc/self/status; tail -n +3 /proc/net/dev | wc -l" >out
    grep -qx 65534 out
    grep -q "CapEff:.0000000000000000" out
    test "$(tail -n 1 out)" = 1
    for p in /usr/t0963 /etc/t0963 /t0963 /opt/faultline/bin/t0963; do
        if sbx --sandbox-image node -- "echo x >$p" 2>err; then echo "wrote $p"; exit 1; fi
        grep -q "Read-only file system" err
    done
    sbx --sandbox-image node -- "echo inside >/work/made"
    grep -qx inside "$WORK/made"
    test -z "$(podman ps -a --filter name=^faultline- --format {{.Names}})"
'

test_expect "a Containerfile FROM it extends it, and --sandbox-image runs the result" '
    img=localhost/t0963-agent:1
    mkdir ctx
    echo "console.log(\"my-agent ran\")" >ctx/agent.js
    printf "FROM %s\nCOPY agent.js /opt/agent/agent.js\nRUN node /opt/agent/agent.js >/opt/agent/built\n" \
        $NODE_IMAGE >ctx/Containerfile
    CONTAINERS_CONF=/tmp/faultline-oci-$(id -u)/containers.conf \
        timeout 120 podman build --network none -q -t $img ctx >/dev/null
    sbx --sandbox-image $img -- "node /opt/agent/agent.js; cat /opt/agent/built" >out
    test "$(grep -c "my-agent ran" out)" = 2
'

test_expect "an image made by a faultline that links other libraries is made again" '
    mkdir ctx2
    printf "FROM %s\nLABEL faultline.libs=/nonexistent/libother.so.1\n" $NODE_IMAGE >ctx2/Containerfile
    CONTAINERS_CONF=/tmp/faultline-oci-$(id -u)/containers.conf \
        timeout 120 podman build --network none -q -t $NODE_IMAGE ctx2 >/dev/null
    old=$(podman image inspect --format {{.Id}} $NODE_IMAGE)
    timeout 300 "$FAULTLINE" sandbox check --sandbox oci --sandbox-image node | grep -q "oci: healthy"
    test "$(podman image inspect --format {{.Id}} $NODE_IMAGE)" != "$old"
    podman image inspect --format "{{index .Labels \"faultline.libs\"}}" $NODE_IMAGE >libs
    grep -q "libc.so.6" libs
    refute grep -q nonexistent libs
    sbx --sandbox-image node -- "faultline --version" | grep -q "^faultline "
'

# podman's overlay driver leaves its store bind-mounted on itself: unmounted here, or $TMP
# could not be removed
test_expect "no container is left in the test store, and nothing of it stays mounted" '
    podman ps -a --format {{.Names}} >names
    test ! -s names
    if grep -q " $TMP/storage/overlay " /proc/self/mountinfo; then umount "$TMP/storage/overlay"; fi
    refute grep -q "$TMP/storage" /proc/self/mountinfo
'

test_done
