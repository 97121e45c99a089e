#!/usr/bin/env bash
# The native sandbox (faultline sandbox exec, the code path a repetition's agent runs in): each
# escape attempt below must fail, and the host must show that it did (the file is not there,
# the process still lives, the variable never arrived).
. "$(dirname "$0")/lib.sh"

chmod 711 "$TMP" # the sandbox user passes through it to the work directory
mkdir -p "$TMP/work"
export WORK="$TMP/work"
sbx() { "$FAULTLINE" sandbox exec --work "$WORK" "$@"; }
export -f sbx

test_expect "the trial sandbox is healthy" '
    "$FAULTLINE" sandbox check | grep -q "native: healthy"
'

test_expect "it runs as nobody with no capabilities, cwd /work" '
    sbx -- "id -u; pwd; grep ^CapEff /proc/self/status" >out
    grep -qx 65534 out
    grep -qx /work out
    grep -q "CapEff:.0000000000000000" out
'

test_expect "it writes /work, and only /work reaches the host" '
    sbx -- "echo inside >/work/made-inside; echo tmp >/tmp/t0960-marker-$$" >out 2>&1
    grep -qx inside "$WORK/made-inside"
    test ! -e /tmp/t0960-marker-$$
'

test_expect "writing outside /work fails: /usr, /etc, /, /opt" '
    for p in /usr/x /etc/x /x /opt/faultline/bin/x; do
        if sbx -- "echo x >$p" 2>err; then echo "wrote $p"; exit 1; fi
        grep -q "Read-only file system" err
    done
    test ! -e /usr/x
    test ! -e /etc/x
'

test_expect "remounting a read-only path writable fails" '
    if sbx -- "mount -o remount,rw /usr && echo x >/usr/t0960-remounted" 2>err; then
        echo "remounted"; exit 1
    fi
    grep -q "superuser\|denied" err
    test ! -e /usr/t0960-remounted
'

test_expect "the host HOME and /root are not there; root-owned files are unreadable" '
    mkdir -p "$WORK/../hosthome"
    echo topsecret >"$WORK/../hosthome/secret"
    chmod 644 "$WORK/../hosthome/secret"
    sbx -- "ls /root; cat $WORK/../hosthome/secret; cat /etc/shadow; echo HOME=\$HOME" >out 2>err || true
    refute grep -q topsecret out
    refute grep -q "^root:" out
    grep -qx "HOME=/home/agent" out
    grep -q "/root" err
'

test_expect "host processes are invisible and cannot be signalled" '
    sleep 300 &
    victim=$!
    if sbx -- "kill -0 $victim || kill -9 $victim" 2>err; then
        kill $victim; echo "signalled the host"; exit 1
    fi
    grep -q "No such process" err
    sbx -- "ps -e -o comm=" >ps.out
    refute grep -qx sleep ps.out
    kill -0 $victim
    kill $victim
'

test_expect "a host loopback port is unreachable from inside" '
    python3 -c "
import socket, time
s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(5)
open(\"port\", \"w\").write(str(s.getsockname()[1]))
time.sleep(30)" &
    srv=$!
    wait_file 10 port
    port=$(cat port)
    if sbx -- "python3 -c \"import socket; socket.create_connection((\\\"127.0.0.1\\\", $port), 2)\"" 2>err; then
        kill $srv; echo "reached the host port"; exit 1
    fi
    kill $srv
    grep -q "refused" err
'

test_expect "no capability or root is gained: no user namespace, no setuid root" '
    if sbx -- "unshare -r id" 2>err; then echo "made a user namespace"; exit 1; fi
    grep -q "unshare failed" err
    if sbx -- "su -c id root </dev/null" 2>err; then echo "became root"; exit 1; fi
    grep -q "Authentication failure" err
    sbx -- "grep ^NoNewPrivs /proc/self/status; id -u" >out
    refute grep -qx 0 out
'

test_expect "only the variables named get in" '
    export T0960_SECRET=hunter2 T0960_NAMED=visible
    sbx --env T0960_NAMED -- env >out
    refute grep -q hunter2 out
    grep -qx T0960_NAMED=visible out
    refute grep -q "^ANTHROPIC_API_KEY=" out
'

test_expect "nothing is left running after it ends, even a daemon that left the session" '
    tag=t0960-$$-$RANDOM
    sbx -- "(setsid sh -c \"exec -a $tag sleep 300\" &); nohup sh -c \"exec -a $tag sleep 301\" >/dev/null 2>&1 & echo started" >out
    grep -qx started out
    sleep 0.3
    refute pgrep -f "$tag"
'

test_expect "the faultline binary is on PATH inside, read-only" '
    sbx -- "command -v faultline; faultline --version" >out
    grep -qx /opt/faultline/bin/faultline out
    grep -q "^faultline " out
'

test_done
