"""netns_proxy.py PIDFILE [new|own] -- FAULTLINE proxy ARGS...: what the runner does for the
controller (src/sandbox/sandbox.h), in small: a listening socket on 127.0.0.1:0 made inside a new
network namespace (`new`, lo up; needs root) or in this one (`own`), handed to the command as
`--listen-fd N` by inheritance. This process becomes the command (exec). With `new`, a holder
process stays in the namespace (its PID in PIDFILE, for `nsenter --net=/proc/PID/ns/net`) and
dies with the command (PR_SET_PDEATHSIG)."""
import ctypes
import os
import signal
import socket
import subprocess
import sys

CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1

libc = ctypes.CDLL(None, use_errno=True)


def check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        sys.exit("netns_proxy: %s: %s" % (what, os.strerror(e)))


def main():
    pidfile, mode = sys.argv[1], sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    host = os.open("/proc/self/ns/net", os.O_RDONLY)
    if mode == "new":
        check(libc.unshare(CLONE_NEWNET), "unshare")
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=10)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    if mode == "new":
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
            if os.getppid() != parent:
                os._exit(0)
            while True:
                signal.pause()
        with open(pidfile + ".tmp", "w") as f:
            f.write("%d\n" % pid)
        os.rename(pidfile + ".tmp", pidfile)
        check(libc.setns(host, CLONE_NEWNET), "setns")
    else:
        with open(pidfile, "w") as f:
            f.write("0\n")
    os.close(host)
    os.set_inheritable(ls.fileno(), True)
    os.execvp(cmd[0], cmd + ["--listen-fd", str(ls.fileno())])


main()
