"""The watchdog: ends an attempt's processes when rocmbuild dies without doing it (SIGKILL, OOM kill).

Started per attempt by containment.py as ``python -I -S watchdog.py CGROUP_DIR|-``
in its own session, with a pipe on stdin whose write end only rocmbuild holds.
rocmbuild writes ``pid N`` lines (the sessions to end in process-tree mode);
when the pipe reaches end of file -- rocmbuild closed it after cleaning up, or
the kernel closed it because rocmbuild died -- the watchdog kills what is left:
the whole cgroup (``cgroup.kill``, else every pid in ``cgroup.procs`` until it is
empty), or every process in the recorded sessions.  Standard library only and
no rocmbuild imports: it must start fast and must not depend on the state of
the process that died.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time


def _kill_cgroup(path: str, timeout: float = 10.0) -> None:
    procs = os.path.join(path, "cgroup.procs")
    kill_file = os.path.join(path, "cgroup.kill")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(procs) as f:
                pids = [int(p) for p in f.read().split()]
        except OSError:
            return  # gone: rocmbuild removed it
        if not pids:
            break
        if os.path.exists(kill_file):
            with contextlib.suppress(OSError), open(kill_file, "w") as f:
                f.write("1")
        else:  # before Linux 5.14: kill what is there, again, until nothing forks any more
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    for _ in range(50):
        try:
            os.rmdir(path)
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(path))  # the tree's directory, when no other run uses it
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


def _kill_sessions(sessions: set[int], rounds: int = 20) -> None:
    for _ in range(rounds):
        found = False
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
                fields = stat[stat.rindex(")") + 2 :].split()
                if int(fields[3]) in sessions and fields[0] != "Z":
                    os.kill(int(entry), signal.SIGKILL)
                    found = True
            except (OSError, ValueError):
                continue
        if not found:
            return
        time.sleep(0.05)


def main() -> int:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)  # only the pipe's end of file ends this process
    cgroup = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "-" else None
    sessions: set[int] = set()
    for line in sys.stdin.buffer:
        words = line.split()
        if words == [b"done"]:  # rocmbuild ended the attempt itself: nothing to do
            return 0
        if len(words) == 2 and words[0] == b"pid" and words[1].isdigit():
            sessions.add(int(words[1]))
    if cgroup is not None:
        _kill_cgroup(cgroup)
    if sessions:
        _kill_sessions(sessions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
