"""The memory guard, ``--memory-reserve SIZE``: pause compile jobs before memory runs out.

Owns three things:

* reading memory the way the kernel will judge it: ``psutil.virtual_memory().available``, lowered to
  what the build's cgroup still allows (v2 ``memory.max``/``memory.current``, v1
  ``memory.limit_in_bytes``/``memory.usage_in_bytes``), and PSI ``memory some avg10`` where
  ``/proc/pressure/memory`` exists (recorded with every decision);
* the pure policy (``choose_to_pause`` / ``choose_to_resume``): pause the newest running leaf
  processes of the build's tree, compile jobs (cc1plus, clang, ld, ...) first, never the largest and
  never all; resume the oldest paused first (it is furthest along and frees its memory soonest) once
  memory is back above the reserve with headroom, or at once when nothing else is left running;
* ``MemoryGuard``, polled from the runner's loop every tick: SIGSTOP / SIGCONT and the events
  ``memory.paused`` / ``memory.resumed`` (how much memory was available, which PIDs and names).

While it polls, the guard also samples the tree (every ``SAMPLE_S``): the largest compile process's
RSS (the peak per job the next attempt's MAX_JOBS learns from, jobsizing.py), the tree's peak total,
and every PID and memory cgroup seen, so that after the attempt ``confirm_oom`` can tell an OOM kill
of *this build* from the cgroup's ``oom_kill`` count (v2 ``memory.events``, v1
``memory.oom_control``) or the kernel log (kernlog.py), instead of guessing from "Killed".
Pausing stops a job's growth, it does not free memory: the guard buys time for the jobs that keep
running to finish and release theirs.
"""

from __future__ import annotations

import math
import os
import re
import signal
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmbuild.errors import UsageError
from rocmbuild.process import kernlog
from rocmbuild.process.kernlog import find_oom_kills

if TYPE_CHECKING:  # typed, so mypy checks every event name against records.events.EventName
    from rocmbuild.records.events import EventName
    from rocmbuild.records.recorder import RunRecorder

GIB = 1024 ** 3
MIB = 1024 ** 2
DEFAULT_RESERVE_CAP = 4 * GIB
UNLIMITED = 1 << 60          # cgroup v1 says "no limit" with a number near 2**63
POLL_S = 0.1                 # the runner's tick: the guard reads memory at most this often
MIN_OTHER_RSS = 64 * MIB     # a process that is not a compile job is paused only if it holds this much
RESUME_COOLDOWN_S = 0.5      # after a resume, watch its effect before resuming the next
SAMPLE_S = 0.5               # how often the tree is walked for peaks when memory is plentiful
KILL_STATUSES = frozenset({137, -9})  # a SIGKILLed step, as the shell (128+9) and Python report it
KILL_WINDOW_S = 2.0          # the kernel may log a kill a little after the attempt saw it die
# The kernel log stamps with its own clock (local_clock), which can drift from CLOCK_MONOTONIC by
# seconds on a long-running host; the match is by the build's PIDs or cgroups, so a wider window
# costs nothing but keeps a real OOM kill from reading as "unconfirmed".
KERNEL_CLOCK_SLACK_S = 30.0

# Processes that do the compiling and linking (the memory hogs of a C++/HIP build), by process name.
COMPILE_NAMES = frozenset({
    "cc1", "cc1plus", "cc1obj", "collect2", "as", "ld", "ld.bfd", "ld.gold", "ld.lld", "lld", "mold",
    "clang", "clang++", "clang-offload-bundler", "clang-offload-packager", "llc", "opt", "lto1",
    "hipcc", "hipcc.bin", "nvcc", "cicc", "ptxas", "c++", "g++", "gcc", "cc", "ccache", "sccache",
})

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": None, "k": 1024, "m": MIB, "g": GIB, "t": 1024 * GIB}


def parse_size(text: str, option: str = "--memory-reserve") -> int:
    """Bytes from ``4G``, ``512M``, ``1.5GiB``; ``0`` or ``off`` turns the guard off (0)."""
    cleaned = str(text).strip().lower()
    if cleaned in ("off", "0", "none", "no"):
        return 0
    match = _SIZE.match(cleaned)
    if not match:
        raise UsageError(f"{option} {text!r} is not a size",
                         why="a size is a number with a unit: K, M, G or T (powers of 1024)",
                         todo=f"write e.g. {option} 4G or {option} 512M, or {option} off")
    unit = _UNITS[match.group(2)]
    if unit is None:
        raise UsageError(f"{option} {text!r} has no unit",
                         why="a bare number could mean bytes or gigabytes; rocmbuild does not guess",
                         todo=f"write {option} {match.group(1)}G or {option} {match.group(1)}M")
    return int(float(match.group(1)) * unit)


def default_reserve(limit_bytes: int) -> int:
    """min(4 GiB, 10% of the memory the build may use): enough for the desktop and sshd, not a waste."""
    return min(DEFAULT_RESERVE_CAP, limit_bytes // 10)


# --- reading memory -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class CgroupMemory:
    """The memory cgroup a process is in: its limit (None = none) and where its files are."""

    directory: Path
    version: int
    limit: int | None
    usage: int | None


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value >= UNLIMITED else value


def cgroup_memory(pid: int | None = None, root: Path = Path("/sys/fs/cgroup"),
                  membership: str | None = None) -> CgroupMemory | None:
    """The memory cgroup of ``pid`` (default: this process), v1, or v2 (also hybrid's ``unified``).

    ``membership`` is the text of /proc/PID/cgroup (read when not given).
    """
    try:
        text = membership if membership is not None else Path(f"/proc/{pid or 'self'}/cgroup").read_text()
    except OSError:
        return None
    lines = text.splitlines()
    v1 = v2 = None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
        elif "memory" in parts[1].split(","):
            v1 = parts[2]
    if v1 is not None:
        directory = root / "memory" / v1.lstrip("/")
        if (directory / "memory.limit_in_bytes").is_file():
            return CgroupMemory(directory, 1, _read_int(directory / "memory.limit_in_bytes"),
                                _read_int(directory / "memory.usage_in_bytes"))
    if v2 is not None:
        for base in (root, root / "unified"):
            directory = base / v2.lstrip("/")
            if (directory / "memory.current").is_file():
                return CgroupMemory(directory, 2, _read_int(directory / "memory.max"),
                                    _read_int(directory / "memory.current"))
    return None


def read_psi(path: Path = Path("/proc/pressure/memory")) -> float | None:
    """PSI ``some avg10`` (percent of the last 10 s some task waited for memory); None without PSI."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith("some "):
                fields = dict(part.split("=", 1) for part in line.split()[1:])
                return float(fields["avg10"])
    except (OSError, KeyError, ValueError):
        return None
    return None


@dataclass(frozen=True)
class MemoryReading:
    available: int          # bytes the build can still get: the machine's, or the cgroup's if less
    total: int              # the machine's memory, or the cgroup limit if less
    limited_by: str         # "machine" or "cgroup v1 /path" / "cgroup v2 /path"
    psi_some_avg10: float | None


def effective_available(machine_available: int, machine_total: int,
                        cgroup: CgroupMemory | None) -> tuple[int, int, str]:
    """(available, total, what limits it): the smaller of the machine's and the cgroup's headroom (pure)."""
    if cgroup is None or cgroup.limit is None or cgroup.limit >= machine_total:
        return machine_available, machine_total, "machine"
    headroom = max(0, cgroup.limit - (cgroup.usage or 0))
    where = f"cgroup v{cgroup.version} {cgroup.directory}"
    return min(machine_available, headroom), cgroup.limit, where if headroom < machine_available else "machine"


def read_memory(pid: int | None = None) -> MemoryReading:
    import psutil  # ~15 ms: imported at the first reading, not on the way to the first attempt

    vm = psutil.virtual_memory()
    available, total, where = effective_available(int(vm.available), int(vm.total), cgroup_memory(pid))
    return MemoryReading(available, total, where, read_psi())


def read_total(pid: int | None = None) -> int:
    """``read_memory(pid).total`` without psutil: the machine's RAM (the kernel's ``sysinfo`` total,
    which is what psutil reports: SC_PHYS_PAGES pages) capped by the cgroup's limit."""
    machine_total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return effective_available(0, machine_total, cgroup_memory(pid))[1]


def oom_kills(pid: int | None = None) -> int | None:
    """The cgroup's count of OOM kills (v2 memory.events, v1 memory.oom_control); None where unreadable."""
    cgroup = cgroup_memory(pid)
    if cgroup is None:
        return None
    name = "memory.events" if cgroup.version == 2 else "memory.oom_control"
    try:
        for line in (cgroup.directory / name).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        return None
    return None


# --- policy (pure) ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TreeProc:
    """One process of the build's tree, as the policy sees it."""

    pid: int
    name: str
    created: float
    rss: int
    leaf: bool          # no children: pausing a parent whose children run frees nothing

    @property
    def compile_job(self) -> bool:
        return self.name in COMPILE_NAMES or self.name.startswith(("clang-", "ld.", "cc1"))

    @property
    def matters(self) -> bool:
        """A compile job, or big enough that pausing it (or waiting for it) makes a difference."""
        return self.compile_job or self.rss >= MIN_OTHER_RSS


def choose_to_pause(procs: Sequence[TreeProc], paused: frozenset[int], depth: float = 0.0) -> tuple[TreeProc, ...]:
    """What to pause now: the newest running leaves, compile jobs first; never the largest, never the last.

    ``depth`` is how far into the band above the reserve available memory has fallen (0 at the pause
    line, 1 at the reserve): that share of the candidates goes at once (at least one), because jobs
    that grow together outrun a guard that pauses one per tick.  Processes that are not compile jobs
    are candidates only when they are big (MIN_OTHER_RSS).
    """
    running = [p for p in procs if p.leaf and p.pid not in paused]
    if len(running) < 2:
        return ()  # never all: the last running job is what will free memory
    largest = max(running, key=lambda p: (p.rss, -p.created))
    # A small helper (the shell's sleep, a python that has not started compiling) neither grows nor
    # frees anything that matters: pausing it would only hold the build up.
    candidates = sorted((p for p in running if p.pid != largest.pid and p.matters),
                        key=lambda p: (not p.compile_job, -p.created))
    count = max(1, math.ceil(min(max(depth, 0.0), 1.0) * len(candidates)))
    return tuple(candidates[:count])


def choose_to_resume(paused: Sequence[TreeProc], running_leaves: int, available: int,
                     resume_above: int) -> TreeProc | None:
    """The next paused process to resume: the oldest, when memory is back, or when nothing else runs."""
    if not paused:
        return None
    if running_leaves == 0 or available >= resume_above:
        return min(paused, key=lambda p: p.created)
    return None


def margins(reserve: int) -> tuple[int, int]:
    """(pause below, resume above): act a little before the reserve, resume only with room to spare.

    Jobs grow between two polls (0.1 s), so the guard acts ``reserve/4`` (at most 256 MiB) early; it
    resumes only with twice that above the reserve, so that one resume does not trigger the next pause.
    """
    early = min(256 * MIB, reserve // 4)
    return reserve + early, reserve + 2 * early + 256 * MIB


# --- the guard ----------------------------------------------------------------------------------------

def tree_procs(root_pid: int) -> list[TreeProc]:
    """The build's process tree below ``root_pid`` (the step's shell is never paused)."""
    import psutil

    try:
        children = psutil.Process(root_pid).children(recursive=True)
    except psutil.Error:
        return []
    parents: set[int] = set()
    rows: list[tuple[psutil.Process, str, float, int]] = []
    for proc in children:
        try:
            with proc.oneshot():
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                rows.append((proc, proc.name(), proc.create_time(), proc.memory_info().rss))
                parents.add(proc.ppid())
        except psutil.Error:
            continue
    return [TreeProc(p.pid, name, created, rss, p.pid not in parents) for p, name, created, rss in rows]


class MemoryGuard:
    """Polled by the runner every tick while a step runs; pauses and resumes the step's tree."""

    def __init__(self, reserve: int, emit: Callable[..., None],
                 read: Callable[[], MemoryReading] = read_memory,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.reserve = reserve
        self.pause_below, self.resume_above = margins(reserve)
        self.emit = emit
        self.read = read
        self.clock = clock
        self.paused: dict[int, TreeProc] = {}
        self.next_poll = 0.0
        self.next_resume = 0.0
        self.min_available: int | None = None
        self.pauses = 0
        self.max_paused = 0
        self.next_sample = 0.0
        self.peak_job: TreeProc | None = None    # the largest compile process seen (by RSS)
        self.peak_total = 0                      # the most the whole tree held at one sample
        self.seen: dict[int, str] = {}           # every PID of the tree seen, and its name
        self.memcgs: set[str] = set()            # the steps' memory cgroups (v1 path, v2 path)
        self._roots: set[int] = set()
        self.last_procs: tuple[TreeProc, ...] = ()

    def poll(self, root_pid: int) -> None:
        now = self.clock()
        if now < self.next_poll:
            return
        self.next_poll = now + POLL_S
        if root_pid not in self._roots:  # a new step: where its memory is accounted
            self._roots.add(root_pid)
            # Only the step's own cgroups (the attempt's): the one rocmbuild runs in may hold strangers.
            self.memcgs.update(memory_cgroups(root_pid) - memory_cgroups(os.getpid()))
        reading = self.read()
        if self.min_available is None or reading.available < self.min_available:
            self.min_available = reading.available
        if reading.available >= self.pause_below and not self.paused:
            if now >= self.next_sample:  # the common case: plenty of memory, a tree walk now and then
                self.next_sample = now + SAMPLE_S
                self.sample(tree_procs(root_pid))
            return
        procs = tree_procs(root_pid)
        self.sample(procs)
        alive = {p.pid for p in procs}
        self.paused = {pid: p for pid, p in self.paused.items() if pid in alive}
        # Only jobs that matter count as running: a paused build must not wait on a sleep or a daemon.
        running = sum(1 for p in procs if p.leaf and p.pid not in self.paused and p.matters)
        if reading.available < self.pause_below:
            depth = (self.pause_below - reading.available) / max(1, self.pause_below - self.reserve)
            chosen = [p for p in choose_to_pause(procs, frozenset(self.paused), depth)
                      if _signal(p.pid, signal.SIGSTOP)]
            if chosen:
                self.paused.update((p.pid, p) for p in chosen)
                self.pauses += len(chosen)
                self.max_paused = max(self.max_paused, len(self.paused))
                self._event("memory.paused", reading, chosen)
                return
            if running:
                return  # the jobs still running will free memory: wait for them
            # Still below the line, but every job that matters is paused: the paused jobs hold the memory
            # and nothing else will free it, so one must go on (below), or the build waits forever.
        if now < self.next_resume and running:
            return
        back = choose_to_resume(list(self.paused.values()), running, reading.available, self.resume_above)
        if back is not None:
            _signal(back.pid, signal.SIGCONT)
            del self.paused[back.pid]
            self.next_resume = now + RESUME_COOLDOWN_S
            self._event("memory.resumed", reading, [back],
                        why="memory is back" if running else "nothing else was running")

    def sample(self, procs: Sequence[TreeProc]) -> None:
        """Peaks and PIDs from one walk of the tree."""
        self.last_procs = tuple(procs)  # the sampler's view of the tree (process/sampler.py): no second walk
        self.peak_total = max(self.peak_total, sum(p.rss for p in procs))
        for proc in procs:
            self.seen[proc.pid] = proc.name
            if proc.compile_job and (self.peak_job is None or proc.rss > self.peak_job.rss):
                self.peak_job = proc

    def release(self) -> None:
        """Resume everything (the step ended or is being stopped: a stopped process ignores SIGTERM)."""
        if not self.paused:
            return
        procs = list(self.paused.values())
        for proc in procs:
            _signal(proc.pid, signal.SIGCONT)
        self.paused.clear()
        self._event("memory.resumed", self.read(), procs, why="the step ended or is being stopped")

    def summary(self) -> dict[str, object]:
        return {"reserve": self.reserve, "min_available": self.min_available, "pauses": self.pauses,
                "max_paused": self.max_paused, "peak_total_rss": self.peak_total or None}

    def _event(self, name: EventName, reading: MemoryReading, procs: Sequence[TreeProc], **extra: object) -> None:
        self.emit(name, available=reading.available, reserve=self.reserve, limited_by=reading.limited_by,
                  psi_some_avg10=reading.psi_some_avg10, pids=[p.pid for p in procs],
                  names=[p.name for p in procs], rss=[p.rss for p in procs], paused_now=len(self.paused),
                  **extra)


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def memory_cgroups(pid: int) -> set[str]:
    """The memory cgroup paths of ``pid`` as the kernel names them in ``task_memcg=`` (v1 and v2)."""
    try:
        text = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return set()
    found = set()
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and (parts[1] == "" or "memory" in parts[1].split(",")) and parts[2] not in ("", "/"):
            found.add(parts[2])
    return found


def looks_killed(signal_number: int | None, exit_code: int | None, category: str | None, text: str | None) -> bool:
    """Did the attempt end the way an OOM kill ends it (SIGKILL, 137, "Killed")? (pure)"""
    return (signal_number == signal.SIGKILL or exit_code in KILL_STATUSES or category == "out_of_memory"
            or bool(text and ("Killed" in text or "signal 9" in text)))


@dataclass(frozen=True, kw_only=True)
class OomScope:
    """Whose kill counts: the build's processes and memory cgroups, within the attempt's time (kernel clock)."""

    pids: Collection[int]
    memcgs: Collection[str]
    since: float
    until: float


def confirm_oom(cgroup_kills: int | None, log: Sequence[tuple[float, str]] | None, log_source: str, *,
                scope: OomScope) -> dict[str, object]:
    """The attempt's ``oom`` record: confirmed by the kernel log or the cgroup's count, or unconfirmed (pure).

    The kernel log names the victim (name, PID, RSS); the cgroup count only says that one happened.
    Neither readable, or neither showing a kill of the build's processes: "unconfirmed", never a guess.
    """

    kills = find_oom_kills(log, pids=scope.pids, memcgs=scope.memcgs, since=scope.since,
                           until=scope.until) if log is not None else []
    counted = f"cgroup oom_kill count +{cgroup_kills}" if cgroup_kills else None
    if kills:
        first = kills[0]
        return {"status": "confirmed", "source": ", ".join(filter(None, [f"kernel log ({log_source})", counted])),
                "victim": first.name, "pid": first.pid, "rss": first.rss, "scope": first.scope,
                "victims": [{"pid": k.pid, "name": k.name, "rss": k.rss, "scope": k.scope} for k in kills],
                "line": first.line}
    if cgroup_kills:
        return {"status": "confirmed", "source": counted, "victim": None, "pid": None, "rss": None,
                "detail": "the cgroup counted an OOM kill; the kernel log " + (
                    "names none of the build's PIDs" if log is not None else f"is not readable: {log_source}")}
    if log is None:
        why = f"no cgroup oom_kill count rose and {log_source}"
    else:
        why = f"the kernel log ({log_source}) has no OOM kill of the build's processes in the attempt's time"
    return {"status": "unconfirmed", "source": None, "victim": None, "pid": None, "rss": None, "detail": why}


class AttemptMemory:
    """One attempt's guard, its cgroup's OOM-kill count before it started, and its time window."""

    def __init__(self, guard: MemoryGuard, rec: RunRecorder, number: int,
                 kernel_log: Callable[[], tuple[Any, str]] | None = None) -> None:
        self.guard = guard
        self.rec = rec
        self.number = number
        self.oom_before = oom_kills()
        self.started = time.monotonic()
        self.kernel_log = kernel_log

    def finish(self, *, killed: bool = False, compiles: Sequence[Any] = ()) -> dict[str, object]:
        """The attempt record's ``memory``: the guard's figures, the peak per compile job, and, after a
        kill, whether it was an OOM kill (``oom``).

        ``compiles``: what the job-limit launcher recorded (joblimit.Compile): exact peaks per compile
        (``wait4``'s ru_maxrss) and the compilers' PIDs, beside what the guard's samples saw.
        """
        data = self.guard.summary()
        after = oom_kills()
        counted = None
        if self.oom_before is not None and after is not None:
            counted = data["oom_kills"] = after - self.oom_before
            if after > self.oom_before:
                self.rec.event("memory.oom_kill", attempt=self.number, count=after - self.oom_before,
                               source="cgroup oom_kill count")
        sampled = self.guard.peak_job
        best = max((c for c in compiles if getattr(c, "peak_rss", None)), key=lambda c: c.peak_rss, default=None)
        if best is not None and (sampled is None or best.peak_rss >= sampled.rss):
            data["peak_rss_per_job"], data["peak_rss_job"] = best.peak_rss, best.name
        elif sampled is not None:
            data["peak_rss_per_job"], data["peak_rss_job"] = sampled.rss, sampled.name
        if killed or counted:

            log, source = (self.kernel_log or kernlog.kernel_log)()
            pids = {*self.guard.seen, *(c.pid for c in compiles)}
            scope = OomScope(pids=pids, memcgs=self.guard.memcgs, since=self.started - KERNEL_CLOCK_SLACK_S,
                             until=time.monotonic() + KILL_WINDOW_S + KERNEL_CLOCK_SLACK_S)
            data["oom"] = oom = confirm_oom(counted, log, source, scope=scope)
            self.rec.event("memory.oom_checked", attempt=self.number, **oom)
        return data


def attempt_guard(reserve_option: int | None, rec: RunRecorder, number: int) -> AttemptMemory | None:
    """The guard for one attempt (None with ``--memory-reserve off``)."""
    if reserve_option == 0:
        return None
    reserve = reserve_option if reserve_option is not None else default_reserve(read_total())

    def emit(name: EventName, **fields: object) -> None:
        rec.event(name, attempt=number, **fields)

    return AttemptMemory(MemoryGuard(reserve, emit), rec, number)
