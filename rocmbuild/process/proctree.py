"""The process tree of a build step: who belongs to it, how to describe it, reaping orphans.

Owns the bookkeeping :mod:`rocmbuild.process.runner` needs to stop *everything* a step
started: descendants snapshot with psutil (:class:`Tree`), the step's session,
the attempt's cgroup, and orphans re-parented to rocmbuild while it is a child
subreaper (:func:`subreaper`), reaped afterwards (:func:`reap_orphans`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rocmbuild.process import containment
from rocmbuild.process.command import pending_pids

if TYPE_CHECKING:
    import psutil
# psutil itself (~15 ms to import) is imported where it is used: after the step's process has started.

_PR_SET_CHILD_SUBREAPER = 36
REAP_GRACE_S = 1.0  # the longest reap_orphans waits for killed orphans to become zombies
_PR_GET_CHILD_SUBREAPER = 37


@contextlib.contextmanager
def subreaper() -> Iterator[None]:
    """Orphans of the build are re-parented to us (not init) while this is active (Linux)."""
    libc: ctypes.CDLL | None = None
    previous = ctypes.c_int(1)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(previous), 0, 0, 0) != 0:
                libc = None
            elif not previous.value:
                libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            libc = None
    try:
        yield
    finally:
        if libc is not None and not previous.value:
            libc.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def own_children() -> set[int]:
    """The PIDs of this process's children now (taken before a step starts: see :class:`Tree`)."""
    import psutil

    with contextlib.suppress(psutil.Error):
        return {c.pid for c in psutil.Process().children()}
    return set()


def alive(p: psutil.Process) -> bool:
    """Running and not a zombie; reaps it when it is an orphan re-parented to us."""
    import psutil

    try:
        if p.ppid() == os.getpid():
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(p.pid, os.WNOHANG)[0] == p.pid:
                    return False
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def reap_orphans() -> None:
    """Reap zombie children: orphans of the build re-parented to us (subreaper) that died.

    Unreaped, they would pass to init when rocmbuild exits -- and an init that does not reap
    (a container's first process often does not) keeps them for good.  Every process of ours is
    finished by now (the steps, the helper commands); a Popen whose child is reaped here still
    polls fine (ECHILD counts as exited).
    """
    import psutil

    ours = pending_pids()  # helper commands still being answered (facts.json's probes): their Popen reaps them
    # Orphans killed a moment ago may not be zombies yet (under load the kernel takes a while to tear a
    # process down): look again, briefly, while any child that is not ours is still there.
    deadline = time.monotonic() + REAP_GRACE_S
    while True:
        left = False
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process().children():
                if child.pid in ours:
                    continue
                with contextlib.suppress(psutil.Error, ChildProcessError, OSError):
                    if child.status() == psutil.STATUS_ZOMBIE:
                        os.waitpid(child.pid, os.WNOHANG)
                    else:
                        left = True
        if not left or time.monotonic() >= deadline:
            return
        time.sleep(0.02)


def describe_short(p: psutil.Process) -> str:
    import psutil

    try:
        cmd = " ".join(p.cmdline()) or p.name()
    except psutil.Error:
        cmd = "?"
    return f"{p.pid} {cmd[:120]}"


class Tree:
    """Every process seen below a step (and in its session), kept so they can all be stopped."""

    def __init__(self, root: int, group: containment.AttemptGroup | None = None,
                 ours: set[int] | None = None) -> None:
        """``ours``: rocmbuild's own children (taken *before* the step started, see :func:`own_children`)."""
        import psutil

        self.root = root
        self.group = group
        self.me = psutil.Process()
        self.known: dict[int, psutil.Process] = {}
        try:
            self.root_proc: psutil.Process | None = psutil.Process(root)
            self.root_proc.cpu_percent(None)
        except psutil.Error:
            self.root_proc = None
        # Our children from before the step are not the step's.  Taken now, they could already hold an
        # orphan of the step (a `setsid -f` daemon re-parented to us within a millisecond of the spawn),
        # and that daemon would never be stopped: so the caller takes them before the spawn.
        self.ignore = (ours if ours is not None else {c.pid for c in self.me.children()}) - {root}

    def snapshot(self) -> None:
        """Remember every current descendant (of the step, and orphans re-parented to us)."""
        import psutil

        try:
            found = self.me.children(recursive=True)
        except psutil.Error:
            return
        # Ours, not the step's: our children from before it, and helper commands not collected yet
        # (facts.json's probes, running beside the first attempt).
        ignore = self.ignore | pending_pids()
        if ignore:
            found = self._without_ignored(found, ignore)
        for p in found:
            if p.pid == self.root:
                continue
            old = self.known.get(p.pid)
            if old is None or old != p:  # new, or the pid was reused
                self.known[p.pid] = p
                with contextlib.suppress(psutil.Error):
                    p.cpu_percent(None)  # primes CPU% for a stall snapshot

    @staticmethod
    def _without_ignored(procs: list[psutil.Process], ignore: set[int] | frozenset[int]) -> list[psutil.Process]:
        import psutil

        parent: dict[int, int] = {}
        for p in procs:
            with contextlib.suppress(psutil.Error):
                parent[p.pid] = p.ppid()
        kept = []
        for p in procs:
            pid = p.pid
            while pid in parent and pid not in ignore:
                pid = parent[pid]
            if pid not in ignore:
                kept.append(p)
        return kept

    def collect(self) -> list[psutil.Process]:
        """Live processes to stop: known descendants, fresh ones, and members of the step's session."""
        import psutil

        self.snapshot()
        for pid in psutil.pids():
            if pid in self.known or pid == self.root:
                continue
            try:
                if os.getsid(pid) == self.root:
                    self.known[pid] = psutil.Process(pid)
            except (OSError, psutil.Error):
                continue
        for pid in self.group.pids() if self.group is not None else ():  # whatever escaped the tree
            if pid != self.root and pid not in self.known:
                with contextlib.suppress(psutil.Error):
                    self.known[pid] = psutil.Process(pid)
        return [p for p in self.known.values() if alive(p)]

    def leftovers(self) -> list[psutil.Process]:
        return self.collect()

    def describe(self) -> list[str]:
        """A process table (pid, ppid, CPU% since the last snapshot, RSS, command) for the log."""
        import psutil

        procs = ([self.root_proc] if self.root_proc is not None else []) + [
            p for p in self.known.values() if alive(p)
        ]
        rows = [f"  {'PID':>7} {'PPID':>7} {'CPU%':>6} {'RSS':>9}  COMMAND"]
        for p in procs:
            try:
                with p.oneshot():
                    cpu = p.cpu_percent(None)
                    rss = p.memory_info().rss
                    ppid = p.ppid()
                    cmd = " ".join(p.cmdline()) or p.name()
            except psutil.Error:
                continue
            rows.append(f"  {p.pid:>7} {ppid:>7} {cpu:>6.1f} {size(rss):>9}  {cmd[:200]}")
        return rows


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}GiB"
