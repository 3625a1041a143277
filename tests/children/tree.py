"""Builds a small process tree and writes every pid to a file (one per line, last line "ready").

usage: tree.py PIDFILE [exit]
  - a child that sleeps (same session, same process group);
  - a grandchild that leaves the session with setsid, ignores SIGHUP and SIGTERM and sleeps;
    its parent exits at once, so it is orphaned (a classic daemon double fork).
With "exit", this process exits 0 afterwards (leaving the daemon behind); otherwise it sleeps.
"""

import os
import signal
import sys
import time

pidfile = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else "stay"
pids = [os.getpid()]

child = os.fork()
if child == 0:
    time.sleep(60)
    os._exit(0)
pids.append(child)

r, w = os.pipe()
middle = os.fork()
if middle == 0:
    os.setsid()
    daemon = os.fork()
    if daemon == 0:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.close(r)
        os.write(w, str(os.getpid()).encode())
        os.close(w)
        time.sleep(60)
        os._exit(0)
    os._exit(0)
os.close(w)
daemon_pid = int(os.read(r, 64).decode())
os.waitpid(middle, 0)
pids.append(daemon_pid)

with open(pidfile + ".tmp", "w") as f:
    f.write("\n".join(str(p) for p in pids) + "\nready\n")
os.rename(pidfile + ".tmp", pidfile)
print("tree ready:", " ".join(str(p) for p in pids), flush=True)
if mode == "exit":
    sys.exit(0)
time.sleep(60)
