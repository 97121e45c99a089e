"""A stand-in MCP server that leaves a process tree behind, for the shim's cleanup tests.

    tree_server.py MARK MODE

Starts three long-running descendants, each with MARK in its argv and holding the server's
stdout: MARK-grp (in the server's process group), MARK-sid (escaped with setsid) and its own
child MARK-sidkid (in that new session). Then, by MODE:
    exit   exits after the first line it reads (status 7)
    eof    reads stdin to EOF, then exits (status 0)
    stay   reads stdin to EOF, then sleeps on
Each line read is echoed back (so a client can see the server is up).
"""
import os
import subprocess
import sys
import time

mark, mode = sys.argv[1], sys.argv[2]
py = sys.executable
SLEEPER = "import time; time.sleep(300)"
SPAWNER = ("import subprocess, sys, time; "
           "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', "
           "sys.argv[1] + 'kid']); time.sleep(300)")
subprocess.Popen([py, "-c", SLEEPER, mark + "-grp"])
subprocess.Popen([py, "-c", SPAWNER, mark + "-sid"], start_new_session=True)
sys.stdout.write('{"jsonrpc":"2.0","method":"notifications/message","params":{"up":1}}\n')
sys.stdout.flush()
if mode == "exit":
    sys.stdin.readline()
    os._exit(7)
for line in sys.stdin:
    sys.stdout.write(line)
    sys.stdout.flush()
if mode == "eof":
    sys.exit(0)
while True:
    time.sleep(1)
