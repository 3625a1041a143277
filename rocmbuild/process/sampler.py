"""The resource sampler: polled with the memory guard while a step runs, one sample every few seconds.

Owns what one sample measures (records/samples.py owns the file): the memory the build can still
get and its step's cgroup usage, the load, the compile jobs running and those the memory guard
paused, and the build's progress from the watcher.  It is a ``runner.TreeMonitor`` that wraps the
memory guard (or nothing, with ``--memory-reserve off``): the guard is polled first and at every
tick, the sample is taken only when due, so sampling never delays a pause.  Each sample goes to a
callable (the loop hands it the run dir's ``SampleLog.add``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rocmbuild.process.memguard import cgroup_memory, read_memory, tree_procs

if TYPE_CHECKING:
    from rocmbuild.process.runner import TreeMonitor
    from rocmbuild.process.watcher import Watcher

INTERVAL_S = 2.0  # one sample every this many seconds while a step runs


class ResourceSampler:
    """A TreeMonitor: the inner monitor (the memory guard) plus one sample every ``interval`` seconds."""

    def __init__(self, record: Callable[[dict[str, float | None]], None], attempt: int, watcher: Watcher,
                 inner: TreeMonitor | None = None, interval: float = INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.record = record  # where a sample goes (records/samples.py's SampleLog.add)
        self.attempt = attempt
        self.watcher = watcher
        self.inner = inner
        self.interval = interval
        self.clock = clock
        self.next_sample = 0.0

    def poll(self, root_pid: int) -> None:
        if self.inner is not None:
            self.inner.poll(root_pid)
        now = self.clock()
        if now < self.next_sample:
            return
        self.next_sample = now + self.interval
        self.record(self.measure(root_pid))

    def release(self) -> None:
        if self.inner is not None:
            self.inner.release()

    def measure(self, root_pid: int) -> dict[str, float | None]:
        reading = read_memory(root_pid)
        paused = set(getattr(self.inner, "paused", {}) or {})
        # The guard walks the tree every half second already (a walk reads all of /proc: ~0.15 s on a
        # busy host), and a tick that stalls that long lets a burst of jobs dig deeper below the reserve
        # before the guard looks again: with a guard, its last walk is used; without one, the sampler
        # walks the tree itself, every few seconds.
        last = getattr(self.inner, "last_procs", None)
        procs = last if last is not None else tree_procs(root_pid)
        cgroup = cgroup_memory(root_pid)
        progress = self.watcher.progress
        try:
            load: float | None = round(os.getloadavg()[0], 2)
        except OSError:
            load = None
        return {"t": round(time.time(), 1), "attempt": self.attempt, "avail": reading.available,
                "total": reading.total, "cg": cgroup.usage if cgroup is not None else None, "load": load,
                "jobs": sum(1 for p in procs if p.leaf and p.compile_job and p.pid not in paused),
                "paused": len(paused), "done": progress.done, "of": progress.total,
                "pct": round(progress.percent, 1) if progress.percent is not None else None}
