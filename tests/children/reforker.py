"""A process that cannot be caught by snapshots: leaves the session, then re-forks every 2 ms.

usage: reforker.py MARKER   (MARKER only makes it findable in the process table)
Each generation forks a child and exits, so no pid lives longer than ~2 ms; it ignores
SIGINT, SIGTERM and SIGHUP.  The first generation returns at once to the caller (double fork).
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
    time.sleep(0.002)
    if os.fork() != 0:
        os._exit(0)
