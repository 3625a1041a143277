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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil

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
    """The process's start time in hundredths of a second (psutil's ``create_time``); None when it is gone."""
    try:
        return int(psutil.Process(pid).create_time() * 100)
    except psutil.Error:
        return None


def read_pids(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


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
