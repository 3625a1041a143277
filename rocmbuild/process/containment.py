"""Containment: each attempt's processes in a cgroup of their own, ended as one.

A build can walk around process-tree tracking (a double fork, ``setsid``, a
process re-forking faster than a snapshot); it cannot leave a cgroup.  When a
cgroup v2 hierarchy is writable (root, or a delegated subtree), every attempt
runs in ``<cgroup2>/rocmbuild/tree-<dev>-<ino>/run-<pid>-<start>-<n>``: the step
joins it in the forked child before exec, ``cgroup.kill`` (Linux >= 5.14; else
SIGKILL to every pid in ``cgroup.procs`` until it is empty) ends all of it, and
the directory is removed afterwards.  Otherwise the runner falls back to its
process-tree tracking.  ``mode()`` says which is in use (``rocmbuild doctor``).

Dying without cleaning up is covered twice: a watchdog process (watchdog.py)
per attempt notices rocmbuild's death (end of file on a pipe) and kills the
cgroup (or, in fallback, every session a process of the step was seen in: the
step's own and each daemon's ``setsid`` one, reported as the tree is snapshot,
every 0.1 s in fallback); and the next run on the same tree
finds groups whose owner is gone and ends them (``end_leftovers``; recorded as
an event).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

_counter = itertools.count(1)
WATCHDOG = Path(__file__).with_name("watchdog.py")


@dataclass(frozen=True)
class Mode:
    """How attempts are contained here: "cgroup" or "process-tree", and why."""

    kind: str
    detail: str


def cgroup2_mount(mounts: str | None = None) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (from /proc/self/mounts), or None."""
    if mounts is None:
        try:
            mounts = Path("/proc/self/mounts").read_text()
        except OSError:
            return None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "cgroup2":
            return Path(fields[1].replace("\\040", " "))
    return None


def _own_cgroup() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:].strip()
    return "/"


def base_dir() -> Path | None:
    """rocmbuild's cgroup directory (created when missing), or None when no cgroup v2 is writable."""
    mount = cgroup2_mount()
    if mount is None:
        return None
    own = _own_cgroup().strip("/")
    # Our own cgroup first (a delegated subtree), then the hierarchy's root (root on a hybrid host).
    for parent in dict.fromkeys([mount / own if own else mount, mount]):
        base = parent / "rocmbuild"
        try:
            base.mkdir(exist_ok=True)
        except OSError:
            continue
        if os.access(base, os.W_OK):
            return base
    return None


def mode() -> Mode:
    base = base_dir()
    if base is None:
        mount = cgroup2_mount()
        why = f"{mount} is not writable" if mount else "no cgroup v2 hierarchy is mounted"
        return Mode("process-tree", f"{why}: each step is tracked as a process tree, rocmbuild a child "
                                    "subreaper so that orphaned daemons come back to it and are ended; a "
                                    "daemon that re-forks faster than it is seen, or outlives a SIGKILLed "
                                    "rocmbuild in a session never seen, can escape")
    kill = "cgroup.kill" if (base / "cgroup.kill").exists() else "SIGKILL to cgroup.procs until empty"
    return Mode("cgroup", f"each attempt in its own cgroup under {base}, stopped with {kill}")


def tree_key(tree: Path) -> str:
    try:
        st = os.stat(tree)
    except OSError:
        st = os.stat(tree.parent) if tree.parent.exists() else os.stat("/")
    return f"tree-{st.st_dev}-{st.st_ino}"


def _start_time(pid: int) -> int | None:
    """``int(psutil.Process(pid).create_time() * 100)``, computed as psutil computes it on Linux (the
    ``starttime`` ticks of /proc/PID/stat over SC_CLK_TCK, plus /proc/stat's ``btime``), without
    importing psutil (~15 ms) on the way to every attempt; None for a process that is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        ticks = float(stat[stat.rfind(b")") + 2:].split()[19])
        with open("/proc/stat", "rb") as handle:
            boot = next(float(line.split()[1]) for line in handle if line.startswith(b"btime"))
        return int((ticks / os.sysconf("SC_CLK_TCK") + boot) * 100)
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def read_pids(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


class _Warmer:
    """The kernel kept ready for the first step's move into its cgroup (see :func:`warm_up`)."""

    EVERY_S = 0.003
    current: _Warmer | None = None

    def __init__(self, procs_of_own: Callable[[], Path], for_s: float) -> None:
        import threading

        self._procs_of_own = procs_of_own
        self._until = time.monotonic() + for_s
        self._stop = threading.Event()
        self.moves = 0
        self.thread = threading.Thread(target=self._run, name="cgroup-warm-up", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        pid = str(os.getpid()).encode()
        while not self._stop.is_set() and time.monotonic() < self._until:
            # Where rocmbuild is now, read each time, so it is not moved back where it was moved from;
            # a move by someone else in the microseconds between the read and the write would be.
            try:
                fd = os.open(self._procs_of_own(), os.O_WRONLY | os.O_CLOEXEC)
                try:
                    os.write(fd, pid)
                finally:
                    os.close(fd)
            except OSError:  # not ours to write (no delegation, a threaded cgroup): nothing to gain
                return
            self.moves += 1
            self._stop.wait(self.EVERY_S)

    def stop(self) -> None:
        self._stop.set()


def warm_up(for_s: float = 0.5) -> None:
    """Have the kernel ready to move the first step into its cgroup at once, for the next ``for_s``.

    Moving a process into a cgroup (the step's write to ``cgroup.procs``, before its exec) takes the
    kernel's cgroup threadgroup lock for writing, and when no move happened in the last RCU grace
    period the mover first waits for one (``rcu_sync_enter``): 5-27 ms on this project's VM, against
    ~0.5 ms right after another move (benchmarks/RESULTS.md, round 4).  So from the start of a build
    until its first step's process exists (``warmed_up``), a thread "moves" rocmbuild into the
    cgroup it is already in every few ms: a no-op for every process, the same lock for the kernel,
    and the step's move then waits for nothing.  Mounting cgroup2 with ``favordynmods`` (Linux >= 6.0)
    does this for good; a user's mounts are not rocmbuild's to change.  Where rocmbuild may not
    write its own cgroup, the thread ends at its first try.
    """
    mount = cgroup2_mount()
    if mount is None or base_dir() is None:  # no attempt will move into a cgroup
        return
    warmed_up()
    _Warmer.current = _Warmer(lambda: mount / _own_cgroup().strip("/") / "cgroup.procs", for_s)


def warmed_up() -> None:
    """The first step's process exists (or the build ended before it): the warm-up stops."""
    if _Warmer.current is not None:
        _Warmer.current.stop()
        _Warmer.current = None


class AttemptGroup:
    """One attempt's cgroup."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.procs_file = str(path / "cgroup.procs")

    @classmethod
    def create(cls, tree: Path) -> AttemptGroup | None:
        base = base_dir()
        if base is None:
            return None
        me = os.getpid()
        name = f"run-{me}-{_start_time(me)}-{next(_counter)}"
        path = base / tree_key(tree) / name
        try:
            path.mkdir(parents=True)
        except OSError:
            return None
        return cls(path)

    def pids(self) -> list[int]:
        return read_pids(self.path)

    def kill(self, timeout: float = 5.0) -> bool:
        """SIGKILL everything in the group, until it is empty; True when it is."""
        return kill_group(self.path, timeout)

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.path.rmdir()
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()  # the tree's directory, when no other run uses it


def kill_group(path: Path, timeout: float = 5.0) -> bool:
    kill_file = path / "cgroup.kill"
    deadline = time.monotonic() + timeout
    while True:
        pids = read_pids(path)
        if not pids:
            return True
        if time.monotonic() >= deadline:
            return False
        if kill_file.exists():
            with contextlib.suppress(OSError):
                kill_file.write_text("1")
        else:
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _describe(pid: int) -> str:
    import psutil

    try:
        p = psutil.Process(pid)
        return f"{pid} {(' '.join(p.cmdline()) or p.name())[:120]}"
    except psutil.Error:
        return str(pid)


def end_leftovers(tree: Path) -> list[dict[str, object]]:
    """End the processes of earlier runs on this tree whose rocmbuild is gone; what was ended, for the record."""
    base = base_dir()
    if base is None:
        return []
    tree_dir = base / tree_key(tree)
    found: list[dict[str, object]] = []
    if not tree_dir.is_dir():
        return found
    for group in sorted(tree_dir.iterdir()):
        parts = group.name.split("-")
        if not group.is_dir() or len(parts) != 4 or parts[0] != "run":
            continue
        owner, started = int(parts[1]), parts[2]
        if str(_start_time(owner)) == started:
            continue  # its rocmbuild is alive (another tree lock would have stopped us; be safe anyway)
        pids = read_pids(group)
        if pids:
            found.append({"cgroup": str(group), "owner_pid": owner,
                          "processes": [_describe(p) for p in pids[:20]], "count": len(pids)})
        kill_group(group)
        with contextlib.suppress(OSError):
            group.rmdir()
    with contextlib.suppress(OSError):
        tree_dir.rmdir()  # when empty
    return found


class Watchdog:
    """A process that outlives a SIGKILLed rocmbuild just long enough to end the attempt's processes."""

    def __init__(self, group: AttemptGroup | None) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.pipe: IO[bytes] | None = None
        self._sessions: set[int] = set()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(WATCHDOG), str(group.path) if group else "-"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True,
            )
            self.pipe = self.proc.stdin
        except OSError:
            self.proc = None

    def watch_session(self, pid: int) -> None:
        """Process-tree mode: the session ``pid`` leads is ended if rocmbuild dies (each said once)."""
        if pid in self._sessions or pid <= 1:
            return
        self._sessions.add(pid)
        self._send(f"pid {pid}\n")

    def watch_sessions_of(self, pids: Iterable[int]) -> None:
        """Process-tree mode: the sessions these processes are in (a daemon's own ``setsid`` one, seen
        through the subreaper) are ended too if rocmbuild dies; never rocmbuild's own session."""
        own = os.getsid(0)
        for pid in pids:
            try:
                sid = os.getsid(pid)
            except OSError:
                continue
            if sid != own:
                self.watch_session(sid)

    def _send(self, text: str) -> None:
        if self.pipe is not None:
            try:
                self.pipe.write(text.encode())
                self.pipe.flush()
            except (OSError, ValueError):
                self.pipe = None

    def close(self) -> None:
        """The attempt ended and was cleaned up: the watchdog leaves without killing anything."""
        self._send("done\n")
        if self.pipe is not None:
            with contextlib.suppress(OSError):
                self.pipe.close()
        if self.proc is not None:
            self.proc.poll()  # not waited for: it exits on its own; subprocess reaps it later
