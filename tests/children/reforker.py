"""A process that cannot be caught by snapshots: leaves the session, then re-forks every 2 ms.

usage: reforker.py MARKER   (MARKER only makes it findable in the process table)
Each generation forks the next at once and exits 2 ms later, so there is always one
generation younger than any snapshot; all ignore SIGINT, SIGTERM and SIGHUP.  The first
generation returns at once to the caller (double fork).
"""

import os
import signal
import sys
import time

if os.fork() != 0:
    sys.exit(0)
os.setsid()
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
deadline = time.monotonic() + 120  # never outlives a broken test by long
while time.monotonic() < deadline:
    time.sleep(0.001)
    if os.fork() != 0:
        time.sleep(0.002)  # the parent lingers while its child is already forking the next
        os._exit(0)
