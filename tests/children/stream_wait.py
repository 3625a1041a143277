"""Prints a line, then waits (up to 10 s) for a file the test creates on seeing that line."""

import sys
import time
from pathlib import Path

flag = Path(sys.argv[1])
print("first line", flush=True)
deadline = time.monotonic() + 10
while not flag.exists():
    if time.monotonic() > deadline:
        print("timeout: the first line was not relayed while the child ran", flush=True)
        sys.exit(1)
    time.sleep(0.01)
print("second line", flush=True)
