"""Every way a build's process tries to outlive its build; all carry MARKER in their command line.

usage: escapers.py MARKER [stay]
  - a double-forked daemon (setsid, ignores SIGTERM/SIGHUP);
  - a child in its own session ignoring SIGINT/SIGTERM/SIGHUP;
  - a nohup'd sleep;
  - a re-forker (tests/children/reforker.py).
Prints "escapers ready" once all are running; with "stay" it then sleeps, else exits 0.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

marker = sys.argv[1]
here = Path(__file__).parent
ign = "import signal,time\nfor s in (1, 2, 15): signal.signal(s, signal.SIG_IGN)\ntime.sleep(300)\n"
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", ign, marker, "daemon"])
    os._exit(0)
subprocess.Popen([sys.executable, "-c", ign, marker, "session"], start_new_session=True)
subprocess.Popen(["nohup", sys.executable, "-c", "import time; time.sleep(300)", marker, "nohup"],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
subprocess.run([sys.executable, str(here / "reforker.py"), marker])
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
time.sleep(0.3)
print("escapers ready", flush=True)
if len(sys.argv) > 2 and sys.argv[2] == "stay":
    time.sleep(300)
