"""Ignores SIGINT and SIGTERM (only SIGKILL stops it); writes its pid to a file, then sleeps."""

import os
import signal
import sys
import time

signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
print("ignoring SIGINT and SIGTERM", flush=True)
if len(sys.argv) > 2 and sys.argv[2] == "chatty":
    while True:  # keeps printing: only a deadline or an interrupt stops it, not a stall
        print("still here", flush=True)
        time.sleep(0.1)
time.sleep(60)
